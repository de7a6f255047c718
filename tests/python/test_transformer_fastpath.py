"""The nn.Transformer inference fast paths on npu: nn.TransformerEncoderLayer and nn.MultiheadAttention in eval
under no_grad take aten::_transformer_encoder_layer_fwd / _native_multi_head_attention, which run natively
(no CPU fallback) and match CPU; plus the ops they are built from, with their error messages."""
import pytest
import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile


def ops_called(fn):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn()
    return out, {e.key for e in prof.key_averages()}


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masked", [False, True])
def test_encoder_layer_fast_path_matches_cpu(norm_first, activation, masked, native_only):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 96, dropout=0.0, batch_first=True, norm_first=norm_first,
                                       activation=activation).eval()
    x = torch.randn(3, 11, 64)
    pad = torch.zeros(3, 11, dtype=torch.bool)
    pad[1, 7:] = True
    pad[2, 3:] = True
    kw = dict(src_key_padding_mask=pad) if masked else {}
    with torch.no_grad():
        ref = layer(x, **kw)
        layer.to("npu")
        out, called = ops_called(lambda: layer(x.to("npu"), **{k: v.to("npu") for k, v in kw.items()}))
    assert "aten::_transformer_encoder_layer_fwd" in called
    if masked:  # ATen's fast path returns a nested-style result: padded positions are 0 on CPU too
        assert out.shape == ref.shape
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)


def test_multihead_attention_fast_path_matches_cpu(native_only):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(2, 9, 32)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[0, 6:] = True
    with torch.no_grad():
        ref, ref_w = mha(x, x, x, key_padding_mask=pad, need_weights=True)
        mha.to("npu")
        xn = x.to("npu")
        (out, w), called = ops_called(lambda: mha(xn, xn, xn, key_padding_mask=pad.to("npu"), need_weights=True))
    assert "aten::_native_multi_head_attention" in called
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w.cpu(), ref_w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask_type", [0, 1, 2, None])
def test_masked_softmax_matches_cpu_including_fully_masked_rows(mask_type, native_only):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 5)
    shape = {0: (5, 5), 1: (2, 5), 2: (2, 3, 5, 5), None: (2, 3, 5, 5)}[mask_type]
    mask = torch.rand(shape) > 0.6
    if mask_type == 1:
        mask[1] = True  # every key of batch 1 masked: its rows are all 0, not NaN
    elif mask_type == 0:
        mask[2] = True
    ref = torch._masked_softmax(x, mask, 3, mask_type)
    out = torch._masked_softmax(x.to("npu"), mask.to("npu"), 3, mask_type).cpu()
    # a row with every position masked: CPU's kernel writes NaN, CUDA's writes 0; npu follows CUDA
    full = ref.isnan()
    assert full.any().item() == (mask_type in (0, 1))
    torch.testing.assert_close(out, ref.masked_fill(full, 0.0))


def test_transform_bias_rescale_qkv_and_addmm_activation_match_cpu(native_only):
    torch.manual_seed(0)
    qkv, bias = torch.randn(2, 7, 3 * 24), torch.randn(3 * 24)
    for r, n in zip(torch._transform_bias_rescale_qkv(qkv, bias, 4),
                    torch._transform_bias_rescale_qkv(qkv.to("npu"), bias.to("npu"), 4)):
        assert n.shape == r.shape == (2, 4, 7, 6)
        torch.testing.assert_close(n.cpu(), r)
    b, m1, m2 = torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)
    for gelu in (False, True):
        ref = torch._addmm_activation(b, m1, m2, beta=0.5, alpha=2.0, use_gelu=gelu)
        out = torch._addmm_activation(b.to("npu"), m1.to("npu"), m2.to("npu"), beta=0.5, alpha=2.0, use_gelu=gelu)
        torch.testing.assert_close(out.cpu(), ref)


def test_bad_arguments_name_the_op_and_argument():
    x = torch.randn(2, 3, 5, 5, device="npu")
    with pytest.raises(RuntimeError, match="_masked_softmax: Mask should be a boolean tensor"):
        torch._masked_softmax(x, torch.zeros(2, 3, 5, 5, device="npu"), 3, 2)
    with pytest.raises(RuntimeError, match=r"_masked_softmax: For mask_type == 1 mask shape should be \(B, L\)"):
        torch._masked_softmax(x, torch.zeros(3, 5, dtype=torch.bool, device="npu"), 3, 1)
    with pytest.raises(RuntimeError, match="_transform_bias_rescale_qkv: the embedding dimension 24 must be divisible"):
        torch._transform_bias_rescale_qkv(torch.randn(2, 7, 72, device="npu"), torch.randn(72, device="npu"), 5)
    with pytest.raises(RuntimeError, match=r"_transform_bias_rescale_qkv: expected qkv_bias of shape \[72\]"):
        torch._transform_bias_rescale_qkv(torch.randn(2, 7, 72, device="npu"), torch.randn(71, device="npu"), 4)
    with pytest.raises(RuntimeError, match="argument qkv_bias in method _transform_bias_rescale_qkv"):
        torch._transform_bias_rescale_qkv(torch.randn(2, 7, 72, device="npu"), torch.randn(72), 4)
