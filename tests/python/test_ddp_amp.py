"""examples/ddp_amp.py under torchrun with 2 ranks: DDP (hccl) + fp16 autocast + GradScaler matches one
process on the global batch, the injected inf step is skipped on every rank, and nothing falls back."""
import os
import subprocess
import sys

from dist_launch import ROOT, free_port, shm_leftovers


def test_ddp_autocast_gradscaler_two_ranks():
    env = dict(os.environ, PYTHONPATH=ROOT, NPU_SIM_CORE_THREADS="1", OMP_NUM_THREADS="1",
               TORCH_NPU_FALLBACK_CPU_DISABLE="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}",
           os.path.join(ROOT, "examples", "ddp_amp.py"), "--steps", "10", "--poison-step", "4"]
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "ddp_amp: OK" in p.stdout, out[-4000:]
    assert "inf step skipped and scale halved: True" in p.stdout
    assert not shm_leftovers()
