"""The ops made native last: nextafter / frexp (every float dtype, bit for bit), nonzero_static, rrelu (training
noise and evaluation), fractional max pooling 2-D / 3-D (values, indices, gradients, CPU's window placement from
the same samples), torch.segment_reduce (every reduction, lengths and offsets, initial, NaN, gradients), torch.mode
(CPU's value and index choice) and the multi-margin losses, on npu against CPU; CPU's error types and messages;
no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers npu)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def same_error(fn, *cpu_args, match=None):
    """fn raises on CPU and on npu with the same exception type and first message line."""
    with pytest.raises(Exception) as cpu_err:
        fn(*cpu_args)
    with pytest.raises(Exception) as npu_err:
        fn(*[a.npu() if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert npu_err.type is cpu_err.type, (npu_err.value, cpu_err.value)
    assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]


def bits(t):
    """The bit patterns of a float tensor, NaNs made one pattern (their payload is not specified)."""
    t = torch.where(torch.isnan(t), torch.full_like(t, float("nan")), t)
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


SPECIAL = [1.0, 0.0, -0.0, -1.5, float("inf"), -float("inf"), float("nan"), 1e-40, 3.0, -65504.0, 1e-8, 2.5e38]


@pytest.mark.parametrize("dtype", FLOATS)
def test_nextafter_bit_exact(dtype, native_only):
    x = torch.tensor(SPECIAL).to(dtype)
    y = torch.tensor([2.0, -1.0, 1.0, -3.0, 0.0, 0.0, 1.0, 0.0, 3.0, -1e9, -1.0, float("inf")]).to(dtype)
    r = torch.randn(1000).to(dtype)
    for a, b in [(x, y), (r, r.flip(0)), (r, torch.zeros(()).to(dtype))]:
        assert torch.equal(bits(torch.nextafter(a.npu(), b.npu()).cpu()), bits(torch.nextafter(a, b)))
    z = x.npu()
    z.nextafter_(y.npu())
    assert torch.equal(bits(z.cpu()), bits(torch.nextafter(x, y)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp_bit_exact(dtype, native_only):
    x = torch.cat([torch.tensor(SPECIAL), torch.randn(1000) * 1e3]).to(dtype)
    m, e = torch.frexp(x)
    mn, en = torch.frexp(x.npu())
    assert en.dtype == torch.int32 and mn.dtype == dtype
    assert torch.equal(bits(mn.cpu()), bits(m)) and torch.equal(en.cpu(), e)
    # a strided input, and out= with the mantissa written over the input itself
    xs = x.npu()[::3]
    ms, es = torch.frexp(xs)
    assert torch.equal(bits(ms.cpu()), bits(m[::3])) and torch.equal(es.cpu(), e[::3])
    y = x.npu()
    exp = torch.empty(x.shape, dtype=torch.int32, device="npu")
    torch.frexp(y, out=(y, exp))
    assert torch.equal(bits(y.cpu()), bits(m)) and torch.equal(exp.cpu(), e)


def test_frexp_nextafter_errors():
    same_error(torch.frexp, torch.ones(3, dtype=torch.int32))
    x = torch.randn(4)
    same_error(lambda a, m, e: torch.frexp(a, out=(m, e)), x, torch.empty(4, dtype=torch.float64),
               torch.empty(4, dtype=torch.int32))
    same_error(lambda a, m, e: torch.frexp(a, out=(m, e)), x, torch.empty(4), torch.empty(4))
    # integers: CPU has no nextafter kernel for them either (the npu call reaches it through the fallback)
    with pytest.raises(NotImplementedError, match="nextafter_cpu"):
        torch.nextafter(torch.ones(3, dtype=torch.int32).npu(), torch.ones(3, dtype=torch.int32).npu())


@pytest.mark.parametrize("size,fill", [(3, -1), (1, 7), (0, -1), (6, -5), (2, 0)])
def test_nonzero_static(size, fill, native_only):
    for x in [torch.tensor([[0, 1], [2, 0]]), torch.randn(3, 4, 5).gt(0.5), torch.tensor(5), torch.tensor(0),
              torch.zeros(0, 3), torch.arange(12.0).reshape(3, 4).t()]:
        want = torch.nonzero_static(x, size=size, fill_value=fill)
        got = torch.nonzero_static(x.npu(), size=size, fill_value=fill)
        assert got.dtype == torch.int64 and torch.equal(got.cpu(), want)
    out = torch.empty(0, dtype=torch.int64, device="npu")
    torch.nonzero_static(torch.tensor([0, 3, 0, 4]).npu(), size=3, fill_value=9, out=out)
    assert torch.equal(out.cpu(), torch.tensor([[1], [3], [9]]))


def test_nonzero_static_errors():
    same_error(lambda x: torch.nonzero_static(x, size=-1), torch.ones(3))
    same_error(lambda x, o: torch.nonzero_static(x, size=2, out=o), torch.ones(3), torch.empty(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rrelu_training_and_eval(dtype, native_only):
    torch.manual_seed(0)
    x = torch.randn(4096).to(dtype)
    noise = torch.empty(4096, dtype=dtype, device="npu")
    lower, upper = 0.1, 0.3
    out = torch.ops.aten.rrelu_with_noise(x.npu(), noise, lower, upper, True).cpu()
    noise = noise.cpu()
    neg = x <= 0
    assert neg.any() and (~neg).any()
    # every non-positive input scaled by its own draw in [lower, upper], which noise records; 1 elsewhere
    assert bool(((noise[neg] >= lower) & (noise[neg] <= upper)).all()) and bool((noise[~neg] == 1).all())
    assert noise[neg].unique().numel() > 100  # fresh draws, not one slope
    torch.testing.assert_close(out, (x * noise).to(dtype), rtol=0, atol=0)
    # evaluation: leaky_relu with the mean slope, bit for bit as CPU
    for training in [False]:
        assert torch.equal(F.rrelu(x.npu(), lower, upper, training=training).cpu(), F.rrelu(x, lower, upper))
    # the module in training, with autograd: the gradient is the recorded slope
    xn = x.npu().float().requires_grad_()
    y = F.rrelu(xn, lower, upper, training=True)
    y.sum().backward()
    slope = (y.detach() / xn.detach()).cpu()
    g = xn.grad.cpu()
    torch.testing.assert_close(g[x.float() < 0], slope[x.float() < 0])
    assert bool((g[x.float() > 0] == 1).all())
    # in place
    z = x.npu()
    F.rrelu_(z, lower, upper, training=False)
    assert torch.equal(z.cpu(), F.rrelu(x, lower, upper))


def test_rrelu_errors():
    same_error(lambda x, n: torch.ops.aten.rrelu_with_noise(x, n, 0.1, 0.3, True), torch.randn(3, 4), torch.empty(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        torch.ops.aten.rrelu_with_noise(torch.ones(3, dtype=torch.int32).npu(), torch.ones(3, dtype=torch.int32).npu(),
                                        0.1, 0.3, True)


def pool_case(rank, dtype, shape, kernel, out, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).to(dtype)
    n = shape[0] if len(shape) == rank + 2 else 1
    samples = torch.rand(n, shape[-rank - 1], rank, generator=g).to(dtype)
    fwd = torch.ops.aten.fractional_max_pool2d if rank == 2 else torch.ops.aten.fractional_max_pool3d
    bwd = (torch.ops.aten.fractional_max_pool2d_backward if rank == 2
           else torch.ops.aten.fractional_max_pool3d_backward)
    o, i = fwd(x, kernel, out, samples)
    on, inn = fwd(x.npu(), kernel, out, samples.npu())
    assert torch.equal(on.cpu(), o) and torch.equal(inn.cpu(), i)
    go = torch.randn(o.shape, generator=g).to(dtype)
    gi = bwd(go, x, kernel, out, i)
    gin = bwd(go.npu(), x.npu(), kernel, out, inn)
    assert torch.equal(gin.cpu(), gi)


@pytest.mark.parametrize("dtype", FLOATS)
def test_fractional_max_pool(dtype, native_only):
    pool_case(2, dtype, (2, 3, 9, 11), [2, 3], [5, 4], 0)
    pool_case(2, dtype, (3, 10, 10), [3, 3], [8, 8], 1)  # unbatched, overlapping windows: repeated indices
    pool_case(2, dtype, (1, 2, 6, 6), [6, 6], [1, 1], 2)  # one window, the whole plane
    pool_case(3, dtype, (2, 3, 7, 8, 9), [2, 2, 3], [3, 4, 5], 3)
    pool_case(3, dtype, (2, 6, 6, 6), [2, 2, 2], [4, 4, 4], 4)


def test_fractional_max_pool_functional_autograd(native_only):
    x = torch.randn(2, 3, 17, 13)
    for ratio in [(0.5, 0.5), (0.7, 0.4)]:
        torch.manual_seed(5)  # the samples are drawn on the input's device: only shapes and the max property compare
        xn = x.npu().requires_grad_()
        y, idx = F.fractional_max_pool2d(xn, 3, output_ratio=ratio, return_indices=True)
        y.sum().backward()
        # every output is the input element its index names, and gradients land exactly there
        flat = x.flatten(2)
        assert torch.equal(y.detach().cpu().flatten(2), flat.gather(2, idx.cpu().flatten(2)))
        want = torch.zeros_like(flat).scatter_add_(2, idx.cpu().flatten(2), torch.ones_like(y.detach().cpu()).flatten(2))
        assert torch.equal(xn.grad.cpu().flatten(2), want)


def test_fractional_max_pool_errors():
    f2 = torch.ops.aten.fractional_max_pool2d
    same_error(lambda x, s: f2(x, [4, 4], [3, 3], s), torch.randn(2, 3, 5, 5), torch.rand(2, 3, 2))
    same_error(lambda x, s: torch.ops.aten.fractional_max_pool3d(x, [2, 2, 2], [3, 3, 3], s),
               torch.randn(2, 3, 4, 5, 5), torch.rand(2, 3, 3))
    # samples that do not cover the batch: CPU reads past them; npu refuses, naming the argument
    with pytest.raises(RuntimeError, match=r"random_samples of shape \(N >= 2, 3, 2\)"):
        f2(torch.randn(2, 3, 9, 9).npu(), [2, 2], [3, 3], torch.rand(1, 3, 2).npu())
    with pytest.raises(RuntimeError, match="gradOutput sizes unexpected"):
        torch.ops.aten.fractional_max_pool2d_backward(torch.randn(2, 3, 3, 4).npu(), torch.randn(2, 3, 9, 9).npu(),
                                                      [2, 2], [3, 3], torch.zeros(2, 3, 3, 3, dtype=torch.long).npu())
    with pytest.raises(RuntimeError, match="expected grad_output of shape"):
        torch.ops.aten.fractional_max_pool3d_backward(
            torch.randn(2, 3, 2, 2, 2).npu(), torch.randn(2, 3, 5, 5, 5).npu(), [2, 2, 2], [2, 2, 3],
            torch.zeros(2, 3, 2, 2, 3, dtype=torch.long).npu())


def segment_kwargs(kw, device):
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_segment_reduce(reduce, dtype, native_only):
    g = torch.Generator().manual_seed(0)
    d = torch.randn(2, 7, 3, generator=g).to(dtype)
    d[0, 1, 1] = float("nan")
    d[1, 4, 0] = 0.0
    d[1, 3, 2] = d[1, 5, 2]  # a tie for max / min
    lengths = torch.tensor([[2, 0, 5], [3, 3, 1]])
    offsets = torch.tensor([[0, 2, 2, 7], [0, 3, 6, 7]], dtype=torch.int32)
    for kw in [dict(lengths=lengths), dict(offsets=offsets), dict(lengths=lengths.int(), initial=1.5),
               dict(offsets=offsets, initial=-2)]:
        want = torch.segment_reduce(d, reduce, axis=1, **kw)
        got = torch.segment_reduce(d.npu(), reduce, axis=1, **segment_kwargs(kw, "npu")).cpu()
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
        grad = torch.randn(want.shape, generator=g).to(dtype)
        gw = torch.ops.aten._segment_reduce_backward(grad, want, d, reduce, axis=1, **kw)
        gg = torch.ops.aten._segment_reduce_backward(grad.npu(), want.npu(), d.npu(), reduce, axis=1,
                                                     **segment_kwargs(kw, "npu")).cpu()
        torch.testing.assert_close(gg, gw, equal_nan=True, rtol=0, atol=0)
    # 1-D data through autograd (axis 0, the common use)
    x = torch.randn(10, generator=g, dtype=torch.float64)
    ln = torch.tensor([3, 0, 7])
    xc, xn = x.clone().requires_grad_(), x.npu().requires_grad_()
    torch.segment_reduce(xc, reduce, lengths=ln).sum().backward()
    torch.segment_reduce(xn, reduce, lengths=ln.npu()).sum().backward()
    torch.testing.assert_close(xn.grad.cpu(), xc.grad)


def test_segment_reduce_no_segments(native_only):
    d = torch.randn(5, 2)
    for kw in [dict(lengths=torch.zeros(0, dtype=torch.long), unsafe=True),
               dict(offsets=torch.tensor([0]))]:
        want = torch.segment_reduce(d, "sum", **kw)
        got = torch.segment_reduce(d.npu(), "sum", **segment_kwargs(kw, "npu"))
        assert got.shape == want.shape == (0, 2)
        gk = {k: v for k, v in kw.items() if k != "unsafe"}
        back = torch.ops.aten._segment_reduce_backward(torch.empty(0, 2).npu(), got, d.npu(), "sum",
                                                       **segment_kwargs(gk, "npu"))
        assert torch.equal(back.cpu(), torch.zeros(5, 2))


def test_segment_reduce_errors():
    d = torch.randn(2, 7, 3)
    same_error(lambda x, n: torch.segment_reduce(x, "sum", lengths=n, axis=1), d, torch.tensor([[2, 0, 4], [3, 3, 1]]))
    same_error(lambda x, n: torch.segment_reduce(x, "sum", lengths=n, axis=1), d, torch.tensor([[2, -1, 6], [3, 3, 1]]))
    same_error(lambda x, n: torch.segment_reduce(x, "avg", lengths=n, axis=1), d, torch.tensor([[2, 0, 5], [3, 3, 1]]))
    same_error(lambda x: torch.segment_reduce(x, "sum"), d)
    same_error(lambda x, n: torch.segment_reduce(x, "sum", lengths=n, axis=2), d, torch.tensor([[2, 0, 5], [3, 3, 1]]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        torch.segment_reduce(d.int().npu(), "sum", lengths=torch.tensor([[2, 0, 5], [3, 3, 1]]).npu(), axis=1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Short'"):
        torch.segment_reduce(d.npu(), "sum", lengths=torch.tensor([[2, 0, 5], [3, 3, 1]]).short().npu(), axis=1)
    # unsafe lengths running past the axis: CPU reads out of bounds; npu fails the stream with a clear error
    with pytest.raises(RuntimeError, match="outside data.size"):
        torch.segment_reduce(d.npu(), "sum", lengths=torch.tensor([[2, 0, 9], [3, 3, 1]]).npu(), axis=1,
                             unsafe=True).cpu()
    from conftest import acknowledge_device_error
    acknowledge_device_error()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool])
def test_mode(dtype, native_only):
    g = torch.Generator().manual_seed(0)
    cases = [torch.randint(0, 4, (5, 40, 3), generator=g), torch.randint(0, 3, (7, 9), generator=g),
             torch.randint(0, 50, (2, 300), generator=g)]
    if dtype.is_floating_point:
        c = torch.randint(0, 3, (4, 20), generator=g).to(dtype)
        c[0, ::3] = float("nan")
        c[1, :] = float("nan")
        c[2, ::2] = -0.0
        cases.append(c)
    for x in cases:
        x = x.to(dtype)
        for d in range(-x.dim(), x.dim()):
            for keepdim in [False, True]:
                want = torch.mode(x, d, keepdim)
                got = torch.mode(x.npu(), d, keepdim)
                assert torch.equal(bits(got.values.cpu()) if dtype.is_floating_point else got.values.cpu(),
                                   bits(want.values) if dtype.is_floating_point else want.values), (d, keepdim)
                assert torch.equal(got.indices.cpu(), want.indices), (d, keepdim)
    for x, d in [(torch.tensor(3), 0), (torch.zeros(0, 4), 1), (torch.ones(3, 1), 0)]:
        want, got = torch.mode(x.to(dtype), d), torch.mode(x.to(dtype).npu(), d)
        assert torch.equal(got.values.cpu(), want.values) and torch.equal(got.indices.cpu(), want.indices)
    # the method and out= flavours route to the same kernel
    v, i = torch.empty(0, dtype=dtype, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    x = cases[0].to(dtype)
    torch.mode(x.npu(), 1, out=(v, i))
    assert torch.equal(i.cpu(), torch.mode(x, 1).indices)


def test_mode_errors():
    same_error(lambda x: torch.mode(x, 1), torch.empty(3, 0))
    same_error(lambda x: torch.mode(x, 2), torch.randn(3, 4))
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.mode(torch.randn(3, 4, dtype=torch.complex64).npu(), 1)


MARGIN_TARGETS = torch.tensor([[3, 0, -1, 1, 2], [1, -1, 4, 4, 4], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0],
                               [2, 2, -1, 0, 0], [4, -1, 0, 0, 0]])


def loss_grads(fn, x, *args):
    xs = x.detach().clone().requires_grad_()
    out = fn(xs, *args)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=x.dtype).to(x.device)
    out.backward(g)
    return out.detach().cpu(), xs.grad.cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multi_margin_loss(dtype, reduction, native_only):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, generator=g, dtype=dtype)
    x[2, 3] = float("nan")
    t = torch.randint(0, 5, (6,), generator=g)
    w = torch.rand(5, generator=g, dtype=dtype)
    for p in [1, 2]:
        for weight in [None, w]:
            fn = lambda a, tt, ww: F.multi_margin_loss(a, tt, p=p, margin=0.7, weight=ww, reduction=reduction)  # noqa
            want = loss_grads(fn, x, t, weight)
            got = loss_grads(fn, x.npu(), t.npu(), None if weight is None else weight.npu())
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, equal_nan=True, rtol=0, atol=0)
    # 1-D input: a scalar output even with reduction none, as CPU
    one = F.multi_margin_loss(x[0].npu(), t[:1].npu(), reduction=reduction)
    assert one.shape == F.multi_margin_loss(x[0], t[:1], reduction=reduction).shape


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(dtype, reduction, native_only):
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(0), dtype=dtype)
    fn = lambda a, tt: F.multilabel_margin_loss(a, tt, reduction=reduction)  # noqa: E731
    for xx, tt in [(x, MARGIN_TARGETS), (x[0], MARGIN_TARGETS[0])]:
        want = loss_grads(fn, xx, tt)
        got = loss_grads(fn, xx.npu(), tt.npu())
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    out, is_target = torch.ops.aten.multilabel_margin_loss_forward(x.npu(), MARGIN_TARGETS.npu(), 1)
    want_out, want_is = torch.ops.aten.multilabel_margin_loss_forward(x, MARGIN_TARGETS, 1)
    assert torch.equal(is_target.cpu(), want_is) and is_target.dtype == want_is.dtype


def test_margin_loss_errors():
    x = torch.randn(6, 5)
    same_error(lambda a, t: F.multi_margin_loss(a, t), x, torch.tensor([0, 1, 2, 3, 4, 5]))
    same_error(lambda a, t: F.multi_margin_loss(a, t), x, torch.tensor([0, 1, 2]))
    same_error(lambda a, t, w: F.multi_margin_loss(a, t, weight=w), x, torch.tensor([0, 1, 2, 3, 4, 0]), torch.rand(4))
    same_error(lambda a, t: F.multilabel_margin_loss(a, t), x, MARGIN_TARGETS + 1)
    same_error(lambda a, t: F.multilabel_margin_loss(a, t), x, MARGIN_TARGETS[:, :3])
    same_error(lambda a, t: F.multilabel_margin_loss(a, t), torch.randn(2, 0), torch.zeros(2, 0, dtype=torch.long))
    same_error(lambda g, a, t, i: torch.ops.aten.multilabel_margin_loss_backward(g, a, t, 1, i),
               torch.tensor(1.0), x, MARGIN_TARGETS, torch.full((6, 5), 2.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_matrix_exp(dtype, native_only):
    g = torch.Generator().manual_seed(0)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype in (torch.float32, torch.complex64) else dict(rtol=1e-12, atol=1e-12)
    for scale in [1e-3, 0.5, 3.0, 20.0, 100.0]:  # no scaling, and up to 5 squarings
        a = (torch.randn(4, 6, 6, generator=g, dtype=torch.float64) * scale / 6).to(dtype)
        want = torch.linalg.matrix_exp(a)
        got = torch.linalg.matrix_exp(a.npu()).cpu()
        torch.testing.assert_close(got / want.abs().amax(), want / want.abs().amax(), **tol)
    # a batch mixing norms (each matrix its own scaling), a 1 x 1 batch, empty batches
    a = torch.stack([torch.eye(5, dtype=torch.float64) * 1e-4, torch.randn(5, 5, generator=g, dtype=torch.float64) * 8])
    torch.testing.assert_close(torch.linalg.matrix_exp(a.npu()).cpu(), torch.linalg.matrix_exp(a), rtol=1e-10, atol=0)
    one = torch.randn(3, 1, 1, generator=g, dtype=torch.float64)
    torch.testing.assert_close(torch.linalg.matrix_exp(one.npu()).cpu(), one.exp())
    assert torch.linalg.matrix_exp(torch.randn(2, 0, 0).npu()).shape == (2, 0, 0)


def test_matrix_exp_grad_and_16_bit(native_only):
    a = torch.randn(2, 4, 4, dtype=torch.float64)
    assert torch.autograd.gradcheck(torch.linalg.matrix_exp, (a.npu().requires_grad_(),))
    # 16-bit runs in float32: compare with CPU's float32 result (CPU's own bfloat16 result is wrong: it overflows)
    x = torch.randn(3, 5, 5) * 0.3
    for dtype in [torch.bfloat16, torch.float16]:
        got = torch.linalg.matrix_exp(x.to(dtype).npu()).cpu()
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), torch.linalg.matrix_exp(x.to(dtype).float()), rtol=2e-2, atol=2e-2)


def test_matrix_exp_errors():
    same_error(torch.linalg.matrix_exp, torch.randn(3, 4))
    same_error(torch.linalg.matrix_exp, torch.ones(3, 3, dtype=torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.int64, torch.bool])
def test_hash_tensor(dtype, native_only):
    x = (torch.randn(4, 5, 7, generator=torch.Generator().manual_seed(0)) * 50).to(dtype)
    for dim, keepdim in [((), False), ((1,), False), ((0, 2), True), ((-1,), False), ((0, 1, 2), True)]:
        assert torch.equal(torch.hash_tensor(x.npu(), dim, keepdim=keepdim).cpu(), torch.hash_tensor(x, dim, keepdim=keepdim))
    assert torch.equal(torch.hash_tensor(x[0, 0, 0].npu()).cpu(), torch.hash_tensor(x[0, 0, 0]))


@pytest.mark.parametrize("strided", [False, True])
def test_hash_tensor_over_a_size_one_dim_is_a_new_tensor(strided, native_only):
    # Reducing a size-1 dim xors nothing: the hash of an int64 input was its own memory, viewed as uint64, so writing
    # to the input changed the hash; over a strided view the uint64 view failed.
    base = torch.arange(24, dtype=torch.int64).reshape(3, 2, 1, 4)
    x = base[..., ::2] if strided else base
    xn = base.npu()[..., ::2] if strided else base.npu()
    got, want = torch.hash_tensor(xn, 2, keepdim=True), torch.hash_tensor(x, 2, keepdim=True)
    xn.add_(1000)
    assert torch.equal(got.cpu(), want)


def test_hash_tensor_errors():
    same_error(lambda x: torch.hash_tensor(x, mode=1), torch.randn(3))
    same_error(lambda x: torch.hash_tensor(x), torch.empty(0, 3))
    same_error(lambda x: torch.hash_tensor(x, 0), torch.empty(0, 3))
