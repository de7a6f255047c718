"""Core ops native on the device: factories, views, resize_/set_, copies in every direction, fill_/zero_,
item(); values compared against CPU PyTorch."""
import pytest
import torch

import torch_npu_sim

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64]


def sample(dtype, shape=(5, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 50
    if dtype.is_complex:
        return torch.complex(x, x.flip(-1)).to(dtype)
    return x.to(dtype)


def no_fallback():
    torch_npu_sim.reset_fallback_ops()


@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_every_dtype(dtype):
    x = sample(dtype)
    y = x.to("npu")
    assert y.dtype == dtype and y.device.type == "npu"
    assert torch.equal(y.cpu(), x)


@pytest.mark.parametrize("src_dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool,
                                       torch.float64, torch.uint8])
@pytest.mark.parametrize("dst_dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool, torch.float64,
                                       torch.float16])
def test_dtype_conversion_on_device_matches_cpu(src_dtype, dst_dtype):
    x = sample(src_dtype)
    expected = x.to(dst_dtype)
    no_fallback()
    got = x.to("npu").to(dst_dtype)
    assert got.dtype == dst_dtype
    assert torch.equal(got.cpu(), expected)
    assert torch_npu_sim.fallback_ops() == {}


def test_bfloat16_rounding_is_round_to_nearest_even():
    # 1 + 2^-8 lies exactly between two bf16 values: ties go to the even mantissa (1.0);
    # 1 + 3*2^-8 rounds up to 1 + 2^-6.
    x = torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), float("nan"), float("inf")])
    assert torch.equal(x.npu().bfloat16().cpu(), x.bfloat16()) or torch.isnan(x.npu().bfloat16().cpu()[3])
    got = x.npu().to(torch.bfloat16).cpu().float()
    ref = x.to(torch.bfloat16).float()
    assert torch.equal(got[~ref.isnan()], ref[~ref.isnan()]) and got[3].isnan()


def test_non_contiguous_sources_and_destinations():
    x = sample(torch.float32, (6, 8))
    nx = x.npu()
    assert torch.equal(nx.t().contiguous().cpu(), x.t().contiguous())
    assert torch.equal(nx[::2, 1::3].cpu(), x[::2, 1::3])
    # npu -> npu into a strided destination
    dst = torch.zeros(8, 6, device="npu")
    dst.t().copy_(nx)
    assert torch.equal(dst.cpu(), x.t())
    # cpu (non-contiguous) -> npu (non-contiguous), with conversion
    d2 = torch.zeros(6, 8, dtype=torch.float64, device="npu")
    d2[:, ::2].copy_(x.t()[::2].t()[:, :4])
    ref = torch.zeros(6, 8, dtype=torch.float64)
    ref[:, ::2].copy_(x.t()[::2].t()[:, :4])
    assert torch.equal(d2.cpu(), ref)
    # npu (non-contiguous) -> cpu (non-contiguous)
    c = torch.zeros(8, 6)
    c.t().copy_(nx)
    assert torch.equal(c, x.t())


def test_broadcasting_copy_and_expand():
    row = torch.arange(5.0)
    dst = torch.empty(3, 5, device="npu")
    dst.copy_(row.npu())
    assert torch.equal(dst.cpu(), row.expand(3, 5))
    dst.copy_(torch.tensor(2.5))
    assert torch.equal(dst.cpu(), torch.full((3, 5), 2.5))
    e = row.npu().expand(4, 5).contiguous()
    assert torch.equal(e.cpu(), row.expand(4, 5))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.empty(3, device="npu").copy_(torch.ones(2, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32])
@pytest.mark.parametrize("src_shape", [(), (37,), (41, 1), (3, 1, 37)], ids=["scalar", "row", "column", "batched"])
def test_expanded_sources_cast_and_copy(src_shape, dtype):
    # autograd's expanded gradients (sum's backward), cast on the way: a stride-0 inner dim is a fill per run,
    # a stride-0 column no transpose (both took the slow per-element paths: 20x CPU)
    src = torch.randn(src_shape) * 100
    want = src.expand(3, 41, 37).to(dtype)
    got = src.npu().expand(3, 41, 37).to(dtype).contiguous()
    assert torch.equal(got.cpu(), want)
    dst = torch.empty(3, 41, 37, dtype=dtype, device="npu").transpose(1, 2)  # a strided destination
    dst.copy_(src.npu().expand(3, 41, 37).transpose(1, 2))
    assert torch.equal(dst.cpu(), want.transpose(1, 2))


def test_overlapping_self_copy():
    # a partial overlap raises ATen's error, as copy_ does on CPU and CUDA, and writes nothing
    x = torch.arange(10.0)
    n = x.npu()
    for t in (x, n):
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            t[1:].copy_(t[:-1])
    assert torch.equal(n.cpu(), x)
    # the same elements in another order are a partial overlap too (ATen's rule), as on CPU
    m = torch.arange(16.0).view(4, 4)
    for t in (m, m.npu()):
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            t.copy_(t.t())


def test_copy_across_devices():
    x = sample(torch.float32, (33, 17))
    a = x.to("npu:1")
    b = a.to("npu:2")
    assert b.device == torch.device("npu:2")
    assert torch.equal(b.cpu(), x)
    c = torch.empty(17, 33, dtype=torch.float64, device="npu:3")
    c.copy_(a.t())
    assert torch.equal(c.cpu(), x.t().double())


def test_pinned_non_blocking_copies():
    x = sample(torch.float32, (256, 256)).pin_memory()
    assert x.is_pinned()
    y = x.to("npu", non_blocking=True)
    back = torch.empty_like(x).pin_memory()
    back.copy_(y, non_blocking=True)
    torch.npu.synchronize()
    assert torch.equal(back, x)
    # pageable non_blocking: the source is staged at call time, so overwriting it afterwards is safe
    src = sample(torch.float32, (64,))
    keep = src.clone()
    d = src.to("npu", non_blocking=True)
    src.fill_(-1)
    assert torch.equal(d.cpu(), keep)


def test_large_copy_bytes_counted():
    torch_npu_sim._C._reset_runtime_counters()
    x = torch.randn(1 << 20)
    y = x.npu()
    assert torch.equal(y.cpu(), x)
    c = torch_npu_sim._C._runtime_counters()
    assert c["bytes_h2d"] >= x.nbytes and c["bytes_d2h"] >= x.nbytes


def test_factories_and_views():
    no_fallback()
    e = torch.empty(2, 3, device="npu")
    assert e.shape == (2, 3) and e.is_contiguous()
    s = torch.empty_strided((2, 3), (1, 2), device="npu")
    assert s.stride() == (1, 2)
    cl = torch.empty(2, 3, 4, 5, device="npu", memory_format=torch.channels_last)
    assert cl.is_contiguous(memory_format=torch.channels_last)
    x = torch.arange(24.0)
    n = x.npu()
    assert torch.equal(n.view(4, 6).cpu(), x.view(4, 6))
    assert torch.equal(n.reshape(2, 3, 4).permute(2, 0, 1).cpu(), x.reshape(2, 3, 4).permute(2, 0, 1))
    assert torch.equal(n.as_strided((3, 3), (4, 1), 2).cpu(), x.as_strided((3, 3), (4, 1), 2))
    assert torch.equal(n.unfold(0, 4, 3).cpu(), x.unfold(0, 4, 3))
    assert torch.equal(n[5:9].cpu(), x[5:9])
    assert torch.equal(n.view(2, 12)[:, 3].cpu(), x.view(2, 12)[:, 3])
    c = torch.randn(4, 2).npu()
    assert torch.equal(torch.view_as_real(torch.view_as_complex(c)).cpu(), c.cpu())
    assert torch_npu_sim.fallback_ops() == {}


def test_fill_zero_and_full():
    no_fallback()
    for dtype in [torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.float16, torch.complex64]:
        t = torch.empty(4, 5, dtype=dtype, device="npu")
        t.fill_(3)
        assert torch.equal(t.cpu(), torch.full((4, 5), 3, dtype=dtype))
        t.zero_()
        assert torch.equal(t.cpu(), torch.zeros(4, 5, dtype=dtype))
    z = torch.zeros(3, 4, device="npu")
    o = torch.ones(2, dtype=torch.int32, device="npu")
    assert torch.equal(z.cpu(), torch.zeros(3, 4)) and torch.equal(o.cpu(), torch.ones(2, dtype=torch.int32))
    strided = torch.zeros(4, 6, device="npu")
    strided[:, ::2].fill_(7.5)
    ref = torch.zeros(4, 6)
    ref[:, ::2] = 7.5
    assert torch.equal(strided.cpu(), ref)
    v = torch.zeros(3, device="npu")
    v.fill_(torch.tensor(4.0, device="npu"))
    assert torch.equal(v.cpu(), torch.full((3,), 4.0))
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        v.fill_(torch.ones(2, device="npu"))
    assert torch_npu_sim.fallback_ops() == {}


def test_item_and_local_scalar_dense():
    assert torch.tensor(3.25, device="npu").item() == 3.25
    assert torch.tensor(-7, device="npu").item() == -7
    assert torch.tensor(True, device="npu").item() is True
    assert torch.arange(6.0).npu()[4].item() == 4.0
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        torch.ones(2, device="npu").item()


def test_resize_and_set():
    no_fallback()
    t = torch.arange(6.0).npu()
    t.resize_(10)
    assert t.shape == (10,)
    assert torch.equal(t[:6].cpu(), torch.arange(6.0))  # old contents survive growth
    t.resize_(2, 2)
    assert torch.equal(t.cpu(), torch.arange(4.0).view(2, 2))
    u = torch.empty(0, device="npu")
    u.set_(t)
    assert u.data_ptr() == t.data_ptr() and u.shape == t.shape
    w = torch.empty(0, device="npu")
    w.set_(t.untyped_storage(), 1, (3,), (1,))
    assert torch.equal(w.cpu(), torch.arange(1.0, 4.0))
    storage = torch.arange(5.0).npu().untyped_storage()
    x = torch.empty(0, device="npu").set_(storage)
    assert torch.equal(x.cpu(), torch.arange(5.0))
    y = torch.ones(3, device="npu").set_()
    assert y.numel() == 0
    # As on CPU: set_ to a larger view grows a resizable storage ...
    grown = torch.arange(4.0).npu()
    torch.empty(0, device="npu").set_(grown.untyped_storage(), 0, (100,), (1,))
    assert grown.untyped_storage().nbytes() == 400 and torch.equal(grown.cpu(), torch.arange(4.0))
    # ... but keeping the same sizes over a too-small storage is refused.
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        torch.empty(100, device="npu").set_(t.untyped_storage(), 0, (100,), (1,))
    with pytest.raises(RuntimeError, match="negative dimension"):
        t.resize_(-1)
    s = torch.arange(3.0).npu().untyped_storage()
    s.resize_(64)
    assert s.nbytes() == 64
    assert torch_npu_sim.fallback_ops() == {}


def test_clone_and_to_other_dtype_stay_native():
    no_fallback()
    x = sample(torch.float32, (10, 10)).npu()
    c = x.clone()
    assert c.data_ptr() != x.data_ptr() and torch.equal(c.cpu(), x.cpu())
    assert torch.equal(x.double().cpu(), x.cpu().double())
    assert torch_npu_sim.fallback_ops() == {}


@pytest.mark.parametrize("dst_dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_strided_copies_in_blocks_of_rows(dst_dtype):
    # Heads split and merged, cat pieces, a broadcast source, flipped and column-strided views: consecutive whole
    # runs along the second-innermost dim are copied as one block of rows. 7 x 5 x 61 x 67 (> 2 x 64K elements)
    # splits over blocks in the middle of a run and of a block of rows; every case is compared bit for bit.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 61, 5, 67, generator=g)
    nx = x.npu()
    cases = {
        "heads split": lambda t: t.transpose(1, 2).to(dst_dtype).contiguous(),
        "heads merged": lambda t: t.transpose(1, 2).contiguous().transpose(1, 2).to(dst_dtype).contiguous(),
        "cat of two slices": lambda t: torch.cat((t[..., 40:], t[..., :40]), -1).to(dst_dtype),
        "broadcast rows": lambda t: t[:, :1].expand(7, 61, 5, 67).to(dst_dtype).contiguous(),
        "flipped": lambda t: t.flip(1, 3).to(dst_dtype),
        "every other column": lambda t: t[..., ::2].to(dst_dtype).contiguous(),
        "into a strided destination": lambda t: torch.zeros(7, 61, 5, 80, dtype=dst_dtype, device=t.device)[
            ..., 3:70].copy_(t),
    }
    for name, fn in cases.items():
        got, ref = fn(nx), fn(x)
        assert got.device.type == "npu" and got.dtype == ref.dtype, name
        assert torch.equal(got.cpu(), ref), name
