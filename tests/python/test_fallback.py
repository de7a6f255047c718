"""The boxed CPU fallback: results (functional, in-place, out=, tensor lists, multiple outputs) match CPU,
one warning per op in torch_npu's wording, the record of fallen-back ops, the disable switch, and
mixed-device inputs refused."""
import warnings

import pytest
import torch

import torch_npu_sim

WORDING = "is not currently supported on the NPU backend and will fall back to run on the CPU"


# An op family with only CPU kernels (functional, in place, out=), defined here so that the fallback keeps a
# subject however many aten ops gain npu kernels: npu tensors reach it through the boxed fallback alone.
LIB = torch.library.Library("npusim_fallback_test", "DEF")
LIB.define("rowscale(Tensor x, Tensor w) -> Tensor")
LIB.define("rowscale_(Tensor(a!) x, Tensor w) -> Tensor(a!)")
LIB.define("rowscale.out(Tensor x, Tensor w, *, Tensor(a!) out) -> Tensor(a!)")


def _rowscale_out(x, w, out):
    out.resize_(torch.broadcast_shapes(x.shape, w.shape))
    return torch.mul(x, w, out=out)


LIB.impl("rowscale", lambda x, w: x * w, "CPU")
LIB.impl("rowscale_", lambda x, w: x.mul_(w), "CPU")
LIB.impl("rowscale.out", _rowscale_out, "CPU")
rowscale = torch.ops.npusim_fallback_test.rowscale


def test_functional_inplace_out_and_lists_match_cpu():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(4, 5, generator=g), torch.rand(4, 5, generator=g)
    na, nb = a.npu(), b.npu()
    za, zw = torch.complex(a, b), torch.complex(b, a)[:, :1]
    nz, nzw = za.npu(), zw.npu()
    got = rowscale(nz, nzw)
    assert got.is_npu and torch.equal(got.cpu(), za * zw)
    x = nz.clone()
    assert torch.ops.npusim_fallback_test.rowscale_(x, nzw) is x
    assert torch.equal(x.cpu(), za * zw)
    out = torch.empty(0, dtype=torch.complex64, device="npu")  # out= with a resize
    assert rowscale.out(nz, nzw, out=out) is out
    assert out.is_npu and out.shape == (4, 5) and torch.equal(out.cpu(), za * zw)
    strided = torch.zeros(4, 10, dtype=torch.complex64, device="npu")[:, ::2]  # out= into a strided view
    rowscale.out(nz, nzw, out=strided)
    assert torch.equal(strided.cpu(), za * zw)
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
    assert (rowscale(nz, nzw) * torch.tensor(2.0)).is_npu  # CPU zero-dim tensors are scalars


def test_warns_once_per_op_in_torch_npu_wording():
    # (torch.ops.<namespace>.<op> calls print C++ warnings to stderr rather than raising Python warnings: a
    # PyTorch binding choice, so a torch.* function is the subject here)
    torch_npu_sim.reset_fallback_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            torch.linspace(0j, 1j, 3, device="npu")
    msgs = [str(w.message) for w in caught if WORDING in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("The operator 'aten::linspace.out")
    assert torch_npu_sim.fallback_ops().get("aten::linspace.out") == 3


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_dtypes_without_a_kernel_fall_back(dtype):
    # A native op called with a dtype its kernel lacks (linspace / logspace between complex ends) runs through the
    # CPU fallback, warned and recorded like any fallback, instead of failing; the complex ops with kernels
    # (logcumsumexp and renorm among them) stay native.
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 3, dtype=dtype, generator=g)
    b = torch.randn(4, 3, dtype=dtype, generator=g)
    na, nb = a.npu(), b.npu()
    torch_npu_sim.reset_fallback_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cases = {
            "linspace": (torch.linspace(1 + 2j, -3 + 0.5j, 7, dtype=dtype, device="npu"),
                         torch.linspace(1 + 2j, -3 + 0.5j, 7, dtype=dtype)),
            "logspace": (torch.logspace(0.5j, 1 - 1j, 5, dtype=dtype, device="npu"),
                         torch.logspace(0.5j, 1 - 1j, 5, dtype=dtype)),
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
    for op in ("aten::linspace.out", "aten::logspace.out"):
        assert ops.get(op, 0) >= 1, (op, ops)
    assert not any(op.startswith(("aten::mul", "aten::exp", "aten::sqrt", "aten::_logcumsumexp", "aten::renorm"))
                   for op in ops), ops
    assert any("aten::linspace.out'" in str(w.message) and WORDING in str(w.message) for w in caught)


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
            torch.linspace(0j, 1j, 3, device="npu")  # native op, dtype without a kernel
        except NotImplementedError as e:
            print("NotImplementedError:", str(e).splitlines()[0])
    """, env={"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"})
    assert r.returncode == 0, r.stderr
    assert "NotImplementedError: The operator 'aten::_fake_quantize_learnable_per_tensor_affine'" in r.stdout
    assert "NotImplementedError: The operator 'aten::linspace.out' is not currently implemented" in r.stdout
    assert "TORCH_NPU_FALLBACK_CPU_DISABLE=1" in r.stdout


def test_mixed_devices_are_refused():
    for op in (torch.add, rowscale):  # a native op and a fallback op
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
