"""The _foreach ops on npu: the multi-tensor launch (one kernel over every tensor of the lists) for the
optimizers' ops against CPU PyTorch, and the per-tensor path it leaves to (non-uniform scalar lists,
aliasing in place, non-contiguous tensors, mixed dtypes) staying correct; AdamW / Adam / SGD steps."""
import copy

import pytest
import torch

import torch_npu_sim

SHAPES = [(5,), (3, 4), (70000,), (0,), (2, 3, 4)]  # one part larger than a block, one empty


def lists(dtype=torch.float32, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(s, generator=g, dtype=torch.float64).to(dtype) for s in SHAPES]
    return [x.abs() + 0.5 for x in xs] if positive else xs


def per_tensor_ops(fn):
    """Runs fn under the profiler; returns the names of the per-tensor ops it issued."""
    with torch.autograd.profiler.profile() as prof:
        fn()
        torch.npu.synchronize()
    return [e.name for e in prof.function_events if not e.name.startswith("aten::_foreach")
            and e.name not in ("aten::empty_like", "aten::empty_strided", "aten::empty")]


CASES = {  # name: (fn(self, other, third) -> result or None for in place, in place?)
    "mul_.Scalar": (lambda a, b, c: torch._foreach_mul_(a, 0.75), True),
    "add.Scalar": (lambda a, b, c: torch._foreach_add(a, 2.5), False),
    "sub_.Scalar": (lambda a, b, c: torch._foreach_sub_(a, 1.25), True),
    "div_.ScalarList": (lambda a, b, c: torch._foreach_div_(a, [3.0] * len(a)), True),
    "add_.List alpha": (lambda a, b, c: torch._foreach_add_(a, b, alpha=-0.5), True),
    "sub.List": (lambda a, b, c: torch._foreach_sub(a, b), False),
    "mul_.List": (lambda a, b, c: torch._foreach_mul_(a, b), True),
    "div.List": (lambda a, b, c: torch._foreach_div(a, c), False),
    "lerp_.Scalar": (lambda a, b, c: torch._foreach_lerp_(a, b, 0.1), True),
    "addcmul_.Scalar": (lambda a, b, c: torch._foreach_addcmul_(a, b, b, 0.001), True),
    "addcdiv_.ScalarList": (lambda a, b, c: torch._foreach_addcdiv_(a, b, c, [-0.01] * len(a)), True),
    "addcdiv.Scalar": (lambda a, b, c: torch._foreach_addcdiv(a, b, c, 2.0), False),
    "sqrt": (lambda a, b, c: torch._foreach_sqrt(c), False),
    "neg_": (lambda a, b, c: torch._foreach_neg_(a), True),
    "reciprocal": (lambda a, b, c: torch._foreach_reciprocal(c), False),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(CASES))
def test_multi_tensor_launch_matches_cpu(name, dtype):
    fn, inplace = CASES[name]
    a, b, c = lists(dtype, 1), lists(dtype, 2), lists(dtype, 3, positive=True)
    an, bn, cn = ([t.npu() for t in l] for l in (a, b, c))
    ref = fn(a, b, c)
    torch_npu_sim.reset_fallback_ops()
    issued = per_tensor_ops(lambda: fn(an, bn, cn))
    assert issued == [], f"per-tensor ops issued: {issued}"  # one multi-tensor launch, no loop
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    # in place, the profiled call above updated an as the reference call updated a
    pairs = zip(an, a) if inplace else zip(fn(an, bn, cn), ref)
    for g, r in pairs:
        assert g.device.type == "npu" and g.dtype == r.dtype and g.shape == r.shape
        torch.testing.assert_close(g.cpu(), r, **tol)
    assert torch_npu_sim.fallback_ops() == {}


@pytest.mark.parametrize("case", ["non_uniform_scalars", "self_twice", "self_as_other_input", "non_contiguous",
                                  "mixed_dtypes"])
def test_cases_left_to_the_per_tensor_path_stay_correct(case):
    a, b = lists(seed=4), lists(seed=5)
    if case == "non_uniform_scalars":
        fn = lambda x, y: torch._foreach_mul_(x, [float(i + 1) for i in range(len(x))])  # noqa: E731
    elif case == "self_twice":  # a[0] += b[0] twice, sequentially
        a, b = [a[1]], [b[1], b[1]]
        fn = lambda x, y: torch._foreach_add_([x[0], x[0]], y)  # noqa: E731
    elif case == "self_as_other_input":  # a[1] reads a[0] after a[0] was updated
        a, b = [a[1], a[1].clone()], [b[1], b[1]]
        fn = lambda x, y: torch._foreach_add_(x, [y[0], x[0]])  # noqa: E731
    elif case == "non_contiguous":
        a, b = [t.t() for t in (torch.randn(3, 4), torch.randn(5, 2))], [torch.randn(4, 3), torch.randn(2, 5)]
        fn = lambda x, y: torch._foreach_lerp_(x, y, 0.3)  # noqa: E731
    else:
        b = [t.double() for t in b]
        fn = lambda x, y: torch._foreach_add_(x, y)  # noqa: E731
    an, bn = [t.npu() for t in a], [t.npu() for t in b]
    fn(a, b)
    issued = per_tensor_ops(lambda: fn(an, bn))
    assert issued, "expected the per-tensor path"
    for g, r in zip(an, a):
        torch.testing.assert_close(g.cpu(), r, rtol=1e-6, atol=1e-6)


def test_mixed_devices_are_refused_like_the_per_tensor_ops():
    a = [torch.ones(3, device="npu")]
    with pytest.raises(RuntimeError, match="same device|Expected all tensors"):
        torch._foreach_add_(a, [torch.ones(3)])


@pytest.mark.parametrize("make", [
    lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1),
    lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=0.1),
], ids=["AdamW", "Adam", "SGD"])
def test_optimizer_steps_match_cpu_through_the_multi_tensor_path(make):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    model_n = copy.deepcopy(model).to("npu")
    opt, opt_n = make(model.parameters()), make(model_n.parameters())
    x, y = torch.randn(64, 16), torch.randn(64, 4)
    for step in range(5):
        for m, o, xx, yy in ((model, opt, x, y), (model_n, opt_n, x.npu(), y.npu())):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(xx), yy).backward()
            if m is model_n and step == 4:
                issued = per_tensor_ops(o.step)
                # (aten::add_ on the CPU step counters is expected: torch keeps them on the host)
                assert not any(n in ("aten::addcdiv_", "aten::lerp_", "aten::addcmul_", "aten::sqrt", "aten::mul_")
                               for n in issued), issued
            else:
                o.step()
    for p, q in zip(model.parameters(), model_n.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)
