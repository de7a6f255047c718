"""torch.npu.memory._record_memory_history / _snapshot / _dump_snapshot: the allocator's history in the
pickle format PyTorch's memory visualiser reads, read back here with torch.cuda._memory_viz."""
import pickle
import re

import pytest
import torch
from torch.cuda import _memory_viz

import torch_npu_sim  # noqa: F401

DEV = 6  # a device no other test of this file allocates on before


@pytest.fixture
def history():
    torch.npu.memory._record_memory_history(enabled=None)
    torch.npu.memory._record_memory_history(max_entries=100000)
    yield
    torch.npu.memory._record_memory_history(enabled=None)


def allocate_for_history_test():
    keep = torch.empty(3 * 2**20, dtype=torch.uint8, device=f"npu:{DEV}")
    drop = torch.empty(5 * 2**20, dtype=torch.uint8, device=f"npu:{DEV}")
    return keep, drop


def test_trace_and_segments_with_stacks(history, tmp_path):
    keep, drop = allocate_for_history_test()
    drop_addr = drop.data_ptr()
    del drop
    path = tmp_path / "snap.pickle"
    torch.npu.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)

    trace = snap["device_traces"][DEV]
    allocs = [e for e in trace if e["action"] == "alloc"]
    assert [e["addr"] for e in allocs] == [keep.data_ptr(), drop_addr]
    assert [e["size"] for e in allocs] == [3 * 2**20, 5 * 2**20]
    for e in allocs:  # each allocation carries the Python stack that made it
        assert any(f["name"] == "allocate_for_history_test" and f["filename"].endswith("test_memory_history.py")
                   for f in e["frames"]), e["frames"][:5]
    frees = [(e["action"], e["addr"]) for e in trace if e["action"].startswith("free")]
    assert frees == [("free_requested", drop_addr), ("free_completed", drop_addr)]
    assert all(e["time_us"] > 0 for e in trace)
    assert all(not t for i, t in enumerate(snap["device_traces"]) if i != DEV)

    blocks = [b for s in snap["segments"] if s["device"] == DEV for b in s["blocks"]]
    live = [b for b in blocks if b["address"] == keep.data_ptr()]
    assert len(live) == 1 and live[0]["state"] == "active_allocated" and live[0]["size"] == 3 * 2**20
    assert any(f["name"] == "allocate_for_history_test" for f in live[0]["frames"])
    assert all(b["state"] == "inactive" for b in blocks if b["address"] == drop_addr)
    for s in snap["segments"]:  # blocks tile their segment in address order
        addr = s["address"]
        for b in s["blocks"]:
            assert b["address"] == addr
            addr += b["size"]
        assert addr == s["address"] + s["total_size"]

    # PyTorch's visualiser reads it: the text trace names both allocations and the free
    text = _memory_viz.trace(snap)
    assert f"Device {DEV} ----" in text
    for size in ("3.0MiB", "5.0MiB"):  # each allocation is placed in a segment the trace allocated
        m = re.search(rf"^(\w+) = (\w+)\[\d+:{size}\]$", text, re.M)
        assert m and m.group(2) != "MEM", text
        assert re.search(rf"^{m.group(2)} = cudaMalloc\(\d+, ", text, re.M), text
    drop_name = re.search(r"^(\w+) = \w+\[\d+:5.0MiB\]$", text, re.M).group(1)
    assert f"# free completed for {drop_name} 5.0MiB" in text
    flame = _memory_viz.memory(snap, format_flamegraph=lambda lines: lines)
    assert "allocate_for_history_test" in flame
    html = _memory_viz.trace_plot(snap)
    assert "add_local_files" in html and len(html) > 1000
    assert "Summary of segments" in _memory_viz.segsum(snap)


def test_state_only_keeps_live_stacks_and_no_trace():
    torch.npu.memory._record_memory_history(enabled=None)
    torch.npu.memory._record_memory_history(enabled="state")
    try:
        keep, drop = allocate_for_history_test()
        snap = torch.npu.memory._snapshot()
        assert not any(snap["device_traces"])
        live = [b for s in snap["segments"] for b in s["blocks"] if b["address"] == keep.data_ptr()]
        assert any(f["name"] == "allocate_for_history_test" for f in live[0]["frames"])
    finally:
        torch.npu.memory._record_memory_history(enabled=None)


def test_max_entries_keeps_the_newest_and_disabling_forgets(history):
    torch.npu.memory._record_memory_history(max_entries=3)
    xs = [torch.empty(1000 * (i + 1), device=f"npu:{DEV}") for i in range(4)]
    trace = torch.npu.memory._snapshot()["device_traces"][DEV]
    assert len(trace) == 3
    assert [e["addr"] for e in trace if e["action"] == "alloc"] == [x.data_ptr() for x in xs[4 - len(
        [e for e in trace if e["action"] == "alloc"]):]]
    torch.npu.memory._record_memory_history(enabled=None)
    snap = torch.npu.memory._snapshot()
    assert not any(snap["device_traces"])
    assert all(b["frames"] == [] for s in snap["segments"] for b in s["blocks"])


def test_context_none_records_the_trace_without_stacks(history):
    torch.npu.memory._record_memory_history(enabled="all", context=None)
    x = torch.empty(4096, device=f"npu:{DEV}")
    trace = torch.npu.memory._snapshot()["device_traces"][DEV]
    assert [e["addr"] for e in trace if e["action"] == "alloc"] == [x.data_ptr()]
    assert all(e["frames"] == [] for e in trace)


def test_frees_from_stream_workers_are_recorded(history):
    # an op's inputs captured by a queued kernel are released on the stream's worker thread
    a = torch.randn(1 << 16, device=f"npu:{DEV}")
    addr = a.data_ptr()
    (a * 2).sum()
    del a
    torch.npu.synchronize(DEV)
    trace = torch.npu.memory._snapshot()["device_traces"][DEV]
    assert ("free_completed", addr) in [(e["action"], e["addr"]) for e in trace]


def test_bad_arguments_name_them():
    with pytest.raises(ValueError, match="_record_memory_history: expected enabled to be None, 'state' or 'all'"):
        torch.npu.memory._record_memory_history(enabled="sometimes")
    with pytest.raises(ValueError, match="expected context to be None, 'state', 'alloc' or 'all', got 'x'"):
        torch.npu.memory._record_memory_history(context="x")
    with pytest.raises(ValueError, match="expected stacks to be 'python' or 'all', got 'cpp'"):
        torch.npu.memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError, match="expected max_entries > 0, got 0"):
        torch.npu.memory._record_memory_history(max_entries=0)


def test_segments_are_traced_when_the_cache_grows_and_shrinks(history):
    torch.npu.empty_cache()
    big = torch.empty(64 * 2**20, dtype=torch.uint8, device=f"npu:{DEV}")  # a segment of its own
    addr = big.data_ptr()
    del big
    torch.npu.empty_cache()  # gives the cached segment back
    trace = torch.npu.memory._snapshot()["device_traces"][DEV]
    seg = [(e["action"], e["addr"], e["size"]) for e in trace if e["action"].startswith("segment")]
    assert ("segment_alloc", addr, 64 * 2**20) in seg and ("segment_free", addr, 64 * 2**20) in seg
    actions = [e["action"] for e in trace if e["addr"] == addr]
    actions = actions[actions.index("segment_alloc"):]  # (the first empty_cache may free an older one there)
    assert actions == ["segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"]
