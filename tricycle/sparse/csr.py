"""torch's sparse CSR matrices: ``SparseCsrTensor``, made by ``sparse_csr_tensor`` and
``Tensor.to_sparse_csr()``, and torch.sparse's ``check_sparse_tensor_invariants``.

A CSR matrix of ``size`` (rows, columns) keeps ``crow_indices`` (rows + 1,), where row i's
entries are ``crow[i]:crow[i + 1]``, ``col_indices`` (nnz,) and ``values`` (nnz,), a tricycle
Tensor. Its ops go through the COO tensor of the same cells (``to_sparse_coo()``), made of
differentiable ops on the same ``values``, so gradients reach the values at their cells. A
leaf made with ``requires_grad=True`` keeps its own values, and its ``grad`` is a CSR tensor
of their gradient (torch's is the dense gradient of the whole matrix after an ``@``). Only
2-D matrices with 1-D values are made here (torch's batched and hybrid CSR tensors are not).
"""

import math

import numpy as np

from tricycle import checks
from tricycle.graph import Node
from tricycle.sparse.coo import SparseCooTensor, SparseValues, _flat, _ids, mm, to_sparse
from tricycle.torch_dtypes import Size
from tricycle.torch_functions import tensor
from tricycle.torch_misc import sparse_coo, sparse_csr


class check_sparse_tensor_invariants:  # noqa: N801 - torch's name
    """torch.sparse.check_sparse_tensor_invariants: whether sparse constructors check their
    invariants by default (off, as torch's); as a context manager or a decorator it turns them
    on (``enable=True``) or off for its span. A constructor's ``check_invariants=`` wins."""

    _enabled = False

    def __init__(self, enable: bool = True):
        self.state = checks.boolean("sparse.check_sparse_tensor_invariants", "enable", enable)
        self.saved = []

    @staticmethod
    def is_enabled() -> bool:
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self.saved.append(check_sparse_tensor_invariants._enabled)
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc) -> None:
        check_sparse_tensor_invariants._enabled = self.saved.pop()

    def __call__(self, function):
        def checked(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return function(*args, **kwargs)

        return checked


class SparseCsrTensor(SparseValues):
    """torch.Tensor in torch.sparse_csr layout (see the module's doc)."""

    __slots__ = ("_crow", "_col", "_vals", "_size")
    is_sparse = False  # torch's: True for the COO layout alone
    is_sparse_csr = True
    layout = sparse_csr

    def __init__(self, crow, col, values, size):
        self._crow, self._col, self._vals, self._size = crow, col, values, Size(size)

    ndim = property(lambda self: 2)

    def size(self, dim: int | None = None):
        """torch.Tensor.size: the shape, or the size of axis ``dim``."""
        if dim is None:
            return self._size
        return self._size[checks.axis("Tensor.size", "dim", dim, 2, self._size)]

    def dim(self) -> int:
        return 2

    def sparse_dim(self) -> int:
        return 2

    def dense_dim(self) -> int:
        return 0

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def numel(self) -> int:
        return math.prod(self._size)

    def crow_indices(self):
        """torch.Tensor.crow_indices: (rows + 1,) int64, row i's entries at crow[i]:crow[i+1]."""
        return self._crow

    def col_indices(self):
        """torch.Tensor.col_indices: (nnz,) int64, each entry's column."""
        return self._col

    def values(self):
        """torch.Tensor.values: the (nnz,) values."""
        return self._vals

    @property
    def grad(self):
        """The gradient of a leaf made with ``requires_grad=True``, at its cells (CSR)."""
        g = self._vals.grad
        return None if g is None else SparseCsrTensor(self._crow, self._col, g, self._size)

    def detach(self) -> "SparseCsrTensor":
        return SparseCsrTensor(self._crow, self._col, self._vals.detach(), self._size)

    def requires_grad_(self, requires_grad: bool = True) -> "SparseCsrTensor":
        self._vals.requires_grad_(requires_grad)
        return self

    def to(self, *args, **kwargs) -> "SparseCsrTensor":
        """torch.Tensor.to: the values moved/cast (``Tensor.to``'s arguments), indices beside."""
        values = self._vals.to(*args, **kwargs)
        crow, col = (_ids(values, i.array) for i in (self._crow, self._col))
        return SparseCsrTensor(crow, col, values, self._size)

    def __repr__(self) -> str:
        return (f"tensor(crow_indices={self._crow!r},\n       col_indices={self._col!r},\n"
                f"       values={self._vals!r}, size={tuple(self._size)}, nnz={self._nnz()},\n"
                "       layout=tricycle.sparse_csr)")  # fmt: skip

    # ------------------------------------------------------------------ conversions
    def _rows(self):
        """Each entry's row (nnz,): row i repeated crow[i + 1] - crow[i] times."""
        xp, crow = self.xp, self._crow.array
        return xp.repeat(xp.arange(self._size[0], dtype=np.int64), xp.diff(crow))

    def to_sparse_coo(self) -> SparseCooTensor:
        """torch.Tensor.to_sparse_coo: the COO tensor of the same cells and values (coalesced
        when each row's columns are sorted and distinct)."""
        xp = self.xp
        ids = xp.stack([self._rows(), self._col.array])
        flat = _flat(xp, ids, self._size)
        coalesced = bool((flat[1:] > flat[:-1]).all()) if len(flat) > 1 else True
        return SparseCooTensor(_ids(self._vals, ids), self._vals, self._size, coalesced)

    def to_sparse(self, *args, **kwargs) -> SparseCooTensor:
        """torch.Tensor.to_sparse: the COO tensor (``to_sparse_coo``)."""
        layout = args[0] if args else kwargs.get("layout")
        if layout not in (None, sparse_coo):
            return to_sparse_csr(self) if layout is sparse_csr else _other_layout(layout)
        return self.to_sparse_coo()

    def to_sparse_csr(self, dense_dim=None) -> "SparseCsrTensor":
        return self

    def to_dense(self, dtype=None, *, masked_grad=None):
        """torch.Tensor.to_dense: the dense matrix (repeated cells summed), differentiable to
        the values."""
        return self.to_sparse_coo().to_dense(dtype)

    # ------------------------------------------------------------------ arithmetic
    def mm(self, mat2):
        """torch.mm / ``@`` with a dense matrix: the dense product (``sparse.mm``'s)."""
        return mm(self.to_sparse_coo(), mat2)

    matmul = __matmul__ = mm

    def __rmatmul__(self, other):
        return other @ self.to_sparse_coo()

    def __add__(self, other):
        """``csr + dense`` and ``dense + csr``: dense, as torch's (its ``dense - csr`` raises)."""
        if not isinstance(other, Node):
            raise NotImplementedError(
                "add of a CSR matrix: tricycle adds a dense Tensor of its "
                f"size, not {type(other).__name__}; use to_sparse_coo()"
            )
        return other + self.to_sparse_coo()

    __radd__ = __add__

    def __rsub__(self, other):
        raise RuntimeError("unsupported tensor layout: SparseCsr (dense - CSR, as torch's): "
                           "use to_dense() or to_sparse_coo()")  # fmt: skip

    def mul(self, other) -> "SparseCsrTensor":
        """torch.Tensor.mul by a number, a 0-d tensor or a dense tensor (broadcast to its
        size): its values times the other's at its cells (a CSR matrix of its cells)."""
        if hasattr(other, "_sparse_layout"):
            raise NotImplementedError("mul of a CSR matrix by a sparse tensor: tricycle "
                                      "multiplies COO ones: use to_sparse_coo()")  # fmt: skip
        scaled = self.to_sparse_coo().mul(other)._vals  # its checks and refusals
        return SparseCsrTensor(self._crow, self._col, scaled, self._size)

    __mul__ = __rmul__ = mul

    def __neg__(self) -> "SparseCsrTensor":
        return self.mul(-1)


def _other_layout(layout):
    raise NotImplementedError(f"to_sparse: layout {layout}: tricycle has the sparse COO and "
                              "CSR layouts alone")  # fmt: skip


def _index_array(op: str, name: str, value):
    array = value.array if isinstance(value, Node) else np.asarray(value)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: {name} must be a 1-D tensor of integers (tricycle's CSR "
                           f"tensors are 2-D, not batched), got {list(array.shape)} of "
                           f"{array.dtype}")  # fmt: skip
    return array


def _check_ranges(xp, crow, col, size) -> None:
    """torch's CSR invariants on ranges (its messages): crow starts at 0, ends at nnz and
    never falls; each column is in [0, columns)."""
    if int(crow[0]) != 0:
        raise RuntimeError("`crow_indices[..., 0] == 0` is not satisfied.")
    if int(crow[-1]) != len(col):
        raise RuntimeError("`crow_indices[..., -1] == nnz` is not satisfied.")
    if bool((xp.diff(crow) < 0).any()):
        raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is "
                           "not satisfied.")  # fmt: skip
    if len(col) and not bool(((col >= 0) & (col < size[1])).all()):
        raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")


def _check_sorted(xp, crow, col, size) -> None:
    """torch's last CSR invariant: each row's columns sorted and distinct."""
    rows = xp.repeat(xp.arange(size[0], dtype=np.int64), xp.diff(crow))
    if not bool(((rows[1:] != rows[:-1]) | (col[1:] > col[:-1])).all()):
        raise RuntimeError("`col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] "
                           "for all i = 1, ..., nrows are sorted and distinct along the last "
                           "dimension values` is not satisfied.")  # fmt: skip


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory=False, requires_grad: bool = False,
                      check_invariants=None) -> SparseCsrTensor:  # fmt: skip
    """torch.sparse_csr_tensor: a (rows, columns) CSR matrix of ``values`` (nnz,) at the
    cells ``crow_indices``/``col_indices`` name; ``size`` by default (len(crow) - 1,
    max(col) + 1). The lengths are always checked, as torch's; the invariants (crow from 0 to
    nnz, columns in range and, under ``check_invariants`` or
    ``check_sparse_tensor_invariants``, sorted and distinct in each row) too: the first two
    always (tricycle's ops rely on them), the last when asked, with torch's messages."""
    op = "sparse_csr_tensor"
    values = values if isinstance(values, Node) else tensor(values, dtype=dtype)
    if dtype is not None or device is not None:
        values = values.to(device=device, dtype=dtype)
    xp = values.xp
    crow = xp.asarray(_index_array(op, "crow_indices", crow_indices), dtype=np.int64)
    col = xp.asarray(_index_array(op, "col_indices", col_indices), dtype=np.int64)
    if values.ndim != 1:
        raise NotImplementedError(f"{op}: tricycle's CSR values are 1-D (nnz,), got shape "
                                  f"{tuple(values.shape)} (torch's hybrid CSR)")  # fmt: skip
    if size is None:
        size = (len(crow) - 1, int(col.max()) + 1 if len(col) else 0)
    size = tuple(int(n) for n in size)
    if len(size) != 2:
        raise NotImplementedError(f"{op}: tricycle's CSR tensors are 2-D, got size {size}")
    if len(crow) != size[0] + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={size[0] + 1}), but got {len(crow)}")  # fmt: skip
    if len(col) != values.shape[0]:
        raise RuntimeError(f"col_indices.shape[-1] must be equal to nnz (={values.shape[0]}) "
                           f"as defined by values.shape[0], but got {len(col)}")  # fmt: skip
    _check_ranges(xp, crow, col, size)  # always: tricycle's gathers rely on them
    strict = check_invariants
    if strict if strict is not None else check_sparse_tensor_invariants.is_enabled():
        _check_sorted(xp, crow, col, size)
    if requires_grad:
        values = values.detach().clone().requires_grad_()
    return SparseCsrTensor(_ids(values, crow), _ids(values, col), values, size)


def to_sparse_csr(x, dense_dim=None) -> SparseCsrTensor:
    """torch.Tensor.to_sparse_csr: the CSR matrix of a dense matrix's nonzero cells, or of a
    COO matrix's cells (coalesced first, as torch's); the values' gradient reaches ``x``."""
    if isinstance(x, SparseCsrTensor):
        return x
    if dense_dim not in (None, 0) or x.ndim != 2:
        raise NotImplementedError(f"Tensor.to_sparse_csr: tricycle makes 2-D CSR matrices "
                                  f"without dense axes, got {x.ndim} axes (dense_dim "
                                  f"{dense_dim})")  # fmt: skip
    coo = x.coalesce() if isinstance(x, SparseCooTensor) else to_sparse(x)
    if coo.sparse_dim() != 2:
        raise NotImplementedError("Tensor.to_sparse_csr: a COO tensor of 2 sparse axes, got "
                                  f"sparse_dim {coo.sparse_dim()}")  # fmt: skip
    xp, (rows, cols) = coo.xp, coo._ids.array
    crow = xp.zeros(x.shape[0] + 1, dtype=np.int64)
    crow[1:] = xp.cumsum(xp.bincount(rows, minlength=x.shape[0]))
    return SparseCsrTensor(_ids(coo._vals, crow), _ids(coo._vals, cols), coo._vals, x.shape)
