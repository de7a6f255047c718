"""torch_npu's fused ops on npu: their Python names and signatures, fake (Meta) kernels and autograd.

The ops themselves are defined by the op table (``csrc/aten/ops.yaml``, family ``fused``, namespace ``npu``)
and run on the npu kernels; here each gets a fake kernel, so shapes propagate under FakeTensor /
``torch.compile``, and, where torch_npu's op is differentiable, a backward through its ``*_backward`` op.
Call them as ``torch.ops.npu.<name>`` or ``torch_npu_sim.<name>``.
"""
import torch

_ops = torch.ops.npu
_lib = "npu::"

__all__ = ["npu_linear_add_gelu", "npu_rms_norm", "npu_add_rms_norm", "npu_rotary_mul", "npu_swiglu", "npu_fast_gelu",
           "npu_scaled_masked_softmax", "npu_fusion_attention", "npu_fusion_attention_grad",
           "npu_moe_gating_top_k_softmax", "npu_moe_init_routing", "npu_moe_compute_expert_tokens",
           "npu_grouped_matmul", "npu_moe_finalize_routing", "npu_quant_matmul"]


def _fake(name):
    return torch.library.register_fake(_lib + name)


def _autograd(name, backward, setup_context):
    torch.library.register_autograd(_lib + name, backward, setup_context=setup_context)


# --- npu_linear_add_gelu: GELU(x @ weight + bias), one tile-layer kernel ---------------------------------

npu_linear_add_gelu = _ops.npu_linear_add_gelu  # (x, weight, bias): GELU(x @ weight + bias), float32


@_fake("npu_linear_add_gelu")
def _(x, weight, bias):
    torch._check(x.dim() == 2 and weight.dim() == 2 and bias.dim() == 1,
                 lambda: "npu_linear_add_gelu: expected x [M, K], weight [K, N], bias [N]")
    torch._check(weight.shape[0] == x.shape[1], lambda: "npu_linear_add_gelu: weight must be [K, N]")
    return x.new_empty((x.shape[0], weight.shape[1]))


def _linear_add_gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _linear_add_gelu_backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    gz = torch.ops.aten.gelu_backward(grad, torch.addmm(bias, x, weight))  # the pre-activation, recomputed
    return gz @ weight.t(), x.t() @ gz, gz.sum(0)


_autograd("npu_linear_add_gelu", _linear_add_gelu_backward, _linear_add_gelu_setup)


# --- RMSNorm and add-RMSNorm -------------------------------------------------------------------------------

npu_rms_norm = _ops.npu_rms_norm  # (self, gamma, epsilon=1e-6) -> (y, rstd)
npu_add_rms_norm = _ops.npu_add_rms_norm  # (x1, x2, gamma, epsilon=1e-6) -> (y, rstd, x1 + x2)


def _rstd_shape(x, gamma):
    return (*x.shape[:x.dim() - gamma.dim()], *([1] * gamma.dim()))


@_fake("npu_rms_norm")
def _(x, gamma, epsilon=1e-6):
    return x.new_empty(x.shape), x.new_empty(_rstd_shape(x, gamma), dtype=torch.float32)


@_fake("npu_add_rms_norm")
def _(x1, x2, gamma, epsilon=1e-6):
    return x1.new_empty(x1.shape), x1.new_empty(_rstd_shape(x1, gamma), dtype=torch.float32), x1.new_empty(x1.shape)


@_fake("npu_rms_norm_backward")
def _(dy, x, gamma, rstd):
    return x.new_empty(x.shape), gamma.new_empty(gamma.shape)


def _rms_norm_setup(ctx, inputs, output):
    x, gamma = inputs[0], inputs[1]
    ctx.save_for_backward(x, gamma, output[1])


def _rms_norm_backward(ctx, dy, _drstd):
    x, gamma, rstd = ctx.saved_tensors
    if dy is None:
        return None, None, None
    dx, dgamma = _ops.npu_rms_norm_backward(dy, x, gamma, rstd)
    return dx, dgamma, None


def _add_rms_norm_setup(ctx, inputs, output):
    ctx.save_for_backward(output[2], inputs[2], output[1])


def _add_rms_norm_backward(ctx, dy, _drstd, dsum):
    s, gamma, rstd = ctx.saved_tensors
    dx, dgamma = _ops.npu_rms_norm_backward(dy, s, gamma, rstd) if dy is not None else (None, None)
    if dsum is not None:
        dx = dsum if dx is None else dx + dsum
    return dx, dx, dgamma, None


_autograd("npu_rms_norm", _rms_norm_backward, _rms_norm_setup)
_autograd("npu_add_rms_norm", _add_rms_norm_backward, _add_rms_norm_setup)


# --- rotary position embedding -----------------------------------------------------------------------------

npu_rotary_mul = _ops.npu_rotary_mul  # (self, r1, r2, rotary_mode='half'): x * r1 + rotate(x) * r2


@_fake("npu_rotary_mul")
def _(x, r1, r2, rotary_mode="half"):
    return x.new_empty(x.shape)


@_fake("npu_rotary_mul_backward")
def _(grad, x, r1, r2, rotary_mode="half", output_mask=(True, True)):
    return (x.new_empty(x.shape), r1.new_empty(r1.shape) if output_mask[0] else None,
            r2.new_empty(r2.shape) if output_mask[1] else None)


def _rotary_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:3])
    ctx.mode = inputs[3] if len(inputs) > 3 else "half"


def _rotary_backward(ctx, grad):
    x, r1, r2 = ctx.saved_tensors
    dx, dr1, dr2 = _ops.npu_rotary_mul_backward(grad, x, r1, r2, ctx.mode, list(ctx.needs_input_grad[1:3]))
    return dx, dr1, dr2, None


_autograd("npu_rotary_mul", _rotary_backward, _rotary_setup)


# --- SwiGLU and fast GELU ----------------------------------------------------------------------------------

npu_swiglu = _ops.npu_swiglu  # (self, dim=-1): silu(a) * b with a, b = self.chunk(2, dim)
npu_fast_gelu = _ops.npu_fast_gelu  # (self): x * sigmoid(1.702 x)


@_fake("npu_swiglu")
def _(x, dim=-1):
    shape = list(x.shape)
    shape[dim] //= 2
    return x.new_empty(shape)


@_fake("npu_swiglu_backward")
def _(grad, x, dim=-1):
    return x.new_empty(x.shape)


@_fake("npu_fast_gelu")
def _(x):
    return x.new_empty(x.shape)


@_fake("npu_fast_gelu_backward")
def _(grad, x):
    return x.new_empty(x.shape)


def _swiglu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.dim = inputs[1] if len(inputs) > 1 else -1


def _fast_gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


_autograd("npu_swiglu", lambda ctx, g: (_ops.npu_swiglu_backward(g, ctx.saved_tensors[0], ctx.dim), None),
          _swiglu_setup)
_autograd("npu_fast_gelu", lambda ctx, g: _ops.npu_fast_gelu_backward(g, ctx.saved_tensors[0]), _fast_gelu_setup)


# --- scaled masked softmax ---------------------------------------------------------------------------------

npu_scaled_masked_softmax = _ops.npu_scaled_masked_softmax  # (x, mask, scale=1.0, fixed_triu_mask=False)


@_fake("npu_scaled_masked_softmax")
def _(x, mask, scale=1.0, fixed_triu_mask=False):
    return x.new_empty(x.shape)


@_fake("npu_scaled_masked_softmax_backward")
def _(y_grad, y, mask, scale, fixed_triu_mask):
    return y.new_empty(y.shape)


def _masked_softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output, inputs[1])
    ctx.scale = inputs[2] if len(inputs) > 2 else 1.0
    ctx.triu = inputs[3] if len(inputs) > 3 else False


def _masked_softmax_backward(ctx, grad):
    y, mask = ctx.saved_tensors
    return _ops.npu_scaled_masked_softmax_backward(grad, y, mask, ctx.scale, ctx.triu), None, None, None


_autograd("npu_scaled_masked_softmax", _masked_softmax_backward, _masked_softmax_setup)


# --- npu_fusion_attention ----------------------------------------------------------------------------------

npu_fusion_attention = _ops.npu_fusion_attention
npu_fusion_attention_grad = _ops.npu_fusion_attention_grad


def _bns(query, head_num, input_layout):
    """(B, N, Sq) of query in a layout."""
    if input_layout == "BNSD":
        return query.shape[0], query.shape[1], query.shape[2]
    if input_layout == "BSND":
        return query.shape[0], query.shape[2], query.shape[1]
    if input_layout == "BSH":
        return query.shape[0], head_num, query.shape[1]
    return query.shape[1], head_num, query.shape[0]  # SBH


@_fake("npu_fusion_attention")
def _(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
      keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None,
      actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False):
    b, n, sq = _bns(query, head_num, input_layout)
    shape = list(query.shape)
    shape[-1] = shape[-1] * value.shape[-1] // key.shape[-1]
    stats = query.new_empty((b, n, sq, 8), dtype=torch.float32)
    skv = key.shape[2] if input_layout == "BNSD" else key.shape[0] if input_layout == "SBH" else key.shape[1]
    return (query.new_empty(shape), stats, stats.new_empty(stats.shape), query.new_empty((0,)), _unknown_int(),
            _unknown_int(), b * n * sq * skv)


def _unknown_int():
    """A data-dependent int output (the dropout seed and offset): unbacked under a shape environment (dynamo,
    export), 0 in a bare FakeTensorMode, which cannot represent one."""
    try:
        return torch.library.get_ctx().new_dynamic_size()
    except torch._subclasses.fake_tensor.DynamicOutputShapeException:
        return 0


@_fake("npu_fusion_attention_grad")
def _(query, key, value, dy, head_num, input_layout, **kwargs):
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape), query.new_empty((0,))


_FA_ARGS = ("head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale", "keep_prob", "pre_tockens",
            "next_tockens", "inner_precise", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode",
            "gen_mask_parallel", "sync")
_FA_DEFAULTS = dict(pse=None, padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647,
                    next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                    sparse_mode=0, gen_mask_parallel=True, sync=False)


def _fusion_attention_setup(ctx, inputs, output):
    q, k, v = inputs[:3]
    kw = dict(_FA_DEFAULTS)
    kw.update(zip(_FA_ARGS, inputs[3:]))
    ctx.kw = {name: val for name, val in kw.items() if name not in ("pse", "padding_mask", "atten_mask")}
    ctx.save_for_backward(q, k, v, output[0], output[1], output[2], kw["pse"], kw["atten_mask"])
    ctx.seed, ctx.offset, ctx.numels = output[4], output[5], output[6]


def _fusion_attention_backward(ctx, dout, *_):
    if ctx.needs_input_grad[5]:
        raise NotImplementedError("npu_fusion_attention: the gradient of pse is not supported on npu")
    q, k, v, out, smax, ssum, pse, mask = ctx.saved_tensors
    kw = dict(ctx.kw)
    head_num, layout, scale = kw.pop("head_num"), kw.pop("input_layout"), kw.pop("scale")
    dq, dk, dv, _ = _ops.npu_fusion_attention_grad(
        q, k, v, dout, head_num, layout, pse=pse, atten_mask=mask, softmax_max=smax, softmax_sum=ssum,
        attention_in=out, scale_value=scale, seed=ctx.seed, offset=ctx.offset, numels=ctx.numels, **kw)
    return (dq, dk, dv) + (None,) * 16


_autograd("npu_fusion_attention", _fusion_attention_backward, _fusion_attention_setup)


# --- the MoE chain (inference ops, as in torch_npu) --------------------------------------------------------

npu_moe_gating_top_k_softmax = _ops.npu_moe_gating_top_k_softmax  # (x, finished=None, k=1)
npu_moe_init_routing = _ops.npu_moe_init_routing  # (x, row_idx, expert_idx, active_num)
npu_moe_compute_expert_tokens = _ops.npu_moe_compute_expert_tokens  # (sorted_expert_for_source_row, num_expert)
npu_moe_finalize_routing = _ops.npu_moe_finalize_routing


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                       per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                       output_dtype=None, tuning_config=None):
    """torch_npu.npu_grouped_matmul: y_i = x_i @ weight_i (+ bias_i), or one x split by group_list (the MoE case:
    cumulative row counts per expert with group_list_type=0, counts with 1). Returns a list. The quantized
    variants' arguments are not supported and raise, naming the argument."""
    unsupported = dict(scale=scale, offset=offset, antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset,
                       per_token_scale=per_token_scale, activation_input=activation_input,
                       activation_quant_scale=activation_quant_scale, activation_quant_offset=activation_quant_offset,
                       output_dtype=output_dtype)
    for name, val in unsupported.items():
        if val is not None:
            raise NotImplementedError(f"npu_grouped_matmul: argument '{name}' (quantized grouped matmul) is not "
                                      "supported on npu")
    if act_type != 0:
        raise NotImplementedError("npu_grouped_matmul: argument 'act_type' (a fused activation) is not supported")
    if isinstance(x, torch.Tensor):
        x = [x]
    if isinstance(weight, torch.Tensor):
        weight = [weight]
    if isinstance(bias, torch.Tensor):
        bias = [bias]
    if group_list is not None and not isinstance(group_list, torch.Tensor):
        group_list = torch.tensor(list(group_list), dtype=torch.int64)
    return _ops.npu_grouped_matmul(x, weight, bias=bias, group_list=group_list, split_item=split_item,
                                   group_type=group_type, group_list_type=group_list_type)


@_fake("npu_moe_gating_top_k_softmax")
def _(x, finished=None, k=1):
    shape = (*x.shape[:-1], k)
    return x.new_empty(shape), x.new_empty(shape, dtype=torch.int32), x.new_empty(shape, dtype=torch.int32)


@_fake("npu_moe_init_routing")
def _(x, row_idx, expert_idx, active_num):
    rows, k = expert_idx.shape
    return (x.new_empty((min(rows, active_num) * k, x.shape[1])), x.new_empty((rows * k,), dtype=torch.int32),
            x.new_empty((rows * k,), dtype=torch.int32))


@_fake("npu_grouped_matmul")
def _(x, weight, *, bias=None, group_list=None, split_item=0, group_type=None, group_list_type=0):
    if group_list is None:
        outs = [xi.new_empty((xi.shape[0], wi.shape[1])) for xi, wi in zip(x, weight)]
        return [torch.cat(outs)] if split_item in (2, 3) else outs
    n = weight[0].shape[-1]
    if split_item in (2, 3):
        return [x[0].new_empty((x[0].shape[0], n))]
    return [x[0].new_empty((torch.library.get_ctx().new_dynamic_size(), n)) for _ in range(group_list.shape[0])]


@_fake("npu_moe_compute_expert_tokens")
def _(sorted_expert_for_source_row, num_expert):
    return sorted_expert_for_source_row.new_empty((num_expert,))


@_fake("npu_moe_finalize_routing")
def _(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row, export_for_source_row,
      drop_pad_mode=0):
    rows = next(t.shape[0] for t in (scales, export_for_source_row, skip1) if t is not None)
    return expanded_permuted_rows.new_empty((rows, expanded_permuted_rows.shape[1]))


# --- quantized matmul (inference): int8 x int8 with int32 accumulation, then dequantized ----------------------

npu_quant_matmul = _ops.npu_quant_matmul  # (x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None)


@_fake("npu_quant_matmul")
def _(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None):
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return x1.new_empty((*batch, x1.shape[-2], x2.shape[-1]), dtype=output_dtype or torch.int8)
