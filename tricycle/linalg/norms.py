"""Norms, as ``torch.linalg``: ``vector_norm`` (over any axes), ``matrix_norm`` (over two
axes) and ``norm`` (either, chosen by its arguments as torch's).

vector_norm of x over ``dim``, for any real ord:

    ord = inf, -inf:   max |x|, min |x|
    ord = 0:           the number of nonzero entries (of gradient zero)
    otherwise:         (sum |x|^ord)^(1/ord)

Backward (G the output's gradient, N the norm), as torch's:

    ord = 1:           G sign(x)
    ord = inf, -inf:   G sign(x) / (the number of ties) where |x| = N, else 0
    otherwise:         G sign(x) |x|^(ord-1) N^(1-ord)     (0 where x = 0 for ord < 1, and
                                                             where N = 0 for ord > 1)

matrix_norm composes differentiable ops: "fro" is vector_norm over the two axes, "nuc" the
sum of the singular values (``svdvals``), 2 and -2 the largest and smallest of them, 1 and
-1 the largest and smallest column sum of |A|, inf and -inf the same over rows (ties share
the gradient evenly, as torch's ``amax``).
"""

import importlib
import math

import numpy as np

from tricycle import checks, ops, reduce, unary
from tricycle.graph import Node as Tensor
from tricycle.graph import check_float
from tricycle.linalg.singular import svdvals


def _check_ord(op: str, ord) -> float:  # noqa: A002 - torch's name
    if not checks.is_real(ord):
        checks.fail(op, "ord", "a real number (inf and -inf included)", ord, TypeError)
    return float(ord)


def _tensor_in(op: str, x, dtype) -> Tensor:
    """``x``, a Tensor, cast to ``dtype`` if one is given (torch's ``dtype=``: computing a
    float32 tensor's norm in float64, say)."""
    if not isinstance(x, Tensor):
        checks.fail(op, "x", "a Tensor", x, TypeError)
    return x if dtype is None else x.to(dtype=dtype)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The ``ord``-norm of x over the axes ``dim`` (every axis by default, the tensor read as
    one vector): shape x's without ``dim`` (kept as size 1 if ``keepdim``)."""
    op = "vector_norm"
    x = _tensor_in(op, x, dtype)
    if x.dtype.kind == "c":  # the norm of the magnitudes, as torch's
        magnitudes = importlib.import_module("tricycle.complex_tensor").abs(x)  # above: by name
        return vector_norm(magnitudes, ord, dim, keepdim)
    check_float(op, x)
    p = _check_ord(op, ord)
    checks.boolean(op, "keepdim", keepdim)
    axes = checks.axes(op, "dim", dim, x.ndim, x.shape)
    if math.isinf(p) and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: the {ord} norm of an empty dim of shape {x.shape} is undefined")
    xp, a = x.xp, x.array
    magnitude = xp.abs(a)
    if p == math.inf:
        norm = magnitude.max(axis=axes, keepdims=True)
    elif p == -math.inf:
        norm = magnitude.min(axis=axes, keepdims=True)
    elif p == 0:
        norm = (a != 0).sum(axis=axes, keepdims=True).astype(a.dtype)
    elif p == 1:
        norm = magnitude.sum(axis=axes, keepdims=True)
    elif p == 2:
        norm = xp.sqrt((a * a).sum(axis=axes, keepdims=True))
    else:
        with np.errstate(divide="ignore"):  # 0 ** a negative ord: inf, and a norm of 0
            norm = (magnitude**p).sum(axis=axes, keepdims=True) ** (1 / p)

    def back_fn(dout):
        g = dout if keepdim else dout.reshape(norm.shape)  # (..., 1, ...): keepdims' shape
        if p == 0:
            return xp.zeros_like(a)
        if p == 1:
            return g * xp.sign(a)
        if math.isinf(p):  # the gradient shared among the entries at the norm
            ties = magnitude == norm
            return g * xp.sign(a) * ties / ties.sum(axis=axes, keepdims=True)
        if p == 2:
            safe = xp.where(norm > 0, norm, 1)  # 0 where the norm is 0
            return g * xp.where(norm > 0, a / safe, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = xp.sign(a) * xp.where(a != 0, magnitude ** (p - 1), 0)
            if p < 1:
                return g * scaled * norm ** (1 - p)
            return g * scaled * xp.where(norm > 0, 1 / norm ** (p - 1), 0)

    out = norm if keepdim else norm.reshape([n for i, n in enumerate(x.shape) if i not in axes])
    return x.new(out, args=(x,), back_fns=(back_fn,), name=f"vector_norm {ord}")


MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_dims(op: str, A: Tensor, dim) -> tuple[int, int]:
    if not (isinstance(dim, tuple | list) and len(dim) == 2):
        checks.fail(op, "dim", "a pair of axes (two distinct integers)", dim, TypeError)
    rows, cols = (checks.axis(op, "dim", d, A.ndim, A.shape) for d in dim)
    if rows == cols:
        checks.fail(op, "dim", "two distinct axes", dim)
    return rows, cols


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The ``ord``-norm ("fro", "nuc", 1, -1, 2, -2, inf, -inf) of the matrices on the axes
    ``dim`` (rows, columns) of A: shape A's without them (size 1 if ``keepdim``)."""
    op = "matrix_norm"
    A = _tensor_in(op, A, dtype)
    if A.dtype.kind == "c" and ord not in ("nuc", 2, -2):  # of the magnitudes, as torch's
        magnitudes = importlib.import_module("tricycle.complex_tensor").abs(A)  # above: by name
        return matrix_norm(magnitudes, ord, dim, keepdim)
    if A.dtype.kind != "c":  # (complex: the singular values' ords, through svdvals)
        check_float(op, A)
    if A.ndim < 2:
        checks.fail(op, "A's shape", "(..., m, n): matrices on two axes", A.shape)
    known = ord in ("fro", "nuc") if isinstance(ord, str) else checks.is_real(ord)
    if not (known and ord in MATRIX_ORDS):
        checks.fail(op, "ord", "one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf", ord)
    checks.boolean(op, "keepdim", keepdim)
    rows, cols = _matrix_dims(op, A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):  # of the singular values, the matrices moved to the last axes
        others = [i for i in range(A.ndim) if i not in (rows, cols)]
        S = svdvals(A.permute(*others, rows, cols))  # (..., k) (the method: complex too)
        if ord == "nuc":
            out = reduce.sum(S, -1)
        else:
            out = (S.amax if ord == 2 else S.amin)(-1)
        if keepdim:
            for axis in sorted((rows, cols)):
                out = ops.expand_dims(out, axis)
        return out
    summed, across = (rows, cols) if abs(ord) == 1 else (cols, rows)  # column or row sums
    sums = reduce.sum(unary.abs(A), summed, keepdims=True)
    out = (sums.amax if ord > 0 else sums.amin)(across, keepdim=True)
    return out if keepdim else ops.squeeze(out, (rows, cols))


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """torch.linalg.norm: a vector norm over an int ``dim``, a matrix norm over a pair; with
    no ``dim``, the 2-norm of every entry when ``ord`` is None, else the vector norm of a
    1-D A or the matrix norm of a 2-D one."""
    op = "norm"
    A = _tensor_in(op, A, dtype)
    if dim is None and ord is not None and A.ndim not in (1, 2):
        raise ValueError(
            f"{op}: with ord={ord!r} and no dim, A must be 1-D or 2-D, got shape {A.shape}"
        )
    matrix = (dim is None and ord is not None and A.ndim == 2) or (
        isinstance(dim, tuple | list) and len(dim) == 2
    )
    if matrix:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim)  # fmt: skip
    if isinstance(ord, str):
        checks.fail(op, "ord", f"a number for a vector norm (dim={dim!r})", ord)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim)


__all__ = ["matrix_norm", "norm", "vector_norm"]
