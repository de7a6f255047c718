"""npu tensors through torch.multiprocessing: the consumer maps the producer's device memory (no copy, writes
are seen both ways), the producer keeps the storage until the consumer releases it, the memory outlives a
producer that exits first, and every failure reaches the consumer as an error instead of a hang."""
import os
import time

import pytest
import torch
import torch.multiprocessing as mp

import torch_npu_sim
from torch_npu_sim import ipc

CTX = mp.get_context("spawn")  # a forked child cannot use the runtime; spawn is what torch_npu users use
TIMEOUT = 120


def _consumer_add_one(inbox, outbox, done):
    t = inbox.get(timeout=TIMEOUT)
    outbox.put((str(t.device), t.dtype, tuple(t.shape), t.cpu().tolist()))
    t.add_(1)
    torch.npu.synchronize(t.device)
    outbox.put("written")
    done.wait(TIMEOUT)
    del t
    outbox.put("released")


def test_consumer_shares_the_producers_memory_and_releases_it():
    x = torch.arange(1000, dtype=torch.float32, device="npu:2")
    view = x[100:300].view(20, 10)[:, 2:5]  # an offset, strided view of a larger storage
    inbox, outbox, done = CTX.Queue(), CTX.Queue(), CTX.Event()
    p = CTX.Process(target=_consumer_add_one, args=(inbox, outbox, done))
    p.start()
    try:
        inbox.put(view)
        device, dtype, shape, values = outbox.get(timeout=TIMEOUT)
        assert (device, dtype, shape) == ("npu:2", torch.float32, (20, 3))
        assert values == torch.arange(1000.0)[100:300].view(20, 10)[:, 2:5].tolist()  # (read before it adds 1)
        assert outbox.get(timeout=TIMEOUT) == "written"
        expected = torch.arange(1000, dtype=torch.float32)
        expected[100:300].view(20, 10)[:, 2:5] += 1
        assert torch.equal(x.cpu(), expected)  # the consumer wrote the producer's memory: no copy was sent
        assert ipc.shared_storages() == 1  # held for the consumer
        done.set()
        assert outbox.get(timeout=TIMEOUT) == "released"
        deadline = time.monotonic() + 30
        while ipc.shared_storages() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ipc.shared_storages() == 0  # the consumer's release reached the producer
    finally:
        done.set()
        p.join(TIMEOUT)
        assert p.exitcode == 0


def _producer_then_exit(outbox, go):
    t = torch.full((4096,), 7.0, device="npu:1")
    outbox.put(t)
    go.wait(TIMEOUT)  # until the consumer has it


def test_the_memory_outlives_a_producer_that_exits_first():
    outbox, go = CTX.Queue(), CTX.Event()
    p = CTX.Process(target=_producer_then_exit, args=(outbox, go))
    p.start()
    t = outbox.get(timeout=TIMEOUT)
    go.set()
    p.join(TIMEOUT)
    assert p.exitcode == 0
    assert t.device == torch.device("npu:1")
    assert torch.equal(t.cpu(), torch.full((4096,), 7.0))
    t.mul_(2)
    assert torch.equal(t.cpu(), torch.full((4096,), 14.0))
    del t


def _producer_exits_at_once(outbox):
    outbox.put(torch.ones(16, device="npu"))


def test_a_tensor_received_after_its_producer_exited_raises():
    outbox = CTX.Queue()
    p = CTX.Process(target=_producer_exits_at_once, args=(outbox,))
    p.start()
    p.join(TIMEOUT)
    assert p.exitcode == 0
    with pytest.raises(RuntimeError, match="has the process that shared it exited"):
        outbox.get(timeout=TIMEOUT)


def test_an_unshareable_tensor_reaches_the_consumer_as_an_error():
    outbox = CTX.Queue()
    old = os.environ.get("NPU_SIM_SHARED_HBM")
    os.environ["NPU_SIM_SHARED_HBM"] = "0"  # the child's device memory is private
    try:
        p = CTX.Process(target=_producer_exits_at_once, args=(outbox,))
        p.start()
    finally:
        if old is None:
            del os.environ["NPU_SIM_SHARED_HBM"]
        else:
            os.environ["NPU_SIM_SHARED_HBM"] = old
    try:
        with pytest.raises(RuntimeError, match=r"npu IPC: the producer \(pid \d+\) could not share an npu:0 tensor"):
            outbox.get(timeout=TIMEOUT)
    finally:
        p.kill()
        p.join(TIMEOUT)


def test_cpu_tensors_still_go_through_torchs_own_sharing():
    x = torch.arange(10.0)
    fn, args = ipc._reduce_tensor(x)
    assert fn.__module__ == "torch.multiprocessing.reductions"
    assert torch_npu_sim  # imported for the registration
