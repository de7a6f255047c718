"""torch.npu.amp: torch_npu's spellings of autocast and GradScaler for the npu device."""
import torch

__all__ = ["autocast", "GradScaler"]


class autocast(torch.amp.autocast_mode.autocast):
    """``torch.npu.amp.autocast(...)`` == ``torch.autocast("npu", ...)`` (default dtype float16)."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("npu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.npu.amp.GradScaler(...)`` == ``torch.amp.GradScaler("npu", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
