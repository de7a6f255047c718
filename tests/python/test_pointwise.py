"""Native pointwise ops against CPU PyTorch: unary math and activations, binary arithmetic with
broadcasting / type promotion / scalars / in-place / out=, comparisons and logical ops, ternary ops,
dtypes float32/64, float16, bfloat16, integers and bool; and no CPU fallback for any of them."""
import pytest
import torch
import torch.nn.functional as F

from conftest import acknowledge_device_error
import torch_npu_sim

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def tol(dtype):
    return {torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2), torch.float32: (1e-5, 1e-5),
            torch.float64: (1e-10, 1e-10)}.get(dtype, (0, 0))


def sample(shape, dtype, lo=-4.0, hi=4.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        lo_i = 0 if dtype == torch.uint8 else -20
        return torch.randint(lo_i, 20, shape, generator=g, dtype=dtype)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def check(fn, *cpu_args, dtype=torch.float32, **kw):
    torch_npu_sim.reset_fallback_ops()
    ref = fn(*cpu_args, **kw)
    got = fn(*[a.npu() if isinstance(a, torch.Tensor) else a for a in cpu_args], **kw)
    assert got.device.type == "npu"
    assert got.dtype == ref.dtype
    atol, rtol = tol(dtype)
    torch.testing.assert_close(got.cpu(), ref, atol=atol, rtol=rtol, equal_nan=True)
    assert torch_npu_sim.fallback_ops() == {}, torch_npu_sim.fallback_ops()


UNARY_FLOAT = {
    "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5), "sqrt": lambda x: torch.sqrt(x.abs()),
    "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.5), "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "expm1": torch.expm1,
    "log1p": lambda x: torch.log1p(x.abs()), "log2": lambda x: torch.log2(x.abs() + 1),
    "log10": lambda x: torch.log10(x.abs() + 1), "exp2": torch.exp2, "atan": torch.atan,
    "asin": lambda x: torch.asin(x / 5), "acos": lambda x: torch.acos(x / 5), "sinh": torch.sinh, "cosh": torch.cosh,
    "asinh": torch.asinh, "acosh": lambda x: torch.acosh(x.abs() + 1), "atanh": lambda x: torch.atanh(x / 5),
    "reciprocal": lambda x: torch.reciprocal(x + 10), "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "trunc": torch.trunc, "frac": torch.frac, "neg": torch.neg, "abs": torch.abs,
    "sign": torch.sign, "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu, "mish": F.mish, "softplus": F.softplus, "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": F.elu, "selu": F.selu, "hardsigmoid": F.hardsigmoid, "relu6": F.relu6, "clamp": lambda x: x.clamp(-1, 2),
    "clamp_min": lambda x: x.clamp(min=0.5), "pow2": lambda x: x.pow(2), "pow_frac": lambda x: x.abs().pow(1.7),
    "nan_to_num": lambda x: torch.nan_to_num(x.log()), "lgamma": lambda x: torch.lgamma(x.abs() + 0.1),
    "sinc": torch.sinc, "isnan": lambda x: torch.isnan(x.log()), "isinf": lambda x: torch.isinf(1 / (x * 0)),
    "isfinite": lambda x: torch.isfinite(x.log()), "signbit": torch.signbit, "square": torch.square,
    "threshold": lambda x: F.threshold(x, 0.3, -2.0),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float(name, dtype):
    check(UNARY_FLOAT[name], sample((7, 33), dtype), dtype=dtype)


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "relu", "clamp", "bitwise_not", "square"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8])
def test_unary_integer(name, dtype):
    fn = {"bitwise_not": torch.bitwise_not, "clamp": lambda x: x.clamp(-3, 5)}.get(name) or UNARY_FLOAT[name]
    check(fn, sample((5, 9), dtype), dtype=dtype)


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "sub_alpha": lambda a, b: torch.sub(a, b, alpha=3),
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
    "atan2": torch.atan2, "hypot": torch.hypot, "copysign": torch.copysign, "pow": lambda a, b: a.abs().pow(b / 2),
    "remainder": lambda a, b: torch.remainder(a, b + 10), "fmod": lambda a, b: torch.fmod(a, b + 10),
    "div_floor": lambda a, b: torch.div(a, b + 10, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b + 10, rounding_mode="trunc"),
    "floor_divide": lambda a, b: a // (b + 10), "xlogy": lambda a, b: torch.xlogy(a, b.abs()),
    "eq": lambda a, b: a.round() == b.round(), "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge, "lerp": lambda a, b: torch.lerp(a, b, 0.3),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float_broadcast(name, dtype):
    check(BINARY[name], sample((6, 1, 5), dtype, seed=1), sample((4, 5), dtype, seed=2), dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float_same_shape(name, dtype):
    # contiguous operands of one shape and dtype: add/sub/mul/div, comparisons, ... take the flat fast path
    check(BINARY[name], sample((7, 33), dtype, seed=1), sample((7, 33), dtype, seed=2), dtype=dtype)


def test_flat_fast_path_keeps_the_structured_checks():
    a, b = torch.randn(4, 5, device="npu"), torch.randn(4, 5, device="npu")
    out = a * b
    assert out.is_contiguous() and out.shape == (4, 5) and out.dtype == torch.float32
    torch.testing.assert_close((a - b).cpu(), a.cpu() - b.cpu())
    with pytest.raises(RuntimeError, match="alpha must not be a complex number"):
        torch.add(a, b, alpha=1j)
    with pytest.raises(RuntimeError, match="bitwise_and"):
        torch.bitwise_and(a, b)
    with pytest.raises(RuntimeError, match="same device|npu:0|npu:1"):
        torch.add(a, torch.randn(4, 5, device="npu:1"))
    # a view that is not contiguous, and a 0-d npu tensor, still give CPU's values
    t = torch.randn(5, 4, device="npu").t()
    torch.testing.assert_close((t + b).cpu(), t.cpu() + b.cpu())
    s = torch.tensor(2.5, device="npu")
    torch.testing.assert_close((s * s).cpu(), torch.tensor(6.25))


INPLACE = {"add_": lambda a, b: a.add_(b), "add_alpha_": lambda a, b: a.add_(b, alpha=-2),
           "sub_alpha_": lambda a, b: a.sub_(b, alpha=0.5), "mul_": lambda a, b: a.mul_(b),
           "div_": lambda a, b: a.div_(b), "fmod_": lambda a, b: a.fmod_(b), "tanh_": lambda a, b: a.tanh_(),
           "exp_": lambda a, b: a.exp_(), "eq_": lambda a, b: a.eq_(b.round()), "self_alias": lambda a, b: a.mul_(a)}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_same_shape(name, dtype):
    # in place on contiguous same-shape operands (the flat fast path): values, dtype, and self returned
    a, b = sample((7, 33), dtype, seed=5), sample((7, 33), dtype, seed=6) + 5
    ref = INPLACE[name](a.clone(), b)
    na = a.npu()
    got = INPLACE[name](na, b.npu())
    assert got is na and got.dtype == dtype
    atol, rtol = tol(dtype)
    torch.testing.assert_close(na.cpu(), ref, atol=atol, rtol=rtol, equal_nan=True)


def test_inplace_partial_overlap_is_refused_as_on_cpu():
    for dev in ("cpu", "npu"):
        base = torch.arange(10.0, device=dev)
        with pytest.raises(RuntimeError, match="single memory location"):
            base[1:].add_(base[:-1])


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "remainder", "div_floor",
                                  "div_trunc", "floor_divide", "eq", "lt", "ge", "pow_int", "bitwise_and",
                                  "bitwise_xor", "bitwise_or"])
def test_binary_integer(name, dtype):
    fns = dict(BINARY)
    fns.update({"pow_int": lambda a, b: torch.pow(a, b.abs() % 3), "bitwise_and": torch.bitwise_and,
                "bitwise_xor": torch.bitwise_xor, "bitwise_or": torch.bitwise_or,
                "remainder": lambda a, b: torch.remainder(a, b.abs() + 1),
                "div_floor": lambda a, b: torch.div(a, b.abs() + 1, rounding_mode="floor"),
                "div_trunc": lambda a, b: torch.div(a, b.abs() + 1, rounding_mode="trunc"),
                "floor_divide": lambda a, b: a // (b.abs() + 1)})
    check(fns[name], sample((3, 8), dtype, seed=3), sample((8,), dtype, seed=4), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_div_trunc_16bit_truncates_the_rounded_quotient(dtype):
    # CUDA computes trunc(a / b) on a Half / BFloat16 quotient, and CPU's vectorised kernel does too: a quotient that
    # rounds up to an integer (bfloat16: -3.890625 / -0.216796875 = 17.95 -> 18.0) truncates to that integer.
    # npu truncated the float32 quotient (17). The reference is that rule, written out, on every element.
    a, b = sample((4096,), dtype, lo=-30, hi=30, seed=11), sample((4096,), dtype, lo=0.1, hi=2, seed=12)
    rounded = torch.trunc((a.float() / b.float()).to(dtype).float()).to(dtype)
    assert (rounded != torch.trunc(a.float() / b.float()).to(dtype)).sum() > 10  # cases where the rule matters
    got = torch.div(a.npu(), b.npu(), rounding_mode="trunc").cpu()
    torch.testing.assert_close(got, rounded, rtol=0, atol=0)
    cpu = torch.div(a, b, rounding_mode="trunc")
    assert (cpu[:4096 - 64] == rounded[:4096 - 64]).all()  # CPU's vectorised part (its scalar tail computes in float)
    # fmod's gradient with respect to the divisor is -grad * trunc(a / b): the same rule
    x, y = a.npu().requires_grad_(), b.npu().requires_grad_()
    torch.fmod(x, y).backward(torch.ones_like(x))
    torch.testing.assert_close(y.grad.cpu(), -rounded, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_div_floor_16bit_rounds_every_step_as_cuda(dtype):
    # CUDA's floor division runs ATen's fmod-based formula in c10::Half / BFloat16 arithmetic, each step rounded to the
    # dtype, and CPU's vectorised kernel agrees; npu ran the steps in float32 (bfloat16: 132 of 65536 quotients
    # differed, e.g. 18.875 // -0.2001953125 = -96 on CPU, -95 on npu). The reference is CPU's vectorised part.
    g = torch.Generator().manual_seed(1)
    a = (torch.rand(1 << 16, generator=g) * 60 - 30).to(dtype)
    b = (torch.rand(1 << 16, generator=g) * 1.9 + 0.1).to(dtype)
    b[::2] *= -1
    body = slice(0, (1 << 16) - 64)  # (CPU's scalar tail computes in float32)
    for got, want in [(torch.div(a.npu(), b.npu(), rounding_mode="floor"), torch.div(a, b, rounding_mode="floor")),
                      (a.npu() // b.npu(), a // b)]:
        torch.testing.assert_close(got.cpu()[body], want[body], rtol=0, atol=0)


def test_type_promotion_and_scalars():
    a_int = sample((4, 4), torch.int64)
    b_f = sample((4, 4), torch.float32)
    check(torch.add, a_int, b_f)  # int64 + float32 -> float32
    check(lambda a: a * 2.5, a_int)  # int tensor * python float
    check(lambda a: a + torch.tensor(3.0), b_f.half(), dtype=torch.float16)  # cpu scalar keeps half
    check(lambda a: a / 3, a_int)  # true division of integers
    check(lambda a, b: a + b, b_f.bfloat16(), b_f.double(), dtype=torch.bfloat16)
    check(lambda a: torch.exp(a), a_int)  # integer input to a float op


def test_inplace_and_out_variants():
    a, b = sample((5, 6), torch.float32, seed=5), sample((6,), torch.float32, seed=6)
    na, nb = a.npu(), b.npu()
    na.mul_(nb).add_(1.5).sigmoid_()
    a.mul_(b).add_(1.5).sigmoid_()
    torch.testing.assert_close(na.cpu(), a)
    out = torch.empty(0, device="npu")
    torch.sub(na, nb, alpha=2, out=out)
    torch.testing.assert_close(out.cpu(), torch.sub(a, b, alpha=2))
    strided_out = torch.empty(6, 5, device="npu").t()  # out= with foreign strides
    torch.mul(na, 2, out=strided_out)
    torch.testing.assert_close(strided_out.cpu(), a * 2)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.ones(3, dtype=torch.int64, device="npu").add_(torch.ones(3, device="npu") * 0.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(3, device="npu").add_(torch.ones(2, 3, device="npu"))


def test_non_contiguous_and_expanded_inputs():
    a = sample((8, 6), torch.float32, seed=7)
    check(lambda x: torch.tanh(x.t()[::2]), a)
    check(lambda x: x.t() + x.t().contiguous(), a)
    check(lambda x: x.expand(3, 8, 6) * x[:, :1], a)
    check(lambda x: x[:, ::3].double() + x[:, 1::3].half(), a, dtype=torch.float64)


def test_ternary_ops():
    a, b, c = (sample((4, 5), torch.float32, seed=s) for s in (8, 9, 10))
    check(lambda x, y, z: torch.addcmul(x, y, z, value=0.5), a, b, c)
    check(lambda x, y, z: torch.addcdiv(x, y, z.abs() + 1, value=2), a, b, c)
    check(lambda x, y, z: torch.lerp(x, y, z.sigmoid()), a, b, c)
    check(lambda x, y, z: torch.where(x > 0, y, z), a, b, c)
    # out= forms (fell back to CPU before), and a non-contiguous ternary operand
    check(lambda x, y, z: torch.addcmul(x, y, z, value=0.5, out=torch.empty_like(x)), a, b, c)
    check(lambda x, y, z: torch.addcdiv(x, y, z.abs() + 1, value=2, out=torch.empty_like(x)), a, b, c)
    check(lambda x, y, z: torch.lerp(x, y, z.sigmoid(), out=torch.empty_like(x)), a, b, c)
    check(lambda x, y, z: torch.addcmul(x.t(), y.t(), z.t()), a, b, c)
    check(lambda x, y: torch.where(x > 0, y, 0.0), a, b)
    check(lambda x, y: torch.where(x > 0, x.long(), y.int()), a, b, dtype=torch.int64)
    # CPU 0-dim tensors beside npu ones, as ATen's where allows them (npu raised "two devices")
    cond, x, zero = (a > 0).npu(), b.npu(), torch.tensor(0.0)
    for got, want in [(torch.where(cond, x, zero), torch.where(a > 0, b, zero)),
                      (torch.where(cond, zero, x), torch.where(a > 0, zero, b)),
                      (torch.where(torch.tensor(True), x, zero), torch.where(torch.tensor(True), b, zero))]:
        assert got.device.type == "npu"
        torch.testing.assert_close(got.cpu(), want)


def test_logical_ops_and_bool_dtype():
    a, b = sample((9,), torch.bool, seed=11), sample((9,), torch.bool, seed=12)
    for fn in (torch.logical_and, torch.logical_or, torch.logical_xor):
        check(fn, a, b)
    check(torch.logical_not, sample((9,), torch.float32))
    check(lambda x, y: x & y, a, b)
    check(lambda x, y: x + y, a, b)
    # alpha scales the second operand: x + False * y is x (npu ignored alpha and or-ed the operands)
    for alpha in (False, True):
        check(lambda x, y: torch.add(x, y, alpha=alpha), a, b)


def test_activation_backward_match_cpu():
    for fn in [torch.relu, F.gelu, lambda x: F.gelu(x, approximate="tanh"), F.silu, torch.sigmoid, torch.tanh,
               F.elu, F.softplus, F.hardsigmoid, F.mish, lambda x: F.leaky_relu(x, 0.1), torch.exp, torch.abs]:
        x = sample((6, 7), torch.float32, seed=13)
        g = sample((6, 7), torch.float32, seed=14)
        xc, xn = x.clone().requires_grad_(), x.npu().requires_grad_()
        fn(xc).backward(g)
        fn(xn).backward(g.npu())
        torch.testing.assert_close(xn.grad.cpu(), xc.grad, atol=1e-5, rtol=1e-5)


def test_integer_division_by_zero_is_reported_at_sync():
    a = torch.arange(4, device="npu")
    b = torch.zeros(4, dtype=torch.int64, device="npu")
    with pytest.raises(RuntimeError, match=r"kernel 'div_floor' failed: ZeroDivisionError"):
        (a // b).cpu()
    acknowledge_device_error()
    assert (a + 1).cpu().tolist() == [1, 2, 3, 4]  # the device works again once acknowledged


def test_mixed_devices_are_refused():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="npu") + torch.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="npu:0") * torch.ones(3, device="npu:1")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_arithmetic(dtype):
    a, b = torch.randn(5, 3, dtype=dtype), torch.randn(3, dtype=dtype)
    for fn in [torch.add, torch.sub, torch.mul, torch.div, lambda x, y: torch.add(x, y, alpha=2.5),
               lambda x, y: torch.sub(x, y, alpha=-0.5), lambda x, y: x.t() * y[:, None]]:
        torch.testing.assert_close(fn(a.npu(), b.npu()).cpu(), fn(a, b))
    # no npu kernel for complex atan2: the CPU fallback runs it, and CPU refuses complex atan2 too
    with pytest.raises(NotImplementedError, match=r"atan2_cpu.*not implemented for 'Complex"):
        torch.atan2(a.npu(), a.npu())


def test_large_outputs_use_streaming_stores_correctly():
    # Outputs of 16 MiB or more are written with streaming stores through a tile; check odd lengths, a
    # misaligned output start (storage offset 1), scalar operands, several dtypes, and in-place (not streamed).
    n = (5 << 20) + 3
    for dtype in (torch.float32, torch.float64, torch.int32):
        a = torch.arange(n + 1, dtype=dtype)[1:] % 97
        b = (torch.arange(n + 1, dtype=dtype)[1:] * 3) % 89
        na, nb = a.npu(), b.npu()
        out = torch.empty(n + 1, dtype=dtype, device="npu")[1:]
        torch.add(na, nb, out=out)
        assert torch.equal(out.cpu(), a + b), dtype
        assert torch.equal((na * 2).cpu(), a * 2), dtype
        assert torch.equal((3 - na).cpu(), 3 - a), dtype
        if dtype.is_floating_point:
            torch.testing.assert_close(torch.sigmoid(na).cpu(), torch.sigmoid(a))
        x = na.clone()
        x += nb
        assert torch.equal(x.cpu(), a + b), dtype


@pytest.mark.parametrize("bounds", [dict(min=-1.0), dict(max=1.0), dict(min=-1.0, max=1.0), dict(min=2.0, max=1.0),
                                    dict(min=float("nan")), dict(max=float("nan")), dict(min=-1.0, max=float("nan"))])
def test_clamp_edges_match_cpu(bounds):
    # NaN and infinite inputs, a bound missing (infinite), min > max (max wins), a NaN bound (NaN everywhere)
    x = torch.tensor([float("nan"), -float("inf"), float("inf"), -2.0, 0.5, 3.0] * 50)  # > one vector
    check(lambda t: t.clamp(**bounds), x)
    int_bounds = {k: int(v) for k, v in bounds.items() if v == v}  # integers have no NaN
    if int_bounds:
        check(lambda t: t.clamp(**int_bounds), torch.tensor([-128, -5, 0, 7, 127] * 50, dtype=torch.int8),
              dtype=torch.int8)


def test_large_contiguous_activations_with_scalar_parameters():
    # The engine's contiguous loops (vectorised, scalar captures held by value): long runs, both streaming
    # (>= 16 MiB) and plain stores, against CPU.
    for n in (1 << 16, (1 << 22) + 3):
        x = sample((n,), torch.float32, seed=n)
        for fn in (lambda t: F.leaky_relu(t, 0.03), lambda t: t.clamp(-1.5, 2.5), lambda t: F.elu(t, 0.7),
                   lambda t: F.gelu(t, approximate="tanh"), lambda t: F.hardtanh(t, -0.5, 0.25)):
            check(fn, x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16bit_unary_runs_in_registers_round_fp32_once(dtype):
    # exp / tanh / erf / sigmoid / silu / gelu on a contiguous 16-bit run: 16 elements widened into fp32
    # registers, the fp32 function, rounded once: bit for bit the fp32 op on the widened input, rounded. Lengths
    # around the 16-lane tail and the 64-element cut-over, a streamed (>= 16 MiB) output, inf / NaN / subnormal.
    special = torch.tensor([float("inf"), -float("inf"), float("nan"), 6e-8, -0.0, 30.0, -30.0]).to(dtype)
    for n in (63, 64, 65, 1023, 1025, 3 * 1024 + 17, (8 << 20) + 5):
        a = sample((n,), dtype, seed=n)
        a[:special.numel()] = special
        na = a.npu()
        for name, fn in [("exp", torch.exp), ("tanh", torch.tanh), ("erf", torch.erf), ("sigmoid", torch.sigmoid),
                         ("silu", F.silu), ("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"))]:
            torch.testing.assert_close(fn(na).cpu(), fn(na.float()).to(dtype).cpu(), rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{name} {dtype} n={n}: {m}")
            # against CPU on the finite values (CPU's vectorised gelu gives NaN at +inf, CUDA and npu inf)
            k = special.numel()
            torch.testing.assert_close(fn(na[k:]).cpu(), fn(a[k:].float()).to(dtype),
                                       msg=lambda m: f"{name} {dtype} n={n} against CPU: {m}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16bit_runs_round_once_like_cpu(dtype):
    # fp16 / bf16 contiguous runs go through fp32 tiles (copy-in widened, f, round the tile out once): the
    # same arithmetic as CPU's, so exact results. Lengths around the 1024-element tile and the 64-element
    # cut-over, a host scalar, a broadcast (stride-0) operand, in place, a streamed (>= 16 MiB) output, and
    # inf / NaN / subnormal / overflowing values.
    special = torch.tensor([float("inf"), -float("inf"), float("nan"), 6e-8, -6e-8, 1e-40, 65504.0, 7e4,
                            3.4e38, -0.0], dtype=torch.float32).to(dtype)

    def same(got, want, what):  # bit for bit, NaN included
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")

    for n in (63, 64, 1023, 1024, 1025, 3 * 1024 + 17, (8 << 20) + 5):
        a = sample((n,), dtype, seed=n)
        b = sample((n,), dtype, seed=n + 1)
        a[:special.numel()] = special[:n]
        na, nb = a.npu(), b.npu()
        same((na + nb).cpu(), a + b, (dtype, n))
        # 1.75 is exact in both 16-bit types: CPU's mul keeps a Python scalar in fp32 where CUDA (and npu)
        # round it to the tensor's dtype first, so an inexact scalar would differ by design
        same((na * 1.75).cpu(), a * 1.75, (dtype, n))
        same((2.5 - na).cpu(), 2.5 - a, (dtype, n))
        # add / sub / mul / div run 16 lanes in registers (the others through the tiles): alpha, a quotient
        same(torch.sub(na, nb, alpha=0.5).cpu(), torch.sub(a, b, alpha=0.5), (dtype, n))
        same((na / nb).cpu(), a / b, (dtype, n))
        # both operands broadcast along the run (stride 0): the 16-lane path read the first as contiguous
        same((na[1:2].expand(n) + nb[:1].expand(n)).cpu(), a[1:2].expand(n) + b[:1].expand(n), (dtype, n))
        same(torch.addcmul(na, nb, na, value=0.5).cpu(), torch.addcmul(a, b, a, value=0.5), n)
        same(torch.abs(na).cpu(), torch.abs(a), (dtype, n))
        torch.testing.assert_close(torch.exp(na).cpu(), torch.exp(a), equal_nan=True)
        x = na.clone()
        x.mul_(nb)
        same(x.cpu(), a * b, (dtype, n))
        if n < 4096:
            rows = a.reshape(1, n).expand(3, n).contiguous()
            col = b[:3].reshape(3, 1)  # stride 0 along the run
            same((rows.npu() * col.npu()).cpu(), rows * col, (dtype, n))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32])
def test_blocks_of_short_rows_match_cpu(dtype):
    # Broadcasts and strided views give runs of a few dozen elements; the engine takes consecutive runs as one
    # block of rows. 7 x 301 x 67 (> 2 x 64K elements) splits over two AI-core blocks in the middle of a row, so
    # the partial first and last runs of a block, the carry from dim 1 into dim 2 and the per-row scalar of a
    # [.., 1] operand are all taken. Same arithmetic as CPU's: add / mul / where are compared bit for bit.
    x = sample((7, 301, 67), dtype, seed=11)
    row, col, mid = sample((67,), dtype, seed=12), sample((7, 301, 1), dtype, seed=13), sample((1, 301, 67), dtype, seed=14)
    view = sample((7, 67, 301), dtype, seed=15).transpose(1, 2)  # inner stride 301: element by element, row by row
    base = sample((7, 301, 2, 40), dtype, seed=16)[:, :, 1, 3:]  # runs of 37, rows 80 apart
    cases = {
        "x * row": lambda x, row, col, mid, view, base: x * row,
        "x + col": lambda x, row, col, mid, view, base: x + col,
        "col - x": lambda x, row, col, mid, view, base: col - x,
        "mid * row": lambda x, row, col, mid, view, base: mid * row,
        "view + row": lambda x, row, col, mid, view, base: view + row,
        "base * col": lambda x, row, col, mid, view, base: base * col,
        "where": lambda x, row, col, mid, view, base: torch.where(x > col, row, x),
        "neg(base)": lambda x, row, col, mid, view, base: -base,
        "in place x += row": lambda x, row, col, mid, view, base: x.clone().add_(row),
        "out= transposed": lambda x, row, col, mid, view, base: torch.mul(
            x, col, out=torch.empty(67, 301, 7, dtype=x.dtype, device=x.device).permute(2, 1, 0)),
    }
    if dtype.is_floating_point:
        cases["addcmul"] = lambda x, row, col, mid, view, base: torch.addcmul(x, row, col, value=0.5)
        cases["sigmoid(base)"] = lambda x, row, col, mid, view, base: torch.sigmoid(base)
    args = (x, row, col, mid, view, base)
    for name, fn in cases.items():
        ref = fn(*args)
        got = fn(*[a.npu() for a in args])
        assert got.shape == ref.shape and got.dtype == ref.dtype, name
        if name in ("addcmul", "sigmoid(base)"):
            atol, rtol = tol(dtype)
            torch.testing.assert_close(got.cpu(), ref, atol=atol, rtol=rtol, msg=name)
        else:
            assert torch.equal(got.cpu(), ref), name


def test_streamed_output_in_blocks_of_rows():
    # A 16 MiB+ output is written through a tile with streaming stores: here in blocks of 1031-element rows with
    # a broadcast row and a per-row scalar, both orders of operands.
    x = sample((4099, 1031), torch.float32, seed=17)
    row, col = sample((1031,), torch.float32, seed=18), sample((4099, 1), torch.float32, seed=19)
    nx, nrow, ncol = x.npu(), row.npu(), col.npu()
    assert torch.equal((nx * nrow).cpu(), x * row)
    assert torch.equal((nrow - nx).cpu(), row - x)
    assert torch.equal((nx / ncol).cpu(), x / col)
    assert torch.equal((ncol + nrow).cpu(), col + row)
