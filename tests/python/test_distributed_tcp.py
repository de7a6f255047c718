"""The hccl collectives over the TCP transport (forced with NPU_SIM_HCCL_TRANSPORT=tcp on 127.0.0.1),
the 2,000-iteration bit-exact all_reduce soak, and DDP on the demo model against single-process training."""
import pytest

from dist_launch import assert_ok, launch, shm_leftovers


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_tcp(world):
    res = launch("collectives_worker.py", world, env={"NPU_SIM_HCCL_TRANSPORT": "tcp"}, timeout=150)
    assert_ok(res)
    assert "0 failures" in res[0][1]


def test_soak_2000_allreduces_bit_exact():
    res = launch("soak_worker.py", 2, args=["2000"], timeout=150)
    assert_ok(res)
    assert "2000 checks, 0 failures" in res[0][1]
    assert not shm_leftovers()


def test_ddp_matches_single_process():
    res = launch("ddp_worker.py", 2, args=["plain", "no_sync", "unused", "fp16"], timeout=150)
    assert_ok(res)
    assert res[0][1].count("params_equal=True") == 4
