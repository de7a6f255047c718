"""out= and in-place calls whose inputs share memory with what they write, on npu against CPU PyTorch.

Every native out= and in-place kernel is registered behind one guard (csrc/aten/out_overlap.h): an input that
partially overlaps a written tensor raises ATen's error, as TensorIterator does on CPU and CUDA; an input that is
the written tensor, or covers its elements in another order, is read from a copy first. Before the guard, npu's
cumsum / sort / where / gather / index_put_ read elements they had already written and returned wrong values
without an error (cumsum(x[:6], out=x[2:8]) gave 0, 1, 1, 2, 3, 5)."""
import pytest
import torch

import torch_npu_sim  # noqa: F401  (registers "npu")

PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def base(dev):
    return torch.arange(12.0, device=dev)


# calls that write part of x while reading another, overlapping part: CPU raises, and so must npu
PARTIAL_CALLS = {
    "cumsum out": lambda x: torch.cumsum(x[:6], 0, out=x[2:8]),
    "cumprod out": lambda x: torch.cumprod(x[:6], 0, out=x[2:8]),
    "sort out": lambda x: torch.sort(x[:6], out=(x[3:9], torch.empty(6, dtype=torch.long, device=x.device))),
    "where out": lambda x: torch.where(x[:6] > 3, x[:6], x[6:], out=x[1:7]),
    "index_select out": lambda x: torch.index_select(x, 0, torch.tensor([5, 6, 7], device=x.device), out=x[:3]),
    "gather out": lambda x: torch.gather(x, 0, torch.tensor([5, 6, 7], device=x.device), out=x[4:7]),
    "masked_select out": lambda x: torch.masked_select(x[:6], x[:6] > 2, out=x[2:5]),
    "take out": lambda x: torch.take(x[:8], torch.tensor([0, 3], device=x.device), out=x[1:3]),
    "index_put_ values": lambda x: x.index_put_((torch.tensor([0, 1], device=x.device),), x[1:3]),
    "addmm out": lambda x: torch.addmm(x[:4].view(2, 2), x[4:8].view(2, 2), x[8:].view(2, 2), out=x[2:6].view(2, 2)),
    "clamp out": lambda x: torch.clamp(x[:6], 1, 4, out=x[2:8]),
    "copy_": lambda x: x[1:].copy_(x[:-1]),
    "add_ (TensorIterator)": lambda x: x[1:].add_(x[:-1]),
}


@pytest.mark.parametrize("name", sorted(PARTIAL_CALLS))
def test_partial_overlap_raises_as_on_cpu(name):
    call = PARTIAL_CALLS[name]
    with pytest.raises(RuntimeError, match=PARTIAL):
        call(base("cpu"))
    x = base("npu")
    with pytest.raises(RuntimeError, match=PARTIAL):
        call(x)
    assert torch.equal(x.cpu(), base("cpu")), "nothing may be written before the error"


def seeded(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# calls whose out is exactly an input (or covers its elements in another order), with the same call without the
# overlap: npu reads the input from a copy, so both give the same result (CPU raises on some of these, and on
# others reads what it has already written)
FULL_CALLS = {
    "msort out=x": (lambda x: torch.msort(x, out=x), torch.msort, lambda: [torch.tensor([3.0, 1, 2, 1, 5, 0, 4])]),
    "sort values=x": (lambda x: torch.sort(x, out=(x, torch.empty(7, dtype=torch.long, device=x.device)))[0],
                      lambda x: torch.sort(x)[0], lambda: [torch.tensor([3.0, 1, 2, 1, 5, 0, 4])]),
    "cumsum out=x": (lambda x: torch.cumsum(x, 0, out=x), lambda x: torch.cumsum(x, 0), lambda: [torch.arange(1.0, 9)]),
    "addmm out=self": (lambda y, a, b: torch.addmm(y, a, b, out=y), torch.addmm,
                       lambda: [seeded(4, 4, seed=0), seeded(4, 3, seed=1), seeded(3, 4, seed=2)]),
    "mm out=x[:2, :2]": (lambda x: torch.mm(x[:2, :2], x[:2, :2], out=x[:2, :2]),  # (strided: read from a copy)
                         lambda x: torch.mm(x[:2, :2], x[:2, :2]), lambda: [torch.arange(9.0).view(3, 3)]),
    "index_select out=x": (lambda x: torch.index_select(x, 0, torch.tensor([2, 0, 1], device=x.device), out=x),
                           lambda x: torch.index_select(x, 0, torch.tensor([2, 0, 1], device=x.device)),
                           lambda: [torch.arange(3.0) * 10]),
    "take_along_dim out=x": (lambda x: torch.take_along_dim(x, torch.tensor([3, 2, 1, 0], device=x.device), out=x),
                             lambda x: torch.take_along_dim(x, torch.tensor([3, 2, 1, 0], device=x.device)),
                             lambda: [torch.arange(4.0)]),
}


@pytest.mark.parametrize("name", sorted(FULL_CALLS))
def test_full_overlap_gives_the_result_without_it(name):
    aliased, plain, inputs = FULL_CALLS[name]
    want = plain(*inputs())
    got = aliased(*[t.to("npu") for t in inputs()])
    torch.testing.assert_close(got.cpu(), want)


def test_value_tensor_inside_self_is_read_first():
    # a 0-dim value that is an element of self: CPU reads it (.item()) before writing; so does npu
    for call in (lambda x: x.fill_(x[1]), lambda x: x.masked_fill_(x > 2, x[1]),
                 lambda x: x.index_fill_(0, torch.tensor([0, 4], device=x.device), x[1])):
        want = call(torch.arange(5.0))
        torch.testing.assert_close(call(torch.arange(5.0, device="npu")).cpu(), want)


def test_disjoint_views_of_one_storage_are_untouched():
    # the guard compares storages and ranges: two halves of one buffer are not an overlap
    x, xn = base("cpu"), base("npu")
    torch.cumsum(x[:6], 0, out=x[6:])
    torch.cumsum(xn[:6], 0, out=xn[6:])
    torch.testing.assert_close(xn.cpu(), x)
