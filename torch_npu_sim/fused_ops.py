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
           "npu_scaled_masked_softmax"]


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
def _(grad, x, r1, r2, rotary_mode="half"):
    return x.new_empty(x.shape), r1.new_empty(r1.shape), r2.new_empty(r2.shape)


def _rotary_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:3])
    ctx.mode = inputs[3] if len(inputs) > 3 else "half"


def _rotary_backward(ctx, grad):
    x, r1, r2 = ctx.saved_tensors
    dx, dr1, dr2 = _ops.npu_rotary_mul_backward(grad, x, r1, r2, ctx.mode)
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
