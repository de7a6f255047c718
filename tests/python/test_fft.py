"""torch.fft natively on npu (pocketfft on the device stream): every torch.fft function against CPU PyTorch in
float32/float64/complex, strided and batched inputs, every norm, stft/istft, gradients, the launch records, and
CPU's errors for bad input."""
import re

import pytest
import torch

import torch_npu_sim

REAL = [torch.float32, torch.float64]
COMPLEX = [torch.complex64, torch.complex128]


def tol(dtype):
    single = dtype in (torch.float32, torch.complex64)
    return dict(rtol=2e-5, atol=2e-5) if single else dict(rtol=1e-10, atol=1e-10)


def rand(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        real = torch.float32 if dtype == torch.complex64 else torch.float64
        return torch.complex(torch.randn(shape, generator=g, dtype=real), torch.randn(shape, generator=g, dtype=real))
    return torch.randn(shape, generator=g, dtype=dtype)


def same(fn, *cpu_args, dtype, scale=1.0):
    expected = fn(*cpu_args)
    got = fn(*[a.to("npu") if isinstance(a, torch.Tensor) else a for a in cpu_args])
    assert got.device.type == "npu" and got.dtype == expected.dtype and got.shape == expected.shape
    t = tol(dtype)
    torch.testing.assert_close(got.cpu(), expected, rtol=t["rtol"], atol=t["atol"] * scale, equal_nan=True)


@pytest.fixture(autouse=True)
def native_only():
    """No FFT op (nor stft's unfold_backward or conj_physical) falls back to the CPU. The complex pointwise ops the
    tests use around them (abs, sgn, eq on complex tensors) still run on the fallback, outside this scope."""
    torch_npu_sim.reset_fallback_ops()
    yield
    hit = [op for op in torch_npu_sim.fallback_ops()
           if any(w in op for w in ("fft", "stft", "unfold", "conj", "complex", "polar", "angle", "shuffle"))]
    assert not hit, hit


ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]


def input_dtype(name, dtype):
    """rfft/ihfft take real input; the others complex (fft/ifft/fftn take either: complex here, real below)."""
    real = dtype if not dtype.is_complex else (torch.float32 if dtype == torch.complex64 else torch.float64)
    return real if name.startswith(("rfft", "ihfft")) else (real.to_complex() if not dtype.is_complex else dtype)


@pytest.mark.parametrize("norm", [None, "forward", "ortho"])
@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", ONE_D)
def test_one_dimensional_matches_cpu(name, dtype, norm):
    fn = getattr(torch.fft, name)
    x = rand(3, 5, 12, dtype=input_dtype(name, dtype))
    scale = 16 if norm == "forward" or name in ("hfft", "irfft") else 1  # unnormalized sums of 12 terms
    same(lambda a: fn(a, norm=norm), x, dtype=dtype, scale=scale)
    same(lambda a: fn(a, n=7, dim=1, norm=norm), x, dtype=dtype, scale=scale)  # odd n, padded/trimmed, inner dim
    same(lambda a: fn(a, n=20, dim=0, norm=norm), x, dtype=dtype, scale=scale)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", N_D)
def test_multi_dimensional_matches_cpu(name, dtype):
    fn = getattr(torch.fft, name)
    x = rand(2, 6, 9, 10, dtype=input_dtype(name, dtype))
    same(fn, x, dtype=dtype, scale=64)
    same(lambda a: fn(a, dim=(0, 2)), x, dtype=dtype, scale=64)
    if name.endswith("n"):
        same(lambda a: fn(a, s=(4, 7, 5)), x, dtype=dtype, scale=64)


@pytest.mark.parametrize("dtype", REAL)
def test_real_input_to_complex_transforms(dtype):
    x = rand(4, 16, dtype=dtype)
    same(torch.fft.fft, x, dtype=dtype, scale=16)  # _fft_r2c with onesided=False: the full spectrum
    same(torch.fft.fft2, x, dtype=dtype, scale=16)
    same(torch.fft.ifftn, x, dtype=dtype)


@pytest.mark.parametrize("layout", ["transposed", "step_sliced", "expanded", "offset", "conj", "neg_strided"])
def test_strided_inputs(layout):
    base = rand(8, 12, dtype=torch.complex64)
    make = {
        "transposed": lambda t: t.mT,
        "step_sliced": lambda t: t[::2, ::3],
        "expanded": lambda t: t[:1].expand(8, 12),
        "offset": lambda t: t[3:, 2:],
        "conj": lambda t: t.conj(),  # a lazy conjugate: the kernel must read the conjugated values
        "neg_strided": lambda t: torch.view_as_complex(torch.view_as_real(t).flip(0)),
    }[layout]
    for fn in (torch.fft.fft, torch.fft.fft2, torch.fft.irfft, torch.fft.hfft2):
        expected = fn(make(base))
        got = fn(make(base.to("npu")))
        torch.testing.assert_close(got.cpu(), expected, rtol=2e-5, atol=5e-5)
    real = rand(8, 12, dtype=torch.float32)
    if layout not in ("conj", "neg_strided"):
        same(lambda t: torch.fft.rfft2(make(t)), real, dtype=torch.float32, scale=16)


def test_empty_and_out_variants():
    # an empty batch: an empty spectrum (CPU's MKL build raises "Inconsistent configuration parameters" instead)
    y = torch.fft.fft(torch.zeros(0, 8, dtype=torch.complex64, device="npu"))
    assert y.shape == (0, 8) and y.dtype == torch.complex64 and y.device.type == "npu"
    y = torch.fft.rfft(torch.zeros(3, 0, 8, device="npu"))
    assert y.shape == (3, 0, 5) and y.dtype == torch.complex64
    x = rand(4, 10, dtype=torch.float32)
    for fn in (torch.fft.rfft, torch.fft.fft, torch.fft.irfft):
        arg = x if fn is not torch.fft.irfft else x.to(torch.complex64)
        expected = fn(arg)
        out = torch.empty(0, dtype=expected.dtype, device="npu")
        res = fn(arg.to("npu"), out=out)
        assert res is out
        torch.testing.assert_close(out.cpu(), expected, rtol=2e-5, atol=2e-5)


def test_large_transforms():
    for n in (1 << 10, 1 << 16, 3 * 5 * 7 * 11 * 13):  # powers of two and a composite of odd primes
        x = rand(n, dtype=torch.float64)
        same(torch.fft.rfft, x, dtype=torch.float64, scale=n)
        same(torch.fft.irfft, torch.fft.rfft(x), dtype=torch.float64)
    same(torch.fft.fft2, rand(256, 256, dtype=torch.complex64), dtype=torch.complex64, scale=256)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batches_of_long_lines(dtype):
    # long lines (pocketfft's SIMD groups of lines past the L2), batched along other dims, strided, and in every
    # kind of pass (c2c, r2c, c2r)
    n = 1 << 14
    x = rand(3, 2, n, dtype=dtype)
    same(torch.fft.rfft, x, dtype=dtype, scale=n)
    same(lambda t: torch.fft.irfft(t, n=n), torch.fft.rfft(x), dtype=dtype)
    cplx = torch.complex64 if dtype == torch.float32 else torch.complex128
    z = rand(n, 5, dtype=cplx)  # the lines along dim 0, stride 5
    same(lambda t: torch.fft.fft(t, dim=0), z, dtype=cplx, scale=n)
    same(lambda t: torch.fft.ifft(t[:, ::2], dim=0), z, dtype=cplx)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_contiguous_lines_at_an_aliasing_pitch(dtype):
    # contiguous lines 2 KiB apart or a multiple of it go through padded staging rows (fft.cpp's run_staged): every
    # kind of pass, a line count that is no multiple of the 32-line groups, batches over two other dims, a strided
    # other side (columns in, rows out), a sliced input
    cplx = dtype.to_complex()
    n = 1024 if dtype == torch.float32 else 512
    z = rand(77, n, dtype=cplx)
    same(torch.fft.fft, z, dtype=cplx, scale=n)
    same(lambda t: torch.fft.ifft(t, norm="ortho"), z, dtype=cplx)
    same(lambda t: torch.fft.fft(t, dim=0), rand(n, 40, dtype=cplx), dtype=cplx, scale=n)  # contiguous output rows
    x = rand(3, 21, 2 * n, dtype=dtype)
    same(torch.fft.rfft, x, dtype=dtype, scale=2 * n)
    same(lambda t: torch.fft.irfft(t, n=2 * n), torch.fft.rfft(x), dtype=dtype)
    same(lambda t: torch.fft.rfft(t[:, 1:, :]), x, dtype=dtype, scale=2 * n)
    same(torch.fft.fft2, rand(2, n, n // 4, dtype=cplx), dtype=cplx, scale=n)
    same(lambda t: torch.fft.fft(t, dim=1), rand(33, 2 * n, dtype=cplx)[:, :n].t(), dtype=cplx, scale=n)
    # lines of more than 16 KiB are not staged (pocketfft gathers them itself), in blocks of 32 lines and a tail
    same(torch.fft.rfft, rand(70, 16 * n, dtype=dtype), dtype=dtype, scale=16 * n)
    same(lambda t: torch.fft.ifft(t, dim=-1), rand(37, 4 * n, dtype=cplx), dtype=cplx)


def test_float32_lines_in_simd_lanes_every_layout():
    # complex64 C2C and float32 R2C passes run 16 (AVX-512) or 8 (AVX2) lines at a time in SIMD lanes
    # (fft_lanes.cpp): contiguous lines (register transposes, line lengths with tails of 1-15 points), neighbouring
    # columns (vector loads, 64 columns at once, a tail group), lines that are neither (slabs, steps), partial groups
    # (copies of the last line in the spare lanes, stores only for the real ones) and of fewer than half (one by one),
    # in place (fft2's second pass), and R2C backward (ihfft) with its negated imaginary parts
    c64 = torch.complex64
    for rows, cols in [(37, 24), (100, 130), (5, 1024), (1, 4096), (9, 7), (130, 2), (200, 67), (3, 12), (12, 40)]:
        z = rand(rows, cols, dtype=c64, seed=rows)
        same(lambda t: torch.fft.fft(t, dim=1), z, dtype=c64, scale=cols)
        same(lambda t: torch.fft.fft(t, dim=0), z, dtype=c64, scale=rows)
        same(torch.fft.fft2, z, dtype=c64, scale=rows * cols)
        x = rand(rows, cols, dtype=torch.float32, seed=rows + 1)
        same(torch.fft.rfft, x, dtype=torch.float32, scale=cols)
        same(lambda t: torch.fft.rfft(t, dim=0), x, dtype=torch.float32, scale=rows)
        same(torch.fft.ihfft, x, dtype=torch.float32)
        same(lambda t: torch.fft.ihfft(t, dim=0), x, dtype=torch.float32)
    # lines over slabs: 3 x 33 lines of 70 points, neighbours only within a slab; every other column; a transposed
    # input (contiguous columns in, rows out)
    w = rand(3, 70, 33, dtype=c64, seed=4)
    same(lambda t: torch.fft.ifft(t, dim=1, norm="ortho"), w, dtype=c64)
    same(lambda t: torch.fft.fft(t[:, :, ::2], dim=1), w, dtype=c64, scale=70)
    same(lambda t: torch.fft.fft(t.t(), dim=1), rand(96, 80, dtype=c64, seed=5), dtype=c64, scale=96)
    same(lambda t: torch.fft.rfft(t[:, ::3], dim=0), rand(64, 300, dtype=torch.float32, seed=6), dtype=torch.float32,
         scale=64)


def test_lanes_behind_a_failed_kernel_read_nothing_back():
    # an fft2 (row pass through register transposes, column pass in wide groups, in place) and an rfft enqueued
    # behind a failed kernel: their outputs raise instead of reading back; after the error is acknowledged the same
    # calls are right
    from conftest import acknowledge_device_error
    z = rand(64, 96, dtype=torch.complex64, seed=11)
    x = rand(48, 200, dtype=torch.float32, seed=12)
    zn, xn = z.npu(), x.npu()
    torch.npu.synchronize()
    torch.arange(3.0, device="npu").index_select(0, torch.tensor([5], device="npu"))  # fails on the device
    outs = [torch.fft.fft2(zn), torch.fft.rfft(xn)]
    for out in outs:
        with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
            out.cpu()
    acknowledge_device_error()
    same(torch.fft.fft2, z, dtype=torch.complex64, scale=64 * 96)
    same(torch.fft.rfft, x, dtype=torch.float32, scale=200)


def launched(fn):
    """The FFT kernels fn enqueues, in order (copies left out)."""
    torch.npu.synchronize()
    torch_npu_sim.clear_launch_records()
    torch_npu_sim.set_launch_recording(True)
    try:
        out = fn()
        torch.npu.synchronize()
    finally:
        torch_npu_sim.set_launch_recording(False)
    return out, [r["kernel"] for r in torch_npu_sim.launch_records() if r["kernel"].startswith("fft")]


def close_to_cpu(got, want, n):
    # FFTs of n points: errors grow with log n on the largest magnitude (sum of n unit-variance terms ~ n); want is
    # the float64 / complex128 result of the same input
    eps = 3e-7 if got.dtype in (torch.float32, torch.complex64) else 1e-15
    err = (got.cpu().to(want.dtype) - want).abs().max().item()
    assert err <= eps * (1 + torch.log2(torch.tensor(float(n))).item()) * want.abs().max().item(), err


@pytest.mark.parametrize("real", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [1 << 16, 1 << 17, 3 << 15])
def test_one_long_line_splits_over_the_cores(n, real):
    # lines of >= 2^15 complex points (float32 and float64) run the four-step split (columns, twiddle, rows written transposed,
    # then the real transforms' untangling), each step a launch over the cores; the same numbers as CPU's FFT, in
    # every kind of pass, every norm, a strided input and output, and DC / Nyquist imaginary parts irfft ignores.
    cplx = real.to_complex()
    x = rand(n, dtype=real, seed=n)
    z = rand(n, dtype=cplx, seed=n + 1)
    got, kernels = launched(lambda: torch.fft.rfft(x.npu()))
    assert kernels == ["fft_four_step_columns", "fft_four_step_rows", "fft_r2c_untangle"], kernels
    close_to_cpu(got, torch.fft.rfft(x.double()), n)
    for norm in ("backward", "ortho", "forward"):
        close_to_cpu(torch.fft.rfft(x.npu(), norm=norm), torch.fft.rfft(x.double(), norm=norm), n)
        spec = torch.fft.rfft(x, norm=norm)
        spec[0] += 3j
        spec[-1] -= 2j
        got, kernels = launched(lambda: torch.fft.irfft(spec.npu(), n=n, norm=norm))
        assert kernels[0] == "fft_c2r_tangle" and kernels[-1] == "fft_c2r_split", kernels
        close_to_cpu(got, torch.fft.irfft(spec.to(torch.complex128), n=n, norm=norm), n)
        for fn in (torch.fft.fft, torch.fft.ifft):
            got, kernels = launched(lambda: fn(z.npu(), norm=norm))
            assert kernels == ["fft_four_step_columns", "fft_four_step_rows"], kernels
            close_to_cpu(got, fn(z.to(torch.complex128), norm=norm), n)
    wide = rand(2 * n, dtype=cplx, seed=3)
    out = torch.empty(2 * n, dtype=cplx, device="npu")[::2]  # a strided output
    torch.fft.fft(wide.npu()[::2], out=out)
    close_to_cpu(out, torch.fft.fft(wide[::2].to(torch.complex128)), n)
    y = rand(n, 3, dtype=cplx, seed=4)  # three lines along dim 0, stride 3: one launch, whole lines
    got, kernels = launched(lambda: torch.fft.fft(y.npu(), dim=0))
    assert kernels == ["fft_c2c"], kernels
    close_to_cpu(got, torch.fft.fft(y.to(torch.complex128), dim=0), n)
    pair = torch.stack([x, -2 * x])  # two lines of each real kind in one launch
    got, kernels = launched(lambda: torch.fft.rfft(pair.npu()))
    assert kernels == ["fft_r2c"], kernels
    close_to_cpu(got, torch.fft.rfft(pair.double()), n)
    close_to_cpu(torch.fft.irfft(torch.fft.rfft(pair).npu(), n=n), torch.fft.irfft(torch.fft.rfft(pair.double()), n=n), n)


def test_long_lines_without_a_factor_pair_stay_whole():
    # 2 * 65537 real points: 65537 complex points are prime, so no M1 x M2 split; pocketfft runs the line whole
    n = 2 * 65537
    x = rand(n, dtype=torch.float32, seed=7)
    got, kernels = launched(lambda: torch.fft.rfft(x.npu()))
    assert kernels == ["fft_r2c"], kernels
    close_to_cpu(got, torch.fft.rfft(x.double()), n)
    # 2^21 complex128 points: the length's twiddle tables would pass 32 MB, so this line stays whole too
    z = rand(1 << 21, dtype=torch.complex128, seed=8)
    got, kernels = launched(lambda: torch.fft.fft(z.npu()))
    assert kernels == ["fft_c2c"], kernels
    close_to_cpu(got, torch.fft.fft(z), 1 << 21)


def test_fftshift_and_frequencies():
    x = rand(5, 8, dtype=torch.float32)
    same(torch.fft.fftshift, x, dtype=torch.float32)
    same(lambda a: torch.fft.ifftshift(a, dim=0), x, dtype=torch.float32)
    torch.testing.assert_close(torch.fft.rfftfreq(10, d=0.5, device="npu").cpu(), torch.fft.rfftfreq(10, d=0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_stft_istft_round_trip(dtype):
    signal = rand(2, 400, dtype=dtype)
    window = torch.hann_window(64, dtype=dtype)

    def stft(s, w):
        return torch.stft(s, 64, hop_length=16, window=w, return_complex=True)

    same(stft, signal, window, dtype=dtype, scale=64)
    spec = stft(signal, window)
    same(lambda sp, w: torch.istft(sp, 64, hop_length=16, window=w, length=400), spec, window, dtype=dtype)
    back = torch.istft(spec.to("npu"), 64, hop_length=16, window=window.to("npu"), length=400)
    torch.testing.assert_close(back.cpu(), signal, **tol(dtype))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn", "irfftn", "hfft", "ihfft2"])
def test_backward_matches_cpu(name):
    fn = getattr(torch.fft, name)
    x = rand(4, 6, dtype=input_dtype(name, torch.complex128))

    def loss(a):
        y = fn(a)
        return (y.abs() ** 2 if y.is_complex() else y ** 2).sum()

    xc = x.clone().requires_grad_()
    loss(xc).backward()
    xn = x.to("npu").requires_grad_()
    loss(xn).backward()
    torch.testing.assert_close(xn.grad.cpu(), xc.grad, rtol=1e-9, atol=1e-9)
    assert torch.autograd.gradcheck(fn, (x.to("npu").requires_grad_(),))


def test_unfold_backward_matches_cpu():
    # unfold's gradient (istft's overlap-add and the sliding-window ops): every window added back where it was read
    for size, step, shape, dim in ((4, 2, (3, 11), 1), (3, 5, (13, 2), 0), (1, 1, (), 0), (5, 1, (2, 5, 3), 1)):
        x = rand(*shape, dtype=torch.float64)
        g = rand(*x.unfold(dim, size, step).shape, dtype=torch.float64, seed=1)
        expected = torch.ops.aten.unfold_backward(g, list(shape), dim, size, step)
        got = torch.ops.aten.unfold_backward(g.to("npu"), list(shape), dim, size, step)
        torch.testing.assert_close(got.cpu(), expected)


def test_conj_physical_matches_cpu():
    z = rand(3, 4, dtype=torch.complex64)
    same(torch.conj_physical, z, dtype=torch.complex64)
    same(lambda a: torch.conj_physical(a.conj()), z, dtype=torch.complex64)
    same(lambda a: torch.conj_physical(a.mT), z, dtype=torch.complex64)
    same(torch.conj_physical, rand(3, dtype=torch.float32), dtype=torch.float32)


@pytest.mark.parametrize("dtype", REAL)
def test_complex_polar_angle_match_cpu(dtype):
    # the complex constructors and angle around spectra: libtorch's complex_out / polar_out / angle_out with npu
    # dispatch stubs (broadcast operands, real and integer angle inputs with NaN, inf and signed zeros)
    re, im = rand(3, 4, dtype=dtype), rand(4, dtype=dtype, seed=1)
    same(torch.complex, re, im, dtype=dtype)
    same(torch.polar, re.abs(), im, dtype=dtype)
    special = torch.tensor([-1.0, 0.0, -0.0, 2.0, float("nan"), float("inf"), -float("inf")], dtype=dtype)
    same(torch.angle, special, dtype=dtype)
    same(torch.angle, torch.tensor([-3, 0, 5]), dtype=torch.float32)
    z = rand(6, dtype=dtype.to_complex())
    same(torch.angle, z, dtype=dtype)
    same(lambda a: torch.angle(a.conj()), z, dtype=dtype)
    out = torch.empty(0, dtype=dtype.to_complex(), device="npu")
    assert torch.complex(re.to("npu"), im.to("npu"), out=out) is out
    torch.testing.assert_close(out.cpu(), torch.complex(re, im))
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double tensors"):
        torch.complex(re.to("npu").int(), im.to("npu").int())


def test_channel_shuffle_matches_cpu():
    x = rand(2, 6, 3, 5, dtype=torch.float32)
    same(lambda a: torch.nn.functional.channel_shuffle(a, 3), x, dtype=torch.float32)
    same(lambda a: torch.nn.functional.channel_shuffle(a, 2), x.to(memory_format=torch.channels_last), dtype=torch.float32)
    # bad arguments: CPU's errors and messages (groups not dividing the channels, non-positive, too few dims)
    for args in ((x, 4), (x, 0), (rand(6, 3, dtype=torch.float32), 3)):
        with pytest.raises(RuntimeError) as cpu_err:
            torch.nn.functional.channel_shuffle(*args)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value).splitlines()[0])):
            torch.nn.functional.channel_shuffle(args[0].to("npu"), args[1])


def test_errors_match_cpu():
    for fn in (lambda a: torch.fft.fft(a, n=0), lambda a: torch.fft.rfft(a.to(torch.complex64)),
               lambda a: torch.fft.fft2(a, dim=(0, 0)), lambda a: torch.fft.fft(a, dim=5),
               lambda a: torch.fft.irfft(a, n=-1), lambda a: torch.fft.fft(a.half()),
               lambda a: torch.fft.fft(a, norm="bad"), lambda a: torch.fft.rfftn(a, s=(3,), dim=(0, 1))):
        x = rand(4, 8, dtype=torch.float32)
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value), match=re.escape(str(cpu_err.value).splitlines()[0])):
            fn(x.to("npu"))
    # _fft_c2r reads last_dim_size / 2 + 1 values of the last dim: fewer is refused (CPU reads past the input)
    with pytest.raises(RuntimeError, match="expected the input's dim 1 to hold at least 6 values"):
        torch.ops.aten._fft_c2r(rand(2, 3, dtype=torch.complex64).to("npu"), [1], 0, 10)
    # an empty signal has a one-bin spectrum nothing would write: refused (CPU returns uninitialized memory)
    with pytest.raises(RuntimeError, match=r"_fft_r2c: Invalid number of data points \(0\)"):
        torch.ops.aten._fft_r2c(torch.zeros(3, 0, device="npu"), [1], 0, True)


def test_launches_are_recorded():
    x = rand(16, 64, 64, dtype=torch.complex64).to("npu")
    with torch_npu_sim.record_launches() as rec:
        y = torch.fft.fft2(x)
        r = torch.fft.irfft(y, n=64)
    by = rec.by_kernel()
    assert by["fft_c2c"]["launches"] == 2 and by["fft_c2r"]["launches"] == 1, by  # one launch per transformed axis
    lines, pass_bytes = 16 * 64, 16 * 64 * 64 * 8
    assert by["fft_c2c"]["gm_read"] == 2 * pass_bytes and by["fft_c2c"]["gm_write"] == 2 * pass_bytes
    assert by["fft_c2c"]["vector_flops"] == 2 * lines * 5 * 64 * 6  # 5 n log2 n per line, n = 64
    assert by["fft_c2r"]["gm_read"] == lines * 33 * 8 and by["fft_c2r"]["gm_write"] == lines * 64 * 4
    assert r.shape == (16, 64, 64)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "permuted"])
@pytest.mark.parametrize("fn", ["fft1", "rfft1", "irfft1", "hfft1", "fftn02", "rfftn01", "irfftn01", "ifft_last"])
def test_output_layout_is_the_meta_functions(fn, layout):
    # torch.compile plans buffers by the fake (meta-function) strides: ATen's _exec_fft layout, CPU's too
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 10, 7, generator=g)
    x = {"contiguous": x, "transposed": x.transpose(1, 2).contiguous().transpose(1, 2),
         "permuted": x.permute(2, 0, 1).contiguous().permute(1, 2, 0)}[layout]
    if fn in ("irfft1", "hfft1", "fftn02", "ifft_last", "irfftn01"):
        x = torch.complex(x, x.flip(0))
    call = {"fft1": lambda t: torch.fft.fft(t, dim=1), "rfft1": lambda t: torch.fft.rfft(t, dim=1),
            "irfft1": lambda t: torch.fft.irfft(t, dim=1), "hfft1": lambda t: torch.fft.hfft(t, dim=1),
            "fftn02": lambda t: torch.fft.fftn(t, dim=(0, 2)), "rfftn01": lambda t: torch.fft.rfftn(t, dim=(0, 1)),
            "irfftn01": lambda t: torch.fft.irfftn(t, dim=(0, 1)), "ifft_last": lambda t: torch.fft.ifft(t)}[fn]
    xn = x.npu()
    assert xn.stride() == x.stride()
    got, ref = call(xn), call(x)
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fake = call(mode.from_tensor(xn))  # what torch.compile plans by
    assert got.stride() == ref.stride() == fake.stride()
    torch.testing.assert_close(got.cpu(), ref, atol=1e-4, rtol=1e-4)
