"""Activation-style pointwise ops on npu against CPU PyTorch, forward and backward in four float dtypes:
hardswish, logsigmoid (and BCE-with-logits over it), prelu, logit, hard/soft shrink, glu, heaviside,
logaddexp(2), clamp_min/clamp_max with tensor bounds, pow with a scalar base; bad inputs raise CPU's error type; nothing falls
back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers "npu")

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def tol(dtype):
    return {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
            torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=5e-2)}[dtype]


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def same(npu_value, cpu_value, **kw):
    got = npu_value.cpu()
    assert got.dtype == cpu_value.dtype and got.shape == cpu_value.shape, (got.dtype, got.shape, cpu_value.shape)
    t = dict(tol(cpu_value.dtype)) if cpu_value.is_floating_point() else dict(rtol=0, atol=0)
    t.update(kw)
    torch.testing.assert_close(got.double(), cpu_value.double(), equal_nan=True, **t)


def fwd_bwd(fn, *inputs, seed=1, **kw):
    cpu = [x.clone().requires_grad_() for x in inputs]
    dev = [x.to("npu").requires_grad_() for x in inputs]
    yc, yn = fn(*cpu), fn(*dev)
    same(yn.detach(), yc.detach(), **kw)
    g = torch.randn(yc.shape, generator=torch.Generator().manual_seed(seed)).to(yc.dtype)
    yc.backward(g)
    yn.backward(g.to("npu"))
    for a, b in zip(dev, cpu):
        same(a.grad, b.grad, **kw)


def raises_like_cpu(fn, *xs, match):
    with pytest.raises(Exception) as cpu_err:
        fn(*xs)
    with pytest.raises(type(cpu_err.value), match=match):
        fn(*[x.to("npu") for x in xs])
        torch.npu.synchronize()


UNARY = {
    "hardswish": F.hardswish,
    "logsigmoid": F.logsigmoid,
    "hardshrink": lambda t: F.hardshrink(t, 0.7),
    "softshrink": lambda t: F.softshrink(t, 0.3),
    "glu": lambda t: F.glu(t, -1),
    "glu_dim0": lambda t: F.glu(t, 0),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_activation(dtype, name):
    x = rand(6, 8, dtype=dtype) * 4  # covers both sides of hardswish's +-3 and the shrink thresholds
    fwd_bwd(UNARY[name], x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_hardswish_inplace_and_module(dtype):
    x = rand(4, 5, dtype=dtype) * 4
    xn = x.to("npu")
    F.hardswish(xn, inplace=True)
    same(xn, F.hardswish(x))
    fwd_bwd(torch.nn.Hardswish(), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("eps", [None, 1e-2])
def test_logit(dtype, eps):
    x = torch.rand(5, 7, generator=torch.Generator().manual_seed(3)).to(dtype) * 0.98 + 0.01
    fwd_bwd(lambda t: torch.logit(t, eps), x)
    outside = torch.tensor([-0.5, 0.0, 0.005, 0.5, 1.0, 1.5], dtype=dtype)
    fwd_bwd(lambda t: torch.logit(t, eps), outside)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits(dtype, pos_weight):
    x = rand(4, 6, dtype=dtype) * 3
    y = torch.rand(4, 6, generator=torch.Generator().manual_seed(2)).to(dtype)
    pw = torch.rand(6, generator=torch.Generator().manual_seed(4)).to(dtype) + 0.5
    fn = (lambda t: F.binary_cross_entropy_with_logits(t, y.to(t.device), pos_weight=pw.to(t.device))) if pos_weight \
        else (lambda t: F.binary_cross_entropy_with_logits(t, y.to(t.device)))
    fwd_bwd(fn, x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("channels", [1, 3])
def test_prelu(dtype, channels):
    x = rand(2, 3, 4, 5, dtype=dtype)
    w = torch.full((channels,), 0.25).to(dtype) + torch.arange(channels).to(dtype) * 0.1
    fwd_bwd(F.prelu, x, w)
    fwd_bwd(F.prelu, rand(5, 3, dtype=dtype), w)  # (N, C) input


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp(dtype, name):
    fn = getattr(torch, name)
    a, b = rand(5, 6, dtype=dtype) * 5, rand(6, dtype=dtype, seed=1) * 5
    fwd_bwd(fn, a, b)
    inf = torch.tensor([float("inf"), -float("inf"), float("inf"), 1.0], dtype=dtype)
    other = torch.tensor([float("inf"), -float("inf"), 2.0, -float("inf")], dtype=dtype)
    same(fn(inf.to("npu"), other.to("npu")), fn(inf, other))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.bool])
def test_heaviside(dtype):
    x = torch.tensor([-2.0, 0.0, 3.0, 0.0, -0.0, 1.0]).to(dtype)
    v = torch.tensor([0.5, 0.25, 0.75, 1.0, 2.0, 0.0]).to(dtype)
    same(torch.heaviside(x.to("npu"), v.to("npu")), torch.heaviside(x, v))
    same(torch.heaviside(x.to("npu"), v[:1].to("npu")), torch.heaviside(x, v[:1]))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
def test_clamp_min_max_tensor(dtype):
    x = (rand(4, 5, dtype=torch.float32) * 4).to(dtype)
    lo, hi = (rand(5, seed=2) - 1).to(dtype), (rand(4, 1, seed=3) + 1).to(dtype)
    same(torch.clamp_min(x.to("npu"), lo.to("npu")), torch.clamp_min(x, lo))
    same(torch.clamp_max(x.to("npu"), hi.to("npu")), torch.clamp_max(x, hi))
    xn = x.to("npu")
    xn.clamp_min_(lo.to("npu"))
    same(xn, x.clamp_min(lo))
    if dtype.is_floating_point:
        fwd_bwd(lambda t, a: torch.clamp_min(t, a), x, lo)
        fwd_bwd(lambda t, b: torch.clamp_max(t, b), x, hi)
        nan = torch.tensor([float("nan"), 1.0, 2.0], dtype=dtype)
        bound = torch.tensor([0.0, float("nan"), 1.5], dtype=dtype)
        same(torch.clamp_min(nan.to("npu"), bound.to("npu")), torch.clamp_min(nan, bound))


def test_bad_inputs():
    i = torch.arange(6).reshape(2, 3)
    raises_like_cpu(F.hardswish, i, match="hardswish")
    raises_like_cpu(lambda t: torch.heaviside(t, t.double()), i.float(), match="heaviside")
    raises_like_cpu(lambda t: F.glu(t, 1), i.float(), match="Halving dimension must be even")
    raises_like_cpu(lambda t, w: F.prelu(t, w), rand(2, 3, 4), rand(2), match="Mismatch of parameter numbers")
    raises_like_cpu(lambda t, w: torch._prelu_kernel(t, w), rand(2, 3), rand(3).double(), match="dtype")
    raises_like_cpu(lambda t, b: torch.clamp_min(t, b), rand(2, 3), rand(4), match="size")
    raises_like_cpu(lambda t, b: torch.logaddexp(t, b), rand(2, 3), rand(4), match="size")


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
@pytest.mark.parametrize("base", [2, 1, 0.5, -1.5])
def test_pow_scalar_base(dtype, base):
    e = (rand(4, 5) * 3).to(dtype) if dtype.is_floating_point else torch.randint(0, 6, (4, 5))
    same(torch.pow(base, e.to("npu")), torch.pow(base, e))
    if dtype.is_floating_point and base > 0:
        fwd_bwd(lambda t: torch.pow(base, t), e)
    out = torch.empty(0, dtype=torch.pow(base, e).dtype, device="npu")
    torch.pow(base, e.to("npu"), out=out)
    same(out, torch.pow(base, e))
