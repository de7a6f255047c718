"""Registration of "npu", the torch.npu device module, generated tensor/module methods, lazy init, fork."""
import multiprocessing as mp

import pytest
import torch
import torch.nn as nn

import torch_npu_sim


def test_backend_is_renamed_and_module_registered():
    assert torch._C._get_privateuse1_backend_name() == "npu"
    assert torch.npu is torch_npu_sim.npu
    assert torch.npu.is_available()
    assert torch.npu.device_count() == 8
    assert torch.device("npu:3").type == "npu" and torch.device("npu:3").index == 3


def test_generated_tensor_and_module_methods():
    x = torch.arange(4.0)
    y = x.npu()
    assert y.is_npu and not x.is_npu
    assert y.device == torch.device("npu", 0)
    assert torch.equal(y.cpu(), x)
    z = x.npu(2)
    assert z.device == torch.device("npu:2")
    m = nn.Linear(3, 2).npu()
    assert all(p.is_npu for p in m.parameters())
    assert torch.UntypedStorage(4, device="npu").is_npu


def test_device_properties():
    props = torch.npu.get_device_properties(0)
    assert props.name == "Ascend910B-sim"
    assert props.total_memory == 16 * 2**30
    assert props.ai_core_count == 24
    assert props.ub_size == 192 * 1024
    assert torch.npu.get_device_name("npu:1") == "Ascend910B-sim"
    free, total = torch.npu.mem_get_info(0)
    assert total == props.total_memory and 0 < free <= total


def test_set_device_and_context_manager():
    assert torch.npu.current_device() == 0
    with torch.npu.device(3):
        assert torch.npu.current_device() == 3
        assert torch.empty(2, device="npu").device == torch.device("npu:3")
    assert torch.npu.current_device() == 0
    t = torch.empty(1, device="npu:5")
    with torch.npu.device_of(t):
        assert torch.npu.current_device() == 5
    torch.npu.set_device("npu:1")
    try:
        assert torch.npu.current_device() == 1
    finally:
        torch.npu.set_device(0)


def test_invalid_device_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"invalid device ordinal npu:9 \(8 NPU devices are visible"):
        torch.empty(1, device="npu:9")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.npu.set_device(12)


def test_accelerator_api():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "npu"
    assert torch.accelerator.device_count() == 8
    torch.accelerator.set_device_index(2)
    try:
        assert torch.accelerator.current_device_index() == 2
    finally:
        torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()


def test_device_count_and_visible_devices_from_env(fresh_python):
    code = """
        import torch, torch_npu_sim
        print(torch.npu.device_count(), torch.npu.get_device_properties(0).physical_id,
              torch.npu.get_device_properties(1).physical_id, torch.npu.get_device_properties(0).total_memory)
    """
    r = fresh_python(code, env={"NPU_SIM_DEVICE_COUNT": "4", "ASCEND_RT_VISIBLE_DEVICES": "3,1",
                                "NPU_SIM_HBM_GB": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "3", "1", str(2 * 2**30)]


def test_hooks_pointer_and_pinned_queries():
    x = torch.ones(8, device="npu:1")
    # getDeviceFromPtr: torch.from_blob-style lookups go through the hooks.
    assert torch._C._get_privateuse1_backend_name() == "npu"
    p = torch.ones(8).pin_memory()
    assert p.is_pinned()
    assert not torch.ones(8).is_pinned()
    assert x.untyped_storage().device == torch.device("npu:1")


def _child_uses_npu(queue):
    try:
        torch.empty(1, device="npu")
        queue.put("no error")
    except RuntimeError as e:
        queue.put(str(e))


def test_fork_after_init_gives_clear_error():
    torch.empty(1, device="npu")  # the parent has initialised the device
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_uses_npu, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert "Cannot re-initialize NPU in forked subprocess" in q.get(timeout=5)


def test_lazy_init_in_fresh_process(fresh_python):
    r = fresh_python("""
        import torch, torch_npu_sim
        assert not torch.npu.is_initialized()
        torch.ones(1, device="npu")
        assert torch.npu.is_initialized()
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_rng_state_api():
    torch.npu.manual_seed(123)
    assert torch.npu.initial_seed() == 123
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    torch.npu.manual_seed(7)
    torch.npu.set_rng_state(state)
    assert torch.npu.initial_seed() == 123
    g = torch.Generator(device="npu")
    g.manual_seed(5)
    assert g.device.type == "npu" and g.initial_seed() == 5
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.npu.set_rng_state(torch.zeros(3, dtype=torch.uint8))
