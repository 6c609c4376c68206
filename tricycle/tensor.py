"""Tensor: an array that remembers how it was computed, with Python's operators.

``tricycle.graph.Node`` holds the array, the graph (``args``, ``back_fns``) and ``backward``;
``Tensor`` adds the operators (``+``, ``*``, ``@``, ``[]``, ``<`` ...) and the methods named as
numpy's (``.sum()``, ``.exp()``, ``.reshape()`` ...), each the op of the same name in
``unary``, ``binary``, ``reduce`` or ``ops``. A number or list that meets a tensor in an
operator becomes a constant of the tensor's dtype (``binary.constant``), while an array with
dimensions keeps its own and numpy's promotion applies (a float64 array makes a float64
result); a Python number takes the cheaper scalar form of the op (``x * 2`` is
``unary.mul_scalar``).
"""

import numbers

import numpy as np

from tricycle import backend, binary, checks, ops, reduce, unary
from tricycle.backend import is_float, numeric_array, numeric_dtype, parse_device  # noqa: F401
from tricycle.graph import BackFn, Node, check_float, grad_enabled, no_grad  # noqa: F401
from tricycle.tensor_torch import TorchTensorMethods


def _scalar(value) -> bool:
    return isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _python_scalar(value):
    """A numpy scalar or 0-d array as a Python number, so that (NEP 50) the tensor's dtype wins:
    a float32 tensor times ``np.array(2.0)`` stays float32, as it does times ``2.0``."""
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


def _arithmetic(tensor_op, scalar_op, reflected_scalar_op=None):
    """An operator that uses ``scalar_op`` (of ``unary``) for numbers and ``tensor_op`` (of
    ``binary``) for tensors. The checks run in order of how often they hit: Tensor, then float
    and int (exact types, cheaper than an isinstance against the numbers ABCs), then the rest.
    """
    reflected_scalar_op = reflected_scalar_op or scalar_op

    def forward(self, other):
        kind = type(other)
        if kind is Tensor:
            return tensor_op(self, other)
        if kind is float or kind is int:
            return scalar_op(self, other)
        if _scalar(other):
            return scalar_op(self, _python_scalar(other))
        return tensor_op(self, binary.constant(other, self, tensor_op.__name__))

    def reflected(self, other):
        kind = type(other)
        if kind is float or kind is int:
            return reflected_scalar_op(self, other)
        if _scalar(other):
            return reflected_scalar_op(self, _python_scalar(other))
        return tensor_op(binary.constant(other, self, tensor_op.__name__), self)

    return forward, reflected


def _comparison(symbol: str):
    def compare(self, other):
        return binary.compare(symbol, self, binary.constant(other, self, symbol))

    return compare


def _shape_arguments(values: tuple):
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` alike: the one sequence, or the values."""
    return values[0] if len(values) == 1 and not checks.is_integer(values[0]) else values


class Tensor(TorchTensorMethods, Node):
    """An n-dimensional array that remembers how it was computed (see ``tricycle.graph.Node``
    for the arguments, the graph and ``backward``), with Python's operators."""

    __slots__ = ()

    __add__, __radd__ = _arithmetic(binary.add, unary.add_scalar)
    __sub__, __rsub__ = _arithmetic(binary.sub, unary.sub_scalar, unary.rsub_scalar)
    __mul__, __rmul__ = _arithmetic(binary.mul, unary.mul_scalar)
    __truediv__, __rtruediv__ = _arithmetic(binary.div, unary.div_scalar, unary.rdiv_scalar)
    __pow__, __rpow__ = _arithmetic(binary.pow, unary.pow_scalar, unary.rpow_scalar)
    __neg__ = unary.neg
    __abs__ = unary.abs
    __lt__, __le__ = _comparison("<"), _comparison("<=")
    __gt__, __ge__ = _comparison(">"), _comparison(">=")
    __eq__, __ne__ = _comparison("=="), _comparison("!=")
    __hash__ = Node.__hash__  # == is elementwise, identity hashing keeps dicts working

    def __matmul__(self, other):
        return binary.matmul(self, binary.constant(other, self, "matmul"))

    def __rmatmul__(self, other):
        return binary.matmul(binary.constant(other, self), self)

    __getitem__ = ops.getitem

    # methods, named as in numpy
    sum, mean, max, min, var = reduce.sum, reduce.mean, reduce.max, reduce.min, reduce.var
    exp, log, sqrt, sin, cos = unary.exp, unary.log, unary.sqrt, unary.sin, unary.cos
    abs, clip, tanh, sigmoid = unary.abs, unary.clip, unary.tanh, unary.sigmoid
    swapaxes, squeeze, expand_dims = ops.swapaxes, ops.squeeze, ops.expand_dims
    split, repeat, masked_fill = ops.split, ops.repeat, ops.masked_fill
    permute, chunk, sort, argsort = ops.permute, ops.chunk, ops.sort, ops.argsort
    cumsum = reduce.cumsum

    def transpose(self, *axes) -> "Tensor":
        """Permute the axes (reverse them without arguments): ``x.transpose(1, 0, 2)``; two
        axes are swapped, as torch's ``k.transpose(-2, -1)`` (for a matrix, the same)."""
        if len(axes) == 2 and all(map(checks.is_integer, axes)):
            return ops.swapaxes(self, *axes)
        return ops.transpose(self, _shape_arguments(axes) if axes else None)

    @property
    def T(self) -> "Tensor":
        return ops.transpose(self)

    def reshape(self, *shape) -> "Tensor":
        """The same values in a new shape: ``x.reshape(2, -1)`` or ``x.reshape((2, -1))``."""
        return ops.reshape(self, _shape_arguments(shape))

    def draw(self, path, labels=None, formats=("svg", "png", "dot")) -> dict:
        """Draw the graph backward walks from this tensor (``tricycle.draw.draw``): the .svg,
        .dot and .png files at ``path``; returns {format: path written}."""
        from tricycle.draw import draw  # noqa: PLC0415 - rarely used; draw imports no tricycle

        return draw(self, path, labels, formats)


def as_tensor(value) -> Tensor:
    """``value`` if it is a Tensor, else a constant Tensor of it (no gradient): how ops take
    arrays and numbers beside tensors."""
    return value if isinstance(value, Node) else Tensor(value, requires_grad=False)


def to_tensor(
    data,
    requires_grad: bool | None = None,
    is_batched: bool = False,
    name: str | None = None,
    dtype=None,
) -> Tensor:
    """Make a Tensor from a list, number, numpy/cupy array or Tensor.

    Data is float32 unless ``dtype`` says otherwise (``dtype=int`` for labels and token ids);
    boolean data stays boolean, and a numpy scalar keeps its dtype. An array that already has
    the dtype is not copied.
    """
    checks.boolean("to_tensor", "requires_grad", requires_grad, optional=True)
    checks.boolean("to_tensor", "is_batched", is_batched)
    checks.text("to_tensor", "name", name, optional=True)
    if isinstance(data, Tensor):
        data = data.array
    if isinstance(data, np.ndarray) or backend.is_cupy_array(data):
        if data.dtype.kind not in "biuf" and not is_float(data.dtype):
            raise TypeError(
                f"to_tensor: expected a numeric array, got dtype {data.dtype} with shape "
                f"{data.shape} (an object array would become NaN where it holds None)"
            )
        if dtype is None:
            dtype = bool if data.dtype == bool else backend.DEFAULT_FLOAT
    else:
        data = numeric_array(data, dtype)
        dtype = data.dtype
    return Tensor(
        data,
        requires_grad=requires_grad,
        is_batched=is_batched,
        name=name,
        dtype=numeric_dtype(dtype),
    )
