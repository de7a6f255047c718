"""torch.npu random-state API over the per-device generators (counter-based, in C++)."""
from typing import Iterable, Union

import torch

from .. import _C

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "default_generators"]


def _generator(device=None) -> torch.Generator:
    torch.npu._lazy_init()
    if device is None:
        index = torch.npu.current_device()
    elif isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        index = device.index if device.index is not None else torch.npu.current_device()
    return _C._get_default_generator(index)


def default_generators():
    return tuple(_generator(i) for i in range(torch.npu.device_count()))


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(torch.npu.device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    s = _generator(0).seed()
    for i in range(1, torch.npu.device_count()):
        _generator(i).manual_seed(s)


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device: Union[int, str, torch.device] = "npu") -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: Union[int, str, torch.device] = "npu") -> None:
    _generator(device).set_state(new_state.clone())


def get_rng_state_all():
    return [get_rng_state(i) for i in range(torch.npu.device_count())]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
