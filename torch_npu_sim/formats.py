"""ACL storage formats (torch_npu's ``npu_format_cast`` / ``get_npu_format``) kept as metadata of a storage.

On Ascend a tensor's storage can be laid out in a private format (FRACTAL_NZ for matmul weights, NC1HWC0
for convolution activations...). The simulated device computes on the logical (ND/NCHW) layout only, so
here a format is what it is to the user: a property of the storage that ``get_npu_format`` reports, that
views share, and that a cast to another format changes on a new storage, as on torch_npu. Values are
never changed by a cast.
"""
import weakref

import torch

__all__ = ["npu_format_cast", "npu_format_cast_", "get_npu_format", "Format"]


class Format:
    """ACL's format codes (aclFormat), as torch_npu's ``acl_format`` arguments take them."""
    UNDEFINED = -1
    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1HWC0_C04 = 12
    HWCN = 16
    NDHWC = 27
    FRACTAL_NZ = 29
    NCDHW = 30
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    NC = 35
    NCL = 47


_NAMES = {v: k for k, v in vars(Format).items() if not k.startswith("_") and k != "UNDEFINED"}
# Formats that only describe tensors of one rank.
_RANK = {Format.NCHW: 4, Format.NHWC: 4, Format.NC1HWC0: 4, Format.FRACTAL_Z: 4, Format.NC1HWC0_C04: 4,
         Format.HWCN: 4, Format.NDHWC: 5, Format.NCDHW: 5, Format.NDC1HWC0: 5, Format.FRACTAL_Z_3D: 5,
         Format.NC: 2, Format.NCL: 3}

# storage -> format; an entry goes with its storage (the storage's Python object lives as long as it does).
_formats: "weakref.WeakKeyDictionary[torch.UntypedStorage, int]" = weakref.WeakKeyDictionary()


def _check_npu(op: str, t, arg: str = "self") -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: expected argument '{arg}' to be a Tensor, got {type(t).__name__}")
    if t.device.type != "npu":
        raise RuntimeError(f"{op}: expected argument '{arg}' on an npu device, got a tensor on {t.device}")


def _base_format(t: torch.Tensor) -> int:
    # torch_npu's default for a new tensor: NCHW for 4-D, NCDHW for 5-D, ND otherwise
    return {4: Format.NCHW, 5: Format.NCDHW}.get(t.dim(), Format.ND)


def get_npu_format(self: torch.Tensor) -> int:
    """The ACL format code of ``self``'s storage (``torch_npu.get_npu_format``)."""
    _check_npu("get_npu_format", self)
    return _formats.get(self.untyped_storage(), _base_format(self))


def _target(op: str, self: torch.Tensor, acl_format) -> int:
    if isinstance(acl_format, torch.Tensor):  # the overload taking a tensor whose format to copy
        _check_npu(op, acl_format, "dst")
        return get_npu_format(acl_format)
    if isinstance(acl_format, bool) or not isinstance(acl_format, int):
        raise TypeError(f"{op}: expected argument 'acl_format' to be an int ACL format code, "
                        f"got {type(acl_format).__name__}")
    if acl_format not in _NAMES:
        known = ", ".join(f"{v} ({n})" for v, n in sorted(_NAMES.items()))
        raise ValueError(f"{op}: acl_format {acl_format} is not an ACL format code; expected one of {known}")
    rank = _RANK.get(acl_format)
    if rank is not None and self.dim() != rank:
        raise ValueError(f"{op}: format {_NAMES[acl_format]} describes {rank}-D tensors, got a tensor with "
                         f"{self.dim()} dimensions (shape {tuple(self.shape)})")
    return acl_format


def npu_format_cast(self: torch.Tensor, acl_format) -> torch.Tensor:
    """``self`` in format ``acl_format`` (an int code or a tensor whose format to take): ``self`` itself
    when it is already in that format, else a copy on a new storage (differentiable), as on torch_npu."""
    _check_npu("npu_format_cast", self)
    fmt = _target("npu_format_cast", self, acl_format)
    if get_npu_format(self) == fmt:
        return self
    out = self.clone(memory_format=torch.contiguous_format)
    _formats[out.untyped_storage()] = fmt
    return out


def npu_format_cast_(self: torch.Tensor, acl_format) -> torch.Tensor:
    """In-place form: ``self``'s storage takes the format (its values and layout are unchanged)."""
    _check_npu("npu_format_cast_", self)
    _formats[self.untyped_storage()] = _target("npu_format_cast_", self, acl_format)
    return self


def _install_tensor_methods() -> None:
    # torch_npu adds these as Tensor methods too: x.npu_format_cast(29)
    if not hasattr(torch.Tensor, "npu_format_cast"):
        torch.Tensor.npu_format_cast = npu_format_cast
        torch.Tensor.npu_format_cast_ = npu_format_cast_


_install_tensor_methods()
