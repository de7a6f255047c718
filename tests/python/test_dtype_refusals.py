# Ops that CPU and CUDA PyTorch refuse for bool or integer tensors are refused on npu too, with CPU's error type
# and a message naming the op's kernel and the dtype. Before, npu computed them: abs / floor / ceil / round /
# trunc / frac / relu / hardtanh / addcmul of bool, frac of integers, and the continuous distributions
# (normal_, uniform_, exponential_, cauchy_, log_normal_) filling integer tensors, and bernoulli with integer
# or bool probabilities.
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim  # noqa: F401  (registers "npu")

BOOL = torch.tensor([True, False, True, True])
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def ints(dtype):
    return torch.tensor([1, 0, 3, 2], dtype=dtype)


CASES = [(name, fn, BOOL) for name, fn in [
    ("abs", torch.abs), ("abs_", lambda x: x.clone().abs_()), ("floor", torch.floor), ("ceil", torch.ceil),
    ("round", torch.round), ("trunc", torch.trunc), ("frac", torch.frac), ("fix", torch.fix),
    ("relu", torch.relu), ("relu_", lambda x: x.clone().relu_()), ("relu6", F.relu6),
    ("hardtanh", F.hardtanh), ("softsign", F.softsign), ("addcmul", lambda x: torch.addcmul(x, x, x)),
    ("clamp tensor bounds", lambda x: torch.clamp(x, x, x)), ("normal_", lambda x: x.clone().normal_()),
    ("uniform_", lambda x: x.clone().uniform_()), ("exponential_", lambda x: x.clone().exponential_()),
    ("cauchy_", lambda x: x.clone().cauchy_()), ("log_normal_", lambda x: x.clone().log_normal_()),
    ("geometric_", lambda x: x.clone().geometric_(0.5))]]
CASES += [(f"{name} {str(dt)[6:]}", fn, ints(dt)) for dt in INTS for name, fn in [
    ("frac", torch.frac), ("normal_", lambda x: x.clone().normal_()), ("uniform_", lambda x: x.clone().uniform_()),
    ("exponential_", lambda x: x.clone().exponential_()), ("cauchy_", lambda x: x.clone().cauchy_()),
    ("log_normal_", lambda x: x.clone().log_normal_())]]
CASES += [("hardtanh uint8 negative limits", F.hardtanh, ints(torch.uint8))]
CASES += [(f"{name} p {str(dt)[6:]}", fn, torch.tensor([1, 0, 1, 1], dtype=dt))
          for dt in [torch.bool, torch.uint8, torch.int32, torch.int64] for name, fn in [
              ("bernoulli", torch.bernoulli), ("bernoulli_", lambda p: torch.zeros(4, device=p.device).bernoulli_(p))]]


def error_of(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an op the table sends to the CPU fallback warns first
        try:
            fn(x)
            torch.npu.synchronize()
        except Exception as e:  # noqa: BLE001 (the error is what is compared)
            return e
    return None


@pytest.mark.parametrize("name, fn, x", CASES, ids=[c[0] for c in CASES])
def test_refused_as_on_cpu(name, fn, x):
    want = error_of(fn, x)
    assert want is not None, f"CPU accepts {name}: the case is wrong"
    got = error_of(fn, x.npu())
    assert got is not None, f"npu computed {name} for {x.dtype}, which CPU refuses: {want}"
    assert type(got) is type(want), (got, want)
    # CPU's message, or the same with npu's kernel name ("floor_vml_cpu" -> "floor: no npu kernel for dtype Bool")
    if str(got).splitlines()[0] != str(want).splitlines()[0]:
        dtype_name = re.search(r"'(\w+)'", str(want))
        assert dtype_name and dtype_name.group(1) in str(got), (got, want)
        assert "npu" in str(got), got


def test_what_cpu_accepts_still_runs():
    # the integer and bool cases ATen does serve: rounding copies integers, sign / clamp with scalars / trace /
    # geometric_ on integers, hardtanh of uint8 with non-negative limits
    x = ints(torch.int64)
    for fn in (torch.floor, torch.ceil, torch.round, torch.trunc, torch.abs, torch.relu):
        assert torch.equal(fn(x.npu()).cpu(), fn(x))
    assert torch.equal(torch.sign(BOOL.npu()).cpu(), torch.sign(BOOL))
    assert torch.equal(torch.clamp(BOOL.npu(), 0, 1).cpu(), torch.clamp(BOOL, 0, 1))
    assert torch.equal(torch.clamp(BOOL.npu(), BOOL.npu()).cpu(), torch.clamp(BOOL, BOOL))
    assert torch.equal(F.hardtanh(ints(torch.uint8).npu(), 0, 2).cpu(), F.hardtanh(ints(torch.uint8), 0, 2))
    assert torch.equal(F.hardtanh(x.npu(), -0.5, 2.5).cpu(), F.hardtanh(x, -0.5, 2.5))
    g = x.npu().geometric_(0.5)
    assert g.dtype == torch.int64 and bool((g.cpu() >= 1).all())
    assert torch.equal(torch.addcmul(x.npu(), x.npu(), x.npu(), value=2).cpu(), torch.addcmul(x, x, x, value=2))
