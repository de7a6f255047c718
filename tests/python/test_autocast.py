"""torch.autocast("npu") follows CUDA's autocast policy: ops from CUDA's documented lists produce the
same output dtypes under npu autocast as CUDA autocast promises; nesting, enabled=False and the cast
cache behave as on CUDA."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401

# (op, args builder) from CUDA's autocast op reference: "ops that can autocast to float16/bfloat16".
LOWER = {
    "mm": lambda a, b, v: torch.mm(a, b),
    "matmul": lambda a, b, v: torch.matmul(a, b),
    "addmm": lambda a, b, v: torch.addmm(a, a, b),
    "bmm": lambda a, b, v: torch.bmm(a[None], b[None]),
    "baddbmm": lambda a, b, v: torch.baddbmm(a[None], a[None], b[None]),
    "linear": lambda a, b, v: F.linear(a, b),
    "mv": lambda a, b, v: torch.mv(a, v),
    "conv2d": lambda a, b, v: F.conv2d(a[None, None], b[None, None, :3, :3]),
    "prelu": lambda a, b, v: F.prelu(a, torch.tensor([0.25], device=a.device)),
}
# "ops that autocast to float32"
FP32 = {
    "exp": lambda a, b, v: torch.exp(a),
    "log": lambda a, b, v: torch.log(a.abs() + 1),
    "pow": lambda a, b, v: torch.pow(a, 2),
    "softmax": lambda a, b, v: torch.softmax(a, -1),
    "log_softmax": lambda a, b, v: torch.log_softmax(a, -1),
    "sum": lambda a, b, v: torch.sum(a),
    "cumsum": lambda a, b, v: torch.cumsum(a, 0),
    "layer_norm": lambda a, b, v: F.layer_norm(a, a.shape[-1:]),
    "mse_loss": lambda a, b, v: F.mse_loss(a, b),
    "rsqrt": lambda a, b, v: torch.rsqrt(a.abs() + 1),
    "acos": lambda a, b, v: torch.acos(a.clamp(-1, 1)),
}


@pytest.fixture
def operands():
    g = torch.Generator().manual_seed(0)
    a, b, v = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g), torch.randn(8, generator=g)
    return a.npu(), b.npu(), v.npu()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(LOWER))
def test_lower_precision_ops(operands, dtype, name):
    with torch.autocast("npu", dtype=dtype):
        out = LOWER[name](*operands)
    assert out.dtype == dtype


@pytest.mark.parametrize("name", sorted(FP32))
def test_fp32_ops(operands, name):
    a, b, v = (t.half() for t in operands)
    with torch.autocast("npu", dtype=torch.float16):
        out = FP32[name](a, b, v)
    assert out.dtype == torch.float32


def test_promote_ops(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        low = torch.mm(a, b)  # bf16
        assert torch.addcmul(a, low, low).dtype == torch.float32  # promote to the widest input
        assert torch.atan2(low, a).dtype == torch.float32
        assert torch.cat([low, a]).dtype == torch.float32  # cat promotes natively


def test_defaults_aliases_and_dtype_api(operands):
    a, b, _ = operands
    assert torch.get_autocast_dtype("npu") == torch.float16
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    with torch.npu.amp.autocast():
        assert torch.mm(a, b).dtype == torch.float16
    torch.set_autocast_dtype("npu", torch.bfloat16)
    try:
        with torch.autocast("npu"):
            assert torch.mm(a, b).dtype == torch.bfloat16
    finally:
        torch.set_autocast_dtype("npu", torch.float16)


def test_nesting_and_disable(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.mm(a, b).dtype == torch.bfloat16
        with torch.autocast("npu", enabled=False):
            assert torch.mm(a, b).dtype == torch.float32
        with torch.autocast("npu", dtype=torch.float16):
            assert torch.mm(a, b).dtype == torch.float16
        assert torch.mm(a, b).dtype == torch.bfloat16
    assert torch.mm(a, b).dtype == torch.float32
    # CPU autocast is independent of npu autocast
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.mm(a.cpu(), b.cpu()).dtype == torch.float32


def test_values_match_cpu_autocast(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        got = torch.mm(a, b)
    ref = torch.mm(a.cpu().bfloat16(), b.cpu().bfloat16())
    torch.testing.assert_close(got.cpu(), ref, atol=0.1, rtol=0.02)


def test_weight_cast_cache(operands):
    a, _, _ = operands
    w = torch.nn.Parameter(torch.randn(8, 8, device="npu"))
    with torch.autocast("npu", dtype=torch.float16):
        y1 = F.linear(a, w)
        y2 = F.linear(a, w)
        assert y1.dtype == y2.dtype == torch.float16
        # the fp16 copy of a leaf that requires grad is cached and reused inside the region
        assert torch.is_autocast_cache_enabled()
    (y1.float().sum() + y2.float().sum()).backward()
    assert w.grad.dtype == torch.float32 and w.grad.is_npu


def test_binary_cross_entropy_is_banned(operands):
    p = torch.rand(4, device="npu")
    with torch.autocast("npu"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
