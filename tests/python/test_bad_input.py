"""Bad input across the op families, table-driven: every case that CPU PyTorch rejects is rejected on npu
with the same exception type (host-side: wrong shapes, dtypes, arguments); tensors on different devices
(cpu with npu, npu:0 with npu:1) are refused; device-side out-of-range values fail at the next sync with an
error naming the op, and the device keeps working. Never a crash, a hang or silent garbage."""
import pytest
import torch
import torch.nn.functional as F

from conftest import acknowledge_device_error
import torch_npu_sim  # noqa: F401

L = torch.long
# name -> fn(device) building the inputs on `device` and calling the op; CPU must raise for each
HOST_SIDE = {
    "add broadcast": lambda d: torch.randn(3, 4, device=d) + torch.randn(5, device=d),
    "add out= dtype": lambda d: torch.add(torch.randn(3, device=d), 1.5, out=torch.empty(3, dtype=L, device=d)),
    "mm inner dims": lambda d: torch.mm(torch.randn(2, 3, device=d), torch.randn(4, 5, device=d)),
    "mm dtype mix": lambda d: torch.mm(torch.randn(2, 3, device=d), torch.randn(3, 2, device=d).double()),
    "bmm rank": lambda d: torch.bmm(torch.randn(2, 3, device=d), torch.randn(2, 3, device=d)),
    "matmul 0-d": lambda d: torch.matmul(torch.tensor(1.0, device=d), torch.randn(3, device=d)),
    "linear features": lambda d: F.linear(torch.randn(2, 3, device=d), torch.randn(4, 5, device=d)),
    "conv2d channels": lambda d: F.conv2d(torch.randn(1, 3, 5, 5, device=d), torch.randn(2, 4, 3, 3, device=d)),
    "conv2d kernel too big": lambda d: F.conv2d(torch.randn(1, 1, 2, 2, device=d), torch.randn(1, 1, 3, 3, device=d)),
    "max_pool2d kernel": lambda d: F.max_pool2d(torch.randn(1, 1, 2, 2, device=d), 3),
    "batch_norm features": lambda d: F.batch_norm(torch.randn(4, 3, device=d), torch.zeros(2, device=d),
                                                  torch.ones(2, device=d)),
    "layer_norm shape": lambda d: F.layer_norm(torch.randn(2, 3, device=d), (4,)),
    "group_norm groups": lambda d: F.group_norm(torch.randn(2, 6, 4, device=d), 4),
    "softmax dim": lambda d: torch.softmax(torch.randn(2, 3, device=d), 2),
    "sum dim": lambda d: torch.randn(2, 3, device=d).sum(3),
    "max dim on empty": lambda d: torch.empty(0, 3, device=d).max(0),
    "var dim": lambda d: torch.randn(2, 3, device=d).var(-3),
    "cat shapes": lambda d: torch.cat([torch.randn(2, 3, device=d), torch.randn(2, 4, device=d)]),
    "stack shapes": lambda d: torch.stack([torch.randn(2, device=d), torch.randn(3, device=d)]),
    "view incompatible": lambda d: torch.randn(2, 3, device=d).t().view(6),
    "reshape numel": lambda d: torch.randn(2, 3, device=d).reshape(4, 2),
    "expand": lambda d: torch.randn(2, 3, device=d).expand(3, 3),
    "gather rank": lambda d: torch.randn(2, 3, device=d).gather(1, torch.zeros(2, dtype=L, device=d)),
    "gather float index": lambda d: torch.randn(2, 3, device=d).gather(1, torch.zeros(2, 1, device=d)),
    "index_select 2-d index": lambda d: torch.randn(2, 3, device=d).index_select(0, torch.zeros(1, 1, dtype=L, device=d)),
    "scatter dtype": lambda d: torch.zeros(2, 3, device=d).scatter_(0, torch.zeros(1, 3, dtype=L, device=d),
                                                                    torch.ones(1, 3, dtype=torch.float64, device=d)),
    "masked_fill mask dtype": lambda d: torch.zeros(3, device=d).masked_fill(torch.ones(3, device=d), 1.0),
    "where shapes": lambda d: torch.where(torch.ones(3, dtype=torch.bool, device=d), torch.zeros(2, device=d), 1.0),
    "bitwise float": lambda d: torch.randn(3, device=d) & torch.randn(3, device=d),
    "cross_entropy target shape": lambda d: F.cross_entropy(torch.randn(4, 5, device=d), torch.zeros(3, dtype=L, device=d)),
    "nll_loss float target": lambda d: F.nll_loss(torch.randn(4, 5, device=d), torch.zeros(4, device=d)),
    "mse_loss dtype int": lambda d: F.mse_loss(torch.ones(3, dtype=L, device=d), torch.ones(3, dtype=L, device=d)),
    "embedding float ids": lambda d: F.embedding(torch.zeros(3, device=d), torch.randn(4, 2, device=d)),
    "topk k too big": lambda d: torch.randn(3, device=d).topk(4),
    "sort dim": lambda d: torch.randn(3, device=d).sort(1),
    "arange step 0": lambda d: torch.arange(0, 5, 0, device=d),
    "randint low >= high": lambda d: torch.randint(5, 5, (3,), device=d),
    "multinomial too many": lambda d: torch.multinomial(torch.ones(3, device=d), 4),
    "normal_ negative std": lambda d: torch.empty(3, device=d).normal_(0, -1),
    "clamp no bounds": lambda d: torch.clamp(torch.randn(3, device=d)),
    "lerp shapes": lambda d: torch.lerp(torch.randn(2, device=d), torch.randn(3, device=d), 0.5),
    "pow int negative": lambda d: torch.pow(torch.tensor([2], device=d), -1),
    "in-place broadcast to smaller": lambda d: torch.zeros(3, device=d).add_(torch.zeros(2, 3, device=d)),
    "in-place type change": lambda d: torch.zeros(3, dtype=L, device=d).add_(torch.randn(3, device=d)),
    "sdpa shapes": lambda d: F.scaled_dot_product_attention(torch.randn(1, 2, 4, device=d), torch.randn(1, 3, 5, device=d),
                                                            torch.randn(1, 3, 5, device=d)),
}


@pytest.mark.parametrize("name", sorted(HOST_SIDE))
def test_host_side_errors_match_cpu(name):
    fn = HOST_SIDE[name]
    with pytest.raises(Exception) as cpu_err:
        fn("cpu")
    with pytest.raises(Exception) as npu_err:
        fn("npu")
        torch.npu.synchronize()
    assert npu_err.type is cpu_err.type, (npu_err.value, cpu_err.value)
    assert str(npu_err.value).strip(), "the error must say what is wrong"
    assert float(torch.ones(2, device="npu").sum().cpu()) == 2.0  # the device keeps working


# ops called with one operand on another device
MIXED = {
    "add": lambda a, b: a + b,
    "mul_": lambda a, b: a.mul_(b),
    "mm": lambda a, b: torch.mm(a, b),
    "addmm": lambda a, b: torch.addmm(a, a, b),
    "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "where": lambda a, b: torch.where(a > 0, a, b),
    "cat": lambda a, b: torch.cat([a, b]),
    "index_select": lambda a, b: a.index_select(0, b[0].long().abs().clamp(max=1)),
    "gather": lambda a, b: a.gather(0, b.long().abs().clamp(max=1)),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, 1.0),
    "lerp": lambda a, b: torch.lerp(a, b, 0.5),
    "addcmul": lambda a, b: torch.addcmul(a, a, b),
    "copy_ keeps working": None,
    "layer_norm weight": lambda a, b: F.layer_norm(a, (2,), b[0]),
    "linear": lambda a, b: F.linear(a, b),
    "conv2d": lambda a, b: F.conv2d(a[None, None], b[None, None]),
    "cross_entropy": lambda a, b: F.cross_entropy(a, b.long().abs().clamp(max=1)[:, 0]),
}


@pytest.mark.parametrize("other", ["cpu", "npu:1"])
@pytest.mark.parametrize("name", sorted(k for k, v in MIXED.items() if v is not None))
def test_mixed_devices_refused(name, other):
    a = torch.randn(2, 2, device="npu:0")
    b = torch.randn(2, 2, device=other)
    for x, y in ((a, b), (b, a)):
        if x.device.type == "cpu" and name.endswith("_"):
            continue  # an in-place op on a CPU tensor with an npu argument is the CPU's business
        with pytest.raises(RuntimeError, match=r"(?i)device"):
            MIXED[name](x, y)
            torch.npu.synchronize()
    # copies between devices are the explicit way and work
    torch.testing.assert_close(b.to("npu:0").cpu(), b.cpu())


# device-side: the index values are only known on the device; the error surfaces at the next sync
DEVICE_SIDE = {
    "embedding": lambda d: F.embedding(torch.tensor([0, 4], device=d), torch.randn(4, 2, device=d)),
    "index_select": lambda d: torch.randn(3, device=d).index_select(0, torch.tensor([3], device=d)),
    "gather": lambda d: torch.randn(2, 2, device=d).gather(0, torch.tensor([[0, 2]], device=d)),
    "scatter": lambda d: torch.zeros(3, device=d).scatter_(0, torch.tensor([-4], device=d), 1.0),
    "index_put": lambda d: torch.zeros(3, device=d).index_put_((torch.tensor([3], device=d),), torch.tensor(1.0, device=d)),
    "index": lambda d: torch.zeros(3, device=d)[torch.tensor([5], device=d)],
    "nll_loss": lambda d: F.nll_loss(torch.randn(2, 3, device=d), torch.tensor([0, 3], device=d)),
    "cross_entropy": lambda d: F.cross_entropy(torch.randn(2, 3, device=d), torch.tensor([0, 7], device=d)),
    "one_hot": lambda d: F.one_hot(torch.tensor([0, 5], device=d), 3),
    # as on CUDA, ATen leaves the negative check of one_hot to the scatter kernel on the device
    "one_hot negative": lambda d: F.one_hot(torch.tensor([-1], device=d), 3),
    "binary_cross_entropy": lambda d: F.binary_cross_entropy(torch.tensor([1.5], device=d), torch.tensor([1.0], device=d)),
    "multinomial": lambda d: torch.multinomial(torch.tensor([1.0, -1.0], device=d), 1),
    "bincount": lambda d: torch.bincount(torch.tensor([-1, 0], device=d)),
}


@pytest.mark.parametrize("name", sorted(DEVICE_SIDE))
def test_device_side_errors_at_sync_name_the_op(name):
    with pytest.raises(Exception) as cpu_err:  # the CPU raises IndexError or RuntimeError
        DEVICE_SIDE[name]("cpu")
    with pytest.raises(RuntimeError) as npu_err:
        out = DEVICE_SIDE[name]("npu")
        torch.npu.synchronize()
        out.cpu()
    msg = str(npu_err.value)
    op_words = {"embedding": "index_select|embedding", "index_put": "index_put", "index": "index",
                "cross_entropy": "nll_loss", "one_hot": "one_hot|scatter", "one_hot negative": "one_hot|scatter", "multinomial": "multinomial",
                "bincount": "bincount"}
    import re
    assert re.search(op_words.get(name, name), msg), (msg, str(cpu_err.value))
    acknowledge_device_error()
    assert float(torch.ones(2, device="npu").sum().cpu()) == 2.0
