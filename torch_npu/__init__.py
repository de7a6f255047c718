"""``import torch_npu`` on the simulated NPU: torch_npu's Python API over torch_npu_sim.

Code written for Ascend imports ``torch_npu`` and calls ``torch.npu.*``, ``torch_npu.npu_*`` fused ops,
``torch_npu.npu_format_cast``, ``torch_npu.profiler`` and ``torch_npu.contrib.transfer_to_npu``; here
these run on the simulated device. A name of torch_npu's public API that the simulator does not
implement raises ``NotImplementedError`` naming it (it is also an ``AttributeError``, so ``hasattr``
answers False, as libraries probing for optional ops expect). ``torch_npu._api.coverage()`` lists both.
"""
import sys

import torch

import torch_npu_sim
from torch_npu_sim import npu  # torch_npu.npu is torch.npu
from torch_npu_sim.formats import Format, get_npu_format, npu_format_cast, npu_format_cast_  # noqa: F401
from torch_npu_sim.fused_ops import *  # noqa: F401,F403
from torch_npu_sim.fused_ops import __all__ as _fused_all
from torch_npu_sim.fused_ops import npu_fast_gelu as fast_gelu  # torch_npu has both spellings

from . import _api

__version__ = "2.13.0+sim"  # the torch release this package pairs with, as torch_npu's versions do

# `import torch_npu.npu`, `from torch_npu.npu import amp` and `import torch_npu.npu.amp` resolve to torch.npu
for _name, _mod in list(sys.modules.items()):
    if _name == "torch_npu_sim.npu" or _name.startswith("torch_npu_sim.npu."):
        sys.modules["torch_npu" + _name[len("torch_npu_sim"):]] = _mod

from . import profiler  # noqa: E402
from . import contrib  # noqa: E402,F401

__all__ = ["npu", "profiler", "contrib", "fast_gelu", "Format", "get_npu_format", "npu_format_cast", "npu_format_cast_",
           *_fused_all]


def __getattr__(name: str):
    return _api.missing(name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
