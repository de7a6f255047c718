"""HF transformers + accelerate on npu, found the way they find Ascend (`import torch_npu`): a tiny random
Llama trains with Trainer on npu by default, in fp32, bf16 and fp16, and `accelerate launch` with two
processes runs over hccl; losses match the CPU runs (nothing is downloaded)."""
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT
from dist_launch import free_port

SCRIPT = os.path.join(ROOT, "tests", "python", "dist_scripts", "hf_trainer_train.py")


def _tail(text, limit=6000):
    """The end of a run's output without tqdm's progress lines, so that a failure shows its cause."""
    return "\n".join(ln for ln in text.splitlines() if "it/s]" not in ln and "%|" not in ln and ln.strip())[-limit:]


def _run(cmd, tmp_path, timeout=180):
    env = dict(os.environ, PYTHONPATH=ROOT, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               NPU_SIM_CORE_THREADS="1", TOKENIZERS_PARALLELISM="false")
    # A session of its own: on a timeout the launcher's workers are killed with it, never left behind.
    p = subprocess.Popen(cmd, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{cmd[0]} timed out after {timeout} s:\n{_tail(out + err)}")
    assert p.returncode == 0, _tail(out + err)
    lines = [ln[ln.index('{"device'):] for ln in (out + err).splitlines() if '{"device' in ln]
    assert lines, out[-2000:]
    return [json.loads(ln) for ln in lines]


def _single(mode, tmp_path):
    return _run([sys.executable, SCRIPT, mode, str(tmp_path / mode)], tmp_path)[0]


def test_torch_npu_is_detected():
    r = subprocess.run([sys.executable, "-c", "import torch_npu\n"
                        "from transformers.utils import is_torch_npu_available\n"
                        "from accelerate.utils import is_npu_available\n"
                        "print(is_torch_npu_available(), is_npu_available())"],
                       env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "True"]


@pytest.mark.parametrize("mode,ref,tol", [("npu", "cpu", 2e-5), ("npu_bf16", "cpu_bf16", 2e-3),
                                          ("npu_fp16", "cpu", 2e-3)])
def test_trainer_trains_on_npu_by_default_and_matches_cpu(mode, ref, tol, tmp_path):
    got = _single(mode, tmp_path)
    want = _single(ref, tmp_path)
    assert got["device"] == "npu:0" and got["param_device"] == "npu:0"
    assert want["device"] == "cpu"
    assert len(got["losses"]) == 6
    assert got["losses"] == pytest.approx(want["losses"], rel=tol, abs=tol)


def test_accelerate_launch_two_processes_uses_hccl_and_matches_gloo(tmp_path):
    accelerate = os.path.join(os.path.dirname(sys.executable), "accelerate")
    npu = _run([accelerate, "launch", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
                "--dynamo_backend", "no", "--main_process_port", str(free_port()), SCRIPT, "npu", str(tmp_path / "n")], tmp_path)
    cpu = _run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
                SCRIPT, "cpu", str(tmp_path / "c")], tmp_path)
    assert sorted(o["device"] for o in npu) == ["npu:0", "npu:1"]
    assert {(o["backend"], o["world"], o["distributed_type"]) for o in npu} == {
        ("hccl", 2, "DistributedType.MULTI_NPU")}
    assert {o["backend"] for o in cpu} == {"gloo"}
    for o in npu:
        assert o["losses"] == pytest.approx(cpu[0]["losses"], rel=2e-5, abs=2e-5)
