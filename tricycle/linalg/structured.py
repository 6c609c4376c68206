"""Matrices of a structure, as ``torch.linalg``: ``vander`` builds the Vandermonde matrix of
vectors (the powers x^0, x^1, ..., x^(N-1) of each entry, ascending, unlike numpy's) and
``diagonal`` reads a diagonal of the last two axes (``Tensor.diagonal`` with torch.linalg's
defaults).

vander's backward: V_ij = x_i^j, so dx_i = sum_{j >= 1} g_ij j x_i^(j-1) = sum_j g_ij j
V_i(j-1), read off V itself (no division: finite at x = 0).
"""

from tricycle import checks, indexing
from tricycle.graph import Node as Tensor


def vander(x: Tensor, N: int | None = None) -> Tensor:  # noqa: N803 - torch's name
    """The Vandermonde matrices (..., n, N) of x (..., n): column j holds x^j; N is n if
    None, and must be above 1 (torch's rule); integers stay integers."""
    op = "vander"
    if not isinstance(x, Tensor):
        checks.fail(op, "x", "a Tensor", x, TypeError)
    if x.ndim < 1:
        checks.fail(op, "x's shape", "(..., n): vectors on the last axis", x.shape)
    N = x.shape[-1] if N is None else checks.integer(op, "N", N)  # noqa: N806
    if N <= 1:
        checks.fail(op, "N", "greater than 1", N)
    xp = x.xp
    a = x.array
    columns = xp.concatenate([xp.ones_like(a)[..., None], xp.repeat(a[..., None], N - 1, -1)], -1)
    V = xp.cumprod(columns, axis=-1)  # (..., n, N): 1, x, x^2, ...

    def back_fn(g):
        return (g[..., 1:] * xp.arange(1, N, dtype=V.dtype) * V[..., :-1]).sum(axis=-1)

    return x.new(V, args=(x,), back_fns=(back_fn,), name=op)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The entries (i, i + offset) of the axes ``dim1`` and ``dim2`` of A (the last two by
    default), as the last axis of the result: ``A.diagonal(offset, dim1, dim2)``."""
    if not isinstance(A, Tensor):
        checks.fail("diagonal", "A", "a Tensor", A, TypeError)
    return indexing.diagonal(A, offset, dim1, dim2)


__all__ = ["diagonal", "vander"]
