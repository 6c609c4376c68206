"""Bind Python operators and convenience methods of Tensor to the ops that implement them.

``tricycle/tensor.py`` imports this module at its end, so ``from tricycle.tensor import
Tensor`` always gives working operators, whichever tricycle module is imported first (even
when the package's ``__init__`` does not run, as when ``tricycle`` resolves as a namespace
package). The op modules import ``Tensor``, so one imported before ``tricycle.tensor`` is still
being imported when this module runs: they are imported here as modules, and their functions
are looked up when an operator is called, never at import.
"""

import numbers

import numpy as np

from tricycle import binary, einsum, ops, reduce, unary
from tricycle.tensor import Tensor


def _scalar(value) -> bool:
    return isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _python_scalar(value):
    """A numpy scalar or 0-d array as a Python number, so that (NEP 50) the tensor's dtype wins:
    a float32 tensor times ``np.array(2.0)`` stays float32, as it does times ``2.0``."""
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


def _arithmetic(tensor_op: str, scalar_op: str, reflected_scalar_op: str | None = None):
    """An operator that uses the scalar op (of ``unary``) for numbers and the binary op (of
    ``binary``) for tensors, both named, and looked up when called.

    The checks run in order of how often they hit: Tensor, then float and int (exact types,
    cheaper than an isinstance against the numbers ABCs), then everything else.
    """
    reflected_scalar_op = reflected_scalar_op or scalar_op

    def forward(self, other):
        kind = type(other)
        if kind is Tensor:
            return getattr(binary, tensor_op)(self, other)
        if kind is float or kind is int:
            return getattr(unary, scalar_op)(self, other)
        if _scalar(other):
            return getattr(unary, scalar_op)(self, _python_scalar(other))
        return getattr(binary, tensor_op)(self, binary.constant(other, self))

    def reflected(self, other):
        kind = type(other)
        if kind is float or kind is int:
            return getattr(unary, reflected_scalar_op)(self, other)
        if _scalar(other):
            return getattr(unary, reflected_scalar_op)(self, _python_scalar(other))
        return getattr(binary, tensor_op)(binary.constant(other, self), self)

    return forward, reflected


def _method(module, name: str):
    """``module.name`` as a Tensor method, looked up when called (see the module docstring)."""

    def method(self, *args, **kwargs):
        return getattr(module, name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{module.__name__}.{name}`` of this tensor."
    return method


Tensor.__add__, Tensor.__radd__ = _arithmetic("add", "add_scalar")
Tensor.__sub__, Tensor.__rsub__ = _arithmetic("sub", "sub_scalar", "rsub_scalar")
Tensor.__mul__, Tensor.__rmul__ = _arithmetic("mul", "mul_scalar")
Tensor.__truediv__, Tensor.__rtruediv__ = _arithmetic("div", "div_scalar", "rdiv_scalar")
Tensor.__pow__, Tensor.__rpow__ = _arithmetic("pow", "pow_scalar", "rpow_scalar")
Tensor.__neg__ = _method(unary, "neg")
Tensor.__abs__ = _method(unary, "abs")


def _comparison(symbol):
    def compare(self, other):
        return binary.compare(symbol, self, binary.constant(other, self))

    return compare


Tensor.__lt__ = _comparison("<")
Tensor.__le__ = _comparison("<=")
Tensor.__gt__ = _comparison(">")
Tensor.__ge__ = _comparison(">=")
Tensor.__eq__ = _comparison("==")
Tensor.__ne__ = _comparison("!=")


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b with numpy's matmul semantics for 1-D and batched operands."""
    b = binary.constant(b, a)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must not be scalars, got {a.shape} @ {b.shape}")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
        raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
    matrices = (a.ndim > 1, b.ndim > 1)
    left = "...ij" if matrices[0] else "j"
    right = "...jk" if matrices[1] else "j"
    out = ("...i" if matrices[0] else "..." if matrices[1] else "") + ("k" if matrices[1] else "")
    return einsum.einsum(f"{left},{right}->{out}", a, b)  # its Einsum, parsed once, is cached


Tensor.__matmul__ = _matmul
Tensor.__rmatmul__ = lambda self, other: _matmul(binary.constant(other, self), self)
Tensor.__getitem__ = _method(ops, "getitem")

# methods, named as in numpy
Tensor.sum = _method(reduce, "sum")
Tensor.mean = _method(reduce, "mean")
Tensor.max = _method(reduce, "max")
Tensor.min = _method(reduce, "min")
Tensor.var = _method(reduce, "var")
Tensor.exp = _method(unary, "exp")
Tensor.log = _method(unary, "log")
Tensor.sqrt = _method(unary, "sqrt")
Tensor.sin = _method(unary, "sin")
Tensor.cos = _method(unary, "cos")
Tensor.abs = _method(unary, "abs")
Tensor.clip = _method(unary, "clip")
Tensor.transpose = lambda self, *axes: ops.transpose(
    self, axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
)
Tensor.T = property(lambda self: ops.transpose(self))
Tensor.swapaxes = _method(ops, "swapaxes")
Tensor.reshape = lambda self, *shape: ops.reshape(
    self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
)
Tensor.squeeze = _method(ops, "squeeze")
Tensor.expand_dims = _method(ops, "expand_dims")
Tensor.split = _method(ops, "split")
Tensor.repeat = _method(ops, "repeat")
Tensor.masked_fill = _method(ops, "masked_fill")
Tensor.tanh = _method(unary, "tanh")
Tensor.sigmoid = _method(unary, "sigmoid")
