"""torch.multiprocessing.spawn of 2 ranks with init_process_group("hccl") and an all_reduce. argv: port."""
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))


def run(rank, world, port):
    warnings.filterwarnings("ignore")
    import torch_npu_sim  # noqa: F401

    os.environ["NPU_SIM_CORE_THREADS"] = "1"
    dist.init_process_group("hccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    t = torch.full((1000,), float(rank + 1)).to(f"npu:{rank}")
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((1000,), 3.0)), t.cpu()[:4]
    dist.destroy_process_group()


if __name__ == "__main__":
    ctx = mp.spawn(run, args=(2, int(sys.argv[1])), nprocs=2, join=False)
    while not ctx.join(timeout=60):
        pass
    print("spawn ok")
