"""Fused scaled_dot_product_attention on npu: forward and gradients against CPU PyTorch, which calls go to
the fused kernel and which stay on ATen's math path, the output layout, and bad direct calls."""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

FUSED = "aten::_scaled_dot_product_fused_attention_overrideable"
FUSED_BWD = "aten::_scaled_dot_product_fused_attention_overrideable_backward"


def run_both(q, k, v, **kw):
    """SDPA forward + backward on CPU and npu; returns (cpu results, npu results, npu op names)."""
    leaves = [t.detach().clone().requires_grad_(t.dtype.is_floating_point) for t in (q, k, v)]
    mask = kw.pop("attn_mask", None)
    out = F.scaled_dot_product_attention(*leaves, attn_mask=mask, **kw)
    grad = torch.randn_like(out)
    out.backward(grad)
    npu_leaves = [t.detach().to("npu").requires_grad_(t.dtype.is_floating_point) for t in (q, k, v)]
    with torch.autograd.profiler.profile() as prof:
        out_n = F.scaled_dot_product_attention(
            *npu_leaves, attn_mask=None if mask is None else mask.to("npu"), **kw)
        out_n.backward(grad.to("npu"))
        torch.npu.synchronize()
    names = {e.name for e in prof.function_events}
    return [out] + [t.grad for t in leaves], [out_n] + [t.grad for t in npu_leaves], names


def assert_close_all(cpu, npu, **tol):
    for c, n, what in zip(cpu, npu, ["output", "grad query", "grad key", "grad value"]):
        torch.testing.assert_close(n.cpu(), c, msg=lambda m, w=what: f"{w}: {m}", **tol)


CASES = [  # B, H, L, S, E, Ev, causal
    (2, 3, 17, 17, 8, 8, False),
    (2, 3, 17, 17, 8, 8, True),
    (1, 2, 10, 23, 16, 5, True),   # fewer queries than keys (top-left causal)
    (1, 2, 23, 10, 16, 5, True),   # rows past the last key see every key
    (1, 2, 300, 300, 32, 32, True),  # several query tiles per head
    (1, 2, 130, 1100, 16, 8, False),  # several key blocks per tile (online softmax)
    (1, 1, 600, 1100, 16, 16, True),
    (3, 1, 1, 9, 4, 4, False),
    (1, 1, 40, 1024, 32, 32, False),  # fp32 K^T rows padded past the 4 KiB alias (1040 apart), two key blocks
]


@pytest.mark.parametrize("B,H,L,S,E,Ev,causal", CASES)
def test_fused_matches_cpu(B, H, L, S, E, Ev, causal):
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, L, E), torch.randn(B, H, S, E), torch.randn(B, H, S, Ev)
    cpu, npu, names = run_both(q, k, v, is_causal=causal)
    assert FUSED in names and FUSED_BWD in names
    assert_close_all(cpu, npu, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_kind", ["float", "bool", "bool_fully_masked_row", "float_broadcast_batch"])
def test_fused_with_masks(mask_kind):
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 2, 5, 4), torch.randn(2, 2, 7, 4), torch.randn(2, 2, 7, 4)
    mask = {
        "float": lambda: torch.randn(5, 7),
        "bool": lambda: torch.rand(2, 1, 5, 7) > 0.3,
        "bool_fully_masked_row": lambda: torch.ones(5, 7, dtype=torch.bool).index_fill_(0, torch.tensor([2]), False),
        "float_broadcast_batch": lambda: torch.randn(1, 2, 5, 1),
    }[mask_kind]()
    cpu, npu, names = run_both(q, k, v, attn_mask=mask)
    assert FUSED in names
    assert_close_all(cpu, npu, rtol=1e-4, atol=1e-5)
    if mask_kind == "bool_fully_masked_row":  # as CPU's math path: zeros, not NaN
        assert torch.equal(npu[0][:, :, 2].cpu(), torch.zeros(2, 2, 4))


def test_fused_float64_and_scale():
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 2, 6, 5, dtype=torch.float64) for _ in range(3))
    cpu, npu, names = run_both(q, k, v, scale=0.3, is_causal=True)
    assert FUSED in names
    assert_close_all(cpu, npu, rtol=1e-10, atol=1e-12)


def test_the_gpt_block_layout_is_read_in_place_and_output_reshapes_without_copy():
    torch.manual_seed(3)
    qkv = torch.randn(4, 16, 3 * 32)
    b, t, d, h = 4, 16, 32, 4

    def attend(x):
        q, k, v = x.split(d, dim=-1)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return att, att.transpose(1, 2).reshape(b, t, d)

    att_n, y_n = attend(qkv.to("npu").requires_grad_())
    assert att_n.transpose(1, 2).is_contiguous()  # the reshape after attention is a view
    _, y = attend(qkv)
    torch.testing.assert_close(y_n.cpu(), y, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["gqa", "mask_requires_grad", "forced_math"])
def test_unfused_cases_take_the_math_path_and_stay_correct(case):
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 9, 8), torch.randn(2, 4, 9, 8)
    kw = {}
    if case == "gqa":
        k, v = k[:, :2].contiguous(), v[:, :2].contiguous()
        kw["enable_gqa"] = True
    if case == "mask_requires_grad":
        mask = torch.randn(6, 9, requires_grad=True)
        mask_n = mask.detach().to("npu").requires_grad_()
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
        with torch.autograd.profiler.profile() as prof:
            F.scaled_dot_product_attention(q.to("npu"), k.to("npu"), v.to("npu"), attn_mask=mask_n).sum().backward()
        assert FUSED not in {e.name for e in prof.function_events}
        torch.testing.assert_close(mask_n.grad.cpu(), mask.grad, rtol=1e-4, atol=1e-5)
        return
    if case == "forced_math":
        with sdpa_kernel([SDPBackend.MATH]):
            cpu, npu, names = run_both(q, k, v)
    else:
        cpu, npu, names = run_both(q, k, v, **kw)
    assert FUSED not in names
    tol = dict(rtol=1e-4, atol=1e-5) if q.dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    assert_close_all(cpu, npu, **tol)


def test_keys_beyond_the_unified_buffer_take_the_math_path():
    torch.manual_seed(5)
    q, k, v = torch.randn(1, 1, 2, 2), torch.randn(1, 1, 30000, 2), torch.randn(1, 1, 30000, 2)
    cpu, npu, names = run_both(q, k, v)
    assert FUSED not in names
    assert_close_all(cpu, npu, rtol=1e-4, atol=1e-5)


def test_direct_calls_with_unsupported_arguments_name_the_op():
    q = torch.randn(1, 1, 3, 4, device="npu")
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    with pytest.raises(RuntimeError, match="_scaled_dot_product_fused_attention_overrideable: expected 4-D"):
        op(q, q, q, dropout_p=1.0)
    with pytest.raises(RuntimeError, match="_scaled_dot_product_fused_attention_overrideable: expected 4-D"):
        op(q, q, q.half())
    with pytest.raises(RuntimeError, match="_scaled_dot_product_fused_attention_overrideable: expected 4-D"):
        op(q, torch.randn(1, 2, 3, 4, device="npu"), q)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_16bit_attention_takes_the_fused_kernel(dtype, causal):
    # the Cube's fp32 accumulation, each output rounded once: compared with CPU's SDPA in fp32 on the same
    # 16-bit inputs, within one rounding of the 16-bit output (and a little more for the gradients)
    torch.manual_seed(6)
    q, k, v = (torch.randn(2, 3, 37, 16).to(dtype) for _ in range(3))
    npu_leaves = [t.to("npu").requires_grad_() for t in (q, k, v)]
    with torch.autograd.profiler.profile() as prof:
        out = F.scaled_dot_product_attention(*npu_leaves, is_causal=causal)
        out.backward(torch.randn(out.shape).to(dtype).to("npu").fill_(1.0))
        torch.npu.synchronize()
    assert FUSED in {e.name for e in prof.function_events} and FUSED_BWD in {e.name for e in prof.function_events}
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.float16 else dict(rtol=4e-2, atol=4e-2)
    ref = [t.float().requires_grad_() for t in (q, k, v)]
    ref_out = F.scaled_dot_product_attention(*ref, is_causal=causal)
    ref_out.sum().backward()
    torch.testing.assert_close(out.detach().cpu().float(), ref_out.detach(), **tol)
    for n, r in zip(npu_leaves, ref):
        torch.testing.assert_close(n.grad.cpu().float(), r.grad, **tol)
    assert out.dtype == dtype


def test_dropout_is_fused_reproducible_and_its_gradient_matches_the_mask():
    torch.manual_seed(8)
    B, H, L, S, E, p = 2, 2, 7, 9, 8, 0.3
    q, k, v = torch.randn(B, H, L, E), torch.randn(B, H, S, E), torch.randn(B, H, S, 5)
    qn, kn = q.to("npu"), k.to("npu")
    # with V = I the output is the dropped, rescaled probabilities: the mask is where it is not 0
    eye = torch.eye(S).expand(B, H, S, S).contiguous().to("npu")
    torch.npu.manual_seed(123)
    with torch.autograd.profiler.profile() as prof:
        probs = F.scaled_dot_product_attention(qn, kn, eye, dropout_p=p).cpu()
    assert FUSED in {e.name for e in prof.function_events}
    keep = probs != 0
    assert 0.55 < keep.float().mean() < 0.85
    ref_p = torch.softmax(q @ k.transpose(-1, -2) / E ** 0.5, -1)
    torch.testing.assert_close(probs, ref_p * keep / (1 - p), rtol=1e-4, atol=1e-6)
    torch.npu.manual_seed(123)
    again = F.scaled_dot_product_attention(qn, kn, eye, dropout_p=p).cpu()
    assert torch.equal(again, probs)  # same generator state, same mask
    assert not torch.equal(F.scaled_dot_product_attention(qn, kn, eye, dropout_p=p).cpu() != 0, keep)
    # the same mask again (same generator state), now through V and the backward
    leaves = [t.to("npu").requires_grad_() for t in (q, k, v)]
    torch.npu.manual_seed(123)
    out = F.scaled_dot_product_attention(*leaves, dropout_p=p)
    g = torch.randn(out.shape)
    out.backward(g.to("npu"))
    ref = [t.clone().requires_grad_() for t in (q, k, v)]
    ref_out = (torch.softmax(ref[0] @ ref[1].transpose(-1, -2) / E ** 0.5, -1) * keep / (1 - p)) @ ref[2]
    ref_out.backward(g)
    torch.testing.assert_close(out.detach().cpu(), ref_out.detach(), rtol=1e-4, atol=1e-5)
    for n, r in zip(leaves, ref):
        torch.testing.assert_close(n.grad.cpu(), r.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["bhld", "blhd"])
def test_overrideable_sdpa_lays_out_outputs_as_its_meta_function(layout):
    # torch.compile plans buffers by the meta function's strides: the npu kernels must produce the same ones
    def make(seed):
        g = torch.Generator().manual_seed(seed)
        t = torch.randn(2, 3, 5, 8, generator=g) if layout == "bhld" else torch.randn(2, 5, 3, 8, generator=g)
        return t if layout == "bhld" else t.transpose(1, 2)

    q, k, v = make(0), make(1), make(2)
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    out = op(q.npu(), k.npu(), v.npu(), is_causal=True)
    meta = op(q.to("meta"), k.to("meta"), v.to("meta"), is_causal=True)
    for got, want in zip(out, meta):
        if isinstance(want, torch.Tensor):
            assert got is not None and got.shape == want.shape and got.stride() == want.stride()
            assert got.dtype == want.dtype
    torch.testing.assert_close(out[0].cpu(), F.scaled_dot_product_attention(q, k, v, is_causal=True))
    go = torch.randn_like(out[0].cpu())
    grads = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(
        go.npu(), q.npu(), k.npu(), v.npu(), None, [True, True, True, False], out[0], out[1], None, None,
        5, 5, 0.0, True, out[6], out[7])
    for g, inp in zip(grads[:3], (q, k, v)):
        assert g.stride() == inp.stride()
    qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
    F.scaled_dot_product_attention(qr, kr, vr, is_causal=True).backward(go)
    for g, ref in zip(grads[:3], (qr.grad, kr.grad, vr.grad)):
        torch.testing.assert_close(g.cpu(), ref, atol=1e-5, rtol=1e-5)


BF16_CUBE_CASES = """
import torch, torch.nn.functional as F, torch_npu_sim
print(torch_npu_sim._C._cube_kernels()["attention_bf16"])
g = torch.Generator().manual_seed(9)
def r(*s):
    return torch.randn(*s, generator=g).bfloat16()
cases = {
    # odd lengths (query tiles and key blocks with tails), causal with fewer queries than keys, a float mask
    "causal 150x600": (r(2, 3, 150, 40), r(2, 3, 600, 40), r(2, 3, 600, 24), dict(is_causal=True)),
    "mask 77x133": (r(1, 2, 77, 32), r(1, 2, 133, 32), r(1, 2, 133, 32),
                    dict(attn_mask=r(1, 2, 77, 133) * 3)),
    # a BSH layout: rows 4 heads apart (oneDNN copies such padded operands into dense rows first)
    "BSH 200": tuple(t.transpose(1, 2) for t in (r(2, 200, 4, 64), r(2, 200, 4, 64), r(2, 200, 4, 64))) + ({},),
    # GPT-mini's heads (64 keys, head dim 32), one query against many keys, head dims of 7 and 9, several key
    # blocks with a scale of our own, a boolean mask that hides whole rows
    "causal 64": (r(4, 4, 64, 32), r(4, 4, 64, 32), r(4, 4, 64, 32), dict(is_causal=True)),
    "decode 1x300": (r(1, 2, 1, 64), r(1, 2, 300, 64), r(1, 2, 300, 64), {}),
    "dims 7 / 9": (r(1, 1, 33, 7), r(1, 1, 17, 7), r(1, 1, 17, 9), {}),
    "causal 1100 scale": (r(1, 2, 1100, 48), r(1, 2, 1100, 48), r(1, 2, 1100, 80), dict(is_causal=True, scale=0.3)),
    "bool mask": (r(1, 2, 40, 32), r(1, 2, 70, 32), r(1, 2, 70, 32),
                  dict(attn_mask=torch.rand(1, 2, 40, 70, generator=g) > 0.5)),
}
for name, (q, k, v, kw) in cases.items():
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                          **{a: (b.float() if torch.is_tensor(b) and b.is_floating_point() else b)
                                             for a, b in kw.items()})
    got = F.scaled_dot_product_attention(q.npu(), k.npu(), v.npu(),
                                         **{a: (b.npu() if torch.is_tensor(b) else b) for a, b in kw.items()})
    assert got.dtype == torch.bfloat16
    diff = (got.cpu().float().nan_to_num(7.0) - want.nan_to_num(7.0)).abs()
    err = (diff / (1 + want.abs().nan_to_num())).max().item()
    print(name, err)
# dropout: with V = I the output is the kept probabilities scaled by 1 / keep_prob; the mask is bf16's as float32's
q, k = r(2, 2, 20, 16), r(2, 2, 40, 16)
eye = torch.eye(40).expand(2, 2, 40, 40)
outs = {}
for dt in (torch.float32, torch.bfloat16):
    torch.npu.manual_seed(5)
    outs[dt] = F.scaled_dot_product_attention(q.to(dt).npu(), k.to(dt).npu(), eye.to(dt).npu(), dropout_p=0.3).cpu()
assert torch.equal(outs[torch.float32] != 0, outs[torch.bfloat16] != 0)
ref = outs[torch.float32]
print("dropout", ((outs[torch.bfloat16].float() - ref).abs() / (1 + ref.abs())).max().item())
"""


@pytest.mark.parametrize("env", [{}, {"NPU_SIM_AMX": "0"}, {"NPU_SIM_AMX": "0", "NPU_SIM_GEMM_DNNL": "0"}],
                         ids=["amx", "onednn", "widened"])
def test_bf16_attention_on_the_bf16_cube_and_widened(env):
    """bf16 attention runs its two products on the machine's bf16 matrix unit where it has one, as CPU's flash
    attention and CUDA's do: scores in fp32, the probabilities rounded to bf16 for P V. On AMX CPUs our tile kernels
    (any length); with NPU_SIM_AMX=0, or on AVX512-BF16 CPUs without AMX, oneDNN's bf16 matmul from 128 keys. With
    neither (NPU_SIM_GEMM_DNNL=0 too) the operands are widened to fp32. Each against CPU's SDPA in fp32 on the same
    bf16 inputs: within a few bf16 roundings (2^-8 relative each)."""
    from conftest import cpu_flags, run_python
    out = run_python(BF16_CUBE_CASES, env={**env, "ONEDNN_VERBOSE": "1"})
    assert out.returncode == 0, out.stderr
    verbose = [line for line in out.stdout.splitlines() if line.startswith("onednn_verbose")]
    lines = [line for line in out.stdout.strip().splitlines() if not line.startswith("onednn_verbose")]
    # the bf16 x bf16 -> fp32 products of the attention (the model's GEMMs would write bf16)
    cube_calls = [line for line in verbose if ",exec," in line and "src_bf16" in line and "dst_f32" in line]
    flags = cpu_flags()
    if "NPU_SIM_GEMM_DNNL" in env:
        assert lines[0] == "none" and not cube_calls, lines[0]
    elif not env and {"amx_bf16", "avx512_bf16"} <= flags:
        assert lines[0] == "amx_bf16" and not cube_calls, (lines[0], len(cube_calls))
    elif flags & {"avx512_bf16", "amx_bf16"}:
        assert lines[0].startswith("onednn ") and len(cube_calls) >= 6, (lines[0], len(cube_calls))
    for line in lines[1:]:
        name, err = line.rsplit(" ", 1)
        assert float(err) <= 3 * 2.0 ** -8, line


def test_bf16_attention_behind_a_failed_kernel_reads_nothing_back():
    """The bf16 forward with 128 keys or more (the bf16 Cube's path where the CPU has bf16 units): behind a failed
    kernel its output must not read back; after the error is acknowledged (restart_device) the same call is right."""
    from conftest import acknowledge_device_error
    g = torch.Generator().manual_seed(12)
    q, k, v = (torch.randn(1, 2, 140, 32, generator=g).bfloat16() for _ in range(3))
    qn, kn, vn = q.npu(), k.npu(), v.npu()
    torch.npu.synchronize()
    torch.arange(3.0, device="npu").index_select(0, torch.tensor([5], device="npu"))  # fails on the device
    out = F.scaled_dot_product_attention(qn, kn, vn, is_causal=True)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        out.cpu()
    acknowledge_device_error()
    out = F.scaled_dot_product_attention(qn, kn, vn, is_causal=True)
    want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    err = ((out.cpu().float() - want).abs() / (1 + want.abs())).max().item()
    assert err <= 3 * 2.0 ** -8, err
