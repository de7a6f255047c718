"""The launch records' Python API: per-launch GM bytes and FLOPs as the kernels record them, summed over a
region by torch_npu_sim.record_launches, per kernel, nested, and with recording restored afterwards."""
import pytest
import torch

import torch_npu_sim

N = 1 << 20


def test_elementwise_launches_record_their_gm_traffic():
    a, b = torch.randn(N, device="npu"), torch.randn(N, device="npu")
    with torch_npu_sim.record_launches() as rec:
        a + b  # two tensor inputs, one output: 2 x 4 MiB read, 4 MiB written
        a * 2.0  # a host scalar is no GM traffic: 4 MiB read
        a.half() + b.half()  # 2 casts (4 MiB read, 2 MiB written each), then the fp16 add: 4 MiB read, 2 written
        torch.zeros(N, device="npu")  # a fill: 4 MiB written
    assert rec.complete and rec.launches == 6
    assert [r["kernel"] for r in rec.records] == ["add", "mul", "copy_cast", "copy_cast", "add", "fill"]
    assert [(r["gm_read"], r["gm_write"]) for r in rec.records[2:4]] == [(4 * N, 2 * N)] * 2
    per = rec.by_kernel()
    assert {k: v for k, v in per["mul"].items() if k not in ("modeled_us", "sim_us")} == dict(
        launches=1, gm_read=4 * N, gm_write=4 * N, cube_flops=0, vector_flops=N)
    add = [r for r in rec.records if r["kernel"] == "add"]
    assert (add[0]["gm_read"], add[0]["gm_write"], add[0]["vector_flops"]) == (8 * N, 4 * N, N)
    assert (add[1]["gm_read"], add[1]["gm_write"]) == (4 * N, 2 * N)
    assert (rec.records[5]["gm_read"], rec.records[5]["gm_write"]) == (0, 4 * N)
    assert rec.gm_read == sum(r["gm_read"] for r in rec.records)
    assert rec.gm_write == sum(r["gm_write"] for r in rec.records)
    assert all(r["device"] == 0 and r["block_dim"] >= 1 and not r["failed"] for r in rec.records)


def test_regions_nest_and_recording_is_restored():
    a = torch.randn(N, device="npu")
    assert not torch_npu_sim.launch_recording()
    with torch_npu_sim.record_launches() as outer:
        a.neg()
        with torch_npu_sim.record_launches() as inner:
            a.abs()
        assert torch_npu_sim.launch_recording()
        a.exp()
    assert not torch_npu_sim.launch_recording()
    assert [r["kernel"] for r in inner.records] == ["abs"]
    assert [r["kernel"] for r in outer.records] == ["neg", "abs", "exp"]
    assert outer.gm_read == 3 * 4 * N and inner.gm_read == 4 * N
    a.sin()  # recording off: nothing appended
    torch.npu.synchronize()
    assert torch_npu_sim.launch_records()[-1]["kernel"] == "exp"


def test_a_failed_launch_is_recorded_as_failed():
    from conftest import acknowledge_device_error

    x = torch.randn(4, 3, device="npu")
    target = torch.tensor([0, 1, 7, 2], device="npu")  # 7 is out of range: the kernel fails on the device
    with torch_npu_sim.record_launches() as rec:
        torch.nn.functional.nll_loss(x, target)
        with pytest.raises(RuntimeError, match="out of bounds"):
            torch.npu.synchronize()
        acknowledge_device_error()
    assert any(r["failed"] for r in rec.records)


def test_bad_capacity_is_refused():
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        torch_npu_sim.set_launch_recording(True, 0)
    assert not torch_npu_sim.launch_recording()


def test_records_carry_times_and_the_modeled_npu_time_and_the_summary_sorts_by_it():
    x = torch.randn(512, 512, device="npu")
    torch.npu.synchronize()
    with torch_npu_sim.record_launches() as rec:
        y = (x @ x).relu().sum()
    recs = {r["kernel"]: r for r in rec.records}
    for r in rec.records:
        assert r["start_ns"] <= r["end_ns"]
        traffic = (r["gm_read"] + r["gm_write"]) / 1.6e12
        assert r["modeled_us"] == pytest.approx(
            max(traffic, r["cube_flops"] / 313e12, r["vector_flops"] / 9.8e12) * 1e6, rel=1e-9)
    assert recs["gemm"]["cube_flops"] == 2 * 512 ** 3
    table = rec.summary()
    names = [line.split()[0] for line in table.splitlines()[2:]]
    assert names[0] == "gemm" and set(names) == set(rec.by_kernel())
    modeled = [rec.by_kernel()[n]["modeled_us"] for n in names]
    assert modeled == sorted(modeled, reverse=True)
    assert rec.by_kernel()["gemm"]["sim_us"] > 0
    del y


def test_copies_are_recorded_with_their_device_memory_bytes():
    n = 1 << 20
    host = torch.ones(n)
    with torch_npu_sim.record_launches() as rec:
        d = host.to("npu")                  # host -> device: 4 MiB written to HBM
        e = d.clone()                       # a device copy kernel or d2d copy
        back = e.cpu()                      # device -> host: 4 MiB read from HBM
    names = [r["kernel"] for r in rec.records]
    h2d = next(r for r in rec.records if r["kernel"] == "memcpy_h2d")
    d2h = next(r for r in rec.records if r["kernel"] == "memcpy_d2h")
    assert (h2d["gm_read"], h2d["gm_write"]) == (0, 4 * n)
    assert (d2h["gm_read"], d2h["gm_write"]) == (4 * n, 0)
    assert names.index("memcpy_h2d") < names.index("memcpy_d2h")
    assert h2d["cube_flops"] == h2d["vector_flops"] == 0 and h2d["modeled_us"] == pytest.approx(4 * n / 1.6e12 * 1e6)
    assert torch.equal(back, host)
