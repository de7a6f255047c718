"""The boxed CPU fallback: results (functional, in-place, out=, tensor lists, multiple outputs) match CPU,
one warning per op in torch_npu's wording, the record of fallen-back ops, the disable switch, and
mixed-device inputs refused."""
import warnings

import pytest
import torch

import torch_npu_sim

WORDING = "is not currently supported on the NPU backend and will fall back to run on the CPU"


# Ops chosen because they have no native npu kernel (and are unlikely to get one soon).
def test_functional_inplace_out_and_lists_match_cpu():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(4, 5, generator=g), torch.rand(4, 5, generator=g)
    na, nb = a.npu(), b.npu()
    assert torch.allclose(torch.special.bessel_j0(na).cpu(), torch.special.bessel_j0(a))
    x = na.clone()
    x.i0_()
    assert torch.allclose(x.cpu(), torch.i0(a))
    out = torch.empty(0, device="npu")  # out= with a resize
    torch.special.bessel_j1(na, out=out)
    assert out.shape == (4, 5) and torch.allclose(out.cpu(), torch.special.bessel_j1(a))
    lst = torch._foreach_lgamma([na, nb])
    assert all(t.is_npu for t in lst)
    assert torch.allclose(lst[1].cpu(), torch.lgamma(b))
    mantissa, exponent = torch.frexp(na)
    ref_m, ref_e = torch.frexp(a)
    assert mantissa.is_npu and exponent.is_npu
    assert torch.equal(mantissa.cpu(), ref_m) and torch.equal(exponent.cpu(), ref_e)
    assert (torch.special.bessel_j0(na) * torch.tensor(2.0)).is_npu  # CPU zero-dim tensors are scalars


def test_warns_once_per_op_in_torch_npu_wording():
    torch_npu_sim.reset_fallback_ops()
    x = torch.ones(3, device="npu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.special.bessel_j0(x)
        torch.special.bessel_j0(x)
        torch.special.bessel_j0(x)
    msgs = [str(w.message) for w in caught if WORDING in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("The operator 'aten::special_bessel_j0")
    ops = torch_npu_sim.fallback_ops()
    assert sum(n for op, n in ops.items() if op.startswith("aten::special_bessel_j0")) == 3


def test_fallback_disabled_is_an_error_naming_the_op(fresh_python):
    r = fresh_python("""
        import torch, torch_npu_sim
        x = torch.ones(3, device="npu")
        y = x.to(torch.float64)          # native ops keep working
        try:
            torch.special.bessel_j0(x)
        except NotImplementedError as e:
            print("NotImplementedError:", str(e).splitlines()[0])
    """, env={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert "NotImplementedError: The operator 'aten::special_bessel_j0" in r.stdout
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in r.stdout


def test_mixed_devices_are_refused():
    for op in (torch.add, torch.special.xlog1py):  # a native op and a fallback op
        with pytest.raises(RuntimeError, match="same device.*cpu"):
            op(torch.ones(3), torch.ones(3, device="npu"))
        with pytest.raises(RuntimeError, match="same device.*npu:0 and npu:1"):
            op(torch.ones(3, device="npu:0"), torch.ones(3, device="npu:1"))


def test_autograd_through_fallback_ops():
    w = torch.randn(3, 3, requires_grad=True)
    nw = w.detach().npu().requires_grad_()
    x = torch.randn(5, 3)
    (torch.tanh(x @ w)).sum().backward()
    (torch.tanh(x.npu() @ nw)).sum().backward()
    assert nw.grad.is_npu
    assert torch.allclose(nw.grad.cpu(), w.grad, atol=1e-6)
