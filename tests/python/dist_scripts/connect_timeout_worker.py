"""Rank script of the rendezvous-timeout test: rank 0 creates the hccl process group; rank 1 joins the
c10d store (so torch's own rendezvous completes) but never creates its communicator. Rank 0 must fail
with a clear error within HCCL_CONNECT_TIMEOUT + 5 s. Prints "RESULT <exception type> <seconds> :: msg"."""
import datetime
import os
import sys
import time
import warnings

import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (imports torch_npu_sim: registers the hccl backend)

warnings.filterwarnings("ignore")


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank != 0:
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False,
                              timeout=datetime.timedelta(seconds=60))
        store.set("peer_joined_store", "1")
        time.sleep(float(os.environ["HCCL_CONNECT_TIMEOUT"]) + 8)  # longer than rank 0 may wait
        os._exit(0)
    t0 = time.monotonic()
    try:
        dist.init_process_group("hccl", timeout=datetime.timedelta(seconds=120))
        print(f"RESULT none {time.monotonic() - t0:.1f}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"RESULT {type(e).__name__} {time.monotonic() - t0:.1f} :: {str(e)[:600]}", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
