"""torch.amp.GradScaler("npu") and torch.npu.amp.GradScaler with native unscale/update kernels: an
injected inf/NaN skips the step and backs off the scale, the scale grows after the growth interval,
unscale_ before clip_grad_norm_ works, and the ops never fall back."""
import pytest
import torch

import torch_npu_sim


def make(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(6, 3).npu()


@pytest.mark.parametrize("factory", [lambda **kw: torch.amp.GradScaler("npu", **kw),
                                     lambda **kw: torch.npu.amp.GradScaler(**kw)])
def test_skip_backoff_and_growth(factory):
    torch_npu_sim.reset_fallback_ops()
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = factory(init_scale=1024.0, growth_interval=2)
    x = torch.randn(8, 6).npu()
    history = []
    for step in range(5):
        opt.zero_grad()
        with torch.autocast("npu", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        if step == 1:
            model.weight.grad[0, 0] = float("nan" if isinstance(scaler, torch.npu.amp.GradScaler) else "inf")
        before = model.weight.detach().cpu().clone()
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), torch.equal(before, model.weight.detach().cpu())))
    assert history[0] == (1024.0, False)
    assert history[1] == (512.0, True)  # step skipped, scale backed off
    assert history[2] == (512.0, False)
    assert history[3] == (1024.0, False)  # grew after 2 clean steps
    ops = torch_npu_sim.fallback_ops()
    assert not any(op.startswith("aten::_amp") for op in ops), ops


def test_unscale_values_and_clip_grad_norm():
    model = make(1)
    scaler = torch.amp.GradScaler("npu", init_scale=8.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 6).npu()
    scaler.scale(model(x).sum()).backward()
    scaled = model.weight.grad.cpu().clone()
    scaler.unscale_(opt)
    torch.testing.assert_close(model.weight.grad.cpu(), scaled / 8.0)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    total = torch.sqrt(sum(p.grad.cpu().pow(2).sum() for p in model.parameters()))
    assert total <= 0.5 + 1e-5
    scaler.step(opt)
    scaler.update()


def test_unscale_kernel_directly_all_float_dtypes():
    for dtype in [torch.float32, torch.float16, torch.bfloat16, torch.float64]:
        grads = [torch.tensor([2.0, 4.0], dtype=dtype).npu(), torch.tensor([8.0, float("inf")], dtype=dtype).npu()[:1]]
        found = torch.zeros(1, device="npu")
        inv = torch.full((1,), 0.5, device="npu")
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
        assert found.item() == 0.0
        assert grads[0].cpu().tolist() == [1.0, 2.0] and grads[1].cpu().tolist() == [4.0]
        bad = [torch.tensor([1.0, float("nan")], dtype=dtype).npu()]
        torch._amp_foreach_non_finite_check_and_unscale_(bad, found, inv)
        assert found.item() == 1.0


def test_bad_arguments_are_clear_errors():
    g = [torch.ones(2, device="npu")]
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(g, torch.zeros(2, device="npu"), torch.ones(1, device="npu"))
    with pytest.raises(RuntimeError, match="inv_scale must be an npu tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(g, torch.zeros(1, device="npu"), torch.ones(1))
