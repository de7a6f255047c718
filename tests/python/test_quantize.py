"""Affine quantization on npu against CPU: quantize_per_tensor / per_channel into npu quantized tensors (qint8, quint8,
qint32), their codes (int_repr) bit for bit, dequantize, the scale / zero point accessors, copies both ways, views
and clones; CPU's errors; torch_npu.npu_quant_matmul (int8 GEMM accumulating in int32, then the dequantizing
epilogue) against an exact integer reference, batched and broadcast, with every scale / offset / bias form;
torch._int_mm; and quantization-aware training's fake quantization (per tensor / per channel, masks, gradients, the
FakeQuantize module) bit for bit."""
import re
import warnings

import pytest
import torch

import torch_npu_sim

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")  # PyTorch's deprecation notice

QTYPES = [torch.qint8, torch.quint8, torch.qint32]


def values(shape, seed=0, big=1e10):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen) * 3
    flat = x.view(-1)
    flat[:6] = torch.tensor([0.25, 0.35, -0.25, -0.35, big, -big])  # ties (half to even) and saturation
    return x


# qint32 saturation is not compared with CPU: its vector path converts x / scale > 2^31 to INT32_MIN (x86's overflow
# value); npu saturates to INT32_MAX as CUDA and CPU's scalar path do (test_nan_and_infinities)
BIG = {torch.qint32: 1e6}


def same_qtensor(got, want):
    assert got.is_quantized
    assert got.dtype == want.dtype and got.qscheme() == want.qscheme() and got.shape == want.shape
    assert torch.equal(got.int_repr().cpu(), want.int_repr()), (got.int_repr().cpu(), want.int_repr())
    torch.testing.assert_close(got.dequantize().cpu(), want.dequantize(), rtol=0, atol=0)
    if want.qscheme() == torch.per_tensor_affine:
        assert got.q_scale() == want.q_scale() and got.q_zero_point() == want.q_zero_point()
    else:
        assert got.q_per_channel_axis() == want.q_per_channel_axis()
        assert torch.equal(got.q_per_channel_scales().cpu(), want.q_per_channel_scales())
        assert torch.equal(got.q_per_channel_zero_points().cpu(), want.q_per_channel_zero_points())


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("scale,zero_point", [(0.1, 0), (0.037, 5), (2.5, -3)])
def test_quantize_per_tensor_matches_cpu(qtype, scale, zero_point, native_only):
    if qtype == torch.quint8:
        zero_point = abs(zero_point) + 100
    x = values((7, 9), big=BIG.get(qtype, 1e10))
    want = torch.quantize_per_tensor(x, scale, zero_point, qtype)
    got = torch.quantize_per_tensor(x.npu(), scale, zero_point, qtype)
    assert got.device.type == "npu" and got.is_quantized
    same_qtensor(got, want)
    # the tensor-parameter overload (a float32 scale tensor: 0.1 becomes 0.10000000149 on CPU too)
    scale_t, zp_t = torch.tensor(scale), torch.tensor(zero_point)
    same_qtensor(torch.quantize_per_tensor(x.npu(), scale_t.npu(), zp_t.npu(), qtype),
                 torch.quantize_per_tensor(x, scale_t, zp_t, qtype))


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_matches_cpu(qtype, axis, native_only):
    x = values((4, 5, 6), seed=axis, big=BIG.get(qtype, 1e10))
    channels = x.shape[axis]
    scales = torch.linspace(0.02, 0.3, channels, dtype=torch.float64)
    zps = torch.arange(channels) * (7 if qtype == torch.quint8 else -3) + (60 if qtype == torch.quint8 else 0)
    want = torch.quantize_per_channel(x, scales, zps, axis, qtype)
    got = torch.quantize_per_channel(x.npu(), scales.npu(), zps.npu(), axis, qtype)
    same_qtensor(got, want)
    assert got.q_per_channel_scales().device.type == "npu"  # the parameters live with the tensor (as on CUDA)


def test_copies_views_and_clones(native_only):
    x = values((6, 8))
    for want in (torch.quantize_per_tensor(x, 0.05, 3, torch.quint8),
                 torch.quantize_per_channel(x, torch.rand(8, dtype=torch.float64) + 0.01, torch.arange(8) - 4, 1,
                                            torch.qint8)):
        on_npu = want.npu()  # a CPU quantized tensor moved to the device
        same_qtensor(on_npu, want)
        back = on_npu.cpu()  # and back: a CPU quantized tensor with CPU parameters
        assert back.device.type == "cpu"
        same_qtensor(back, want)
        if want.qscheme() == torch.per_channel_affine:
            assert back.q_per_channel_scales().device.type == "cpu"
        same_qtensor(on_npu[2:5], want[2:5])      # a view (as_strided)
        same_qtensor(on_npu.clone(), want.clone())
        if want.qscheme() == torch.per_tensor_affine:  # (a per-channel view must keep its axis)
            same_qtensor(on_npu.view(6, 2, 4), want.view(6, 2, 4))
        assert "quantization_scheme" in repr(on_npu)
    t = torch.quantize_per_tensor(x, 0.05, 3, torch.quint8)
    same_qtensor(t.npu().t().contiguous(), t.t().contiguous())
    same_qtensor(t.npu()[:, ::2], t[:, ::2])


def test_make_quantized_tensor_from_codes(native_only):
    codes = torch.randint(-128, 128, (5, 4), dtype=torch.int8)
    want = torch._make_per_tensor_quantized_tensor(codes, 0.2, 7)
    got = torch._make_per_tensor_quantized_tensor(codes.npu(), 0.2, 7)
    same_qtensor(got, want)
    scales, zps = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), torch.tensor([0, 1, -1, 2])
    want = torch._make_per_channel_quantized_tensor(codes, scales, zps, 1)
    got = torch._make_per_channel_quantized_tensor(codes.npu(), scales.npu(), zps.npu(), 1)
    same_qtensor(got, want)


def test_nan_and_infinities():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    q = torch.quantize_per_tensor(x.npu(), 0.1, 2, torch.qint8).int_repr().cpu()
    # CUDA's rule: NaN converts to the smallest code (CPU's vector and scalar paths disagree: 127 or 0)
    assert q.tolist() == [-128, 127, -128, 12]
    big = torch.tensor([1e10, -1e10, 3e9, 2.0])
    q32 = torch.quantize_per_tensor(big.npu(), 1.0, 0, torch.qint32).int_repr().cpu()
    assert q32.tolist() == [2**31 - 1, -2**31, 2**31 - 1, 2]


def test_bad_arguments_raise_cpus_errors():
    x = torch.randn(4, 3)
    s3, z3 = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 0, 0])
    for bad in [lambda x: torch.quantize_per_tensor(x.double(), 0.1, 0, torch.qint8),
                lambda x: torch.quantize_per_tensor(x, 0.1, 300, torch.qint8),
                lambda x: torch.quantize_per_tensor(x, 0.1, -1, torch.quint8),
                lambda x: torch.quantize_per_channel(x, s3[:2].to(x.device), z3[:2].to(x.device), 1, torch.qint8),
                lambda x: torch.quantize_per_channel(x, s3.to(x.device), z3[:2].to(x.device), 1, torch.qint8),
                lambda x: torch.quantize_per_channel(x, s3.to(x.device), z3.to(x.device), 2, torch.qint8),
                lambda x: torch.quantize_per_channel(x, s3.to(x.device), (z3 + 900).to(x.device), 1, torch.quint8),
                lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).q_per_channel_scales()]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(x)
        with pytest.raises(RuntimeError) as npu_err:
            bad(x.npu())
        assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]
    with pytest.raises(NotImplementedError, match="quantize_tensor_per_tensor_affine: no npu kernel for quantized "
                                                  "dtype QUInt4x2"):
        torch.quantize_per_tensor(x.npu(), 0.1, 0, torch.quint4x2)
    with pytest.raises(NotImplementedError, match="no npu kernel for float zero points"):  # CPU: float qparams
        torch.quantize_per_channel(x.npu(), s3.npu(), z3.float().npu(), 1, torch.quint8)


# --- npu_quant_matmul ------------------------------------------------------------------------------------------

def int8(shape, seed):
    return torch.randint(-128, 128, shape, dtype=torch.int8, generator=torch.Generator().manual_seed(seed))


def reference(x1, x2, scale, offset=None, pertoken_scale=None, bias=None, output_dtype=None):
    """The exact int32 accumulator (int64 on CPU, no overflow at these sizes), then the epilogue in float64."""
    acc = torch.matmul(x1.long(), x2.long())
    if bias is not None and bias.dtype == torch.int32:
        v = (acc + bias.long().view(*bias.shape)).double() * scale.double()
    else:
        v = acc.double() * scale.double()
    if pertoken_scale is not None:
        v = v * pertoken_scale.double().unsqueeze(-1)
    if bias is not None and bias.dtype != torch.int32:
        v = v + bias.double()
    if offset is not None:
        v = v + offset.double()
    return v


def check_quant_matmul(got, ref, output_dtype):
    got = got.cpu()
    assert got.dtype == (output_dtype or torch.int8)
    if got.dtype == torch.int8:
        want = ref.round().clamp(-128, 127)
        near_tie = (ref - ref.floor() - 0.5).abs() < 1e-3  # float32 vs float64 epilogue may round a tie either way
        assert torch.equal(got.double()[~near_tie], want[~near_tie])
        assert ((got.double() - want).abs()[near_tie] <= 1).all()
    else:
        # float32 arithmetic (one rounding per step) against float64, then one rounding to the output dtype
        torch.testing.assert_close(got.double(), ref.to(got.dtype).double(), rtol=4 * torch.finfo(got.dtype).eps,
                                   atol=1e-5)


@pytest.mark.parametrize("output_dtype", [None, torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m,k,n", [(1, 64, 16), (37, 129, 70), (130, 256, 64)])
def test_quant_matmul_2d(output_dtype, m, k, n, native_only):
    x1, x2 = int8((m, k), 1), int8((k, n), 2)
    gen = torch.Generator().manual_seed(3)
    scale = torch.rand(n, generator=gen) * 1e-3
    offset = torch.randn(n, generator=gen) if output_dtype is None else None
    bias = torch.randint(-1000, 1000, (n,), dtype=torch.int32, generator=gen)
    kw = dict(offset=offset, bias=bias, output_dtype=output_dtype)
    got = torch_npu_sim.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(),
                                         **{a: (t.npu() if isinstance(t, torch.Tensor) else t) for a, t in kw.items()})
    check_quant_matmul(got, reference(x1, x2, scale, **kw), output_dtype)


def test_quant_matmul_batched_broadcast_transposed_pertoken_and_float_bias(native_only):
    x1 = int8((2, 1, 24, 48), 4)
    w = int8((3, 40, 48), 5)  # (batch, n, k) stored; x2 is its transpose (k, n): no copy
    x2 = w.transpose(-1, -2)
    scale = torch.tensor([0.003])  # one scale for every column
    token = torch.rand(24) + 0.5
    bias = torch.randn(40).to(torch.bfloat16)
    got = torch_npu_sim.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(), pertoken_scale=token.npu(), bias=bias.npu(),
                                         output_dtype=torch.bfloat16)
    assert got.shape == (2, 3, 24, 40)
    check_quant_matmul(got, reference(x1, x2, scale, pertoken_scale=token, bias=bias), torch.bfloat16)
    # a 3-D int32 bias (batch, 1, n)
    bias3 = torch.randint(-50, 50, (6, 1, 40), dtype=torch.int32)
    got = torch_npu_sim.npu_quant_matmul(x1.npu(), x2.npu(), scale.npu(), bias=bias3.npu(), output_dtype=torch.float32)
    ref = reference(x1, x2, scale, bias=bias3.view(2, 3, 1, 40))
    check_quant_matmul(got, ref, torch.float32)


def test_post_training_quantized_linear_layer(native_only):
    """The flow a PTQ tool (AMCT-style) produces: int8 weights per output channel, int8 activations per tensor,
    one int8 GEMM and a dequantizing scale; close to the float layer within the quantization error."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(256, 96)
    x = torch.randn(32, 256)
    w_scale = layer.weight.detach().abs().amax(1) / 127
    qw = torch.quantize_per_channel(layer.weight.detach().npu(), w_scale.double().npu(), torch.zeros(96, dtype=torch.long).npu(),
                                    0, torch.qint8)
    x_scale = x.abs().max().item() / 127
    qx = torch.quantize_per_tensor(x.npu(), x_scale, 0, torch.qint8)
    y = torch_npu_sim.npu_quant_matmul(qx.int_repr(), qw.int_repr().t(), (w_scale * x_scale).float().npu(),
                                       bias=layer.bias.detach().npu(), output_dtype=torch.float32)
    want = layer(x).detach()
    err = (y.cpu() - want).abs().max().item()
    assert err < 0.05 * want.abs().max().item(), err
    # and exactly what the integer reference says
    ref = reference(qx.int_repr().cpu(), qw.int_repr().cpu().t(), (w_scale * x_scale).float(), bias=layer.bias.detach())
    check_quant_matmul(y, ref, torch.float32)


def test_quant_matmul_bad_arguments():
    x1, x2, s = int8((4, 8), 0).npu(), int8((8, 5), 1).npu(), torch.ones(5).npu()
    cases = [(lambda: torch_npu_sim.npu_quant_matmul(x1.float(), x2, s), "x1 and x2 must be int8"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2[:7], s), "cannot be multiplied"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2, torch.ones(3).npu()), "scale must be 1-D with 1 or 5"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2, s.long()), "scale must be float32 or bfloat16"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2, s, output_dtype=torch.int32), "output_dtype must be"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2, s, bias=torch.ones(4, dtype=torch.int32).npu()),
              "bias must have shape"),
             (lambda: torch_npu_sim.npu_quant_matmul(x1, x2, s, pertoken_scale=torch.ones(5).npu()),
              "pertoken_scale must be 1-D with 4")]
    for call, message in cases:
        with pytest.raises(RuntimeError, match="npu_quant_matmul: .*" + message):
            call()


def test_int8_gemm_library_and_the_portable_loop_agree(fresh_python):
    code = """
        import torch, torch_npu_sim
        g = torch.Generator().manual_seed(0)
        x1 = torch.randint(-128, 128, (70, 300), dtype=torch.int8, generator=g)
        x2 = torch.randint(-128, 128, (300, 33), dtype=torch.int8, generator=g)
        y = torch_npu_sim.npu_quant_matmul(x1.npu(), x2.npu(), torch.tensor([0.5]).npu(), output_dtype=torch.float32)
        assert torch.equal(y.cpu(), (x1.long() @ x2.long()).float() * 0.5)
        print(torch_npu_sim._C._cube_kernels()["int8"])
    """
    onednn = fresh_python(code)
    assert onednn.returncode == 0, onednn.stderr
    own = fresh_python(code, env={"NPU_SIM_GEMM_DNNL": "0"})
    assert own.returncode == 0, own.stderr
    assert own.stdout.strip() == "own"
    # oneDNN's JIT int8 kernel serves the GEMM where the CPU has VNNI / AMX-INT8; without them (AVX2 only) its
    # kernel saturates 16-bit pair sums, and the exact loop serves
    from conftest import cpu_flags
    if cpu_flags() & {"avx512_vnni", "avx_vnni", "amx_int8"}:
        assert onednn.stdout.strip().startswith("onednn"), onednn.stdout
    else:
        assert onednn.stdout.strip() == "own", onednn.stdout


# ---- torch._int_mm and quantization-aware training's fake quantization ----------------------------------------------


@pytest.mark.parametrize("m,k,n", [(37, 70, 45), (1, 8, 1), (64, 256, 96)])
@pytest.mark.parametrize("self_dtype", [torch.int8, torch.uint8])
def test_int_mm_is_cpus_exact_int32_product(m, k, n, self_dtype, native_only):
    g = torch.Generator().manual_seed(m)
    lo = -128 if self_dtype == torch.int8 else 0
    a = torch.randint(lo, lo + 256, (m, k), dtype=self_dtype, generator=g)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8, generator=g)
    want = torch._int_mm(a, b)
    assert torch.equal(want, a.int() @ b.int())
    got = torch._int_mm(a.npu(), b.npu())
    assert got.dtype == torch.int32 and torch.equal(got.cpu(), want)
    # transposed operands (one unit stride each) and out=
    at, bt = a.t().contiguous().t().npu(), b.t().contiguous().t().npu()
    out = torch.empty(m, n, dtype=torch.int32, device="npu")
    torch._int_mm(at, bt, out=out)
    assert torch.equal(out.cpu(), want)


def test_int_mm_is_exact_beyond_float_precision_and_wraps_in_int32(native_only):
    # oneDNN's int8 kernel stores its sums through float32 (exact to 2^24); the sums here pass 2^24 (k = 70000)
    # and 2^31 (k = 140000, wrapping as CPU's int32 accumulator)
    for k in (1025, 70000, 140000):
        a, b = torch.full((2, k), 127, dtype=torch.int8), torch.full((k, 3), 127, dtype=torch.int8)
        a[0, :k // 3] = -128
        assert torch.equal(torch._int_mm(a.npu(), b.npu()).cpu(), torch._int_mm(a, b)), k
    z = torch._int_mm(torch.empty(4, 0, dtype=torch.int8).npu(), torch.empty(0, 5, dtype=torch.int8).npu())
    assert z.shape == (4, 5) and not z.cpu().any()  # an empty k: zeros


def test_int_mm_bad_arguments_raise_cpus_errors():
    a, b = torch.ones(4, 8, dtype=torch.int8), torch.ones(8, 3, dtype=torch.int8)
    for fn in [lambda x, y: torch._int_mm(x.float(), y), lambda x, y: torch._int_mm(x, y[:3]),
               lambda x, y: torch._int_mm(x[0], y), lambda x, y: torch._int_mm(x, y.to(torch.uint8)),
               lambda x, y: torch._int_mm(x, y, out=torch.empty(4, 3, device=x.device))]:
        with pytest.raises(RuntimeError) as cpu_err:
            fn(a, b)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_err.value).split(" but ")[0])):
            fn(a.npu(), b.npu())


FQ_FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def fq_values(dtype, shape=(4, 6, 5), seed=0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 3
    x.view(-1)[:4] = torch.tensor([0.25, 0.35, 1e4, -1e4])  # ties and values outside the grid (mask False)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", FQ_FLOATS)
def test_fake_quantize_per_tensor_matches_cpu_bit_for_bit(dtype, native_only):
    x = fq_values(dtype)
    for scale, zp, qmin, qmax in [(0.1, 3, 0, 127), (0.05, 0, -128, 127), (0.37, 100, 0, 255)]:
        want = torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)
        assert torch.equal(torch.fake_quantize_per_tensor_affine(x.npu(), scale, zp, qmin, qmax).cpu(), want)
        s, z = torch.tensor([scale]), torch.tensor([zp], dtype=torch.int32)  # FakeQuantize's tensor qparams
        want = torch.fake_quantize_per_tensor_affine(x, s, z, qmin, qmax)
        assert torch.equal(torch.fake_quantize_per_tensor_affine(x.npu(), s.npu(), z.npu(), qmin, qmax).cpu(), want)
        for enabled in (0, 1):  # the aten op with its mask, the enable flag read on the device
            op = torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams
            on = torch.tensor([enabled])
            got, want = op(x.npu(), s.npu(), z.npu(), on.npu(), qmin, qmax), op(x, s, z, on, qmin, qmax)
            assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])


@pytest.mark.parametrize("dtype", FQ_FLOATS)
@pytest.mark.parametrize("zp_dtype", [torch.int32, torch.float32, torch.float16])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_fake_quantize_per_channel_matches_cpu_bit_for_bit(dtype, zp_dtype, axis, native_only):
    x = fq_values(dtype)
    c = x.shape[axis]
    g = torch.Generator().manual_seed(axis)
    scale = torch.rand(c, generator=g) * 0.2 + 0.01
    zp = torch.randint(-3, 4, (c,), generator=g).to(zp_dtype) if zp_dtype == torch.int32 else \
        (torch.randn(c, generator=g) * 2).to(zp_dtype)
    want = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(x, scale, zp, axis, -128, 127)
    got = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(x.npu(), scale.npu(), zp.npu(), axis, -128, 127)
    assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])


def test_fake_quantize_non_finite_values_match_cpu(native_only):
    # inf and NaN: CPU's float -> int64 conversion gives INT64_MIN on x86 (clamped to quant_min), per channel too
    x = torch.tensor([[float("inf"), float("nan"), -float("inf"), 1.0]])
    s, zi, zf = torch.ones(1), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    for fn in (lambda t, *q: torch.fake_quantize_per_tensor_affine(t, 0.5, 3, -128, 127),
               lambda t, sc, z: torch.fake_quantize_per_channel_affine(t, sc, z, 0, -128, 127)):
        for z in (zi, zf):
            want = fn(x, s, z)
            assert torch.equal(fn(x.npu(), s.npu(), z.npu()).cpu(), want)


def test_fake_quantize_per_channel_bfloat16_scale_as_cuda(native_only):
    # CPU asserts internally on a bfloat16 scale; CUDA reads it as float: the float scale's result on CPU
    x, scale, zp = fq_values(torch.float32), (torch.rand(6) * 0.2 + 0.01).bfloat16(), torch.zeros(6, dtype=torch.int32)
    want = torch.fake_quantize_per_channel_affine(x, scale.float(), zp, 1, -128, 127)
    assert torch.equal(torch.fake_quantize_per_channel_affine(x.npu(), scale.npu(), zp.npu(), 1, -128, 127).cpu(), want)


def test_fake_quantize_gradients_and_channels_last_match_cpu(native_only):
    x = fq_values(torch.float32, shape=(2, 3, 4, 5)).contiguous(memory_format=torch.channels_last)
    xc, xn = x.clone().requires_grad_(), x.npu().requires_grad_()
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(7))
    scale, zp = torch.rand(3) * 0.1 + 0.01, torch.zeros(3, dtype=torch.int32)
    yc = torch.fake_quantize_per_channel_affine(xc, scale, zp, 1, -128, 127)
    yn = torch.fake_quantize_per_channel_affine(xn, scale.npu(), zp.npu(), 1, -128, 127)
    assert yn.is_contiguous(memory_format=torch.channels_last)  # CPU's MemoryFormat::Preserve
    assert torch.equal(yn.detach().cpu(), yc.detach())
    yc.backward(g)
    yn.backward(g.npu())
    assert torch.equal(xn.grad.cpu(), xc.grad)  # grad * mask: zero where the value left the grid


def test_qat_fake_quantize_modules_match_cpu(native_only):
    import torch.ao.quantization as tq
    fq_c = [tq.FakeQuantize(), tq.FakeQuantize(observer=tq.MovingAveragePerChannelMinMaxObserver,
                                               qscheme=torch.per_channel_symmetric, dtype=torch.qint8,
                                               quant_min=-128, quant_max=127, ch_axis=0)]
    fq_n = [tq.FakeQuantize().npu(), tq.FakeQuantize(observer=tq.MovingAveragePerChannelMinMaxObserver,
                                                     qscheme=torch.per_channel_symmetric, dtype=torch.qint8,
                                                     quant_min=-128, quant_max=127, ch_axis=0).npu()]
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(32, 16, generator=g), torch.randn(8, 16, generator=g)  # activations, a weight
    for step in range(3):  # the observers move their ranges; the fake-quantized tensors follow bit for bit
        a_c, w_c = fq_c[0](x + step), fq_c[1](w)
        a_n, w_n = fq_n[0](x.npu() + step), fq_n[1](w.npu())
        assert torch.equal(a_n.cpu(), a_c) and torch.equal(w_n.cpu(), w_c)
    assert torch.equal(fq_n[0].scale.cpu(), fq_c[0].scale) and torch.equal(fq_n[1].scale.cpu(), fq_c[1].scale)


def test_fake_quantize_bad_arguments_raise_cpus_errors():
    x, s, zi = torch.randn(3, 4), torch.rand(4) + 0.1, torch.zeros(4, dtype=torch.int32)
    calls = [lambda t: torch.fake_quantize_per_tensor_affine(t, 0.1, 0, 10, 5),
             lambda t: torch.fake_quantize_per_tensor_affine(t, 0.1, 300, 0, 255),
             lambda t: torch.fake_quantize_per_tensor_affine(t.long(), 0.1, 0, 0, 255),
             lambda t: torch.fake_quantize_per_channel_affine(t, s.to(t.device).double(), zi.to(t.device), 1, 0, 255),
             lambda t: torch.fake_quantize_per_channel_affine(t, s.to(t.device), zi.to(t.device).long(), 1, 0, 255),
             lambda t: torch.fake_quantize_per_channel_affine(t, s[:3].to(t.device), zi[:3].to(t.device), 1, 0, 255),
             lambda t: torch.fake_quantize_per_channel_affine(t, s.to(t.device), zi.to(t.device) + 300, 1, 0, 255),
             lambda t: torch.fake_quantize_per_tensor_affine(t, torch.ones(2).to(t.device),
                                                             torch.zeros(2, dtype=torch.int32).to(t.device), 0, 255)]
    for fn in calls:
        with pytest.raises(Exception) as cpu_err:
            fn(x)
        with pytest.raises(type(cpu_err.value)) as npu_err:
            fn(x.npu())
        assert str(npu_err.value).splitlines()[0].split("'")[0] == str(cpu_err.value).splitlines()[0].split("'")[0]


@pytest.mark.parametrize("per_channel", [False, True])
def test_fused_moving_average_observer_fake_quantize_matches_cpu(per_channel, native_only):
    # QAT's default fake quantizer (FusedMovingAvgObsFakeQuantize): the running range, the qparams and the
    # fake-quantized tensor bit for bit over steps, with the observer and then the fake quantization switched off
    import torch.ao.quantization as tq
    if per_channel:
        make = lambda: tq.FusedMovingAvgObsFakeQuantize(  # noqa: E731
            observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
            qscheme=torch.per_channel_symmetric, ch_axis=0)
        shape = (6, 3, 2, 2)  # a conv weight: channels first, the rest flattened per channel
    else:
        make = lambda: tq.FusedMovingAvgObsFakeQuantize()  # noqa: E731
        shape = (16, 10)
    fq_c, fq_n = make(), make().npu()
    g = torch.Generator().manual_seed(3)
    for step in range(5):
        if step == 3:
            fq_c.disable_observer(), fq_n.disable_observer()
        if step == 4:
            fq_c.disable_fake_quant(), fq_n.disable_fake_quant()
        x = torch.randn(shape, generator=g) * (1 + step)
        want, got = fq_c(x), fq_n(x.npu())
        assert torch.equal(got.cpu(), want), step
        for name in ("scale", "zero_point"):
            assert torch.equal(getattr(fq_n, name).cpu(), getattr(fq_c, name)), (step, name)
        obs_c, obs_n = fq_c.activation_post_process, fq_n.activation_post_process
        assert torch.equal(obs_n.min_val.cpu(), obs_c.min_val) and torch.equal(obs_n.max_val.cpu(), obs_c.max_val)


def test_qat_training_with_the_default_qconfig_stays_on_npu(native_only):
    import torch.ao.quantization as tq
    torch.manual_seed(0)

    def model():
        m = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        m.qconfig = tq.get_default_qat_qconfig("x86")
        return tq.prepare_qat(m.train())

    m_c = model()
    m_n = model()
    m_n.load_state_dict(m_c.state_dict())
    m_n = m_n.npu()
    opt_c, opt_n = torch.optim.SGD(m_c.parameters(), lr=0.05), torch.optim.SGD(m_n.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        x, y = torch.randn(32, 12, generator=g), torch.randn(32, 4, generator=g)
        for m, opt, xx, yy in ((m_c, opt_c, x, y), (m_n, opt_n, x.npu(), y.npu())):
            opt.zero_grad()
            torch.nn.functional.mse_loss(m(xx), yy).backward()
            opt.step()
    for (name, p_c), p_n in zip(m_c.state_dict().items(), m_n.state_dict().values()):
        torch.testing.assert_close(p_n.cpu(), p_c, rtol=1e-4, atol=1e-4, msg=name)


def test_fused_moving_average_observer_bad_axes_raise():
    # CPU's check of the axis, and per channel a negative axis refused (CPU indexes out of bounds with one)
    op = torch.ops.aten._fused_moving_avg_obs_fq_helper
    x = torch.randn(4, 3).npu()
    on, state = torch.ones(1, dtype=torch.long).npu(), [torch.empty(0).npu() for _ in range(3)]
    zp = torch.empty(0, dtype=torch.int32).npu()
    with pytest.raises(RuntimeError, match="ch_axis must be < self.dim"):
        op(x, on, on, *state[:2], state[2], zp, 0.01, -128, 127, 2, True, True)
    with pytest.raises(RuntimeError, match="non-negative ch_axis"):
        op(x, on, on, *state[:2], state[2], zp, 0.01, -128, 127, -1, True, True)
    with pytest.raises(RuntimeError, match="only supported on axis == 0"):  # observing per channel: axis 0 only
        op(x, on, on, *state[:2], state[2], zp, 0.01, -128, 127, 1, True, True)
