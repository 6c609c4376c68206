"""``torch.types``: the type aliases torch's own signatures and typed user code annotate with
(``from torch.types import Number, Device``), as tricycle's types.

``Number`` is ``int | float | bool`` as torch's; the underscored aliases (``_int``,
``_float``, ``_dtype``, ``_device``, ``_size``, ...) name Python's and tricycle's types
(``tricycle.dtype``, ``tricycle.device``, ``tricycle.Size``, ``tricycle.layout``).
tricycle has no symbolic shapes, so ``SymInt``, ``SymFloat`` and ``SymBool`` are ``int``,
``float`` and ``bool``, and the ``*LikeType`` aliases the plain types. No storage type:
tricycle's tensors hold arrays."""

import os
from collections.abc import Sequence
from typing import IO, TypeAlias

from tricycle.backend import device
from tricycle.tensor import Tensor
from tricycle.torch_dtypes import Size
from tricycle.torch_misc import dtype, layout

_bool: TypeAlias = bool
_int: TypeAlias = int
_float: TypeAlias = float
_complex: TypeAlias = complex
_str: TypeAlias = str
_bytes: TypeAlias = bytes
_dtype: TypeAlias = dtype
_device: TypeAlias = device
_layout: TypeAlias = layout
_size: TypeAlias = Size | list[int] | tuple[int, ...]

SymInt: TypeAlias = int
SymFloat: TypeAlias = float
SymBool: TypeAlias = bool
IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
_symsize: TypeAlias = Size | Sequence[int]

Number: TypeAlias = int | float | bool
_Number = (int, float, bool)  # torch's: the tuple, for isinstance
Device: TypeAlias = device | str | int | None
FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]

__all__ = [
    "BoolLikeType", "Device", "FileLike", "FloatLikeType", "IntLikeType", "Number", "Size",
    "SymBool", "SymFloat", "SymInt", "Tensor",
]  # fmt: skip
