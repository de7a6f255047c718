"""tril_indices / triu_indices and unique_consecutive on npu against CPU PyTorch: shapes, offsets,
dtypes, flattened and along-dim runs (inverse, counts, NaNs, empty inputs) and bad inputs; nothing
falls back to the CPU."""
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")


pytestmark = pytest.mark.usefixtures("native_only")  # conftest: no op may reach the CPU fallback


def same(got, want):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (5, 5), (1, 6), (0, 3), (3, 0)])
@pytest.mark.parametrize("offset", [-4, -1, 0, 1, 2, 7])
def test_triangle_indices(fn, shape, offset):
    same(getattr(torch, fn)(*shape, offset, device="npu"), getattr(torch, fn)(*shape, offset))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_triangle_indices_dtype(dtype):
    same(torch.tril_indices(6, 5, 1, dtype=dtype, device="npu"), torch.tril_indices(6, 5, 1, dtype=dtype))
    same(torch.triu_indices(6, 5, -2, dtype=dtype, device="npu"), torch.triu_indices(6, 5, -2, dtype=dtype))


def test_triangle_indices_bad_inputs():
    for fn in [torch.tril_indices, torch.triu_indices]:
        for args in [(-1, 3), (3, -2)]:
            with pytest.raises(RuntimeError, match="must be non-negative"):
                fn(*args)
            with pytest.raises(RuntimeError, match="must be non-negative"):
                fn(*args, device="npu")
        for dtype in [torch.int16, torch.float32]:
            with pytest.raises(NotImplementedError, match="indices.*not implemented"):
                fn(3, 3, dtype=dtype)
            with pytest.raises(NotImplementedError, match="indices.*not implemented"):
                fn(3, 3, dtype=dtype, device="npu")


def check_unique_consecutive(x, **kw):
    want = torch.unique_consecutive(x, return_inverse=True, return_counts=True, **kw)
    got = torch.unique_consecutive(x.to("npu"), return_inverse=True, return_counts=True, **kw)
    for g, w in zip(got, want):
        same(g, w)
    same(torch.unique_consecutive(x.to("npu"), **kw), torch.unique_consecutive(x, **kw))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.uint8, torch.bool])
def test_unique_consecutive_flat(dtype):
    x = torch.tensor([[1, 1, 2, 2, 2, 3], [3, 1, 1, 0, 0, 1]]).to(dtype)
    check_unique_consecutive(x)
    check_unique_consecutive(x[0, :1])
    check_unique_consecutive(x[:, 1])  # strided
    check_unique_consecutive(torch.tensor(5).to(dtype))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_consecutive_dim(dim):
    x = torch.tensor([[1, 1, 2, 2], [1, 1, 2, 2], [0, 0, 3, 3], [1, 1, 2, 2]], dtype=torch.float32)
    check_unique_consecutive(x, dim=dim)
    check_unique_consecutive(torch.stack([x, x, x.flip(0)], 0), dim=dim)
    v, i, c = torch.ops.aten.unique_dim_consecutive(x.to("npu"), dim, True, True)
    for g, w in zip((v, i, c), torch.ops.aten.unique_dim_consecutive(x, dim, True, True)):
        same(g, w)


def test_unique_consecutive_nan_and_empty():
    nan = float("nan")
    check_unique_consecutive(torch.tensor([nan, nan, 1.0, 1.0, nan]))
    check_unique_consecutive(torch.empty(0))
    check_unique_consecutive(torch.empty(2, 0), dim=1)
    check_unique_consecutive(torch.empty(0, 3), dim=0)


def test_unique_consecutive_bad_inputs():
    for x, dim, err, match in [(torch.ones(2, 3), 2, IndexError, "range"),
                               (torch.empty(2, 0), 0, RuntimeError, "aren't selected"),
                               (torch.empty(0, 0), 0, RuntimeError, "more than one")]:
        with pytest.raises(err, match=match):
            torch.unique_consecutive(x, dim=dim)
        with pytest.raises(err, match=match):
            torch.unique_consecutive(x.to("npu"), dim=dim)
