"""Range factories against CPU PyTorch, and the Philox-based RNG ops: reproducibility (manual_seed,
get/set_rng_state, explicit generators) and distribution statistics with generous tolerances."""
import math

import pytest
import torch

from conftest import acknowledge_device_error
import torch_npu_sim

DEV = "npu"
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def _no_fallback():
    torch_npu_sim.reset_fallback_ops()
    yield


def assert_native(*ops):
    fell = torch_npu_sim.fallback_ops()
    assert not [op for op in ops if op in fell], fell


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.uint8])
def test_range_factories_match_cpu(dtype):
    for args in [(10,), (2, 17, 3), (5, -5, -2)]:
        if dtype == torch.uint8 and len(args) > 1 and args[0] > args[1]:
            continue
        assert torch.equal(torch.arange(*args, dtype=dtype, device=DEV).cpu(), torch.arange(*args, dtype=dtype))
    if dtype.is_floating_point:
        tol = dict(rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(torch.arange(0, 1, 0.1, dtype=dtype, device=DEV).cpu(),
                                   torch.arange(0, 1, 0.1, dtype=dtype), **tol)
        torch.testing.assert_close(torch.linspace(-3, 7, 11, dtype=dtype, device=DEV).cpu(),
                                   torch.linspace(-3, 7, 11, dtype=dtype), **tol)
        torch.testing.assert_close(torch.logspace(0, 2, 5, dtype=dtype, device=DEV).cpu(),
                                   torch.logspace(0, 2, 5, dtype=dtype), rtol=2e-2, atol=1e-2)
    assert torch.equal(torch.eye(3, dtype=dtype, device=DEV).cpu(), torch.eye(3, dtype=dtype))
    assert torch.equal(torch.eye(2, 5, dtype=dtype, device=DEV).cpu(), torch.eye(2, 5, dtype=dtype))
    assert torch.equal(torch.full((2, 3), 7, dtype=dtype, device=DEV).cpu(), torch.full((2, 3), 7, dtype=dtype))
    assert torch.equal(torch.zeros(4, dtype=dtype, device=DEV).cpu(), torch.zeros(4, dtype=dtype))
    assert torch.equal(torch.ones(4, dtype=dtype, device=DEV).cpu(), torch.ones(4, dtype=dtype))
    assert_native("aten::arange.start_out", "aten::linspace.out", "aten::logspace.out", "aten::eye.out",
                  "aten::eye.m_out", "aten::fill_.Scalar")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8, torch.complex64])
def test_linspace_is_cpus_bit_for_bit(dtype):
    # ATen's arithmetic in the output dtype: integer ends truncated first, then a double step (npu computed the
    # values from the untruncated ends in double: linspace(0.5, 10.5, 5, dtype=int64) was [0, 3, 5, 8, 10]);
    # fp16 / bf16 rounding after every operation. CPU vectorises runs of 32+ elements (lanes step from the run's
    # first value), so long runs match it only within an ulp or two.
    for start, end, steps in [(0.5, 10.5, 5), (-2.7, 9.9, 7), (1, 100, 25), (9.25, -3.5, 2), (3, 3, 1), (0, 1, 0)]:
        if dtype in (torch.uint8,) and min(start, end) < 0:
            continue
        want = torch.linspace(start, end, steps, dtype=dtype)
        assert torch.equal(torch.linspace(start, end, steps, dtype=dtype, device=DEV).cpu(), want), (start, end, steps)
    if dtype.is_floating_point:
        want = torch.linspace(-1.3, 7.7, 1001, dtype=dtype)
        eps = torch.finfo(dtype).eps
        torch.testing.assert_close(torch.linspace(-1.3, 7.7, 1001, dtype=dtype, device=DEV).cpu(), want,
                                   rtol=2 * eps, atol=2 * eps * 7.7)
    assert_native("aten::linspace.out")


def test_linspace_logspace_errors_and_fill_cases_as_cpu():
    for fn in (torch.linspace, torch.logspace):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            fn(0, 1, 5, dtype=torch.bool, device=DEV)
        assert torch.equal(fn(0, 1, 1, dtype=torch.bool, device=DEV).cpu(), fn(0, 1, 1, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        torch.logspace(3, 3, 1, dtype=torch.uint8, device=DEV)  # 10 ** 3, as CPU's fill_
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        torch.linspace(-2.7, 9.9, 7, dtype=torch.uint8, device=DEV)  # the end converted with Scalar's check
    for dtype in (torch.int64, torch.float32, torch.float64):
        want = torch.logspace(-2.5, 3.5, 9, base=3.0, dtype=dtype)
        torch.testing.assert_close(torch.logspace(-2.5, 3.5, 9, base=3.0, dtype=dtype, device=DEV).cpu(), want,
                                   rtol=1e-6 if dtype == torch.float32 else 1e-14, atol=0)
    z = torch.linspace(1 + 2j, 3 - 1j, 4, device=DEV)  # complex ends: the CPU fallback
    assert torch.equal(z.cpu(), torch.linspace(1 + 2j, 3 - 1j, 4))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_logspace_descending_integer_ends_as_cpu(dtype):
    # The step comes from end - start in the type as C++ promotes it: for uint8 1 -> 0 that is -1 (int), not 255.
    # npu took the difference modulo 2^8 and wrote 2, 0, 0, 1 for CPU's 2, 1, 1, 1.
    for start, end, steps, base in [(1, 0, 4, 2.0), (4, 0, 5, 2.0), (3, 1, 7, 1.5)]:
        want = torch.logspace(start, end, steps, base=base, dtype=dtype)
        assert torch.equal(torch.logspace(start, end, steps, base=base, dtype=dtype, device=DEV).cpu(), want)


def test_fill_values_out_of_range_raise_as_on_cpu():
    # fill_ / full / masked_fill_ / index_fill_ convert the value with CPU's overflow check (npu wrapped: 1000 -> 232)
    x = torch.zeros(3, dtype=torch.uint8, device=DEV)
    for v in (1000.0, 300, -129.5):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
            x.fill_(v)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        torch.full((2,), 1000.0, dtype=torch.int8, device=DEV)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        torch.zeros(3, dtype=torch.int8, device=DEV).masked_fill_(torch.ones(3, dtype=torch.bool, device=DEV), 200)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        x.index_fill_(0, torch.tensor([1], device=DEV), 256)
    assert torch.equal(x.fill_(-1).cpu(), torch.zeros(3, dtype=torch.uint8).fill_(-1))  # what CPU accepts
    assert torch.equal(torch.full((2,), 1e300, dtype=torch.float64, device=DEV).cpu(), torch.full((2,), 1e300,
                                                                                                dtype=torch.float64))


def test_factory_out_and_edge_cases():
    out = torch.empty(3, device=DEV)
    with pytest.warns(UserWarning, match="resized"):
        torch.arange(5, out=out)
    assert out.shape == (5,) and torch.equal(out.cpu(), torch.arange(5.0))
    assert torch.linspace(0, 1, 1, device=DEV).cpu().tolist() == [0.0]
    assert torch.linspace(0, 1, 0, device=DEV).numel() == 0
    assert torch.eye(0, device=DEV).shape == (0, 0)
    with pytest.raises(RuntimeError):
        torch.arange(0, 10, -1, device=DEV)
    with pytest.raises(RuntimeError):
        torch.linspace(0, 1, -1, device=DEV)


def draws():
    return [torch.rand(1000, device=DEV), torch.randn(1000, device=DEV), torch.randint(0, 50, (1000,), device=DEV),
            torch.randperm(100, device=DEV), torch.empty(1000, device=DEV).bernoulli_(0.3),
            torch.nn.functional.dropout(torch.ones(1000, device=DEV), 0.5),
            torch.multinomial(torch.ones(20, device=DEV), 10)]


def test_manual_seed_and_rng_state_reproduce():
    torch.npu.manual_seed(123)
    a = [t.cpu() for t in draws()]
    torch.npu.manual_seed(123)
    b = [t.cpu() for t in draws()]
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    state = torch.npu.get_rng_state()
    c = [t.cpu() for t in draws()]
    d = [t.cpu() for t in draws()]
    torch.npu.set_rng_state(state)
    e = [t.cpu() for t in draws()]
    for x, y, z in zip(c, d, e):
        assert torch.equal(x, z)
        assert not torch.equal(x, y) or x.numel() < 2 or x.dtype == torch.bool
    torch.npu.manual_seed(124)
    assert not torch.equal(torch.rand(100, device=DEV).cpu(), a[0][:100])


def test_explicit_generator():
    g = torch.Generator(device=DEV)
    g.manual_seed(7)
    x = torch.randn(500, device=DEV, generator=g).cpu()
    default_before = torch.npu.get_rng_state()
    g.manual_seed(7)
    y = torch.randn(500, device=DEV, generator=g).cpu()
    assert torch.equal(x, y)
    assert torch.equal(torch.npu.get_rng_state(), default_before)  # the default generator was not used
    g.manual_seed(7)
    s = g.get_state()
    u1 = torch.empty(100, device=DEV).uniform_(generator=g).cpu()
    g.set_state(s)
    u2 = torch.empty(100, device=DEV).uniform_(generator=g).cpu()
    assert torch.equal(u1, u2)
    p = torch.multinomial(torch.ones(10, device=DEV), 10, generator=g).cpu()
    assert sorted(p.tolist()) == list(range(10))
    perm = torch.randperm(50, device=DEV, generator=g).cpu()
    assert sorted(perm.tolist()) == list(range(50))


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_normal_exponential_statistics(dtype):
    n = 200_000
    u = torch.empty(n, device=DEV, dtype=dtype).uniform_(-2, 3).cpu().double()
    assert u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.var() - 25 / 12) < 0.1
    z = torch.empty(n, device=DEV, dtype=dtype).normal_(1.5, 2.0).cpu().double()
    assert abs(z.mean() - 1.5) < 0.05 and abs(z.std() - 2.0) < 0.05
    assert abs(((z - 1.5).abs() < 2.0).double().mean() - 0.6827) < 0.01  # within one sigma
    e = torch.empty(n, device=DEV, dtype=dtype).exponential_(4.0).cpu().double()
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01
    r = torch.rand(n, device=DEV, dtype=dtype).cpu().double()
    assert r.min() >= 0 and r.max() < 1
    assert_native("aten::uniform_", "aten::normal_", "aten::exponential_")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_uniform_and_normal(dtype):
    # As ATen: uniform_ draws both parts from [from, to); normal_ draws both around `mean` with half the variance
    # each, so that E|z - mean|^2 = std^2. randn on a complex dtype is the standard complex normal.
    n = 200_000
    u = torch.view_as_real(torch.empty(n, device=DEV, dtype=dtype).uniform_(-2, 3).cpu()).double()
    assert u.min() >= -2 and u.max() < 3
    assert (u.mean(0) - 0.5).abs().max() < 0.05 and (u.var(0) - 25 / 12).abs().max() < 0.1
    z = torch.empty(n, device=DEV, dtype=dtype).normal_(1.5, 2.0).cpu()
    parts = torch.view_as_real(z).double()
    assert (parts.mean(0) - 1.5).abs().max() < 0.05 and (parts.std(0) - 2.0 / 2 ** 0.5).abs().max() < 0.05
    assert abs((z - complex(1.5, 1.5)).abs().double().pow(2).mean() - 4.0) < 0.1
    r = torch.randn(n, device=DEV, dtype=dtype).cpu()
    assert r.dtype == dtype and abs(r.abs().double().pow(2).mean() - 1.0) < 0.02
    assert_native("aten::uniform_", "aten::normal_")


def test_normal_tensor_variants():
    mean = torch.linspace(-5, 5, 11, device=DEV).repeat(20000)
    std = torch.full_like(mean, 0.5)
    for z in [torch.normal(mean, std), torch.normal(mean, 0.5), torch.normal(0.0, std) + mean]:
        dev = (z - mean).cpu().view(-1, 11)
        assert dev.mean().abs() < 0.01 and abs(dev.std() - 0.5) < 0.01
    out = torch.empty(0, device=DEV)
    torch.normal(mean[:5], std[:5], out=out)
    assert out.shape == (5,)
    with pytest.raises(RuntimeError):
        torch.empty(3, device=DEV).normal_(0, -1)
    assert_native("aten::normal.Tensor_Tensor", "aten::normal.Tensor_float", "aten::normal.float_Tensor")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool])
def test_random_and_bernoulli(dtype):
    n = 100_000
    if dtype != torch.bool:
        r = torch.empty(n, device=DEV, dtype=dtype).random_(3, 10).cpu()
        assert set(r.unique().tolist()) == set(range(3, 10))
        r = torch.empty(n, device=DEV, dtype=dtype).random_(5).cpu()
        assert set(r.unique().tolist()) == set(range(5))
        counts = torch.bincount(r.long(), minlength=5).double() / n
        assert (counts - 0.2).abs().max() < 0.01
    r = torch.empty(n, device=DEV, dtype=dtype).random_().cpu()
    assert r.double().min() >= 0
    b = torch.empty(n, device=DEV, dtype=dtype).bernoulli_(0.25).cpu().double()
    assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    p = torch.rand(n, device=DEV)
    bt = torch.empty(n, device=DEV, dtype=dtype).bernoulli_(p).cpu().double()
    pc = p.cpu().double()
    assert abs(bt.mean() - pc.mean()) < 0.01
    assert abs((bt * pc).mean() - (pc * pc).mean()) < 0.01  # follows each element's p
    bf = torch.bernoulli(torch.full((n,), 0.8, device=DEV)).cpu()
    assert abs(bf.mean() - 0.8) < 0.01
    assert_native("aten::random_.from", "aten::random_.to", "aten::random_", "aten::bernoulli_.float",
                  "aten::bernoulli_.Tensor", "aten::bernoulli")


def test_bernoulli_rejects_bad_p():
    with pytest.raises(RuntimeError):
        torch.empty(3, device=DEV).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="bernoulli"):
        torch.empty(3, device=DEV).bernoulli_(torch.full((3,), 2.0, device=DEV))
        torch.npu.synchronize()
    acknowledge_device_error()


def test_multinomial_randperm():
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]], device=DEV)
    s = torch.multinomial(probs, 40_000, replacement=True).cpu()
    freq = torch.stack([torch.bincount(row, minlength=4) for row in s]).double() / 40_000
    ref = probs.cpu().double() / probs.cpu().double().sum(1, keepdim=True)
    assert (freq - ref).abs().max() < 0.015
    w = torch.multinomial(probs, 3).cpu()
    assert (w[0] != 1).all() and len(set(w[0].tolist())) == 3 and len(set(w[1].tolist())) == 3
    first = torch.stack([torch.multinomial(torch.tensor([1.0, 2.0, 7.0], device=DEV), 2) for _ in range(2000)]).cpu()
    assert abs((first[:, 0] == 2).double().mean() - 0.7) < 0.04
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.ones(3, device=DEV), 4)
    for dtype in [torch.int64, torch.int32, torch.float32]:
        perm = torch.randperm(1000, device=DEV, dtype=dtype).cpu()
        assert sorted(perm.long().tolist()) == list(range(1000))
    first = torch.stack([torch.randperm(4, device=DEV)[0] for _ in range(4000)]).cpu()
    assert (torch.bincount(first, minlength=4).double() / 4000 - 0.25).abs().max() < 0.04
    assert_native("aten::multinomial", "aten::randperm.generator_out")


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_scaling_and_mask(dtype):
    p = 0.3
    x = torch.randn(50_000, device=DEV, dtype=dtype).abs() + 0.5
    x.requires_grad_()
    y = torch.nn.functional.dropout(x, p, training=True)
    kept = y.detach().cpu() != 0
    assert abs(kept.double().mean() - (1 - p)) < 0.01
    torch.testing.assert_close(y.detach().cpu()[kept], (x.detach().cpu()[kept].float() / (1 - p)).to(dtype),
                               rtol=1e-2, atol=1e-2)
    g = torch.randn(50_000, device=DEV, dtype=dtype)
    (gx,) = torch.autograd.grad(y, x, g)
    gx = gx.cpu()
    assert (gx[~kept] == 0).all()  # the backward uses the forward's mask
    torch.testing.assert_close(gx[kept], (g.cpu()[kept].float() / (1 - p)).to(dtype), rtol=1e-2, atol=1e-2)
    assert torch.equal(torch.nn.functional.dropout(x, p, training=False).detach().cpu(), x.detach().cpu())
    assert (torch.nn.functional.dropout(x, 1.0).detach().cpu() == 0).all()
    out, mask = torch.native_dropout(x.detach(), p, True)
    assert mask.dtype == torch.bool and torch.equal((out.cpu() != 0), mask.cpu())
    assert_native("aten::native_dropout", "aten::native_dropout_backward")


def test_empty_random_tensors():
    for t in [torch.rand(0, device=DEV), torch.randn(0, 3, device=DEV), torch.randint(0, 3, (0,), device=DEV),
              torch.randperm(0, device=DEV), torch.nn.functional.dropout(torch.ones(0, device=DEV), 0.5)]:
        assert t.numel() == 0
    assert torch.rand(3, 4, device=DEV).t().contiguous().shape == (4, 3)
    x = torch.zeros(4, 6, device=DEV)[:, ::2]
    x.uniform_(1, 2)
    assert x.cpu().min() >= 1 and torch.equal(torch.zeros(4, 6, device=DEV)[:, 1::2].cpu(), torch.zeros(4, 3))


def test_log_normal_geometric_cauchy():
    n = 200_000
    ln = torch.empty(n, device=DEV, dtype=torch.float64).log_normal_(0.5, 0.25).cpu()
    assert ln.min() > 0 and abs(ln.log().mean() - 0.5) < 0.01 and abs(ln.log().std() - 0.25) < 0.01
    ge = torch.empty(n, device=DEV).geometric_(0.25).cpu()
    assert ge.min() >= 1 and torch.equal(ge, ge.round()) and abs(ge.mean() - 4.0) < 0.1
    ca = torch.empty(n, device=DEV).cauchy_(2.0, 0.5).cpu()
    assert abs(ca.median() - 2.0) < 0.02
    assert abs(((ca - 2.0).abs() < 0.5).double().mean() - 0.5) < 0.01  # half the mass within one scale
    assert_native("aten::log_normal_", "aten::geometric_", "aten::cauchy_")


# --- the rejection samplers: poisson, _standard_gamma, _sample_dirichlet (torch.distributions) ----------------

def within(samples, mean, var, excess_kurtosis=0.0, sigmas=6.0):
    """The sample mean and variance within `sigmas` standard errors of `mean` and `var` (the variance's standard
    error grows with the distribution's excess kurtosis)."""
    x = samples.double()
    n = x.numel()
    assert abs(x.mean().item() - mean) <= sigmas * math.sqrt(var / n) + 1e-12, (x.mean().item(), mean)
    var_se = var * math.sqrt((excess_kurtosis + 2) / n)
    assert abs(x.var().item() - var) <= sigmas * var_se + 1e-12, (x.var().item(), var)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_poisson_samples_natively_with_poisson_moments(dtype, native_only):
    torch.manual_seed(0)
    n = 200_000
    # both of ATen's methods: multiplication below rate 10, transformed rejection from 10
    for lam in (0.3, 4.0, 9.99, 10.0, 55.0, 1e4):
        if dtype == torch.float16 and lam > 1e3:
            continue
        x = torch.poisson(torch.full((n,), lam, dtype=dtype, device="npu")).cpu()
        assert x.dtype == dtype and bool((x == x.round()).all()) and bool((x >= 0).all())
        if dtype == torch.bfloat16 and lam >= 55:
            continue  # counts above 256 are rounded to bfloat16's 8 bits
        within(x, lam, lam, 1 / lam)
    zero = torch.poisson(torch.zeros(1000, dtype=dtype, device="npu")).cpu()
    assert bool((zero == 0).all())
    # an expanded (stride 0) rate still draws each element from its own sequence
    x = torch.poisson(torch.tensor([3.0], dtype=dtype, device="npu").expand(1000)).cpu()
    assert len(torch.unique(x)) > 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gamma_beta_dirichlet_sample_natively_with_their_moments(dtype, native_only):
    torch.manual_seed(1)
    n = 200_000
    for a in (0.01, 0.5, 1.0, 2.5, 30.0):  # alpha < 1 takes ATen's boost
        x = torch._standard_gamma(torch.full((n,), a, dtype=dtype, device="npu")).cpu()
        assert x.dtype == dtype and bool((x >= torch.finfo(dtype).tiny).all())
        within(x, a, a, 6 / a)
    rate = torch.tensor(2.0, dtype=dtype, device="npu")
    g = torch.distributions.Gamma(torch.full((n,), 3.0, dtype=dtype, device="npu"), rate).sample().cpu()
    within(g, 1.5, 0.75, 2.0)
    b = torch.distributions.Beta(torch.tensor(2.0, dtype=dtype, device="npu"),
                                 torch.tensor(5.0, dtype=dtype, device="npu")).sample((n,)).cpu()
    within(b, 2 / 7, 2 * 5 / (7 ** 2 * 8))
    conc = torch.tensor([0.5, 1.0, 3.0], dtype=dtype)
    d = torch.distributions.Dirichlet(conc.npu()).sample((n,)).cpu()
    assert d.dtype == dtype and d.shape == (n, 3)
    torch.testing.assert_close(d.sum(-1), torch.ones(n, dtype=dtype), rtol=0, atol=4 * torch.finfo(dtype).eps)
    assert bool((d > 0).all()) and bool((d < 1).all())
    a0 = conc.sum().item()
    for i, a in enumerate(conc.tolist()):
        within(d[:, i], a / a0, a * (a0 - a) / (a0 ** 2 * (a0 + 1)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_binomial_samples_natively_with_binomial_moments(dtype, native_only):
    torch.manual_seed(3)
    n = 200_000
    # inversion below count * prob = 10, BTRS from 10, and prob > 0.5 by symmetry
    for count, p in ((1, 0.3), (20, 0.05), (7, 0.9), (40, 0.25), (40, 0.26), (200, 0.5), (1000, 0.97), (5000, 0.1)):
        if dtype in (torch.float16, torch.bfloat16) and count > 256:
            continue  # counts above 256 round in bfloat16's 8 bits
        x = torch.binomial(torch.full((n,), float(count), dtype=dtype, device="npu"),
                           torch.full((n,), p, dtype=dtype, device="npu")).cpu()
        assert x.dtype == dtype and bool((x == x.round()).all()) and bool(((x >= 0) & (x <= count)).all())
        p = torch.tensor(p, dtype=dtype).item()  # the probability as the dtype holds it (bfloat16: 0.9 -> 0.898)
        q = 1 - p
        within(x, count * p, count * p * q, (1 - 6 * p * q) / (count * p * q))
    # the whole distribution, not only its moments: Binomial(12, 0.35)'s pmf within 6 standard errors per value
    x = torch.distributions.Binomial(12, torch.full((n,), 0.35, dtype=dtype, device="npu")).sample().cpu()
    pmf = torch.distributions.Binomial(12, torch.tensor(0.35, dtype=torch.float64)).log_prob(
        torch.arange(13, dtype=torch.float64)).exp()
    freq = torch.bincount(x.long(), minlength=13).double() / n
    assert bool(((freq - pmf).abs() <= 6 * (pmf * (1 - pmf) / n).sqrt() + 1e-4).all()), (freq, pmf)


def test_binomial_edges_broadcast_and_errors_as_cpu(native_only):
    count = torch.tensor([10.0, 0.0, -3.0, 10.0, 10.0, 5.7, float("nan"), 10.0])
    prob = torch.tensor([0.0, 0.5, 0.5, 1.0, 1.5, 1.0, 0.5, float("nan")])
    got = torch.binomial(count.npu(), prob.npu()).cpu()
    # 0 for prob <= 0, count <= 0 or a negative count; count (floored) for prob >= 1; NaN for a NaN input (CPU
    # never returns for a NaN count: npu answers NaN)
    torch.testing.assert_close(got, torch.tensor([0.0, 0.0, 0.0, 10.0, 10.0, 5.0, float("nan"), float("nan")]),
                               equal_nan=True)
    # prob broadcast against count (CPU's output shape)
    b = torch.binomial(torch.full((3, 1), 10.0, device="npu"), torch.tensor([0.0, 1.0], device="npu")).cpu()
    assert torch.equal(b, torch.tensor([[0.0, 10.0]] * 3))
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: Long"):
        torch.binomial(torch.ones(3, dtype=torch.long, device="npu"), torch.ones(3, device="npu"))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.binomial(torch.ones(3, device="npu"), torch.ones(3, dtype=torch.float64, device="npu"))
    gens = [torch.Generator("npu").manual_seed(9) for _ in range(2)]
    draws = [torch.binomial(torch.full((64,), 30.0, device="npu"), torch.full((64,), 0.4, device="npu"), g).cpu()
             for g in gens]
    assert torch.equal(draws[0], draws[1]) and len(torch.unique(draws[0])) > 4


def test_samplers_reproduce_with_a_generator_and_never_repeat_a_launch():
    rate = torch.full((64,), 7.0, device="npu")
    alpha = torch.full((64,), 0.7, device="npu")
    runs = []
    for _ in range(2):
        gen = torch.Generator("npu").manual_seed(5)
        runs.append([torch.poisson(rate, gen).cpu(), torch._standard_gamma(alpha, gen).cpu(),
                     torch._sample_dirichlet(alpha.view(8, 8), gen).cpu()])
    for a, b in zip(*runs):
        assert torch.equal(a, b)
    assert not torch.equal(runs[0][1], torch._standard_gamma(alpha).cpu())  # the next launch: new counters


def test_sampler_errors_as_cpu():
    with pytest.raises(RuntimeError, match=r"_standard_gamma: expected a floating point tensor of float32 or "
                                           r"float64, got Half"):
        torch._standard_gamma(torch.ones(3, dtype=torch.float16, device="npu"))
    with pytest.raises(RuntimeError, match="poisson: expected a floating point tensor, got Long"):
        torch.poisson(torch.ones(3, dtype=torch.long, device="npu"))
    assert torch.isnan(torch._standard_gamma(torch.tensor([float("nan"), 1.0], device="npu"))[0].cpu())
    # a negative rate: the kernel's error, sticky on the device (CPU raises it at the call)
    torch.poisson(torch.tensor([1.0, -1.0], device="npu"))
    with pytest.raises(RuntimeError, match=r"kernel 'poisson' failed: poisson: invalid Poisson rate, expected rate "
                                           r"to be non-negative, got -1"):
        torch.npu.synchronize()
    acknowledge_device_error()
