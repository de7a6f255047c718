"""equal, trace, isin and repeat_interleave on npu against CPU PyTorch (dtypes, broadcasting of
promotion, NaN, empty inputs, out=, gradients where defined) and their bad inputs; nothing falls back."""
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def same(got, want, **kw):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, **kw)


def test_equal():
    a = torch.arange(12.0).reshape(3, 4)
    cases = [(a, a.clone()), (a, a + 1e-3), (a, a.T.contiguous().T), (a, a[:2]), (a, a.long()),
             (torch.tensor([float("nan")]), torch.tensor([float("nan")])), (torch.empty(0), torch.empty(0)),
             (a[:, 1], a[:, 1].clone())]
    for x, y in cases:
        assert torch.equal(x.to("npu"), y.to("npu")) == torch.equal(x, y), (x, y)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.uint8])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (6, 2), (0, 3)])
def test_trace(dtype, shape):
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(0)) * 5).to(dtype)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    same(torch.trace(x.to("npu")), torch.trace(x), **tol)
    if dtype.is_floating_point:
        xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
        torch.trace(xc).backward()
        torch.trace(xn).backward()
        same(xn.grad, xc.grad)


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    nan = float("nan")
    cases = [(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([2, 5, 9, 2])),
             (torch.tensor([1, 2, 3]), torch.tensor([2.0, 3.5])),
             (torch.tensor([1.0, nan, 2.5, -1.0]), torch.tensor([nan, 2.5])),
             (torch.arange(20).reshape(4, 5) % 7, torch.arange(0, 100, 3)),
             (torch.tensor([1, 2]), torch.empty(0, dtype=torch.long)),
             (torch.empty(0, 3), torch.tensor([1.0])),
             (torch.tensor([3, 4], dtype=torch.uint8), torch.tensor([4], dtype=torch.int16))]
    for e, t in cases:
        same(torch.isin(e.to("npu"), t.to("npu"), invert=invert), torch.isin(e, t, invert=invert))
        same(torch.isin(e.to("npu"), 2, invert=invert), torch.isin(e, 2, invert=invert))
    same(torch.isin(2, torch.tensor([1, 2]).to("npu"), invert=invert), torch.isin(2, torch.tensor([1, 2]), invert=invert))
    out = torch.empty(0, dtype=torch.bool, device="npu")
    torch.isin(torch.tensor([1, 5]).to("npu"), torch.tensor([5]).to("npu"), invert=invert, out=out)
    same(out, torch.isin(torch.tensor([1, 5]), torch.tensor([5]), invert=invert))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave(dtype):
    r = torch.tensor([2, 0, 3, 1], dtype=dtype)
    same(torch.repeat_interleave(r.to("npu")), torch.repeat_interleave(r))
    same(torch.repeat_interleave(r.to("npu"), output_size=6), torch.repeat_interleave(r, output_size=6))
    same(torch.repeat_interleave(torch.zeros(3, dtype=dtype).to("npu")), torch.repeat_interleave(torch.zeros(3, dtype=dtype)))
    same(torch.repeat_interleave(torch.empty(0, dtype=dtype).to("npu")), torch.repeat_interleave(torch.empty(0, dtype=dtype)))
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    same(torch.repeat_interleave(x.to("npu"), r.to("npu"), dim=0), torch.repeat_interleave(x, r, dim=0))
    same(torch.repeat_interleave(x.to("npu"), 2, dim=1), torch.repeat_interleave(x, 2, dim=1))
    xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
    torch.repeat_interleave(xc, r, dim=0).sum().backward()
    torch.repeat_interleave(xn, r.to("npu"), dim=0).sum().backward()
    same(xn.grad, xc.grad)


def raises_like_cpu(fn, *xs, match):
    with pytest.raises(Exception) as cpu_err:
        fn(*xs)
    with pytest.raises(type(cpu_err.value), match=match):
        fn(*[x.to("npu") for x in xs])


def test_bad_inputs():
    raises_like_cpu(torch.trace, torch.ones(2, 2, 2), match="expected a matrix")
    # CPU refuses a bool matrix; CUDA (diagonal().sum()) counts its true diagonal elements, and so does npu
    assert torch.trace(torch.eye(3, dtype=torch.bool, device="npu")).cpu().item() == 3
    raises_like_cpu(torch.repeat_interleave, torch.tensor([1.0, 2.0]), match="repeat_interleave")
    raises_like_cpu(torch.repeat_interleave, torch.tensor([[1, 2]]), match="only accept 1D vector")
    raises_like_cpu(torch.repeat_interleave, torch.tensor([1, -2]), match="can not be negative")
    raises_like_cpu(torch.isin, torch.ones(2, dtype=torch.cfloat), torch.ones(2, dtype=torch.cfloat),
                    match="Unsupported input type")


INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def ints(dtype, n=200, lo=-100, hi=100, seed=0):
    x = torch.randint(lo, hi, (n,), generator=torch.Generator().manual_seed(seed))
    return x.to(dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm(dtype):
    a, b = ints(dtype), ints(dtype, seed=1)
    a[:3], b[:3] = 0, torch.tensor([0, 5, 0])  # gcd(0, 0) = 0, lcm with a zero is 0
    same(torch.gcd(a.to("npu"), b.to("npu")), torch.gcd(a, b))
    small_a, small_b = a.clamp(-11, 11) if dtype != torch.uint8 else a % 12, b % 12  # lcm within the dtype
    same(torch.lcm(small_a.to("npu"), small_b.to("npu")), torch.lcm(small_a, small_b))
    x = a.to("npu")
    x.gcd_(b[:1].to("npu"))  # in place, broadcast
    same(x, torch.gcd(a, b[:1]))
    out = torch.empty(0, dtype=dtype, device="npu")
    torch.lcm(small_a.to("npu"), small_b.to("npu"), out=out)
    same(out, torch.lcm(small_a, small_b))
    # past the dtype: ATen takes abs(a / g * b) in the promoted type (int for 8/16 bits) and narrows after, so
    # int8 lcm(15, 14) = 210 wraps to -46 (npu gave 46: abs after narrowing)
    same(torch.lcm(a.to("npu"), b.to("npu")), torch.lcm(a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_shifts_with_out_of_range_counts(dtype):
    # counts below 0 or at least the bit width give 0 (left) or the sign fill (right), as on CPU
    a, s = ints(dtype), ints(dtype, lo=-3, hi=70, seed=2)
    an, sn = a.to("npu"), s.to("npu")
    for op in (torch.bitwise_left_shift, torch.bitwise_right_shift):
        same(op(an, sn), op(a, s))
    same(an << sn, a << s)
    same(an >> sn, a >> s)
    same(an << 3, a << 3)
    same(an >> 2, a >> 2)
    same(5 << sn.clamp(0, 4), 5 << s.clamp(0, 4))  # __rlshift__
    x = an.clone()
    x <<= 1
    x >>= sn[:1]
    same(x, (a << 1) >> s[:1])


def test_shift_and_gcd_refuse_what_cpu_refuses():
    # CPU: '"lshift_cpu" not implemented for 'Float''; npu names the op and the dtype, with CPU's error type
    f, b = torch.tensor([1.5]), torch.tensor([True])
    for fn, x, op in [(lambda t: t << 2, f, "shift"), (lambda t: torch.bitwise_right_shift(t, t), f, "shift"),
                      (lambda t: torch.gcd(t, t), f, "gcd"), (lambda t: torch.gcd(t, t), b, "gcd"),
                      (lambda t: torch.lcm(t, t), f, "lcm")]:
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value), match=f"{op}.*{'Float' if x.is_floating_point() else 'Bool'}"):
            fn(x.to("npu"))


def test_scalar_first_remainder_and_bucketize():
    b = ints(torch.int64, seed=3)
    b[b == 0] = 7
    same(torch.remainder(5, b.to("npu")), torch.remainder(5, b))
    y = torch.randn(20, generator=torch.Generator().manual_seed(4))
    same(torch.remainder(-2.5, y.to("npu")), torch.remainder(-2.5, y))
    bounds = torch.tensor([1, 3, 5, 9])
    for v in (0, 3, 4, 10):
        for right in (False, True):
            same(torch.bucketize(v, bounds.to("npu"), right=right), torch.bucketize(v, bounds, right=right))
    same(torch.bucketize(2.5, bounds.double().to("npu"), out_int32=True), torch.bucketize(2.5, bounds.double(),
                                                                                          out_int32=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dtype, dim):
    x = torch.randint(0, 3, (3, 20, 2), generator=torch.Generator().manual_seed(5)).to(dtype)
    xn = x.to("npu")
    for inverse in (False, True):
        for counts in (False, True):
            got = torch.unique(xn, dim=dim, return_inverse=inverse, return_counts=counts)
            want = torch.unique(x, dim=dim, return_inverse=inverse, return_counts=counts)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                same(g, w)
    v, inv = torch.unique(xn, dim=dim, return_inverse=True)
    same(v.index_select(dim, inv), x)  # the inverse rebuilds the input


def test_unique_dim_empty_and_bad_dims():
    x = torch.empty(0, 3)
    for g, w in zip(torch.unique(x.to("npu"), dim=0, return_inverse=True, return_counts=True),
                    torch.unique(x, dim=0, return_inverse=True, return_counts=True)):
        same(g, w)
    for fn, t in [(lambda t: torch.unique(t, dim=1), torch.empty(0, 3)),
                  (lambda t: torch.unique(t, dim=0), torch.empty(0, 0)),
                  (lambda t: torch.unique(t, dim=2), torch.ones(2, 2))]:
        with pytest.raises(Exception) as cpu_err:
            fn(t)
        with pytest.raises(type(cpu_err.value), match=str(cpu_err.value).splitlines()[0][:40].replace("(", ".")
                           .replace(")", ".").replace("[", ".").replace("]", ".")):
            fn(t.to("npu"))


def test_legacy_unique_and_index_fill_backward():
    x = torch.tensor([3, 1, 3, 7, 1, 0])
    for inverse in (False, True):
        for g, w in zip(torch._unique(x.to("npu"), return_inverse=inverse), torch._unique(x, return_inverse=inverse)):
            same(g, w)
    # index_fill's backward for a tensor value sums the gradient over the unique filled indices (torch._unique)
    idx, t = torch.tensor([0, 2, 2]), torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
    for dev in ("cpu", "npu"):
        value = torch.tensor(2.0, device=dev, requires_grad=True)
        tt = t.detach().to(dev).clone().requires_grad_()
        tt.index_fill(1, idx.to(dev), value).sum().backward()
        if dev == "cpu":
            want = (tt.grad, value.grad)
        else:
            same(tt.grad, want[0])
            same(value.grad, want[1])


def test_sgn_backward_zeros_without_zerotensors():
    # autograd's zero gradient of sgn is an _efficientzerotensor: npu materialises the zeros
    x = torch.randn(5, generator=torch.Generator().manual_seed(2))
    xn = x.to("npu").requires_grad_()
    (torch.sgn(xn) * 3 + xn).sum().backward()
    same(xn.grad, torch.ones(5))
    z = torch.ops.aten._efficientzerotensor([2, 3], dtype=torch.float16, device="npu")
    assert z.is_npu and z.dtype == torch.float16
    same(z, torch.zeros(2, 3, dtype=torch.float16))
