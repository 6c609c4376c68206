"""torch's sparse COO tensors: ``SparseCooTensor``, made by ``sparse_coo_tensor`` and
``Tensor.to_sparse()``.

A COO tensor of ``size`` keeps ``indices`` (sparse_dim, nnz), an int64 tensor naming the
stored cells of its first ``sparse_dim`` axes, and ``values`` (nnz, *dense), a tricycle
Tensor whose trailing axes are the tensor's ``dense_dim`` dense ones (torch's hybrid tensors).
Every op is made of differentiable ops on ``values`` (``index_add``, ``index_select``), so
gradients reach the values at their stored cells alone, as torch's. Repeated indices are
allowed and mean their sum; ``coalesce()`` sums them and sorts the cells in row-major order.
A leaf made with ``requires_grad=True`` keeps its own values; its ``grad`` is sparse, at its
coalesced cells. The class is not a ``tricycle.Tensor``: it answers what torch's sparse tensor
answers (``is_sparse``, ``layout``, ``shape``, ``to_dense()`` ...) and the ops of
``tricycle.sparse``; anything else needs ``to_dense()`` first.
"""

import importlib
import math
import numbers

import numpy as np

from tricycle import checks, ops
from tricycle.factories import zeros
from tricycle.graph import Node
from tricycle.tensor import to_tensor
from tricycle.tensor_extra import imported
from tricycle.torch_dtypes import Size
from tricycle.torch_functions import tensor
from tricycle.torch_misc import sparse_coo


def _flat(xp, indices, sizes) -> "object":
    """The row-major cell number of each column of ``indices`` (an int64 array) in ``sizes``."""
    flat = xp.zeros(indices.shape[1], dtype=np.int64)
    for row, n in zip(indices, sizes, strict=True):
        flat = flat * int(n) + row
    return flat


class SparseValues:
    """What a sparse tensor of either layout answers from its values tensor ``_vals`` (its
    dtype, device, gradient state) and its size ``_size``; the layouts' base class."""

    __slots__ = ()
    _sparse_layout = True  # dense operators hand ``dense @ this`` to the reflected methods
    shape = property(lambda self: self._size)
    dtype = property(lambda self: self._vals.dtype)
    device = property(lambda self: self._vals.device)
    xp = property(lambda self: self._vals.xp)
    is_cuda = property(lambda self: self._vals.is_cuda)
    requires_grad = property(lambda self: self._vals.requires_grad)
    is_leaf = property(lambda self: self._vals.args is None)


class SparseCooTensor(SparseValues):
    """torch.Tensor in torch.sparse_coo layout (see the module's doc)."""

    __slots__ = ("_ids", "_vals", "_size", "_coalesced")
    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo

    def __init__(self, indices, values, size: tuple, coalesced: bool = False):
        self._ids, self._vals, self._size = indices, values, Size(size)
        self._coalesced = coalesced

    # ------------------------------------------------------------------ what it is
    def size(self, dim: int | None = None):
        """torch.Tensor.size: the shape, or the size of axis ``dim``."""
        if dim is None:
            return self._size
        return self._size[checks.axis("Tensor.size", "dim", dim, len(self._size), self._size)]

    def dim(self) -> int:
        return len(self._size)

    ndim = property(dim)

    def sparse_dim(self) -> int:
        return self._ids.shape[0]

    def dense_dim(self) -> int:
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def numel(self) -> int:
        return math.prod(self._size)

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self):
        """torch.Tensor._indices: the stored indices, coalesced or not."""
        return self._ids

    def _values(self):
        """torch.Tensor._values: the stored values, coalesced or not."""
        return self._vals

    def indices(self):
        """torch.Tensor.indices: the (sparse_dim, nnz) int64 indices of a coalesced tensor."""
        return self._ids if self._checked_coalesced("indices") else None

    def values(self):
        """torch.Tensor.values: the (nnz, *dense) values of a coalesced tensor."""
        return self._vals if self._checked_coalesced("values") else None

    def _checked_coalesced(self, name: str) -> bool:
        if not self._coalesced:
            raise RuntimeError(f"Tensor.{name}: cannot get {name} on an uncoalesced sparse "
                               "tensor, as torch's: call .coalesce() first")  # fmt: skip
        return True

    @property
    def grad(self):
        """The gradient of a leaf made with ``requires_grad=True``: the gradient of the dense
        tensor, at the coalesced cells (torch's, which may leave them uncoalesced)."""
        if self._vals.grad is None:
            return None
        cells = _flat(self.xp, self._ids.array, self._size[: self.sparse_dim()])
        _, first = self.xp.unique(cells, return_index=True)  # every repeat's gradient is one
        ids = _ids(self._vals, self._ids.array[:, first])
        return SparseCooTensor(ids, self._vals.grad[first], self._size, True)

    def detach(self) -> "SparseCooTensor":
        return SparseCooTensor(self._ids, self._vals.detach(), self._size, self._coalesced)

    def __repr__(self) -> str:
        shown = f"size={tuple(self._size)}, nnz={self._nnz()}, layout=tricycle.sparse_coo"
        return f"tensor(indices={self._ids!r},\n       values={self._vals!r},\n       {shown})"

    # ------------------------------------------------------------------ conversions
    def coalesce(self) -> "SparseCooTensor":
        """torch.Tensor.coalesce: one entry per stored cell (repeats summed; the gradient of
        each repeat is its sum's), cells in row-major order."""
        if self._coalesced:
            return self
        xp, sizes = self.xp, self._size[: self.sparse_dim()]
        cells, inverse = xp.unique(_flat(xp, self._ids.array, sizes), return_inverse=True)
        ids = xp.stack(xp.unravel_index(cells, sizes)) if sizes else xp.zeros((0, len(cells)))
        values = _zeros_like_values(self, len(cells)).index_add(0, inverse.reshape(-1), self._vals)
        return SparseCooTensor(_ids(self._vals, ids), values, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """torch.Tensor.to_dense: the dense tensor (repeats summed); differentiable to the
        values, whose gradient is dout at their cells."""
        sizes = self._size[: self.sparse_dim()]
        flat = _flat(self.xp, self._ids.array, sizes)
        out = _zeros_like_values(self, math.prod(sizes)).index_add(0, flat, self._vals)
        out = out.reshape(self._size)
        return out if dtype is None else out.to(dtype)

    def to(self, *args, **kwargs) -> "SparseCooTensor":
        """torch.Tensor.to: the values moved/cast (``Tensor.to``'s arguments), indices beside."""
        values = self._vals.to(*args, **kwargs)
        ids = self._ids.to(values.device)  # across devices with the values
        return SparseCooTensor(ids, values, self._size, self._coalesced)

    def requires_grad_(self, requires_grad: bool = True) -> "SparseCooTensor":
        self._vals.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------------ views and arithmetic
    def transpose(self, dim0: int, dim1: int) -> "SparseCooTensor":
        """torch.Tensor.transpose of two sparse axes (their index rows swapped) or two dense
        ones (the values' axes); a sparse with a dense one is refused, as torch's."""
        op, n, sd = "Tensor.transpose", self.ndim, self.sparse_dim()
        a = checks.axis(op, "dim0", dim0, n, self._size)
        b = checks.axis(op, "dim1", dim1, n, self._size)
        if (a < sd) != (b < sd):
            raise RuntimeError(f"{op}: transposed axes {dim0} and {dim1} must both be sparse or "
                               f"both dense (sparse_dim {sd}), as torch's")  # fmt: skip
        size = list(self._size)
        size[a], size[b] = size[b], size[a]
        ids, values = self._ids, self._vals
        if a < sd:
            order = list(range(sd))
            order[a], order[b] = b, a
            ids = _ids(values, ids.array[order])
        else:
            values = values.transpose(a - sd + 1, b - sd + 1)
        return SparseCooTensor(ids, values, size, self._coalesced and a == b)

    def t(self) -> "SparseCooTensor":
        """torch.Tensor.t: the transpose of a tensor of at most 2 axes."""
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")  # fmt: skip
        return self if self.ndim < 2 else self.transpose(0, 1)

    mul, pow, sqrt = imported("sparse.elementwise", "mul pow sqrt")  # noqa: A003
    __mul__ = __rmul__ = mul
    __pow__ = pow  # noqa: A003
    to_sparse_csr = imported("sparse.csr", "to_sparse_csr")[0]

    def div(self, other) -> "SparseCooTensor":
        """torch.Tensor.div by a number or a 0-d tensor."""
        return self.mul(1 / other if isinstance(other, numbers.Number) else other.reciprocal())

    __truediv__ = div

    def __neg__(self) -> "SparseCooTensor":
        return self.mul(-1)

    def add(self, other, *, alpha=1) -> "SparseCooTensor":
        """torch.Tensor.add of two sparse tensors of one size: their entries side by side
        (coalesced when both were). A dense ``other`` is refused, as torch's refuses it."""
        if not isinstance(other, SparseCooTensor):
            raise RuntimeError("add(sparse, dense) is not supported, as in torch: use "
                               "add(dense, sparse.to_dense()) or to_dense() first")  # fmt: skip
        if other.shape != self.shape or other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                               f"{list(self.shape)} != {list(other.shape)} (sparse_dim "
                               f"{self.sparse_dim()} and {other.sparse_dim()})")  # fmt: skip
        xp = self.xp
        ids = _ids(self._vals, xp.concatenate([self._ids.array, other._ids.array], axis=1))
        values = ops.concatenate([self._vals, other._vals if alpha == 1 else other._vals * alpha])
        out = SparseCooTensor(ids, values, self._size)
        return out.coalesce() if self._coalesced and other._coalesced else out

    __add__ = add

    def __radd__(self, other):
        """``dense + sparse``: dense (``sparse.elementwise.add_to_dense``)."""
        return _elementwise().add_to_dense(other, self)

    def __rsub__(self, other):
        """``dense - sparse``: dense."""
        return _elementwise().add_to_dense(other, self, -1, "sub")

    def __rmatmul__(self, other):
        """``dense @ sparse``: dense (``sparse.elementwise.rmatmul``)."""
        return _elementwise().rmatmul(self, other)

    def sub(self, other, *, alpha=1) -> "SparseCooTensor":
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def sum(self, dim=None, keepdim=False, dtype=None):
        """torch.Tensor.sum: ``tricycle.sparse.sum``."""
        if keepdim:
            raise NotImplementedError("Tensor.sum of a sparse tensor: keepdim=True is not "
                                      "supported (torch's refuses it too)")  # fmt: skip
        return sparse_sum(self, dim, dtype)

    def mm(self, mat2):
        """torch.Tensor.mm: ``tricycle.sparse.mm``."""
        return mm(self, mat2)

    matmul = __matmul__ = mm

    def smm(self, mat2) -> "SparseCooTensor":
        """torch.smm: the product made sparse (torch's answer)."""
        return to_sparse(self.mm(mat2))


def _elementwise():
    return importlib.import_module("tricycle.sparse.elementwise")  # it imports this module


def _zeros_like_values(sparse: SparseCooTensor, rows: int):
    values = sparse._vals
    return zeros(rows, *values.shape[1:], dtype=values.dtype, device=values.device)


def _ids(values, array):
    """``array`` as an int64 index tensor beside ``values`` (on its device, needing no grad)."""
    return to_tensor(values.xp.asarray(array, dtype=np.int64), requires_grad=False, dtype=np.int64)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad: bool = False, check_invariants=None,
                      is_coalesced=None) -> SparseCooTensor:  # fmt: skip
    """torch.sparse_coo_tensor: a sparse tensor of ``values`` (nnz, *dense) at ``indices``
    (sparse_dim, nnz), of ``size`` (by default the smallest that holds the indices, then the
    values' dense axes). Indices out of ``size`` are refused (torch checks them only with
    ``check_invariants``). ``is_coalesced=True`` promises that the indices are already
    unique and sorted, as torch's; the tensor is otherwise uncoalesced."""
    op = "sparse_coo_tensor"
    values = values if isinstance(values, Node) else tensor(values, dtype=dtype)
    if dtype is not None or device is not None:
        values = values.to(device=device, dtype=dtype)
    xp = values.xp
    ids = indices.array if isinstance(indices, Node) else np.asarray(indices)
    if ids.dtype.kind not in "iuf" or ids.ndim != 2:  # torch casts float indices to int64
        raise RuntimeError(f"{op}: indices must be sparse_dim x nnz numbers, but got: "
                           f"{list(ids.shape)} of {ids.dtype}")  # fmt: skip
    if values.ndim == 0 or values.shape[0] != ids.shape[1]:
        raise RuntimeError(f"{op}: indices and values must have same nnz, but got nnz from "
                           f"indices: {ids.shape[1]}, nnz from values: "
                           f"{values.shape[0] if values.ndim else 'a 0-d tensor'}")  # fmt: skip
    ids = xp.asarray(ids, dtype=np.int64)
    dense = tuple(values.shape[1:])
    if size is None:
        size = tuple(int(n) + 1 for n in (ids.max(axis=1) if ids.shape[1] else [-1] * len(ids)))
        size += dense
    size = tuple(int(n) for n in size)
    sparse = size[: len(ids)]
    inside = bool(((ids >= 0) & (ids < xp.asarray(sparse, dtype=np.int64)[:, None])).all())
    if len(size) != len(ids) + len(dense) or size[len(ids) :] != dense or not inside:
        raise RuntimeError(f"{op}: size {size} is inconsistent with indices (sparse_dim "
                           f"{len(ids)}, each index in [0, size)) and values' dense shape "
                           f"{dense}")  # fmt: skip
    if requires_grad:
        values = values.detach().clone().requires_grad_()
    return SparseCooTensor(_ids(values, ids), values, size, bool(is_coalesced))


def to_sparse(x, *args, layout=None, blocksize=None, dense_dim=None) -> SparseCooTensor:
    """torch.Tensor.to_sparse(sparse_dim) / to_sparse_coo: the coalesced COO tensor of the
    dense ``x``'s nonzero cells (its first ``sparse_dim`` axes sparse, by default all);
    the values' gradient reaches ``x`` at those cells."""
    if isinstance(x, SparseCooTensor):
        return x
    sparse_dim = args[0] if args and not hasattr(args[0], "name") else None
    layout = args[0] if args and hasattr(args[0], "name") else layout
    if getattr(layout, "name", None) == "sparse_csr" and blocksize is None:
        return importlib.import_module("tricycle.sparse.csr").to_sparse_csr(x, dense_dim)
    if layout not in (None, sparse_coo) or blocksize is not None or dense_dim is not None:
        asked = f"layout {layout} (blocksize {blocksize}, dense_dim {dense_dim})"
        raise NotImplementedError(f"Tensor.to_sparse: {asked}: tricycle has the COO and CSR "
                                  "layouts alone")  # fmt: skip
    sd = x.ndim if sparse_dim is None else sparse_dim
    if not isinstance(sd, int) or not 0 <= sd <= x.ndim:
        checks.fail("Tensor.to_sparse", "sparse_dim", f"an int in [0, {x.ndim}]", sparse_dim)
    if sd == 0:  # one cell holding the whole tensor
        return SparseCooTensor(_ids(x, x.xp.zeros((0, 1))), x.unsqueeze(0), x.shape, True)
    cells = x.xp.nonzero((x.array != 0).reshape(x.shape[:sd] + (-1,)).any(axis=-1))
    ids, values = x.xp.stack(cells), x[tuple(cells)]  # row-major: coalesced
    return SparseCooTensor(_ids(x, ids), values, x.shape, True)


def to_sparse_coo(x) -> SparseCooTensor:
    """torch.Tensor.to_sparse_coo: ``to_sparse()``."""
    return to_sparse(x)


# ------------------------------------------------------------------ torch.sparse's mm and sum
def _sparse_input(op: str, value, name: str = "input") -> SparseCooTensor:
    """``value``, a sparse COO tensor (a CSR one made COO), else a TypeError naming ``op``."""
    if getattr(value, "is_sparse_csr", False) is True:
        return value.to_sparse_coo()
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


def sparse_sum(input, dim=None, dtype=None):  # noqa: A002 - torch's names
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
