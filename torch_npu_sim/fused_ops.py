"""torch_npu's fused ops on npu: their Python names and signatures, fake (Meta) kernels and autograd.

The ops themselves are defined by the op table (``csrc/aten/ops.yaml``, family ``fused``, namespace ``npu``)
and run on the npu kernels; here each gets a fake kernel, so shapes propagate under FakeTensor /
``torch.compile``, and, where torch_npu's op is differentiable, a backward through its ``*_backward`` op.
Call them as ``torch.ops.npu.<name>`` or ``torch_npu_sim.<name>``.
"""
import torch

_ops = torch.ops.npu
_lib = "npu::"

__all__ = ["npu_linear_add_gelu"]


def _fake(name):
    return torch.library.register_fake(_lib + name)


def _autograd(name, backward, setup_context):
    torch.library.register_autograd(_lib + name, backward, setup_context=setup_context)


# --- npu_linear_add_gelu: GELU(x @ weight + bias), one tile-layer kernel ---------------------------------

def npu_linear_add_gelu(x, weight, bias):
    """``GELU(x @ weight + bias)`` (erf GELU) as one kernel: x [M, K], weight [K, N], bias [N], float32."""
    return _ops.npu_linear_add_gelu(x, weight, bias)


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
