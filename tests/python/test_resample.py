"""F.interpolate (nearest, nearest-exact (1-D to 3-D), linear, bilinear, bicubic, trilinear, and antialiased bilinear /
bicubic / lanczos; sizes, scale factors, align_corners) and F.pad (reflect, replicate; 1-D to 3-D) on npu against CPU
PyTorch:
values and gradients in four float dtypes, integer gathers, uint8 image resizing bit-exact, bad inputs raising CPU's
error type, and no op falling back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers "npu")

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def tol(dtype):
    return {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
            torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=6e-2)}[dtype]


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def same(npu_value, cpu_value):
    got = npu_value.cpu()
    assert got.dtype == cpu_value.dtype and got.shape == cpu_value.shape, (got.dtype, got.shape, cpu_value.shape)
    if cpu_value.is_floating_point():
        torch.testing.assert_close(got.double(), cpu_value.double(), equal_nan=True, **tol(cpu_value.dtype))
    else:
        assert torch.equal(got, cpu_value)


def fwd_bwd(fn, x, seed=1):
    xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
    yc, yn = fn(xc), fn(xn)
    same(yn.detach(), yc.detach())
    g = torch.randn(yc.shape, generator=torch.Generator().manual_seed(seed)).to(yc.dtype)
    yc.backward(g)
    yn.backward(g.to("npu"))
    same(xn.grad, xc.grad)


INTERP_2D = [
    dict(size=(7, 9)), dict(size=(3, 2)), dict(size=(10, 12)), dict(scale_factor=2.0), dict(scale_factor=(1.7, 0.6)),
    dict(scale_factor=2.5, recompute_scale_factor=True), dict(size=(5, 6)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("kw", INTERP_2D)
def test_interpolate_nearest_2d(dtype, mode, kw):
    fwd_bwd(lambda t: F.interpolate(t, mode=mode, **kw), rand(2, 3, 5, 6, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", INTERP_2D)
def test_interpolate_bilinear(dtype, align_corners, kw):
    fwd_bwd(lambda t: F.interpolate(t, mode="bilinear", align_corners=align_corners, **kw), rand(2, 3, 5, 6, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", INTERP_2D)
def test_interpolate_bicubic(dtype, align_corners, kw):
    # four taps per axis, clamped at the border; the source index is not clamped at 0 (cubic)
    fwd_bwd(lambda t: F.interpolate(t, mode="bicubic", align_corners=align_corners, **kw), rand(2, 3, 5, 6, dtype=dtype))


INTERP_3D = [dict(size=(4, 7, 9)), dict(size=(2, 3, 2)), dict(scale_factor=2.0), dict(scale_factor=(1.5, 0.7, 2.2)),
             dict(size=(3, 5, 6))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("kw", INTERP_3D)
def test_interpolate_trilinear(dtype, align_corners, kw):
    fwd_bwd(lambda t: F.interpolate(t, mode="trilinear", align_corners=align_corners, **kw),
            rand(2, 3, 3, 5, 6, dtype=dtype))


@pytest.mark.parametrize("mode,shape,size", [("bilinear", (1, 2, 4, 5), (4, 9)), ("bicubic", (1, 2, 4, 5), (7, 5)),
                                              ("trilinear", (1, 2, 3, 4, 5), (3, 7, 9)),
                                              ("trilinear", (1, 2, 3, 4, 5), (5, 4, 5))])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_backward_non_finite_grads_where_cpu_puts_them(mode, shape, size, align_corners):
    # The backward scatters each grad row along w once and adds it into its input rows with their weights; CPU adds
    # every product wd * wh * ww * g directly. A 0 weight (an identity axis, an exact source position) meeting an inf
    # gives NaN, and inf - inf cancels, in the same elements on both.
    x = rand(*shape)
    g = rand(*shape[:2], *size, seed=3)
    g.view(-1)[::29] = float("inf")
    g.view(-1)[3::31] = float("-inf")
    g.view(-1)[40] = float("nan")
    xc, xn = x.clone().requires_grad_(), x.to("npu").requires_grad_()
    F.interpolate(xc, size=size, mode=mode, align_corners=align_corners).backward(g)
    F.interpolate(xn, size=size, mode=mode, align_corners=align_corners).backward(g.to("npu"))
    assert xc.grad.isnan().any() and xc.grad.isfinite().any()
    assert torch.equal(xn.grad.cpu().isnan(), xc.grad.isnan())
    finite = xc.grad.isfinite()
    torch.testing.assert_close(xn.grad.cpu()[finite], xc.grad[finite], rtol=1e-5, atol=1e-5)
    assert torch.equal(xn.grad.cpu()[~finite & ~xc.grad.isnan()], xc.grad[~finite & ~xc.grad.isnan()])


def test_bicubic_trilinear_strided_and_out():
    x = rand(2, 4, 6, 5)
    xc = x.contiguous(memory_format=torch.channels_last)
    same(F.interpolate(xc.to("npu"), size=(9, 4), mode="bicubic"), F.interpolate(xc, size=(9, 4), mode="bicubic"))
    v = rand(1, 2, 4, 3, 5).transpose(2, 4)
    same(F.interpolate(v.to("npu"), scale_factor=1.5, mode="trilinear"), F.interpolate(v, scale_factor=1.5, mode="trilinear"))
    out = torch.empty(0, device="npu")
    torch._C._nn.upsample_bicubic2d(x.to("npu"), [5, 7], True, None, None, out=out)
    same(out, torch._C._nn.upsample_bicubic2d(x, [5, 7], True, None, None))
    raises_like = [(lambda t: torch._C._nn.upsample_trilinear3d(t, [5, 5], False), "output_size"),
                   (lambda t: torch._C._nn.upsample_bicubic2d(t[0], [5, 5], False), "input_size|4D|dim")]
    for fn, match in raises_like:
        raises_like_cpu(fn, x, match)


INTERP_1D = [dict(size=11), dict(size=3), dict(size=8), dict(scale_factor=2.0), dict(scale_factor=1.3),
             dict(scale_factor=0.45), dict(scale_factor=3.0, recompute_scale_factor=True)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear", "linear-corners"])
@pytest.mark.parametrize("kw", INTERP_1D)
def test_interpolate_1d(dtype, mode, kw):
    extra = {}
    if mode.startswith("linear"):
        extra["align_corners"] = mode == "linear-corners"
        mode = "linear"
    fwd_bwd(lambda t: F.interpolate(t, mode=mode, **kw, **extra), rand(2, 3, 8, dtype=dtype))


def test_interpolate_channels_last_and_strided_input():
    x = rand(2, 4, 6, 5)
    for mode, extra in [("nearest", {}), ("bilinear", dict(align_corners=False))]:
        xc = x.contiguous(memory_format=torch.channels_last)
        same(F.interpolate(xc.to("npu"), size=(9, 4), mode=mode, **extra), F.interpolate(xc, size=(9, 4), mode=mode, **extra))
        xt = x.transpose(2, 3)
        same(F.interpolate(xt.to("npu"), scale_factor=1.5, mode=mode, **extra),
             F.interpolate(xt, scale_factor=1.5, mode=mode, **extra))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_uint8(mode):
    x = torch.randint(0, 255, (1, 3, 4, 5), dtype=torch.uint8)
    same(F.interpolate(x.to("npu"), size=(7, 3), mode=mode), F.interpolate(x, size=(7, 3), mode=mode))


AA_MODES = ["bilinear", "bicubic", "lanczos"]
# Downsampling (the filter widened by the scale), upsampling, one axis only (the other pass skipped), a scale
# factor, extreme aspect ratios, align_corners.
INTERP_AA = [dict(size=(9, 7)), dict(size=(20, 31)), dict(size=(16, 5)), dict(size=(4, 23)), dict(scale_factor=0.37),
             dict(scale_factor=(2.2, 0.3)), dict(size=(1, 1)), dict(size=(9, 7), align_corners=True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode, kw", [(m, kw) for m in AA_MODES for kw in INTERP_AA
                                      if not (m == "lanczos" and "align_corners" in kw)])  # lanczos refuses it
def test_interpolate_antialias(dtype, mode, kw):
    fwd_bwd(lambda t: F.interpolate(t, mode=mode, antialias=True, **kw), rand(2, 3, 16, 23, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", AA_MODES)
def test_interpolate_antialias_16bit_as_cuda(dtype, mode):
    # CPU refuses 16-bit antialiasing; CUDA computes it in float32 and rounds once: the reference is CPU's float32
    # result on the same (rounded) input and gradient. Both axes change size, so the intermediate is float too.
    x, g = rand(2, 3, 16, 23, dtype=dtype), rand(2, 3, 9, 30, dtype=dtype, seed=3)
    xn = x.to("npu").requires_grad_()
    y = F.interpolate(xn, size=(9, 30), mode=mode, antialias=True)
    y.backward(g.to("npu"))
    xr = x.float().requires_grad_()
    ref = F.interpolate(xr, size=(9, 30), mode=mode, antialias=True)
    ref.backward(g.float())
    assert y.dtype == xn.grad.dtype == dtype
    # the same float arithmetic in the same order, one rounding at the end: equal bit for bit (lanczos' sin may
    # differ from CPU's in the last float bit, so it is held to 16-bit tolerances)
    exact = dict(rtol=0, atol=0) if mode != "lanczos" else tol(dtype)
    torch.testing.assert_close(y.detach().cpu(), ref.detach().to(dtype), **exact)
    torch.testing.assert_close(xn.grad.cpu(), xr.grad.to(dtype), **exact)


@pytest.mark.parametrize("mode, antialias", [("bilinear", True), ("bilinear", False), ("bicubic", True),
                                             ("bicubic", False), ("lanczos", True)])  # lanczos needs antialias
@pytest.mark.parametrize("channels", [3, 5])
def test_interpolate_uint8_images_bit_exact(mode, antialias, channels):
    # torchvision's uint8 Resize: CPU sums int16 fixed-point weights in int32 (its AVX2 kernel for up to 4
    # channels, the generic one beyond); npu runs the same integers, so every pixel is equal.
    x = torch.randint(0, 256, (2, channels, 45, 61), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    xl = x.contiguous(memory_format=torch.channels_last)
    for kw in [dict(size=(20, 33)), dict(size=(90, 17)), dict(size=(45, 100)), dict(scale_factor=0.41),
               dict(size=(12, 64), align_corners=True)]:
        if mode == "lanczos" and "align_corners" in kw:
            continue
        for src in (x, xl):
            same(F.interpolate(src.to("npu"), mode=mode, antialias=antialias, **kw),
                 F.interpolate(src, mode=mode, antialias=antialias, **kw))


def test_interpolate_antialias_bad_inputs():
    x = rand(1, 2, 6, 8)
    raises_like_cpu(lambda t: F.interpolate(t.int(), size=(3, 3), mode="bilinear", antialias=True), x,
                    "not implemented for 'Int'")
    raises_like_cpu(lambda t: F.interpolate(t, size=(3, 3), mode="lanczos", antialias=True, align_corners=True), x,
                    "align_corners")
    raises_like_cpu(lambda t: torch.ops.aten._upsample_bicubic2d_aa(t, [0, 3], False, None, None), x,
                    "should be greater than 0")
    raises_like_cpu(lambda t: torch.ops.aten._upsample_bilinear2d_aa(t[0], [3, 3], False, None, None), x,
                    "expected input_size equals to 4")
    # uint8 linear in 1-D and 3-D has no CPU kernel either
    raises_like_cpu(lambda t: F.interpolate((t[0] * 10).to(torch.uint8), size=5, mode="linear"), x, "Byte")
    g = rand(1, 2, 3, 3).to("npu")
    with pytest.raises(RuntimeError, match="grad_output"):
        torch.ops.aten._upsample_lanczos2d_aa_backward(g, [4, 4], [1, 2, 6, 8], False, None, None)


def test_upsample_aa_out_variants():
    x = rand(1, 2, 13, 9)
    for op in (torch.ops.aten._upsample_bilinear2d_aa, torch.ops.aten._upsample_bicubic2d_aa,
               torch.ops.aten._upsample_lanczos2d_aa):
        out = torch.empty(5, 2, 4, 1, device="npu").permute(3, 1, 2, 0)  # non-contiguous: written through a copy
        op.out(x.to("npu"), [4, 5], False, None, None, out=out)
        same(out, op(x, [4, 5], False, None, None))
    g, gi = rand(1, 2, 4, 5), torch.empty(0, device="npu")
    torch.ops.aten._upsample_bicubic2d_aa_backward.grad_input(g.to("npu"), [4, 5], [1, 2, 13, 9], False, None, None,
                                                               grad_input=gi)
    same(gi, torch.ops.aten._upsample_bicubic2d_aa_backward(g, [4, 5], [1, 2, 13, 9], False, None, None))


INTERP_3D = [dict(size=(3, 7, 4)), dict(scale_factor=2.0), dict(scale_factor=(1.5, 0.5, 2.2)), dict(size=(4, 5, 6))]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("kw", INTERP_3D)
def test_interpolate_nearest_3d(dtype, mode, kw):
    fwd_bwd(lambda t: F.interpolate(t, mode=mode, **kw), rand(2, 3, 4, 5, 6, dtype=dtype))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_3d_uint8_and_out(mode):
    x = torch.randint(0, 255, (1, 2, 3, 4, 5), dtype=torch.uint8)
    same(F.interpolate(x.to("npu"), size=(5, 3, 8), mode=mode), F.interpolate(x, size=(5, 3, 8), mode=mode))
    op = torch._C._nn.upsample_nearest3d if mode == "nearest" else torch._C._nn._upsample_nearest_exact3d
    out = torch.empty(0, dtype=torch.uint8, device="npu")
    op(x.to("npu"), [2, 6, 3], None, None, None, out=out)
    same(out, op(x, [2, 6, 3], None, None, None))


PAD_3D = [(1, 2, 2, 1, 3, 1), (0, 0, 0, 0, 1, 2), (2, 0, 1, 1, 0, 0), (1, -1, 0, 2, -1, 1)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("pad", PAD_3D)
@pytest.mark.parametrize("batched", [True, False])
def test_pad_3d(dtype, mode, pad, batched):
    x = rand(2, 3, 4, 5, 6, dtype=dtype)
    fwd_bwd(lambda t: F.pad(t, pad, mode=mode), x if batched else x[0])


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.int16])
def test_pad_3d_integer_dtypes_and_out(mode, dtype):
    x = torch.randint(0, 100, (2, 3, 4, 5, 3)).to(dtype)
    same(F.pad(x.to("npu"), (1, 2, 0, 1, 2, 0), mode=mode), F.pad(x, (1, 2, 0, 1, 2, 0), mode=mode))
    op = torch._C._nn.reflection_pad3d if mode == "reflect" else torch._C._nn.replication_pad3d
    out = torch.empty(0, dtype=dtype, device="npu")
    op(x.to("npu"), [1, 1, 1, 1, 1, 1], out=out)
    same(out, op(x, [1, 1, 1, 1, 1, 1]))


def test_pad_3d_bad_inputs():
    x = rand(1, 2, 3, 4, 5)
    raises_like_cpu(lambda t: F.pad(t, (1, 1, 1, 1, 3, 3), mode="reflect"), x, "Padding size should be less than")
    raises_like_cpu(lambda t: F.pad(t, (-3, -3, 0, 0, 0, 0), mode="replicate"), x, "negative dimension")
    g = rand(1, 2, 3, 4, 5).to("npu")  # the unpadded shape: wrong for padding 1 on every side
    with pytest.raises(RuntimeError, match="grad_output"):
        torch.ops.aten.replication_pad3d_backward(g, x.to("npu"), [1, 1, 1, 1, 1, 1])
    with pytest.raises(RuntimeError):
        torch.ops.aten.reflection_pad3d_backward(g, x.to("npu"), [1, 1, 1, 1, 1, 1])


def test_upsample_out_variants():
    x = rand(1, 2, 3, 4)
    out = torch.empty(0, device="npu")
    torch._C._nn.upsample_bilinear2d(x.to("npu"), [5, 7], False, None, None, out=out)
    same(out, torch._C._nn.upsample_bilinear2d(x, [5, 7], False, None, None))


def raises_like_cpu(fn, x, match):
    with pytest.raises(Exception) as cpu_err:
        fn(x)
    with pytest.raises(type(cpu_err.value), match=match):
        fn(x.to("npu"))
        torch.npu.synchronize()


def test_interpolate_bad_inputs():
    x = rand(1, 2, 3, 4)
    raises_like_cpu(lambda t: torch._C._nn.upsample_nearest2d(t, [0, 3]), x, "should be greater than 0")
    raises_like_cpu(lambda t: torch._C._nn.upsample_bilinear2d(t, [5], False), x, "output_size")
    raises_like_cpu(lambda t: torch._C._nn.upsample_linear1d(t, [5], False), x, "expected input_size equals to 3")
    raises_like_cpu(lambda t: F.interpolate(t.long(), size=(5, 5)), x, "upsample_nearest2d.*Long")
    raises_like_cpu(lambda t: torch._C._nn.upsample_bilinear2d(t.long(), [5, 5], False), x, "upsample|Long")


PAD_1D = [(2, 1), (0, 3), (1, 0), (-1, 2)]
PAD_2D = [(1, 2, 2, 1), (0, 0, 3, 1), (2, 0, 0, 0), (1, 1, 1, 1)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("pad", PAD_1D)
@pytest.mark.parametrize("batched", [False, True])
def test_pad_1d(dtype, mode, pad, batched):
    shape = (2, 3, 6) if batched else (3, 6)
    fwd_bwd(lambda t: F.pad(t, pad, mode=mode), rand(*shape, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("pad", PAD_2D + [(-1, 2, 1, -1)])
@pytest.mark.parametrize("batched", [False, True])
def test_pad_2d(dtype, mode, pad, batched):
    shape = (2, 3, 5, 6) if batched else (3, 5, 6)
    fwd_bwd(lambda t: F.pad(t, pad, mode=mode), rand(*shape, dtype=dtype))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8, torch.complex64])
def test_pad_integer_dtypes(mode, dtype):
    x = torch.randint(0, 100, (2, 3, 4, 5)).to(dtype)
    if dtype.is_complex:
        x = x + 1j * torch.randint(0, 100, (2, 3, 4, 5))
    same(F.pad(x.to("npu"), (1, 2, 3, 1), mode=mode), F.pad(x, (1, 2, 3, 1), mode=mode))
    same(F.pad(x[0].to("npu"), (1, 2), mode=mode), F.pad(x[0], (1, 2), mode=mode))


def test_pad_non_contiguous_input_and_out():
    x = rand(2, 3, 6, 5).transpose(2, 3)
    same(F.pad(x.to("npu"), (1, 2, 2, 1), mode="reflect"), F.pad(x, (1, 2, 2, 1), mode="reflect"))
    out = torch.empty(0, device="npu")
    torch._C._nn.replication_pad2d(x.to("npu"), [1, 1, 2, 2], out=out)
    same(out, torch._C._nn.replication_pad2d(x, [1, 1, 2, 2]))


def test_pad_bad_inputs():
    x = rand(1, 2, 3, 4)
    raises_like_cpu(lambda t: F.pad(t, (4, 0, 0, 0), mode="reflect"), x, "Padding size should be less than")
    raises_like_cpu(lambda t: F.pad(t, (0, 0, 3, 0), mode="reflect"), x, "Padding size should be less than")
    raises_like_cpu(lambda t: F.pad(t[0, 0], (4, 0), mode="reflect"), x, "Padding size should be less than")
    raises_like_cpu(lambda t: F.pad(t.bool(), (1, 1, 1, 1), mode="replicate"), x, "replication_pad2d.*Bool")
    raises_like_cpu(lambda t: F.pad(t[0].bool(), (1, 1), mode="reflect"), x, "reflection_pad1d.*Bool")
    raises_like_cpu(lambda t: torch._C._nn.reflection_pad2d(t, [1, 1]), x, "padding size is expected to be 4")
    raises_like_cpu(lambda t: torch._C._nn.replication_pad2d(t, [1, 1]), x, "padding size is expected to be 4")
    raises_like_cpu(lambda t: torch._C._nn.reflection_pad2d(t.reshape(-1), [1, 1, 1, 1]), x, "3D or 4D")
    raises_like_cpu(lambda t: torch._C._nn.replication_pad1d(t, [1, 1]), x, "2D or 3D")


def test_backward_ops_bad_inputs():
    g = rand(1, 2, 6, 8)
    raises_like_cpu(lambda t: torch.ops.aten.upsample_nearest2d_backward(t, [5, 8], [1, 2, 3, 4]), g,
                    "grad_output")
    raises_like_cpu(lambda t: torch.ops.aten.upsample_bilinear2d_backward(t, [6, 8], [1, 2, 3], False), g,
                    "input_size")
    x = rand(1, 2, 3, 4)
    for op in (torch.ops.aten.reflection_pad2d_backward, torch.ops.aten.replication_pad2d_backward):
        raises_like_cpu(lambda t: op(t, x.to(t.device), [1, 1, 1, 1]), rand(1, 2, 4, 4), "(?i)grad_?output")
