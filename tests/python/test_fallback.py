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
    za = torch.complex(a, b)  # complex renorm has no npu kernel
    nz = za.npu()
    assert torch.equal(torch.renorm(nz, 2, 0, 1.0).cpu(), torch.renorm(za, 2, 0, 1.0))
    x = nz.clone()
    x.renorm_(2, 0, 1.0)
    assert torch.equal(x.cpu(), torch.renorm(za, 2, 0, 1.0))
    out = torch.empty(0, dtype=torch.complex64, device="npu")  # out= with a resize
    torch.renorm(nz, 1, 1, 0.5, out=out)
    assert out.shape == (4, 5) and torch.equal(out.cpu(), torch.renorm(za, 1, 1, 0.5))
    lst = torch._foreach_lgamma([na, nb])
    assert all(t.is_npu for t in lst)
    assert torch.allclose(lst[1].cpu(), torch.lgamma(b))
    # several outputs (QAT's learnable fake-quantize backward has no npu kernel)
    fq_bwd = torch.ops.aten._fake_quantize_learnable_per_tensor_affine_backward
    scale, zero = torch.tensor([0.1]), torch.tensor([0.0])
    got = fq_bwd(nb, na, scale.npu(), zero.npu(), 0, 255, 1.0)
    ref = fq_bwd(b, a, scale, zero, 0, 255, 1.0)
    assert len(got) == 3 and all(t.is_npu for t in got)
    assert all(torch.equal(t.cpu(), r) for t, r in zip(got, ref))
    assert (torch.renorm(nz, 2, 0, 1.0) * torch.tensor(2.0)).is_npu  # CPU zero-dim tensors are scalars


def test_warns_once_per_op_in_torch_npu_wording():
    torch_npu_sim.reset_fallback_ops()
    x = torch.ones(3, 3, dtype=torch.complex64, device="npu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.renorm(x, 2, 0, 1.0)
        torch.renorm(x, 2, 0, 1.0)
        torch.renorm(x, 2, 0, 1.0)
    msgs = [str(w.message) for w in caught if WORDING in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("The operator 'aten::renorm")
    ops = torch_npu_sim.fallback_ops()
    assert sum(n for op, n in ops.items() if op.startswith("aten::renorm")) == 3


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_dtypes_without_a_kernel_fall_back(dtype):
    # A native op called with a dtype its kernel lacks (complex logcumsumexp and renorm) runs through the CPU
    # fallback, warned and recorded like any fallback, instead of failing; the complex ops with kernels stay native.
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 3, dtype=dtype, generator=g)
    b = torch.randn(4, 3, dtype=dtype, generator=g)
    na, nb = a.npu(), b.npu()
    torch_npu_sim.reset_fallback_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cases = {
            "logcumsumexp": (torch.logcumsumexp(na, 1), torch.logcumsumexp(a, 1)),
            "renorm": (torch.renorm(na, 2, 0, 1.0), torch.renorm(a, 2, 0, 1.0)),
            "exp": (torch.exp(na), torch.exp(a)),
            "mul": (na * nb, a * b),
        }
        x = na.clone()
        x.sqrt_()
        cases["sqrt_"] = (x, a.sqrt())
    for name, (got, want) in cases.items():
        assert got.is_npu and got.dtype == want.dtype, name
        torch.testing.assert_close(got.cpu(), want, msg=name)
    ops = torch_npu_sim.fallback_ops()
    for op in ("aten::_logcumsumexp", "aten::renorm"):
        assert ops.get(op, 0) >= 1, (op, ops)
    assert not any(op.startswith(("aten::mul", "aten::exp", "aten::sqrt")) for op in ops), ops
    assert any("aten::renorm'" in str(w.message) and WORDING in str(w.message) for w in caught)


def test_fallback_disabled_is_an_error_naming_the_op(fresh_python):
    r = fresh_python("""
        import torch, torch_npu_sim
        x = torch.ones(3, device="npu")
        y = x.to(torch.float64)          # native ops keep working
        try:
            torch._fake_quantize_learnable_per_tensor_affine(x, x[:1], x[:1] * 0, 0, 255)  # no npu kernel at all
        except NotImplementedError as e:
            print("NotImplementedError:", str(e).splitlines()[0])
        try:
            torch.logcumsumexp(torch.ones(3, device="npu", dtype=torch.complex64), 0)  # native op, dtype without a kernel
        except NotImplementedError as e:
            print("NotImplementedError:", str(e).splitlines()[0])
    """, env={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert "NotImplementedError: The operator 'aten::_fake_quantize_learnable_per_tensor_affine'" in r.stdout
    assert "NotImplementedError: The operator 'aten::_logcumsumexp' is not currently implemented" in r.stdout
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
