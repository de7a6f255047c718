"""torch_npu's public API and what of it the simulator implements (the README's coverage table).

``PUBLIC`` is torch_npu's list: its Python-level names and the custom operators that Ascend's op-plugin
(``op_plugin/config/op_plugin_functions.yaml``, sections other than ``official``) exposes as
``torch_npu.<name>``. A listed name that ``torch_npu`` does not define raises NotImplementedError naming it.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class NotImplementedOnSimulator(AttributeError, NotImplementedError):
    """A torch_npu name the simulator does not implement (an AttributeError too, so hasattr() is False)."""


def _load():
    names = set()
    with open(os.path.join(_HERE, "torch_npu_api.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line.split()[0])
    return frozenset(names)


PUBLIC = _load()


def missing(name: str):
    if name in PUBLIC:
        raise NotImplementedOnSimulator(
            f"torch_npu.{name} is part of torch_npu's API but is not implemented by torch_npu_sim "
            "(README: 'torch_npu coverage' lists what is)")
    raise AttributeError(f"module 'torch_npu' has no attribute '{name}'")


def coverage():
    """{'implemented': [...], 'missing': [...]} over PUBLIC."""
    import torch_npu
    have = set(vars(torch_npu))
    return {"implemented": sorted(PUBLIC & have), "missing": sorted(PUBLIC - have)}
