"""torch.autocast("npu") follows CUDA's autocast policy: ops from CUDA's documented lists produce the
same output dtypes under npu autocast as CUDA autocast promises; nesting, enabled=False and the cast
cache behave as on CUDA."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401

# The oracle: CUDA's documented autocast op reference (torch.amp docs, "CUDA Op-Specific Behavior"),
# every op of its three lists. Builders take (a, b, v) = two 8x8 matrices and a vector of 8 and apply
# only the op under test (plus exact views), so values can be checked against float32.
def _img(a, c=2, dims=2):
    return a.reshape(-1)[:c * 4**dims].reshape(1, c, *([4] * dims))


def _cell(kind):
    def run(a, b, v):
        cell = getattr(torch.nn, kind)(8, 8).to(a.device)
        out = cell(a)
        return out[0] if isinstance(out, tuple) else out
    return run


# "CUDA Ops that can autocast to float16" (lower precision: the autocast dtype, float16 or bfloat16)
LOWER = {
    "__matmul__": lambda a, b, v: a @ b,
    "addbmm": lambda a, b, v: torch.addbmm(a, a[None], b[None]),
    "addmm": lambda a, b, v: torch.addmm(a, a, b),
    "addmv": lambda a, b, v: torch.addmv(v, a, v),
    "addr": lambda a, b, v: torch.addr(a, v, v),
    "baddbmm": lambda a, b, v: torch.baddbmm(a[None], a[None], b[None]),
    "bmm": lambda a, b, v: torch.bmm(a[None], b[None]),
    "chain_matmul": lambda a, b, v: torch.linalg.multi_dot([a, b, a]),  # chain_matmul is deprecated for it
    "multi_dot": lambda a, b, v: torch.linalg.multi_dot([a, b, a]),
    "conv1d": lambda a, b, v: F.conv1d(a[None], b[:, :, None]),
    "conv2d": lambda a, b, v: F.conv2d(_img(a), b[:4, :2].reshape(4, 2, 1, 1)),
    "conv3d": lambda a, b, v: F.conv3d(_img(a, 1, 3), b[:2, :1].reshape(2, 1, 1, 1, 1)),
    "conv_transpose1d": lambda a, b, v: F.conv_transpose1d(a[None], b[:, :, None]),
    "conv_transpose2d": lambda a, b, v: F.conv_transpose2d(_img(a), b.reshape(-1)[:16].reshape(2, 2, 2, 2)),
    "conv_transpose3d": lambda a, b, v: F.conv_transpose3d(_img(a, 1, 3), b[:1, :2].reshape(1, 2, 1, 1, 1)),
    "GRUCell": _cell("GRUCell"),
    "linear": lambda a, b, v: F.linear(a, b, v),
    "LSTMCell": _cell("LSTMCell"),
    "matmul": lambda a, b, v: torch.matmul(a, b),
    "mm": lambda a, b, v: torch.mm(a, b),
    "mv": lambda a, b, v: torch.mv(a, v),
    "prelu": lambda a, b, v: F.prelu(a, v),
    "RNNCell": _cell("RNNCell"),
    "scaled_dot_product_attention": lambda a, b, v: F.scaled_dot_product_attention(a[None], b[None], a[None]),
}
# "CUDA Ops that can autocast to float32": given float16 inputs they compute in and return float32
_LBL = torch.tensor([1, 0, 3, 2, 1, 0, 3, 2])
FP32 = {
    "__pow__": lambda a, b, v: a ** 2,
    "__rdiv__": lambda a, b, v: 2 / a,
    "__rpow__": lambda a, b, v: 2 ** a,
    "__rtruediv__": lambda a, b, v: 2.0 / a,
    "acos": lambda a, b, v: torch.acos(a.clamp(-1, 1)),
    "asin": lambda a, b, v: torch.asin(a.clamp(-1, 1)),
    "binary_cross_entropy_with_logits": lambda a, b, v: F.binary_cross_entropy_with_logits(a, b.abs().clamp(max=1)),
    "cosh": lambda a, b, v: torch.cosh(a),
    "cosine_embedding_loss": lambda a, b, v: F.cosine_embedding_loss(a, b, v.sign()),
    "cdist": lambda a, b, v: torch.cdist(a, b),
    "cosine_similarity": lambda a, b, v: F.cosine_similarity(a, b),
    "cross_entropy": lambda a, b, v: F.cross_entropy(a, _LBL.to(a.device)),
    "cumprod": lambda a, b, v: torch.cumprod(a, 0),
    "cumsum": lambda a, b, v: torch.cumsum(a, 0),
    "dist": lambda a, b, v: torch.dist(a, b),
    "erfinv": lambda a, b, v: torch.erfinv(a.clamp(-0.5, 0.5)),
    "exp": lambda a, b, v: torch.exp(a),
    "expm1": lambda a, b, v: torch.expm1(a),
    "group_norm": lambda a, b, v: F.group_norm(_img(a), 2),
    "hinge_embedding_loss": lambda a, b, v: F.hinge_embedding_loss(a, b.sign()),
    "kl_div": lambda a, b, v: F.kl_div(a, b.abs(), reduction="batchmean"),
    "l1_loss": lambda a, b, v: F.l1_loss(a, b),
    "layer_norm": lambda a, b, v: F.layer_norm(a, a.shape[-1:]),
    "log": lambda a, b, v: torch.log(a.abs()),
    "log_softmax": lambda a, b, v: torch.log_softmax(a, -1),
    "log10": lambda a, b, v: torch.log10(a.abs()),
    "log1p": lambda a, b, v: torch.log1p(a.abs()),
    "log2": lambda a, b, v: torch.log2(a.abs()),
    "margin_ranking_loss": lambda a, b, v: F.margin_ranking_loss(a, b, b.sign()),
    "mse_loss": lambda a, b, v: F.mse_loss(a, b),
    "multilabel_margin_loss": lambda a, b, v: F.multilabel_margin_loss(a, _LBL.to(a.device).repeat(8, 1)),
    "multi_margin_loss": lambda a, b, v: F.multi_margin_loss(a, _LBL.to(a.device)),
    "nll_loss": lambda a, b, v: F.nll_loss(a, _LBL.to(a.device)),
    "norm": lambda a, b, v: torch.norm(a),
    "normalize": lambda a, b, v: F.normalize(a),
    "pdist": lambda a, b, v: F.pdist(a),
    "poisson_nll_loss": lambda a, b, v: F.poisson_nll_loss(a, b.abs()),
    "pow": lambda a, b, v: torch.pow(a.abs(), b),
    "prod": lambda a, b, v: torch.prod(a),
    "reciprocal": lambda a, b, v: torch.reciprocal(a),
    "rsqrt": lambda a, b, v: torch.rsqrt(a.abs()),
    "sinh": lambda a, b, v: torch.sinh(a),
    "smooth_l1_loss": lambda a, b, v: F.smooth_l1_loss(a, b),
    "soft_margin_loss": lambda a, b, v: F.soft_margin_loss(a, b.sign()),
    "softmax": lambda a, b, v: torch.softmax(a, -1),
    "softmin": lambda a, b, v: F.softmin(a, -1),
    "softplus": lambda a, b, v: F.softplus(a),
    "sum": lambda a, b, v: torch.sum(a),
    "renorm": lambda a, b, v: torch.renorm(a, 2, 0, 1.0),
    "tan": lambda a, b, v: torch.tan(a.clamp(-1, 1)),
    "triplet_margin_loss": lambda a, b, v: F.triplet_margin_loss(a, b, a.flip(0)),
}
# "CUDA Ops that promote to the widest input type": one float16 and one float32 operand give float32
PROMOTE = {
    "addcdiv": lambda h, a: torch.addcdiv(h, a, a.abs() + 1),
    "addcmul": lambda h, a: torch.addcmul(h, h, a),
    "atan2": lambda h, a: torch.atan2(h, a),
    "bilinear": lambda h, a: F.bilinear(h, a, torch.stack([a, a.t()])),
    "cross": lambda h, a: torch.cross(h[:, :3], a[:, :3], dim=1),
    "dot": lambda h, a: torch.dot(h[0], a[0]),
    "grid_sample": lambda h, a: F.grid_sample(_img(h), a[:8].reshape(1, 4, 4, 4)[..., :2].tanh(),
                                              align_corners=False),
    "index_put": lambda h, a: h.index_put((torch.tensor([0, 2], device=h.device),), a[:2]),
    "scatter_add": lambda h, a: h.scatter_add(0, torch.zeros(2, 8, dtype=torch.long, device=h.device), a[:2]),
    "tensordot": lambda h, a: torch.tensordot(h, a, dims=1),
    # not in the list because they promote natively (autocast_mode.cpp): cat, stack
    "cat": lambda h, a: torch.cat([h, a]),
    "stack": lambda h, a: torch.stack([h, a]),
}


@pytest.fixture
def operands():
    g = torch.Generator().manual_seed(0)
    a, b, v = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g), torch.randn(8, generator=g)
    return a.npu(), b.npu(), v.npu()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(LOWER))
def test_lower_precision_ops(operands, dtype, name):
    with torch.autocast("npu", dtype=dtype):
        out = LOWER[name](*operands)
    assert out.dtype == dtype and out.is_npu


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(FP32))
def test_fp32_ops(operands, dtype, name):
    low = tuple(t.to(dtype) for t in operands)
    with torch.autocast("npu", dtype=dtype):
        out = FP32[name](*low)
    assert out.dtype == torch.float32 and out.is_npu
    # the value is the float32 computation on the same (rounded) inputs, as CUDA computes it, except
    # where ATen itself asks for an inner step in the input dtype (cross_entropy calls
    # log_softmax(x, dim, dtype=x.dtype), which autocast leaves alone, on CUDA too)
    ref = FP32[name](*(t.cpu().float() for t in low))
    tol = 1e-2 if name == "cross_entropy" else 1e-4
    torch.testing.assert_close(out.cpu(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(PROMOTE))
def test_promote_ops_widest_type(operands, name):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.float16):
        mixed = PROMOTE[name](a.half(), b)
        same = PROMOTE[name](a.half(), b.half())
    assert mixed.dtype == torch.float32 and mixed.is_npu
    assert same.dtype == torch.float16


def test_promote_ops(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        low = torch.mm(a, b)  # bf16
        assert torch.addcmul(a, low, low).dtype == torch.float32  # promote to the widest input
        assert torch.atan2(low, a).dtype == torch.float32
        assert torch.cat([low, a]).dtype == torch.float32  # cat promotes natively


def test_defaults_aliases_and_dtype_api(operands):
    a, b, _ = operands
    assert torch.get_autocast_dtype("npu") == torch.float16
    assert torch.npu.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    with torch.npu.amp.autocast():
        assert torch.mm(a, b).dtype == torch.float16
    torch.set_autocast_dtype("npu", torch.bfloat16)
    try:
        with torch.autocast("npu"):
            assert torch.mm(a, b).dtype == torch.bfloat16
    finally:
        torch.set_autocast_dtype("npu", torch.float16)


def test_nesting_and_disable(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.mm(a, b).dtype == torch.bfloat16
        with torch.autocast("npu", enabled=False):
            assert torch.mm(a, b).dtype == torch.float32
        with torch.autocast("npu", dtype=torch.float16):
            assert torch.mm(a, b).dtype == torch.float16
        assert torch.mm(a, b).dtype == torch.bfloat16
    assert torch.mm(a, b).dtype == torch.float32
    # CPU autocast is independent of npu autocast
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.mm(a.cpu(), b.cpu()).dtype == torch.float32


def test_values_match_cpu_autocast(operands):
    a, b, _ = operands
    with torch.autocast("npu", dtype=torch.bfloat16):
        got = torch.mm(a, b)
    ref = torch.mm(a.cpu().bfloat16(), b.cpu().bfloat16())
    torch.testing.assert_close(got.cpu(), ref, atol=0.1, rtol=0.02)


def test_weight_cast_cache(operands):
    a, _, _ = operands
    w = torch.nn.Parameter(torch.randn(8, 8, device="npu"))
    with torch.autocast("npu", dtype=torch.float16):
        y1 = F.linear(a, w)
        y2 = F.linear(a, w)
        assert y1.dtype == y2.dtype == torch.float16
        # the fp16 copy of a leaf that requires grad is cached and reused inside the region
        assert torch.is_autocast_cache_enabled()
    (y1.float().sum() + y2.float().sum()).backward()
    assert w.grad.dtype == torch.float32 and w.grad.is_npu


def test_binary_cross_entropy_is_banned(operands):
    p = torch.rand(4, device="npu")
    with torch.autocast("npu"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)
