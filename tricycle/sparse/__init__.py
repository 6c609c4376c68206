"""torch.sparse: sparse COO and CSR tensors and the functions on them.

``tricycle.sparse_coo_tensor(indices, values, size)`` and ``Tensor.to_sparse()`` make a
``SparseCooTensor`` (``tricycle.sparse.coo``: indices, values, coalescing, ``to_dense``,
transposes, ``+`` and scaling; ``tricycle.sparse.elementwise``: ``*`` with a sparse or dense
tensor, ``pow``, ``sqrt``, and a dense tensor's ``+``, ``-`` and ``@`` with a sparse one);
``tricycle.sparse_csr_tensor`` and ``Tensor.to_sparse_csr()`` make a ``SparseCsrTensor``
(``tricycle.sparse.csr``, with ``check_sparse_tensor_invariants``); ``mm``, ``addmm``, ``sum``,
``softmax``, ``log_softmax`` and ``sampled_addmm`` (``tricycle.sparse.ops``) are
torch.sparse's, differentiable to the values at their stored cells and to the dense operands;
``spdiags`` and the legacy ``FloatTensor(indices, values, size)`` forms are in
``tricycle.sparse.constructors``. The layouts are ``tricycle.sparse_coo`` and
``tricycle.sparse_csr``; CSC and block layouts are not in tricycle.
"""

from tricycle.sparse.constructors import (
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    spdiags,
)
from tricycle.sparse.coo import SparseCooTensor, sparse_coo_tensor
from tricycle.sparse.csr import SparseCsrTensor, check_sparse_tensor_invariants, sparse_csr_tensor
from tricycle.sparse.ops import (
    addmm,
    log_softmax,
    mm,
    sampled_addmm,
    smm,
    softmax,
    spmm,
    sum,  # noqa: A004 - torch.sparse.sum
)

__all__ = ["ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
           "LongTensor", "ShortTensor", "SparseCooTensor", "SparseCsrTensor", "addmm",
           "check_sparse_tensor_invariants", "log_softmax", "mm", "sampled_addmm", "smm",
           "softmax", "sparse_coo_tensor", "sparse_csr_tensor", "spdiags", "spmm",
           "sum"]  # fmt: skip
