"""complex64 / complex128 natively on npu, against CPU: the pointwise catalogue (ATen's complex formulas, complex
scalars such as add's alpha kept whole), the complex GEMMs on OpenBLAS with PyTorch's lazy conjugation (conj views
reach mm / bmm / addmm / baddbmm / dot / vdot unresolved), the reductions and scans, var / std / norms, and autograd
through them. Every test runs under native_only: a CPU fallback fails it."""
import pytest
import torch

DTYPES = [torch.complex64, torch.complex128]
TOL = {torch.complex64: dict(rtol=2e-5, atol=2e-5), torch.complex128: dict(rtol=1e-12, atol=1e-12)}


def cplx(shape, dtype, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=gen, dtype=dtype) * scale)


def close(got, want, dtype=None, **tol):
    assert got.device.type == "npu"
    kw = dict(TOL[dtype or want.dtype]) if (dtype or want.dtype) in TOL else {}
    kw.update(tol)
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


UNARY = ["neg", "abs", "sgn", "square", "reciprocal", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2",
         "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "sigmoid", "sinc", "isnan", "isinf", "isfinite", "logical_not", "angle"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary(native_only, name, dtype):
    x = cplx((37, 5), dtype, scale=0.8)
    x[0, :3] = torch.tensor([0, 1e-9 + 1e-9j, -0.5 + 0j])  # zero, log1p/expm1's small arguments, a real point
    fn = getattr(torch, name)
    close(fn(x.npu()), fn(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_arguments_keep_their_digits(native_only, dtype):
    # log1p(z) and expm1(z) for |z| ~ 1e-8: the naive log(1 + z) / exp(z) - 1 lose every digit
    z = torch.tensor([1e-8 + 2e-8j, -3e-9 + 1e-9j], dtype=dtype)
    for fn in (torch.log1p, torch.expm1):
        got = fn(z.npu()).cpu()
        torch.testing.assert_close(got, fn(z), rtol=1e-5 if dtype == torch.complex64 else 1e-12, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_infinity_predicates(native_only, dtype):
    inf, nan = float("inf"), float("nan")
    z = torch.tensor([complex(nan, 0), complex(0, nan), complex(inf, 1), complex(1, -inf), 1 + 1j], dtype=dtype)
    for fn in (torch.isnan, torch.isinf, torch.isfinite):
        assert torch.equal(fn(z.npu()).cpu(), fn(z))
    got = torch.nan_to_num(z.npu(), nan=7.0, posinf=8.0, neginf=-8.0).cpu()
    assert torch.equal(got, torch.nan_to_num(z, nan=7.0, posinf=8.0, neginf=-8.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_alpha_and_scalars_are_kept_whole(native_only, dtype):
    # add / sub with a complex alpha used to drop its imaginary part (silently wrong)
    a, b, c = cplx((6, 4), dtype, 1), cplx((6, 4), dtype, 2), cplx((6, 4), dtype, 3)
    close(torch.add(a.npu(), b.npu(), alpha=2 - 1j), torch.add(a, b, alpha=2 - 1j))
    close(torch.sub(a.npu(), b.npu(), alpha=1j), torch.sub(a, b, alpha=1j))
    y = a.npu()
    y.add_(b.npu(), alpha=0.5 + 3j)
    close(y, a + (0.5 + 3j) * b)
    close(torch.addcmul(a.npu(), b.npu(), c.npu(), value=1 - 2j), torch.addcmul(a, b, c, value=1 - 2j))
    close(torch.addcdiv(a.npu(), b.npu(), c.npu(), value=0.5j), torch.addcdiv(a, b, c, value=0.5j))
    close(torch.lerp(a.npu(), b.npu(), 0.3 + 0.4j), torch.lerp(a, b, 0.3 + 0.4j))
    close(torch.lerp(a.npu(), b.npu(), 0.9 - 0.1j), torch.lerp(a, b, 0.9 - 0.1j))
    close(torch.lerp(a.npu(), b.npu(), c.npu()), torch.lerp(a, b, c))
    close(a.npu() * (2 + 3j), a * (2 + 3j))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 1.7, 0.3 + 1.2j])
def test_pow_scalar_exponent(native_only, dtype, exponent):
    x = cplx((50,), dtype, 4)
    close(torch.pow(x.npu(), exponent), torch.pow(x, exponent), rtol=1e-4 if dtype == torch.complex64 else 1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_and_ternary(native_only, dtype):
    a, b = cplx((8, 9), dtype, 5), cplx((9,), dtype, 6)  # broadcast
    close(torch.pow(a.npu(), b.npu()), torch.pow(a, b), rtol=1e-4 if dtype == torch.complex64 else 1e-10)
    close(torch.logaddexp(a.npu(), b.npu()), torch.logaddexp(a, b))
    for fn in (torch.eq, torch.ne, torch.logical_and, torch.logical_or, torch.logical_xor):
        a2 = a.clone()
        a2[:, ::2] = b[::2]
        a2[0] = 0
        assert torch.equal(fn(a2.npu(), b.npu()).cpu(), fn(a2, b)), fn
    cond = torch.rand(8, 9, generator=torch.Generator().manual_seed(1)) > 0.5
    close(torch.where(cond.npu(), a.npu(), b.npu()), torch.where(cond, a, b))
    close(a.npu() / b.npu(), a / b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conjugated_activation_gradients(native_only, dtype):
    # tanh / sigmoid backward multiply by conj(f'(z)), silu's does not (CPU's kernels)
    x, g = cplx((40,), dtype, 7, 0.7), cplx((40,), dtype, 8)
    y = torch.tanh(x)
    close(torch.ops.aten.tanh_backward(g.npu(), y.npu()), torch.ops.aten.tanh_backward(g, y))
    y = torch.sigmoid(x)
    close(torch.ops.aten.sigmoid_backward(g.npu(), y.npu()), torch.ops.aten.sigmoid_backward(g, y))
    close(torch.ops.aten.silu_backward(g.npu(), x.npu()), torch.ops.aten.silu_backward(g, x))


# ---- GEMM --------------------------------------------------------------------------------------------------------

def operand(shape, dtype, seed, layout, device):
    """A (..., r, c) operand on `device` as a plain, transposed, conj or transposed-conj view, or with no unit
    stride."""
    if layout == "plain":
        return cplx(shape, dtype, seed).to(device)
    if layout == "t":
        return cplx(shape[:-2] + (shape[-1], shape[-2]), dtype, seed).to(device).transpose(-1, -2)
    if layout == "conj":
        return cplx(shape, dtype, seed).to(device).conj()
    if layout == "t_conj":
        return cplx(shape[:-2] + (shape[-1], shape[-2]), dtype, seed).to(device).transpose(-1, -2).conj()
    if layout == "strided":  # no unit stride: the loop path
        return cplx(shape[:-1] + (shape[-1] * 2,), dtype, seed).to(device)[..., ::2]
    raise ValueError(layout)


LAYOUTS = ["plain", "t", "conj", "t_conj", "strided"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_mm_layouts_and_conj_views(native_only, dtype, la, lb):
    a, b = operand((33, 17), dtype, 1, la, "cpu"), operand((17, 21), dtype, 2, lb, "cpu")
    an, bn = operand((33, 17), dtype, 1, la, "npu"), operand((17, 21), dtype, 2, lb, "npu")
    assert an.is_conj() == ("conj" in la) and bn.is_conj() == ("conj" in lb)  # the kernel must honour the bit
    close(torch.mm(an, bn), torch.mm(a, b), rtol=1e-4 if dtype == torch.complex64 else 1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmm_baddbmm_complex_alpha_beta(native_only, dtype):
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.complex64 else {}
    c, a, b = cplx((12, 10), dtype, 1), cplx((12, 7), dtype, 2), cplx((7, 10), dtype, 3)
    close(torch.addmm(c.npu(), a.npu().conj(), b.npu(), beta=0.5 - 1j, alpha=2 + 1j),
          torch.addmm(c, a.conj(), b, beta=0.5 - 1j, alpha=2 + 1j), **tol)
    close(torch.addmm(c[0].npu(), a.npu(), b.npu(), beta=1j), torch.addmm(c[0], a, b, beta=1j), **tol)  # broadcast
    cb, ab, bb = cplx((3, 5, 6), dtype, 4), cplx((3, 5, 4), dtype, 5), cplx((3, 4, 6), dtype, 6)
    close(torch.baddbmm(cb.npu(), ab.npu(), bb.npu().conj(), beta=-1, alpha=1j),
          torch.baddbmm(cb, ab, bb.conj(), beta=-1, alpha=1j), **tol)
    close(torch.bmm(ab.npu().mT.conj().mT, bb.npu()), torch.bmm(ab.mT.conj().mT, bb), **tol)
    close(torch.addbmm(c[:5, :6].npu(), ab.npu(), bb.npu(), alpha=1 - 1j),
          torch.addbmm(c[:5, :6], ab, bb, alpha=1 - 1j), **tol)
    y = c.npu()
    y.addmm_(a.npu(), b.npu(), alpha=1j)
    close(y, torch.addmm(c, a, b, alpha=1j), **tol)
    # addmm_ into a conj view writes through the view
    base = c.clone().npu()
    view = base.conj()
    view.addmm_(a.npu(), b.npu())
    close(base, torch.addmm(c.conj(), a, b).conj(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_copies_of_and_into_lazy_views(native_only, dtype):
    x, y = cplx((5, 6), dtype, 1), cplx((5, 6), dtype, 2)
    xn = x.npu()
    close(xn.conj().clone(), x.conj().resolve_conj())  # resolved on the device
    assert torch.equal(xn.conj().cpu().resolve_conj(), x.conj().resolve_conj())
    dst = torch.zeros(5, 6, dtype=dtype).npu()
    dst.conj().copy_(y.npu())  # a conj destination stores conj(y)
    close(dst, y.conj().resolve_conj())
    dst.conj().copy_(y.npu().conj())  # both lazy: stores y
    close(dst, y)
    neg = torch.zeros(5, 6, dtype=dtype).npu()._neg_view()
    neg.copy_(y.npu())
    close(neg._neg_view(), -y)
    host = torch.zeros(5, 6, dtype=dtype)
    host.conj().copy_(xn)
    torch.testing.assert_close(host, x.conj().resolve_conj())


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_vdot_mv_matmul(native_only, dtype):
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.complex64 else {}
    x, y = cplx((300,), dtype, 1), cplx((300,), dtype, 2)
    close(torch.dot(x.npu(), y.npu()), torch.dot(x, y), **tol)
    close(torch.vdot(x.npu(), y.npu()), torch.vdot(x, y), **tol)
    close(torch.dot(x.npu().conj(), y.npu()), torch.vdot(x, y), **tol)
    close(torch.vdot(x.npu().conj(), y.npu()), torch.dot(x, y), **tol)
    close(torch.vdot(x.npu(), y.npu().conj()), torch.vdot(x, y.conj()), **tol)
    m = cplx((20, 300), dtype, 3)
    close(torch.mv(m.npu(), x.npu()), torch.mv(m, x), **tol)
    close(torch.addmv(y[:20].npu(), m.npu(), x.npu(), beta=1j, alpha=2), torch.addmv(y[:20], m, x, beta=1j, alpha=2),
          **tol)
    a, b = cplx((2, 3, 16, 8), dtype, 4), cplx((8, 5), dtype, 5)
    close(a.npu() @ b.npu(), a @ b, **tol)
    close(torch.einsum("bij,bjk->bik", a[0].npu(), a[1].npu().mT.conj()), torch.einsum("bij,bjk->bik", a[0], a[1].mT.conj()),
          **tol)


def test_mm_of_real_tensors_with_complex_alpha_follows_cpu():
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    with pytest.raises(RuntimeError) as cpu:
        torch.addmm(torch.zeros(3, 2), a, b, alpha=1j)
    with pytest.raises(RuntimeError) as npu:
        torch.addmm(torch.zeros(3, 2).npu(), a.npu(), b.npu(), alpha=1j)
    assert str(cpu.value).split("\n")[0] in str(npu.value)


# ---- reductions --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)])
def test_sum_mean_prod(native_only, dtype, dim):
    x = cplx((6, 70, 5), dtype, 1, 0.6)
    args = () if dim is None else (dim,)
    close(torch.sum(x.npu(), *args), torch.sum(x, *args), rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-4)
    close(torch.mean(x.npu(), *args), torch.mean(x, *args), rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-5)
    if dim is None or isinstance(dim, int):
        want = torch.prod(x, *args)
        close(torch.prod(x.npu(), *args), want, rtol=1e-3 if dtype == torch.complex64 else 1e-9, atol=1e-30)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_sum_two_phase_and_empty_mean(native_only, dtype):
    x = cplx((1 << 17,), dtype, 2)
    close(x.npu().sum(), x.sum(), rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-2)
    e = torch.empty(0, 3, dtype=dtype)
    close(e.npu().mean(0), e.mean(0))  # NaN + NaN j
    close(e.npu().sum(0), e.sum(0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_logic_reductions_and_count(native_only, dtype):
    x = cplx((5, 8), dtype, 3)
    x[1] = 0
    x[2, 3] = 1j  # a purely imaginary value is nonzero
    x[3, :] = 0
    x[3, 2] = 2j
    for fn in (torch.all, torch.any):
        assert torch.equal(fn(x.npu(), 1).cpu(), fn(x, 1))
        assert torch.equal(fn(x.npu()).cpu(), fn(x))
    assert torch.equal(torch.count_nonzero(x.npu(), 0).cpu(), torch.count_nonzero(x, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_cumprod(native_only, dtype):
    x = cplx((4, 30), dtype, 4, 0.9)
    close(torch.cumsum(x.npu(), 1), torch.cumsum(x, 1), rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-5)
    close(torch.cumprod(x.npu(), 1), torch.cumprod(x, 1), rtol=1e-3 if dtype == torch.complex64 else 1e-9, atol=1e-30)
    close(torch.cumsum(x.npu(), 0), torch.cumsum(x, 0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_std_and_mean(native_only, dtype, dim, correction):
    x = cplx((7, 9, 3), dtype, 5)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.complex64 else {}
    for fn in (torch.var, torch.std):
        got, want = fn(x.npu(), dim, correction=correction), fn(x, dim, correction=correction)
        assert got.dtype == want.dtype  # the real type
        close(got, want, **tol)
    for fn in (torch.var_mean, torch.std_mean):
        (v, m), (wv, wm) = fn(x.npu(), dim, correction=correction, keepdim=True), fn(x, dim, correction=correction,
                                                                                     keepdim=True)
        close(v, wv, **tol)
        close(m, wm, **tol)
    close(torch.var(x[0, 0, 0].npu(), correction=0), torch.var(x[0, 0, 0], correction=0))  # 0-dim


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [2, 1, float("inf"), 3, 0])
def test_vector_norm_of_conj_and_plain(native_only, dtype, ord):
    x = cplx((6, 11), dtype, 6)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else {}
    close(torch.linalg.vector_norm(x.npu(), ord, dim=1), torch.linalg.vector_norm(x, ord, dim=1), **tol)
    close(torch.linalg.vector_norm(x.npu().conj(), ord), torch.linalg.vector_norm(x, ord), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_dtypes_of_real_valued_results(native_only, dtype):
    # abs / var of complex into out=: the real type or the complex one (imaginary 0), as CPU; an integer out of
    # abs is CPU's cast error, and nothing is written
    z = cplx((6, 5), dtype, 9)
    for fn in (lambda t, o: torch.abs(t, out=o), lambda t, o: torch.var(t, 0, out=o),
               lambda t, o: torch.std(t, 1, out=o)):
        for out_dtype in (dtype, z.real.dtype):
            want = fn(z, torch.empty(0, dtype=out_dtype))
            got = fn(z.npu(), torch.empty(0, dtype=out_dtype, device="npu"))
            assert got.dtype == want.dtype
            close(got, want, dtype)
    out = torch.full((6, 5), 7, dtype=torch.int32, device="npu")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Int"):
        torch.abs(z.npu(), out=out)
    assert torch.equal(out.cpu(), torch.full((6, 5), 7, dtype=torch.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_logsumexp_and_nansum(native_only, dtype):
    x = cplx((5, 7, 3), dtype, 7, 2.0)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else {}
    for dims, keepdim in [((1,), False), ((0, 2), True), ((0, 1, 2), False)]:
        close(torch.logsumexp(x.npu(), dims, keepdim), torch.logsumexp(x, dims, keepdim), **tol)
    y = x.clone()
    y[0, 0, 0] = complex(float("nan"), 1.0)
    # CPU refuses complex nansum, CUDA sums with an element with a NaN part counted as zero
    close(torch.nansum(y.npu(), 1), torch.where(y.isnan(), 0, y).sum(1), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_logcumsumexp_special_values_and_gradient(native_only, dtype):
    # ATen's complex log-add-exp: ordered by real part, a NaN in either part poisons the rest of the line, two
    # -inf real parts keep the smaller operand, two +inf ones take log(exp + exp); tiny values use log1p
    inf, nan = float("inf"), float("nan")
    x = cplx((6, 40), dtype, 11, 3.0)
    x[0, 3], x[0, 4] = complex(-inf, 1.0), complex(-inf, 2.0)
    x[1, 0], x[1, 5] = complex(inf, 0.5), complex(inf, -1.0)
    x[2, 7], x[3, 2] = complex(nan, 0.0), complex(1.0, nan)
    x[4] *= 1e-9
    x[5, :4] = complex(-inf, 0.0)  # a line that starts at -inf (the scan's own initial value)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.complex64 else {}
    for dim in (0, 1, -1):
        close(torch.logcumsumexp(x.npu(), dim), torch.logcumsumexp(x, dim), **tol)
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.logcumsumexp(x.npu(), 1, out=out)
    close(out, torch.logcumsumexp(x, 1), **tol)
    a = cplx((5, 9), dtype, 12, 1.5).requires_grad_()
    an = a.detach().npu().requires_grad_()
    g = cplx((5, 9), dtype, 13)
    torch.logcumsumexp(a, 1).backward(g)
    torch.logcumsumexp(an, 1).backward(g.npu())
    close(an.grad, a.grad, rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
def test_renorm(native_only, dtype, p):
    # slices whose p-norm (of |z|) exceeds maxnorm scaled by the real factor maxnorm / (norm + 1e-7)
    x = cplx((4, 5, 6), dtype, 14)
    for dim in (0, 2, -2):
        close(torch.renorm(x.npu(), p, dim, 1.5), torch.renorm(x, p, dim, 1.5))
    y = x.npu()
    y.renorm_(p, 1, 0.75)
    close(y, torch.renorm(x, p, 1, 0.75))
    if p != float("inf"):  # CPU's inf-norm gradient is NaN for complex (docs/opinfo_summary_complex64.md)
        a = x.clone().requires_grad_()
        an = x.npu().requires_grad_()
        g = cplx((4, 5, 6), dtype, 15)
        torch.renorm(a, p, 0, 1.5).backward(g)
        torch.renorm(an, p, 0, 1.5).backward(g.npu())
        close(an.grad, a.grad, rtol=1e-4 if dtype == torch.complex64 else 1e-10, atol=1e-5)


# ---- autograd ----------------------------------------------------------------------------------------------------

def test_complex_model_gradients_match_cpu(native_only):
    """A small complex network (linear maps, tanh, sigmoid, a |.|^2 loss): the gradients pass conj views to mm."""
    torch.manual_seed(0)
    w1, w2 = torch.randn(16, 8, dtype=torch.complex128), torch.randn(8, 4, dtype=torch.complex128)
    x = torch.randn(32, 16, dtype=torch.complex128)

    def run(device):
        p1 = w1.to(device).requires_grad_()
        p2 = w2.to(device).requires_grad_()
        h = torch.tanh(x.to(device) @ p1)
        out = torch.sigmoid(h @ p2) * torch.exp(1j * h.sum(1, keepdim=True).real.mean())
        loss = (out.abs() ** 2).sum() + out.var().real
        loss.backward()
        return loss, p1.grad, p2.grad

    for got, want in zip(run("npu"), run("cpu")):
        close(got, want, rtol=1e-10, atol=1e-10)
