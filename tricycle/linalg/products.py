"""Products of vectors and matrices, as ``torch.linalg``: ``cross`` (the cross product of
3-vectors), ``vecdot`` (the dot product of vectors along an axis) and ``multi_dot`` (a chain
of matrix products, in the order of fewest multiplications), broadcast as torch's.

Backwards: c = a x b has da = b x g and db = g x a (g the gradient of c: <g, da x b> =
<da, b x g>); vecdot and multi_dot are products and sums of the engine's ops, whose
gradients are theirs.
"""

import math

import numpy as np

from tricycle import binary, checks, ops, reduce
from tricycle.graph import Node as Tensor


def _tensors(op: str, **named) -> None:
    for name, value in named.items():
        if not isinstance(value, Tensor):
            checks.fail(op, name, "a Tensor", value, TypeError)


def _broadcast(op: str, a: Tensor, b: Tensor) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{op}: the shapes {a.shape} and {b.shape} do not broadcast") from None


def cross(a: Tensor, b: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product a x b of the 3-vectors on the axis ``dim`` of a and b (tensors with
    as many axes, the others broadcast)."""
    op = "cross"
    _tensors(op, a=a, b=b)
    if a.ndim != b.ndim:
        raise ValueError(f"{op}: a {a.shape} and b {b.shape} must have as many axes")
    axis = checks.axis(op, "dim", dim, a.ndim, a.shape)
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(
            f"{op}: the axis dim={dim} of a {a.shape} and b {b.shape} must have length 3 "
            "(3-vectors)"
        )
    _broadcast(op, a, b)
    xp = a.xp
    out = xp.cross(a.array, b.array, axis=axis)

    def da(g):
        return binary.unbroadcast(xp.cross(b.array, g, axis=axis), a.shape)

    def db(g):
        return binary.unbroadcast(xp.cross(g, a.array, axis=axis), b.shape)

    return a.new(out, args=(a, b), back_fns=(da, db), name=op)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum_i x_i y_i over the axis ``dim`` of x and y broadcast together."""
    op = "vecdot"
    _tensors(op, x=x, y=y)
    shape = _broadcast(op, x, y)
    axis = checks.axis(op, "dim", dim, len(shape), shape)
    return reduce.sum(binary.mul(x, y), axis - len(shape))


def _chain_order(sizes: list[int]) -> list[list[int]]:
    """split[i][j]: where the product of matrices i..j (matrix t of shape sizes[t] x
    sizes[t + 1]) splits in the order of fewest multiplications (dynamic programming)."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + sizes[i] * sizes[s + 1] * sizes[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s
    return split


def multi_dot(tensors) -> Tensor:
    """The product of two or more matrices, multiplied in the order of fewest
    multiplications; the first may be a vector (a row), the last too (a column), which the
    result then lacks, as torch's. No broadcasting: every other tensor is a matrix."""
    op = "multi_dot"
    if not isinstance(tensors, list | tuple) or len(tensors) < 2:
        checks.fail(op, "tensors", "a list or tuple of two or more Tensors", tensors, TypeError)
    for i, t in enumerate(tensors):
        _tensors(op, **{f"tensors[{i}]": t})
        ends = i in (0, len(tensors) - 1)
        if not (t.ndim == 2 or (ends and t.ndim == 1)):
            expected = "1-D or 2-D (the first and the last)" if ends else "2-D (a matrix)"
            checks.fail(op, f"tensors[{i}]'s shape", expected, t.shape)
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"{op}: the tensors must have one dtype, got {tensors[0].dtype} "
                            f"and {t.dtype} (tensors[{i}])")  # fmt: skip
    row, column = tensors[0].ndim == 1, tensors[-1].ndim == 1
    matrices = list(tensors)
    if row:
        matrices[0] = ops.expand_dims(matrices[0], 0)
    if column:
        matrices[-1] = ops.expand_dims(matrices[-1], -1)
    for i in range(len(matrices) - 1):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise ValueError(f"{op}: tensors[{i}] {tensors[i].shape} and tensors[{i + 1}] "
                             f"{tensors[i + 1].shape} cannot be multiplied")  # fmt: skip
    split = _chain_order([matrices[0].shape[0]] + [t.shape[1] for t in matrices])

    def product(i: int, j: int) -> Tensor:
        if i == j:
            return matrices[i]
        return binary.matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    out = product(0, len(matrices) - 1)
    squeezed = tuple(axis for axis, one in ((0, row), (1, column)) if one)
    return ops.squeeze(out, squeezed) if squeezed else out


__all__ = ["cross", "multi_dot", "vecdot"]
