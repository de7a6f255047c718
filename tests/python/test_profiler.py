"""The profiler on npu: host times are real (non-negative, inside the profiled region) and npu ops carry a
device time: measured by timing events on their stream (the PrivateUse1 profiler stubs, legacy profiler),
or, under torch.profiler, from the Kineto activity profiler's kernels, linked to their ops, one trace
track per stream, with GM bytes, FLOPs and the modeled NPU time."""
import json
import time

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_npu_sim  # noqa: F401


def _work():
    a = torch.randn(512, 512, device="npu")
    b = torch.randn(512, 512, device="npu")
    torch.npu.synchronize()
    return a, b


def _region_us(t0, t1):
    return (t1 - t0) * 1e6


def test_legacy_profiler_with_use_device_records_host_and_device_times():
    a, b = _work()
    t0 = time.perf_counter()
    with torch.autograd.profiler.profile(use_device="npu") as prof:
        y = (a @ b).relu().sum()
        torch.npu.synchronize()
    wall_us = _region_us(t0, time.perf_counter())
    assert y.device.type == "npu"
    events = list(prof.function_events)
    names = {e.name for e in events}
    assert {"aten::mm", "aten::relu", "aten::sum"} <= names
    starts = [e.time_range.start for e in events]
    # Without the stubs every start is about -7e16 us; the host times must lie inside the region.
    assert min(starts) >= 0
    assert max(e.time_range.end for e in events) - min(starts) <= wall_us
    mm = next(e for e in events if e.name == "aten::mm")
    assert 0 < mm.self_device_time_total <= wall_us
    avg = {k.key: k for k in prof.key_averages()}
    assert avg["aten::mm"].self_device_time_total > 0
    assert "NPU" in prof.key_averages().table(row_limit=5)


def test_device_time_follows_the_stream_not_the_host_call():
    """The launch returns at once; the device time covers the kernel that ran later on the stream."""
    a, b = _work()
    big = torch.randn(1024, 1024, device="npu")
    torch.npu.synchronize()
    with torch.autograd.profiler.profile(use_device="npu") as prof:
        big @ big
        torch.npu.synchronize()
    mm = next(e for e in prof.function_events if e.name == "aten::mm")
    # 2 GFLOP cannot run in the few microseconds an asynchronous launch takes on the host.
    assert mm.self_device_time_total > mm.cpu_time_total


def test_kineto_profiler_times_are_inside_the_region():
    a, b = _work()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        (a @ b).sum()
        torch.npu.synchronize()
    wall_us = _region_us(t0, time.perf_counter())
    events = [e for e in prof.events() if e.name.startswith("aten::")]
    assert any(e.name == "aten::mm" for e in events)
    assert min(e.time_range.start for e in events) >= 0
    assert all(0 <= e.time_range.end - e.time_range.start <= wall_us for e in events)


def test_kineto_kernels_are_linked_to_their_ops_with_cost_and_a_track_per_stream(tmp_path):
    a, b = _work()
    side = torch.npu.Stream()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        y = a @ b
        with torch.npu.stream(side):
            z = torch.relu(a)
        torch.npu.synchronize()
    avg = {k.key: k for k in prof.key_averages()}
    assert avg["aten::mm"].self_device_time_total > 0  # device time reached the op that launched the kernel
    assert avg["aten::relu"].self_device_time_total > 0
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert {"gemm", "relu"} <= {k.name for k in kernels}
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert any(k.name == "gemm" for k in mm.kernels) or mm.self_device_time_total > 0
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    gemm = next(e for e in events if e.get("cat") == "kernel" and e["name"] == "gemm")
    args = gemm["args"]
    assert args["gm_read_bytes"] > 0 and args["cube_flops"] == 2 * 512 ** 3
    # the roofline of the part (1.6 TB/s HBM, 313 TFLOPS Cube): the slower of its traffic and its FLOPs
    expected_us = max((args["gm_read_bytes"] + args["gm_write_bytes"]) / 1.6e12, args["cube_flops"] / 313e12) * 1e6
    assert args["modeled_npu_us"] == pytest.approx(expected_us, rel=1e-9)
    relu = next(e for e in events if e.get("cat") == "kernel" and e["name"] == "relu")
    assert gemm["tid"] != relu["tid"]  # one track per stream
    tracks = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {f"npu 0 stream {gemm['tid']}", f"npu 0 stream {relu['tid']}"} <= tracks
    assert min(e["ts"] for e in events if e.get("cat") == "kernel") >= min(
        e["ts"] for e in events if e.get("cat") == "cpu_op")  # the device clock is the host's
    del y, z


def test_kineto_copies_are_device_memcpy_events_linked_to_their_op():
    host = torch.randn(1 << 18)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        d = host.to("npu")
        back = d.cpu()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert {"memcpy_h2d", "memcpy_d2h"} <= {k.name for k in kernels}
    avg = {k.key: k for k in prof.key_averages()}
    assert avg["aten::copy_"].device_time_total > 0
    assert torch.equal(back, host)
