"""torch.sparse: sparse COO tensors and the functions on them.

``tricycle.sparse_coo_tensor(indices, values, size)`` and ``Tensor.to_sparse()`` make a
``SparseCooTensor`` (``tricycle.sparse.coo``: indices, values, coalescing, ``to_dense``,
transposes, ``+`` and scaling); ``mm``, ``addmm``, ``sum``, ``softmax`` and ``log_softmax``
(``tricycle.sparse.ops``) are torch.sparse's, differentiable to the values at their stored
cells and to the dense operands. The layout is ``tricycle.sparse_coo``; CSR, CSC and block
layouts are not in tricycle.
"""

from tricycle.sparse.coo import SparseCooTensor, sparse_coo_tensor
from tricycle.sparse.ops import addmm, log_softmax, mm, smm, softmax, spmm, sum  # noqa: A004

__all__ = ["SparseCooTensor", "addmm", "log_softmax", "mm", "smm", "softmax", "sparse_coo_tensor",
           "spmm", "sum"]  # fmt: skip
