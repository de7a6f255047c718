"""Rank script of the reliability tests. argv: scenario. Surviving ranks print
  RESULT <exception type> <seconds> :: <message>     (or RESULT none <seconds> if nothing raised: a silent failure)
  READBACK raised <type> | READBACK <values>           (what reading the collective's output gave afterwards)
Scenarios:
  kill        rank 1 SIGKILLs itself inside a large all_reduce; rank 0 joins it, then wait() + synchronize
  killed      rank 1 is gone before rank 0's all_reduce; rank 0 does all_reduce + torch.npu.synchronize()
  future      like killed, but rank 0 waits on all_reduce(async_op=True).get_future()
  event       like killed, but rank 0 synchronizes an event recorded after Work.wait()
  nonblock    like kill with a stream-ordered wait: the error comes at synchronize or the next collective
  hang        rank 1 stays alive but never joins: rank 0 times out (HCCL_EXEC_TIMEOUT)
  percall     rank 1 never joins; rank 0's all_reduce carries c10d's per-call timeout of 2 s
  numel/dtype/op/root   the ranks disagree on the size, dtype, reduce op or broadcast src
  p2p_killed  rank 1 is gone before rank 0's recv
  ddp_kill    DDP training; rank 1 dies before step 3; rank 0 must not complete a step with a partial gradient
"""
import datetime
import os
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist

from common import init

warnings.filterwarnings("ignore")


def report_readback(t):
    try:
        v = t.cpu()
        print(f"READBACK {v.flatten()[:4].tolist()}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"READBACK raised {type(e).__name__}", flush=True)


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def wait_for_store_host_to_exit(limit_s):
    """Polls the TCPStore that rank 0 hosts until rank 0 has exited (at most limit_s): a rank that never joins
    stays alive exactly as long as its peer waits, instead of a fixed sleep past the longest timeout."""
    store = dist.distributed_c10d._get_default_store()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            store.check(["fault_worker/never-set"])
        except Exception:  # noqa: BLE001  (the connection to rank 0's store is gone)
            return
        time.sleep(0.2)


def ddp_kill(rank, dev):
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(64, 64).to(dev), device_ids=None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = None
    for step in range(6):
        if rank == 1 and step == 3:
            die()
        before = [p.detach().cpu().clone() for p in model.parameters()]
        opt.zero_grad()
        model(torch.randn(8, 64, device=dev)).square().mean().backward()
        opt.step()
        torch.npu.synchronize()
        print(f"STEP {step} done", flush=True)
    return before


def main():
    scenario = sys.argv[1]
    rank, world, dev = init("hccl", timeout_s=int(os.environ.get("FAULT_PG_TIMEOUT", "60")))
    t = torch.ones(4 << 20, device=dev)  # 16 MiB: several ring steps
    dist.all_reduce(t)
    t.cpu()
    out = t
    t0 = time.monotonic()
    try:
        if scenario in ("kill", "nonblock"):
            if rank == 1:
                dist.all_reduce(t, async_op=True)  # fills its ring towards rank 0, then blocks inside
                time.sleep(0.5)
                die()
            time.sleep(1.0)  # rank 1 is dead inside the collective when this rank joins it
            t0 = time.monotonic()
            w = dist.all_reduce(t, async_op=True)
            w.wait()
            if scenario == "nonblock":
                time.sleep(float(os.environ.get("HCCL_EXEC_TIMEOUT", "5")) + 1)
                dist.all_reduce(t)  # the communicator is broken by now: raises at enqueue
            torch.npu.synchronize()
        elif scenario in ("killed", "future", "event", "p2p_killed"):
            dist.barrier()
            if rank == 1:
                die()
            time.sleep(1.0)
            t0 = time.monotonic()
            x = torch.full((1000,), 3.0, device=dev)
            out = x
            if scenario == "killed":
                dist.all_reduce(x)
                torch.npu.synchronize()
            elif scenario == "future":
                dist.all_reduce(x, async_op=True).get_future().wait()
            elif scenario == "event":  # an event on the caller's stream, ordered after the collective
                dist.all_reduce(x, async_op=True).wait()
                e = torch.npu.current_stream().record_event()
                e.synchronize()
            else:
                dist.recv(x, src=1)
                torch.npu.synchronize()
        elif scenario in ("hang", "percall"):
            if rank == 1:  # alive, never joins; leaves once rank 0 has given up (its store is gone with it)
                wait_for_store_host_to_exit(float(os.environ.get("HCCL_EXEC_TIMEOUT", "5")) + 8)
                os._exit(0)
            x = torch.full((1000,), 3.0, device=dev)
            out = x
            t0 = time.monotonic()
            if scenario == "hang":
                dist.all_reduce(x)
            else:
                opts = dist.AllreduceOptions()
                opts.timeout = datetime.timedelta(seconds=2)
                dist.distributed_c10d._get_default_group().allreduce([x], opts).wait()
            torch.npu.synchronize()
        elif scenario == "numel":
            x = torch.ones(10 + rank * 2, device=dev)
            out = x
            dist.all_reduce(x)
            torch.npu.synchronize()
        elif scenario == "dtype":
            x = torch.ones(10, device=dev, dtype=torch.float32 if rank == 0 else torch.float64)
            out = x
            dist.all_reduce(x)
            torch.npu.synchronize()
        elif scenario == "op":
            x = torch.full((10,), float(rank + 1), device=dev)
            out = x
            dist.all_reduce(x, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX)
            torch.npu.synchronize()
        elif scenario == "root":
            x = torch.full((10,), float(rank + 1), device=dev)
            out = x
            dist.broadcast(x, src=rank)
            torch.npu.synchronize()
        elif scenario == "ddp_kill":
            before = ddp_kill(rank, dev)
            out = torch.cat([p.flatten() for p in before])
        print(f"RESULT none {time.monotonic() - t0:.1f}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"RESULT {type(e).__name__} {time.monotonic() - t0:.1f} :: {str(e)[:600]}", flush=True)
    report_readback(out)
    os._exit(0)  # the dead peer would make a clean destroy wait; exit like a crashed job's survivors


if __name__ == "__main__":
    main()
