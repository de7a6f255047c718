"""torch_npu's MoE chain on npu (gating top-k softmax, init routing, expert tokens, grouped matmul, finalize
routing) against plain-PyTorch references on the CPU, one op at a time and as a whole MoE layer; bad input names
the argument."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def gating_ref(x, k):
    p = torch.softmax(x.float(), -1)
    y, idx = p.topk(k, -1)
    rows = x.numel() // x.shape[-1]
    row_idx = torch.arange(rows * k, dtype=torch.int32).reshape(k, rows).t().reshape(*x.shape[:-1], k)
    return y.to(x.dtype), idx.to(torch.int32), row_idx


def init_routing_ref(x, row_idx, expert_idx, active_num):
    rows, k = expert_idx.shape
    flat = expert_idx.flatten().long()
    order = torch.sort(flat, stable=True).indices
    sorted_rows = row_idx.flatten().long()[order]
    expanded_row_idx = torch.empty(rows * k, dtype=torch.int32)
    expanded_row_idx[sorted_rows] = torch.arange(rows * k, dtype=torch.int32)
    expanded_x = x[sorted_rows % rows][:min(rows, active_num) * k]
    return expanded_x, expanded_row_idx, flat[order].to(torch.int32)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("k", [1, 2, 8])
def test_gating_top_k_softmax(dtype, k, native_only):
    x = torch.randn(3, 5, 8).to(dtype)
    got = torch_npu_sim.npu_moe_gating_top_k_softmax(x.npu(), k=k)
    want = gating_ref(x, k)
    torch.testing.assert_close(got[0].cpu().float(), want[0].float(), **TOL[dtype])
    # rank by the probabilities rounded to x's dtype: compare experts where the reference has no near-tie
    p = torch.softmax(x.float(), -1).to(dtype).float().sort(-1, descending=True).values
    pad = torch.full((*p.shape[:-1], 1), float("inf"))
    padded = torch.cat([pad, p, -pad], -1)  # each of the top k apart from both neighbours
    distinct = (padded[..., 1:k + 1] != padded[..., :k]) & (padded[..., 1:k + 1] != padded[..., 2:k + 2])
    assert torch.equal(got[1].cpu()[distinct], want[1][distinct])
    assert torch.equal(got[2].cpu(), want[2]) and got[1].dtype == got[2].dtype == torch.int32


def test_gating_finished_rows_get_expert_count():
    x = torch.randn(4, 6)
    finished = torch.tensor([False, True, False, True])
    y, idx, _ = torch_npu_sim.npu_moe_gating_top_k_softmax(x.npu(), finished.npu(), k=2)
    want_y, want_idx, _ = gating_ref(x, 2)
    assert (idx.cpu()[finished] == 6).all() and torch.equal(idx.cpu()[~finished], want_idx[~finished])
    torch.testing.assert_close(y.cpu(), want_y)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("active_num", [100, 5, 0])
def test_init_routing(dtype, active_num, native_only):
    rows, k, E, H = 9, 2, 4, 6
    x = torch.randn(rows, H).to(dtype)
    expert_idx = torch.randint(0, E, (rows, k), dtype=torch.int32)
    row_idx = torch.arange(rows * k, dtype=torch.int32).reshape(k, rows).t().contiguous()
    got = torch_npu_sim.npu_moe_init_routing(x.npu(), row_idx.npu(), expert_idx.npu(), active_num)
    want = init_routing_ref(x, row_idx, expert_idx, active_num)
    for g, w in zip(got, want):
        assert torch.equal(g.cpu(), w)


@pytest.mark.parametrize("dtype", list(TOL))
def test_grouped_matmul_split_by_group_list(dtype, native_only):
    E, K, N = 4, 24, 10
    counts = [3, 0, 7, 5]
    x = torch.randn(sum(counts) + 2, K).to(dtype)  # two rows past the last group: zeros
    w = torch.randn(E, K, N).to(dtype)
    b = torch.randn(E, N).to(dtype)
    cum = torch.tensor(counts).cumsum(0)
    want, r = torch.zeros(x.shape[0], N), 0
    for e, c in enumerate(counts):
        want[r:r + c] = x[r:r + c].float() @ w[e].float() + b[e].float()
        r += c
    for list_dtype in (torch.int64, torch.int32):  # int32: npu_moe_compute_expert_tokens' output, read as it is
        (y,) = torch_npu_sim.npu_grouped_matmul([x.npu()], [w.npu()], bias=[b.npu()],
                                                group_list=cum.to(list_dtype).npu(), split_item=2, group_type=0)
        torch.testing.assert_close(y.cpu().float(), want, **TOL[dtype])
    # counts instead of the cumulative list, one weight per group in a list, one output per group
    outs = torch_npu_sim.npu_grouped_matmul(x.npu(), [t.npu() for t in w], group_list=counts, group_list_type=1)
    assert [o.shape[0] for o in outs] == counts
    no_bias = want[:sum(counts)] - torch.cat([b[e].float().expand(c, N) for e, c in enumerate(counts)])
    torch.testing.assert_close(torch.cat([o.cpu().float() for o in outs]), no_bias, **TOL[dtype])


def test_grouped_matmul_weight_rows_4k_apart(native_only):
    # small groups read the expert weights in place on libxsmm, except weights whose rows are a multiple of 4 KiB
    # apart (1024 columns here): libxsmm declines those and BLAS packs them; both with and without bias, against
    # CPU float64
    counts = [2, 5, 0, 9]
    g = torch.Generator().manual_seed(3)
    x = torch.randn(sum(counts), 40, generator=g)
    w, b = torch.randn(4, 40, 1024, generator=g), torch.randn(4, 1024, generator=g)
    cum = torch.tensor(counts).cumsum(0)
    want = torch.cat([x[r - c:r].double() @ w[e].double() for e, (c, r) in enumerate(zip(counts, cum.tolist()))])
    bias = torch.cat([b[e].double().expand(c, 1024) for e, c in enumerate(counts)])
    for with_bias in (False, True):
        (y,) = torch_npu_sim.npu_grouped_matmul([x.npu()], [w.npu()], bias=[b.npu()] if with_bias else None,
                                                group_list=cum.npu(), split_item=2, group_type=0)
        torch.testing.assert_close(y.cpu().double(), want + bias if with_bias else want, rtol=1e-5, atol=1e-4)


def test_compute_expert_tokens(native_only):
    # torch_npu's documented example: entries >= num_expert count for no expert
    got = torch_npu_sim.npu_moe_compute_expert_tokens(torch.tensor([3, 3, 4, 5, 6, 7], dtype=torch.int32).npu(), 5)
    assert got.dtype == torch.int32 and got.cpu().tolist() == [0, 0, 0, 2, 3]
    # a routed batch: the cumulative rows per expert, as bincount + cumsum computes them on the CPU
    g = torch.Generator().manual_seed(0)
    for rows, E in ((1000, 8), (37, 64), (0, 4), (5, 0)):
        s = torch.randint(0, E, (rows,), generator=g, dtype=torch.int32).sort().values if E else torch.zeros(
            rows, dtype=torch.int32)
        got = torch_npu_sim.npu_moe_compute_expert_tokens(s.npu(), E).cpu()
        want = torch.bincount(s.long(), minlength=E)[:E].cumsum(0).to(torch.int32)
        assert torch.equal(got, want), (rows, E)
    # it is what the grouped matmul takes: the layer routed through it equals the plain-PyTorch layer
    # (test_the_fused_chain_is_the_moe_layer), and its fake kernel gives the shape under compile
    f = torch.compile(lambda t: torch_npu_sim.npu_moe_compute_expert_tokens(t, 6) + 0, fullgraph=True,
                      backend="aot_eager")
    s = torch.tensor([0, 2, 2, 5], dtype=torch.int32).npu()
    assert f(s).cpu().tolist() == [1, 1, 3, 3, 3, 4]


def test_compute_expert_tokens_bad_input(native_only):
    from conftest import acknowledge_device_error

    s = torch.tensor([0, 1, 1], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"npu_moe_compute_expert_tokens: expected argument "
                                           r"'sorted_expert_for_source_row' on an npu device"):
        torch_npu_sim.npu_moe_compute_expert_tokens(s, 2)
    with pytest.raises(RuntimeError, match=r"npu_moe_compute_expert_tokens: argument 'sorted_expert_for_source_row' "
                                           r"must be a 1-D int32 tensor, got \[3\] Long"):
        torch_npu_sim.npu_moe_compute_expert_tokens(s.long().npu(), 2)
    with pytest.raises(RuntimeError, match=r"must be a 1-D int32 tensor, got \[1, 3\] Int"):
        torch_npu_sim.npu_moe_compute_expert_tokens(s[None].npu(), 2)
    with pytest.raises(RuntimeError, match=r"npu_moe_compute_expert_tokens: argument 'num_expert' must be >= 0, "
                                           r"got -1"):
        torch_npu_sim.npu_moe_compute_expert_tokens(s.npu(), -1)
    # the order is checked on the device: unsorted input fails there, naming the entry, and nothing is read back
    out = torch_npu_sim.npu_moe_compute_expert_tokens(torch.tensor([0, 2, 1, 3], dtype=torch.int32).npu(), 4)
    with pytest.raises(RuntimeError, match=r"moe_compute_expert_tokens: sorted_expert_for_source_row\[2\] = 1 is "
                                           r"below the entry before it \(2\)"):
        out.cpu()
    with pytest.raises(RuntimeError, match="sticky"):
        out.cpu()
    acknowledge_device_error()


def test_grouped_matmul_pairs_without_group_list(native_only):
    xs = [torch.randn(3, 4), torch.randn(5, 4)]
    ws = [torch.randn(4, 6), torch.randn(4, 6)]
    outs = torch_npu_sim.npu_grouped_matmul([t.npu() for t in xs], [t.npu() for t in ws])
    for o, x, w in zip(outs, xs, ws):
        torch.testing.assert_close(o.cpu(), x @ w)
    (cat,) = torch_npu_sim.npu_grouped_matmul([t.npu() for t in xs], [t.npu() for t in ws], split_item=3)
    torch.testing.assert_close(cat.cpu(), torch.cat([x @ w for x, w in zip(xs, ws)]))


def test_finalize_routing_formula(native_only):
    rows, k, E, H = 5, 2, 3, 4
    epr = torch.randn(rows * k, H)
    skip1, skip2, bias, scales = torch.randn(rows, H), torch.randn(rows, H), torch.randn(E, H), torch.rand(rows, k)
    src_to_dst = torch.randperm(rows * k).to(torch.int32)
    experts = torch.randint(0, E, (rows, k), dtype=torch.int32)
    got = torch_npu_sim.npu_moe_finalize_routing(*[t.npu() for t in (epr, skip1, skip2, bias, scales, src_to_dst,
                                                                     experts)])
    want = skip1 + skip2
    for j in range(k):
        dst = src_to_dst[torch.arange(rows) + j * rows].long()
        want = want + scales[:, j:j + 1] * (epr[dst] + bias[experts[:, j].long()])
    torch.testing.assert_close(got.cpu(), want)


def moe_layer_ref(x, router, w1, w2, k):
    """A top-k MoE layer with SwiGLU experts in plain PyTorch: the reference of the fused chain."""
    probs = torch.softmax(x.float() @ router.float(), -1)
    weight, experts = probs.topk(k, -1)
    out = x.float().clone()
    for e in range(w1.shape[0]):
        tok, slot = torch.where(experts == e)
        h = x[tok].float() @ w1[e].float()
        a, b = h.chunk(2, -1)
        out.index_add_(0, tok, (F.silu(a) * b) @ w2[e].float() * weight[tok, slot, None])
    return out


def moe_layer_fused(x, router, w1, w2, k):
    """The same layer through torch_npu's fused ops (what an Ascend model calls)."""
    rows, E = x.shape[0], w1.shape[0]
    y, expert_idx, row_idx = torch_npu_sim.npu_moe_gating_top_k_softmax(x @ router, k=k)
    ex, expanded_row_idx, expanded_expert_idx = torch_npu_sim.npu_moe_init_routing(x, row_idx, expert_idx, rows)
    # as Ascend inference code does (bincount would sync with the host for its output size)
    group_list = torch_npu_sim.npu_moe_compute_expert_tokens(expanded_expert_idx, E)
    (h,) = torch_npu_sim.npu_grouped_matmul([ex], [w1], group_list=group_list, split_item=2, group_type=0)
    (o,) = torch_npu_sim.npu_grouped_matmul([torch_npu_sim.npu_swiglu(h)], [w2], group_list=group_list,
                                            split_item=2, group_type=0)
    return torch_npu_sim.npu_moe_finalize_routing(o, x, None, None, y, expanded_row_idx, expert_idx)


@pytest.mark.parametrize("dtype", list(TOL))
def test_the_fused_chain_is_the_moe_layer(dtype, native_only):
    torch.manual_seed(0)
    T, H, F_, E, k = 37, 16, 24, 8, 2
    x, router = torch.randn(T, H).to(dtype), (torch.randn(H, E) * 0.5).to(dtype)
    w1, w2 = (torch.randn(E, H, 2 * F_) * 0.2).to(dtype), (torch.randn(E, F_, H) * 0.2).to(dtype)
    got = moe_layer_fused(*[t.npu() for t in (x, router, w1, w2)], k)
    want = moe_layer_ref(x, router, w1, w2, k)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=5e-2, atol=5e-2)
    torch.testing.assert_close(got.cpu().float(), want, **tol)


def test_bad_input_names_the_argument():
    x = torch.randn(4, 6, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_moe_gating_top_k_softmax: argument 'k' must be in \[1, experts = 6\]"):
        torch_npu_sim.npu_moe_gating_top_k_softmax(x, k=7)
    with pytest.raises(RuntimeError, match=r"npu_moe_gating_top_k_softmax: expected argument 'x' on an npu device"):
        torch_npu_sim.npu_moe_gating_top_k_softmax(x.cpu(), k=1)
    idx = torch.zeros(4, 2, dtype=torch.int32, device="npu")
    with pytest.raises(RuntimeError, match=r"npu_moe_init_routing: argument 'row_idx' must be int32"):
        torch_npu_sim.npu_moe_init_routing(x, idx.long(), idx, 4)
    with pytest.raises(RuntimeError, match=r"npu_grouped_matmul: group_list has 2 groups but weight has 3"):
        torch_npu_sim.npu_grouped_matmul(x, [torch.randn(6, 2, device="npu")] * 3, group_list=[1, 4])
    with pytest.raises(NotImplementedError, match=r"npu_grouped_matmul: argument 'antiquant_scale'"):
        torch_npu_sim.npu_grouped_matmul(x, [x.t()], antiquant_scale=[x])
    with pytest.raises(RuntimeError, match=r"npu_moe_finalize_routing: argument 'drop_pad_mode' must be 0"):
        torch_npu_sim.npu_moe_finalize_routing(x, x, None, None, x[:, :2], idx.flatten(), idx, 1)
    # an expert index outside [0, experts] fails on the device, and nothing wrong is read back
    from conftest import acknowledge_device_error

    bad = torch.tensor([[0, 1], [2, -3], [1, 0], [0, 2]], dtype=torch.int32, device="npu")
    rows = torch.arange(8, dtype=torch.int32, device="npu").reshape(2, 4).t().contiguous()
    out = torch_npu_sim.npu_moe_init_routing(x, rows, bad, 4)
    with pytest.raises(RuntimeError, match=r"moe_init_routing: expert_idx\[3\] = -3 is out of range"):
        out[0].cpu()
    acknowledge_device_error()


@pytest.mark.parametrize("list_dtype", [torch.int64, torch.int32])
def test_a_bad_group_list_fails_on_the_device_and_nothing_is_read_back(list_dtype):
    # group_list stays on the device (no host sync), so a decreasing one is found by the kernel: the error
    # surfaces at the next sync, names the op and the entry, and the output cannot be read
    from conftest import acknowledge_device_error

    x, w = torch.randn(6, 4, device="npu"), torch.randn(2, 4, 3, device="npu")
    (y,) = torch_npu_sim.npu_grouped_matmul([x], [w], group_list=torch.tensor([4, 2], dtype=list_dtype).npu(),
                                            split_item=2)
    with pytest.raises(RuntimeError, match=r"grouped_matmul: group_list\[1\] = 2 is less than group_list\[0\] = 4"):
        y.cpu()
    with pytest.raises(RuntimeError, match="sticky"):
        y.cpu()
    acknowledge_device_error()
