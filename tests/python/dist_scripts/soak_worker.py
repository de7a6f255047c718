"""Rank script: N random-size all_reduces (int32 and float32 with exactly representable sums), each checked
bit-exactly against the sum computed locally from every rank's seeded input. argv: [count]."""
import sys
import warnings

import torch
import torch.distributed as dist

from common import Checker, init

warnings.filterwarnings("ignore")


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rank, world, dev = init("hccl")
    c = Checker(rank)
    sizes = torch.Generator().manual_seed(1234)
    for i in range(count):
        big = torch.randint(0, 20, (1,), generator=sizes).item() == 0
        n = int(torch.randint(1, 300000 if big else 5000, (1,), generator=sizes).item())
        dtype = torch.int32 if i % 2 == 0 else torch.float32
        ins = [torch.randint(-1000, 1000, (n,), generator=torch.Generator().manual_seed(i * 97 + r)).to(dtype)
               for r in range(world)]
        t = ins[rank].to(dev)
        dist.all_reduce(t)
        c.eq(f"all_reduce #{i} n={n} {dtype}", t, torch.stack(ins).sum(0).to(dtype))
        if c.failures:
            break
    rc = c.finish()
    dist.destroy_process_group()
    return rc


if __name__ == "__main__":
    sys.exit(main())
