"""torch.sparse's other constructors: ``spdiags`` and the legacy typed constructors
``tricycle.sparse.FloatTensor(indices, values, size)`` (and ``DoubleTensor``, ``LongTensor``
...) that older code (pygcn's ``sparse_mx_to_torch_sparse_tensor``) writes.

torch 2.13 still answers the legacy forms, with a UserWarning that they are deprecated: a COO
tensor of the values as given (their dtype kept, as torch's keeps it), uncoalesced;
``FloatTensor(*size)`` is an empty one. ``isinstance(t, tricycle.sparse.FloatTensor)`` holds
for a COO tensor of that dtype, as torch's.
"""

import warnings

import numpy as np

from tricycle import checks
from tricycle.graph import Node
from tricycle.sparse.coo import SparseCooTensor, _ids, sparse_coo_tensor
from tricycle.sparse.csr import to_sparse_csr
from tricycle.torch_functions import tensor
from tricycle.torch_misc import sparse_coo, sparse_csr


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags: a (rows, columns) sparse matrix whose diagonal ``offsets[k]``
    holds row k of ``diagonals`` (its element j at column j, as scipy's): cell (i, i + k) is
    ``diagonals[d, i + k]`` where that column exists in the matrix and in the row. COO by
    default (diagonal after diagonal, uncoalesced, as torch's); ``layout=sparse_csr`` gives
    CSR. Differentiable to ``diagonals``."""
    op = "sparse.spdiags"
    diagonals = diagonals if isinstance(diagonals, Node) else tensor(diagonals)
    rows_n, cols_n = (int(n) for n in shape)
    offs = np.asarray(offsets.tolist() if isinstance(offsets, Node) else offsets).reshape(-1)
    if offs.dtype.kind not in "iu":
        checks.fail(op, "offsets", "a tensor of integers", offs.dtype, TypeError)
    table = diagonals.reshape(1, -1) if diagonals.ndim == 1 else diagonals
    if table.ndim != 2 or table.shape[0] != len(offs):
        raise RuntimeError(f"{op}: expected diagonals (n_diagonals, length) with one row per "
                           f"offset ({len(offs)}), got shape {tuple(diagonals.shape)}")  # fmt: skip
    if len(np.unique(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    if layout not in (None, sparse_coo, sparse_csr):
        raise NotImplementedError(f"{op}: layout {layout}: tricycle makes COO and CSR alone")
    rows, cols, taken = [], [], []
    for d, k in enumerate(offs.tolist()):
        first, last = max(0, -k), min(rows_n, cols_n - k, table.shape[1] - k)
        i = np.arange(first, max(first, last))
        rows.append(i)
        cols.append(i + k)
        taken.append(d * table.shape[1] + i + k)
    ids = np.stack([np.concatenate(rows), np.concatenate(cols)]).astype(np.int64)
    flat = _ids(table, np.concatenate(taken))
    out = SparseCooTensor(_ids(table, ids), table.reshape(-1)[flat], (rows_n, cols_n))
    return to_sparse_csr(out) if layout is sparse_csr else out


class _Legacy(type):
    """The metaclass of the legacy constructors: calling one makes a COO tensor (torch's
    warning), and ``isinstance`` asks for a COO tensor of its dtype."""

    def __call__(cls, *args, device=None):
        if args and isinstance(args[0], Node | np.ndarray | list):  # (indices, values[, size])
            warnings.warn("tricycle.sparse.SparseTensor(indices, values, shape, *, device=) is "
                          "deprecated.  Please use tricycle.sparse_coo_tensor(indices, values, "
                          "dtype=, device=).", UserWarning, stacklevel=2)  # fmt: skip
            return sparse_coo_tensor(*args, device=device)
        warnings.warn("tricycle.sparse.SparseTensor(shape, *, device=) is deprecated.  Please "
                      "use tricycle.sparse_coo_tensor(shape, dtype=, device=).", UserWarning,
                      stacklevel=2)  # fmt: skip
        size = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args
        values = tensor(np.zeros(0, dtype=cls.dtype)).to(device)
        return sparse_coo_tensor(np.zeros((len(size), 0), dtype=np.int64), values, size)

    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, SparseCooTensor) and np.dtype(value.dtype) == cls.dtype


def _legacy(name: str, dtype) -> type:
    doc = f"torch.sparse.{name}: the legacy constructor of a COO tensor (deprecated)."
    return _Legacy(name, (), {"dtype": np.dtype(dtype), "__doc__": doc})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
HalfTensor = _legacy("HalfTensor", np.float16)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
