"""Native npu indexing and shape ops against CPU PyTorch: values for every dtype, autograd, strided inputs,
negative dims, empty tensors, device-checked indices and CPU indices with npu tensors."""
import pytest
import torch

from conftest import acknowledge_device_error
import torch_npu_sim

DEV = "npu"
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8,
          torch.bool]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0, 100, shape, generator=g).to(dtype)


def same(npu_tensor, cpu_tensor):
    got = npu_tensor.cpu()
    assert got.dtype == cpu_tensor.dtype and got.shape == cpu_tensor.shape
    if cpu_tensor.is_floating_point():
        torch.testing.assert_close(got, cpu_tensor, equal_nan=True, rtol=1e-2, atol=1e-2)
    else:
        assert torch.equal(got, cpu_tensor)


@pytest.fixture(autouse=True)
def _no_fallback():
    torch_npu_sim.reset_fallback_ops()
    yield


def assert_native(*ops):
    fell = torch_npu_sim.fallback_ops()
    assert not [op for op in ops if op in fell], fell


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_gather_scatter_all_dtypes(dtype):
    x = make((6, 5), dtype)
    xn = x.to(DEV)
    idx = torch.tensor([4, 0, 4, 2])
    same(xn.index_select(0, idx.to(DEV)), x.index_select(0, idx))
    same(xn.index_select(-1, idx.to(DEV)), x.index_select(-1, idx))
    g = torch.randint(0, 5, (6, 3))
    same(xn.gather(1, g.to(DEV)), x.gather(1, g))
    src = make((6, 3), dtype, seed=1)
    same(xn.scatter(1, g.to(DEV), src.to(DEV)), x.scatter(1, g, src))
    same(xn.scatter(-1, g.to(DEV), 1), x.scatter(-1, g, 1))
    perm = torch.stack([torch.randperm(5)[:3] for _ in range(6)])  # unique per row: scatter_add is exact
    same(xn.scatter_add(1, perm.to(DEV), src.to(DEV)), x.scatter_add(1, perm, src))
    same(xn.index_add(0, torch.tensor([5, 1]).to(DEV), xn[:2]), x.index_add(0, torch.tensor([5, 1]), x[:2]))
    same(torch.cat([xn, xn[:2]], 0), torch.cat([x, x[:2]], 0))
    same(xn.flip(0, -1), x.flip(0, -1))
    same(xn.roll(2, 1), x.roll(2, 1))
    same(xn.tril(-1), x.tril(-1))
    same(xn.triu(2), x.triu(2))
    mask = make((6, 5), torch.bool, seed=3)
    same(xn.masked_fill(mask.to(DEV), 1), x.masked_fill(mask, 1))
    same(xn.masked_select(mask.to(DEV)), x.masked_select(mask))
    same(xn.nonzero(), x.nonzero())
    same(xn[idx.to(DEV)], x[idx])
    same(xn[mask.to(DEV)], x[mask])
    y, yn = x.clone(), xn.clone()
    y[idx[:2], 1:3] = x[0, 0]
    yn[idx[:2].to(DEV), 1:3] = xn[0, 0]
    same(yn, y)
    assert_native("aten::index_select", "aten::gather", "aten::scatter.src", "aten::scatter.value",
                  "aten::scatter_add", "aten::index_add", "aten::cat", "aten::flip", "aten::roll", "aten::tril",
                  "aten::triu", "aten::masked_fill_.Scalar", "aten::masked_select", "aten::nonzero",
                  "aten::index.Tensor", "aten::_index_put_impl_")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32])
def test_sort_topk(dtype):
    x = make((7, 33), dtype)
    if dtype.is_floating_point:
        x[0, 3] = float("nan")
    xn = x.to(DEV)
    for dim in (0, -1):
        for desc in (False, True):
            v, i = xn.sort(dim=dim, descending=desc, stable=True)
            cv, ci = x.sort(dim=dim, descending=desc, stable=True)
            same(v, cv)
            same(i, ci)
    same(xn.argsort(dim=-1, stable=True), x.argsort(dim=-1, stable=True))
    v, i = xn.topk(4, 1)
    cv, _ = x.topk(4, 1)
    same(v, cv)
    same(xn.gather(1, i), cv)
    v, _ = xn.topk(3, 0, largest=False)
    same(v, x.topk(3, 0, largest=False)[0])
    assert_native("aten::sort.stable", "aten::topk")


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_scatter_reduce(reduce, include_self, dtype):
    x = make((4, 6), dtype)
    src = make((4, 5), dtype, seed=2)
    if dtype == torch.bfloat16 and reduce == "prod":
        src = torch.ones_like(src) * 2  # products of random bf16 lose too much precision
    idx = torch.randint(0, 6, (4, 5))
    got = x.to(DEV).scatter_reduce(1, idx.to(DEV), src.to(DEV), reduce, include_self=include_self)
    same(got, x.scatter_reduce(1, idx, src, reduce, include_self=include_self))
    got = x.to(DEV).scatter(1, idx.to(DEV), src.to(DEV), reduce="add")
    same(got, x.scatter(1, idx, src, reduce="add"))
    assert_native("aten::scatter_reduce.two", "aten::scatter.reduce")


def test_advanced_indexing_forms():
    x = make((4, 5, 6), torch.float32)
    xn = x.to(DEV)
    i = torch.tensor([[0, 3], [2, -1]])
    j = torch.tensor([1, 4])
    for key in [(i,), (slice(None), j), (i, j), (i, slice(None), j), (Ellipsis, j), (slice(1, 3), j, j),
                (x[:, :, 0] > 0,), (torch.tensor(2), j)]:
            kn = tuple(k.to(DEV) if isinstance(k, torch.Tensor) else k for k in key)
            same(xn[kn], x[key])
    # CPU indices with an npu tensor (as CUDA accepts)
    same(xn[i], x[i])
    same(xn[:, j], x[:, j])
    y, yn = x.clone(), xn.clone()
    y[i, j] = 7.0
    yn[i, j] = 7.0
    same(yn, y)
    # accumulate with duplicates
    dup = torch.tensor([0, 0, 3, 0])
    vals = make((4, 5, 6), torch.float32, seed=5)
    y, yn = x.clone(), xn.clone()
    y.index_put_((dup,), vals, accumulate=True)
    yn.index_put_((dup.to(DEV),), vals.to(DEV), accumulate=True)
    same(yn, y)
    assert_native("aten::index.Tensor", "aten::_index_put_impl_")


def test_noncontiguous_and_empty():
    x = make((8, 6), torch.float32)
    xt = x.t()  # non-contiguous
    xn = x.to(DEV).t()
    idx = torch.tensor([5, 0, 1])
    same(xn.index_select(1, idx.to(DEV)), xt.index_select(1, idx))
    g = torch.randint(0, 8, (6, 4))
    same(xn.gather(1, g.to(DEV)), xt.gather(1, g))
    same(xn[::2].flip(1), xt[::2].flip(1))
    same(torch.cat([xn, xn[:, ::2]], 1), torch.cat([xt, xt[:, ::2]], 1))
    same(xn.tril(), xt.tril())
    same(xn.sort(0)[0], xt.sort(0)[0])
    out = torch.empty(3, 8, device=DEV)[:, ::2]
    same(torch.index_select(xn, 1, idx[:1].to(DEV), out=torch.empty(0, device=DEV)), xt.index_select(1, idx[:1]))
    del out
    e = torch.empty(0, 6)
    same(e.to(DEV).index_select(0, torch.empty(0, dtype=torch.long, device=DEV)), e.index_select(0, torch.empty(0, dtype=torch.long)))
    same(x.to(DEV).index_select(0, torch.empty(0, dtype=torch.long, device=DEV)), x.index_select(0, torch.empty(0, dtype=torch.long)))
    same(torch.cat([e.to(DEV), x.to(DEV)]), torch.cat([e, x]))
    same(e.to(DEV).nonzero(), e.nonzero())
    same(e.to(DEV).sort(1)[0], e.sort(1)[0])
    same(e.to(DEV)[torch.tensor([], dtype=torch.long)], e[torch.tensor([], dtype=torch.long)])
    s = torch.tensor(3.0)
    same(s.to(DEV).gather(0, torch.tensor(0, device=DEV)), s.gather(0, torch.tensor(0)))


def test_autograd():
    x = make((5, 4), torch.float64).requires_grad_()
    xn = x.detach().to(DEV).requires_grad_()
    idx = torch.tensor([1, 1, 4])
    g = torch.tensor([[0, 3], [1, 1], [2, 0], [3, 3], [0, 0]])
    mask = x.detach() > 0

    def f(t, dev):
        i, gg, m = idx.to(dev), g.to(dev), mask.to(dev)
        parts = [
            t.index_select(0, i).sum(0),
            t.gather(1, gg).sum(0).repeat(2),
            t.scatter(1, gg, t[:, :2] * 2).sum(0),
            torch.cat([t, t * 3], 1).sum(0)[:4],
            t[i, 1:3].sum(0).repeat(2),
            t.index_put((i,), t[:3] * 0.5).sum(0),
            t.masked_fill(m, 0.5).sum(0),
            t.flip(0).roll(1, 1).tril().sum(0),
            t.sort(1)[0].sum(0),
            t.topk(2, 0)[0].sum(0),
        ]
        w = torch.arange(1.0, 1 + 4 * len(parts), dtype=torch.float64, device=dev).view(len(parts), 4)
        return (torch.stack(parts) * w)

    out_c = f(x, "cpu")
    out_n = f(xn, DEV)
    same(out_n.detach(), out_c.detach())
    grad = torch.ones_like(out_c)
    (gc,) = torch.autograd.grad(out_c, x, grad)
    (gn,) = torch.autograd.grad(out_n, xn, grad.to(DEV))
    same(gn, gc)


def test_embedding_padding_idx_backward():
    emb = torch.nn.Embedding(10, 3, padding_idx=2)
    embn = torch.nn.Embedding(10, 3, padding_idx=2).to(DEV)
    with torch.no_grad():
        embn.weight.copy_(emb.weight)
    ids = torch.tensor([[2, 5, 5], [9, 2, 0]])
    out_c = emb(ids)
    out_n = embn(ids.to(DEV))
    same(out_n.detach(), out_c.detach())
    (out_c * 3).sum().backward()
    (out_n * 3).sum().backward()
    same(embn.weight.grad, emb.weight.grad)
    assert float(embn.weight.grad.cpu()[2].abs().sum()) == 0.0
    assert_native("aten::embedding_dense_backward", "aten::index_select")


def test_composites_stay_native():
    x = make((4, 5), torch.float32)
    xn = x.to(DEV)
    g = torch.randint(0, 5, (4, 2))
    same(torch.stack([xn, xn], -1), torch.stack([x, x], -1))
    same(torch.take_along_dim(xn, g.to(DEV), 1), torch.take_along_dim(x, g, 1))
    same(xn.repeat(2, 1, 3), x.repeat(2, 1, 3))
    same(torch.nn.functional.one_hot(g.flatten().to(DEV), 6), torch.nn.functional.one_hot(g.flatten(), 6))
    same(torch.nn.functional.pad(xn, (1, 2, 0, 1), value=3.0), torch.nn.functional.pad(x, (1, 2, 0, 1), value=3.0))
    assert_native("aten::cat", "aten::gather", "aten::constant_pad_nd", "aten::repeat", "aten::scatter.value")


@pytest.mark.parametrize("call, op", [
    (lambda x: x.index_select(0, torch.tensor([1, 7], device=DEV)), "index_select"),
    (lambda x: x.gather(1, torch.tensor([[0], [9], [0], [0], [0]], device=DEV)), "gather"),
    (lambda x: x.scatter_add(0, torch.tensor([[5, 0, 0]], device=DEV), x[:1]), "scatter_add"),
    (lambda x: x[torch.tensor([0, 5], device=DEV)], "index"),
    (lambda x: x.index_put_((torch.tensor([-6], device=DEV),), torch.tensor(1.0, device=DEV)), "index_put_"),
    (lambda x: x.index_add_(0, torch.tensor([5], device=DEV), x[:1].clone()), "index_add"),
])
def test_out_of_range_index_raises_at_sync(call, op):
    x = torch.zeros(5, 3, device=DEV)
    with pytest.raises(RuntimeError, match=op):
        call(x)
        torch.npu.synchronize()
    with pytest.raises(RuntimeError, match=op):  # sticky until acknowledged
        x.cpu()
    acknowledge_device_error()
    assert float(torch.ones(2, device=DEV).cpu().sum()) == 2.0


def test_out_of_range_message_names_index_and_size():
    x = torch.zeros(5, device=DEV)
    with pytest.raises(RuntimeError, match=r"index_select\(\): index 7 is out of bounds for dimension 0 with size 5"):
        x.index_select(0, torch.tensor([7], device=DEV)).cpu()
    acknowledge_device_error()


def test_host_side_errors_match_cpu():
    x = torch.zeros(5, 3, device=DEV)
    with pytest.raises(IndexError):
        x[torch.tensor([0]), torch.tensor([0]), torch.tensor([0])]
    with pytest.raises(RuntimeError):
        x.gather(1, torch.zeros(5, 3, 2, dtype=torch.long, device=DEV))  # index must have self's rank
    with pytest.raises(RuntimeError):
        x.scatter_(0, torch.zeros(2, 3, dtype=torch.long, device=DEV), torch.zeros(2, 3, dtype=torch.float64, device=DEV))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float16, torch.bool])
def test_unique(dtype):
    x = make((4, 7), dtype) if dtype == torch.bool else (make((4, 7), torch.float32) * 3).round().to(dtype)
    xn = x.to(DEV)
    for kw in [{}, dict(return_inverse=True), dict(return_counts=True), dict(return_inverse=True, return_counts=True)]:
        got = torch.unique(xn, **kw)
        ref = torch.unique(x, **kw)
        got, ref = (got, ref) if isinstance(ref, tuple) else ((got,), (ref,))
        for a, b in zip(got, ref):
            same(a, b)
    same(torch.unique(xn[:0]), torch.unique(x[:0]))
    assert_native("aten::_unique2")


def test_bincount_searchsorted_bucketize():
    i = torch.tensor([0, 3, 3, 1, 7])
    w = torch.rand(5)
    same(torch.bincount(i.to(DEV)), torch.bincount(i))
    same(torch.bincount(i.to(DEV), minlength=12), torch.bincount(i, minlength=12))
    same(torch.bincount(i.to(DEV), w.to(DEV)), torch.bincount(i, w))
    same(torch.bincount(i.to(DEV), w.double().to(DEV)), torch.bincount(i, w.double()))
    same(torch.bincount(i[:0].to(DEV)), torch.bincount(i[:0]))
    with pytest.raises(RuntimeError, match="bincount"):
        torch.bincount(torch.tensor([1, -1], device=DEV))
        torch.npu.synchronize()
    acknowledge_device_error()
    bd = torch.sort(torch.randn(3, 6))[0]
    v = torch.randn(3, 4)
    v[0, 0] = bd[0, 2]  # ties: left/right differ
    for right in (False, True):
        same(torch.searchsorted(bd.to(DEV), v.to(DEV), right=right), torch.searchsorted(bd, v, right=right))
        same(torch.searchsorted(bd[0].to(DEV), v.to(DEV), side="right" if right else "left", out_int32=True),
             torch.searchsorted(bd[0], v, side="right" if right else "left", out_int32=True))
        same(torch.bucketize(v.to(DEV), bd[0].to(DEV), right=right), torch.bucketize(v, bd[0], right=right))
    s = torch.randn(6)
    so = s.argsort()
    same(torch.searchsorted(s.to(DEV), v.to(DEV), sorter=so.to(DEV)), torch.searchsorted(s, v, sorter=so))
    same(torch.searchsorted(bd[0].to(DEV), 0.1), torch.searchsorted(bd[0], 0.1))
    assert_native("aten::bincount", "aten::searchsorted.Tensor", "aten::searchsorted.Scalar", "aten::bucketize.Tensor")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_index_fill_copy_take_put_kthvalue(dtype):
    x = make((5, 4), dtype)
    xn = x.to(DEV)
    idx = torch.tensor([3, -1, 0])
    same(xn.index_fill(0, idx.to(DEV), 1), x.index_fill(0, idx, 1))
    same(xn.index_fill(-1, idx[:2].to(DEV), torch.tensor(0, dtype=dtype)), x.index_fill(-1, idx[:2], torch.tensor(0, dtype=dtype)))
    ci = torch.tensor([4, 1])
    src = make((2, 4), dtype, seed=4)
    same(xn.index_copy(0, ci.to(DEV), src.to(DEV)), x.index_copy(0, ci, src))
    same(xn.t().index_copy(1, ci.to(DEV), src.t().to(DEV)), x.t().index_copy(1, ci, src.t()))
    ti = torch.tensor([[0, 19], [-1, 7]])
    same(xn.take(ti.to(DEV)), x.take(ti))
    same(xn.t().take(ti.to(DEV)), x.t().take(ti))
    pv = make((4,), dtype, seed=6)
    pi = torch.tensor([0, 3, -2, 3])
    if dtype != torch.bool:
        same(xn.clone().put_(pi.to(DEV), pv.to(DEV), accumulate=True), x.clone().put_(pi, pv, accumulate=True))
    same(xn.t().clone().put_(pi[:3].to(DEV), pv[:3].to(DEV)), x.t().clone().put_(pi[:3], pv[:3]))
    if dtype != torch.bool:
        v, i = xn.kthvalue(2, 0)
        cv, _ = x.kthvalue(2, 0)
        same(v, cv)
        same(xn.gather(0, i.unsqueeze(0)).squeeze(0), cv)
        same(xn.kthvalue(3, -1, keepdim=True)[0], x.kthvalue(3, -1, keepdim=True)[0])
    with pytest.raises(RuntimeError, match="take"):
        xn.take(torch.tensor([20], device=DEV))
        torch.npu.synchronize()
    acknowledge_device_error()
    assert_native("aten::index_fill_.int_Scalar", "aten::index_fill_.int_Tensor", "aten::index_copy.out",
                  "aten::take", "aten::put_", "aten::kthvalue.values")


def test_npu_index_on_cpu_tensor_is_refused_like_cuda():
    x = torch.zeros(5)
    with pytest.raises(IndexError, match="same device"):
        x[torch.tensor([1], device=DEV)]


def test_large_multi_block_kernels():
    # sizes that split over many AI-core blocks; float64/int64 so duplicate accumulation order does not matter
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3000, 700, generator=g, dtype=torch.float64)
    xn = x.to(DEV)
    idx = torch.randint(0, 3000, (2500,), generator=g)
    same(xn.index_select(0, idx.to(DEV)), x.index_select(0, idx))
    gi = torch.randint(0, 700, (3000, 300), generator=g)
    same(xn.gather(1, gi.to(DEV)), x.gather(1, gi))
    src = torch.randint(-5, 5, (3000, 300), generator=g).double()
    same(xn.scatter_add(1, gi.to(DEV), src.to(DEV)), x.scatter_add(1, gi, src))
    same(xn.index_add(0, idx.to(DEV), xn[:2500]), x.index_add(0, idx, x[:2500]))
    ones = torch.ones(2500, 700, dtype=torch.int64)
    acc = torch.zeros(3000, 700, dtype=torch.int64)
    accn = acc.to(DEV)
    acc.index_put_((idx,), ones, accumulate=True)
    accn.index_put_((idx.to(DEV),), ones.to(DEV), accumulate=True)
    same(accn, acc)
    same(xn.sort(dim=0, stable=True)[1], x.sort(dim=0, stable=True)[1])
    same(xn[xn > 1.0], x[x > 1.0])
    # strided operands on the innermost-run path
    ti = torch.randint(0, 3000, (300, 700), generator=g)
    same(xn.t().gather(1, ti.to(DEV)), x.t().gather(1, ti))
    same(xn.t().index_select(1, idx.to(DEV)), x.t().index_select(1, idx))
    same(xn[::2, ::3].index_select(0, (idx % 1500).to(DEV)), x[::2, ::3].index_select(0, idx % 1500))
    same(xn.topk(5, 0, largest=False)[1], x.topk(5, 0, largest=False)[1])


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_index_reduce_and_masked_scatter(reduce, include_self, dtype):
    x = (make((5, 3), torch.float32) * 4).round().to(dtype)
    src = (make((4, 3), torch.float32, seed=9) * 4).round().to(dtype)
    idx = torch.tensor([0, 4, 0, -0])
    same(x.to(DEV).index_reduce(0, idx.to(DEV), src.to(DEV), reduce, include_self=include_self),
         x.index_reduce(0, idx, src, reduce, include_self=include_self))
    same(x.t().to(DEV).index_reduce(1, idx.to(DEV), src.t().to(DEV), reduce, include_self=include_self),
         x.t().index_reduce(1, idx, src.t(), reduce, include_self=include_self))
    mask = make((5, 3), torch.bool, seed=1)
    source = (make((20,), torch.float32, seed=2) * 4).round().to(dtype)
    same(x.to(DEV).masked_scatter(mask.to(DEV), source.to(DEV)), x.masked_scatter(mask, source))
    same(x.to(DEV).masked_scatter(mask[0].to(DEV), source.to(DEV)), x.masked_scatter(mask[0], source))
    with pytest.raises(RuntimeError, match="masked_scatter"):
        x.to(DEV).masked_scatter(torch.ones(5, 3, dtype=torch.bool, device=DEV), source[:3].to(DEV))
        torch.npu.synchronize()
    acknowledge_device_error()
    assert_native("aten::index_reduce", "aten::masked_scatter_")


def test_advanced_indexing_wide_rows():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, 30, 50, generator=g)
    xn = x.to(DEV)
    i = torch.randint(-40, 40, (7, 3), generator=g)
    j = torch.randint(0, 30, (3,), generator=g)
    for key in [(i,), (i, j), (slice(None), j), (i, slice(None), j % 50), (Ellipsis, j)]:
        kn = tuple(k.to(DEV) if isinstance(k, torch.Tensor) else k for k in key)
        same(xn[kn], x[key])
        same(xn.transpose(0, 2)[kn] if len(key) < 3 else xn[kn], x.transpose(0, 2)[key] if len(key) < 3 else x[key])
    y, yn = x.clone(), xn.clone()
    y.index_put_((i,), torch.ones(30, 50), accumulate=True)
    yn.index_put_((i.to(DEV),), torch.ones(30, 50, device=DEV), accumulate=True)
    same(yn, y)
    rows, v = torch.tensor([5, -1, 7]), torch.randn(3, 30, 50, generator=g)
    for view in (lambda t: t, lambda t: t.transpose(1, 2)):  # dense rows, then rows strided along the run
        z, zn = view(x.clone()), view(xn.clone())
        z[rows] = view(v)
        zn[rows.to(DEV)] = view(v).to(DEV)
        same(zn, z)
    with pytest.raises(RuntimeError, match="index"):
        xn[torch.tensor([0, 40], device=DEV)].cpu()
    acknowledge_device_error()


@pytest.mark.parametrize("layout", ["row", "column", "strided"])
@pytest.mark.parametrize("shape", [(5, 7), (7, 5), (3, 4, 6), (1, 1), (2, 0, 3)])
def test_tril_triu_every_layout_and_in_place(layout, shape):
    """Lines run along the denser dim (columns of LAPACK's column-major results): every diagonal, both ways."""
    wide = torch.randn(*shape[:-1], 2 * shape[-1], generator=torch.Generator().manual_seed(3))
    x = wide[..., ::2] if layout == "strided" else wide[..., :shape[-1]].contiguous()
    xn = {"row": lambda: x.to("npu"), "column": lambda: x.to("npu").mT.contiguous().mT,
          "strided": lambda: wide.to("npu")[..., ::2]}[layout]()
    for d in [-3, -1, 0, 1, 2, 8]:
        for name in ["tril", "triu"]:
            same(getattr(xn, name)(d), getattr(x, name)(d))
            y = xn.mT.clone().mT if layout == "column" else xn.clone()
            getattr(y, name + "_")(d)
            same(y, getattr(x, name)(d))
