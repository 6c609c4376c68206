"""torch's products beyond ``tricycle.products``: ``inner``, ``vdot``, ``addmv``, ``addbmm``,
``baddbmm`` and ``chain_matmul``; and ``trace``, a matrix's diagonal summed.

Each checks the shapes torch's does, then composes ``binary.matmul`` (or ``einsum``, for the
batch sum of ``addbmm``) and the operators, so the gradients are those ops'. The ``add*``
ones compute beta input + alpha product with ``addmm``'s rule (``_added``): input broadcast
to the product's shape, and left out with beta 0 (a NaN in it too), gradient 0, as torch's.
Tensor methods too (``x.inner(y)``, ``x.addmv(m, v)``: ``tricycle.tensor_math``).
"""

import numpy as np

from tricycle import binary, checks, indexing, ops
from tricycle.einsum import einsum
from tricycle.graph import Node
from tricycle.linalg.products import multi_dot
from tricycle.torch_functions import no_out, tensor_input


def inner(input, other, *, out=None):  # noqa: A002
    """torch.inner: the sum of products over the last axes, of shape input.shape[:-1] +
    other.shape[:-1]; a 0-d operand multiplies the other."""
    no_out("inner", out)
    a, b = tensor_input("inner", input), tensor_input("inner", other, "other")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        checks.fail("inner", "the shapes of input and other", "one last axis", (a.shape, b.shape))
    k = a.shape[-1]
    product = binary.matmul(a.reshape(-1, k), b.reshape(-1, k).t())  # (A, B)
    return product.reshape(a.shape[:-1] + b.shape[:-1])


def vdot(input, other, *, out=None):  # noqa: A002
    """torch.vdot: the inner product of two vectors of one length (of real tensors: ``dot``)."""
    no_out("vdot", out)
    a, b = tensor_input("vdot", input), tensor_input("vdot", other, "other")
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        expected = "two vectors of one length (N,)"
        checks.fail("vdot", "the shapes of input and other", expected, (a.shape, b.shape))
    return binary.matmul(a, b)


def trace(input):  # noqa: A002
    """torch.trace: the sum of a matrix's main diagonal; its gradient is the identity (eye)."""
    x = tensor_input("trace", input)
    if x.ndim != 2:
        checks.fail("trace", "input's shape", "a matrix's (2-D)", x.shape, RuntimeError)
    return indexing.diagonal(x).sum()


def _added(op: str, input, product: Node, beta, alpha) -> Node:  # noqa: A002
    """beta input + alpha product, input broadcast to the product's shape; with beta 0 input
    is left out (a NaN in it too) with gradient 0, as torch's."""
    x = tensor_input(op, input)
    for name, value in (("beta", beta), ("alpha", alpha)):
        if not checks.is_real(value):
            checks.fail(op, name, "a number", value, TypeError)
    try:
        fits = np.broadcast_shapes(x.shape, product.shape) == product.shape
    except ValueError:
        fits = False
    if not fits:
        checks.fail(op, "input's shape", f"one that broadcasts to {product.shape}", x.shape)
    product = product if alpha == 1 else product * alpha
    if beta == 0:  # zeros of x's shape, whose gradient to x is 0
        return ops.masked_fill(x, x.xp.ones((), dtype=bool), 0) + product
    return (x if beta == 1 else x * beta) + product


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):  # noqa: A002
    """torch.addmv: beta input + alpha (mat @ vec), mat (N, M), vec (M,), input broadcast to
    (N,)."""
    no_out("addmv", out)
    m, v = tensor_input("addmv", mat, "mat"), tensor_input("addmv", vec, "vec")
    if m.ndim != 2 or v.ndim != 1 or m.shape[1] != v.shape[0]:
        expected = "a matrix (N, M) and a vector (M,)"
        checks.fail("addmv", "the shapes of mat and vec", expected, (m.shape, v.shape))
    return _added("addmv", input, binary.matmul(m, v), beta, alpha)


def _batches(op: str, batch1, batch2) -> tuple[Node, Node]:
    a, b = tensor_input(op, batch1, "batch1"), tensor_input(op, batch2, "batch2")
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        expected = "batches of matrices (B, N, M) and (B, M, P)"
        checks.fail(op, "the shapes of batch1 and batch2", expected, (a.shape, b.shape))
    return a, b


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """torch.baddbmm: beta input + alpha (batch1 @ batch2), batch by batch: (B, N, P)."""
    no_out("baddbmm", out)
    a, b = _batches("baddbmm", batch1, batch2)
    return _added("baddbmm", input, binary.matmul(a, b), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """torch.addbmm: beta input + alpha sum_b (batch1[b] @ batch2[b]): (N, P)."""
    no_out("addbmm", out)
    a, b = _batches("addbmm", batch1, batch2)
    return _added("addbmm", input, einsum("bnm,bmp->np", a, b), beta, alpha)


def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated there for ``linalg.multi_dot``): the product of one or
    more matrices, in the order of fewest multiplications; one matrix is itself."""
    no_out("chain_matmul", out)
    if not matrices:
        raise RuntimeError("chain_matmul: expected one or more matrices, got none")
    for i, m in enumerate(matrices):
        if tensor_input("chain_matmul", m, f"matrices[{i}]").ndim != 2:
            checks.fail("chain_matmul", f"matrices[{i}]", "a 2-D tensor", m.shape)
    return matrices[0] if len(matrices) == 1 else multi_dot(list(matrices))
