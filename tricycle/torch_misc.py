"""torch's top-level odds and ends that a PyTorch script reaches for beside its math:

- the types of torch's enum-like objects: ``dtype`` (tricycle's dtypes are numpy's scalar
  types and dtypes, so ``dtype`` is the class they are all instances of:
  ``isinstance(x.dtype, tricycle.dtype)`` and ``isinstance(tricycle.float32,
  tricycle.dtype)`` hold, as torch's do), ``layout`` with ``strided`` (dense tensors),
  ``sparse_coo`` and ``sparse_csr`` (``tricycle.sparse``'s), ``memory_format`` with
  ``contiguous_format``, ``channels_last``, ``channels_last_3d`` and ``preserve_format``
  (what ``Tensor.contiguous`` and ``to`` take);
- ``concat`` (``cat``), ``newaxis`` (None), the queries ``is_same_size``, ``is_signed``,
  ``is_inference``, ``get_device`` and ``typename``, and the conjugate and negative bits
  (``is_conj``/``is_neg`` are False and ``resolve_conj``/``resolve_neg`` the tensor itself:
  tricycle's tensors are real and carry no lazy bits);
- the symbolic-shape helpers (``sym_int``, ``sym_float``, ``sym_max``, ``sym_min``,
  ``sym_not``, ``sym_sum``, ``sym_sqrt``, ``sym_ite``) on plain Python numbers, as torch's
  eager ones, and the control-flow operators ``cond`` and ``while_loop``, run eagerly (one
  branch, the loop in Python) with torch's argument checks;
- ``from_dlpack`` and ``to_dlpack``: numpy and cupy arrays, torch's tensors and anything that
  speaks DLPack become tensors sharing their memory;
- the top-level in-place functions torch has whose Tensor method tricycle has
  (``tricycle.abs_(x)`` is ``x.abs_()``: ``INPLACE``), made from the list below;
- the build flags ``has_lapack``, ``has_mkl``, ``has_openmp``, ``has_spectral`` (True: numpy
  and cupy provide what each names) and ``compiled_with_cxx11_abi`` (True).
"""

import math
import numbers
import sys

import numpy as np

from tricycle import backend, checks, ops
from tricycle.graph import Node
from tricycle.tensor import Tensor
from tricycle.torch_functions import tensor_input

newaxis = None
has_lapack = has_mkl = has_openmp = has_spectral = True
concat = ops.cat  # torch.concat, cat's alias


def compiled_with_cxx11_abi() -> bool:
    """torch.compiled_with_cxx11_abi: True (tricycle builds no C++ extension against it)."""
    return True


# ---------------------------------------------------------------------- enum-like types
class _DtypeType(type):
    def __instancecheck__(cls, value) -> bool:
        if isinstance(value, np.dtype):
            return True
        return isinstance(value, type) and issubclass(value, np.generic)


class dtype(metaclass=_DtypeType):  # noqa: N801 - torch's name
    """torch.dtype: the type of tricycle's dtypes, numpy's (``tricycle.float32`` is
    ``numpy.float32``, ``x.dtype`` a ``numpy.dtype``): both are instances, for annotations
    and ``isinstance`` checks. Not made directly, as torch's."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'tricycle.dtype' instances: use tricycle.float32, ...")


class _Named:
    """One named value of an enum-like type of torch's, shown as torch shows it."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"tricycle.{self.name}"

    def __reduce__(self):
        return self.name  # a pickle refers to this module's value of the name


class layout(_Named):  # noqa: N801 - torch's name
    """torch.layout: a tensor's memory layout: ``strided`` (dense), ``sparse_coo`` or
    ``sparse_csr``."""


class memory_format(_Named):  # noqa: N801 - torch's name
    """torch.memory_format: the order of a tensor's axes in memory, for ``Tensor.contiguous``,
    ``Tensor.to`` and ``Tensor.is_contiguous``."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


# ---------------------------------------------------------------------- queries
def is_same_size(input, other) -> bool:  # noqa: A002 - torch's names
    """torch.is_same_size: whether the two tensors have one shape."""
    return tensor_input("is_same_size", input).is_same_size(tensor_input("is_same_size", other,
                                                                         "other"))  # fmt: skip


def is_signed(input) -> bool:  # noqa: A002
    """torch.is_signed: whether the tensor's dtype holds negative numbers."""
    return tensor_input("is_signed", input).is_signed()


def is_inference(input) -> bool:  # noqa: A002
    """torch.is_inference: False (``Tensor.is_inference`` says why)."""
    return tensor_input("is_inference", input).is_inference()


def get_device(input) -> int:  # noqa: A002
    """torch.get_device: the tensor's GPU index, or -1 on the host."""
    return tensor_input("get_device", input).get_device()


def is_conj(input) -> bool:  # noqa: A002
    """torch.is_conj: False: a real tensor carries no lazy conjugation."""
    tensor_input("is_conj", input)
    return False


def is_neg(input) -> bool:  # noqa: A002
    """torch.is_neg: False: tricycle's tensors carry no lazy negation."""
    tensor_input("is_neg", input)
    return False


def resolve_conj(input):  # noqa: A002
    """torch.resolve_conj: the tensor itself (no conjugation to apply)."""
    return tensor_input("resolve_conj", input)


def resolve_neg(input):  # noqa: A002
    """torch.resolve_neg: the tensor itself (no negation to apply)."""
    return tensor_input("resolve_neg", input)


def typename(obj, /) -> str:
    """torch.typename: a tensor's type name (``"tricycle.FloatTensor"``, ``Tensor.type``), else
    the object's class with its module (``"tricycle.nn.linear.Linear"``; builtins bare)."""
    if isinstance(obj, Node):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "builtins")
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


# ---------------------------------------------------------------------- symbolic numbers
def _number(op: str, value, name: str = "a"):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        checks.fail(op, name, "an int or a float", value, TypeError)
    return value


def sym_int(a) -> int:
    """torch.sym_int: ``a`` as an int, truncated toward zero."""
    return int(a)


def sym_float(a) -> float:
    """torch.sym_float: ``a`` as a float."""
    return float(a)


def sym_max(a, b):
    """torch.sym_max: the larger number, a float if either is one (as torch's)."""
    a, b = _number("sym_max", a), _number("sym_max", b, "b")
    larger = max(a, b)
    return float(larger) if isinstance(a, float) or isinstance(b, float) else larger


def sym_min(a, b):
    """torch.sym_min: the smaller number, a float if either is one (as torch's)."""
    a, b = _number("sym_min", a), _number("sym_min", b, "b")
    smaller = min(a, b)
    return float(smaller) if isinstance(a, float) or isinstance(b, float) else smaller


def sym_not(a):
    """torch.sym_not: ``not a`` for a bool; a tensor's ``logical_not``."""
    if isinstance(a, Node):
        return a.logical_not()
    if not isinstance(a, bool | np.bool_):
        checks.fail("sym_not", "a", "a bool or a Tensor", a, TypeError)
    return not a


def sym_sum(*args):
    """torch.sym_sum: the sum of the numbers given (one iterable of them, or several)."""
    values = args[0] if len(args) == 1 and not isinstance(args[0], numbers.Number) else args
    return sum(values)


def sym_sqrt(a) -> float:
    """torch.sym_sqrt: the square root of a number, a float."""
    return math.sqrt(a)


def sym_ite(b, t, f):
    """torch.sym_ite: ``t`` if the bool ``b``, else ``f``."""
    if not isinstance(b, bool | np.bool_):
        checks.fail("sym_ite", "b", "a bool", b, TypeError)
    return t if b else f


# ---------------------------------------------------------------------- control flow
def _predicate(op: str, pred) -> bool:
    """``pred`` as a bool: a Python bool or number, or a one-element tensor (torch's rule)."""
    if isinstance(pred, Node):
        if pred.size != 1:
            raise RuntimeError(f"{op}: expected pred to be bool or single-element tensor, but "
                               f"got a tensor of shape {pred.shape}")  # fmt: skip
        return bool(pred.array.reshape(()).item())
    if not isinstance(pred, bool | int | float | np.bool_):
        raise RuntimeError(f"{op}: expected pred to be bool or tensor, but got {pred!r}")
    return bool(pred)


def _operands(op: str, name: str, operands) -> tuple:
    if not isinstance(operands, tuple | list):
        checks.fail(op, name, "a tuple or list of operands", type(operands), TypeError)
    return tuple(operands)


def cond(pred, true_fn, false_fn, operands=()):
    """torch.cond: ``true_fn(*operands)`` if ``pred`` (a bool or a one-element tensor), else
    ``false_fn(*operands)``, run eagerly as torch's is outside compilation; the branch's
    gradient is its own."""
    for name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        checks.function("cond", name, fn)
    operands = _operands("cond", "operands", operands)
    return (true_fn if _predicate("cond", pred) else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """torch.while_loop: ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` (a bool
    or a one-element tensor), from ``carried_inputs`` (a tuple or list); returns the last
    carried values as a tuple. ``body_fn`` must return as many values as it takes."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("while_loop: expect cond_fn and body_fn to be callable")
    carried = _operands("while_loop", "carried_inputs", carried_inputs)
    while _predicate("while_loop", cond_fn(*carried)):
        out = body_fn(*carried)
        if not isinstance(out, tuple | list) or len(out) != len(carried):
            raise RuntimeError(
                f"while_loop: body_fn must return a tuple of {len(carried)} "
                f"values (the carried inputs'), got {type(out).__name__}"
                f"{f' of {len(out)}' if isinstance(out, tuple | list) else ''}"
            )
        carried = tuple(out)
    return carried


# ---------------------------------------------------------------------- DLPack
class _Exported:
    """What ``to_dlpack`` returns: the tensor's array behind the DLPack protocol
    (``__dlpack__`` gives the capsule, once, to the consumer)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def to_dlpack(tensor):
    """torch.to_dlpack: the tensor's values for another library (``numpy.from_dlpack``,
    ``cupy.from_dlpack``, ``torch.from_dlpack``, ``tricycle.from_dlpack``), sharing memory.
    Where torch's returns the capsule itself, this returns an object whose ``__dlpack__``
    gives it, as numpy's and cupy's consumers ask."""
    return _Exported(tensor_input("to_dlpack", tensor, "tensor").array)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """torch.from_dlpack: a tensor sharing the memory of any object that speaks DLPack (a
    numpy or cupy array, a torch tensor, ``to_dlpack``'s result, a tricycle Tensor), on the
    host for a host array and on its GPU for a CUDA one (cupy's). ``copy=True`` copies;
    ``device`` moves the result (``Tensor.to``)."""
    if isinstance(ext_tensor, Node):
        ext_tensor = ext_tensor.array
    if not hasattr(ext_tensor, "__dlpack__") or not hasattr(ext_tensor, "__dlpack_device__"):
        checks.fail(
            "from_dlpack",
            "ext_tensor",
            "an object with __dlpack__ and __dlpack_device__ (a DLPack exporter)",
            type(ext_tensor),
            TypeError,
        )
    array = backend.from_dlpack(ext_tensor)
    if copy:
        array = array.copy()
    out = Tensor(array, requires_grad=False)
    return out if device is None else out.to(device)


# ---------------------------------------------------------------------- in-place functions
# torch's top-level ``name_`` functions whose Tensor method tricycle has (dir(torch) against
# dir(tricycle.Tensor)): each calls the method
INPLACE = (
    "abs_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asinh_ atanh_ "
    "ceil_ clamp_ clamp_max_ clamp_min_ clip_ deg2rad_ detach_ erf_ erfc_ exp2_ expm1_ fill_ "
    "fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ resize_as_ round_ rsqrt_ sigmoid_ sinc_ "
    "square_ trunc_ xlogy_"
).split()


def _inplace(name: str):
    def function(input, *args, **kwargs):  # noqa: A002 - torch's names
        return getattr(tensor_input(name, input), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}: ``input.{name}(...)``, in place."
    return function


_module = sys.modules[__name__]
for _name in INPLACE:
    setattr(_module, _name, _inplace(_name))
