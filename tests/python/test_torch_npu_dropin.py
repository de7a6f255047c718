"""`import torch_npu` on the simulator: the package, torch.npu additions (compile mode, utilization,
capability), ACL formats, the not-implemented contract, torch_npu.profiler, the install guard, and an
unmodified CUDA-style script under transfer_to_npu (single process and DDP over "nccl")."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import torch_npu
import torch_npu_sim
from conftest import ROOT, run_python
from dist_launch import launch


def test_import_torch_npu_exposes_torch_npu_and_the_fused_ops():
    assert torch_npu.npu is torch.npu
    import torch_npu.npu.amp as amp  # submodule imports resolve to torch.npu's
    from torch_npu.npu import amp as amp2
    assert amp is amp2 is torch.npu.amp
    assert torch_npu.npu_rms_norm is torch_npu_sim.npu_rms_norm is torch.ops.npu.npu_rms_norm
    x = torch.randn(4, 8, device="npu")
    y, rstd = torch_npu.npu_rms_norm(x, torch.ones(8, device="npu"))
    ref = x.cpu() * torch.rsqrt(x.cpu().pow(2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(y.cpu(), ref)
    assert rstd.shape == (4, 1)


def test_a_fresh_interpreter_can_import_torch_npu_first():
    r = run_python("""
        import torch_npu, torch
        x = torch.ones(3).npu()
        print(torch.npu.device_count(), x.device, torch_npu.get_npu_format(x))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["8", "npu:0", "2"]


def test_set_compile_mode():
    prev = torch.npu.is_jit_compile_false()
    try:
        torch.npu.set_compile_mode(jit_compile=False)
        assert torch.npu.is_jit_compile_false()
        torch_npu.npu.set_compile_mode(jit_compile=True)
        assert not torch.npu.is_jit_compile_false()
        with pytest.raises(TypeError, match="set_compile_mode: expected argument 'jit_compile' to be a bool"):
            torch.npu.set_compile_mode(jit_compile="no")
    finally:
        torch.npu.set_compile_mode(jit_compile=not prev)


def test_utilization_measures_kernel_time_over_the_window():
    dev = 3
    a = torch.randn(768, 768, device=f"npu:{dev}")
    torch.npu.utilization(dev)  # starts a window
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.4:  # the device runs matmuls back to back
        for _ in range(4):
            a = (a @ a).clamp_(-1, 1)
        torch.npu.synchronize(dev)
    busy = torch.npu.utilization(dev)
    time.sleep(0.2)  # idle window
    idle = torch.npu.utilization(dev)
    assert 50 <= busy <= 100, busy
    assert idle == 0
    assert torch.npu.utilization(torch.device("npu", 5)) == 0  # a device never used
    with pytest.raises(RuntimeError, match="utilization: invalid device ordinal"):
        torch.npu.utilization(99)


def test_device_capability_lists_the_dtypes_the_device_holds():
    caps = torch.accelerator.get_device_capability("npu:0")["supported_dtypes"]
    expected = {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128}
    assert caps == expected
    for dt in caps:  # each one allocates and converts exactly
        src = (torch.arange(6) % 2).to(dt)
        torch.testing.assert_close(src.npu().to(torch.float64 if not dt.is_complex else dt).cpu(),
                                   src.to(torch.float64 if not dt.is_complex else dt))
    with pytest.raises(TypeError, match="Float8_e4m3fn is not supported on the npu device"):
        torch.zeros(2, dtype=torch.float8_e4m3fn).npu().float()  # held as bytes, not converted
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.accelerator.get_device_capability("npu:8")


class TestFormats:
    def test_base_formats(self):
        assert torch_npu.get_npu_format(torch.zeros(2, 3, 4, 5, device="npu")) == torch_npu.Format.NCHW == 0
        assert torch_npu.get_npu_format(torch.zeros(1, 2, 3, 4, 5, device="npu")) == 30
        assert torch_npu.get_npu_format(torch.zeros(7, device="npu")) == torch_npu.Format.ND == 2

    def test_cast_keeps_values_new_storage_and_views_share_it(self):
        w = torch.randn(8, 4, device="npu")
        nz = torch_npu.npu_format_cast(w, 29)
        assert torch_npu.get_npu_format(nz) == 29 and torch_npu.get_npu_format(w) == 2
        assert nz.data_ptr() != w.data_ptr()
        torch.testing.assert_close(nz.cpu(), w.cpu(), rtol=0, atol=0)
        assert torch_npu.get_npu_format(nz.t()) == 29  # a view shares its storage's format
        assert torch_npu.npu_format_cast(nz, 29) is nz  # already in that format: itself, as torch_npu
        assert torch_npu.get_npu_format(torch_npu.npu_format_cast(w, nz)) == 29  # the tensor overload
        assert w.npu_format_cast(29).npu_format_cast(2).data_ptr() != w.data_ptr()
        assert torch_npu.get_npu_format(torch_npu.npu_format_cast_(w, 29)) == 29
        assert torch_npu.get_npu_format(w) == 29

    def test_cast_is_differentiable(self):
        x = torch.randn(2, 3, 4, 4, device="npu", requires_grad=True)
        y = torch_npu.npu_format_cast(x, torch_npu.Format.NC1HWC0)
        (y * 3).sum().backward()
        torch.testing.assert_close(x.grad.cpu(), torch.full((2, 3, 4, 4), 3.0))

    def test_bad_input_names_the_argument(self):
        x = torch.randn(4, 4, device="npu")
        with pytest.raises(ValueError, match="npu_format_cast: acl_format 5 is not an ACL format code"):
            torch_npu.npu_format_cast(x, 5)
        with pytest.raises(ValueError, match=r"format NC1HWC0 describes 4-D tensors, got a tensor with 2"):
            torch_npu.npu_format_cast(x, 3)
        with pytest.raises(TypeError, match="expected argument 'acl_format' to be an int"):
            torch_npu.npu_format_cast(x, "NZ")
        with pytest.raises(RuntimeError, match="get_npu_format: expected argument 'self' on an npu device"):
            torch_npu.get_npu_format(torch.zeros(2))


def test_names_of_torch_npu_not_implemented_raise_naming_them():
    from torch_npu import _api
    missing = _api.coverage()["missing"]
    assert missing, "the list of torch_npu's API has names the simulator lacks"
    name = missing[0]
    with pytest.raises(NotImplementedError, match=f"torch_npu.{name} is part of torch_npu's API but is not "
                                                  "implemented by torch_npu_sim"):
        getattr(torch_npu, name)
    assert not hasattr(torch_npu, name)
    with pytest.raises(AttributeError, match="module 'torch_npu' has no attribute 'no_such_thing'") as e:
        torch_npu.no_such_thing
    assert not isinstance(e.value, NotImplementedError)
    implemented = _api.coverage()["implemented"]
    for name in ("npu_fusion_attention", "npu_rms_norm", "npu_format_cast", "get_npu_format", "npu"):
        assert name in implemented


def test_torch_npu_profiler_takes_torch_npu_arguments(tmp_path):
    import torch_npu.profiler as tp
    cfg = tp._ExperimentalConfig(profiler_level=tp.ProfilerLevel.Level1, aic_metrics=tp.AiCMetrics.PipeUtilization,
                                 export_type=tp.ExportType.Text)
    x = torch.randn(64, 64, device="npu")
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.NPU],
                    schedule=tp.schedule(wait=0, warmup=1, active=1, repeat=1),
                    on_trace_ready=tp.tensorboard_trace_handler(str(tmp_path), worker_name="w0"),
                    experimental_config=cfg) as prof:
        for _ in range(2):
            (x @ x).sum().item()
            prof.step()
    traces = list(tmp_path.glob("w0*.pt.trace.json"))
    assert len(traces) == 1
    names = {e.get("name") for e in json.loads(traces[0].read_text())["traceEvents"]}
    assert "aten::mm" in names
    with pytest.raises(ValueError, match="profiler_level 'Level9' is not one of"):
        tp._ExperimentalConfig(profiler_level="Level9")
    with pytest.raises(TypeError, match="experimental_config must be a torch_npu.profiler._ExperimentalConfig"):
        tp.profile(experimental_config={"level": 1})


def test_install_refuses_to_shadow_a_real_torch_npu(tmp_path):
    guard = os.path.join(ROOT, "tools", "install_guard.py")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    ok = subprocess.run([sys.executable, guard], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    dist = tmp_path / "torch_npu-2.1.0.post3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.1.0.post3\n")
    bad = subprocess.run([sys.executable, guard], env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "refusing to install: a real torch_npu is installed (distribution torch_npu 2.1.0.post3" in bad.stderr


def _run_script(transfer, world=1):
    env = {"TRANSFER": "1" if transfer else "0"}
    if world == 1:
        with open(os.path.join(ROOT, "tests", "python", "dist_scripts", "cuda_style_train.py")) as f:
            r = run_python(f.read(), env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        return [json.loads(r.stdout.strip().splitlines()[-1])]
    results = launch("cuda_style_train.py", world, env=env, timeout=180)
    outs = []
    for rc, out in results:
        assert rc == 0, out[-3000:]
        outs.append(json.loads([line for line in out.splitlines() if line.startswith("{")][-1]))
    return sorted(outs, key=lambda o: o["rank"])


@pytest.mark.parametrize("world", [1, 2])
def test_transfer_to_npu_runs_a_cuda_script_unmodified_and_matches_cpu(world):
    npu = _run_script(True, world)
    cpu = _run_script(False, world)
    for a, b in zip(npu, cpu):
        assert a["rank"] == b["rank"]
        assert a["losses"] == pytest.approx(b["losses"], rel=1e-5, abs=1e-6)
        assert a["checksum"] == pytest.approx(b["checksum"], rel=1e-5, abs=1e-5)
    if world == 2:  # DDP kept the replicas equal
        assert npu[0]["checksum"] == pytest.approx(npu[1]["checksum"], rel=0, abs=0)


def test_the_coverage_table_in_docs_is_current():
    from torch_npu import _api
    with open(os.path.join(ROOT, "docs", "torch_npu_coverage.md")) as f:
        assert f.read() == _api.coverage_markdown(), "regenerate docs/torch_npu_coverage.md (command in its header)"
