"""torch.compile on npu: dynamo's device interface, the "npu" backend, and Inductor's npu backend (C++ kernels
launched on the npu stream), against eager npu and CPU PyTorch. The first classes follow PyTorch's reference
PrivateUse1 backend's tests/test_compile.py with "npu" for its device."""
import gc
import logging
import time

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend

import torch_npu_sim
from test_models import CNN, MLP, GPTMini, data, loss_fn


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def generated(records):
    return [r for r in records if r["kernel"].startswith("cpp_")]


# --- the device interface -------------------------------------------------------------------------------

def test_device_interface_is_complete():
    from torch._dynamo.device_interface import DeviceGuard, get_interface_for_device

    iface = get_interface_for_device("npu")
    assert iface is get_interface_for_device(torch.device("npu", 0))
    assert iface.is_available() and iface.device_count() == torch.npu.device_count() > 0
    assert isinstance(iface.current_device(), int)
    assert issubclass(iface.Stream, torch.Stream) and issubclass(iface.Event, torch.Event)
    s = iface.Stream()
    with iface.stream(s):
        assert iface.current_stream() == s
        assert iface.get_raw_stream(0) == s.stream_id
    assert iface.current_stream() == torch.npu.default_stream()
    x = torch.ones(1000, device="npu")
    # Blocks freed while another stream still used them count as allocated until that use completes
    # (as CUDA's caching allocator): settle earlier tests' frees before comparing two readings.
    gc.collect()
    torch.npu.synchronize()
    assert iface.memory_allocated() == torch.npu.memory_allocated() >= x.nbytes
    e = iface.Event(enable_timing=True)
    e.record()
    iface.synchronize()
    assert e.query()
    props = iface.get_device_properties(0)
    assert props.multi_processor_count == torch.npu.get_device_properties(0).ai_core_count
    assert iface.Worker.get_device_properties(0).name == props.name
    assert iface.is_bf16_supported() and iface.is_dtype_supported(torch.bfloat16)
    assert iface.get_compute_capability() is None  # as torch_npu
    assert not iface.is_triton_capable()
    if iface.device_count() > 1:
        with DeviceGuard(iface, 1):
            assert iface.current_device() == 1
        assert iface.current_device() == 0
        assert iface.exchange_device(1) == 0 and iface.exchange_device(0) == 1


def test_backend_in_list():
    from torch._dynamo.backends.registry import list_backends

    assert "npu" in list_backends(exclude_tags=())


# Which of dynamo / Inductor a fresh process imports first, and whether torch_npu_sim comes before or after it.
REGISTRATION_ORDERS = {
    "dynamo first": "import torch; import torch._dynamo",
    "inductor first (it imports dynamo)": "import torch; import torch._inductor.config",
    "aot_autograd first": "import torch; import torch._functorch.aot_autograd",
    "compile_fx before torch_npu_sim": "import torch, torch._dynamo, torch._inductor.compile_fx; import torch_npu_sim",
}


@pytest.mark.parametrize("first", REGISTRATION_ORDERS.values(), ids=REGISTRATION_ORDERS.keys())
def test_registration_waits_for_dynamo_and_inductor_in_any_import_order(first):
    # torch.compile's registrations run when torch._dynamo / Inductor's compile_fx are imported (they cost more to
    # import than torch itself), not with torch_npu_sim: a process that never compiles does not import them.
    from conftest import run_python

    env = {} if "before torch_npu_sim" not in first else {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    out = run_python(f"""
        import sys
        import torch
        import torch_npu_sim
        assert torch.npu.device_count() > 0
        assert "before" in {first!r} or not any(m in sys.modules for m in ("torch._dynamo", "torch._inductor")), \\
            "importing torch_npu_sim imported dynamo or Inductor"
        {first}
        from torch._dynamo.backends.registry import list_backends
        from torch._dynamo.device_interface import get_interface_for_device
        from torch._inductor.codegen.common import get_scheduling_for_device
        assert get_interface_for_device("npu").__name__ == "NpuInterface"
        assert "npu" in list_backends(exclude_tags=())
        x = torch.randn(4, 64, device="npu", requires_grad=True)
        for backend in ("inductor", "npu"):
            torch._dynamo.reset()
            with torch_npu_sim.record_launches() as rec:
                y = torch.compile(lambda t: torch.nn.functional.gelu(t.sin() * 2), backend=backend)(x)
            kernels = [r["kernel"] for r in rec.records]
            assert any(k.startswith("cpp_") for k in kernels), (backend, kernels)  # a generated npu kernel
            assert "gelu" in kernels, (backend, kernels)  # the native op kept whole (native_ops.py)
            assert torch.allclose(y.cpu(), torch.nn.functional.gelu(x.detach().cpu().sin() * 2), atol=1e-6)
        assert get_scheduling_for_device("npu").__name__ == "NpuScheduling"
        print("OK")
    """, env=env, timeout=600)
    assert out.returncode == 0 and "OK" in out.stdout, out.stdout + out.stderr


# --- graph capture (PyTorch's PrivateUse1 compile tests, on npu) --------------------------------------

@pytest.mark.parametrize("backend", ["npu", "inductor"])
def test_simple_compile(backend):
    x = torch.randn(4, device="npu")
    result = torch.compile(lambda x: x + 1, backend=backend)(x)
    assert result.device.type == "npu"
    torch.testing.assert_close(result.cpu(), x.cpu() + 1)


def test_compile_fullgraph_multiple_ops():
    @torch.compile(backend="npu", fullgraph=True)
    def fn(x):
        return torch.relu((x + 1) * 2)

    x = torch.randn(4, device="npu")
    torch.testing.assert_close(fn(x).cpu(), torch.relu((x.cpu() + 1) * 2))


def test_fake_tensors_are_npu():
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.compile(lambda x: x + 1, backend=capture)(torch.randn(4, device="npu"))
    fakes = [n.meta["example_value"] for n in graphs[0].graph.nodes if n.op == "placeholder"]
    assert fakes and all(f.device.type == "npu" for f in fakes)
    with torch._subclasses.fake_tensor.FakeTensorMode():
        x = torch.empty(3, 3, device="npu")
        assert x.device.type == "npu" and (x + 1).device.type == "npu"


def test_recompilation_guards():
    counter = CompileCounterWithBackend("npu")
    fn = torch.compile(lambda x: x + 1, backend=counter)
    fn(torch.randn(4, device="npu"))
    fn(torch.randn(4, device="npu"))
    assert counter.frame_count == 1
    fn(torch.randn(8, device="npu"))  # a new shape
    fn(torch.randn(8, device="cpu"))  # a new device
    assert counter.frame_count == 3


def test_dynamic_shapes_compile_once():
    counter = CompileCounterWithBackend("npu")
    fn = torch.compile(lambda x: (x * 2).sum(0), backend=counter, dynamic=True)
    for n in (4, 9, 33):
        x = torch.randn(n, 3, device="npu")
        torch.testing.assert_close(fn(x).cpu(), (x.cpu() * 2).sum(0))
    assert counter.frame_count == 1


def test_graph_break_and_cpu_transfer():
    counter = CompileCounterWithBackend("npu")

    @torch.compile(backend=counter)
    def fn(x):
        y = x + 1
        torch._dynamo.graph_break()
        return y * 2

    x = torch.randn(4, device="npu")
    torch.testing.assert_close(fn(x).cpu(), (x.cpu() + 1) * 2)
    assert counter.frame_count == 2

    @torch.compile(backend="npu", fullgraph=True)
    def to_host(x):
        return (x + 1).cpu() * 2

    result = to_host(x)
    assert result.device.type == "cpu"
    torch.testing.assert_close(result, (x.cpu() + 1) * 2)


def test_autocast_inside_compiled_region():
    @torch.compile(backend="npu")
    def fn(x, y):
        with torch.autocast(device_type="npu", dtype=torch.float16):
            return torch.mm(x, y).relu()

    x, y = torch.randn(8, 16), torch.randn(16, 4)
    result = fn(x.npu(), y.npu())
    assert result.dtype == torch.float16
    torch.testing.assert_close(result.cpu(), torch.mm(x.half(), y.half()).float().relu().half(), atol=2e-3,
                               rtol=2e-3)


def test_default_device_inside_compiled_region():
    with torch.device("npu"):
        @torch.compile(backend="npu")
        def fn(x):
            return x + torch.ones(4)

        x = torch.randn(4, device="npu")
        result = fn(x)
    assert result.device.type == "npu"
    torch.testing.assert_close(result.cpu(), x.cpu() + 1)


def test_autograd_through_compiled_function():
    x = torch.randn(4, device="npu", requires_grad=True)
    torch.compile(lambda x: (x * 2).sin().sum(), backend="npu")(x).backward()
    torch.testing.assert_close(x.grad.cpu(), 2 * torch.cos(2 * x.detach().cpu()))


# --- Inductor's npu kernels ------------------------------------------------------------------------------

def test_generated_kernel_runs_on_the_stream_with_its_traffic():
    fn = torch.compile(lambda x, y: (x * y + 1).relu())
    x, y = torch.randn(1000, device="npu"), torch.randn(1000, device="npu")
    fn(x, y)  # compile
    with torch_npu_sim.record_launches() as rec:
        torch.neg(x)  # on the default stream
        with torch.npu.stream(torch.npu.Stream()):
            x2 = x * 3  # an eager op the kernel must wait for: same stream, no synchronize between
            out = fn(x2, y)
        torch.npu.synchronize()
    (default,) = [r for r in rec.records if r["kernel"] == "neg"]
    (side,) = [r for r in rec.records if r["kernel"] == "mul"]
    (k,) = generated(rec.records)
    assert len(rec.records) == 3 and k["kernel"].startswith("cpp_fused")
    assert k["stream_id"] == side["stream_id"] != default["stream_id"]
    assert side["launch_seq"] < k["launch_seq"] and side["end_ns"] <= k["start_ns"]
    assert (k["gm_read"], k["gm_write"]) == (2 * 4000, 4000)
    assert k["vector_flops"] == 3 * 1000 and k["cube_flops"] == 0  # mul, add, relu per element
    torch.testing.assert_close(out.cpu(), (x.cpu() * 3 * y.cpu() + 1).relu())


def test_graph_on_a_second_device_stays_there():
    x = torch.randn(100, device="npu:1")
    torch.npu.synchronize(1)
    with torch_npu_sim.record_launches() as rec:
        result = torch.compile(lambda x: (x.sin() + 1) @ x.view(100, 1))(x.view(1, 100))
        torch.npu.synchronize(1)
    assert result.device == torch.device("npu", 1) and torch.npu.current_device() == 0
    assert {r["device"] for r in rec.records} == {1} and len(generated(rec.records)) == 1
    torch.testing.assert_close(result.cpu(), (x.cpu().sin() + 1).view(1, 100) @ x.cpu().view(100, 1))


def test_kernel_is_asynchronous_and_inputs_may_be_freed():
    fn = torch.compile(lambda x: (x.sin() * 2).sum(1))
    host = torch.randn(64, 4096)
    fn(host.npu())
    torch.npu.synchronize()
    gate = torch.npu.Event()
    s = torch.npu.current_stream()
    results = []
    with torch_npu_sim.record_launches() as rec:
        for i in range(4):
            results.append(fn((host + i).npu()))  # the input's only reference dies at once
        gate.record(s)
    torch.npu.synchronize()
    assert len(generated(rec.records)) == 4
    for i, r in enumerate(results):
        torch.testing.assert_close(r.cpu(), ((host + i).sin() * 2).sum(1), atol=1e-4, rtol=1e-5)


def test_extern_calls_use_native_npu_kernels():
    w = torch.randn(32, 16)
    fn = torch.compile(lambda x, w: F.gelu(x @ w + 1).sum(1))
    x = torch.randn(64, 32)
    with torch_npu_sim.record_launches() as rec:
        result = fn(x.npu(), w.npu())
        torch.npu.synchronize()
    names = [r["kernel"] for r in rec.records]
    # the GEMM and the GELU are native kernels; the + 1 and the sum are generated
    assert "gemm" in names and "gelu" in names and len(generated(rec.records)) == 2
    torch.testing.assert_close(result.cpu(), F.gelu(x @ w + 1).sum(1), atol=1e-4, rtol=1e-4)


def test_ops_with_faster_native_kernels_stay_native_forward_and_backward():
    # compiler/native_ops.py: Inductor's decompositions of these run 1.5-3.5x slower than the npu kernels
    def f(x, w, b, idx, emb):
        y = F.layer_norm(x, (x.shape[-1],), w, b)
        y = F.gelu(y, approximate="tanh") + F.gelu(y)
        return torch.softmax(y, -1).sum() + torch.log_softmax(y + F.embedding(idx, emb), -1).sum()

    torch.manual_seed(0)
    args = [torch.randn(8, 16), torch.randn(16), torch.randn(16), torch.randint(0, 10, (8,)), torch.randn(10, 16)]
    leaves = [a.npu().requires_grad_(a.is_floating_point()) for a in args]
    fn = torch.compile(f)
    fn(*leaves).backward()  # compile forward and backward
    for a in leaves:
        a.grad = None
    with torch_npu_sim.record_launches() as rec:
        out = fn(*leaves)
        out.backward()
        torch.npu.synchronize()
    names = {r["kernel"] for r in rec.records}
    assert {"layer_norm", "layer_norm_backward", "gelu", "gelu_backward", "gelu_tanh", "gelu_tanh_backward",
            "softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
            "embedding_dense_backward"} <= names, names
    assert generated(rec.records)  # the adds and sums around them are still fused
    ref = [a.requires_grad_(a.is_floating_point()) for a in args]
    expected = f(*ref)
    expected.backward()
    torch.testing.assert_close(out.cpu(), expected, atol=1e-4, rtol=1e-4)
    for a, r in zip(leaves, ref):
        if r.is_floating_point():
            torch.testing.assert_close(a.grad.cpu(), r.grad, atol=1e-4, rtol=1e-4)


def test_rms_norm_stays_native_and_compiles_with_dynamic_shapes():
    m = torch.nn.RMSNorm(64).npu()
    w = m.weight.detach()
    by_shape = lambda x: F.rms_norm(x, (x.shape[-1],), w)  # noqa: E731  (normalized_shape symbolic if dynamic)
    # (function, dynamic, whether the npu kernels serve it): aten's rms_norm hands a symbolic normalized_shape to
    # _fused_rms_norm as a garbage int (asIntArrayRefUnchecked), so that graph takes the decomposition
    for f, dynamic, native in ((m, False, True), (m, True, True), (by_shape, True, False)):
        fn = torch.compile(f, dynamic=dynamic)
        for rows in (8, 24):  # the second size recompiles (dynamic=False) or reuses the symbolic graph
            x = torch.randn(rows, 64)
            xn = x.npu().requires_grad_()
            with torch_npu_sim.record_launches() as rec:
                out = fn(xn)
                out.backward(torch.ones_like(out))
                torch.npu.synchronize()
            names = {r["kernel"] for r in rec.records}
            assert ({"rms_norm", "rms_norm_backward"} <= names) == native, (f, dynamic, names)
            xr = x.clone().requires_grad_()
            ref = F.rms_norm(xr, (64,), w.cpu())
            ref.backward(torch.ones_like(ref))
            torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(xn.grad.cpu(), xr.grad, atol=1e-5, rtol=1e-5)


def test_cpu_graphs_still_decompose_the_native_ops():
    from torch._inductor.utils import run_and_get_code
    fn = torch.compile(lambda x: torch.softmax(F.gelu(x), -1))
    x = torch.randn(8, 16)
    result, (code,) = run_and_get_code(fn, x)
    assert "aten.gelu" not in code and "aten._softmax" not in code and "cpp_fused" in code
    torch.testing.assert_close(result, torch.softmax(F.gelu(x), -1))
    result, (code,) = run_and_get_code(fn, x.npu())
    assert "aten.gelu" in code and "aten._softmax" in code
    torch.testing.assert_close(result.cpu(), torch.softmax(F.gelu(x), -1))


def test_cat_copies_each_input_as_on_cpu():
    # pointwise cat (masked loads, a scalar loop in the C++ backend) is what Inductor does for devices other than
    # cpu; npu graphs take cpu's ConcatKernel: one vectorised kernel writing each input's slice
    from torch._inductor.utils import run_and_get_code
    fn = torch.compile(lambda a, b, c: torch.cat([a.t(), b.t() * 2, c.t() + 1], 1))
    a, b, c = (torch.randn(64, 32) for _ in range(3))
    result, (code,) = run_and_get_code(fn, a.npu(), b.npu(), c.npu())
    assert "at::vec::Vectorized" in code and "? tmp" not in code, code
    torch.testing.assert_close(result.cpu(), torch.cat([a.t(), b.t() * 2, c.t() + 1], 1))


def test_fused_npu_ops_are_extern_calls():
    x, g = torch.randn(4, 16, 64), torch.randn(64)

    def f(x, g):
        y, _ = torch_npu_sim.npu_rms_norm(x, g)
        return torch_npu_sim.npu_swiglu(torch.cat([y, y * 2], -1)) + 1

    with torch_npu_sim.record_launches() as rec:
        result = torch.compile(f, fullgraph=True)(x.npu(), g.npu())
        torch.npu.synchronize()
    names = [r["kernel"] for r in rec.records]
    assert "rms_norm" in names and "swiglu" in names and len(generated(rec.records)) == 2
    torch.testing.assert_close(result.cpu(), f(x.npu(), g.npu()).cpu())


def test_fusion_attention_with_dropout_compiles_forward_and_backward():
    # the seed and offset are data-dependent ints under compile; the backward regenerates the same mask
    def f(q, k, v):
        out = torch_npu_sim.npu_fusion_attention(q, k, v, 4, "BSND", scale=0.25, keep_prob=0.8)[0]
        return (out * out).sum()

    base = [torch.randn(2, 8, 4, 16) for _ in range(3)]
    results = []
    for fn in (f, torch.compile(f, fullgraph=True)):
        q, k, v = (t.npu().requires_grad_() for t in base)
        torch.npu.manual_seed(7)
        loss = fn(q, k, v)
        loss.backward()
        results.append([loss.detach().cpu()] + [t.grad.cpu() for t in (q, k, v)])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_integer_ops_and_indexing():
    fn = torch.compile(lambda w, i, a, b: (F.embedding(i, w) * 2, a // b, torch.cumsum(a, 0)))
    w, i = torch.randn(10, 4), torch.tensor([1, 3, 9, 0])
    a, b = torch.randint(-50, 50, (16,)), torch.randint(1, 7, (16,))
    got = fn(w.npu(), i.npu(), a.npu(), b.npu())
    for g, e in zip(got, (F.embedding(i, w) * 2, a // b, torch.cumsum(a, 0))):
        torch.testing.assert_close(g.cpu(), e)


def test_failed_generated_kernel_is_a_device_error():
    fn = torch.compile(lambda a, b: a // b + 1)
    a, b = torch.arange(8, device="npu"), torch.ones(8, dtype=torch.long, device="npu")
    fn(a, b)
    b[3] = 0  # integer division by zero: the generated kernel throws on its AI core
    out = fn(a, b)
    try:
        with pytest.raises(RuntimeError, match=r"cpp_fused.*(ZeroDivisionError|division by zero)"):
            out.cpu()  # nothing computed by the failed kernel is read back
        with pytest.raises(RuntimeError, match="cpp_fused"):
            torch.npu.synchronize()
    finally:
        torch.npu.restart_device()
    torch.testing.assert_close(fn(a, b + (b == 0)).cpu(), torch.arange(8) + 1)


def test_cache_hit_reloads_npu_kernels():
    from torch._dynamo.utils import counters

    def fn(x):
        return torch.tanh(x) * 3 - 1

    x = torch.randn(257, device="npu")
    torch.compile(fn)(x)
    torch._dynamo.reset()
    counters.clear()
    with torch_npu_sim.record_launches() as rec:
        result = torch.compile(fn)(x)
        torch.npu.synchronize()
    assert counters["inductor"]["fxgraph_cache_hit"] == 1
    assert len(generated(rec.records)) == 1
    torch.testing.assert_close(result.cpu(), torch.tanh(x.cpu()) * 3 - 1)


def test_uncompilable_graph_runs_eagerly_with_a_log_line(caplog):
    x = torch.randn(6, device="npu")
    with torch._inductor.config.patch(cpp_wrapper=True), caplog.at_level(logging.WARNING):
        result = torch.compile(lambda x: x.cos() + 1, backend="npu")(x)
    torch.testing.assert_close(result.cpu(), x.cpu().cos() + 1)
    assert any("running it eagerly" in r.getMessage() and "cpp_wrapper" in r.getMessage() for r in caplog.records)
    torch._dynamo.reset()
    with torch._inductor.config.patch(cpp_wrapper=True), pytest.raises(Exception, match="cpp_wrapper"):
        torch.compile(lambda x: x.cos() + 1)(x)  # the default backend reports it


def test_cpu_graphs_still_compile_for_cpu():
    with torch_npu_sim.record_launches() as rec:
        result = torch.compile(lambda x: (x * 2).exp())(torch.ones(5))
    assert result.device.type == "cpu" and not generated(rec.records)
    torch.testing.assert_close(result, torch.full((5,), 2.0).exp())


# --- models: compiled equals eager, forward and backward ---------------------------------------------------

@pytest.mark.parametrize("kind,factory,tol", [("mlp", MLP, 1e-5), ("cnn", CNN, 1e-4), ("gpt", GPTMini, 1e-4)])
def test_models_compiled_equal_eager(kind, factory, tol):
    torch.manual_seed(0)
    model = factory().npu()
    x, y = (t.npu() for t in data(kind))
    compiled = torch.compile(model)
    grads = []
    for m in (model, compiled):
        model.zero_grad(set_to_none=True)
        loss = loss_fn(kind, m, x, y)
        loss.backward()
        grads.append((loss.detach().cpu(), [p.grad.cpu() for p in model.parameters()]))
    (l_eager, g_eager), (l_comp, g_comp) = grads
    torch.testing.assert_close(l_comp, l_eager, atol=tol, rtol=tol)
    for a, b in zip(g_comp, g_eager):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def test_compiled_optimizer_step_reads_host_step_counts():
    # AdamW keeps its step counts in 0-dim CPU tensors; Inductor passes them to the npu kernel by pointer: the
    # launch reads them as they are at the call, as an eager op does
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = MLP().npu()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        step = torch.compile(opt.step) if compiled else opt.step
        x, y = (t.npu() for t in data("mlp"))
        for _ in range(3):
            opt.zero_grad()
            loss_fn("mlp", model, x, y).backward()
            step()
        assert opt.state[model.net[0].weight]["step"].device.type == "cpu"
        results.append([p.detach().cpu() for p in model.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_autocast_bf16_training_compiled_follows_eager():
    losses = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = MLP().npu()
        fwd = torch.compile(model) if compiled else model
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = (t.npu() for t in data("mlp"))
        run = []
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast("npu", dtype=torch.bfloat16):
                out = fwd(x)
            loss = F.cross_entropy(out.float(), y)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    # bf16 rounds at different points when fused: the losses agree to bf16's precision
    torch.testing.assert_close(torch.tensor(losses[1]), torch.tensor(losses[0]), atol=2e-2, rtol=1e-2)


def test_random_ops_compile_with_their_distributions():
    x = torch.full((20000,), 0.3, device="npu")
    fns = {"bernoulli": (lambda x: torch.bernoulli(x), 0.3, 0.02),
           "dropout": (lambda x: F.dropout(x, 0.5), 0.3, 0.02),
           "randn": (lambda x: torch.randn(20000, device="npu") + x, 0.3, 0.03),
           "rand_like": (lambda x: torch.rand_like(x), 0.5, 0.01)}
    for name, (fn, mean, tol) in fns.items():
        torch._dynamo.reset()
        a, b = torch.compile(fn)(x), torch.compile(fn)(x)
        assert a.device.type == "npu" and not torch.equal(a, b), name  # fresh draws per call
        assert abs(a.float().mean().item() - mean) < tol, name
    kept = torch.compile(lambda x: F.dropout(x, 0.5))(x).cpu()
    scaled = torch.tensor(0.3) / 0.5  # dropped, or scaled by 1 / (1 - p)
    assert ((kept == 0) | torch.isclose(kept, scaled)).all()


# --- the launcher of generated kernels, directly ----------------------------------------------------------

_SCALE_SRC = '''
#include <cstdint>
extern "C" void kernel(const float* in_ptr0, const float* in_ptr1, float* out_ptr0, const int64_t ks0)
{
    for (int64_t i = 0; i < ks0; ++i) out_ptr0[i] = in_ptr0[i] * in_ptr1[0];
}
'''


def _scale_kernel():
    from torch_npu_sim.compiler.kernels import NpuCppKernel
    return NpuCppKernel("cpp_test_scale", ["const float*", "const float*", "float*", "const int64_t"], _SCALE_SRC)


def test_launcher_reads_a_host_scalar_as_it_is_at_the_call():
    k = _scale_kernel()
    assert k.kinds == "rrwi"
    x, out = torch.arange(6.0, device="npu"), torch.empty(6, device="npu")
    factor = torch.tensor(3.0)  # a host scalar, as Inductor passes an optimizer's step count
    busy = torch.randn(1024, 1024, device="npu")
    torch.npu.synchronize()
    with torch_npu_sim.record_launches() as rec:
        for _ in range(4):
            busy = busy @ busy  # keeps the stream busy: the kernel below runs well after its call returns
        k(x, factor, out, 6)
        factor.fill_(100.0)  # changed on the host after the call, before the kernel runs
        changed_ns = time.time_ns()
        torch.npu.synchronize()
    (launch,) = [r for r in rec.records if r["kernel"] == "cpp_test_scale"]
    assert launch["start_ns"] > changed_ns  # the kernel did run after the change
    torch.testing.assert_close(out.cpu(), torch.arange(6.0) * 3)


def test_launcher_refuses_bad_arguments_before_launching():
    k = _scale_kernel()
    x, out = torch.arange(6.0, device="npu"), torch.empty(6, device="npu")
    factor = torch.tensor([2.0], device="npu")
    with torch_npu_sim.record_launches() as rec:
        with pytest.raises(RuntimeError, match="cpp_test_scale' takes 4 arguments, got 3"):
            k(x, factor, out)
        with pytest.raises(RuntimeError, match="argument 0 must be a tensor"):
            k(5, factor, out, 6)
        with pytest.raises(RuntimeError, match="argument 2 is a CPU tensor the kernel writes"):
            k(x, factor, torch.empty(6), 6)
        with pytest.raises(RuntimeError, match=r"argument 2 is on npu:1, the others on npu:0"):
            k(x, factor, torch.empty(6, device="npu:1"), 6)
        torch.npu.synchronize()
    assert not rec.records and torch.npu._device_error() is None  # nothing was queued
    k(x, factor, out, 6)
    torch.testing.assert_close(out.cpu(), torch.arange(6.0) * 2)


def test_kernel_without_a_kernel_definition_is_refused():
    from torch_npu_sim.compiler.kernels import NpuCppKernel
    with pytest.raises(RuntimeError, match="no 'extern \"C\" ... kernel"):
        NpuCppKernel("cpp_bad", ["float*"], "void other(float* p) {}")
    with pytest.raises(RuntimeError, match="2 argument types for 1 parameters"):
        NpuCppKernel("cpp_bad", ["float*", "float*"], 'extern "C" void kernel(float* out_ptr0) {}')
