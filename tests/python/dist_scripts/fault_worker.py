"""Rank script for the reliability tests. argv: scenario.
  kill      rank 1 SIGKILLs itself in the middle of a large all_reduce; the others must get DistBackendError
  desync    ranks all_reduce different sizes; every rank must get a clear mismatch DistBackendError
  nonblock  like kill but without blocking wait: the error comes at Work.wait()/the next collective
Prints "RESULT <exception type> <seconds>" on the surviving ranks."""
import os
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist

from common import init

warnings.filterwarnings("ignore")


def main():
    scenario = sys.argv[1]
    rank, world, dev = init("hccl", timeout_s=int(os.environ.get("FAULT_PG_TIMEOUT", "60")))
    t = torch.ones(4 << 20, device=dev)  # 16 MiB: several ring steps
    dist.all_reduce(t)
    t.cpu()
    t0 = time.monotonic()
    try:
        if scenario in ("kill", "nonblock"):
            if rank == 1:
                dist.all_reduce(t, async_op=True)  # fills its ring towards rank 0, then blocks inside
                time.sleep(0.5)
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(1.0)  # rank 1 is dead inside the collective when this rank joins it
            t0 = time.monotonic()
            w = dist.all_reduce(t, async_op=True)
            if scenario == "nonblock":
                try:
                    w.wait()  # orders the stream; raises only if the failure is already known (a race)
                except dist.DistBackendError:
                    pass
            else:
                w.wait()
            if scenario == "nonblock":
                time.sleep(float(os.environ.get("HCCL_EXEC_TIMEOUT", "5")) + 1)
                dist.all_reduce(t)  # the communicator is broken by now: raises at enqueue
            torch.npu.synchronize()
        elif scenario == "desync":
            x = torch.ones(10 + rank * 2, device=dev)
            dist.all_reduce(x)
            x.cpu()
        print(f"RESULT none {time.monotonic() - t0:.1f}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"RESULT {type(e).__name__} {time.monotonic() - t0:.1f} :: {str(e)[:400]}", flush=True)
    os._exit(0)  # the dead peer would make a clean destroy wait; exit like a crashed job's survivors


if __name__ == "__main__":
    main()
