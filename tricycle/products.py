"""torch's matrix products of fixed shapes, as Tensor methods: ``mm`` (A @ B of two matrices),
``mv`` (M @ v), ``dot`` (u . v of two vectors) and ``addmm`` (beta x + alpha (A @ B), what a
linear layer computes).

Each is a method of ``Tensor`` (``bias.addmm(x, w)``) that imports this module on its first
call (``tensor_torch.imported``); ``tricycle.torch_math`` has torch's functions of the same
names. Both check the shapes torch's do, then compose ``binary.matmul`` (the runner's GEMM) and
the operators, so their gradients are those ops': for addmm, beta dout for x (summed over the
axes it was broadcast along), alpha dout B^T for A and alpha A^T dout for B.
"""

import numpy as np

from tricycle import binary, checks, ops
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def mm(x: Tensor, mat2) -> Tensor:
    """torch.Tensor.mm: the product (N, P) of this matrix (N, M) and ``mat2`` (M, P), without
    matmul's broadcasting; a sparse ``mat2`` gives the dense product, as torch's."""
    if getattr(mat2, "_sparse_layout", False):
        return x @ mat2  # the sparse tensor's __rmatmul__
    b = binary.constant(mat2, x, "Tensor.mm")
    if x.ndim != 2 or b.ndim != 2 or x.shape[1] != b.shape[0]:
        expected = "matrices (N, M) and (M, P)"
        checks.fail("Tensor.mm", "the shapes of input and mat2", expected, (x.shape, b.shape))
    return binary.matmul(x, b)


def mv(x: Tensor, vec) -> Tensor:
    """torch.Tensor.mv: the product (N,) of this matrix (N, M) and the vector ``vec`` (M,)."""
    v = binary.constant(vec, x, "Tensor.mv")
    if x.ndim != 2 or v.ndim != 1 or x.shape[1] != v.shape[0]:
        expected = "a matrix (N, M) and a vector (M,)"
        checks.fail("Tensor.mv", "the shapes of input and vec", expected, (x.shape, v.shape))
    return binary.matmul(x, v)


def dot(x: Tensor, other) -> Tensor:
    """torch.Tensor.dot: the inner product (a 0-d tensor) of this vector (N,) and ``other`` (N,),
    without broadcasting."""
    v = binary.constant(other, x, "Tensor.dot")
    if x.ndim != 1 or v.ndim != 1 or x.shape != v.shape:
        expected = "two vectors of one length (N,)"
        checks.fail("Tensor.dot", "the shapes of input and other", expected, (x.shape, v.shape))
    return binary.matmul(x, v)


def addmm(x: Tensor, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """torch.Tensor.addmm: beta x + alpha (mat1 @ mat2), mat1 (N, M), mat2 (M, P) and x
    broadcast to (N, P). With beta 0, x is left out (a NaN in it too) and gets gradient 0, as
    torch's."""
    a, b = binary.constant(mat1, x, "Tensor.addmm"), binary.constant(mat2, x, "Tensor.addmm")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        expected = "matrices (N, M) and (M, P)"
        checks.fail("Tensor.addmm", "the shapes of mat1 and mat2", expected, (a.shape, b.shape))
    shape = (a.shape[0], b.shape[1])
    try:
        fits = np.broadcast_shapes(x.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        checks.fail("Tensor.addmm", "input's shape", f"one that broadcasts to {shape}", x.shape)
    for name, value in (("beta", beta), ("alpha", alpha)):
        if not checks.is_real(value):
            checks.fail("Tensor.addmm", name, "a number", value, TypeError)
    product = binary.matmul(a, b)  # (N, P)
    product = product if alpha == 1 else product * alpha
    if beta == 0:  # zeros of x's shape, whose gradient to x is 0
        return ops.masked_fill(x, x.xp.ones((), dtype=bool), 0) + product
    return (x if beta == 1 else x * beta) + product
