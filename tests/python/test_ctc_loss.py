"""F.ctc_loss / nn.CTCLoss on npu against CPU: reductions none / mean / sum, padded and concatenated targets, list and
tensor lengths, zero_infinity with impossible items, strided log_probs, float32 and float64, gradients; log_alpha where
CPU defines it; CPU's errors (type and message) for bad arguments, a target outside the classes failing the stream;
no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F

import torch_npu_sim
from conftest import acknowledge_device_error

TOL = {torch.float64: 1e-12, torch.float32: 1e-6}
T, N, C, S = 12, 5, 6, 4


def case(dtype, seed=0):
    """log_probs (T, N, C) as a model makes them (log_softmax over (N, T, C), then transposed: not contiguous),
    padded targets, input and target lengths. Item 3 cannot fit its target (1 1 needs 3 steps, it has 2: nll = inf),
    item 4 has an empty target."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(N, T, C, generator=gen, dtype=torch.float64)
    log_probs = logits.log_softmax(2).transpose(0, 1).to(dtype)
    targets = torch.randint(1, C, (N, S), generator=gen)
    targets[3, :2] = 1
    input_lengths = [12, 10, 7, 2, 9]
    target_lengths = [4, 3, 2, 2, 0]
    return log_probs, targets, input_lengths, target_lengths


def concatenated(targets, target_lengths):
    return torch.cat([targets[b, :n] for b, n in enumerate(target_lengths)])


def run(log_probs, targets, input_lengths, target_lengths, reduction, zero_infinity, grad_seed=3):
    """The loss and the gradient of log_probs under a fixed random output gradient, on the host."""
    lp = log_probs.detach().clone().requires_grad_()
    loss = F.ctc_loss(lp, targets, input_lengths, target_lengths, reduction=reduction, zero_infinity=zero_infinity)
    g = torch.randn(loss.shape, generator=torch.Generator().manual_seed(grad_seed), dtype=torch.float64)
    loss.backward(g.to(loss.dtype).to(loss.device))
    return loss.detach().cpu(), lp.grad.cpu()


def to_npu(lengths):
    return lengths.npu() if isinstance(lengths, torch.Tensor) else lengths


def check(got, want, dtype):
    for name, a, b in zip(("loss", "grad"), got, want):
        # impossible items without zero_infinity: inf losses and inf / NaN gradients, on npu where CPU has them
        torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True,
                                   msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("lengths", ["list", "tensor", "npu tensor"])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ctc_loss_matches_cpu(reduction, layout, lengths, zero_infinity, dtype, native_only):
    log_probs, targets, il, tl = case(dtype)
    if layout == "concatenated":
        targets = concatenated(targets, tl)
    if lengths != "list":
        il, tl = torch.tensor(il), torch.tensor(tl)
    want = run(log_probs, targets, il, tl, reduction, zero_infinity)
    if lengths == "npu tensor":
        il, tl = il.npu(), tl.npu()
    got = run(log_probs.npu(), targets.npu(), il, tl, reduction, zero_infinity)
    check(got, want, dtype)
    if reduction == "none":
        assert got[0][3] == (0 if zero_infinity else float("inf"))  # the impossible item


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_aten_op_outputs_and_backward_match_cpu(dtype, native_only):
    """_ctc_loss's nll and log_alpha (compared where CPU writes it: t < input length, s < 2 * target length + 1; CPU
    leaves the rest uninitialised, npu fills it with -inf), int32 targets, and _ctc_loss_backward called directly."""
    log_probs, targets, il, tl = case(dtype, seed=1)
    for tg in (targets, targets.int(), concatenated(targets, tl)):
        nll, alpha = torch.ops.aten._ctc_loss(log_probs, tg, il, tl, 0, False)
        nll_n, alpha_n = torch.ops.aten._ctc_loss(log_probs.npu(), tg.npu(), il, tl, 0, False)
        assert alpha_n.shape == alpha.shape == (N, T, 2 * max(tl) + 1) and alpha_n.dtype == dtype
        torch.testing.assert_close(nll_n.cpu(), nll, rtol=TOL[dtype], atol=TOL[dtype])
        alpha_n = alpha_n.cpu()
        for b in range(N):
            defined = alpha[b, :il[b], :2 * tl[b] + 1]
            torch.testing.assert_close(alpha_n[b, :il[b], :2 * tl[b] + 1], defined, rtol=TOL[dtype], atol=TOL[dtype])
            assert (alpha_n[b, il[b]:] == float("-inf")).all() and (alpha_n[b, :, 2 * tl[b] + 1:] == float("-inf")).all()
        grad_out = torch.randn(N, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(dtype)
        for zero_infinity in (False, True):
            want = torch.ops.aten._ctc_loss_backward(grad_out, log_probs, tg, il, tl, nll, alpha, 0, zero_infinity)
            got = torch.ops.aten._ctc_loss_backward(grad_out.npu(), log_probs.npu(), tg.npu(), il, tl, nll.npu(),
                                                    alpha.npu(), 0, zero_infinity)
            assert got.is_contiguous() and got.shape == (T, N, C)
            torch.testing.assert_close(got.cpu(), want, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)
            # the Tensor-lengths overloads
            got_t = torch.ops.aten._ctc_loss_backward.Tensor(grad_out.npu(), log_probs.npu(), tg.npu(),
                                                             torch.tensor(il).npu(), torch.tensor(tl).npu(),
                                                             nll_n.npu(), alpha_n.npu(), 0, zero_infinity)
            torch.testing.assert_close(got_t.cpu(), want, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)
        nll_t, _ = torch.ops.aten._ctc_loss.Tensor(log_probs.npu(), tg.npu(), torch.tensor(il), torch.tensor(tl), 0,
                                                   False)
        torch.testing.assert_close(nll_t.cpu(), nll, rtol=TOL[dtype], atol=TOL[dtype])


def test_blank_elsewhere_unbatched_and_zero_input_lengths(native_only):
    log_probs, targets, il, tl = case(torch.float64, seed=2)
    # blank = C - 1, targets drawn from the other classes
    tg = targets.clamp(max=C - 2)
    want = F.ctc_loss(log_probs, tg, il, tl, blank=C - 1, reduction="none")
    got = F.ctc_loss(log_probs.npu(), tg.npu(), il, tl, blank=C - 1, reduction="none")
    torch.testing.assert_close(got.cpu(), want, rtol=1e-12, atol=1e-12)
    # unbatched: (T, C) log_probs, one target, scalar lengths
    lp = log_probs[:, 0].detach().clone().requires_grad_()
    lpn = log_probs[:, 0].npu().requires_grad_()
    for x in (lp, lpn):
        F.ctc_loss(x, targets[0].to(x.device), torch.tensor(12), torch.tensor(4)).backward()
    torch.testing.assert_close(lpn.grad.cpu(), lp.grad, rtol=1e-12, atol=1e-12)
    # zero input lengths: nll 0 for an empty target, inf otherwise; their gradient is 0
    il0, tl0 = [0, 0, 5, 0, 1], [0, 2, 1, 1, 0]
    want = run(log_probs, targets, il0, tl0, "none", False)
    got = run(log_probs.npu(), targets.npu(), il0, tl0, "none", False)
    check(got, want, torch.float64)


def test_module_training_step(native_only):
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(8, C), torch.nn.LogSoftmax(-1))
    npu = torch.nn.Sequential(torch.nn.Linear(8, C), torch.nn.LogSoftmax(-1)).npu()
    npu.load_state_dict(cpu.state_dict())
    x = torch.randn(T, N, 8)
    _, targets, il, tl = case(torch.float32)
    crit = torch.nn.CTCLoss(zero_infinity=True)
    for m, dev in ((cpu, "cpu"), (npu, "npu")):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        crit(m(x.to(dev)), targets.to(dev), torch.tensor(il), torch.tensor(tl)).backward()
        opt.step()
    for a, b in zip(npu.parameters(), cpu.parameters()):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), rtol=1e-5, atol=1e-6)


def first_line(err):
    # the tensor type in a dtype error is the device's ("torch.DoubleTensor" on CPU): compare up to it
    return str(err.value).splitlines()[0].split("; but got")[0]


BAD_CALLS = {
    "input length over T": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, [13, 1, 1, 1, 1], tl, 0, False),
    "negative input length": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, [-1, 1, 1, 1, 1], tl, 0, False),
    "negative target length": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il, [-1, 1, 1, 1, 1], 0, False),
    "target length over S": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il, [5, 1, 1, 1, 1], 0, False),
    "concatenated too long": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg.flatten(), il, tl, 0, False),
    "concatenated too short": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg.flatten()[:10], il, tl, 0,
                                                                              False),
    "blank = C": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il, tl, C, False),
    "blank = -1": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il, tl, -1, False),
    "input_lengths size": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il[:4], tl, 0, False),
    "target_lengths size": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg, il, tl[:4], 0, False),
    "float targets": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg.double(), il, tl, 0, False),
    "0-d targets": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg[0, 0], il, tl, 0, False),
    "3-d targets": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg[:, :, None], il, tl, 0, False),
    "2-d log_probs": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp[:, 0], tg, il, tl, 0, False),
    "targets rows": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp, tg[:4], il, tl, 0, False),
    "float lengths": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss.Tensor(lp, tg, torch.tensor(il).double(),
                                                                            torch.tensor(tl), 0, False),
    "F input length over T": lambda lp, tg, il, tl: F.ctc_loss(lp, tg, torch.tensor([13, 1, 1, 1, 1]),
                                                               torch.tensor(tl)),
    "F float lengths": lambda lp, tg, il, tl: F.ctc_loss(lp, tg, torch.tensor(il), torch.tensor(tl).float()),
    "empty log_probs": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp[:0], tg, [0] * N, tl, 0, False),
    "empty batch": lambda lp, tg, il, tl: torch.ops.aten._ctc_loss(lp[:, :0], tg[:0], [], [], 0, False),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_arguments_raise_cpus_errors(name, native_only):
    bad = BAD_CALLS[name]
    log_probs, targets, il, tl = case(torch.float32)
    with pytest.raises(Exception) as cpu_err:
        bad(log_probs, targets, il, tl)
    with pytest.raises(Exception) as npu_err:
        bad(log_probs.npu(), targets.npu(), il, tl)
    assert npu_err.type is cpu_err.type
    assert first_line(npu_err) == first_line(cpu_err)
    assert not torch.npu._device_error()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_log_probs_are_refused_as_on_cpu(dtype):
    log_probs, targets, il, tl = case(dtype)
    with pytest.raises(NotImplementedError) as cpu_err:
        F.ctc_loss(log_probs, targets, il, tl)
    with pytest.raises(NotImplementedError) as npu_err:
        F.ctc_loss(log_probs.npu(), targets.npu(), il, tl)
    # CPU's kernel name in CPU's message, npu's in ours: "ctc_loss_cpu" not implemented for 'Half'
    assert str(npu_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0].replace("_cpu", "_npu")


def test_backward_checks_the_lengths_cpu_assumes():
    """CPU's backward trusts the lengths (it writes out of bounds with an input length over T): npu raises the
    forward's error instead."""
    log_probs, targets, il, tl = case(torch.float64)
    nll, alpha = torch.ops.aten._ctc_loss(log_probs.npu(), targets.npu(), il, tl, 0, False)
    with pytest.raises(RuntimeError, match=r"^Expected input_lengths to have value at most 12, but got value 13 "
                                           r"\(while checking arguments for ctc_loss_allocate_outputs\)"):
        torch.ops.aten._ctc_loss_backward(torch.ones(N, dtype=torch.float64).npu(), log_probs.npu(), targets.npu(),
                                          [13, 1, 1, 1, 1], tl, nll, alpha, 0, False)
    with pytest.raises(RuntimeError, match="_ctc_loss_backward: expected log_alpha of shape"):
        torch.ops.aten._ctc_loss_backward(torch.ones(N, dtype=torch.float64).npu(), log_probs.npu(), targets.npu(),
                                          il, tl, nll, alpha[:, :, :3], 0, False)
    assert not torch.npu._device_error()


def test_a_target_outside_the_classes_fails_the_stream():
    """CPU does not check the target values (it reads out of bounds): npu's kernel does, as a CUDA kernel fails."""
    log_probs, targets, il, tl = case(torch.float64)
    targets[2, 1] = C  # within item 2's length (2)
    nll, _ = torch.ops.aten._ctc_loss(log_probs.npu(), targets.npu(), il, tl, 0, False)
    with pytest.raises(RuntimeError, match=r"ctc_loss: target 1 of batch item 2 is 6, expected a class index in "
                                           r"\[0, 6\)"):
        nll.cpu()
    acknowledge_device_error()
