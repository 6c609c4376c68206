"""Bind Python operators and convenience methods of Tensor to the ops that implement them.

Kept apart from tensor.py so that the ops can import Tensor without an import cycle; the
package's ``__init__`` imports this module, so ``from tricycle.tensor import to_tensor`` is
enough to get working operators.
"""

import numbers

import numpy as np

from tricycle import binary, ops, reduce, unary
from tricycle.binary import constant
from tricycle.einsum import Einsum
from tricycle.tensor import Tensor


def _scalar(value) -> bool:
    return isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _python_scalar(value):
    """A numpy scalar or 0-d array as a Python number, so that (NEP 50) the tensor's dtype wins:
    a float32 tensor times ``np.array(2.0)`` stays float32, as it does times ``2.0``."""
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


def _arithmetic(tensor_op, scalar_op, reflected_scalar_op=None):
    """An operator that uses the scalar op for numbers and the binary op for tensors.

    The checks run in order of how often they hit: Tensor, then float and int (exact types,
    cheaper than an isinstance against the numbers ABCs), then everything else.
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
        return tensor_op(self, constant(other, self))

    def reflected(self, other):
        kind = type(other)
        if kind is float or kind is int:
            return reflected_scalar_op(self, other)
        if _scalar(other):
            return reflected_scalar_op(self, _python_scalar(other))
        return tensor_op(constant(other, self), self)

    return forward, reflected


Tensor.__add__, Tensor.__radd__ = _arithmetic(binary.add, unary.add_scalar)
Tensor.__sub__, Tensor.__rsub__ = _arithmetic(binary.sub, unary.sub_scalar, unary.rsub_scalar)
Tensor.__mul__, Tensor.__rmul__ = _arithmetic(binary.mul, unary.mul_scalar)
Tensor.__truediv__, Tensor.__rtruediv__ = _arithmetic(
    binary.div, unary.div_scalar, unary.rdiv_scalar
)
Tensor.__pow__, Tensor.__rpow__ = _arithmetic(binary.pow, unary.pow_scalar, unary.rpow_scalar)
Tensor.__neg__ = unary.neg
Tensor.__abs__ = unary.abs


def _comparison(symbol):
    def compare(self, other):
        return binary.compare(symbol, self, constant(other, self))

    return compare


Tensor.__lt__ = _comparison("<")
Tensor.__le__ = _comparison("<=")
Tensor.__gt__ = _comparison(">")
Tensor.__ge__ = _comparison(">=")
Tensor.__eq__ = _comparison("==")
Tensor.__ne__ = _comparison("!=")


_MATMULS: dict[tuple[bool, bool], Einsum] = {}


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b with numpy's matmul semantics for 1-D and batched operands."""
    b = constant(b, a)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must not be scalars, got {a.shape} @ {b.shape}")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
        raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
    key = (a.ndim > 1, b.ndim > 1)
    einsum = _MATMULS.get(key)
    if einsum is None:  # one Einsum per case, so its parsing and plans are reused
        left = "...ij" if key[0] else "j"
        right = "...jk" if key[1] else "j"
        out = ("...i" if key[0] else "..." if key[1] else "") + ("k" if key[1] else "")
        einsum = _MATMULS[key] = Einsum(f"{left},{right}->{out}")
    return einsum(a, b)


Tensor.__matmul__ = _matmul
Tensor.__rmatmul__ = lambda self, other: _matmul(constant(other, self), self)
Tensor.__getitem__ = ops.getitem

# methods, named as in numpy
Tensor.sum = reduce.sum
Tensor.mean = reduce.mean
Tensor.max = reduce.max
Tensor.min = reduce.min
Tensor.var = reduce.var
Tensor.exp = unary.exp
Tensor.log = unary.log
Tensor.sqrt = unary.sqrt
Tensor.sin = unary.sin
Tensor.cos = unary.cos
Tensor.abs = unary.abs
Tensor.clip = unary.clip
Tensor.transpose = lambda self, *axes: ops.transpose(
    self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
)
Tensor.T = property(lambda self: ops.transpose(self))
Tensor.swapaxes = ops.swapaxes
Tensor.reshape = lambda self, *shape: ops.reshape(
    self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
)
Tensor.squeeze = ops.squeeze
Tensor.expand_dims = ops.expand_dims
Tensor.split = ops.split
Tensor.repeat = ops.repeat
Tensor.masked_fill = ops.masked_fill
Tensor.tanh = unary.tanh
Tensor.sigmoid = unary.sigmoid
