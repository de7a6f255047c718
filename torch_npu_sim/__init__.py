"""torch_npu_sim: a simulated Ascend-style NPU as the PyTorch device "npu".

After ``import torch_npu_sim`` ordinary PyTorch code targets ``"npu"``: ``tensor.npu()``,
``model.to("npu")``, ``torch.npu.synchronize()``, ``torch.Stream(device="npu")``.
"""


def _autoload():
    """Entry point for torch's device-backend autoload (group ``torch.backends``): importing this
    package is all the registration there is. Defined before ``import torch`` because importing this
    package first makes torch's autoload look it up while it is still initialising."""


import torch  # noqa: E402

from . import _C  # noqa: F401  (loads the extension: op table, allocator, guard, hooks)
from . import npu
from .fallback import fallback_ops, reset_fallback_ops
from .fused_ops import *  # noqa: F401,F403  (torch_npu's npu_* fused ops)
from . import fused_ops
from .formats import get_npu_format, npu_format_cast, npu_format_cast_  # noqa: F401
from .launch_records import (clear_launch_records, launch_recording, launch_records, launch_totals,  # noqa: F401
                             record_launches, set_launch_recording)

__all__ = ["npu", "fallback_ops", "reset_fallback_ops", "get_npu_format", "npu_format_cast", "npu_format_cast_",
           *fused_ops.__all__]


def _register():
    # Each step is idempotent so that re-imports (and the torch.backends autoload) are harmless.
    if torch._C._get_privateuse1_backend_name() != "npu":
        torch.utils.rename_privateuse1_backend("npu")
    if not hasattr(torch, "npu"):
        torch._register_device_module("npu", npu)
    if not hasattr(torch.Tensor, "is_npu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True
        )


_register()

from . import distributed  # noqa: E402,F401  (registers the "hccl" torch.distributed backend)
from . import ipc  # noqa: E402,F401  (npu tensors through torch.multiprocessing)
from . import compiler  # noqa: E402  (torch.compile: dynamo's device interface, the "npu" backend)

compiler.register()
