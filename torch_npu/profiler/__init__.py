"""torch_npu.profiler: torch_npu's profiler names over torch.profiler (activities CPU and NPU).

``torch_npu.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.NPU], schedule=...,
on_trace_ready=tensorboard_trace_handler(dir), experimental_config=_ExperimentalConfig(...))`` is
accepted with torch_npu's arguments and runs torch's profiler on npu. The Ascend-only collection options
of ``_ExperimentalConfig`` (AI Core metrics, L2 cache, msprof) have no simulated counterpart; they are
validated and kept on the profile object, and the trace is torch's chrome trace.
"""
import torch
from torch.profiler import ProfilerAction, ProfilerActivity, record_function, schedule  # noqa: F401

__all__ = ["profile", "ProfilerActivity", "ProfilerAction", "schedule", "tensorboard_trace_handler",
           "record_function", "supported_activities", "ProfilerLevel", "AiCMetrics", "ExportType",
           "_ExperimentalConfig"]


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"


class ExportType:
    Text = "text"
    Db = "db"


def _values(cls):
    return {v for k, v in vars(cls).items() if not k.startswith("_")}


class _ExperimentalConfig:
    """torch_npu's experimental_config: which extra Ascend data to collect."""

    def __init__(self, profiler_level=ProfilerLevel.Level0, aic_metrics=AiCMetrics.AiCoreNone, l2_cache=False,
                 op_attr=False, data_simplification=True, record_op_args=False, export_type=ExportType.Text,
                 msprof_tx=False, **kwargs):
        for arg, value, cls in (("profiler_level", profiler_level, ProfilerLevel),
                                ("aic_metrics", aic_metrics, AiCMetrics)):
            if value not in _values(cls):
                raise ValueError(f"_ExperimentalConfig: {arg} {value!r} is not one of {sorted(_values(cls))}")
        types = export_type if isinstance(export_type, (list, tuple)) else [export_type]
        for t in types:
            if t not in _values(ExportType):
                raise ValueError(f"_ExperimentalConfig: export_type {t!r} is not one of {sorted(_values(ExportType))}")
        self.profiler_level = profiler_level
        self.aic_metrics = aic_metrics
        self.l2_cache = bool(l2_cache)
        self.op_attr = bool(op_attr)
        self.data_simplification = bool(data_simplification)
        self.record_op_args = bool(record_op_args)
        self.export_type = list(types)
        self.msprof_tx = bool(msprof_tx)
        self.extra = dict(kwargs)


def supported_activities():
    return [ProfilerActivity.CPU, ProfilerActivity.NPU]


def tensorboard_trace_handler(dir_name: str = None, worker_name: str = None, analyse_flag: bool = True,
                              async_mode: bool = False):
    """Writes each finished trace as ``<dir_name>/<worker_name>.<time>.pt.trace.json`` (torch's handler; the
    Ascend post-processing that ``analyse_flag`` controls does not exist here)."""
    return torch.profiler.tensorboard_trace_handler(dir_name or "./", worker_name)


class profile(torch.profiler.profile):
    """torch_npu.profiler.profile: torch.profiler.profile taking torch_npu's arguments."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None, **kwargs):
        if experimental_config is not None and not isinstance(experimental_config, _ExperimentalConfig):
            raise TypeError("torch_npu.profiler.profile: experimental_config must be a "
                            f"torch_npu.profiler._ExperimentalConfig, got {type(experimental_config).__name__}")
        if use_cuda:
            raise ValueError("torch_npu.profiler.profile: use_cuda is not supported on npu; "
                             "pass activities=[ProfilerActivity.CPU, ProfilerActivity.NPU]")
        if activities is None:
            activities = supported_activities()
        super().__init__(activities=activities, schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules, **kwargs)
        self.npu_experimental_config = experimental_config or _ExperimentalConfig()
