"""torch.optim's fused steps on npu (Adam / AdamW / SGD / Adagrad with fused=True): native _fused_adam_ /
_fused_adamw_ / _fused_sgd_ / _fused_adagrad_ launches, checked against the same optimizer's fused CPU kernel and its foreach path on npu, with
GradScaler's grad_scale / found_inf, tensor lr, 16-bit parameters and bad arguments."""
import pytest
import torch

import torch_npu_sim

CONFIGS = [
    (torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1)),
    (torch.optim.AdamW, dict(lr=0.05, weight_decay=0.0, amsgrad=True, maximize=True)),
    (torch.optim.Adam, dict(lr=0.05, weight_decay=0.05)),
    (torch.optim.Adam, dict(lr=0.05, amsgrad=True, betas=(0.8, 0.95), eps=1e-6)),
    (torch.optim.SGD, dict(lr=0.1)),
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (torch.optim.Adagrad, dict(lr=0.05, lr_decay=0.01, weight_decay=0.1)),
    (torch.optim.Adagrad, dict(lr=0.05, maximize=True, initial_accumulator_value=0.1, eps=1e-6)),
]
# 16-bit: the fused kernels compute in float32 and round once per step (as CUDA's); the reference is the CPU
# fused step in float32 from the same 16-bit values, so the tolerance is the per-step rounding, a few ulps.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=3e-3, atol=3e-3)}


def make_params(dtype, device):
    g = torch.Generator().manual_seed(0)
    shapes = [(33, 17), (5,), (4, 3, 2), (1,), (1000,)]
    return [torch.randn(s, generator=g).to(dtype).to(device).requires_grad_() for s in shapes]


def run_steps(opt_cls, kwargs, params, steps=4, fused=True, foreach=None, grad_dtype=None):
    opt = opt_cls(params, fused=fused, foreach=foreach, **kwargs)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g).to(grad_dtype or p.dtype).to(p.dtype).to(p.device)
        opt.step()
    return opt


def state_tensors(opt):
    out = []
    for p in opt.param_groups[0]["params"]:
        out.append(p.detach())
        for k, v in sorted(opt.state[p].items()):
            if torch.is_tensor(v):
                out.append(v.detach())
    return out


@pytest.mark.parametrize("opt_cls,kwargs", CONFIGS, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_fused_step_matches_cpu_fused_and_npu_foreach(opt_cls, kwargs, dtype, native_only):
    wide = torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
    cpu = run_steps(opt_cls, kwargs, [p.detach().to(wide).requires_grad_() for p in make_params(dtype, "cpu")],
                    grad_dtype=dtype)
    npu = run_steps(opt_cls, kwargs, make_params(dtype, "npu"))
    cpu_t, npu_t = state_tensors(cpu), state_tensors(npu)
    assert len(cpu_t) == len(npu_t)
    for c, n in zip(cpu_t, npu_t):
        assert n.device.type == "npu" and n.dtype == (dtype if c.dim() > 0 else c.dtype)  # steps stay float32
        torch.testing.assert_close(n.cpu().to(c.dtype), c, **TOL[dtype])
    if dtype in (torch.float32, torch.float64):
        foreach = run_steps(opt_cls, kwargs, make_params(dtype, "npu"), fused=False, foreach=True)
        for f, n in zip(state_tensors(foreach), npu_t):
            torch.testing.assert_close(n.cpu(), f.cpu(), **TOL[dtype])


def test_fused_step_is_one_native_launch(native_only):
    params = make_params(torch.float32, "npu")
    opt = torch.optim.AdamW(params, lr=1e-3, fused=True)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()  # state init
    torch.npu.synchronize()
    before = torch_npu_sim._C._runtime_counters()["kernels_launched"]
    torch._fused_adamw_(params, [p.grad for p in params], [opt.state[p]["exp_avg"] for p in params],
                        [opt.state[p]["exp_avg_sq"] for p in params], [], [opt.state[p]["step"] for p in params],
                        lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False)
    torch.npu.synchronize()
    assert torch_npu_sim._C._runtime_counters()["kernels_launched"] - before == 1


@pytest.mark.parametrize("opt_cls,kwargs", [CONFIGS[0], CONFIGS[5], CONFIGS[7]], ids=["AdamW", "SGD", "Adagrad"])
def test_grad_scaler_unscales_and_skips_an_inf_step(opt_cls, kwargs, native_only):
    results = {}
    for device in ("cpu", "npu"):
        params = make_params(torch.float32, device)
        opt = opt_cls(params, fused=True, **kwargs)
        scaler = torch.amp.GradScaler(device, init_scale=1024.0)
        g = torch.Generator().manual_seed(2)
        history = []
        for step in range(4):
            opt.zero_grad()
            loss = sum((p * torch.randn(p.shape, generator=g).to(device)).sum() for p in params)
            if step == 2:
                loss = loss * float("inf")  # this step's gradients are inf: the fused step must skip it
            scaler.scale(loss).backward()
            before = [p.detach().clone() for p in params]
            scaler.step(opt)
            scaler.update()
            history.append(all(torch.equal(b, p.detach()) for b, p in zip(before, params)))
        results[device] = (history, [p.detach().cpu() for p in params], [p.grad.cpu() for p in params])
    assert results["npu"][0] == results["cpu"][0] == [False, False, True, False]
    for c, n in zip(results["cpu"][1] + results["cpu"][2], results["npu"][1] + results["npu"][2]):
        torch.testing.assert_close(n, c, rtol=1e-5, atol=1e-6)  # params, and grads written back unscaled


@pytest.mark.parametrize("opt_cls", [torch.optim.Adam, torch.optim.Adagrad], ids=["Adam", "Adagrad"])
@pytest.mark.parametrize("lr_device", ["cpu", "npu"])
def test_tensor_lr(lr_device, opt_cls, native_only):
    out = {}
    for device in ("cpu", "npu"):
        params = make_params(torch.float32, device)
        lr = torch.tensor(0.02, device=lr_device if device == "npu" else "cpu")
        opt = run_steps(opt_cls, dict(lr=lr), params)
        out[device] = state_tensors(opt)
    for c, n in zip(out["cpu"], out["npu"]):
        torch.testing.assert_close(n.cpu(), c, rtol=1e-5, atol=1e-6)


def test_fused_sgd_tensor_lr_on_npu_is_read_when_the_step_runs(native_only):
    p = torch.ones(8, device="npu")
    lr = torch.tensor(0.5, device="npu")
    torch._fused_sgd_([p], [torch.ones(8, device="npu")], [], weight_decay=0.0, momentum=0.0, lr=lr, dampening=0.0,
                      nesterov=False, maximize=False, is_first_step=False)
    torch.testing.assert_close(p.cpu(), torch.full((8,), 0.5))


def test_bad_arguments_raise_naming_the_op_and_argument():
    p = [torch.zeros(4, device="npu")]
    g = [torch.zeros(4, device="npu")]
    steps = [torch.zeros((), device="npu")]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(RuntimeError, match=r"_fused_adamw_: expected as many exp_avg_sqs as params \(1\), got 0"):
        torch._fused_adamw_(p, g, [torch.zeros(4, device="npu")], [], [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"_fused_adam_: grads\[0\] has dtype Double, expected the params' Float"):
        torch._fused_adam_(p, [torch.zeros(4, device="npu", dtype=torch.float64)], [torch.zeros(4, device="npu")],
                           [torch.zeros(4, device="npu")], [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"_fused_adam_: exp_avgs\[0\] must have the sizes and strides of params"):
        torch._fused_adam_(p, g, [torch.zeros(5, device="npu")], [torch.zeros(4, device="npu")], [], steps, **kw)
    with pytest.raises(RuntimeError, match=r"_fused_adam_: state_steps\[0\] must be a 1-element float32 tensor"):
        torch._fused_adam_(p, g, [torch.zeros(4, device="npu")], [torch.zeros(4, device="npu")], [],
                           [torch.zeros((), device="npu", dtype=torch.int64)], **kw)
    with pytest.raises(RuntimeError, match=r"found at least two devices, npu:0 and cpu.*argument grads in method _fused_sgd_"):
        torch._fused_sgd_(p, [torch.zeros(4)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(RuntimeError, match=r"_fused_sgd_: params must be floating point, got Long"):
        torch._fused_sgd_([torch.zeros(4, device="npu", dtype=torch.long)], [torch.zeros(4, device="npu",
                          dtype=torch.long)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    ag = dict(lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False)
    with pytest.raises(RuntimeError, match=r"_fused_adagrad_: expected as many state_steps as params \(1\), got 0"):
        torch._fused_adagrad_(p, g, [torch.zeros(4, device="npu")], [], **ag)
    with pytest.raises(RuntimeError, match=r"_fused_adagrad_: state_sums\[0\] must have the sizes and strides of params"):
        torch._fused_adagrad_(p, g, [torch.zeros(2, 2, device="npu")], steps, **ag)
    torch.testing.assert_close(p[0].cpu(), torch.zeros(4))  # nothing was written by the refused calls


def test_sgd_first_step_ignores_the_uninitialised_momentum_buffer(native_only):
    # torch.optim passes torch.empty_like buffers on the first step: their contents must not be read
    p = torch.ones(16, device="npu")
    buf = torch.full((16,), float("nan"), device="npu")
    torch._fused_sgd_([p], [torch.ones(16, device="npu")], [buf], weight_decay=0.0, momentum=0.9, lr=0.5,
                      dampening=0.5, nesterov=False, maximize=False, is_first_step=True)
    torch.testing.assert_close(buf.cpu(), torch.ones(16))
    torch.testing.assert_close(p.cpu(), torch.full((16,), 0.5))
