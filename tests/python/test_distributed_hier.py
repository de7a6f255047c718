"""Multi-host layouts simulated on one machine (NPU_SIM_HOST_ID per rank): 2 hosts x 2 ranks use shared
memory inside a host and TCP between hosts, every collective checked against reference values; and a
rank whose peer never creates its communicator fails within HCCL_CONNECT_TIMEOUT + 5 s instead of hanging."""
import re

import pytest

from dist_launch import assert_ok, launch, shm_leftovers


def test_two_hosts_two_ranks_each():
    res = launch("collectives_worker.py", 4, timeout=200, rank_env=lambda r: {"NPU_SIM_HOST_ID": f"host{r // 2}"})
    assert_ok(res)
    for r, (_, out) in enumerate(res):
        assert f"rank {r}: transport=shm+tcp" in out, out[-2000:]
        assert re.search(rf"rank {r}: \d+ checks, 0 failures", out), out[-2000:]
    assert not shm_leftovers()


def test_uneven_hosts_single_rank_host():
    # host0 has ranks 0-2, host1 only rank 3: a rank alone on its host reaches everyone over TCP.
    res = launch("collectives_worker.py", 4, timeout=200,
                 rank_env=lambda r: {"NPU_SIM_HOST_ID": "host1" if r == 3 else "host0"})
    assert_ok(res)
    assert "0 failures" in res[0][1] and "0 failures" in res[3][1]
    assert not shm_leftovers()


@pytest.mark.parametrize("transport", ["auto", "tcp"])
def test_connect_timeout_bounds_rendezvous(transport):
    timeout = 3
    res = launch("connect_timeout_worker.py", 2, timeout=60,
                 env={"HCCL_CONNECT_TIMEOUT": str(timeout), "NPU_SIM_HCCL_TRANSPORT": transport})
    m = re.search(r"RESULT (\S+) ([\d.]+)(?: :: (.*))?", res[0][1])
    assert m, res[0][1][-3000:]
    kind, secs, msg = m.group(1), float(m.group(2)), m.group(3) or ""
    assert kind == "DistBackendError", res[0][1][-3000:]
    assert "HCCL_CONNECT_TIMEOUT" in msg and "did not join" in msg, msg
    assert secs <= timeout + 5, secs
    assert not shm_leftovers()
