"""torch_npu's npu_fusion_attention on npu against CPU scaled_dot_product_attention: layouts, masks, sparse
modes, grouped-query heads, odd lengths, 16-bit dtypes, dropout, gradients, and errors naming the argument."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

B, N, SQ, SKV, D = 2, 4, 37, 50, 16


def to_layout(t, layout):
    """[B, N, S, D] -> the layout's tensor."""
    if layout == "BNSD":
        return t.contiguous()
    if layout == "BSND":
        return t.transpose(1, 2).contiguous()
    if layout == "BSH":
        return t.transpose(1, 2).flatten(2).contiguous()
    return t.permute(2, 0, 1, 3).flatten(2).contiguous()  # SBH


def from_layout(t, layout, heads):
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.transpose(1, 2)
    if layout == "BSH":
        return t.unflatten(2, (heads, -1)).transpose(1, 2)
    return t.unflatten(2, (heads, -1)).permute(1, 2, 0, 3)


def run(layout, dtype=torch.float32, kv_heads=N, mask=None, sparse_mode=0, scale=0.25, **kw):
    """npu_fusion_attention forward + backward on npu, and the CPU SDPA reference in fp32; returns both."""
    torch.manual_seed(0)
    q, k, v = torch.randn(B, N, SQ, D), torch.randn(B, kv_heads, SKV, D), torch.randn(B, kv_heads, SKV, D)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    leaves = [to_layout(t, layout).to("npu").requires_grad_() for t in (q, k, v)]
    out = torch_npu_sim.npu_fusion_attention(*leaves, N, layout, atten_mask=None if mask is None else mask.to("npu"),
                                             scale=scale, sparse_mode=sparse_mode, **kw)
    g = torch.randn(out[0].shape).to(dtype)
    out[0].backward(g.to("npu"))
    ref = [t.float().requires_grad_() for t in (q, k, v)]
    rk, rv = (t.repeat_interleave(N // kv_heads, 1) for t in ref[1:])
    bias = None
    if sparse_mode == 2:
        bias = torch.ones(SQ, SKV, dtype=torch.bool).triu(1)
    elif sparse_mode == 3:
        bias = torch.ones(SQ, SKV, dtype=torch.bool).triu(1 + SKV - SQ)
    elif mask is not None:
        bias = mask.bool()
    pre, nxt = kw.get("pre_tockens"), kw.get("next_tockens")
    if pre is not None or nxt is not None:
        i, j = torch.arange(SQ)[:, None], torch.arange(SKV)[None, :]
        band = (j > i + (nxt if nxt is not None else 10**9)) | (j < i - (pre if pre is not None else 10**9))
        bias = band if bias is None else bias | band
    ref_out = F.scaled_dot_product_attention(ref[0], rk, rv, attn_mask=None if bias is None else ~bias, scale=scale)
    ref_out_l = to_layout(ref_out, layout)
    ref_out_l.backward(g.float())
    return out, leaves, ref_out_l, ref


TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float16: dict(rtol=1e-2, atol=1e-2),
       torch.bfloat16: dict(rtol=5e-2, atol=5e-2)}


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layouts_and_dtypes_match_cpu_sdpa(layout, dtype, native_only):
    out, leaves, ref_out, ref = run(layout, dtype)
    torch.testing.assert_close(out[0].detach().cpu().float(), ref_out.detach(), **TOL[dtype])
    assert out[0].shape == leaves[0].shape and out[0].dtype == dtype
    for n, r in zip(leaves, ref):
        torch.testing.assert_close(from_layout(n.grad.cpu().float(), layout, N), r.grad, **TOL[dtype])
    smax, ssum, sout, seed, offset, numels = out[1:]
    assert smax.shape == (B, N, SQ, 8) and smax.dtype == torch.float32 and ssum.shape == (B, N, SQ, 8)
    assert numels == B * N * SQ * SKV and isinstance(seed, int) and isinstance(offset, int)


@pytest.mark.parametrize("case", ["mask_2d", "mask_4d", "causal_left_up", "causal_right_down", "band", "gqa"])
def test_masks_sparse_modes_and_grouped_heads(case, native_only):
    kw = {}
    if case == "mask_2d":
        kw["mask"] = torch.rand(SQ, SKV) < 0.3
    elif case == "mask_4d":
        kw["mask"] = (torch.rand(B, 1, SQ, SKV) < 0.3).to(torch.uint8)
    elif case == "causal_left_up":
        kw["sparse_mode"] = 2
    elif case == "causal_right_down":
        kw["sparse_mode"] = 3
    elif case == "band":
        kw.update(pre_tockens=5, next_tockens=3)
    else:
        kw["kv_heads"] = 2
    out, leaves, ref_out, ref = run("BNSD", **kw)
    torch.testing.assert_close(out[0].detach().cpu(), ref_out.detach(), rtol=1e-4, atol=1e-4)
    for n, r in zip(leaves, ref):
        torch.testing.assert_close(n.grad.cpu(), r.grad, rtol=1e-4, atol=1e-4)


def test_dropout_reproduces_its_mask_from_seed_and_offset(native_only):
    torch.manual_seed(3)
    q, k = torch.randn(1, 2, 6, 8).npu(), torch.randn(1, 2, 9, 8).npu()
    eye = torch.eye(9).expand(1, 2, 9, 9).contiguous().npu()
    torch.npu.manual_seed(5)
    out = torch_npu_sim.npu_fusion_attention(q, k, eye, 2, "BNSD", scale=0.3, keep_prob=0.6)
    probs, seed, offset = out[0].cpu(), out[4], out[5]
    keep = probs != 0
    ref_p = torch.softmax(q.cpu() @ k.cpu().transpose(-1, -2) * 0.3, -1)
    torch.testing.assert_close(probs, ref_p * keep / 0.6, rtol=1e-4, atol=1e-6)
    assert 0.3 < keep.float().mean() < 0.9
    # the backward regenerates the same mask from (seed, offset): gradients of the masked composition
    v = torch.randn(1, 2, 9, 8)
    leaves = [t.clone().requires_grad_() for t in (q, k, v.npu())]
    torch.npu.manual_seed(5)
    res = torch_npu_sim.npu_fusion_attention(*leaves, 2, "BNSD", scale=0.3, keep_prob=0.6)
    assert (res[4], res[5]) == (seed, offset)
    res[0].sum().backward()
    ref = [t.cpu().detach().requires_grad_() for t in (q, k, v)]
    ((torch.softmax(ref[0] @ ref[1].transpose(-1, -2) * 0.3, -1) * keep / 0.6) @ ref[2]).sum().backward()
    for n, r in zip(leaves, ref):
        torch.testing.assert_close(n.grad.cpu(), r.grad, rtol=1e-4, atol=1e-5)


def test_fake_kernel_and_compile():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q = torch.empty(2, 10, 64, device="npu", dtype=torch.bfloat16)
        out = torch.ops.npu.npu_fusion_attention(q, q, q, 4, "BSH")
    assert out[0].shape == (2, 10, 64) and out[1].shape == (2, 4, 10, 8) and out[6] == 2 * 4 * 10 * 10

    def f(q, k, v):
        return torch_npu_sim.npu_fusion_attention(q, k, v, 2, "BSH", scale=0.5)[0]

    q, k, v = (torch.randn(2, 5, 16).npu() for _ in range(3))
    torch.testing.assert_close(torch.compile(f, backend="aot_eager")(q, k, v).cpu(), f(q, k, v).cpu())


def test_bad_input_names_the_argument():
    q = torch.randn(1, 2, 4, 8, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: argument 'input_layout' must be one of"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 2, "BHSD")
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: query has 2 heads, head_num is 3"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 3, "BNSD")
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: expected argument 'query' on an npu device"):
        torch_npu_sim.npu_fusion_attention(q.cpu(), q.cpu(), q.cpu(), 2, "BNSD")
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: argument 'padding_mask' is reserved"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 2, "BNSD", padding_mask=q)
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: argument 'keep_prob' must be in \(0, 1\]"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 2, "BNSD", keep_prob=0.0)
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: argument 'sparse_mode' 7 is not supported"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 2, "BNSD", sparse_mode=7)
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: the hidden size of 'query' \(15\)"):
        x = torch.randn(1, 4, 15, device="npu")
        torch_npu_sim.npu_fusion_attention(x, x, x, 2, "BSH")
    with pytest.raises(RuntimeError, match=r"npu_fusion_attention: argument 'atten_mask' must be bool or uint8"):
        torch_npu_sim.npu_fusion_attention(q, q, q, 2, "BNSD", atten_mask=q)
