"""hccl reliability: a SIGKILLed rank mid-all_reduce turns into DistBackendError on the survivor within
HCCL_EXEC_TIMEOUT + 5 s (blocking and non-blocking wait, shm and tcp), mismatched collectives give a clear
error, and nothing is left in /dev/shm afterwards."""
import re

import pytest

from dist_launch import launch, shm_leftovers

EXEC_TIMEOUT = 5


def result(out):
    m = re.search(r"RESULT (\S+) ([\d.]+)(?: :: (.*))?", out)
    assert m, out[-3000:]
    return m.group(1), float(m.group(2)), m.group(3) or ""


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_sigkill_mid_allreduce_blocking_wait(transport):
    res = launch("fault_worker.py", 2, args=["kill"], timeout=60,
                 env={"TORCH_HCCL_BLOCKING_WAIT": "1", "HCCL_EXEC_TIMEOUT": str(EXEC_TIMEOUT),
                      "NPU_SIM_HCCL_TRANSPORT": transport})
    assert res[1][0] == -9
    kind, secs, msg = result(res[0][1])
    assert kind == "DistBackendError", msg
    assert secs <= EXEC_TIMEOUT + 5
    assert "rank 1" in msg or "timed out" in msg
    assert not shm_leftovers()


def test_sigkill_nonblocking_wait_fails_next_collective():
    res = launch("fault_worker.py", 2, args=["nonblock"], timeout=60, env={"HCCL_EXEC_TIMEOUT": str(EXEC_TIMEOUT)})
    kind, secs, msg = result(res[0][1])
    assert kind == "DistBackendError", msg
    assert "unusable after an earlier failure" in msg
    assert not shm_leftovers()


def test_mismatched_sizes_clear_error():
    res = launch("fault_worker.py", 2, args=["desync"], timeout=60,
                 env={"TORCH_HCCL_BLOCKING_WAIT": "1", "TORCH_HCCL_DESYNC_DEBUG": "1"})
    for rc, out in res:
        kind, secs, msg = result(out)
        assert kind == "DistBackendError" and "mismatch" in msg and "numel=10" in msg and "numel=12" in msg, msg
    assert not shm_leftovers()
