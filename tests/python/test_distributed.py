"""hccl collectives at 2 and 4 ranks (shm transport, every algorithm) against locally computed values,
plus the launch variants: torchrun, torch.multiprocessing.spawn, device_id=, mixed cpu:gloo,npu:hccl."""
import os
import re
import subprocess
import sys

import pytest

from dist_launch import ROOT, SCRIPTS, assert_ok, free_port, launch, shm_leftovers


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_shm(world):
    # default: every rank maps its peers' HBM arenas; messages of 128 KiB or more are read by the receiver
    # straight out of the sender's device memory, and the large collectives run as fullmesh (ranks read
    # and write each other's buffers in place; broadcasts and 2-rank all_gathers of 8 MiB and more too, see
    # collectives_worker)
    res = launch("collectives_worker.py", world, env={"NPU_SIM_HCCL_TRANSPORT": "shm"}, timeout=150)
    assert_ok(res)
    assert "0 failures" in res[0][1]
    assert "transport=shm+peer-read\n" in res[0][1]
    assert not shm_leftovers()


@pytest.mark.parametrize("env", [{"NPU_SIM_HCCL_PEER_READ": "0"}, {"NPU_SIM_SHARED_HBM": "0"}])
def test_collectives_shm_ring_only(env):
    # peer reads turned off, or device memory not shareable: every byte goes through the shm rings
    res = launch("collectives_worker.py", 2, env=env, timeout=150)
    assert_ok(res)
    assert "0 failures" in res[0][1]
    assert "transport=shm\n" in res[0][1]
    assert not shm_leftovers()


@pytest.mark.parametrize("blocking", ["0", "1"])
def test_p2p_wait_is_stream_ordered(blocking):
    res = launch("p2p_wait_worker.py", 2, env={"TORCH_HCCL_BLOCKING_WAIT": blocking}, timeout=90)
    assert_ok(res)
    m = re.search(r"WAIT ([\d.]+)", res[0][1])
    assert m, res[0][1][-3000:]
    waited = float(m.group(1))
    if blocking == "1":
        assert waited >= 1.0, waited  # blocks until rank 1's late send has arrived
    else:
        assert waited < 0.5, waited  # only orders the stream: returns before the data is there
    assert "0 failures" in res[0][1] and "0 failures" in res[1][1]


@pytest.mark.parametrize("algo", ["ring", "level0:NA;level1:H-D_R", "fullmesh"])
def test_allreduce_algorithms(algo):
    res = launch("soak_worker.py", 4, args=["60"], env={"HCCL_ALGO": algo}, timeout=90)
    assert_ok(res)


def test_torchrun_and_mixed_backend():
    env = dict(os.environ, PYTHONPATH=ROOT, NPU_SIM_CORE_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}",
           os.path.join(SCRIPTS, "collectives_worker.py"), "mixed"]
    p = subprocess.run(cmd, env=env, cwd=SCRIPTS, capture_output=True, text=True, timeout=150)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert p.stdout.count("0 failures") == 2


def test_device_id_init():
    assert_ok(launch("collectives_worker.py", 2, args=["device_id"], timeout=120))


def test_mp_spawn():
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "spawn_worker.py"), str(free_port())],
                       env=dict(os.environ, PYTHONPATH=ROOT, NPU_SIM_CORE_THREADS="1"), cwd=SCRIPTS,
                       capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "spawn ok" in p.stdout
