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


def run_python(code: str, env: dict = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter with extra environment variables; never hangs past timeout."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def native_only():
    """Fails the test if any op it ran went through the CPU fallback."""
    torch_npu_sim.reset_fallback_ops()
    yield
    assert not torch_npu_sim.fallback_ops(), torch_npu_sim.fallback_ops()


@pytest.fixture
def fresh_python():
    return run_python


@pytest.fixture(autouse=True)
def _sync_after_test():
    yield
    torch.npu.synchronize()
