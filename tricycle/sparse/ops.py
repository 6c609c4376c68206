"""torch.sparse's functions on COO tensors (``tricycle.sparse.coo``): ``mm`` (also
``tricycle.spmm``, ``tricycle.mm`` and ``@`` with a sparse first operand), ``addmm``, ``smm``,
``sum``, ``softmax``/``log_softmax``, and ``sampled_addmm`` on a CSR matrix, each made of
differentiable ops on the values, so that the values' gradient is nonzero only at their stored
cells, as torch's."""

import numbers

import numpy as np

from tricycle import checks
from tricycle.sparse.coo import SparseCooTensor, _sparse_input, _zeros_like_values, mm
from tricycle.sparse.coo import sparse_sum as sum  # noqa: A004, F401 - torch.sparse.sum
from tricycle.sparse.csr import SparseCsrTensor


def spmm(input, mat2):  # noqa: A002 - torch's names
    """torch.spmm: ``sparse.mm``."""
    return mm(input, mat2)


def smm(input, mat):  # noqa: A002
    """torch.smm: ``sparse.mm``'s product, made sparse, as torch's answer is."""
    return _sparse_input("smm", input).smm(mat)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: ``beta * mat + alpha * mm(mat1, mat2)``, mat1 sparse."""
    if not (isinstance(beta, numbers.Real) and isinstance(alpha, numbers.Real)):
        checks.fail("sparse.addmm", "beta and alpha", "numbers", (beta, alpha), TypeError)
    product = mm(mat1, mat2)
    product = product if alpha == 1 else product * alpha
    return product + (mat if beta == 1 else mat * beta)


def _groups(s: SparseCooTensor, dim: int):
    """For each stored entry of the coalesced ``s``, the id of its slice along ``dim`` (the
    entries that share every other index), and the count of slices."""
    xp, ids = s.xp, s._ids.array
    others = [d for d in range(s.sparse_dim()) if d != dim]
    flat = xp.zeros(ids.shape[1], dtype=np.int64)
    for d in others:
        flat = flat * int(s.shape[d]) + ids[d]
    slices, group = xp.unique(flat, return_inverse=True)
    return group.reshape(-1), len(slices)


def _shifted_and_total(op: str, input, dim: int, dtype):  # noqa: A002
    """The values of the coalesced input less their slice's max, and each slice's sum of
    their exponentials (gathered to each entry): softmax's pieces."""
    s = _sparse_input(op, input).coalesce()
    if s.dense_dim():
        raise NotImplementedError(f"{op}: tricycle takes sparse tensors of dense_dim 0 here, "
                                  f"got dense_dim {s.dense_dim()}; use to_dense()")  # fmt: skip
    dim = checks.axis(op, "dim", dim, s.ndim, s.shape)
    values = s._vals if dtype is None else s._vals.to(dtype)
    group, count = _groups(s, dim)
    xp, raw = s.xp, values.array
    order = xp.lexsort(xp.stack([raw, group]))  # by slice, then value: each slice's max last
    last = xp.ones(len(order), dtype=bool)
    last[:-1] = group[order][1:] != group[order][:-1]
    peak = raw[order][last]  # (count,) each slice's max, slices in id order
    shifted = values - values.new(peak[group], requires_grad=False)
    totals = _zeros_like_values(s, count).to(values.dtype).index_add(0, group, shifted.exp())
    return s, shifted, totals.index_select(0, group)


def softmax(input, dim: int, *, dtype=None) -> SparseCooTensor:  # noqa: A002
    """torch.sparse.softmax: softmax over ``dim`` of the stored entries, the unstored ones
    counting as -inf (so staying unstored): a sparse tensor on the coalesced input's cells."""
    s, shifted, totals = _shifted_and_total("sparse.softmax", input, dim, dtype)
    return SparseCooTensor(s._ids, shifted.exp() / totals, s.shape, True)


def log_softmax(input, dim: int, *, dtype=None) -> SparseCooTensor:  # noqa: A002
    """torch.sparse.log_softmax: ``softmax``'s logarithm, on the stored entries alone."""
    s, shifted, totals = _shifted_and_total("sparse.log_softmax", input, dim, dtype)
    return SparseCooTensor(s._ids, shifted - totals.log(), s.shape, True)


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):  # noqa: A002
    """torch.sparse.sampled_addmm: a CSR matrix on ``input``'s cells holding ``beta *
    input + alpha * (mat1 @ mat2)`` there alone (each cell's row of mat1 times its column of
    mat2); differentiable to the values, ``mat1`` and ``mat2``."""
    op = "sparse.sampled_addmm"
    if not isinstance(input, SparseCsrTensor):
        checks.fail(op, "input", "a sparse CSR matrix", type(input).__name__, TypeError)
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported by tricycle")
    m, n = input.shape
    shapes = tuple(mat1.shape), tuple(mat2.shape)
    if len(shapes[0]) != 2 or shapes[0][0] != m or shapes[1] != (shapes[0][1], n):
        raise RuntimeError(f"{op}: expected mat1 (m, k) and mat2 (k, n) for an input of size "
                           f"{(m, n)}, got {shapes[0]} and {shapes[1]}")  # fmt: skip
    rows, cols = input._rows(), input._col.array
    picked = (mat1.index_select(0, rows) * mat2.t().index_select(0, cols)).sum(dim=-1)
    values = input._vals * beta + picked * alpha
    return SparseCsrTensor(input._crow, input._col, values, input.shape)
