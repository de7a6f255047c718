"""Shared helpers for the pytest suite: CPU PyTorch is the oracle; environment-variable behaviour is
tested in fresh subprocesses (the runtime reads its environment once per process)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_npu_sim  # registers "npu"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_flags() -> set:
    """The CPU's feature flags (/proc/cpuinfo): which matrix units oneDNN must serve on this machine."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


def run_python(code: str, env: dict = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter with extra environment variables; never hangs past timeout."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


# Files whose tests start processes of their own (ranks that time their peers out; each test takes its own port
# and checks that its own ranks left no hccl segment in /dev/shm): marked `processes`. scripts/test.sh runs the
# rest on every core (pytest-xdist), then these, also a worker per core, without the rest competing for the cores.
PROCESS_TEST_FILES = {"test_distributed.py", "test_distributed_faults.py", "test_distributed_hier.py",
                      "test_distributed_tcp.py", "test_ddp_amp.py", "test_ipc.py", "test_hf_trainer.py",
                      "test_torch_npu_dropin.py"}


def pytest_configure(config):
    config.addinivalue_line("markers", "processes: starts processes of its own; run as a stage of their own (scripts/test.sh)")


# Tests of minutes (the whole-OpInfo sweeps: 220 s, 53 s, 12 s on 2 cores): collected first, so that a worker
# starts them while the other takes the short ones, instead of one of them running alone at the end.
LONG_TESTS = {"test_every_float32_opinfo_and_sample"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in PROCESS_TEST_FILES:
            item.add_marker(pytest.mark.processes)
    items.sort(key=lambda item: getattr(item, "originalname", item.name) not in LONG_TESTS)  # stable: the rest keep their order


@pytest.fixture
def native_only():
    """Fails the test if any op it ran went through the CPU fallback."""
    torch_npu_sim.reset_fallback_ops()
    yield
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


@pytest.fixture
def fresh_python():
    return run_python


def acknowledge_device_error(device=None):
    """For tests that provoke an asynchronous device error on purpose: the error is sticky (every later
    synchronize and copy to the host raises it) until restart_device acknowledges it."""
    assert torch.npu._device_error(device) is not None, "expected a sticky device error"
    torch.npu.restart_device(device)


@pytest.fixture(autouse=True)
def _sync_after_test():
    yield
    left = {d: torch.npu._device_error(d) for d in range(torch.npu.device_count())}
    left = {d: e for d, e in left.items() if e is not None}
    for d in left:
        torch.npu.restart_device(d)  # so the next test starts clean
    assert not left, f"the test left sticky device errors (acknowledge them with restart_device): {left}"
    torch.npu.synchronize()
