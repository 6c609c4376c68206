"""torch's elementwise ops on sparse COO tensors beside ``tricycle.sparse.coo``'s own, and a
dense tensor meeting a sparse one in ``+``, ``-`` and ``@``.

- ``mul``: a sparse tensor times a sparse tensor of its size is sparse on the cells both
  store (their values multiplied: the same pattern gives the same cells); times a dense
  tensor (broadcast to its size) sparse on its own cells, as torch's; times a number or a
  0-d tensor, its values scaled.
- ``pow`` (a nonzero number: zero's power would fill the unstored cells, which torch refuses)
  and ``sqrt`` act on the values of the coalesced tensor, as torch's.
- ``dense + sparse`` and ``dense - sparse`` are dense (one size: torch does not broadcast
  them); ``dense @ sparse`` is dense, ``(sparseᵀ @ denseᵀ)ᵀ``. Each is made of differentiable
  ops on the values, so gradients reach them at their cells and the dense operand.
"""

import numbers

import numpy as np

from tricycle import checks
from tricycle.graph import Node
from tricycle.sparse.coo import SparseCooTensor, _flat, _ids, mm


def _scale(s: SparseCooTensor, factor) -> SparseCooTensor:
    return SparseCooTensor(s._ids, s._vals * factor, s.shape, s._coalesced)


def mul(input, other) -> SparseCooTensor:  # noqa: A002 - torch's names
    """torch.mul with a sparse COO ``input`` (see the module's doc)."""
    if isinstance(other, numbers.Number) or isinstance(other, Node) and other.ndim == 0:
        return _scale(input, other)
    if isinstance(other, SparseCooTensor):
        return _mul_sparse(input, other)
    if isinstance(other, Node):
        return _mul_dense(input, other)
    checks.fail("mul", "other", "a number, a Tensor or a sparse tensor", type(other).__name__,
                TypeError)  # fmt: skip


def _mul_sparse(a: SparseCooTensor, b: SparseCooTensor) -> SparseCooTensor:
    if a.shape != b.shape or a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"mul: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a.shape)} != {list(b.shape)} (sparse_dim {a.sparse_dim()} "
                           f"and {b.sparse_dim()})")  # fmt: skip
    both_coalesced = a.is_coalesced() and b.is_coalesced()
    a, b = a.coalesce(), b.coalesce()
    xp, sizes = a.xp, a.shape[: a.sparse_dim()]
    cells_a, cells_b = _flat(xp, a._ids.array, sizes), _flat(xp, b._ids.array, sizes)
    at = xp.minimum(xp.searchsorted(cells_b, cells_a), max(len(cells_b) - 1, 0))
    shared = cells_b[at] == cells_a if len(cells_b) else xp.zeros(len(cells_a), dtype=bool)
    mine, theirs = xp.nonzero(shared)[0], at[shared]
    values = a._vals.index_select(0, mine) * b._vals.index_select(0, theirs)
    return SparseCooTensor(_ids(values, a._ids.array[:, mine]), values, a.shape, both_coalesced)


def _mul_dense(s: SparseCooTensor, dense) -> SparseCooTensor:
    try:
        spread = dense.expand(*s.shape)
    except (ValueError, RuntimeError):
        raise RuntimeError(
            f"mul: a sparse tensor of size {list(s.shape)} meets a dense one of "
            f"shape {list(dense.shape)}, which does not broadcast to it"
        ) from None
    picked = spread[tuple(_ids(s._vals, row) for row in s._ids.array)]  # (nnz, *dense)
    return SparseCooTensor(s._ids, s._vals * picked, s.shape, s._coalesced)


def pow(input, exponent) -> SparseCooTensor:  # noqa: A001, A002 - torch's names
    """torch.pow of a sparse COO tensor by a number: its coalesced values raised."""
    if not isinstance(exponent, numbers.Real) or isinstance(exponent, bool):
        checks.fail("pow", "exponent", "a number (a sparse base takes a scalar exponent)",
                    type(exponent).__name__, TypeError)  # fmt: skip
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make "
                           "the result tensor dense")  # fmt: skip
    s = input.coalesce()
    return SparseCooTensor(s._ids, s._vals**exponent, s.shape, True)


def sqrt(input) -> SparseCooTensor:  # noqa: A002
    """torch.sqrt of a sparse COO tensor: the square roots of its coalesced values."""
    s = input.coalesce()
    return SparseCooTensor(s._ids, s._vals.sqrt(), s.shape, True)


def add_to_dense(dense, sparse, alpha=1, op: str = "add"):
    """``dense + alpha * sparse``: dense, of one size (torch's message when they differ)."""
    if not isinstance(dense, Node):
        dense = sparse._vals.new(np.asarray(dense), requires_grad=False)
    if tuple(dense.shape) != tuple(sparse.shape):
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size "
                           f"{list(sparse.shape)} (FYI: dense-sparse addition does not "
                           "currently support broadcasting)")  # fmt: skip
    return dense + (sparse if alpha == 1 else _scale(sparse, alpha)).to_dense()


def rmatmul(sparse, dense):
    """``dense @ sparse`` of a dense (n, m) and a sparse (m, p) matrix: dense (n, p)."""
    if not isinstance(dense, Node) or dense.ndim != 2:
        shape = tuple(dense.shape) if isinstance(dense, Node) else type(dense).__name__
        raise RuntimeError(f"matmul: a dense matrix @ a sparse {tuple(sparse.shape)} matrix: "
                           f"expected a 2-D dense Tensor, got {shape}")  # fmt: skip
    if dense.shape[1] != sparse.shape[0]:
        raise RuntimeError(f"matmul: shapes {tuple(dense.shape)} and {tuple(sparse.shape)} "
                           "cannot be multiplied")  # fmt: skip
    return mm(sparse.t(), dense.t()).t()
