"""Streams and events through torch's generic API and torch.npu: ordering, concurrency, timing, and
record_stream keeping memory alive for another stream."""
import threading

import pytest
import torch

import torch_npu_sim


def test_default_and_pool_streams():
    d = torch.npu.default_stream()
    assert d.stream_id == 0 and d.device == torch.device("npu:0")
    assert torch.npu.current_stream() == d
    s1, s2 = torch.npu.Stream(), torch.npu.Stream()
    assert s1.stream_id != 0 and s1 != s2
    assert torch.npu.Stream(device="npu:2").device == torch.device("npu:2")
    generic = torch.Stream(device="npu")
    assert generic.device.type == "npu"


def test_stream_context_sets_current_stream_per_thread():
    s = torch.npu.Stream()
    seen = {}

    def other_thread():
        seen["other"] = torch.npu.current_stream()

    with torch.npu.stream(s):
        assert torch.npu.current_stream() == s
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen["other"] == torch.npu.default_stream()
    assert torch.npu.current_stream() == torch.npu.default_stream()


def test_work_on_side_stream_ordered_by_event():
    side = torch.npu.Stream()
    x = torch.zeros(2048, 1024, device="npu")
    side.wait_stream(torch.npu.current_stream())  # the zero-fill runs on the default stream
    with torch.npu.stream(side):
        for i in range(8):
            x.fill_(float(i))
        done = torch.npu.Event()
        done.record()
    torch.npu.current_stream().wait_event(done)
    y = x.clone()  # on the default stream, after the event
    assert torch.equal(y.cpu(), torch.full((2048, 1024), 7.0))


def test_wait_stream_and_query():
    side = torch.npu.Stream()
    with torch.npu.stream(side):
        big = torch.empty(4096, 4096, device="npu")
        big.fill_(1.0)
    torch.npu.current_stream().wait_stream(side)
    total = big.cpu().sum().item()
    assert total == 4096 * 4096
    side.synchronize()
    assert side.query()


def test_event_timing_and_query():
    start = torch.npu.Event(enable_timing=True)
    end = torch.npu.Event(enable_timing=True)
    start.record()
    x = torch.empty(8 << 20, device="npu")
    for _ in range(4):
        x.fill_(2.0)
    end.record()
    end.synchronize()
    assert end.query()
    ms = start.elapsed_time(end)
    assert ms > 0
    generic_a = torch.Event(device="npu", enable_timing=True)
    generic_b = torch.Event(device="npu", enable_timing=True)
    generic_a.record()
    generic_b.record()
    generic_b.synchronize()
    assert generic_a.elapsed_time(generic_b) >= 0


def test_unrecorded_event_is_complete_and_elapsed_needs_records():
    e = torch.npu.Event(enable_timing=True)
    assert e.query()
    e.synchronize()
    with pytest.raises(RuntimeError, match="recorded"):
        e.elapsed_time(torch.npu.Event(enable_timing=True))


def test_synchronize_helpers():
    torch.npu.synchronize()
    torch.npu.synchronize("npu:1")
    torch.accelerator.synchronize(2)
    torch.npu.current_stream().synchronize()


def test_record_stream_defers_reuse_until_the_other_stream_is_done():
    torch.npu.synchronize()
    side = torch.npu.Stream()
    main = torch.npu.current_stream()
    a = torch.empty(1 << 18, device="npu")  # allocated on the main stream (1 MiB)
    a.fill_(1.0)
    side.wait_stream(main)
    with torch.npu.stream(side):
        # keep the side stream busy, then read `a` there
        hog = torch.empty(16 << 20, device="npu")
        for _ in range(20):
            hog.fill_(3.0)
        b = a.clone()
    a.record_stream(side)
    ptr = a.data_ptr()
    del a
    c = torch.empty(1 << 18, device="npu")  # same size, same stream: must not reuse a's block yet
    assert c.data_ptr() != ptr
    side.synchronize()
    assert torch.equal(b.cpu(), torch.ones(1 << 18))
    del c
    d = torch.empty(1 << 18, device="npu")
    e = torch.empty(1 << 18, device="npu")
    assert ptr in (d.data_ptr(), e.data_ptr())  # once the side stream passed, the block is reused


def test_streams_on_other_devices():
    with torch.npu.device(3):
        s = torch.npu.Stream()
        with torch.npu.stream(s):
            t = torch.ones(10, device="npu")
            t.fill_(5)
        s.synchronize()
    assert t.device == torch.device("npu:3")
    assert torch.equal(t.cpu(), torch.full((10,), 5.0))


@pytest.mark.parametrize("spin_us", ["0", "50", "5000"])
def test_stream_worker_idle_policy_keeps_order(fresh_python, spin_us):
    """NPU_SIM_STREAM_SPIN_US: with no polling every op wakes the worker, with polling bursts run without
    wake-ups; either way ops run in order on every stream and synchronize sees them all."""
    r = fresh_python("""
        import time, torch, torch_npu_sim
        s = torch.npu.Stream()
        x = torch.zeros(1000, device="npu"); y = torch.zeros(1000, device="npu")
        s.wait_stream(torch.npu.current_stream())  # y is zero-filled on the default stream (a race before)
        for i in range(300):
            x.add_(1)
            with torch.npu.stream(s):
                y.add_(2)
            if i % 50 == 0:
                time.sleep(0.002)   # let the workers go idle (and sleep) now and then
        torch.npu.synchronize()
        print(float(x.sum().cpu()), float(y.sum().cpu()))
    """, env={"NPU_SIM_STREAM_SPIN_US": spin_us})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["300000.0", "600000.0"]
