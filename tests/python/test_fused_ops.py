"""torch_npu's fused ops (namespace npu) against CPU PyTorch compositions of the same math: forward,
backward, fake kernels, errors naming the argument, and the GM traffic the launch records show."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

MiB = 1 << 20


def npu(*ts):
    return [t.to("npu") for t in ts]


# --- npu_linear_add_gelu ------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,k,n", [(1024, 1024, 1024), (37, 129, 200), (1, 1, 1), (130, 0, 5)])
def test_linear_add_gelu_matches_cpu(m, k, n, native_only):
    x, w, b = torch.randn(m, k), torch.randn(k, n) / max(k, 1) ** 0.5, torch.randn(n)
    out = torch.ops.npu.npu_linear_add_gelu(*npu(x, w, b))
    torch.testing.assert_close(out.cpu(), F.gelu(x @ w + b), rtol=1e-4, atol=1e-5)
    assert torch_npu_sim.npu_linear_add_gelu is not None


def test_linear_add_gelu_backward_matches_cpu():
    x, w, b = torch.randn(33, 40, dtype=torch.float32), torch.randn(40, 17), torch.randn(17)
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    F.gelu(ref[0] @ ref[1] + ref[2]).pow(2).sum().backward()
    dev = [t.to("npu").requires_grad_() for t in (x, w, b)]
    torch_npu_sim.npu_linear_add_gelu(*dev).pow(2).sum().backward()
    for r, d in zip(ref, dev):
        torch.testing.assert_close(d.grad.cpu(), r.grad, rtol=1e-4, atol=1e-4)


def test_linear_add_gelu_fake_kernel_propagates_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, w, b = torch.empty(8, 5, device="npu"), torch.empty(5, 3, device="npu"), torch.empty(3, device="npu")
        out = torch.ops.npu.npu_linear_add_gelu(x, w, b)
    assert out.shape == (8, 3) and out.device.type == "npu"


def test_linear_add_gelu_bad_input_names_the_argument():
    x, w, b = torch.randn(4, 3, device="npu"), torch.randn(3, 2, device="npu"), torch.randn(2, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu: expected argument 'x' on an npu device"):
        torch.ops.npu.npu_linear_add_gelu(x.cpu(), w.cpu(), b.cpu())
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*weight must be \[K, N\]"):
        torch.ops.npu.npu_linear_add_gelu(x, w.t().contiguous(), b)
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*'x' has dtype Half"):
        torch.ops.npu.npu_linear_add_gelu(x.half(), w, b)
    with pytest.raises(RuntimeError, match=r"npu_linear_add_gelu.*bias must be \[N\]"):
        torch.ops.npu.npu_linear_add_gelu(x, w, b[:1])
    with pytest.raises(RuntimeError, match=r"same device|npu_linear_add_gelu"):
        torch.ops.npu.npu_linear_add_gelu(x, w.cpu(), b)


def test_linear_add_gelu_gm_traffic_against_the_unfused_sequence():
    # DESIGN §10's arithmetic for [1024, 1024] x [1024, 1024] float32. The matmul's panels: every 128 x 128
    # output tile loads its 128 rows of x and 128 columns of w over all of K (the UB holds no more), so
    # 1024^3 * 4 B * (1/128 + 1/128) = 64 MiB are read, in the fused kernel and (as the Cube would tile it)
    # in the unfused mm alike; C is written once, 4 MiB. Unfused, the bias add then reads 8 MiB and writes
    # 4 MiB (the [N] bias broadcast is counted per element, as the elementwise engine reads it) and GELU
    # reads 4 and writes 4 MiB: 20 MiB more than fused, which reads the bias row once per tile (64 x 512 B).
    x, w, b = npu(torch.randn(1024, 1024), torch.randn(1024, 1024) / 32, torch.randn(1024))
    with torch_npu_sim.record_launches() as fused:
        y_fused = torch.ops.npu.npu_linear_add_gelu(x, w, b)
    with torch_npu_sim.record_launches() as unfused:
        y_unfused = F.gelu(torch.mm(x, w) + b)
    torch.testing.assert_close(y_fused.cpu(), y_unfused.cpu(), rtol=1e-4, atol=1e-5)
    assert [r["kernel"] for r in fused.records] == ["linear_add_gelu"]
    assert (fused.gm_read, fused.gm_write) == (64 * MiB + 64 * 512, 4 * MiB)
    assert fused.cube_flops == 2 * 1024 ** 3
    per = unfused.by_kernel()
    assert sorted(per) == ["add", "gelu", "gemm"]
    assert (per["gemm"]["gm_read"], per["gemm"]["gm_write"], per["gemm"]["cube_flops"]) == (64 * MiB, 4 * MiB,
                                                                                             2 * 1024 ** 3)
    assert (per["add"]["gm_read"], per["add"]["gm_write"]) == (8 * MiB, 4 * MiB)
    assert (per["gelu"]["gm_read"], per["gelu"]["gm_write"]) == (4 * MiB, 4 * MiB)
    assert (unfused.gm_read + unfused.gm_write) - (fused.gm_read + fused.gm_write) == 20 * MiB - 64 * 512


# --- the vector fused ops: forward and backward against CPU compositions ----------------------------------

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5),
       # 16-bit: fp32 math in registers, each output rounded once (CPU's composition rounds after every op)
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=5e-3, atol=5e-3)}
DTYPES = list(TOL)


def rms_norm_ref(x, gamma, eps=1e-6):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(tuple(range(x.dim() - gamma.dim(), x.dim())), keepdim=True) + eps)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


def rotate_ref(x, mode):
    if mode == "half":
        a, b = x.chunk(2, -1)
        return torch.cat((-b, a), -1)
    pairs = x.unflatten(-1, (-1, 2))
    return torch.stack((-pairs[..., 1], pairs[..., 0]), -1).flatten(-2)


def check_fwd_bwd(fused, ref, inputs, dtype, grad_of=None, tol=None):
    """fused(*npu inputs) against ref(*cpu inputs in fp32, rounded to dtype at the end): outputs, and the
    gradients of the inputs listed in grad_of (indices) for a random upstream gradient."""
    tol = tol or TOL[dtype]
    grad_of = grad_of or []
    cpu = [t.clone().requires_grad_(i in grad_of) for i, t in enumerate(inputs)]
    dev = [t.to("npu").requires_grad_(i in grad_of) for i, t in enumerate(inputs)]
    out_ref = ref(*[t.float() if t.is_floating_point() else t for t in cpu])
    out_dev = fused(*dev)
    out_ref = out_ref if isinstance(out_ref, tuple) else (out_ref,)
    out_dev = out_dev if isinstance(out_dev, tuple) else (out_dev,)
    for o_d, o_r in zip(out_dev, out_ref):
        torch.testing.assert_close(o_d.cpu().float(), o_r.detach().to(o_d.dtype).float(), **tol)
    if grad_of:
        # the same upstream gradient on both sides: the npu one in the output's dtype (an fp32 g on the CPU side
        # alone made a gamma gradient that cancels over rows differ by g's bf16 rounding, 0.02)
        g = torch.randn(out_ref[0].shape).to(out_dev[0].dtype).to(out_ref[0].dtype)
        out_ref[0].backward(g)
        out_dev[0].backward(g.to(out_dev[0].dtype).to("npu"))
        for i in grad_of:
            torch.testing.assert_close(dev[i].grad.cpu().float(), cpu[i].grad.float(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,gdims", [((4, 7, 33), 1), ((5, 4097), 1), ((3, 1), 1), ((2, 3, 8, 16), 2)])
def test_rms_norm(dtype, shape, gdims, native_only):
    x, gamma = torch.randn(shape).to(dtype), torch.randn(shape[-gdims:]).to(dtype)
    check_fwd_bwd(torch_npu_sim.npu_rms_norm, rms_norm_ref, [x, gamma], dtype, grad_of=[0, 1],
                  tol=dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else None)
    y, rstd = torch_npu_sim.npu_rms_norm(x.to("npu"), gamma.to("npu"), 1e-3)
    assert rstd.dtype == torch.float32 and rstd.shape == (*shape[:-gdims], *([1] * gdims))
    torch.testing.assert_close(rstd.cpu(), rms_norm_ref(x, gamma, 1e-3)[1], rtol=1e-5, atol=1e-5)


# --- F.rms_norm / nn.RMSNorm: aten's _fused_rms_norm on the same kernel -------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,normalized,weighted,eps", [((4, 7, 33), (33,), True, None),
                                                           ((5, 4097), (4097,), True, 1e-3),
                                                           ((2, 3, 8, 16), (8, 16), False, None),
                                                           ((3, 1), (1,), True, None)])
def test_f_rms_norm_is_one_kernel_forward_and_backward(dtype, shape, normalized, weighted, eps, native_only):
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype)
    w = torch.randn(normalized).to(dtype) if weighted else None
    ref = [t.clone().requires_grad_() for t in (x, w) if t is not None]
    dev = [t.to("npu").requires_grad_() for t in (x, w) if t is not None]
    y_ref = F.rms_norm(ref[0], normalized, ref[1] if weighted else None, eps)
    with torch_npu_sim.record_launches() as rec:
        y = F.rms_norm(dev[0], normalized, dev[1] if weighted else None, eps)
        torch.npu.synchronize()
    # one RMSNorm launch (and the ones it scales by when there is no weight) instead of pow, mean, add, rsqrt, mul, mul
    assert [r["kernel"] for r in rec.records] == ["rms_norm"] if weighted else ["fill", "rms_norm"]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else TOL[dtype]
    torch.testing.assert_close(y.cpu(), y_ref, **tol)
    g = torch.randn(shape).to(dtype)
    y_ref.backward(g)
    with torch_npu_sim.record_launches() as rec:
        y.backward(g.to("npu"))
        torch.npu.synchronize()
    assert "rms_norm_backward" in [r["kernel"] for r in rec.records]
    for d, r in zip(dev, ref):
        grad_tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else tol
        torch.testing.assert_close(d.grad.cpu(), r.grad, **grad_tol)


def test_f_rms_norm_default_eps_is_float32_epsilon_for_16_bit_inputs():
    # eps=None: torch.finfo(float32).eps, the compute dtype's, also for bfloat16 (whose own eps is 2^-7):
    # with mean(x^2) ~ 1e-8 the two differ by a factor of ~10 in rstd
    x = (torch.randn(4, 64) * 1e-4).bfloat16()
    y, rstd = torch.ops.aten._fused_rms_norm(x.to("npu"), [64], None, None)
    y_ref, rstd_ref = torch.ops.aten._fused_rms_norm(x, [64], None, None)
    assert rstd.dtype == torch.float32 and rstd.shape == (4, 1)
    torch.testing.assert_close(rstd.cpu(), rstd_ref, rtol=1e-5, atol=0)
    torch.testing.assert_close(y.cpu(), y_ref, rtol=1e-2, atol=1e-2)


def test_f_rms_norm_float64_and_a_weight_of_another_dtype_use_the_composite():
    x = torch.randn(3, 5, 6, dtype=torch.float64, device="npu", requires_grad=True)
    w = torch.randn(5, 6, dtype=torch.float64, device="npu", requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: F.rms_norm(x, (5, 6), w), (x, w))
    assert torch.autograd.gradcheck(lambda x: F.rms_norm(x, (6,)), (x,))
    # F.rms_norm does not take the fused op for mixed dtypes; called directly, aten multiplies by the float32
    # weight in float32
    xb, wf = torch.randn(4, 32).bfloat16(), torch.randn(32)
    ref = [xb.clone().requires_grad_(), wf.clone().requires_grad_()]
    dev = [t.to("npu").requires_grad_() for t in (xb, wf)]
    y_ref = torch.ops.aten._fused_rms_norm(ref[0], [32], ref[1], None)[0]
    y = torch.ops.aten._fused_rms_norm(dev[0], [32], dev[1], None)[0]
    torch.testing.assert_close(y.cpu(), y_ref)
    g = torch.randn(4, 32).bfloat16()
    y_ref.backward(g)
    y.backward(g.to("npu"))
    for d, r in zip(dev, ref):
        assert d.grad.dtype == r.grad.dtype
        torch.testing.assert_close(d.grad.cpu(), r.grad, rtol=2e-2, atol=2e-2)


def test_f_rms_norm_bad_input_raises_cpus_errors():
    x = torch.randn(4, 8, device="npu")
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.rms_norm(x, (8,), torch.randn(4, device="npu"))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[6\], expected input with shape \[\*6\]"):
        F.rms_norm(x, (6,))
    with pytest.raises(RuntimeError, match=r"same device.*argument weight in method _fused_rms_norm"):
        F.rms_norm(x, (8,), torch.randn(8))
    rstd = torch.ops.aten._fused_rms_norm(x, [8], None, None)[1]
    with pytest.raises(RuntimeError, match="_fused_rms_norm_backward: argument 'grad_out' of shape"):
        torch.ops.aten._fused_rms_norm_backward(torch.randn(4, 9, device="npu"), x, [8], rstd, None, [True, False])
    with pytest.raises(RuntimeError, match="_fused_rms_norm_backward: argument 'rstd' must have one value per"):
        torch.ops.aten._fused_rms_norm_backward(torch.randn(4, 8, device="npu"), x, [8], rstd[:2], None, [True, False])


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rms_norm_returns_the_sum_and_backpropagates_through_both_outputs(dtype, native_only):
    x1, x2, gamma = torch.randn(6, 130).to(dtype), torch.randn(6, 130).to(dtype), torch.randn(130).to(dtype)

    def ref(a, b, g):
        s = (a + b).to(dtype).float()  # torch_npu normalises the rounded sum
        y, rstd = rms_norm_ref(s, g)
        return y, rstd, s

    check_fwd_bwd(torch_npu_sim.npu_add_rms_norm, ref, [x1, x2, gamma], dtype, grad_of=[0, 1, 2],
                  tol=dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else None)
    # a gradient through the returned sum (the residual stream) adds to both inputs'
    a, b, g = [t.to("npu").requires_grad_() for t in (x1, x2, gamma)]
    y, _, s = torch_npu_sim.npu_add_rms_norm(a, b, g)
    (y.float().sum() + 3 * s.float().sum()).backward()
    ra, rb, rg = [t.clone().float().requires_grad_() for t in (x1, x2, gamma)]
    ry, _, rs = ref(ra, rb, rg)
    (ry.sum() + 3 * rs.sum()).backward()
    torch.testing.assert_close(a.grad.cpu().float(), ra.grad, **TOL[dtype])
    torch.testing.assert_close(b.grad.cpu().float(), rb.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["half", "interleave"])
@pytest.mark.parametrize("xshape,rshape", [((2, 5, 3, 8), (1, 5, 1, 8)), ((2, 3, 7, 66), (1, 1, 7, 66)),
                                           ((4, 16), (4, 16)), ((3, 2, 4, 6), (3, 2, 4, 6))])
def test_rotary_mul(dtype, mode, xshape, rshape, native_only):
    x, r1, r2 = torch.randn(xshape).to(dtype), torch.randn(rshape).to(dtype), torch.randn(rshape).to(dtype)
    check_fwd_bwd(lambda a, c, s: torch_npu_sim.npu_rotary_mul(a, c, s, mode),
                  lambda a, c, s: a * c + rotate_ref(a, mode) * s, [x, r1, r2], dtype, grad_of=[0, 1, 2],
                  tol=dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=3e-2, atol=6e-2))


def test_rotary_mul_backward_output_mask(native_only):
    # a direct call returns dx, dr1, dr2 as torch_npu's; output_mask=[False, False] leaves the tables' gradients out
    # (None), and autograd asks for them only when cos / sin need one: x's gradient alone runs no mul, cat or sum
    torch.manual_seed(0)
    x, r1, r2, dy = torch.randn(2, 5, 3, 8), torch.randn(1, 5, 1, 8), torch.randn(1, 5, 1, 8), torch.randn(2, 5, 3, 8)
    xn, r1n, r2n, dyn = (t.npu() for t in (x, r1, r2, dy))
    leaves = [t.clone().requires_grad_() for t in (x, r1, r2)]
    (leaves[0] * leaves[1] + rotate_ref(leaves[0], "half") * leaves[2]).backward(dy)
    full = torch.ops.npu.npu_rotary_mul_backward(dyn, xn, r1n, r2n)
    for got, ref in zip(full, leaves):
        torch.testing.assert_close(got.cpu(), ref.grad, rtol=1e-5, atol=1e-5)
    dx, dr1, dr2 = torch.ops.npu.npu_rotary_mul_backward(dyn, xn, r1n, r2n, "half", [False, False])
    assert dr1 is None and dr2 is None
    torch.testing.assert_close(dx.cpu(), leaves[0].grad, rtol=1e-5, atol=1e-5)
    xg = xn.clone().requires_grad_()
    y = torch_npu_sim.npu_rotary_mul(xg, r1n, r2n)
    with torch.autograd.profiler.profile() as prof:
        y.backward(dyn)
        torch.npu.synchronize()
    names = {e.name for e in prof.function_events}
    assert "npu::npu_rotary_mul_backward" in names and not names & {"aten::mul", "aten::cat", "aten::sum"}, names
    torch.testing.assert_close(xg.grad.cpu(), leaves[0].grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((4, 2 * 37), -1), ((3, 6, 5), 1), ((2, 2), 0), ((5, 3, 4096), -1)])
def test_swiglu(dtype, shape, dim, native_only):
    x = torch.randn(shape).to(dtype)
    check_fwd_bwd(lambda t: torch_npu_sim.npu_swiglu(t, dim), lambda t: (lambda a, b: F.silu(a) * b)(*t.chunk(2, dim)),
                  [x], dtype, grad_of=[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_gelu(dtype, native_only):
    x = torch.cat([torch.randn(1000) * 4, torch.tensor([0.0, -30.0, 30.0, -200.0, 200.0])]).to(dtype)
    check_fwd_bwd(torch_npu_sim.npu_fast_gelu, lambda t: t * torch.sigmoid(1.702 * t), [x], dtype, grad_of=[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mshape", [(2, 3, 17, 40), (1, 1, 17, 40), (2, 1, 1, 40)])
def test_scaled_masked_softmax(dtype, mshape, native_only):
    x = torch.randn(2, 3, 17, 40).to(dtype)
    mask = torch.rand(mshape) < 0.3
    mask[..., 0, :] = True  # a fully masked row: the -10000 fill gives the uniform distribution

    def ref(t, m):
        return torch.softmax((t * 0.7).masked_fill(m, -10000.0), -1)

    check_fwd_bwd(lambda t, m: torch_npu_sim.npu_scaled_masked_softmax(t, m, 0.7), ref, [x, mask], dtype, grad_of=[0])


def test_scaled_masked_softmax_fixed_triu_mask(native_only):
    x = torch.randn(2, 2, 9, 9)
    triu = torch.ones(9, 9, dtype=torch.bool).triu(1)
    out = torch_npu_sim.npu_scaled_masked_softmax(x.npu(), torch.zeros(1, dtype=torch.bool).npu(), 2.0, True)
    torch.testing.assert_close(out.cpu(), torch.softmax((x * 2).masked_fill(triu, -10000.0), -1))


def test_fused_ops_fake_kernels_propagate_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 8, 4, 16, device="npu", dtype=torch.bfloat16)
        g = torch.empty(16, device="npu", dtype=torch.bfloat16)
        y, rstd = torch.ops.npu.npu_rms_norm(x, g)
        assert y.shape == x.shape and rstd.shape == (2, 8, 4, 1) and rstd.dtype == torch.float32
        assert torch.ops.npu.npu_add_rms_norm(x, x, g)[2].shape == x.shape
        assert torch.ops.npu.npu_swiglu(x, 1).shape == (2, 4, 4, 16)
        assert torch.ops.npu.npu_rotary_mul(x, x[:1], x[:1]).shape == x.shape
        assert torch.ops.npu.npu_fast_gelu(x).dtype == torch.bfloat16
        assert torch.ops.npu.npu_scaled_masked_softmax(x, torch.empty(1, 1, 4, 16, dtype=torch.bool,
                                                                      device="npu")).shape == x.shape


def test_fused_ops_compile_with_fullgraph():
    def f(x, g, cos, sin):
        y, _ = torch.ops.npu.npu_rms_norm(x, g)
        return torch.ops.npu.npu_swiglu(torch.ops.npu.npu_rotary_mul(y, cos, sin), -1)

    args = [t.npu() for t in (torch.randn(2, 6, 3, 8), torch.randn(8), torch.randn(1, 6, 1, 8), torch.randn(1, 6, 1, 8))]
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(*args).cpu(), f(*args).cpu())


def test_fused_ops_bad_input_names_the_argument():
    x = torch.randn(4, 8, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_rms_norm: expected argument 'self' on an npu device"):
        torch_npu_sim.npu_rms_norm(x.cpu(), torch.ones(8))
    with pytest.raises(RuntimeError, match=r"npu_rms_norm: argument 'gamma' of shape \[7\] must match"):
        torch_npu_sim.npu_rms_norm(x, torch.ones(7, device="npu"))
    with pytest.raises(RuntimeError, match=r"npu_rotary_mul: argument 'rotary_mode' must be 'half' or 'interleave'"):
        torch_npu_sim.npu_rotary_mul(x.view(1, 1, 4, 8), x.view(1, 1, 4, 8), x.view(1, 1, 4, 8), "full")
    with pytest.raises(RuntimeError, match=r"npu_rotary_mul: argument 'r1' of shape \[3, 8\] does not broadcast"):
        torch_npu_sim.npu_rotary_mul(x, x[:3], x)
    with pytest.raises(RuntimeError, match=r"npu_swiglu: the size of 'self' along dim 1 must be even"):
        torch_npu_sim.npu_swiglu(torch.randn(4, 7, device="npu"))
    with pytest.raises(RuntimeError, match=r"npu_scaled_masked_softmax: argument 'mask' must be bool"):
        torch_npu_sim.npu_scaled_masked_softmax(x.view(1, 1, 4, 8), x.view(1, 1, 4, 8))
    with pytest.raises(RuntimeError, match=r"npu_scaled_masked_softmax: expected argument 'x' to be 4-D"):
        torch_npu_sim.npu_scaled_masked_softmax(x, x > 0)
    with pytest.raises(RuntimeError, match=r"npu_fast_gelu: argument 'self' has dtype Double"):
        torch_npu_sim.npu_fast_gelu(x.double())
