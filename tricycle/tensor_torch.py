"""The ``torch.Tensor`` methods a PyTorch port calls for shapes, math and reductions, on the
engine's ops: ``TorchTensorMethods``, a base class of ``Tensor`` (``tricycle.tensor``), as
``tricycle.module_torch`` is of ``Layer``. Those that write into a tensor or make one (the
in-place methods, ``.data``, the casts, ``to``, ``new_*``) are ``tricycle.tensor_inplace``'s.

Each takes torch's arguments (``dim``, ``keepdim``) and wraps differentiable ops of ``unary``,
``reduce`` and ``ops``. No op relies on sharing memory: ``view`` is ``reshape``. ``Tensor``'s
own ``sum``, ``mean``, ``max``, ``min``, ``var``, ``split`` take torch's keywords too,
``repeat`` is numpy's (torch's ``repeat_interleave``; torch's ``repeat`` is ``tile``);
``x.size`` is numpy's count, and called, torch's ``x.size(dim)``. ``softmax`` over any ``dim``
composes ops (``tricycle.functions``' fused last-axis one sits a layer above the engine).
Those that index by arrays of ids (``gather``, ``index_select``, ``scatter``, ``diagonal``,
``nonzero``, ``unique`` ...) call ``tricycle.indexing``, imported on the first such call
(``tricycle.tensor_extra.imported``, which ``Tensor`` uses for its other modules of methods
too; that module's ``TorchTensorExtras``, this class's base, holds more of torch's methods), so
that importing the tensor still loads the engine's core alone; the linear-algebra ones
(``inverse``, ``det``, ``slogdet`` ...) call ``tricycle.linalg`` the same way.
"""

import math
import numbers

import numpy as np

from tricycle import backend, binary, checks, ops, reduce, unary
from tricycle.tensor_extra import TorchTensorExtras, clamp_bound, imported, memory_formats
from tricycle.tensor_math import TorchMathMethods


class ElementCount(int):
    """numpy's ``x.size``, the number of elements; called, torch's ``x.size()`` (the shape)."""

    def __call__(self, dim=None):
        at = None if dim is None else checks.axis("Tensor.size", "dim", dim, len(self.shape))
        return self.shape if at is None else self.shape[at]


def _sizes(op: str, values: tuple) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` alike: the integers, as a tuple."""
    sizes = values[0] if len(values) == 1 and not checks.is_integer(values[0]) else values
    if not (isinstance(sizes, tuple | list) and all(map(checks.is_integer, sizes))):
        checks.fail(op, "size", "integers or one sequence of integers", values, TypeError)
    return tuple(int(n) for n in sizes)


def _index_of(name: str):
    def index(self, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None):
        if axis is not None:  # torch's alias of dim (d2l's argmax(y, axis=1))
            if dim is not None:
                raise TypeError(f"Tensor.{name}: got dim={dim} and axis={axis}; give one of them")
            dim = axis
        dim = dim if dim is None else checks.axis(f"Tensor.{name}", "dim", dim, self.ndim)
        ids = getattr(self.xp, name)(self.array, axis=dim, keepdims=keepdim and dim is not None)
        return self.new(ids.astype(np.int64), requires_grad=False)

    index.__doc__ = f"torch.Tensor.{name}: int64 ids of the first {name[3:]}ima (no gradient)."
    return index


def _extremum(name: str, op):
    def extremum(self, dim=(), keepdim: bool = False):
        return op(self, None if dim == () else dim, keepdim)

    extremum.__doc__ = f"torch.Tensor.{name}: ``{op.__name__}`` over ``dim`` (default: all)."
    return extremum


def _truth(name: str):
    def truth(self, dim=None, keepdim: bool = False):
        axes = checks.axes(f"Tensor.{name}", "dim", dim, self.ndim, self.shape)
        out = getattr(self.xp, name)(self.array, axis=axes, keepdims=keepdim)
        return self.new(out, requires_grad=False)

    truth.__doc__ = f"torch.Tensor.{name}: whether {name} values over ``dim`` are nonzero."
    return truth


def _triangle(name: str, upper: bool):
    def triangle(self, diagonal: int = 0):
        checks.integer(f"Tensor.{name}", "diagonal", diagonal)
        if self.ndim < 2:
            raise ValueError(f"Tensor.{name}: needs at least 2 axes, got shape {self.shape}")
        lower = self.xp.tri(*self.shape[-2:], diagonal - upper, dtype=bool)  # j <= i + k
        return ops.masked_fill(self, lower if upper else ~lower, 0)

    triangle.__doc__ = f"torch.Tensor.{name}: zeros past ``diagonal`` of the last two axes."
    return triangle


def _product(name: str, ndim: int | None):
    def product(self, other):
        shape = np.shape(getattr(other, "array", other))
        if ndim and (self.ndim != ndim or len(shape) != ndim or shape[:-2] != self.shape[:-2]):
            expected = f"{ndim} axes as the tensor's {self.shape}, of one batch size"
            checks.fail(f"Tensor.{name}", "other's shape", expected, shape)
        return self @ other

    axes = f"two {ndim}-axis tensors" if ndim else "tensors, broadcast as numpy's"
    product.__doc__ = f"torch.Tensor.{name}: the product of {axes} (``@``)."
    return product


def _stepwise(name: str):
    def stepwise(self, *args, **kwargs):  # round's decimals
        out = getattr(self.xp, name)(self.array, *args, **kwargs).astype(self.dtype, copy=False)
        return unary.unary_op(self, out, lambda dout: dout * 0, name)

    stepwise.__doc__ = f"torch.Tensor.{name}: a step function, whose gradient is 0 (as torch's)."
    return stepwise


def _float_test(name: str):
    def test(self):
        return self.new(getattr(self.xp, name)(self.array), requires_grad=False)

    test.__doc__ = f"torch.Tensor.{name}: whether each value is {name[2:]} (booleans)."
    return test


class TorchTensorMethods(TorchTensorExtras, TorchMathMethods):
    """torch's ``Tensor`` methods on tricycle's ``Tensor`` (see the module's doc)."""

    __slots__ = ()

    @property
    def size(self) -> ElementCount:
        """numpy's element count; ``x.size()`` and ``x.size(dim)`` are torch's Tensor.size."""
        count = ElementCount(self.array.size)
        count.shape = self.array.shape
        return count

    def numel(self) -> int:
        """torch.Tensor.numel: the number of elements."""
        return int(self.array.size)

    def dim(self) -> int:
        """torch.Tensor.dim: the number of axes."""
        return self.array.ndim

    def tolist(self):
        """torch.Tensor.tolist: the values as (nested lists of) Python numbers."""
        return self.numpy().tolist()

    # ------------------------------------------------------------------ shapes
    def view(self, *shape):
        """torch.Tensor.view, which is ``reshape`` here (see the module's doc on memory); given
        a dtype, torch's: the same bytes read as that dtype (last axis rescaled, no gradient)."""
        if len(shape) == 1 and isinstance(shape[0], type | np.dtype):
            array = self.xp.ascontiguousarray(self.array)
            return self.new(array.view(shape[0]), requires_grad=False)
        return ops.reshape(self, _sizes("Tensor.view", shape))

    def contiguous(self, memory_format=None):
        """torch.Tensor.contiguous: this tensor when laid out in ``memory_format`` (row-major by
        default), else a copy so laid out (``tricycle.memory_formats``, loaded when asked for)."""
        return memory_formats().contiguous(self, memory_format)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """torch.Tensor.to_dense of a dense tensor: itself (cast to ``dtype`` if given)."""
        return self if dtype is None else self.to(dtype)

    def clone(self, memory_format=None):
        """torch.Tensor.clone: a copy in ``memory_format`` (by default this tensor's strides'
        order, as torch's), whose gradient flows back to this tensor."""
        return memory_formats().clone(self, memory_format)

    def unsqueeze(self, dim: int):
        """torch.Tensor.unsqueeze: a size-1 axis inserted at ``dim`` (``expand_dims``)."""
        return ops.expand_dims(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        """torch.Tensor.flatten: the axes ``start_dim`` to ``end_dim`` merged into one."""
        if self.ndim == 0:
            return ops.reshape(self, (1,))
        start = checks.axis("Tensor.flatten", "start_dim", start_dim, self.ndim, self.shape)
        end = checks.axis("Tensor.flatten", "end_dim", end_dim, self.ndim, self.shape)
        if start > end:
            checks.fail("Tensor.flatten", "end_dim", f"not before start_dim {start_dim}", end_dim)
        merged = math.prod(self.shape[start : end + 1])
        return ops.reshape(self, self.shape[:start] + (merged,) + self.shape[end + 1 :])

    def expand(self, *sizes):
        """torch.Tensor.expand: a read-only broadcast to ``sizes`` (-1 keeps an axis)."""
        sizes, shape = _sizes("Tensor.expand", sizes), self.shape
        lead = len(sizes) - self.ndim
        new = tuple(shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
        try:
            out = self.xp.broadcast_to(self.array, new)
        except ValueError as error:  # a size-1 axis stretches, a new one leads, no other
            raise ValueError(f"Tensor.expand: shape {shape} to {sizes}: {error}") from None
        return unary.unary_op(self, out, lambda dout: binary.unbroadcast(dout, shape), "expand")

    def flip(self, *dims, **named):
        """torch.Tensor.flip: the order along the axes ``dims`` reversed (``flip(1, 2)``,
        ``flip((1, 2))`` or ``flip(dims=(1, 2))``, as torch's)."""
        if named.keys() - {"dims"} or (dims and named):
            checks.fail(
                "Tensor.flip", "arguments", "dims, by position or as dims=", named, TypeError
            )
        dims = (named["dims"],) if named else dims
        axes = checks.axes("Tensor.flip", "dims", _sizes("Tensor.flip", dims), self.ndim)
        return self[tuple(slice(None, None, -1 if a in axes else 1) for a in range(self.ndim))]

    def roll(self, shifts, dims=None):
        """torch.Tensor.roll: values moved by ``shifts`` along ``dims``, wrapping around (a
        tuple of shifts rolls along the tuple of dims of the same length, one by one)."""
        if isinstance(shifts, tuple | list) or isinstance(dims, tuple | list):
            pairs = [tuple(v) if isinstance(v, tuple | list) else (v,) for v in (shifts, dims)]
            if dims is None or len(pairs[0]) != len(pairs[1]):
                checks.fail("Tensor.roll", "dims", f"one dim per shift of {shifts}", dims)
            out = self
            for shift, dim in zip(*pairs):
                out = out.roll(shift, dim)
            return out
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        dim = checks.axis("Tensor.roll", "dims", dims, self.ndim, self.shape)
        cut = -checks.integer("Tensor.roll", "shifts", shifts) % max(self.shape[dim], 1)
        lead = (slice(None),) * dim  # the result: x[cut:] then x[:cut]
        return ops.concatenate([self[lead + (slice(cut, None),)], self[lead + (slice(cut),)]], dim)

    def tile(self, *dims):
        """torch.Tensor.tile (torch's ``repeat``): the whole tensor repeated ``dims[i]`` times
        along axis i, the shorter of ``dims`` and the shape padded with leading 1s. A new
        array, as torch's: the copies may be written in place one by one (no broadcast view)."""
        reps = _sizes("Tensor.tile", dims)
        if any(n < 0 for n in reps):
            checks.fail("Tensor.tile", "dims", "counts >= 0", reps)
        n = max(len(reps), self.ndim)
        reps, shape = (1,) * (n - len(reps)) + reps, (1,) * (n - self.ndim) + self.shape
        spread = ops.reshape(self, [m for size in shape for m in (1, size)])  # (1, s0, 1, s1...)
        tiled = spread.expand(*[m for pair in zip(reps, shape) for m in pair])  # (r0, s0, ...)
        return ops.reshape(tiled.clone(), tuple(r * size for r, size in zip(reps, shape)))

    def narrow(self, dim: int, start: int, length: int):
        """torch.Tensor.narrow: ``length`` entries of axis ``dim`` from ``start`` (a slice)."""
        dim = checks.axis("Tensor.narrow", "dim", dim, self.ndim, self.shape)
        n = self.shape[dim]
        start = checks.integer("Tensor.narrow", "start", start, -n) + (n if start < 0 else 0)
        if start > n or checks.integer("Tensor.narrow", "length", length, 0) + start > n:
            checks.fail("Tensor.narrow", "length", f"at most {n - start} (axis of {n})", length)
        return self[(slice(None),) * dim + (slice(start, start + length),)]

    def t(self):
        """torch.Tensor.t: a matrix transposed; a vector or a number as it is."""
        if self.ndim > 2:
            checks.fail("Tensor.t", "shape", "at most 2 axes (mT swaps the last two)", self.shape)
        return ops.swapaxes(self, 0, 1) if self.ndim == 2 else self

    @property
    def mT(self):  # noqa: N802 - torch's name
        """torch.Tensor.mT: the last two axes swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise ValueError(f"Tensor.mT: needs at least 2 axes, got shape {self.shape}")
        return ops.swapaxes(self, -2, -1)

    def unbind(self, dim: int = 0):
        """torch.Tensor.unbind: the slices along ``dim``, that axis removed, as a tuple."""
        dim = checks.axis("Tensor.unbind", "dim", dim, self.ndim, self.shape)
        return tuple(self[(slice(None),) * dim + (i,)] for i in range(self.shape[dim]))

    def expand_as(self, other):
        """torch.Tensor.expand_as: ``expand`` to ``other``'s shape."""
        return self.expand(other.shape)

    def view_as(self, other):
        """torch.Tensor.view_as: ``view`` (``reshape``) to ``other``'s shape."""
        return self.view(other.shape)

    # indexing by ids (``tricycle.indexing``'s, imported on the first call)
    index_select, gather, topk, masked_select, repeat_interleave, diagonal, diag = imported(
        "indexing", "index_select gather topk masked_select repeat_interleave diagonal diag"
    )
    scatter, scatter_add, nonzero, count_nonzero, unique = imported(
        "indexing", "scatter scatter_add nonzero count_nonzero unique"
    )
    # linear algebra (``tricycle.linalg``'s, under torch's method names)
    inverse, det, logdet, slogdet, matrix_power, pinverse = imported(
        "linalg.tensor_methods", "inverse det logdet slogdet matrix_power pinverse"
    )

    # ------------------------------------------------------------------ math
    def pow(self, exponent):
        """torch.Tensor.pow."""
        return self**exponent

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
        """torch.Tensor.clamp (``clip`` with torch's min/max: min > max gives max): the
        gradient passes inside the bounds. A one-element tensor that needs no gradient is its
        number (``x.clamp_(x.min(), mx)``)."""
        if min is None and max is None:
            raise ValueError("Tensor.clamp: give min, max or both")
        return unary.clip(self, min=clamp_bound(min), max=clamp_bound(max))

    def relu(self):
        """torch.Tensor.relu: x where x > 0, else 0 (gradient 0 at 0, as torch's)."""
        return ops.masked_fill(self, self.array <= 0, 0)

    matmul, mm, bmm = _product("matmul", None), _product("mm", 2), _product("bmm", 3)
    isnan, isinf, isfinite = _float_test("isnan"), _float_test("isinf"), _float_test("isfinite")
    sign, floor, ceil, trunc = (_stepwise(n) for n in ("sign", "floor", "ceil", "trunc"))
    round = _stepwise("round")  # noqa: A003 - torch's name (decimals: its one argument)

    def neg(self):
        """torch.Tensor.neg: -x."""
        return unary.neg(self)

    def square(self):
        """torch.Tensor.square: x * x."""
        return self * self

    def reciprocal(self):
        """torch.Tensor.reciprocal: 1 / x (of integers, float32: true division's rule)."""
        return 1.0 / self

    def rsqrt(self):
        """torch.Tensor.rsqrt: 1 / sqrt(x)."""
        return unary.rdiv_scalar(unary.sqrt(self), 1.0)

    def lerp(self, end, weight):
        """torch.Tensor.lerp: x + weight * (end - x), ``weight`` a number or a tensor."""
        return self + weight * (end - self)

    def where(self, condition, other):
        """torch.Tensor.where: this tensor where ``condition`` holds, else ``other``."""
        return ops.where(getattr(condition, "array", condition), self, other)

    def softmax(self, dim: int, dtype=None):
        """torch.Tensor.softmax: exp(x) / sum(exp(x)) along ``dim``."""
        shifted, dim = self._shifted("Tensor.softmax", dim, dtype)
        e = shifted.exp()
        return e / e.sum(dim, keepdims=True)

    def log_softmax(self, dim: int, dtype=None):
        """torch.Tensor.log_softmax: x - log(sum(exp(x))) along ``dim``."""
        shifted, dim = self._shifted("Tensor.log_softmax", dim, dtype)
        return shifted - shifted.exp().sum(dim, keepdims=True).log()

    def _shifted(self, op: str, dim: int, dtype):
        """x (in ``dtype``) less its maximum along ``dim``, a constant that keeps exp finite."""
        x = self if dtype is None else self._cast(op, dtype)
        dim = checks.axis(op, "dim", dim, x.ndim, x.shape)
        if not x.shape[dim]:
            checks.fail(op, "dim", f"a non-empty axis of {x.shape}", dim)
        return x - x.xp.max(x.array, axis=dim, keepdims=True), dim

    argmax, argmin = _index_of("argmax"), _index_of("argmin")
    amax, amin = _extremum("amax", reduce.max), _extremum("amin", reduce.min)
    any, all = _truth("any"), _truth("all")
    tril, triu = _triangle("tril", False), _triangle("triu", True)

    def std(self, dim=None, unbiased: bool = True, keepdim: bool = False, *, correction=None):
        """torch.Tensor.std: correction 1 by default, as torch's (numpy's ``var`` has 0)."""
        dim, unbiased = (None, dim) if isinstance(dim, bool) else (dim, unbiased)  # std(False)
        if correction is None:
            correction = int(checks.boolean("Tensor.std", "unbiased", unbiased))
        return reduce.var(self, None if dim == () else dim, keepdim, correction).sqrt()

    def logsumexp(self, dim, keepdim: bool = False):
        """torch.Tensor.logsumexp: log(sum(exp(x))) over ``dim``, kept finite (an integer
        tensor in float32, as torch's)."""
        floating = backend.is_float(self.dtype)
        x = self if floating else self._cast("Tensor.logsumexp", backend.DEFAULT_FLOAT)
        return reduce.logsumexp(x, None if dim == () else dim, keepdim)

    def prod(self, dim=None, keepdim: bool = False, dtype=None):
        """torch.Tensor.prod: the product over ``dim`` (default: all), in ``dtype`` if given."""
        x = self if dtype is None else self._cast("Tensor.prod", dtype)
        return reduce.prod(x, None if dim == () else dim, keepdim)

    def cumprod(self, dim=None, dtype=None):
        """torch.Tensor.cumprod: the running product along ``dim`` (flattened for None)."""
        return reduce.cumprod(self if dtype is None else self._cast("Tensor.cumprod", dtype), dim)

    def maximum(self, other):
        """torch.Tensor.maximum: the elementwise maximum; ties share the gradient, as torch's."""
        return binary.maximum(self, binary.constant(other, self, "maximum"))

    def minimum(self, other):
        """torch.Tensor.minimum: the elementwise minimum; ties share the gradient, as torch's."""
        return binary.minimum(self, binary.constant(other, self, "minimum"))

    def norm(self, p="fro", dim=None, keepdim: bool = False):
        """torch.Tensor.norm, a vector norm over ``dim`` (default: all): (sum |x|^p)^(1/p) for a
        p >= 1 ("fro" is 2), max |x| for inf, min |x| for -inf; of gradient 0 at 0, as torch's."""
        p = 2 if isinstance(p, str) and p == "fro" else p
        real = isinstance(p, numbers.Real) and not isinstance(p, bool)
        if not real or not (p >= 1 or p == -math.inf):
            checks.fail("Tensor.norm", "p", "a number >= 1, inf, -inf or 'fro'", p)
        if math.isinf(p):
            return (reduce.max if p > 0 else reduce.min)(unary.abs(self), dim, keepdim)
        if p == 1:
            return reduce.sum(unary.abs(self), dim, keepdim)
        total = reduce.sum(self * self if p == 2 else unary.abs(self) ** p, dim, keepdim)
        zero = (total.array == 0).astype(total.dtype)  # where the root's slope is infinite
        root = unary.sqrt(total + zero) if p == 2 else (total + zero) ** (1 / p)
        return root * (1 - zero)
