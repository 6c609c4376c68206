"""Tensor: an array that remembers how it was computed, with Python's operators.

``tricycle.graph.Node`` holds the array, the graph (``args``, ``back_fns``) and ``backward``;
``Tensor`` adds the operators (``+``, ``*``, ``@``, ``[]``, ``<`` ...) and the methods named as
numpy's (``.sum()``, ``.exp()``, ``.reshape()`` ...), each the op of the same name in
``unary``, ``binary``, ``reduce`` or ``ops``. ``sum``, ``mean``, ``max``, ``min``, ``var`` and
``split`` keep numpy's meaning unless a call names one of torch's keywords (``dim``,
``keepdim``, ``unbiased``, ``correction``): then it has torch's (``x.mean(-1, keepdim=True)``,
``values, ids = x.max(dim=-1)``). A number or list that meets a tensor in an operator becomes
a constant of the tensor's dtype (``binary.constant``), while an array with dimensions keeps
its own and numpy's promotion applies (a float64 array makes a float64 result); a Python
number takes the cheaper scalar form of the op (``x * 2`` is ``unary.mul_scalar``).
"""

import contextlib
import functools
import inspect
import itertools
import numbers
from collections import namedtuple

import numpy as np

from tricycle import backend, backprop, binary, checks, ops, reduce, unary
from tricycle.backend import is_float, numeric_array, numeric_dtype, parse_device  # noqa: F401
from tricycle.graph import BackFn, Node, check_float, grad_enabled, no_grad  # noqa: F401
from tricycle.tensor_inplace import TorchInPlaceMethods, written
from tricycle.tensor_torch import TorchTensorMethods, imported

_DEFER = ("_sparse_layout", "__tricycle_function__")  # a sparse tensor, a DTensor: they answer


def _scalar(value) -> bool:
    return isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _python_scalar(value):
    """A numpy scalar or 0-d array as a Python number, so that (NEP 50) the tensor's dtype wins:
    a float32 tensor times ``np.array(2.0)`` stays float32, as it does times ``2.0``."""
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


def _arithmetic(tensor_op, scalar_op, reflected_scalar_op=None, divides: bool = False):
    """An operator that uses ``scalar_op`` (of ``unary``) for numbers and ``tensor_op`` (of
    ``binary``) for tensors. The checks run in order of how often they hit: Tensor, then float
    and int (exact types, cheaper than an isinstance against the numbers ABCs), then the rest.
    An integer or bool tensor meeting a float, or divided (``divides``), is float32 first, as
    torch's (numpy would give float64)."""
    reflected_scalar_op = reflected_scalar_op or scalar_op

    def forward(self, other):
        kind = type(other)
        if kind is Tensor:
            return tensor_op(self, other)
        if kind is not float and kind is not int:
            if not _scalar(other):
                if not isinstance(other, Node) and any(getattr(other, a, 0) for a in _DEFER):
                    return NotImplemented  # a sparse tensor or a DTensor: its reflected method
                return tensor_op(self, binary.constant(other, self, tensor_op.__name__))
            other = _python_scalar(other)
        return scalar_op(binary.floated(self, other, divides), other)

    def reflected(self, other):
        if type(other) is not float and type(other) is not int:
            if not _scalar(other):
                return tensor_op(binary.constant(other, self, tensor_op.__name__), self)
            other = _python_scalar(other)
        return reflected_scalar_op(binary.floated(self, other, divides), other)

    return forward, reflected


def _comparison(symbol: str):
    def compare(self, other):
        if other is None and symbol in ("==", "!="):  # Python's answer, as torch's: False
            return NotImplemented
        return binary.compare(symbol, self, binary.constant(other, self, symbol))

    return compare


def _shape_arguments(values: tuple):
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` alike: the one sequence, or the values."""
    return values[0] if len(values) == 1 and not checks.is_integer(values[0]) else values


# ---------------------------------------------------------------- numpy's or torch's keywords
Max = namedtuple("Max", ["values", "indices"])  # as torch.return_types.max
Min = namedtuple("Min", ["values", "indices"])  # as torch.return_types.min


def _numpy_or_torch(numpy_op, torch_op, numpy_words: str, torch_words: str):
    """The method ``numpy_op``, called directly (positional arguments or numpy's keywords),
    unless the call names one of ``torch_words``: then ``torch_op``, torch's meaning of the
    method of the same name. Naming keywords of both is a TypeError, never a guess (``sum``
    and ``mean`` name none of numpy's: the two meanings agree, and torch takes both names)."""
    both = numpy_words, torch_words = frozenset(numpy_words.split()), frozenset(torch_words.split())

    def method(self, *args, **kwargs):
        if kwargs and not torch_words.isdisjoint(kwargs):
            if not numpy_words.isdisjoint(kwargs):
                mine, theirs = (", ".join(sorted(w.intersection(kwargs))) for w in both)
                raise TypeError(
                    f"Tensor.{numpy_op.__name__}: got numpy's keyword(s) {mine} and torch's "
                    f"{theirs} in one call; use numpy's ({', '.join(sorted(numpy_words))}) or "
                    f"torch's ({', '.join(sorted(torch_words))}), not both"
                )
            return torch_op(self, *args, **kwargs)
        return numpy_op(self, *args, **kwargs)

    functools.update_wrapper(method, numpy_op, ("__name__",))  # numpy's name and signature
    method.__qualname__ = f"Tensor.{numpy_op.__name__}"
    method.__doc__ = (
        f"{inspect.cleandoc(numpy_op.__doc__)}\n\nWith torch's keywords "
        f"({', '.join(sorted(torch_words))}): {inspect.cleandoc(torch_op.__doc__)}"
    )
    return method


def _all_if_empty(dim):
    """torch reads ``dim=()`` (or ``[]``) as every axis, numpy as none."""
    return None if isinstance(dim, tuple | list) and not dim else dim


def _torch_reduction(op):
    def reduction(self, dim=None, keepdim: bool = False, *, axis=None, keepdims=None):
        name = f"Tensor.{op.__name__}"
        if (axis is not None and dim is not None) or (keepdims is not None and keepdim):
            raise TypeError(f"{name}: got both dim and axis, or keepdim and keepdims")
        keepdim = keepdim if keepdims is None else keepdims
        checks.boolean(name, "keepdim", keepdim)
        return op(self, _all_if_empty(dim if axis is None else axis), keepdim)

    reduction.__doc__ = """torch's ``dim`` (an axis or a tuple of them) and ``keepdim``; as
    torch, numpy's names may stand beside them (``x.sum(dim=-1, keepdims=True)``)."""
    return reduction


def _torch_extremum(op: str, result):
    def extremum(self, dim=None, keepdim: bool = False):
        name = f"Tensor.{op}"
        if dim is None:
            expected = f"an axis for torch's (values, indices) (x.{op}() is the {op} of all)"
            checks.fail(name, "dim", expected, dim, TypeError)
        dim = checks.axis(name, "dim", dim, self.ndim, self.shape)
        checks.boolean(name, "keepdim", keepdim)
        if self.shape[dim] == 0:
            raise ValueError(f"{name}: cannot reduce the empty dim {dim} of shape {self.shape}")
        ids = getattr(self.xp, f"arg{op}")(self.array, axis=dim, keepdims=True)  # the first one
        values = self.gather(dim, ids)  # the gradient goes to the index returned, as torch's
        if not keepdim:
            values, ids = ops.squeeze(values, dim), ids.squeeze(dim)
        return result(values, self.new(ids.astype(np.int64), requires_grad=False))

    extremum.__doc__ = (
        f"torch's ``(values, indices)`` of the first {op}imum along ``dim``, whose gradient goes "
        f"to that index alone (numpy's form splits it among ties)."
    )
    return extremum


def _torch_var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """torch's ``dim``, ``keepdim`` and correction, 1 by default (``unbiased=True``; numpy's
    ``ddof`` is 0 by default)."""
    if unbiased is not None and correction is not None:
        raise TypeError(f"Tensor.var: unbiased={unbiased!r} or correction={correction!r}, not both")
    if unbiased is not None:
        correction = int(checks.boolean("Tensor.var", "unbiased", unbiased))
    elif correction is None:
        correction = 1
    checks.non_negative_int("Tensor.var", "correction", correction)
    checks.boolean("Tensor.var", "keepdim", keepdim)
    return reduce.var(self, _all_if_empty(dim), keepdim, correction)


def _torch_split(self, split_size, dim: int = 0):
    """torch's ``split_size``: an int is the size of each piece (the last may be
    smaller), a list the sizes of the pieces; a tuple of pieces."""
    dim = checks.axis("Tensor.split", "dim", dim, self.ndim, self.shape)
    n, sizes = self.shape[dim], split_size
    if checks.is_integer(sizes):
        step = checks.positive_int("Tensor.split", "split_size", sizes)
        bounds = list(range(step, n, step))
    elif isinstance(sizes, tuple | list) and all(checks.is_integer(s) and s >= 0 for s in sizes):
        if sum(sizes) != n:
            expected = f"sizes that add up to {n}, the size of dim {dim} of shape {self.shape}"
            checks.fail("Tensor.split", "split_size", expected, sizes)
        bounds = list(itertools.accumulate(sizes))[:-1]
    else:
        expected = "a size (an integer >= 1) or a list of sizes (integers >= 0)"
        checks.fail("Tensor.split", "split_size", expected, sizes, TypeError)
    return tuple(ops.split(self, bounds, dim))


class Tensor(TorchTensorMethods, TorchInPlaceMethods, Node):
    """An n-dimensional array that remembers how it was computed (see ``tricycle.graph.Node``
    for the arguments, the graph and ``backward``), with Python's operators."""

    __slots__ = ()

    __add__, __radd__ = _arithmetic(binary.add, unary.add_scalar)
    __sub__, __rsub__ = _arithmetic(binary.sub, unary.sub_scalar, unary.rsub_scalar)
    __mul__, __rmul__ = _arithmetic(binary.mul, unary.mul_scalar)
    __truediv__, __rtruediv__ = _arithmetic(binary.div, unary.div_scalar, unary.rdiv_scalar, True)
    __pow__, __rpow__ = _arithmetic(binary.pow, unary.pow_scalar, unary.rpow_scalar)
    __neg__ = unary.neg
    __abs__ = unary.abs
    __lt__, __le__ = _comparison("<"), _comparison("<=")
    __gt__, __ge__ = _comparison(">"), _comparison(">=")
    __eq__, __ne__ = _comparison("=="), _comparison("!=")
    lt, le, gt, ge, eq, ne = __lt__, __le__, __gt__, __ge__, __eq__, __ne__  # torch's names
    __hash__ = Node.__hash__  # == is elementwise, identity hashing keeps dicts working

    def __matmul__(self, other):
        if not isinstance(other, Node) and getattr(other, "_sparse_layout", False):
            return NotImplemented  # dense @ sparse: the sparse tensor's __rmatmul__ answers
        return binary.matmul(self, binary.constant(other, self, "matmul"))

    def __rmatmul__(self, other):
        return binary.matmul(binary.constant(other, self), self)

    __getitem__ = ops.getitem

    @property
    def is_leaf(self) -> bool:
        """torch's: no op of a recorded graph made this tensor (``.grad`` is where its
        gradient lands), as a tensor that needs no gradient always is."""
        return self.args is None

    @property
    def is_cuda(self) -> bool:
        """torch's: whether the values are on a GPU."""
        return self.on_gpu

    @property
    def is_cpu(self) -> bool:
        """torch's: whether the values are in host memory."""
        return not self.on_gpu

    is_xpu = is_mps = property(lambda self: False, doc="torch's: tricycle has no XPU or MPS")

    nelement = TorchTensorMethods.numel  # torch's other names
    ndimension = TorchTensorMethods.dim

    def element_size(self) -> int:
        """torch.Tensor.element_size: bytes per value."""
        return self.array.dtype.itemsize

    def is_floating_point(self) -> bool:
        """torch.Tensor.is_floating_point: whether the dtype is a float one."""
        return is_float(self.dtype)

    def detach_(self) -> "Tensor":
        """torch.Tensor.detach_: this tensor made a leaf that requires no gradient, in place. The
        graph lives on the tensors here: an op recorded from it before sends it no gradient."""
        self.args = self.back_fns = None
        self.requires_grad = False
        return self

    # methods, named as in numpy; torch's keywords (dim, keepdim...) give torch's meaning
    sum = _numpy_or_torch(reduce.sum, _torch_reduction(reduce.sum), "", "dim keepdim")
    mean = _numpy_or_torch(reduce.mean, _torch_reduction(reduce.mean), "", "dim keepdim")
    max = _numpy_or_torch(reduce.max, _torch_extremum("max", Max), "axis keepdims", "dim keepdim")
    min = _numpy_or_torch(reduce.min, _torch_extremum("min", Min), "axis keepdims", "dim keepdim")
    var = _numpy_or_torch(
        reduce.var, _torch_var, "axis keepdims ddof", "dim keepdim unbiased correction"
    )
    exp, log, sqrt, sin, cos = unary.exp, unary.log, unary.sqrt, unary.sin, unary.cos
    abs, clip, tanh, sigmoid = unary.abs, unary.clip, unary.tanh, unary.sigmoid
    swapaxes, squeeze, expand_dims = ops.swapaxes, ops.squeeze, ops.expand_dims
    split = _numpy_or_torch(ops.split, _torch_split, "indices_or_sections axis", "dim split_size")
    repeat, masked_fill, cumsum = ops.repeat, ops.masked_fill, reduce.cumsum
    permute, chunk, argsort = ops.permute, ops.chunk, ops.argsort  # sort: tensor_extra's
    T = property(ops.transpose, doc="The transpose: the axes reversed.")

    # torch's other methods, each importing its module on its first call (``imported``)
    add, sub, mul, div, absolute, log1p, log2, log10, fmod, remainder, nan_to_num = imported(
        "pointwise", "add sub mul div absolute log1p log2 log10 fmod remainder nan_to_num"
    )
    logical_and, logical_or, logical_xor, logical_not = imported(
        "pointwise", "logical_and logical_or logical_xor logical_not"
    )
    subtract, multiply, divide = sub, mul, div  # torch's other names
    nansum, nanmean, median, nanmedian, mode, kthvalue, quantile, nanquantile = imported(
        "reduce_torch", "nansum nanmean median nanmedian mode kthvalue quantile nanquantile"
    )
    mm, mv, dot, addmm = imported("products", "mm mv dot addmm")
    outer, allclose, equal = imported("torch_functions", "outer allclose equal")
    select, index_add, index_copy, index_fill, masked_scatter = imported(
        "indexing", "select index_add index_copy index_fill masked_scatter"
    )
    (random_,) = imported("random_fills", "random_")
    index_add_, index_copy_, index_fill_, masked_scatter_, fill_diagonal_ = written(
        index_add, index_copy, index_fill, masked_scatter, *imported("indexing", "fill_diagonal")
    )
    abs_, absolute_, log1p_, log2_, log10_, fmod_, remainder_, nan_to_num_ = written(
        unary.abs, absolute, log1p, log2, log10, fmod, remainder, nan_to_num
    )
    logical_and_, logical_or_, logical_xor_, logical_not_ = written(
        logical_and, logical_or, logical_xor, logical_not
    )
    bitwise_and, bitwise_or, bitwise_xor, bitwise_not = imported(
        "pointwise", "bitwise_and bitwise_or bitwise_xor bitwise_not"
    )
    __and__, __or__, __xor__, __invert__ = bitwise_and, bitwise_or, bitwise_xor, bitwise_not
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__  # of booleans or integers: symmetric

    def transpose(self, *axes) -> "Tensor":
        """Permute the axes (reverse them without arguments): ``x.transpose(1, 0, 2)``; two
        axes are swapped, as torch's ``k.transpose(-2, -1)`` (for a matrix, the same)."""
        if len(axes) == 2 and all(map(checks.is_integer, axes)):
            return ops.swapaxes(self, *axes)
        return ops.transpose(self, _shape_arguments(axes) if axes else None)

    def reshape(self, *shape) -> "Tensor":
        """The same values in a new shape: ``x.reshape(2, -1)`` or ``x.reshape((2, -1))``."""
        return ops.reshape(self, _shape_arguments(shape))

    def reshape_as(self, other) -> "Tensor":
        """torch.Tensor.reshape_as: ``reshape`` to ``other``'s shape."""
        return ops.reshape(self, other.shape)

    def unflatten(self, dim: int, sizes) -> "Tensor":
        """torch.Tensor.unflatten: axis ``dim`` split into axes of ``sizes`` (one may be -1),
        whose product is its length."""
        dim = checks.axis("Tensor.unflatten", "dim", dim, self.ndim, self.shape)
        if isinstance(sizes, tuple | list) and sizes and all(map(checks.is_integer, sizes)):
            with contextlib.suppress(ValueError):  # a product that does not fit: said below
                return ops.reshape(self, self.shape[:dim] + tuple(sizes) + self.shape[dim + 1 :])
        expected = f"integers whose product is {self.shape[dim]}, the size of dim {dim} of "
        checks.fail("Tensor.unflatten", "sizes", f"{expected}{self.shape} (one may be -1)", sizes)

    def register_hook(self, hook) -> backprop.HookHandle:
        """torch's gradient hook: ``hook(grad)`` (a Tensor) runs in each backward once this
        tensor's gradient is summed, before it is used (sent on to the inputs, or put in
        ``.grad``); a Tensor or array it returns, of the same shape, replaces the gradient.
        Hooks run in registration order; returns a handle whose ``remove()`` unregisters it."""
        checks.function("Tensor.register_hook", "hook", hook)
        if not self.requires_grad:
            raise RuntimeError(f"Tensor.register_hook: a tensor of shape {self.shape} that "
                               "does not require grad gets no gradient to hook")  # fmt: skip
        if self._grad_hooks is None:
            self._grad_hooks = []
        wrapped = backprop.GradHook(hook)
        self._grad_hooks.append(wrapped)
        return backprop.HookHandle(self, wrapped)

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
        if data.dtype.kind not in "biufc" and not is_float(data.dtype):
            raise TypeError(
                f"to_tensor: expected a numeric array, got dtype {data.dtype} with shape "
                f"{data.shape} (an object array would become NaN where it holds None)"
            )
        if dtype is None:
            kind = data.dtype.kind
            dtype = bool if kind == "b" else data.dtype if kind == "c" else backend.DEFAULT_FLOAT
        elif data.dtype.kind == "c" and np.dtype(dtype).kind != "c":
            data = data.real  # a complex array in a real dtype: its real part, as torch's
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
