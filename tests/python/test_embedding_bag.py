"""F.embedding_bag / nn.EmbeddingBag on npu against CPU: sum, mean and max; per-sample weights; padding_idx;
include_last_offset; empty bags; int32 and int64 indices; a strided table; the table's and the per-sample weights'
gradients; scale_grad_by_freq (CUDA's meaning: CPU's kernel divides by another row's count); 16-bit tables against
float32 rounded once; CPU's errors, the offsets' and indices' values failing the stream as a CUDA kernel would;
no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim
from conftest import acknowledge_device_error

TOL = {torch.float64: 1e-12, torch.float32: 1e-5}
MODES = ["sum", "mean", "max"]


def case(dtype, num_weights=10, dim=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(num_weights, dim, generator=gen, dtype=torch.float64).to(dtype)
    # bags of sizes 3, 0 (empty), 1, 4 and 2 with repeated rows and row 2 twice in one bag
    indices = torch.tensor([1, 2, 2, 7, 0, 9, 3, 2, 4, 4])
    offsets = torch.tensor([0, 3, 3, 4, 8])
    return weight, indices, offsets


def run(weight, indices, offsets, psw=None, wide=None, **kw):
    """Output, the table's gradient and the per-sample weights' one (None when not given)."""
    dtype = weight.dtype
    if wide is not None:
        weight = weight.to(wide)
        psw = psw.to(wide) if psw is not None else None
    weight = weight.detach().clone().requires_grad_()
    psw = psw.detach().clone().requires_grad_() if psw is not None else None
    out = F.embedding_bag(indices, weight, offsets, per_sample_weights=psw, **kw)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64).to(out.dtype)
    out.backward(g.to(out.device))
    got = [out, weight.grad, psw.grad if psw is not None else None]
    return [t.detach().cpu().to(dtype) if t is not None else None for t in got]


def check(got, want, tol):
    for name, a, b in zip(("output", "grad_weight", "grad_per_sample_weights"), got, want):
        if b is None:
            assert a is None, name
        else:
            torch.testing.assert_close(a, b, rtol=tol, atol=tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_embedding_bag_matches_cpu(mode, padding_idx, include_last_offset, dtype, native_only):
    weight, indices, offsets = case(dtype)
    if include_last_offset:
        offsets = torch.cat([offsets, torch.tensor([indices.numel()])])
    kw = dict(mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset)
    want = run(weight, indices, offsets, **kw)
    got = run(weight.npu(), indices.npu(), offsets.npu(), **kw)
    check(got, want, TOL[dtype])


@pytest.mark.parametrize("padding_idx", [None, 4])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_per_sample_weights(padding_idx, dtype, native_only):
    weight, indices, offsets = case(dtype)
    psw = torch.randn(indices.numel(), generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    want = run(weight, indices, offsets, psw, mode="sum", padding_idx=padding_idx)
    got = run(weight.npu(), indices.npu(), offsets.npu(), psw.npu(), mode="sum", padding_idx=padding_idx)
    check(got, want, TOL[dtype])


@pytest.mark.parametrize("mode", MODES)
def test_int32_indices_strided_table_and_side_outputs(mode, native_only):
    weight, indices, offsets = case(torch.float32, num_weights=10, dim=5)
    table = torch.randn(5, 10, dtype=torch.float32).t()  # a transposed (non-contiguous) table
    for w in (weight, table):
        want = run(w, indices.int(), offsets.int(), mode=mode)
        got = run(w.npu(), indices.int().npu(), offsets.int().npu(), mode=mode)
        check(got, want, TOL[torch.float32])
    # the side outputs: one bag per index, the bags' sizes and the max rows, in the indices' integer type
    mode_id = MODES.index(mode)
    out, offset2bag, bag_size, max_indices = torch.ops.aten._embedding_bag(
        weight.npu(), indices.int().npu(), offsets.int().npu(), False, mode_id, False, None, False, 2)
    assert offset2bag.dtype == bag_size.dtype == max_indices.dtype == torch.int32
    assert offset2bag.cpu().tolist() == [0, 0, 0, 2, 3, 3, 3, 3, 4, 4]
    assert bag_size.cpu().tolist() == [1, 0, 1, 3, 2]  # row 2 is padding
    if mode == "max":
        want_out, _, _, want_max = torch.ops.aten._embedding_bag(weight, indices, offsets, False, 2, False, None,
                                                                 False, 2)
        got_max = max_indices.cpu().long()
        nonempty = bag_size.cpu() > 0
        assert torch.equal(got_max[nonempty], want_max[nonempty])
        assert (got_max[~nonempty] == -1).all()  # CUDA's marker for an empty bag (CPU leaves 0)
        torch.testing.assert_close(out.cpu(), want_out)
    else:
        assert max_indices.cpu().tolist() == bag_size.cpu().tolist()


def embedding_then_bags(weight, indices, offsets, mode):
    """embedding_bag as embedding (whose scale_grad_by_freq CPU computes right) followed by a per-bag sum."""
    bags = torch.zeros(indices.numel(), dtype=torch.long)
    bags[offsets[1:]] += 1
    bags = bags.cumsum(0)
    rows = F.embedding(indices, weight, scale_grad_by_freq=True)
    out = torch.zeros(offsets.numel(), weight.size(1), dtype=weight.dtype).index_add(0, bags, rows)
    if mode == "mean":
        out = out / torch.bincount(bags, minlength=offsets.numel()).clamp_min(1).unsqueeze(1).to(weight.dtype)
    return out


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_the_rows_own_count(mode, native_only):
    weight, indices, offsets = case(torch.float64)
    w = weight.clone().requires_grad_()
    embedding_then_bags(w, indices, offsets, mode).sum().backward()
    wn = weight.npu().requires_grad_()
    F.embedding_bag(indices.npu(), wn, offsets.npu(), mode=mode, scale_grad_by_freq=True).sum().backward()
    torch.testing.assert_close(wn.grad.cpu(), w.grad, rtol=1e-12, atol=1e-12)
    # row 2 appears three times: its gradient is the mean of its bags' gradients, not their sum
    assert wn.grad[2].cpu().tolist() != (3 * wn.grad[1]).cpu().tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_tables(mode, dtype, native_only):
    weight, indices, offsets = case(dtype, num_weights=40, dim=33)
    indices = torch.randint(0, 40, (200,), generator=torch.Generator().manual_seed(2))
    offsets = torch.tensor([0, 50, 50, 120, 199])
    psw = torch.rand(200, generator=torch.Generator().manual_seed(3)).to(dtype) if mode == "sum" else None
    want = run(weight, indices, offsets, psw, wide=torch.float32, mode=mode)
    got = run(weight.npu(), indices.npu(), offsets.npu(), psw.npu() if psw is not None else None, mode=mode)
    eps = torch.finfo(dtype).eps
    for a, b in zip(got, want):
        if b is not None:
            scale = max(b.abs().max().item(), 1.0)
            torch.testing.assert_close(a.float(), b.float(), rtol=4 * eps, atol=4 * eps * scale)


@pytest.mark.parametrize("dim", [64, 100, 144])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_wide_rows_sum_in_registers(dim, dtype, native_only):
    # sum / mean over contiguous rows accumulate 64 columns (then 16, then one) at a time in registers, with
    # rows prefetched 64 indices ahead (past the bag and up to the last index): wide rows, padding rows, empty
    # bags, per-sample weights: within half an ulp (plus fp32 accumulation) of CPU's float64 result.
    gen = torch.Generator().manual_seed(dim)
    weight = torch.randn(300, dim, generator=gen, dtype=torch.float64).to(dtype)
    indices = torch.randint(0, 300, (700,), generator=gen)
    indices[::7] = 5  # the padding row
    offsets = torch.cat([torch.tensor([0, 0, 3]), torch.randint(3, 700, (40,), generator=gen).sort().values])
    psw = torch.rand(700, generator=gen, dtype=torch.float64).to(dtype)
    for kw in (dict(mode="sum"), dict(mode="mean", padding_idx=5), dict(mode="sum", padding_idx=5, psw=psw)):
        kw = dict(kw)
        p = kw.pop("psw", None)
        want = F.embedding_bag(indices, weight.double(), offsets, per_sample_weights=None if p is None else p.double(),
                               **kw)  # exact (float64), not rounded: got is the exact value rounded once
        got = F.embedding_bag(indices.npu(), weight.npu(), offsets.npu(),
                              per_sample_weights=None if p is None else p.npu(), **kw).cpu()
        eps = torch.finfo(dtype).eps
        scale = want.abs().amax(1, keepdim=True).clamp_min(1.0)
        # rounding once (half an ulp) plus fp32 accumulation over up to 700 rows
        err = (got.double() - want).abs()
        assert (err <= 0.5 * eps * want.abs() + 700 * 2.0 ** -24 * scale).all(), (kw, err.max().item())
        assert torch.equal(got[0], torch.zeros(dim, dtype=dtype))  # the empty first bag


def test_module_training_step_with_2d_input(native_only):
    torch.manual_seed(0)
    cpu = torch.nn.EmbeddingBag(50, 8, mode="mean")
    npu = torch.nn.EmbeddingBag(50, 8, mode="mean").npu()
    npu.load_state_dict(cpu.state_dict())
    x = torch.randint(0, 50, (6, 4))
    for m, inp in ((cpu, x), (npu, x.npu())):
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        m(inp).pow(2).sum().backward()
        opt.step()
    torch.testing.assert_close(npu.weight.detach().cpu(), cpu.weight.detach(), rtol=1e-6, atol=1e-6)
    with torch.no_grad():  # the forward-only op
        torch.testing.assert_close(npu(x.npu()).cpu(), cpu(x), rtol=1e-6, atol=1e-6)


def test_empty_cases(native_only):
    w = torch.randn(4, 3)
    for indices, offsets in [(torch.tensor([], dtype=torch.long), torch.tensor([0, 0])),
                             (torch.tensor([1, 2]), torch.tensor([], dtype=torch.long))]:
        for mode in MODES:
            if offsets.numel() == 0 and mode == "max":
                want = torch.zeros(0, 3)  # CPU's max kernel crashes (SIGSEGV) on indices without bags
            else:
                want = F.embedding_bag(indices, w, offsets, mode=mode)
            got = F.embedding_bag(indices.npu(), w.npu(), offsets.npu(), mode=mode)
            assert got.shape == want.shape
            torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("mode", MODES)
def test_indices_after_the_last_offset_belong_to_no_bag(mode, native_only):
    weight, indices, offsets = case(torch.float32)
    offsets = torch.tensor([0, 3, 6])  # include_last_offset: bags [0, 3) and [3, 6); indices 6.. are in none
    got = run(weight.npu(), indices.npu(), offsets.npu(), mode=mode, include_last_offset=True)
    # as if the tail were not there, as CUDA's kernel reads the bags (CPU adds the tail to the last bag, and its
    # sum backward then reads past grad's rows)
    want = run(weight, indices[:6], offsets[:2], mode=mode)
    check(got, want, TOL[torch.float32])


def test_bad_arguments_raise_cpus_errors():
    w, indices, offsets = case(torch.float32)
    psw = torch.ones(indices.numel())
    for bad in [lambda w, i, o: F.embedding_bag(i.float(), w, o),                       # float indices
                lambda w, i, o: F.embedding_bag(i, w.long(), o),                        # integer table
                lambda w, i, o: F.embedding_bag(i, w, o, mode="mean", per_sample_weights=psw.to(w.device)),
                lambda w, i, o: F.embedding_bag(i, w, o, per_sample_weights=psw.double().to(w.device)),
                lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o[:0], False, 0, False, None, True, -1),
                lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o[None], False, 0, False, None, False, -1)]:
        with pytest.raises(RuntimeError) as cpu_err:
            bad(w, indices, offsets)
        with pytest.raises(RuntimeError) as npu_err:
            bad(w.npu(), indices.npu(), offsets.npu())
        # (the tensor type in a dtype error is the device's: "torch.FloatTensor" on CPU, "npuFloatType" here)
        first = [str(e.value).splitlines()[0].split("; but got")[0] for e in (npu_err, cpu_err)]
        assert first[0] == first[1]
        assert not torch.npu._device_error()


@pytest.mark.parametrize("indices,offsets,message", [
    ([1, 10, 2], [0, 1], "Index 1 of input takes value 10 which is not in the valid range \\[0, 10\\)"),
    ([1, -1, 3], [0, 1], "Index 1 of input takes value -1 which is not in the valid range \\[0, 10\\)"),
    ([1, 2, 3], [1, 2], "offsets\\[0\\] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                        "position 0. However, got 1"),
    ([1, 2, 3], [0, 5], "offsets\\[-1\\] can not be greater than input's length 3 but got offsets\\[-1\\] of 5"),
    ([1, 2, 3], [0, 2, 1], "embedding_bag: offsets have to be non-decreasing, but got offsets\\[1\\] = 2 > "
                           "offsets\\[2\\] = 1"),
])
def test_bad_values_fail_the_stream_and_nothing_is_read_back(indices, offsets, message):
    w = torch.randn(10, 4)
    i, o = torch.tensor(indices), torch.tensor(offsets)
    if "non-decreasing" not in message:  # CPU assumes non-decreasing offsets; it checks the rest
        # (its index errors name the value with a position that depends on its kernel path, or trip an internal
        # assert: ours name the index's position)
        with pytest.raises(RuntimeError, match=None if "Index" in message else message):
            F.embedding_bag(i, w, o)
    out = F.embedding_bag(i.npu(), w.npu(), o.npu())  # asynchronous, as a CUDA kernel's failure
    with pytest.raises(RuntimeError, match=message):
        out.cpu()
    acknowledge_device_error()


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_max_norm_renormalises_the_rows_in_place(norm_type, native_only):
    torch.manual_seed(0)
    weight = torch.randn(12, 6) * 3
    indices, offsets = torch.tensor([1, 4, 4, 7, 0, 11]), torch.tensor([0, 2, 3])
    w_cpu, w_npu = weight.clone(), weight.npu()
    want = F.embedding_bag(indices, w_cpu, offsets, max_norm=2.0, norm_type=norm_type)
    got = F.embedding_bag(indices.npu(), w_npu, offsets.npu(), max_norm=2.0, norm_type=norm_type)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w_npu.cpu(), w_cpu, rtol=1e-6, atol=1e-6)  # the named rows, scaled in place
    assert not torch.equal(w_cpu, weight) and torch.equal(w_cpu[2], weight[2])
    emb_cpu, emb_npu = torch.nn.Embedding(12, 6, max_norm=1.5), None
    emb_npu = torch.nn.Embedding(12, 6, max_norm=1.5).npu()
    emb_npu.load_state_dict(emb_cpu.state_dict())
    x = torch.tensor([[3, 3, 5], [9, 0, 3]])
    torch.testing.assert_close(emb_npu(x.npu()).cpu(), emb_cpu(x), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError) as cpu_err:
        torch.embedding_renorm_(torch.randn(3), indices, 1.0, 2.0)
    with pytest.raises(RuntimeError) as npu_err:
        torch.embedding_renorm_(torch.randn(3).npu(), indices.npu(), 1.0, 2.0)
    assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0]


def test_sparse_gradients_are_refused_by_name():
    w = torch.randn(5, 3).npu().requires_grad_()
    out = F.embedding_bag(torch.tensor([0, 1, 2]).npu(), w, torch.tensor([0, 1]).npu(), sparse=True)
    with pytest.raises(NotImplementedError, match="embedding_bag: sparse=True gradients are not supported on npu"):
        out.sum().backward()
    assert w.grad is None
