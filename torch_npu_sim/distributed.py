"""The "hccl" backend of torch.distributed for npu tensors (registered on import of torch_npu_sim).

    dist.init_process_group("hccl")                  # or "cpu:gloo,npu:hccl", or device_id=torch.device("npu", r)

Each rank's communicator lives on its local npu device: LOCAL_RANK if set, else the global rank, modulo the
device count. See the README's "Distributed (hccl)" section for the environment variables.
"""
import os

import torch

BACKEND_NAME = "hccl"


def _device_index(global_rank):
    count = torch.npu.device_count()
    local = os.environ.get("LOCAL_RANK")
    index = int(local) if local not in (None, "") else int(global_rank)
    return index % count if count else 0


def _create_backend(dist_opts, backend_options=None):
    from ._C import _distributed

    ranks = list(dist_opts.global_ranks_in_group or [])
    global_rank = ranks[dist_opts.group_rank] if ranks else dist_opts.group_rank
    return _distributed.HcclBackend(dist_opts.store, dist_opts.group_rank, dist_opts.group_size,
                                    dist_opts.timeout, _device_index(global_rank))


def _register():
    import torch.distributed as dist

    if not dist.is_available() or hasattr(dist.Backend, BACKEND_NAME.upper()):
        return
    # devices must be a list: a bare string would be iterated character by character.
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True, devices=["npu"])


_register()
