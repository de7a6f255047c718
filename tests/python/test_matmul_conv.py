"""The Cube-unit ops on npu (matmul family and convolution), forward and backward, against CPU PyTorch:
dtypes, transposed / non-contiguous / batched operands, alpha and beta, conv1d / conv2d /
conv_transpose2d with groups, stride, padding, dilation, errors, and no CPU fallback for these ops."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim
from conftest import acknowledge_device_error, cpu_flags

FLOAT_TYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
CUBE_OP_WORDS = ("mm", "mv", "dot", "conv", "matmul", "linear", "einsum")


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(shape, generator=g).to(dtype)


def tolerances(dtype, k=1):
    """(rtol, atol) for a result of k-term dot products in `dtype` against a float64 reference."""
    scale = max(1.0, math.sqrt(k))
    return {torch.float32: (1e-5, 2e-5 * scale), torch.float64: (1e-12, 1e-12 * scale),
            torch.float16: (2e-3, 2e-3 * scale), torch.bfloat16: (1.6e-2, 1.6e-2 * scale)}[dtype]


def check(npu_result, cpu_fn, *cpu_args, k=1, dtype=None):
    """Compares an npu result with cpu_fn evaluated in float64 on the same (rounded) inputs."""
    ref = cpu_fn(*[a.double() if isinstance(a, torch.Tensor) else a for a in cpu_args])
    dtype = dtype or npu_result.dtype
    assert npu_result.device.type == "npu" and npu_result.dtype == dtype
    rtol, atol = tolerances(dtype, k)
    torch.testing.assert_close(npu_result.cpu().double(), ref, rtol=rtol, atol=atol)


def cube_fallbacks():
    return {op: n for op, n in torch_npu_sim.fallback_ops().items() if any(w in op for w in CUBE_OP_WORDS)}


@pytest.fixture(autouse=True)
def _no_cube_fallback():
    torch_npu_sim.reset_fallback_ops()
    yield
    assert cube_fallbacks() == {}


# ---- matmul family: forward ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 3), (130, 67, 201), (257, 300, 9)])
def test_mm_sizes_and_dtypes(dtype, m, k, n):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype, seed=1)
    check(torch.mm(a.npu(), b.npu()), torch.mm, a, b, k=k)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_mm_transposed_and_strided_views(dtype):
    a, b = rand(40, 33, dtype=dtype), rand(50, 40, dtype=dtype, seed=1)
    an, bn = a.npu(), b.npu()
    check(an.t() @ bn.t(), lambda x, y: x.t() @ y.t(), a, b, k=40)
    check(an[::2, 1::3] @ bn[:11, ::4], lambda x, y: x[::2, 1::3] @ y[:11, ::4], a, b, k=11)
    out = torch.empty(66, 40, dtype=dtype).npu()[::2, :33]  # non-contiguous out= of the right shape
    torch.mm(an.t(), an, out=out)
    check(out, lambda x: x.t() @ x, a, k=40)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_bmm_baddbmm_addbmm(dtype):
    b1, b2 = rand(4, 17, 23, dtype=dtype), rand(4, 23, 19, dtype=dtype, seed=2)
    s = rand(17, 19, dtype=dtype, seed=3)
    check(torch.bmm(b1.npu(), b2.npu()), torch.bmm, b1, b2, k=23)
    check(torch.bmm(b1.npu().transpose(1, 2).contiguous().transpose(1, 2), b2.npu()[:, :, ::2]),
          lambda x, y: torch.bmm(x, y[:, :, ::2]), b1, b2, k=23)
    check(torch.baddbmm(s.npu(), b1.npu(), b2.npu(), beta=0.5, alpha=-2.0),
          lambda x, y, z: torch.baddbmm(x, y, z, beta=0.5, alpha=-2.0), s, b1, b2, k=23)
    check(torch.addbmm(s.npu(), b1.npu(), b2.npu(), beta=2.0, alpha=0.25),
          lambda x, y, z: torch.addbmm(x, y, z, beta=2.0, alpha=0.25), s, b1, b2, k=4 * 23)
    # batch broadcast through expand (stride 0), as matmul does
    w = rand(23, 19, dtype=dtype, seed=4)
    check(torch.bmm(b1.npu(), w.npu().expand(4, 23, 19)), lambda x, y: torch.bmm(x, y.expand(4, 23, 19)), b1, w, k=23)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_addmm_alpha_beta_and_inplace(dtype):
    a, b = rand(12, 30, dtype=dtype), rand(30, 9, dtype=dtype, seed=1)
    bias, full = rand(9, dtype=dtype, seed=2), rand(12, 9, dtype=dtype, seed=3)
    check(torch.addmm(bias.npu(), a.npu(), b.npu()), torch.addmm, bias, a, b, k=30)
    check(torch.addmm(full.npu(), a.npu(), b.npu(), beta=-1.5, alpha=3.0),
          lambda s, x, y: torch.addmm(s, x, y, beta=-1.5, alpha=3.0), full, a, b, k=30)
    t = full.npu()
    t.addmm_(a.npu(), b.npu(), beta=0.5, alpha=2.0)
    check(t, lambda s, x, y: torch.addmm(s, x, y, beta=0.5, alpha=2.0), full, a, b, k=30)
    out = torch.empty(0, dtype=dtype).npu()
    torch.addmm(bias.npu(), a.npu(), b.npu(), out=out)
    check(out, torch.addmm, bias, a, b, k=30)
    # Cin read with a column stride other than 1 (a column broadcast, a transposed matrix): the element loop;
    # a bias row (column stride 1) is copied by rows
    col, full_t = rand(12, 1, dtype=dtype, seed=4), rand(9, 12, dtype=dtype, seed=5)
    check(torch.addmm(col.npu(), a.npu(), b.npu()), torch.addmm, col, a, b, k=30)
    check(torch.addmm(full_t.npu().t(), a.npu(), b.npu(), beta=2.0),
          lambda s, x, y: torch.addmm(s.t(), x, y, beta=2.0), full_t, a, b, k=30)


CUBE_CASES = """
import torch, torch_npu_sim
DT, KERNEL = torch.@DTYPE@, "@KERNEL@"
def rnd(*shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(DT)
a, b, bias = rnd(300, 520, seed=1), rnd(520, 260, seed=2), rnd(300, 260, seed=3)
x, y = rnd(3, 70, 90, seed=4), rnd(3, 90, 50, seed=5)
outs = {
    "mm": torch.mm(a.npu(), b.npu()),
    "mm_tt": torch.mm(a.t().contiguous().npu().t(), b.t().contiguous().npu().t()),
    "addmm": torch.addmm(bias.npu(), a.npu(), b.npu(), beta=0.5, alpha=2.0),
    "bmm": torch.bmm(x.npu(), y.npu()),
    "linear": torch.nn.functional.linear(a.npu(), b.t().npu(), bias[0].npu()),
}
refs = {
    "mm": a.double() @ b.double(),
    "mm_tt": a.double() @ b.double(),
    "addmm": 0.5 * bias.double() + 2.0 * (a.double() @ b.double()),
    "bmm": x.double() @ y.double(),
    "linear": a.double() @ b.double() + bias[0].double(),
}
print(torch_npu_sim._C._cube_kernels()[KERNEL])
for name, out in outs.items():
    out = out.cpu()
    # fp32 accumulation rounded once: nearly every element is the exact product rounded to the 16-bit type (a
    # 16-bit accumulator or a second rounding would miss most of them)
    exact = (out == refs[name].to(DT)).double().mean().item()
    print(name, exact, (out.double() - refs[name]).abs().div(refs[name].abs().clamp_min(1.0)).max().item())
"""


def check_cube_rounds_once(dtype, env, units, half_ulp):
    """CUBE_CASES in `dtype` under `env`: the library oneDNN or "none" ("none" with an env that turns oneDNN off;
    oneDNN on a CPU with one of the matrix `units`), and nearly every element the exact product rounded once."""
    from conftest import run_python
    r = run_python(CUBE_CASES.replace("@DTYPE@", dtype).replace("@KERNEL@", dtype), env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    if env:
        assert lines[0] == "none", lines[0]
    elif cpu_flags() & units:
        assert lines[0].startswith("onednn "), lines[0]
    else:
        assert lines[0] == "none" or lines[0].startswith("onednn "), lines[0]
    for line in lines[1:]:
        name, exact, err = line.split()
        assert float(exact) >= 0.97, line
        assert float(err) <= half_ulp * 1.05, line  # relative


@pytest.mark.parametrize("env", [{}, {"NPU_SIM_GEMM_DNNL": "0"}], ids=["onednn", "staged"])
def test_bf16_cube_rounds_once_on_onednn_and_on_its_staged_fallback(env):
    """bf16 GEMMs run on oneDNN (installed by scripts/install.sh) wherever it has a JIT bf16 kernel: always on a
    CPU with AVX512-BF16 or AMX-BF16. NPU_SIM_GEMM_DNNL=0 forces the portable staged path that CPUs without
    them take (an AVX2-only CPU: the library is then "none"). Both accumulate in fp32 and round once."""
    check_cube_rounds_once("bfloat16", env, {"avx512_bf16", "amx_bf16"}, 2.0 ** -8)  # half a bf16 ulp


@pytest.mark.parametrize("env", [{}, {"NPU_SIM_GEMM_DNNL_F16": "0"}, {"NPU_SIM_GEMM_DNNL": "0"},
                                 {"NPU_SIM_GEMM_DNNL": "0", "NPU_SIM_GEMM_BLAS": "0"}],
                         ids=["default", "via-fp32-onednn", "via-fp32-openblas", "staged"])
def test_fp16_cube_rounds_once_on_every_path(env):
    """fp16 GEMMs: oneDNN's fp16 kernel where the CPU has an fp16 matrix unit (AVX512-FP16 / AMX-FP16; the
    "float16" library names it), else the operands widened to fp32 for the fp32 library (oneDNN, or OpenBLAS
    with NPU_SIM_GEMM_DNNL=0), else (no library) the staged UB panels. Every path accumulates in fp32 and rounds
    once."""
    check_cube_rounds_once("float16", env, {"avx512_fp16", "amx_fp16"}, 2.0 ** -11)  # half an fp16 ulp


def test_each_type_runs_on_onednn_only_where_its_kernel_serves():
    """oneDNN serves each GEMM type and convolution on its own. An AVX2-only CPU has no JIT bf16 kernel, and
    that must not take convolution off oneDNN (it did: one bf16 probe gated every type). fp32 GEMM runs on its
    brgemm kernels (AVX-512 and up; AVX2's lost to OpenBLAS), int8 only where the kernel is exact (VNNI /
    AMX-INT8: AVX2's saturates 16-bit pair sums). NPU_SIM_GEMM_DNNL=0 turns it off for all."""
    from conftest import run_python
    code = "import torch_npu_sim\nfor k, v in sorted(torch_npu_sim._C._cube_kernels().items()): print(k, '=', v)"
    libs = {}
    for key, env in (("on", {}), ("off", {"NPU_SIM_GEMM_DNNL": "0"})):
        r = run_python(code, env=env)
        assert r.returncode == 0, r.stderr
        libs[key] = dict(line.split(" = ", 1) for line in r.stdout.strip().splitlines())
    on, off, flags = libs["on"], libs["off"], cpu_flags()
    assert on["conv"].startswith("onednn "), on
    assert on["float32"].startswith("onednn ") if "avx512f" in flags else on["float32"] == "none", on
    assert on["int8"].startswith("onednn ") if flags & {"avx512_vnni", "avx_vnni", "amx_int8"} \
        else on["int8"] == "own", on
    assert all(off[k] == "none" for k in ("float32", "bfloat16", "float16", "conv")) and off["int8"] == "own", off


PANEL_CASES = """
import torch, torch.nn.functional as F, torch_npu_sim
print(torch_npu_sim._C._cube_kernels()["panels"])
g = torch.Generator().manual_seed(0)
# the tile layer's Mmad (LinearAddGelu: tails in M, N and K, several K steps) and the grouped matmul's small
# groups (libxsmm in place, else the packed tiles), against CPU float64
x, w, b = torch.randn(150, 600, generator=g), torch.randn(600, 200, generator=g) / 25, torch.randn(200, generator=g)
got = torch_npu_sim.npu_linear_add_gelu(x.npu(), w.npu(), b.npu()).cpu().double()
want = F.gelu(x.double() @ w.double() + b.double())
print("linear_add_gelu", (got - want).abs().max().item())
counts = [5, 0, 17, 40, 3]
xs, ws = torch.randn(sum(counts), 96, generator=g), torch.randn(5, 96, 130, generator=g)
(y,) = torch_npu_sim.npu_grouped_matmul([xs.npu()], [ws.npu()], group_list=torch.tensor(counts).cumsum(0).npu(),
                                        split_item=2)
want = torch.cat([xs[r - c:r].double() @ ws[e].double() for e, (c, r) in
                  enumerate(zip(counts, torch.tensor(counts).cumsum(0).tolist()))])
print("grouped_matmul", (y.cpu().double() - want).abs().max().item())
"""


@pytest.mark.parametrize("env,library", [({}, "libxsmm "), ({"NPU_SIM_GEMM_XSMM": "0"}, "openblas"),
                                         ({"NPU_SIM_GEMM_XSMM": "0", "NPU_SIM_GEMM_BLAS": "0"}, "own")],
                         ids=["libxsmm", "openblas", "portable"])
def test_cube_panels_on_libxsmm_and_on_its_fallbacks(env, library):
    """The fp32 micro-kernel of the Cube's tiles runs on libxsmm (installed by scripts/install.sh);
    NPU_SIM_GEMM_XSMM=0 forces OpenBLAS, and NPU_SIM_GEMM_BLAS=0 as well the portable loop, as on a machine
    without them. Every path gives the float64 result to fp32 accuracy."""
    from conftest import run_python
    r = run_python(PANEL_CASES, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith(library), lines[0]
    assert ("libxsmm" in lines[0]) == (library == "libxsmm "), lines[0]
    for line in lines[1:]:
        name, err = line.split()
        assert float(err) <= 1e-4, line


def test_beta_zero_ignores_nan():
    a, b = rand(6, 5), rand(5, 4, seed=1)
    nan = torch.full((6, 4), float("nan"))
    check(torch.addmm(nan.npu(), a.npu(), b.npu(), beta=0), torch.mm, a, b, k=5)
    t3 = nan[None].npu()
    t3.baddbmm_(a.npu()[None], b.npu()[None], beta=0)
    check(t3, lambda x, y: torch.bmm(x[None], y[None]), a, b, k=5)


def test_aliasing_out_is_an_input():
    a = rand(8, 8)
    an = a.npu()
    torch.mm(an, an, out=an)
    check(an, lambda x: x @ x, a, k=8)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_mv_addmv_dot_vdot(dtype):
    m, v, s = rand(33, 70, dtype=dtype), rand(70, dtype=dtype, seed=1), rand(33, dtype=dtype, seed=2)
    check(torch.mv(m.npu(), v.npu()), torch.mv, m, v, k=70)
    check(torch.mv(m.npu().t(), s.npu()), lambda x, y: torch.mv(x.t(), y), m, s, k=33)
    check(torch.addmv(s.npu(), m.npu(), v.npu(), beta=0.5, alpha=2), lambda a, b, c: torch.addmv(a, b, c, beta=0.5, alpha=2),
          s, m, v, k=70)
    out = torch.empty(0, dtype=dtype).npu()
    torch.mv(m.npu(), v.npu(), out=out)
    check(out, torch.mv, m, v, k=70)
    check(torch.dot(v.npu(), v.flip(0).npu()), lambda x: torch.dot(x, x.flip(0)), v, k=70)
    check(torch.vdot(v.npu()[::2], v.npu()[1::2]), lambda x: torch.vdot(x[::2], x[1::2]), v, k=35)


def test_composites_route_to_native_ops():
    x, w, bias = rand(5, 6, 16), rand(8, 16, seed=1), rand(8, seed=2)
    check(F.linear(x.npu(), w.npu(), bias.npu()), F.linear, x, w, bias, k=16)
    check(F.linear(x[0].npu(), w.npu(), bias.npu()), F.linear, x[0], w, bias, k=16)
    check(torch.matmul(x.npu(), w.npu().t()), lambda p, q: p @ q.t(), x, w, k=16)
    check(torch.einsum("bij,kj->bik", x.npu(), w.npu()), lambda p, q: torch.einsum("bij,kj->bik", p, q), x, w, k=16)
    check(x[0, 0].npu() @ w[0].npu(), lambda p, q: p @ q, x[0, 0], w[0], k=16)


def test_empty_and_zero_k():
    a, b = torch.empty(3, 0), torch.empty(0, 4)
    assert torch.equal(torch.mm(a.npu(), b.npu()).cpu(), torch.zeros(3, 4))
    assert torch.mm(torch.empty(0, 5).npu(), rand(5, 2).npu()).shape == (0, 2)
    s = rand(3, 4)
    check(torch.addmm(s.npu(), a.npu(), b.npu(), beta=2), lambda x: 2 * x, s)


# ---- matmul family: backward -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_matmul_linear_backward(dtype):
    x, w, bias = rand(4, 7, 12, dtype=dtype), rand(9, 12, dtype=dtype, seed=1), rand(9, dtype=dtype, seed=2)

    def run(device):
        xs, ws, bs = (t.to(device).requires_grad_() for t in (x, w, bias))
        y = F.linear(xs, ws, bs)
        z = torch.bmm(y, y.transpose(1, 2))
        z.backward(torch.ones_like(z))
        return [t.grad.cpu().double() for t in (xs, ws, bs)]

    rtol, atol = tolerances(dtype, 200)
    for got, ref in zip(run("npu"), run("cpu")):
        torch.testing.assert_close(got, ref, rtol=rtol * 4, atol=atol * 4)


def test_addmm_backward_float32():
    s, a, b = rand(6, 5), rand(6, 8, seed=1), rand(8, 5, seed=2)
    grads = []
    for device in ("npu", "cpu"):
        ts = [t.to(device).requires_grad_() for t in (s, a, b)]
        torch.addmm(*ts, beta=0.5, alpha=2).pow(2).sum().backward() if device == "cpu" else \
            (torch.addmm(*ts, beta=0.5, alpha=2) * torch.addmm(*ts, beta=0.5, alpha=2).detach()).sum().mul(2).backward()
        grads.append([t.grad.cpu() for t in ts])
    for got, ref in zip(*grads):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-4)


# ---- matmul family: errors -------------------------------------------------------------------------------
def test_errors_shape_dtype_device():
    a, b = rand(3, 4).npu(), rand(5, 6).npu()
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x6\)"):
        torch.mm(a, b)
    with pytest.raises(RuntimeError, match="expected all operands to have dtype Float, but got Double"):
        torch.mm(a, rand(4, 2).double().npu())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*npu:0 and cpu"):
        torch.mm(a, rand(4, 2))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*npu:0 and npu:1"):
        torch.mm(a, rand(4, 2).to("npu:1"))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(a, a)
    with pytest.raises(RuntimeError, match="size mismatch"):
        torch.mv(a, rand(5).npu())
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(a, a)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(rand(3).npu(), rand(4).npu())
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype"):
        torch.dot(rand(3).npu(), rand(3).double().npu())
    with pytest.raises(NotImplementedError, match="mm: the npu Cube unit has no kernel for dtype Long"):
        torch.mm(torch.ones(2, 2, dtype=torch.long).npu(), torch.ones(2, 2, dtype=torch.long).npu())
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype Float, but got Double"):
        torch.mm(a, rand(4, 2).npu(), out=torch.empty(3, 2, dtype=torch.float64).npu())


# ---- convolution ---------------------------------------------------------------------------------------
CONV2D_CASES = [  # (N, C, H, W, O, kernel, stride, padding, dilation, groups, bias)
    (2, 3, 9, 11, 4, (3, 3), 1, 1, 1, 1, True),
    (3, 4, 10, 7, 6, (3, 2), (2, 1), (0, 1), 1, 2, False),
    (1, 6, 12, 12, 6, (3, 3), 2, 2, 2, 6, True),
    (2, 8, 13, 13, 16, (1, 1), 1, 0, 1, 1, False),
    (2, 4, 15, 14, 8, (5, 3), 3, (2, 1), (1, 2), 4, True),
]


def conv_grads(fn, device, tensors):
    ts = [None if t is None else t.to(device).requires_grad_() for t in tensors]
    y = fn(*ts)
    g = rand(*y.shape, dtype=y.dtype, seed=7).to(device)
    y.backward(g)
    return y.detach().cpu(), [None if t is None else t.grad.cpu() for t in ts]


def compare_conv(fn, tensors, dtype, k):
    y_npu, g_npu = conv_grads(fn, "npu", [None if t is None else t.to(dtype) for t in tensors])
    y_ref, g_ref = conv_grads(fn, "cpu", [None if t is None else t.to(dtype).double() for t in tensors])
    # Gradients reduce over more terms (batch x positions), so they get a looser scale.
    rtol, atol = tolerances(dtype, k)
    assert y_npu.dtype == dtype
    torch.testing.assert_close(y_npu.double(), y_ref, rtol=rtol, atol=atol)
    grtol, gatol = tolerances(dtype, k * 50)
    for got, ref in zip(g_npu, g_ref):
        if ref is not None:
            torch.testing.assert_close(got.double(), ref, rtol=grtol, atol=gatol)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_forward_backward(dtype, case):
    n, c, h, w, o, ks, stride, padding, dilation, groups, has_bias = case
    x, wt = rand(n, c, h, w), rand(o, c // groups, *ks, seed=1)
    b = rand(o, seed=2) if has_bias else None
    fn = lambda x_, w_, b_: F.conv2d(x_, w_, b_, stride=stride, padding=padding, dilation=dilation, groups=groups)
    compare_conv(fn, [x, wt, b], dtype, k=(c // groups) * ks[0] * ks[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_conv2d_non_contiguous_and_channels_last(dtype):
    x = rand(2, 5, 11, 9).to(memory_format=torch.channels_last)
    wt = rand(4, 5, 3, 3, seed=1).transpose(2, 3)
    fn = lambda x_, w_: F.conv2d(x_, w_, padding=1)
    compare_conv(fn, [x, wt], dtype, k=45)
    xs = rand(2, 5, 22, 9)[:, :, ::2]
    compare_conv(lambda x_, w_: F.conv2d(x_, w_, stride=2), [xs, wt], dtype, k=45)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("stride,padding,dilation,groups,bias", [(1, 0, 1, 1, True), (2, 3, 2, 2, False),
                                                                 (3, 1, 1, 4, True)])
def test_conv1d(dtype, stride, padding, dilation, groups, bias):
    x, wt = rand(3, 8, 29), rand(12, 8 // groups, 5, seed=1)
    b = rand(12, seed=2) if bias else None
    fn = lambda x_, w_, b_: F.conv1d(x_, w_, b_, stride=stride, padding=padding, dilation=dilation, groups=groups)
    compare_conv(fn, [x, wt, b], dtype, k=5 * 8 // groups)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups,bias", [
    (1, 0, 0, 1, 1, True), (2, 1, 1, 1, 2, False), (3, 2, 1, 2, 1, True), ((2, 1), (1, 0), (1, 0), 1, 3, True)])
def test_conv_transpose2d(dtype, stride, padding, output_padding, dilation, groups, bias):
    x, wt = rand(2, 6, 7, 8), rand(6, 9 // groups * 1 if groups != 2 else 4, 3, 3, seed=1)
    b = rand(wt.shape[1] * groups, seed=2) if bias else None
    fn = lambda x_, w_, b_: F.conv_transpose2d(x_, w_, b_, stride=stride, padding=padding,
                                               output_padding=output_padding, groups=groups, dilation=dilation)
    compare_conv(fn, [x, wt, b], dtype, k=6 * 9)


def test_conv_modules_and_no_fallback():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 8, 3, groups=2, stride=2),
                                torch.nn.ConvTranspose2d(8, 4, 2, stride=2))
    x = rand(2, 3, 16, 16)
    ref = model(x)
    got = model.to("npu")(x.npu())
    torch.testing.assert_close(got.cpu(), ref, rtol=1e-4, atol=1e-4)
    got.sum().backward()
    assert cube_fallbacks() == {}


def test_conv_errors():
    x, wt = rand(1, 4, 8, 8).npu(), rand(6, 4, 3, 3).npu()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*npu:0 and cpu"):
        torch.ops.aten.convolution_overrideable(x, wt.cpu(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(RuntimeError, match="expected weight to have dtype Float, but got Double"):
        torch.ops.aten.convolution_overrideable(x, wt.double(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(RuntimeError):
        F.conv2d(x, rand(6, 3, 3, 3).npu())  # channel mismatch (torch's own shape check)


CONV_PATH_CASES = """
import torch, torch.nn.functional as F, torch_npu_sim
def rnd(*shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))
# (batch, C, O, hw, kernel, stride, padding, dilation, groups): image and channel slices, grouped, strided
cases = [(4, 16, 32, 9, 3, 1, 1, 1, 1), (1, 32, 48, 8, 3, 2, 1, 1, 1), (3, 8, 12, 7, 3, 1, 2, 2, 4),
         (2, 6, 5, 11, (1, 5), (2, 1), (0, 2), 1, 1)]
worst = {}
with torch_npu_sim.record_launches() as rec:
    for dtype in (torch.float32, torch.bfloat16):
        for i, (n, c, o, hw, k, st, pad, dil, g) in enumerate(cases):
            kh, kw = (k, k) if isinstance(k, int) else k
            x, w, b = rnd(n, c, hw, hw, seed=i).to(dtype), rnd(o, c // g, kh, kw, seed=i + 9).to(dtype), rnd(o, seed=i).to(dtype)
            xs, ws, bs = (t.double().requires_grad_() for t in (x, w, b))  # float64 truth on the same inputs
            xn, wn, bn = (t.npu().requires_grad_() for t in (x, w, b))
            ref = F.conv2d(xs, ws, bs, st, pad, dil, g)
            out = F.conv2d(xn, wn, bn, st, pad, dil, g)
            gy = rnd(*ref.shape, seed=i + 5).to(dtype)
            ref.backward(gy.double())
            out.backward(gy.npu())
            # transposed convolution with bias: backward-input of the forward sense plus a per-channel bias
            bt = rnd(c, seed=i + 3).to(dtype)
            tr_ref = F.conv_transpose2d(gy.double(), w.double(), bt.double(), st, pad, groups=g, dilation=dil)
            tr = F.conv_transpose2d(gy.npu(), w.npu(), bt.npu(), st, pad, groups=g, dilation=dil)
            for name, got, want in (("fwd", out, ref), ("grad_x", xn.grad, xs.grad), ("grad_w", wn.grad, ws.grad),
                                    ("transposed", tr, tr_ref)):
                err = ((got.cpu().double() - want.double()).abs() / (1 + want.double().abs())).max().item()
                key = f"{str(dtype)[6:]}.{name}"
                worst[key] = max(worst.get(key, 0.0), err)
print(" ".join(sorted({r["kernel"] for r in rec.records if r["kernel"].startswith("conv2d")})))
for k, v in worst.items():
    print(k, v)
"""


@pytest.mark.parametrize("env", [{}, {"NPU_SIM_CONV_DNNL": "0"}], ids=["onednn", "tiled"])
def test_conv2d_on_onednn_and_on_the_tiled_path(env):
    """float32 / bfloat16 conv2d runs on oneDNN (image and channel slices per AI-core thread, grouped,
    strided, dilated, transposed with bias); NPU_SIM_CONV_DNNL=0 keeps the tiled implicit-im2col path. Both
    match float64 CPU results."""
    from conftest import run_python
    r = run_python(CONV_PATH_CASES, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    kernels = set(lines[0].split())
    onednn = {"conv2d_forward_onednn", "conv2d_backward_input_onednn", "conv2d_backward_weight_onednn"}
    if env:
        assert not kernels & onednn, kernels
    else:
        assert onednn <= kernels, kernels
    for line in lines[1:]:
        key, err = line.split()
        # float32: sums of up to ~300 terms; bfloat16: inputs exact, fp32 accumulation, one rounding (2^-8)
        assert float(err) <= (5e-5 if key.startswith("float32") else 2.0 ** -8 * 1.1), line


CONV3D_CASES = [  # (batch, C, O, dhw, kernel, stride, padding, dilation, groups)
    (2, 3, 4, (5, 6, 7), 3, 1, 1, 1, 1), (1, 4, 6, (6, 5, 5), (1, 3, 2), (2, 1, 1), (0, 1, 1), 1, 1),
    (3, 4, 8, (5, 5, 5), 3, 1, 2, 2, 2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", CONV3D_CASES)
def test_conv3d_forward_backward_native(dtype, case):
    """conv3d and conv_transpose3d, forward and both gradients (grouped ones sliced by whole groups), on the
    kernels' oneDNN path: no CPU fallback (the fixture checks). A 16-bit pass oneDNN has no kernel for on this CPU
    (float16 without AVX512-FP16, bfloat16 transposed with a bias) runs in float32, rounded once."""
    n, c, o, dhw, k, st, pad, dil, g = case
    kd = (k, k, k) if isinstance(k, int) else k
    x, w, b = rand(n, c, *dhw, dtype=dtype), rand(o, c // g, *kd, dtype=dtype, seed=1), rand(o, dtype=dtype, seed=2)
    xs, ws, bs = (t.double().requires_grad_() for t in (x, w, b))
    xn, wn, bn = (t.npu().requires_grad_() for t in (x, w, b))
    with torch_npu_sim.record_launches() as rec:
        out = F.conv3d(xn, wn, bn, st, pad, dil, g)
        gy = rand(*out.shape, dtype=dtype, seed=3)
        out.backward(gy.npu())
    ref = F.conv3d(xs, ws, bs, st, pad, dil, g)
    ref.backward(gy.double())
    kk = c // g * kd[0] * kd[1] * kd[2]
    check(out.detach(), lambda *_: ref.detach(), k=kk)
    check(xn.grad, lambda *_: xs.grad, k=o * kk)
    check(bn.grad, lambda *_: bs.grad, k=out[0, 0].numel() * n)
    check(wn.grad, lambda *_: ws.grad, k=out[0, 0].numel() * n)
    kernels = {r["kernel"] for r in rec.records}
    assert {"conv3d_forward_onednn", "conv3d_backward_input_onednn", "conv3d_backward_weight_onednn"} <= kernels, kernels
    # transposed, with a bias per output channel
    bt = rand(c // g * g, dtype=dtype, seed=4)
    tr = F.conv_transpose3d(gy.npu(), w.npu(), bt.npu(), st, pad, groups=g, dilation=dil)
    tr_ref = F.conv_transpose3d(gy.double(), w.double(), bt.double(), st, pad, groups=g, dilation=dil)
    check(tr, lambda *_: tr_ref, k=o * kk)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_conv_weight_gradient_from_image_slices(dtype):
    """Few output channels: the weight gradient is split by images, each core thread's slice into an fp32
    partial, and a second launch adds the partials in slice order and rounds once into the caller's strides
    (contiguous, and a channels_last weight's). Checked against float64 CPU, and that the path ran."""
    cases = [  # (x shape, w shape, conv, memory format of x and w)
        ((4, 8, 8, 8, 8), (16, 8, 3, 3, 3), F.conv3d, torch.contiguous_format),
        ((4, 6, 20, 20), (10, 6, 3, 3), F.conv2d, torch.contiguous_format),
        ((4, 6, 20, 20), (10, 6, 3, 3), F.conv2d, torch.channels_last),
    ]
    for xs, wsh, conv, fmt in cases:
        x, w = rand(*xs, dtype=dtype), rand(*wsh, dtype=dtype, seed=1)
        xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
        xn = x.npu().to(memory_format=fmt).requires_grad_()
        wn = w.npu().to(memory_format=fmt).requires_grad_()
        with torch_npu_sim.record_launches() as rec:
            out = conv(xn, wn, padding=1)
            gy = rand(*out.shape, dtype=dtype, seed=3)
            out.backward(gy.npu().to(memory_format=fmt))
        ref = conv(xd, wd, padding=1)
        ref.backward(gy.double())
        kernels = [r["kernel"] for r in rec.records]
        summed = "conv3d_backward_weight_sum" if conv is F.conv3d else "conv2d_backward_weight_sum"
        # (a 16-bit conv2d weight gradient oneDNN has no JIT kernel for takes the tiled path: fp16, and bf16 on a
        # CPU without AVX-512, where oneDNN has only its reference bf16 convolution; conv3d's adapter widens such
        # types to fp32 for oneDNN)
        no_jit = dtype == torch.float16 or (dtype == torch.bfloat16 and "avx512bw" not in cpu_flags())
        assert summed in kernels or (no_jit and conv is F.conv2d), kernels
        assert wn.grad.dtype == dtype and wn.grad.shape == w.shape
        check(wn.grad, lambda *_: wd.grad, k=out[0, 0].numel() * xs[0])
        check(xn.grad, lambda *_: xd.grad, k=wsh[0] * w[0].numel())


def test_conv_weight_gradient_from_image_slices_after_a_failed_kernel():
    """The image-split weight gradient is two launches (fp32 partials, then their sum): behind a failed kernel
    neither may leave a gradient that reads back; after restart_device the same call is right."""
    x, w = rand(4, 8, 8, 8, 8), rand(16, 8, 3, 3, 3, seed=1)
    xn, wn = x.npu(), w.npu()
    y = F.conv3d(xn, wn, padding=1)
    gy = rand(*y.shape, seed=3).npu()
    torch.npu.synchronize()
    torch.arange(3.0, device="npu").index_select(0, torch.tensor([5], device="npu"))  # fails on the device
    grads = torch.ops.aten.convolution_backward(gy, xn, wn, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False,
                                                [0, 0, 0], 1, [False, True, False])
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        grads[1].cpu()
    acknowledge_device_error()
    with torch_npu_sim.record_launches() as rec:
        grads = torch.ops.aten.convolution_backward(gy, xn, wn, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False,
                                                    [0, 0, 0], 1, [False, True, False])
        torch.npu.synchronize()
    assert "conv3d_backward_weight_sum" in [r["kernel"] for r in rec.records]
    ref = torch.ops.aten.convolution_backward(gy.cpu().double(), x.double(), w.double(), None, [1, 1, 1],
                                              [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1, [False, True, False])
    check(grads[1], lambda *_: ref[1], k=y[0, 0].numel() * 4)


@pytest.mark.parametrize("n, c, o, dhw, k, st, pad, dil, g", [
    (2, 3, 4, (5, 6, 7), (3, 2, 3), 1, 0, 1, 1),
    (1, 4, 6, (6, 5, 5), (3, 3, 3), (2, 1, 2), (1, 2, 0), (1, 1, 2), 2),
    (3, 2, 2, (4, 4, 4), (2, 2, 2), 2, 1, 2, 1),       # more images than valid depths: batched over images
    (2, 2, 2, (7, 3, 3), (3, 1, 1), (3, 1, 1), (2, 0, 0), (2, 1, 1), 2),
    (1, 1, 1, (2, 2, 2), (3, 3, 3), 1, 2, 1, 1),        # padding wider than the kernel reaches
])
def test_conv3d_float64_natively_on_the_2d_slices(n, c, o, dhw, k, st, pad, dil, g):
    # oneDNN has no float64: the kernels sum the tiled 2-D passes over depth slices (forward, both gradients,
    # transposed with a bias), equal to CPU's float64 to rounding, and nothing falls back (the fixture)
    x, w, b = rand(n, c, *dhw, dtype=torch.float64), rand(o, c // g, *k, dtype=torch.float64, seed=1), rand(o, dtype=torch.float64, seed=2)
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    xn, wn, bn = (t.npu().requires_grad_() for t in (x, w, b))
    with torch_npu_sim.record_launches() as rec:
        y = F.conv3d(xn, wn, bn, st, pad, dil, g)
        gy = rand(*y.shape, dtype=torch.float64, seed=3)
        y.backward(gy.npu())
    ref = F.conv3d(xs, ws, bs, st, pad, dil, g)
    ref.backward(gy)
    tol = dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y.detach().cpu(), ref.detach(), **tol)
    for got, want in ((xn.grad, xs.grad), (wn.grad, ws.grad), (bn.grad, bs.grad)):
        torch.testing.assert_close(got.cpu(), want, **tol)
    kernels = {r["kernel"] for r in rec.records}
    assert "conv3d_init" in kernels and "conv2d_forward" in kernels and "conv2d_backward_weight" in kernels, kernels
    wt = rand(c, o // g, *k, dtype=torch.float64, seed=4)  # transposed: x's channels in, o out, with a bias
    transposed = lambda *t: F.conv_transpose3d(*t, st, pad, groups=g, dilation=dil)  # noqa: E731
    try:
        tr_ref = transposed(x, wt, b)
    except RuntimeError as e:  # an empty output: both refuse it
        assert "too small" in str(e)
        with pytest.raises(RuntimeError, match="too small"):
            transposed(xn.detach(), wt.npu(), bn.detach())
        return
    torch.testing.assert_close(transposed(xn.detach(), wt.npu(), bn.detach()).cpu(), tr_ref, **tol)


def test_conv3d_float64_gradcheck():
    x = rand(1, 2, 3, 4, 4, dtype=torch.float64).npu().requires_grad_()
    w = rand(2, 2, 2, 3, 2, dtype=torch.float64, seed=1).npu().requires_grad_()
    b = rand(2, dtype=torch.float64, seed=2).npu().requires_grad_()
    assert torch.autograd.gradcheck(lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 1, 0), (1, 2, 1)), (x, w, b))
    assert torch.autograd.gradcheck(lambda x, w, b: F.conv_transpose3d(x, w, b, 2, 1), (x, w, b))


def test_second_device_and_side_stream():
    a, b = rand(33, 20), rand(20, 17, seed=1)
    a1, b1 = a.to("npu:1"), b.to("npu:1")
    r = torch.mm(a1, b1)
    assert r.device == torch.device("npu:1")
    check(r, torch.mm, a, b, k=20)
    x, w = rand(2, 3, 8, 8), rand(4, 3, 3, 3, seed=2)
    y = F.conv2d(x.to("npu:1"), w.to("npu:1"), padding=1)
    assert y.device == torch.device("npu:1")
    check(y, lambda p, q: F.conv2d(p, q, padding=1), x, w, k=27)
    s = torch.npu.Stream()
    an, bn = a.npu(), b.npu()
    with torch.npu.stream(s):
        r = torch.mm(an, bn)
    s.synchronize()
    check(r, torch.mm, a, b, k=20)


def test_outer_and_ger_values():
    # outer/ger are CompositeImplicit over mul (an elementwise op, not the Cube unit): values only.
    u, v = rand(5), rand(7, seed=1)
    torch.testing.assert_close(torch.outer(u.npu(), v.npu()).cpu(), torch.outer(u, v))
