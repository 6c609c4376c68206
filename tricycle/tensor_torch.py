"""The ``torch.Tensor`` methods a PyTorch port calls, on the engine's ops: ``TorchTensorMethods``,
a base class of ``Tensor`` (``tricycle.tensor``), as ``tricycle.module_torch`` is of ``Layer``.

Each takes torch's arguments (``dim``, ``keepdim``) and wraps differentiable ops of ``unary``,
``reduce`` and ``ops``. No op relies on sharing memory: ``view`` is ``reshape``. Tensors are
functional: ``add_``, ``fill_``, ``x[i] = v``... write into ``.array`` only off the graph (a
leaf needing no gradient, a parameter under ``no_grad()``), else raise; a recorded graph keeps
the arrays it saved, so writing into its inputs changes its gradients. ``Tensor``'s own ``sum``,
``mean``, ``max``, ``min``, ``var``, ``split`` take torch's keywords too, ``repeat`` is numpy's;
``x.size`` is numpy's count, and called, torch's ``x.size(dim)``. ``softmax`` over any ``dim``
composes ops (``tricycle.functions``' fused last-axis one sits a layer above the engine).
"""

import math
import operator
from collections import namedtuple

import numpy as np

from tricycle import backend, checks, ops, reduce, unary
from tricycle.binary import unbroadcast
from tricycle.graph import Node, grad_enabled, no_grad

TopK = namedtuple("TopK", ["values", "indices"])  # as torch.return_types.topk


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


def _cast_to(name: str, dtype):
    def cast(self):
        return self._cast(f"Tensor.{name}", dtype)

    cast.__doc__ = f"torch.Tensor.{name}: cast to {np.dtype(dtype)} (see ``type_as``)."
    return cast


def _index_of(name: str):
    def index(self, dim: int | None = None, keepdim: bool = False):
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


def _new_filled(name: str, value):
    def new_filled(self, *size, dtype=None, device=None, requires_grad: bool = False):
        return self.new_full(_sizes(f"Tensor.{name}", size), value, dtype, device, requires_grad)

    new_filled.__doc__ = f"torch.Tensor.{name}: {value}s of this tensor's dtype and device."
    return new_filled


def _in_place(name: str, out_of_place, instead: str):
    def in_place(self, *args, **kwargs):
        self._writable(name, instead)
        with no_grad():
            return self._write(name, out_of_place(self, *args, **kwargs))

    in_place.__doc__ = f"torch.Tensor.{name}: ``{instead}`` written into this tensor."
    return in_place


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


class TorchTensorMethods:
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
        """torch.Tensor.view, which is ``reshape`` here (see the module's doc on memory)."""
        return ops.reshape(self, _sizes("Tensor.view", shape))

    def contiguous(self, memory_format=None):
        """torch.Tensor.contiguous: this tensor when C-contiguous, else a contiguous copy."""
        if self.array.flags.c_contiguous:
            return self
        return unary.unary_op(
            self, self.xp.ascontiguousarray(self.array), lambda d: d, "contiguous"
        )

    def clone(self, memory_format=None):
        """torch.Tensor.clone: a copy, whose gradient flows back to this tensor."""
        return unary.unary_op(self, self.array.copy(), lambda dout: dout, "clone")

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
        return unary.unary_op(self, out, lambda dout: unbroadcast(dout, shape), "expand")

    def flip(self, *dims):
        """torch.Tensor.flip: the order along the axes ``dims`` reversed."""
        axes = checks.axes("Tensor.flip", "dims", _sizes("Tensor.flip", dims), self.ndim)
        return self[tuple(slice(None, None, -1 if a in axes else 1) for a in range(self.ndim))]

    def roll(self, shifts, dims=None):
        """torch.Tensor.roll: values moved by ``shifts`` along ``dims``, wrapping around."""
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        dim = checks.axis("Tensor.roll", "dims", dims, self.ndim, self.shape)
        cut = -checks.integer("Tensor.roll", "shifts", shifts) % max(self.shape[dim], 1)
        lead = (slice(None),) * dim  # the result: x[cut:] then x[:cut]
        return ops.concatenate([self[lead + (slice(cut, None),)], self[lead + (slice(cut),)]], dim)

    def narrow(self, dim: int, start: int, length: int):
        """torch.Tensor.narrow: ``length`` entries of axis ``dim`` from ``start`` (a slice)."""
        dim = checks.axis("Tensor.narrow", "dim", dim, self.ndim, self.shape)
        n = self.shape[dim]
        start = checks.integer("Tensor.narrow", "start", start, -n) + (n if start < 0 else 0)
        if start > n or checks.integer("Tensor.narrow", "length", length, 0) + start > n:
            checks.fail("Tensor.narrow", "length", f"at most {n - start} (axis of {n})", length)
        return self[(slice(None),) * dim + (slice(start, start + length),)]

    def _ids(self, op: str, index):
        """``index`` (a Tensor, array or list of integers) as an array beside this tensor's."""
        ids = self.xp.asarray(index.array if isinstance(index, Node) else index)
        if ids.dtype.kind not in "iu":
            checks.fail(op, "index", "integers", index, TypeError)
        return ids

    def index_select(self, dim: int, index):
        """torch.Tensor.index_select: the entries ``index`` (1-D) of axis ``dim``."""
        dim = checks.axis("Tensor.index_select", "dim", dim, self.ndim, self.shape)
        ids = self._ids("Tensor.index_select", index)
        if ids.ndim > 1:
            checks.fail("Tensor.index_select", "index", "1-D", index)
        return self[(slice(None),) * dim + (ids.reshape(-1),)]

    def gather(self, dim: int, index):
        """torch.Tensor.gather: out[i][j] = x[index[i][j]][j] for dim 0 (``getitem``)."""
        dim = checks.axis("Tensor.gather", "dim", dim, self.ndim, self.shape)
        ids = self._ids("Tensor.gather", index)
        longer = [d for d, (m, n) in enumerate(zip(ids.shape, self.shape)) if m > n and d != dim]
        if ids.ndim != self.ndim or longer:
            expected = f"as many axes as {self.shape}, none longer but along dim {dim}"
            checks.fail("Tensor.gather", "index shape", expected, ids.shape)
        at = list(self.xp.ogrid[tuple(slice(m) for m in ids.shape)])  # (m0, 1, ...), (1, m1, ...)
        at[dim] = ids
        return self[tuple(at)]

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
        """torch.Tensor.topk: (values, indices) of the ``k`` largest (smallest), sorted."""
        dim = checks.axis("Tensor.topk", "dim", dim, self.ndim, self.shape)
        if checks.integer("Tensor.topk", "k", k, 0) > self.shape[dim]:
            checks.fail("Tensor.topk", "k", f"at most {self.shape[dim]} (shape {self.shape})", k)
        ids = ops.argsort(self, dim, descending=largest).array[(slice(None),) * dim + (slice(k),)]
        return TopK(self.gather(dim, ids), self.new(ids, requires_grad=False))

    # ------------------------------------------------------------------ math
    def pow(self, exponent):
        """torch.Tensor.pow."""
        return self**exponent

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
        """torch.Tensor.clamp with number bounds (``clip``): the gradient passes inside them."""
        if min is None and max is None:
            raise ValueError("Tensor.clamp: give min, max or both")
        return unary.clip(self, min, max)

    def relu(self):
        """torch.Tensor.relu: x where x > 0, else 0 (gradient 0 at 0, as torch's)."""
        return ops.masked_fill(self, self.array <= 0, 0)

    matmul, mm, bmm = _product("matmul", None), _product("mm", 2), _product("bmm", 3)

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
        if correction is None:
            correction = int(checks.boolean("Tensor.std", "unbiased", unbiased))
        return reduce.var(self, dim, keepdim, correction).sqrt()

    def norm(self, p="fro", dim=None, keepdim: bool = False):
        """torch.Tensor.norm for p = 2 ("fro"): sqrt(sum(x^2)), of gradient 0 at 0 as torch's."""
        if p not in (2, "fro"):
            checks.fail("Tensor.norm", "p", "2 or 'fro' (sum |x| ** p ** (1 / p) otherwise)", p)
        total = reduce.sum(self * self, dim, keepdim)
        zero = (total.array == 0).astype(total.dtype)  # where the root's slope is infinite
        return unary.sqrt(total + zero) * (1 - zero)

    # ------------------------------------------------------------------ dtypes, new tensors
    def _cast(self, op: str, dtype):
        """This tensor in ``dtype``, its gradient cast back (none to an integer dtype)."""
        dtype, source = backend.numeric_dtype(dtype, op), self.dtype
        if dtype == source:
            return self
        array = backend.cast(self.array, dtype, op)  # refuses NaN or too large for an int
        if not backend.is_float(dtype):
            return self.new(array, requires_grad=False)
        return unary.unary_op(self, array, lambda dout: dout.astype(source), "cast")

    def type_as(self, other):
        """torch.Tensor.type_as: cast to ``other``'s dtype."""
        return self._cast("Tensor.type_as", other.dtype)

    double, half = _cast_to("double", np.float64), _cast_to("half", np.float16)
    long = _cast_to("long", np.int64)
    new_zeros, new_ones = _new_filled("new_zeros", 0), _new_filled("new_ones", 1)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad: bool = False):
        """torch.Tensor.new_full: ``fill_value`` everywhere, of this tensor's dtype and device."""
        values = np.full(_sizes("Tensor.new_full", (size,)), fill_value)  # cast by new_tensor
        return self.new_tensor(values, dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False):
        """torch.Tensor.new_tensor: a leaf copy of ``data``, of this tensor's dtype and device."""
        checks.boolean("Tensor.new_tensor", "requires_grad", requires_grad)
        data = backend.to_host_array(getattr(data, "array", data))
        array = backend.numeric_array(data, self.dtype if dtype is None else dtype).copy()
        on = backend.parse_device(self.device if device is None else device, "Tensor.new_tensor")
        return self.new(backend.move(array, on), requires_grad=requires_grad)

    # ------------------------------------------------------------------ in place
    def requires_grad_(self, requires_grad: bool = True):
        """torch.Tensor.requires_grad_: make this leaf a parameter (True) or a constant."""
        checks.boolean("Tensor.requires_grad_", "requires_grad", requires_grad)
        if self.args is not None and not requires_grad:  # an op's output: its graph stays
            checks.fail("Tensor.requires_grad_", "requires_grad", "True on an op's output "
                        "(detach() makes a constant of it)", requires_grad)  # fmt: skip
        if requires_grad and not backend.is_float(self.dtype):
            checks.fail("Tensor.requires_grad_", "dtype", "a float dtype", self.dtype, TypeError)
        self.requires_grad = requires_grad
        return self

    def _writable(self, method: str, instead: str) -> None:
        """Raise unless writing into this tensor's array leaves every graph as it was."""
        if self.args is not None:
            why = "it was made by an op in a graph whose backward needs its values"
        elif self.requires_grad and grad_enabled():
            why = "it requires grad: write into a parameter under tricycle.no_grad()"
        else:
            return
        raise RuntimeError(f"Tensor.{method}: cannot write in place into this tensor (shape "
                           f"{self.shape}): {why}; tricycle's tensors are functional: use "
                           f"{instead} and keep the result")  # fmt: skip

    def _write(self, method: str, value, casting: bool = False, index=Ellipsis):
        """``value`` written at ``index`` (a float into integers only when ``casting``)."""
        array = getattr(value, "array", value)
        if hasattr(array, "dtype"):
            if not casting and backend.is_float(array.dtype) and not backend.is_float(self.dtype):
                checks.fail(f"Tensor.{method}", "value", f"{self.dtype}", array.dtype, TypeError)
            if backend.device_of(array) != self.device:  # onto this tensor's device
                array = backend.move(array, self.array.device.id if self.on_gpu else None)
        try:
            self.array[index] = array
        except ValueError as error:  # a shape that does not broadcast
            raise ValueError(f"Tensor.{method}: into shape {self.shape}: {error}") from None
        return self

    add_ = _in_place("add_", lambda x, y, alpha=1: x + y * alpha, "x + alpha * y")
    mul_ = _in_place("mul_", operator.mul, "x * y")
    masked_fill_ = _in_place("masked_fill_", ops.masked_fill, "masked_fill")

    def fill_(self, value):
        """torch.Tensor.fill_: ``value`` (a number or a one-element tensor) everywhere."""
        self._writable("fill_", "new_full")
        value = value.item() if isinstance(value, Node) else value  # a one-element tensor
        return self._write("fill_", value, True)

    def zero_(self):
        """torch.Tensor.zero_: zeros everywhere, off the graph."""
        self._writable("zero_", "new_zeros")
        return self._write("zero_", 0)

    def copy_(self, src, non_blocking: bool = False):
        """torch.Tensor.copy_: the values of ``src`` (broadcast, cast, moved to this device)."""
        self._writable("copy_", "clone or a new tensor")
        checks.boolean("Tensor.copy_", "non_blocking", non_blocking)
        src = src if hasattr(getattr(src, "array", src), "dtype") else np.asarray(src)
        return self._write("copy_", src, casting=True)

    def __setitem__(self, index, value):
        """``x[index] = value``, as torch's and numpy's, off the graph."""
        self._writable("__setitem__", "tricycle.where or masked_fill")
        self._write("__setitem__", value, True, ops._unwrap_index(index, self.xp))

    # named as Python's builtins: last, so that no annotation above reads them
    float = _cast_to("float", np.float32)
