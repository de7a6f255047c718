"""Launch helper of the distributed tests: start `world` real rank processes of a script under
torchrun-style env vars with a hard timeout, collect their output, kill stragglers, check /dev/shm."""
import glob
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPTS = os.path.join(HERE, "dist_scripts")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_launched_pids = set()  # every rank process this test process started


def shm_leftovers():
    """hccl segments (/dev/shm/npusim-hccl-<creator pid>-<random>) left by ranks that launch() started:
    segments of other test workers or other runs on the machine are not this test's to answer for."""
    return [f for f in glob.glob("/dev/shm/npusim-hccl-*")
            if f.split("-")[2].isdigit() and int(f.split("-")[2]) in _launched_pids]


def launch(script, world, args=(), env=None, timeout=120, rank_env=None):
    """Returns [(returncode, output)] per rank; every process is gone when this returns.
    rank_env(r) -> dict: extra variables for rank r only (e.g. a simulated host id)."""
    port = free_port()
    procs = []
    for r in range(world):
        e = dict(os.environ)
        e.update({"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port), "NPU_SIM_CORE_THREADS": "1", "PYTHONPATH": ROOT,
                  "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})
        e.update(env or {})
        e.update(rank_env(r) if rank_env else {})
        procs.append(subprocess.Popen([sys.executable, os.path.join(SCRIPTS, script), *args], env=e, cwd=SCRIPTS,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        _launched_pids.add(procs[-1].pid)
    deadline = time.monotonic() + timeout
    results = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            out += f"\n<<killed after the {timeout} s hard timeout>>"
        results.append((p.returncode, out))
    return results


def assert_ok(results):
    bad = [(r, rc, out) for r, (rc, out) in enumerate(results) if rc != 0]
    assert not bad, "\n".join(f"--- rank {r} exit {rc}\n{out[-4000:]}" for r, rc, out in bad)
