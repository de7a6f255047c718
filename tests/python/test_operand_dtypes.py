# Operands of another dtype than self's (weights, targets, fill values): npu follows CPU's promotion or its error.
# Before, bincount with complex weights returned zeros, mse_loss / smooth_l1_loss of a float32 input against a
# float64 target returned float32, and index_fill_ of a real tensor took a complex value.
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers "npu")

g = torch.Generator().manual_seed(0)
x32 = torch.randn(4, 3, generator=g)
x64 = torch.randn(4, 3, generator=g, dtype=torch.float64)
idx = torch.tensor([0, 2, 2, 5])
wc = torch.randn(4, generator=g, dtype=torch.complex64)

CASES = [
    ("bincount complex weights", lambda d: torch.bincount(idx.to(d), wc.to(d))),
    ("bincount float16 weights", lambda d: torch.bincount(idx.to(d), wc.real.half().to(d))),
    ("mse_loss float32 vs float64", lambda d: F.mse_loss(x32.to(d), x64.to(d))),
    ("mse_loss none", lambda d: F.mse_loss(x32.to(d), x64.to(d), reduction="none")),
    ("smooth_l1_loss float32 vs float64", lambda d: F.smooth_l1_loss(x32.to(d), x64.to(d), reduction="sum")),
    ("smooth_l1_loss none", lambda d: F.smooth_l1_loss(x32.to(d), x64.to(d), reduction="none")),
    ("huber_loss keeps self's dtype", lambda d: F.huber_loss(x32.to(d), x64.to(d))),
    ("mse_loss float64 vs float32", lambda d: F.mse_loss(x64.to(d), x32.to(d))),
    ("index_fill_ complex into real", lambda d: x32.to(d).index_fill_(0, idx[:2].to(d), 1 + 2j)),
    ("index_fill_ complex into complex", lambda d: x32.to(d).to(torch.complex64).index_fill_(0, idx[:2].to(d), 1 + 2j)),
]


def run(call, dev):
    try:
        r = call(dev)
        torch.npu.synchronize()
        return r
    except Exception as e:  # noqa: BLE001 (the error is the result compared)
        return e


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_operand_of_another_dtype_follows_cpu(name, call):
    want, got = run(call, "cpu"), run(call, "npu")
    assert torch.npu._device_error(None) is None
    if isinstance(want, Exception):
        assert type(got) is type(want), f"{name}: CPU raised {want!r}, npu gave {got!r}"
        assert str(want).split("\n")[0] in str(got), (str(want), str(got))
        return
    assert not isinstance(got, Exception), f"{name}: CPU computed, npu raised {got!r}"
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
