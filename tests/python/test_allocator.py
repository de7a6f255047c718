"""The caching allocator seen from torch: CUDA-shaped stats, pools and rounding, empty_cache, OOM and
recovery, memory fraction, PYTORCH_NPU_ALLOC_CONF and PYTORCH_NO_NPU_MEMORY_CACHING.
Tests use npu:7 so other tests' tensors do not disturb the numbers."""
import pytest
import torch

DEV = "npu:7"
MiB = 1 << 20


@pytest.fixture(autouse=True)
def clean_device():
    torch.npu.synchronize(DEV)
    torch.npu.empty_cache()
    torch.npu.reset_peak_memory_stats(DEV)
    yield
    torch.npu.synchronize(DEV)
    torch.npu.empty_cache()


def stats():
    return torch.npu.memory_stats(DEV)


def test_stat_keys_follow_cuda():
    s = stats()
    for key in ["allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes", "segment", "active",
                "allocation", "inactive_split", "inactive_split_bytes"]:
        for pool in ["all", "large_pool", "small_pool"]:
            for field in ["current", "peak", "allocated", "freed"]:
                assert f"{key}.{pool}.{field}" in s
    for key in ["num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
                "max_split_size", "oversize_allocations.current", "oversize_segments.current"]:
        assert key in s
    assert torch.npu.memory_stats_as_nested_dict(DEV)["allocated_bytes"]["all"]["current"] == s[
        "allocated_bytes.all.current"]


def test_rounding_and_small_pool():
    before = torch.npu.memory_allocated(DEV)
    t = torch.empty(1000, dtype=torch.float32, device=DEV)  # 4000 B -> 4096 B
    s = stats()
    assert torch.npu.memory_allocated(DEV) - before == 4096
    assert s["requested_bytes.all.current"] == 4000
    assert s["reserved_bytes.small_pool.current"] == 2 * MiB
    assert s["segment.small_pool.current"] == 1
    u = torch.empty(100, dtype=torch.uint8, device=DEV)  # split from the same 2 MiB segment
    assert stats()["segment.small_pool.current"] == 1
    assert torch.npu.memory_allocated(DEV) - before == 4096 + 512
    del t, u


def test_large_pool_segment_sizes():
    t = torch.empty(3 * MiB, dtype=torch.uint8, device=DEV)  # 1-10 MiB -> 20 MiB segment
    assert stats()["reserved_bytes.large_pool.current"] == 20 * MiB
    big = torch.empty(25 * MiB + 1, dtype=torch.uint8, device=DEV)  # > 10 MiB -> rounded to 2 MiB
    assert stats()["reserved_bytes.large_pool.current"] == 20 * MiB + 26 * MiB
    del t, big


def test_free_block_is_reused_and_empty_cache_releases():
    t = torch.empty(5 * MiB, dtype=torch.uint8, device=DEV)
    ptr = t.data_ptr()
    del t
    assert torch.npu.memory_allocated(DEV) == 0
    assert torch.npu.memory_reserved(DEV) == 20 * MiB  # cached, not returned
    t2 = torch.empty(5 * MiB, dtype=torch.uint8, device=DEV)
    assert t2.data_ptr() == ptr
    del t2
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved(DEV) == 0
    assert stats()["num_device_free"] >= 1


def test_split_and_merge():
    blocks = [torch.empty(256 * 1024, dtype=torch.uint8, device=DEV) for _ in range(3)]
    assert stats()["segment.small_pool.current"] == 1
    del blocks[1]
    assert stats()["inactive_split.small_pool.current"] >= 1
    blocks.clear()
    s = stats()
    assert s["inactive_split.small_pool.current"] == 0  # everything merged back into one free block
    whole = torch.empty(2 * MiB - 512, dtype=torch.uint8, device=DEV)
    assert stats()["segment.small_pool.current"] == 1  # served by the merged block, no new segment
    del whole


def test_peak_and_reset():
    a = torch.empty(4 * MiB, dtype=torch.uint8, device=DEV)
    b = torch.empty(4 * MiB, dtype=torch.uint8, device=DEV)
    del a, b
    assert torch.npu.max_memory_allocated(DEV) >= 8 * MiB
    assert torch.npu.max_memory_reserved(DEV) >= 20 * MiB
    torch.npu.reset_peak_memory_stats(DEV)
    assert torch.npu.max_memory_allocated(DEV) == torch.npu.memory_allocated(DEV) == 0
    torch.npu.reset_accumulated_memory_stats(DEV)
    assert stats()["allocation.all.allocated"] == 0


def test_out_of_memory_message_and_recovery():
    total = torch.npu.get_device_properties(DEV).total_memory
    hold = torch.empty(total // 2, dtype=torch.uint8, device=DEV)  # lazily reserved, never touched
    ooms = stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(total // 2 + 64 * MiB, dtype=torch.uint8, device=DEV)
    msg = str(info.value)
    assert msg.startswith("NPU out of memory. Tried to allocate 8.06 GiB")
    assert "NPU 7 has a total capacity of 16.00 GiB" in msg
    assert "is free" in msg and "allocated by PyTorch" in msg and "reserved by PyTorch" in msg
    assert stats()["num_ooms"] == ooms + 1
    del hold
    again = torch.empty(total // 2 + 64 * MiB, dtype=torch.uint8, device=DEV)  # cache freed, retry works
    assert again.numel() == total // 2 + 64 * MiB
    del again


def test_memory_fraction():
    torch.npu.set_per_process_memory_fraction(0.125, DEV)  # 2 GiB of 16
    try:
        assert torch.npu.get_per_process_memory_fraction(DEV) == 0.125
        ok = torch.empty(1 << 30, dtype=torch.uint8, device=DEV)
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(3 << 30, dtype=torch.uint8, device=DEV)
        del ok
    finally:
        torch.npu.set_per_process_memory_fraction(1.0, DEV)
    with pytest.raises(ValueError, match="fraction"):
        torch.npu.set_per_process_memory_fraction(1.5, DEV)


def test_snapshot_and_summary():
    t = torch.empty(3 * MiB, dtype=torch.uint8, device=DEV)
    segs = [s for s in torch.npu.memory_snapshot() if s["device"] == 7]
    assert len(segs) == 1 and segs[0]["total_size"] == 20 * MiB
    assert any(b["state"] == "active_allocated" and b["size"] == 3 * MiB for b in segs[0]["blocks"])
    summary = torch.npu.memory_summary(DEV)
    assert "NPU memory summary, device ID 7" in summary and "Allocated memory" in summary
    del t


def test_mem_get_info_tracks_reservations():
    free0, total = torch.npu.mem_get_info(DEV)
    t = torch.empty(64 * MiB, dtype=torch.uint8, device=DEV)
    free1, _ = torch.npu.mem_get_info(DEV)
    assert free0 - free1 == 64 * MiB and total == 16 << 30
    del t


def test_alloc_conf_is_parsed(fresh_python):
    r = fresh_python("""
        import torch, torch_npu_sim
        torch.empty(1, device="npu")
        c = torch_npu_sim._C._alloc_config()
        print(c["max_split_size"], c["garbage_collection_threshold"])
        t = torch.empty(100 << 20, dtype=torch.uint8, device="npu")
        print(torch.npu.memory_stats()["oversize_allocations.current"])
    """, env={"PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:64, garbage_collection_threshold:0.6"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(64 << 20), "0.6", "1"]


@pytest.mark.parametrize("conf,expected", [
    ("foo:1", "unknown option 'foo'"),
    ("max_split_size_mb:abc", "max_split_size_mb"),
    ("max_split_size_mb:10", "max_split_size_mb must be > 20"),
    ("garbage_collection_threshold:1.5", "garbage_collection_threshold"),
    ("expandable_segments:True,max_split_size_mb:64", "expandable_segments"),
])
def test_bad_alloc_conf_is_a_clear_error(fresh_python, conf, expected):
    r = fresh_python("""
        import torch, torch_npu_sim
        try:
            torch.empty(1, device="npu")
        except ValueError as e:
            print("ValueError:", e)
    """, env={"PYTORCH_NPU_ALLOC_CONF": conf})
    assert r.returncode == 0, r.stderr
    assert "ValueError:" in r.stdout and "PYTORCH_NPU_ALLOC_CONF" in r.stdout and expected in r.stdout, r.stdout


def test_no_caching_mode(fresh_python):
    r = fresh_python("""
        import torch, torch_npu_sim
        for _ in range(5):
            t = torch.ones(1000, device="npu")
            assert t.sum().item() == 1000
            del t
        s = torch.npu.memory_stats()
        print(torch.npu.memory_reserved(), s["num_device_alloc"] >= 5, s["num_device_free"] >= 5)
    """, env={"PYTORCH_NO_NPU_MEMORY_CACHING": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-3:] == ["0", "True", "True"]
