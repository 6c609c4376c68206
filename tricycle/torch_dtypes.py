"""torch's questions about dtypes and shapes: ``finfo`` and ``iinfo`` (a dtype's limits),
``Size`` (a shape), ``promote_types``, ``result_type`` and ``can_cast`` (torch's promotion
and casting rules), ``set_default_tensor_type`` and ``is_storage``.

A tricycle dtype is numpy's scalar type (``tricycle.float32`` is ``numpy.float32``,
``tricycle.bfloat16`` ml_dtypes'), so these take one (or anything ``dtype=`` takes) and
answer with one. torch's promotion differs from numpy's where a float meets an integer:
torch keeps the float (int64 with float16 is float16; numpy says float64), and float16 with
bfloat16 is float32. ``result_type`` adds torch's rule for 0-d tensors and Python numbers:
they raise the result's kind (bool < integer < float) but not its size within a kind
(``result_type(int32 tensor, 5)`` is int32, ``result_type(int tensor, 1.0)`` the default
float, float32), which is the rule tricycle's arithmetic follows.
"""

import math
import numbers

import numpy as np

from tricycle import backend, checks
from tricycle.tensor import Tensor
from tricycle.tensor_extra import Storage


def _dtype(op: str, dtype) -> np.dtype:
    return backend.numeric_dtype(backend.DEFAULT_FLOAT if dtype is None else dtype, op)


class finfo:  # noqa: N801 - torch's name
    """torch.finfo: the limits of a float dtype (the default, float32, for None): ``bits``,
    ``eps`` (the gap from 1 to the next float), ``max``, ``min``, ``tiny`` and its alias
    ``smallest_normal`` (the smallest positive normal), ``resolution`` (10^-digits) and
    ``dtype`` (its name), as Python numbers."""

    def __init__(self, type=None):  # noqa: A002 - torch's name
        dtype = _dtype("finfo", type)
        if not backend.is_float(dtype):
            raise TypeError(f"finfo: needs a floating point dtype, got {dtype} (iinfo takes "
                            "integer dtypes)")  # fmt: skip
        if dtype.kind == "f" and not backend.is_float8(dtype):
            info = np.finfo(dtype)
        else:  # bfloat16, float8: ml_dtypes' finfo (ml_dtypes made the dtype, so is imported)
            import ml_dtypes  # noqa: PLC0415

            info = ml_dtypes.finfo(dtype)
        self.bits, self.dtype = int(info.bits), str(dtype)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.eps = _TORCH_EPS.get(self.dtype, self.eps)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -math.floor(info.nmant * math.log10(2))  # 10^-digits10

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")  # fmt: skip


class iinfo:  # noqa: N801 - torch's name
    """torch.iinfo: the limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints)
    and ``dtype`` (its name). bool is refused, as torch refuses it."""

    def __init__(self, type):  # noqa: A002 - torch's name
        dtype = _dtype("iinfo", type)
        if dtype.kind == "b":
            raise TypeError("iinfo: bool is not supported (it has no integer limits)")
        if dtype.kind not in "iu":
            raise TypeError(f"iinfo: needs an integer dtype, got {dtype} (finfo takes float "
                            "dtypes)")  # fmt: skip
        info = np.iinfo(dtype)
        self.bits, self.max, self.min, self.dtype = (
            int(info.bits),
            int(info.max),
            int(info.min),
            str(dtype),
        )

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class Size(tuple):
    """torch.Size: a shape, a tuple of ints (``x.shape == tricycle.Size([2, 3])`` holds);
    ``numel()`` is the product of its sizes; slices and sums stay Sizes."""

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for i, size in enumerate(sizes):
            if not checks.is_integer(size):
                raise TypeError(f"Size: takes an iterable of int (item {i} is "
                                f"{type(size).__name__!r})")  # fmt: skip
        return super().__new__(cls, (int(size) for size in sizes))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __repr__(self) -> str:
        return f"tricycle.Size({list(self)})"


def _kind(dtype: np.dtype) -> int:
    """0 bool, 1 integer, 2 float: the order in which torch's promotion raises a kind."""
    return 2 if backend.is_float(dtype) else (0 if dtype.kind == "b" else 1)


_WIDE_UNSIGNED = {np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)}
# torch's finfo(float8_e5m2fnuz).eps is 2^-3, not the 2^-2 of its 2 mantissa bits (ml_dtypes')
_TORCH_EPS = {"float8_e5m2fnuz": 0.125}


def _promoted(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    if backend.is_float8(a) or backend.is_float8(b):
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{a} and {b}")  # fmt: skip
    if _kind(a) != 2 and _kind(b) != 2 and {a, b} & _WIDE_UNSIGNED:
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {a} and {b}")  # fmt: skip
    if _kind(a) != _kind(b):  # the higher kind's dtype: a float beside an integer or bool
        return a if _kind(a) > _kind(b) else b
    if _kind(a) == 2 and {a.itemsize, b.itemsize} == {2}:  # float16 and bfloat16
        return np.dtype(np.float32)
    if _kind(a) == 2:
        return a if a.itemsize > b.itemsize else b
    if a.kind == "u" and b.kind == "u" or a.kind == "i" and b.kind == "i":
        return a if a.itemsize > b.itemsize else b
    return np.promote_types(a, b)  # uint8 with a signed integer: the next signed size


def promote_types(type1, type2):
    """torch.promote_types: the smallest dtype both cast to safely, by torch's table: the
    float of a float and an integer or bool (int64 and float16 give float16), float32 for
    float16 and bfloat16, else the larger (uint8 and int8 give int16)."""
    return _promoted(_dtype("promote_types", type1), _dtype("promote_types", type2)).type


def _operand(value) -> tuple[int, np.dtype]:
    """torch's priority of an operand of ``result_type`` (2 a tensor with axes, 1 a 0-d
    tensor, 0 a Python number) and its dtype (a Python float: the default float)."""
    if isinstance(value, Tensor):
        return (2 if value.ndim else 1), value.dtype
    if isinstance(value, bool):
        return 0, np.dtype(np.bool_)
    if isinstance(value, numbers.Integral):
        return 0, np.dtype(np.int64)
    if isinstance(value, numbers.Real):
        return 0, np.dtype(backend.DEFAULT_FLOAT)
    raise TypeError(f"result_type: operands must be Tensors or Python numbers, got "
                    f"{type(value).__name__}")  # fmt: skip


def result_type(tensor1, tensor2):
    """torch.result_type: the dtype of an arithmetic op of ``tensor1`` and ``tensor2`` (Tensors
    or Python numbers): of the tensors with axes, else of the 0-d tensors, else of the
    numbers, raised to the kind (bool < integer < float) of a lower group if that is higher.
    Two numbers are refused, as torch refuses them."""
    operands = [_operand(tensor1), _operand(tensor2)]
    if all(priority == 0 for priority, _ in operands):
        raise TypeError("result_type: needs at least one Tensor (got two Python numbers)")
    result = None
    for priority in (2, 1, 0):  # the highest group first; a lower one can only raise the kind
        group = [dtype for p, dtype in operands if p == priority]
        if not group:
            continue
        dtype = group[0] if len(group) == 1 else _promoted(*group)
        if result is None:
            result = dtype
        elif _kind(dtype) > _kind(result):  # torch: float beats integer beats bool
            result = _promoted(result, dtype)
    return result.type


def can_cast(from_, to) -> bool:
    """torch.can_cast: whether torch's casting rule allows ``from_`` to ``to`` in an op's
    output: not a float to an integer or bool, nor an integer to bool; any size within a kind
    (float64 to float16 is allowed)."""
    source, target = _dtype("can_cast", from_), _dtype("can_cast", to)
    return _kind(source) <= _kind(target)


# torch's float tensor types by name: the dtype each makes the default
_FLOAT_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                "BFloat16Tensor": "bfloat16"}  # fmt: skip


def set_default_tensor_type(t) -> None:
    """torch.set_default_tensor_type (deprecated in torch): ``FloatTensor`` (the constructor,
    or its name ``"torch.FloatTensor"``) is tricycle's fixed default and is accepted; another
    float type is ``set_default_dtype``'s ValueError, a GPU type (``"torch.cuda.FloatTensor"``)
    a ValueError naming ``device=``, anything else a TypeError, as torch's."""
    op = "set_default_tensor_type"
    if isinstance(t, str):
        name, dtype = t, _FLOAT_TYPES.get(t.rpartition(".")[2])
    else:  # tricycle.FloatTensor ...: a constructor holding its dtype
        name, dtype = getattr(t, "__name__", repr(t)), getattr(t, "dtype", None)
        dtype = str(dtype) if isinstance(dtype, np.dtype) and backend.is_float(dtype) else None
    if ".cuda." in name:
        raise ValueError(f"{op}: {name!r} is a GPU type: tricycle makes tensors on the host "
                         "unless given device= (or moved with .to('cuda'))")  # fmt: skip
    if dtype is None:
        raise TypeError(f"{op}: only floating-point types are supported as the default type, "
                        f"got {t!r}")  # fmt: skip
    if dtype != str(np.dtype(backend.DEFAULT_FLOAT)):
        raise ValueError(f"{op}: {name} makes {dtype}, not float32, tricycle's fixed default "
                         "(pass dtype= to a factory, or .to(dtype))")  # fmt: skip


def __getattr__(name: str):
    """torch's float8 dtypes (``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz``,
    ``float8_e5m2fnuz``): ml_dtypes' scalar types, imported on first use."""
    if name in backend.FLOAT8:
        return backend.ml_dtype(name, f"tricycle.{name}").type
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_storage(obj) -> bool:
    """torch.is_storage: whether ``obj`` is a storage (``x.storage()``, a ``Storage``)."""
    return isinstance(obj, Storage)


__all__ = [
    "Size",
    "can_cast",
    "finfo",
    "iinfo",
    "is_storage",
    "promote_types",
    "result_type",
    "set_default_tensor_type",
]
