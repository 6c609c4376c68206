"""torch.sparse's functions on COO tensors (``tricycle.sparse.coo``): ``mm`` (also
``tricycle.spmm``, ``tricycle.mm`` and ``@`` with a sparse first operand), ``addmm``, ``smm``,
``sum`` and ``softmax``/``log_softmax``, each made of differentiable ops on the values, so
that the values' gradient is nonzero only at their stored cells, as torch's."""

import numbers

import numpy as np

from tricycle import checks
from tricycle.factories import zeros
from tricycle.graph import Node
from tricycle.sparse.coo import SparseCooTensor, _ids, _zeros_like_values


def _sparse_input(op: str, value, name: str = "input") -> SparseCooTensor:
    if not isinstance(value, SparseCooTensor):
        checks.fail(op, name, "a sparse COO tensor (tricycle.sparse_coo_tensor, to_sparse())",
                    type(value).__name__, TypeError)  # fmt: skip
    return value


def mm(mat1, mat2):
    """torch.sparse.mm / torch.spmm: the dense (n, p) product of a sparse (n, m) ``mat1`` (2
    sparse axes) and a dense (m, p) ``mat2``: each stored entry (i, j, v) adds v * mat2[j] to
    row i. Gradients reach the values (at their cells) and ``mat2``."""
    op = "sparse.mm"
    a = _sparse_input(op, mat1, "mat1")
    if not isinstance(mat2, Node):
        checks.fail(op, "mat2", "a dense Tensor", type(mat2).__name__, TypeError)
    if a.sparse_dim() != 2 or a.dense_dim() != 0:
        got = f"sparse_dim {a.sparse_dim()}, dense_dim {a.dense_dim()}"
        raise RuntimeError(f"{op}: mat1 must be a sparse matrix (sparse_dim 2, dense_dim 0), "
                           f"got {got}")  # fmt: skip
    if mat2.ndim != 2 or mat2.shape[0] != a.shape[1]:
        shapes = f"{tuple(a.shape)} and {tuple(mat2.shape)}"
        raise RuntimeError(f"{op}: shapes {shapes} cannot be multiplied: expected a 2-D mat2 "
                           "of as many rows as mat1 has columns")  # fmt: skip
    if np.dtype(mat2.dtype) != np.dtype(a.dtype):
        raise RuntimeError(f"{op}: expected one dtype, got {a.dtype} (mat1) and "
                           f"{mat2.dtype} (mat2), as torch's")  # fmt: skip
    rows, cols = a._ids.array
    products = a._vals.reshape(-1, 1) * mat2.index_select(0, cols)  # (nnz, p)
    out = zeros(a.shape[0], mat2.shape[1], dtype=mat2.dtype, device=mat2.device)
    return out.index_add(0, rows, products)


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


def sum(input, dim=None, dtype=None):  # noqa: A001, A002 - torch's names
    """torch.sparse.sum: the sum of all entries (a dense 0-d tensor) or over ``dim`` (an int
    or a tuple): dense when every sparse axis is summed, else sparse (coalesced)."""
    op = "sparse.sum"
    s = _sparse_input(op, input)
    values = s._vals if dtype is None else s._vals.to(dtype)
    if dim is None:
        return values.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = sorted({checks.axis(op, "dim", d, s.ndim, s.shape) for d in dims})
    if len(dims) != len(dim if isinstance(dim, tuple | list) else dims):
        checks.fail(op, "dim", "distinct axes", dim)
    sd = s.sparse_dim()
    summed_dense = tuple(d - sd + 1 for d in dims if d >= sd)
    if summed_dense:
        values = values.sum(dim=summed_dense)
    kept = [d for d in range(sd) if d not in dims]
    if not kept:
        return values.sum(dim=0)
    size = [n for d, n in enumerate(s.shape) if d not in dims]
    out = SparseCooTensor(_ids(values, s._ids.array[kept]), values, size)
    return out.coalesce()


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
