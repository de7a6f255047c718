"""`npu-smi info`: the simulated NPUs, their HBM use and AI Core utilisation and the processes using them,
read from the registry each process keeps; a killed process's entry disappears."""
import os
import re
import signal
import struct
import subprocess
import sys

from conftest import ROOT

NPU_SMI = os.path.join(os.path.dirname(sys.executable), "npu-smi")

BUSY_CHILD = r"""
import os, sys, torch, torch_npu_sim
x = torch.randn(1024, 1024, device="npu")          # npu:0 of this process = physical NPU 5
x @ x
torch.npu.synchronize()
print("ready", flush=True)
stop = os.environ["STOP_FILE"]
while not os.path.exists(stop):
    for _ in range(4):
        x = (x @ x).clamp_(-1, 1)
    torch.npu.synchronize()
"""


def _smi(env, *args):
    return subprocess.run([NPU_SMI, *args], env=env, capture_output=True, text=True, timeout=60)


def _npu_rows(text, npu):
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if re.match(rf"\| {npu}\s+910B-sim", ln))
    return lines[i], lines[i + 1]


def test_npu_smi_info_shows_processes_memory_and_utilisation(tmp_path):
    env = dict(os.environ, NPU_SIM_SMI_DIR=str(tmp_path), PYTHONPATH=ROOT, STOP_FILE=str(tmp_path / "stop"),
               ASCEND_RT_VISIBLE_DEVICES="5,6")
    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        r = _smi(env, "info")
        assert r.returncode == 0, r.stderr
        _, usage = _npu_rows(r.stdout, 5)
        util, hbm_used = re.search(r"\| (\d+)\s+0\s+/ 0\s+(\d+) / 16384", usage).groups()
        assert int(util) > 0 and int(hbm_used) >= 4  # the busy loop; the 4 MiB tensor in its segment
        assert re.search(rf"\| 5\s+0\s+\| {child.pid}\s+\| python\S*\s+\| {hbm_used}\s", r.stdout), r.stdout
        _, idle = _npu_rows(r.stdout, 6)
        assert re.search(r"\| 0\s+0\s+/ 0\s+0 / 16384", idle)
        assert "No running processes found in NPU 6" in r.stdout
        assert f"npusim-smi-{child.pid}" in os.listdir(tmp_path)
    finally:
        child.send_signal(signal.SIGKILL)  # no clean exit: its registry file stays behind
        child.wait(timeout=60)
        child.stdout.close()
    r = _smi(env, "info")
    assert r.returncode == 0, r.stderr
    assert str(child.pid) not in r.stdout
    assert "No running processes found in NPU 5" in r.stdout
    assert not any(n.startswith("npusim-smi-") for n in os.listdir(tmp_path))  # the stale entry was removed


def test_a_clean_exit_removes_the_entry(tmp_path):
    env = dict(os.environ, NPU_SIM_SMI_DIR=str(tmp_path), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", "import torch, torch_npu_sim; torch.ones(4, device='npu').sum().item()"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == []


def _registry_file(path, pid, start_ticks, magic=b"NPUSMI\0\0"):
    header = struct.pack("<8sIiQii32s64x", magic, 1, pid, start_ticks, 1, 0, b"python")
    device = struct.pack("<iiQQQQq16x", 0, 0, 16 << 30, 0, 0, 0, 0)
    path.write_bytes(header + device)


def test_a_new_process_removes_the_entries_of_killed_ones(tmp_path):
    # A process killed before its clean exit leaves its file; the next process to use a device removes it
    # (not only `npu-smi info`), and keeps a live process's file and one still being written (no magic).
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live_ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
    _registry_file(tmp_path / f"npusim-smi-{dead.pid}", dead.pid, 4242)
    _registry_file(tmp_path / f"npusim-smi-{os.getpid()}", os.getpid(), live_ticks + 1)  # a reused pid
    _registry_file(tmp_path / f"npusim-smi-{os.getppid()}", os.getppid(), 1, magic=b"\0" * 8)
    _registry_file(tmp_path / "npusim-smi-1", 1, int(open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19]))
    env = dict(os.environ, NPU_SIM_SMI_DIR=str(tmp_path), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", "import torch, torch_npu_sim; torch.ones(4, device='npu').sum().item()"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted([f"npusim-smi-{os.getppid()}", "npusim-smi-1"])


def test_usage():
    r = _smi(dict(os.environ))
    assert r.returncode == 2 and "usage: npu-smi info" in r.stderr
