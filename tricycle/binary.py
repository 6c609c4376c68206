"""Elementwise ops of two tensors, with numpy broadcasting.

Broadcasting makes an input's gradient come back in the output's shape; ``unbroadcast`` sums
it back down to the input's shape. It is the one place that knows how. A number, list or
array that meets a tensor in an op becomes a tensor by ``constant``, the one place that
decides its dtype.
"""

import math
import operator

import numpy as np

from tricycle import backend, dispatch
from tricycle.backend import is_float
from tricycle.backprop import add_arrays
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def constant(value, like: Tensor, op: str = "an op") -> Tensor:
    """``value`` as a Tensor that needs no gradient, to meet ``like`` in an op, on like's
    device (a Tensor is returned as it is).

    The dtype rule is numpy's (NEP 50), with PyTorch's treatment of 0-d values: data with no
    dtype of its own (a Python number or a list of them), a numpy scalar and a 0-d array are
    weak, and take like's dtype wherever numpy keeps an array's dtype against a Python scalar
    of their kind: any number with a float tensor (``x + 2`` and ``x < [0, 1]`` stay
    float32), an integer or bool with an integer tensor; a float with an integer or bool
    tensor is float32, torch's default float. Otherwise, and for an array with dimensions,
    the value keeps its dtype and the op's result follows numpy's promotion (a float64 array
    with a float32 tensor gives float64; an integer array with a float tensor becomes numpy's
    float here, as two tensors of different kinds follow torch's rule, ``_promoted``).
    Anything else (None, a string) is a TypeError naming ``op``.
    """
    if isinstance(value, Tensor):
        return value
    if backend.is_cupy_array(value) and not like.on_gpu:  # the op reports the two devices
        return like.new(value, requires_grad=False)
    array = like.xp.asarray(value)
    if array.dtype.kind not in "biuf" and not is_float(array.dtype):  # bfloat16 is kind 'V'
        raise TypeError(
            f"{op}: a tensor of shape {like.shape} met {backend.preview(value)} "
            f"({type(value).__name__}); expected a Tensor, an array or a number"
        )
    if array.ndim == 0 or not hasattr(value, "dtype"):  # weak: it may take like's dtype
        kind, target = array.dtype.kind, like.dtype
        if (is_float(target) and kind in "biuf") or (target.kind in "iu" and kind in "biu"):
            array = array.astype(target, copy=False)
        elif kind == "f" and target.kind in "biu":  # a float with integers: torch's float32
            array = array.astype(backend.DEFAULT_FLOAT, copy=False)
    elif array.dtype.kind in "biu" and like.dtype.kind == "f":  # numpy's float, decided here
        array = array.astype(np.result_type(array.dtype, like.dtype), copy=False)
    return like.new(array, requires_grad=False)


def unbroadcast(grad, shape: tuple[int, ...]):
    """Sum ``grad`` over the axes that broadcasting added or stretched to reach ``shape``."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if grad.shape[extra:] == shape and grad.flags.c_contiguous:  # a bias: sum the leading rows
        rows = grad.reshape(-1, math.prod(shape))  # (N, J)
        return dispatch.choose("sum_rows", _sum_rows, rows)(rows).reshape(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1
    )
    return grad.sum(axis=axes, keepdims=True).reshape(shape)


def _sum_rows(rows):
    """(N, J) -> (J,): the sum over the rows (a kernel registered as "sum_rows" may do it as
    one product with a row of ones)."""
    return rows.sum(axis=0)


def _binary(op: str, a: Tensor, b: Tensor, out, da, db) -> Tensor:
    """Wrap ``out``: da/db map the output gradient to a's/b's gradient before unbroadcasting.

    An input that already has the output's shape needs no unbroadcast, so its back_fn is
    ``da``/``db`` itself: one call less per node in the backward pass.
    """
    shape = out.shape
    if a.array.shape != shape:
        da = _unbroadcasting(da, a.array.shape)
    if b.array.shape != shape:
        db = _unbroadcasting(db, b.array.shape)
    return a.new(out, args=(a, b), back_fns=(da, db), name=op)


def _unbroadcasting(fn, shape):
    return lambda dout: unbroadcast(fn(dout), shape)


def _identity(dout):
    return dout


def _negate(dout):
    return -dout


def _aligned(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """torch's rule for a 0-d tensor in host memory beside a GPU tensor (imagenet's
    ``acc1 > best_acc1``, ``best_acc1`` read back from a checkpoint): a number, copied to the
    other's device, where it needs no gradient. Any other pair of devices is ``_apply``'s
    error."""
    if backend._cupy is None or a.on_gpu == b.on_gpu:
        return a, b
    host, other = (a, b) if b.on_gpu else (b, a)
    if host.ndim or host.requires_grad:
        return a, b
    array = backend.to_device_array(host.array, other.array.device.id)
    moved = other.new(array, requires_grad=False)
    return (moved, b) if host is a else (a, moved)


def _promoted(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """torch's rules where numpy's differ. An integer or bool tensor meeting a float tensor
    gives the float's dtype (``F.one_hot(ids) * x`` stays float32, where numpy would give
    float64): the integer one is cast to it, with no gradient. A 0-d float tensor meeting a
    float tensor with axes takes that tensor's dtype (``x_bf16 * scale`` stays bfloat16),
    by a differentiable cast: its gradient comes back in its own dtype. Otherwise numpy's
    promotion, which is torch's."""
    if a.array.dtype is b.array.dtype:  # the common case, read first: one op in most
        return a, b
    a_float, b_float = is_float(a.dtype), is_float(b.dtype)
    if a_float and b_float:
        if a.array.ndim == 0 and b.array.ndim:
            return a._cast("promote", b.dtype), b
        if b.array.ndim == 0 and a.array.ndim:
            return a, b._cast("promote", a.dtype)
        return a, b
    if a_float == b_float:
        return a, b
    if a_float:
        return a, a.new(b.array.astype(a.dtype), requires_grad=False)
    return b.new(a.array.astype(b.dtype), requires_grad=False), b


def floated(x: Tensor, number, divides: bool) -> Tensor:
    """x before an op with a Python ``number``: an integer or bool x as float32 where torch's
    result is a float (``number`` a float, or a true division), else x as it is."""
    if (divides or type(number) is float) and x.array.dtype.kind in "biu":
        return x._cast("promote", backend.DEFAULT_FLOAT)
    return x


def _apply(op: str, fn, a: Tensor, b: Tensor):
    """Compute ``fn(a.array, b.array)`` with a clear error for bad devices or shapes."""
    if backend._cupy is not None:  # with cupy loaded, arrays may live on different devices
        backend.check_same_device(op, a.array, b.array)
    try:
        return fn(a.array, b.array)
    except ValueError:
        raise ValueError(
            f"{op}: shapes {a.shape} and {b.shape} cannot be broadcast together"
        ) from None


def add(a: Tensor, b: Tensor) -> Tensor:
    """a + b"""
    a, b = _promoted(*_aligned(a, b))
    out = _apply("add", add_arrays, a, b)
    return _binary("badd", a, b, out, _identity, _identity)


def sub(a: Tensor, b: Tensor) -> Tensor:
    """a - b"""
    a, b = _promoted(*_aligned(a, b))
    out = _apply("sub", operator.sub, a, b)
    return _binary("bsub", a, b, out, _identity, _negate)


def mul(a: Tensor, b: Tensor) -> Tensor:
    """a * b"""
    a, b = _promoted(*_aligned(a, b))
    out = _apply("mul", operator.mul, a, b)
    return _binary("bmul", a, b, out, lambda d: d * b.array, lambda d: d * a.array)


def div(a: Tensor, b: Tensor) -> Tensor:
    """a / b; two integer or bool tensors are divided as float32, as torch's."""
    a, b = _promoted(*_aligned(a, b))
    if a.array.dtype.kind in "biu" and b.array.dtype.kind in "biu":
        a, b = a._cast("div", backend.DEFAULT_FLOAT), b._cast("div", backend.DEFAULT_FLOAT)
    out = _apply("div", operator.truediv, a, b)
    return _binary("bdiv", a, b, out, lambda d: d / b.array, lambda d: -d * out / b.array)


def pow(a: Tensor, b: Tensor) -> Tensor:  # noqa: A001 - the name from the math
    """a ** b, with PyTorch's conventions where the formulas give 0 * inf:

    d/da is 0 where b == 0 (so 0 ** 0 has gradient 0), and d/db is 0 where a == 0.
    """
    a, b = _promoted(*_aligned(a, b))
    xp = a.xp
    out = _apply("pow", operator.pow, a, b)

    def da(dout):
        exponent = b.array
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 where b == 0: masked
            local = xp.where(exponent == 0, 0, exponent * a.array ** (exponent - 1))
        return dout * local

    def db(dout):
        log_a = xp.log(xp.where(a.array == 0, 1, a.array))
        return dout * out * log_a

    return _binary("bpow", a, b, out, da, db)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise max; where a == b the gradient is split evenly, never doubled."""
    a, b = _promoted(*_aligned(a, b))
    out = _apply("maximum", a.xp.maximum, a, b)

    def share_a():  # 1 where a wins, 0.5 on ties, 0 where b wins
        return _share(a, a.array > b.array, a.array == b.array)

    return _binary("bmax", a, b, out, lambda d: d * share_a(), lambda d: d * (1 - share_a()))


def minimum(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise min; where a == b the gradient is split evenly, never doubled."""
    a, b = _promoted(*_aligned(a, b))
    out = _apply("minimum", a.xp.minimum, a, b)

    def share_a():  # 1 where a wins, 0.5 on ties, 0 where b wins
        return _share(a, a.array < b.array, a.array == b.array)

    return _binary("bmin", a, b, out, lambda d: d * share_a(), lambda d: d * (1 - share_a()))


def clamp(x: Tensor, low, high) -> Tensor:
    """min(max(x, low), high) with tensor bounds (either may be a number or None), all three
    broadcast together, as torch's ``clamp``: where low > high the result is high. The
    gradient, torch's: to x where low <= x <= high, to low where x < low < high, to high
    where x > high or high < low; each summed back to its input's shape."""
    if low is None and high is None:
        raise ValueError("clamp: give min, max or both")
    bounds = [None if b is None else constant(b, x, "clamp") for b in (low, high)]
    lo, hi = (None if b is None else b.array for b in bounds)
    a = x.array
    xp = backend.check_same_device("clamp", a, *(b.array for b in bounds if b is not None))
    out = a if lo is None else xp.maximum(a, lo)
    out = out if hi is None else xp.minimum(out, hi)
    if lo is not None and hi is not None:
        inside, to_low, to_high = (a >= lo) & (a <= hi), (a < lo) & (lo < hi), (a > hi) | (hi < lo)
    elif lo is not None:
        inside, to_low, to_high = a >= lo, a < lo, None
    else:
        inside, to_low, to_high = a <= hi, None, a > hi

    def gradient(shape, where):
        return lambda dout: unbroadcast(xp.where(where, dout, 0), shape)

    args, back_fns = [x], [gradient(x.shape, inside)]
    for bound, where in zip(bounds, (to_low, to_high), strict=True):
        if bound is not None:
            args.append(bound)
            back_fns.append(gradient(bound.shape, where))
    return x.new(out, args=tuple(args), back_fns=tuple(back_fns), name="clamp")


def _share(a: Tensor, wins, ties):
    """The fraction of the gradient that goes to ``a`` in a max/min: 1, 0.5 on ties, or 0."""
    return wins.astype(a.dtype) + 0.5 * ties.astype(a.dtype)


_COMPARISONS = {
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
}


def compare(op: str, a: Tensor, b: Tensor) -> Tensor:
    """Elementwise comparison (``op`` one of < <= > >= == !=): a boolean tensor, no gradient."""
    a, b = _aligned(a, b)
    out = _apply(op, _COMPARISONS[op], a, b)
    return a.new(out, requires_grad=False)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b with numpy's matmul semantics: 1-D operands are vectors, leading axes broadcast.

    With a 1-D operand promoted to a matrix (a row for ``a``, a column for ``b``) and the
    promotion undone on the result: da = dout @ b^T and db = a^T @ dout, each summed back to
    its operand's shape over the broadcast leading axes.
    """
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must not be scalars, got {a.shape} @ {b.shape}")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
        raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
    xp = a.xp
    out = _apply("matmul", xp.matmul, a, b)
    a2 = a.array[None, :] if a.ndim == 1 else a.array  # (..., M, K)
    b2 = b.array[:, None] if b.ndim == 1 else b.array  # (..., K, N)

    def as_matrix(dout):  # the output gradient with the 1-D promotions put back: (..., M, N)
        if b.ndim == 1:
            dout = dout[..., None]
        if a.ndim == 1:
            dout = dout[..., None, :]
        return dout

    def da(dout):
        grad = unbroadcast(xp.matmul(as_matrix(dout), xp.swapaxes(b2, -1, -2)), a2.shape)
        return grad.reshape(a.shape)

    def db(dout):
        grad = unbroadcast(xp.matmul(xp.swapaxes(a2, -1, -2), as_matrix(dout)), b2.shape)
        return grad.reshape(b.shape)

    return a.new(out, args=(a, b), back_fns=(da, db), name="matmul")
