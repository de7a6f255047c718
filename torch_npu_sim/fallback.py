"""Which ops ran on the CPU fallback instead of a native npu kernel."""
from . import _C


def fallback_ops():
    """Ops that fell back to the CPU since start (or the last reset), e.g. ``{"aten::addmm": 12}``."""
    return dict(_C._fallback_ops())


def reset_fallback_ops():
    """Forget the ops recorded so far (the once-per-op warning is shown again afterwards)."""
    _C._reset_fallback_ops()
