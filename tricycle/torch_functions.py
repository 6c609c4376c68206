"""torch's top-level functions that a PyTorch script calls, on tricycle's engine.

``torch.tensor``, ``torch.matmul``, ``torch.argmax``, ``torch.set_grad_enabled`` ... under
torch's names, argument names (``input``, ``dim``, ``keepdim``) and meanings, each a thin call
of the op or ``Tensor`` method that already computes it (``tricycle.ops``, ``binary``,
``einsum``, ``factories``, ``tensor_torch``): no formula lives here, and every gradient is the
called op's. A port writes ``tricycle.matmul(a, b)`` where it wrote ``torch.matmul(a, b)``.

Where torch and tricycle differ:

- ``out=`` is refused (a TypeError): tricycle's ops return new tensors, so write
  ``y = tricycle.matmul(a, b)``.
- ``empty`` gives zeros (torch leaves the memory as it was: a script must write it before
  reading it in either library), and so do the legacy ``FloatTensor(*sizes)``, ``LongTensor``
  ... (which, given data, copy it in their dtype).
- ``clamp`` takes number bounds (``Tensor.clamp``); a tensor bound is refused, naming
  ``tricycle.maximum``/``minimum``.
- ``max``/``min`` along ``dim``: torch's ``(values, indices)``; along numpy's ``axis``: the values.
- ``randperm`` draws from tricycle's generator (``tricycle.manual_seed``), or a numpy
  ``Generator`` passed in: the order repeats under a seed, but it is not torch's permutation.

torch's grad modes (``set_grad_enabled``, ``enable_grad``, ``inference_mode``) are
``tricycle.grad_modes``'; its reductions, rounding and distances ``tricycle.torch_math``'s,
its indexing functions (``scatter``, ``diag``, ``unique`` ...) ``tricycle.torch_indexing``'s,
its random draws and ``Generator`` ``tricycle.torch_random``'s. The default float dtype is
float32, fixed: ``set_default_dtype`` takes float32 alone, and ``dtype=`` gives any other.
"""

import numpy as np

from tricycle import backend, binary, checks, ops, reduce
from tricycle import random as tricycle_random
from tricycle.backend import parse_device
from tricycle.einsum import einsum
from tricycle.factories import zeros
from tricycle.graph import Node
from tricycle.tensor import Tensor, to_tensor


def tensor_input(op: str, value, name: str = "input") -> Tensor:
    """``value`` if it is a Tensor; else a TypeError naming ``op`` (torch's functions take
    tensors, and a silent conversion would hide a port's mistake). The torch_* modules' check."""
    if not isinstance(value, Node):
        checks.fail(op, name, "a Tensor", value, TypeError)
    return value


def operand(op: str, input, other) -> Tensor:  # noqa: A002
    """``input`` of torch's arithmetic functions: a Tensor, or a Python number (torch.add(1.5,
    2.5) is tensor(4.)) made a 0-d tensor on ``other``'s device, in ``other``'s dtype where the
    number's kind fits it (torch's wrapped numbers: 2 - an int32 tensor stays int32), else in
    the number's own (int64, float32, bool); anything else is ``tensor_input``'s TypeError."""
    if isinstance(input, Node) or not isinstance(input, (bool, int, float)):
        return tensor_input(op, input)
    if not isinstance(other, Node):
        return tensor(input)
    kind = np.dtype(other.dtype).kind
    fits = kind == "f" or isinstance(input, bool) or (kind in "iu" and isinstance(input, int))
    return tensor(input, dtype=other.dtype if fits else None, device=other.device)


def no_out(op: str, out) -> None:
    """A TypeError naming ``op`` for an ``out=`` tensor (see the module's doc)."""
    if out is not None:
        raise TypeError(
            f"{op}: out= is not supported: tricycle's ops return a new tensor "
            f"(write y = tricycle.{op}(...) instead of tricycle.{op}(..., out=y))"
        )


# ------------------------------------------------------------------------- making tensors
def _inferred_dtype(data) -> np.dtype:
    """torch's dtype for ``data``: an array's (or numpy scalar's) own, else by kind."""
    if isinstance(data, np.ndarray | np.generic) or backend.is_cupy_array(data):
        return data.dtype
    try:
        kind = np.asarray(data).dtype.kind
    except ValueError:  # ragged lists: to_tensor says so, naming the shapes
        return np.dtype(backend.DEFAULT_FLOAT)
    kinds = {"b": np.bool_, "i": np.int64, "u": np.int64, "c": np.complex64}  # float32 else
    return np.dtype(kinds.get(kind, backend.DEFAULT_FLOAT))


def _numbers(data):
    """A list holding Tensors as torch reads it: each Tensor (of one element) the number it
    holds, a numpy scalar of its dtype; a larger tensor is a ValueError naming ``stack``."""
    if isinstance(data, list | tuple):
        return [_numbers(entry) for entry in data]
    if isinstance(data, Node) and data.size != 1:
        checks.fail("tensor", "a list's tensor", "of one element (stack joins them)", data.shape)
    return backend.to_host_array(data.array).reshape(())[()] if isinstance(data, Node) else data


def tensor(data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False):
    """torch.tensor: a new leaf tensor holding a copy of ``data`` (numbers, nested lists, a
    numpy/cupy array or a Tensor), in ``dtype`` (torch's default: an array's own dtype, int64
    for Python integers, bool for booleans, float32 for floats), on ``device`` (where the data
    is, for None); a list of one-element tensors gives their numbers, as torch's."""
    checks.boolean("tensor", "requires_grad", requires_grad)
    source = first = data.array if isinstance(data, Node) else data
    while isinstance(first, list | tuple) and first:
        first = first[0]
    if isinstance(first, Node):  # a list of tensors: their numbers, in their dtypes
        source = np.array(_numbers(source))
    dtype = _inferred_dtype(source) if dtype is None else backend.numeric_dtype(dtype, "tensor")
    array = to_tensor(source, requires_grad=False, dtype=dtype).array
    if array is source:  # torch.tensor always copies
        array = array.copy()
    if device is not None:
        array = backend.move(array, parse_device(device, "tensor"))
    return Tensor(array, requires_grad=requires_grad)


def from_numpy(ndarray) -> Tensor:
    """torch.from_numpy: a tensor sharing the memory of a numpy array (writes to either show
    in both), of its dtype, that requires no gradient."""
    if not isinstance(ndarray, np.ndarray):
        checks.fail("from_numpy", "ndarray", "a numpy ndarray", ndarray, TypeError)
    backend.numeric_dtype(ndarray.dtype, "from_numpy")  # object or string arrays hold no numbers
    return Tensor(ndarray, requires_grad=False)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """torch.as_tensor: ``data`` as a tensor, sharing memory where it can: a Tensor is
    returned as it is, or converted (``Tensor.to``, whose gradient flows back) for another
    ``dtype`` or ``device``; an array of that dtype and device is not copied; Python data is
    ``tensor(data, dtype, device)``."""
    if isinstance(data, Node):
        if (dtype is None or data.dtype == backend.numeric_dtype(dtype, "as_tensor")) and (
            device is None or parse_device(device, "as_tensor") == parse_device(data.device)
        ):
            return data
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) or backend.is_cupy_array(data):
        dtype = data.dtype if dtype is None else backend.numeric_dtype(dtype, "as_tensor")
        array = to_tensor(data, requires_grad=False, dtype=dtype).array
        if device is not None:
            array = backend.move(array, parse_device(device, "as_tensor"))
        return Tensor(array, requires_grad=False)
    return tensor(data, dtype, device)


def is_tensor(obj) -> bool:
    """torch.is_tensor: whether ``obj`` is a tricycle Tensor."""
    return isinstance(obj, Node)


def empty(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format=None):  # fmt: skip
    """torch.empty: a tensor of shape ``size`` (``empty(2, 3)``, ``empty((2, 3))`` or
    ``empty(size=(2, 3))``), of zeros here (see the module's doc); ``layout``, ``pin_memory``
    and ``memory_format`` are accepted and mean nothing for tricycle's arrays."""
    no_out("empty", out)
    if size is not None:
        if sizes:
            raise TypeError(f"empty: got the sizes {sizes} and size={size!r}; give one of them")
        sizes = (size,)
    device = "cpu" if device is None else device
    return zeros(*sizes, dtype=dtype, requires_grad=requires_grad, device=device)


def _typed_constructor(name: str, dtype):
    """torch's legacy constructor ``name`` (``torch.FloatTensor`` ...) for ``dtype``."""

    def construct(*data):
        if all(checks.is_integer(value) for value in data):  # sizes: FloatTensor(2, 3)
            return empty(*data, dtype=dtype) if data else empty(0, dtype=dtype)
        if len(data) != 1:
            expected = "one sequence or array of values, or the sizes as ints"
            checks.fail(name, "data", expected, data, TypeError)
        return tensor(data[0], dtype=dtype)

    construct.__name__, construct.__qualname__, construct.dtype = name, name, np.dtype(dtype)
    construct.__doc__ = (
        f"torch.{name}: ``{name}(data)`` is ``tensor(data, dtype={np.dtype(dtype)})``, a copy; "
        f"``{name}(*sizes)`` is ``empty(*sizes, dtype={np.dtype(dtype)})``. A function here, "
        "not a class (``isinstance`` takes ``Tensor``), holding its ``dtype``: x.type(it) casts."
    )
    return construct


FloatTensor = _typed_constructor("FloatTensor", np.float32)
DoubleTensor = _typed_constructor("DoubleTensor", np.float64)
LongTensor = _typed_constructor("LongTensor", np.int64)
IntTensor = _typed_constructor("IntTensor", np.int32)
BoolTensor = _typed_constructor("BoolTensor", np.bool_)


def get_default_dtype():
    """torch.get_default_dtype: the dtype of floats made from Python numbers, float32 (the
    scalar type, as ``tricycle.float32``)."""
    return backend.DEFAULT_FLOAT


def set_default_dtype(d) -> None:
    """torch.set_default_dtype, for float32 only: tricycle's default float is fixed (no global
    setting changes what an op makes); another dtype is a ValueError naming the way to it."""
    if backend.numeric_dtype(d, "set_default_dtype") != backend.DEFAULT_FLOAT:
        expected = "float32, tricycle's fixed default (pass dtype= to a factory, or .to(dtype))"
        checks.fail("set_default_dtype", "d", expected, d)


def set_default_device(device) -> None:
    """torch.set_default_device, for the CPU only (None or "cpu"): tricycle's factories make
    host arrays unless given ``device=`` (no global setting changes what an op makes); a GPU
    is a ValueError naming the way to it."""
    if device is not None and backend.parse_device(device, "set_default_device") is not None:
        expected = "None or 'cpu', tricycle's fixed default (pass device= to a factory, or .to)"
        checks.fail("set_default_device", "device", expected, device)


def __getattr__(name: str):
    """``bfloat16``: ml_dtypes' scalar type (as ``tricycle.float32`` is numpy's), imported on
    first use; without ml_dtypes, an ImportError saying to install it."""
    if name == "bfloat16":
        return backend.bfloat16("tricycle.bfloat16").type
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def randperm(n: int, *, generator=None, dtype=np.int64, device=None, requires_grad=False):
    """torch.randperm: the integers 0 .. n-1 in a random order, drawn from tricycle's
    generator (or ``generator``, a numpy Generator)."""
    checks.non_negative_int("randperm", "n", n)
    array = tricycle_random.given_or_ours("randperm", generator).permutation(n)
    array = backend.cast(array, backend.numeric_dtype(dtype, "randperm"), "randperm")
    if device is not None:
        array = backend.move(array, parse_device(device, "randperm"))
    return Tensor(array, requires_grad=requires_grad)


# ------------------------------------------------------------------------- products
def matmul(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.matmul: ``input @ other`` (numpy's and torch's broadcasting, 1-D promotion)."""
    no_out("matmul", out)
    first = input if getattr(input, "_sparse_layout", False) else tensor_input("matmul", input)
    return first.matmul(other)  # a sparse input's own; dense @ sparse: the sparse __rmatmul__


def bmm(input, mat2, *, out=None):  # noqa: A002
    """torch.bmm: the products of two batches of matrices, (B, N, M) @ (B, M, P)."""
    no_out("bmm", out)
    return tensor_input("bmm", input).bmm(mat2)


def outer(input, vec2, *, out=None):  # noqa: A002
    """torch.outer: out[i, j] = input[i] * vec2[j], of two vectors (an einsum)."""
    no_out("outer", out)
    for name, vector in (("input", input), ("vec2", vec2)):
        if tensor_input("outer", vector, name).ndim != 1:
            checks.fail("outer", f"{name}'s shape", "1-D", vector.shape)
    return einsum("i,j->ij", input, vec2)


# ------------------------------------------------------------------------- shapes
def flatten(input, start_dim: int = 0, end_dim: int = -1):  # noqa: A002
    """torch.flatten: the axes ``start_dim`` to ``end_dim`` merged into one."""
    return tensor_input("flatten", input).flatten(start_dim, end_dim)


def unflatten(input, dim: int, sizes):  # noqa: A002
    """torch.unflatten: axis ``dim`` split into axes of ``sizes`` (one may be -1)."""
    return tensor_input("unflatten", input).unflatten(dim, sizes)


def unsqueeze(input, dim: int):  # noqa: A002
    """torch.unsqueeze: a size-1 axis inserted at ``dim``."""
    return tensor_input("unsqueeze", input).unsqueeze(dim)


def squeeze(input, dim=None, *, axis=None):  # noqa: A002
    """torch.squeeze: the size-1 axes removed, all of them or those of ``dim`` (an axis or a
    tuple of them); a named axis whose size is not 1 stays, as in torch (and in
    ``Tensor.squeeze``). numpy's ``axis`` (``tricycle.squeeze``'s before torch's names came)
    is taken too."""
    x = tensor_input("squeeze", input)
    if axis is not None and dim is not None:
        raise TypeError(f"squeeze: got axis={axis!r} and dim={dim!r}; give numpy's axis or "
                        "torch's dim, not both")  # fmt: skip
    if dim is not None:
        checks.axes("squeeze", "dim", dim, x.ndim, x.shape)  # an error names torch's dim
    return ops.squeeze(x, dim if axis is None else axis)


def where(condition, input=None, other=None, *, out=None):  # noqa: A002
    """torch.where(condition, input, other): ``input`` where ``condition`` holds, else
    ``other`` (``ops.where``, under torch's keyword names: ``where(condition=c, input=x,
    other=y)``). ``torch.where(condition)`` alone is ``nonzero(condition, as_tuple=True)``:
    one 1-D tensor of int64 ids per axis."""
    no_out("where", out)
    if input is None and other is None:
        return tensor_input("where", condition, "condition").nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: give both input and other (the values where condition holds "
                        "and where not), or neither for the ids where it holds")  # fmt: skip
    return ops.where(condition, input, other)


def gather(input, dim: int, index, *, sparse_grad: bool = False, out=None):  # noqa: A002
    """torch.gather: out[i][j] = input[index[i][j]][j] for dim 0 (and so on for each dim);
    the gradient is scattered back to the entries gathered."""
    no_out("gather", out)
    return tensor_input("gather", input).gather(dim, index)


def numel(input) -> int:  # noqa: A002
    """torch.numel: the number of elements."""
    return tensor_input("numel", input).numel()


# ------------------------------------------------------------------------- math
def argmax(input, dim=None, keepdim: bool = False, *, axis=None):  # noqa: A002
    """torch.argmax: int64 ids of the first maximum, of all elements or along ``dim`` (``axis``)."""
    return tensor_input("argmax", input).argmax(dim, keepdim, axis=axis)


def argmin(input, dim=None, keepdim: bool = False, *, axis=None):  # noqa: A002
    """torch.argmin: int64 ids of the first minimum, of all elements or along ``dim`` (``axis``)."""
    return tensor_input("argmin", input).argmin(dim, keepdim, axis=axis)


def _extremum(op: str, numpy_op, elementwise):
    def extremum(input, dim=None, keepdim: bool = False, *, axis=None, keepdims=None, out=None):  # noqa: A002
        no_out(op, out)
        x = tensor_input(op, input)
        if axis is not None or keepdims is not None:  # numpy's keywords: numpy's meaning
            if dim is not None or keepdim:
                expected = "numpy's axis/keepdims or torch's dim/keepdim, not both"
                checks.fail(op, "arguments", expected, (dim, keepdim, axis, keepdims), TypeError)
            return numpy_op(x, axis, bool(keepdims))
        if isinstance(dim, Node):  # torch.max(input, other)
            return elementwise(x, dim)
        if not (dim is None and not keepdim or checks.is_integer(dim)):  # keepdim needs a dim
            expected = f"an axis or a tensor (for several axes, numpy's axis= gives the {op})"
            checks.fail(op, "dim", expected, dim, TypeError)
        return numpy_op(x) if dim is None else getattr(x, op)(dim=dim, keepdim=keepdim)

    extremum.__name__ = extremum.__qualname__ = op
    extremum.__doc__ = (
        f"torch.{op}: of all elements; along ``dim`` the named tuple ``(values, indices)`` of "
        f"the first {op}imum (whose gradient goes to that index); of two tensors elementwise."
    )
    return extremum


max = _extremum("max", reduce.max, binary.maximum)  # noqa: A001 - torch's names
min = _extremum("min", reduce.min, binary.minimum)  # noqa: A001


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    """torch.clamp: numbers or tensors as the bounds (``Tensor.clamp``); the gradient passes
    where min <= x <= max, and to a tensor bound where it clamps, as torch's."""
    no_out("clamp", out)
    return tensor_input("clamp", input).clamp(min, max)


def pow(input, exponent, *, out=None):  # noqa: A001, A002 - torch's names
    """torch.pow: ``input ** exponent``, a tensor to a number or a tensor's power, or a
    number to a tensor's power."""
    no_out("pow", out)
    if not isinstance(input, Node):
        tensor_input("pow", exponent, "exponent (when input is a number)")
    return input**exponent


def norm(input, p="fro", dim=None, keepdim: bool = False, out=None, dtype=None):  # noqa: A002
    """torch.norm, a vector norm over ``dim`` (all elements by default): "fro" and 2 the
    Euclidean norm, any p >= 1, inf and -inf; computed in ``dtype`` if given."""
    no_out("norm", out)
    x = tensor_input("norm", input)
    return (x if dtype is None else x.to(dtype=dtype)).norm(p, dim, keepdim)


# ------------------------------------------------------------------------- comparisons
def _array(value):
    return value.array if isinstance(value, Node) else value


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> bool:  # noqa: A002
    """torch.allclose: whether |input - other| <= atol + rtol * |other| everywhere; a tensor
    ``other`` of another dtype is refused (RuntimeError), as torch's: int64 is not float32."""
    x = tensor_input("allclose", input)
    if isinstance(other, Node) and other.dtype != x.dtype:
        raise RuntimeError(f"allclose: input is {x.dtype}, other {other.dtype}: not one dtype")
    return x.close_to(other, rtol, atol, equal_nan)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan: bool = False):  # noqa: A002
    """torch.isclose: a boolean tensor, where |input - other| <= atol + rtol * |other|."""
    x = tensor_input("isclose", input)
    close = x.xp.isclose(x.array, _array(other), rtol=rtol, atol=atol, equal_nan=equal_nan)
    return x.new(close, requires_grad=False)


def equal(input, other) -> bool:  # noqa: A002
    """torch.equal: whether two tensors have the same shape and the same values."""
    x, y = tensor_input("equal", input), tensor_input("equal", other, "other")
    return x.shape == y.shape and bool((x == y).all())
