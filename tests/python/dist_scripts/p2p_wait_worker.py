"""Rank script: Work.wait() of irecv orders the caller's stream (returns before the data arrives) unless
TORCH_HCCL_BLOCKING_WAIT=1, and the data is right either way. Rank 1 sends 1.5 s late.
Prints "WAIT <seconds>" (how long wait() took on rank 0) and the checker's summary."""
import sys
import time
import warnings

import torch
import torch.distributed as dist

from common import Checker, init

warnings.filterwarnings("ignore")
DELAY = 1.5


def main():
    rank, world, dev = init("hccl")
    c = Checker(rank)
    n = 100000
    if rank == 0:
        buf = torch.zeros(2 * n, device=dev)[::2]  # non-contiguous: lands in a temporary, copied back
        w = dist.irecv(buf, 1)
        t0 = time.monotonic()
        w.wait()
        print(f"WAIT {time.monotonic() - t0:.2f}", flush=True)
        doubled = buf * 2  # a kernel on the current stream: runs only after the receive
        c.eq("irecv after stream-ordered wait", doubled, torch.arange(n, dtype=torch.float32) * 2)
        w2 = dist.isend(torch.arange(n, dtype=torch.float32, device=dev) + 1, 1)
        w2.wait()
    else:
        time.sleep(DELAY)
        dist.send(torch.arange(n, dtype=torch.float32, device=dev), 0)
        got = torch.zeros(n, device=dev)
        dist.recv(got, 0)
        c.eq("recv", got, torch.arange(n, dtype=torch.float32) + 1)
    dist.barrier()
    rc = c.finish()
    dist.destroy_process_group()
    return rc


if __name__ == "__main__":
    sys.exit(main())
