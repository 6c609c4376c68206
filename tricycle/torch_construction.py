"""torch's top-level functions that build a tensor out of others, each a composition of
differentiable ops (``reshape``, ``getitem``, ``concatenate``, broadcasting products,
``einsum``, ``linalg.vander``), so every gradient is theirs:

- diagonals: ``diagflat`` (the flattened input on a diagonal of a square matrix),
  ``diag_embed`` (the last axis of the input on the diagonal of two new axes, zeros elsewhere:
  ``diagonal_scatter`` into zeros) and ``block_diag`` (the inputs as blocks down the diagonal);
- products: ``kron`` (every entry of one times the whole of the other, as blocks),
  ``tensordot`` (a sum of products over pairs of axes: one einsum), ``vander`` (the columns
  x^(N-1), ..., x, 1: ``tricycle.linalg.vander``'s flipped, or as they are if ``increasing``;
  its gradient is finite at x = 0, where torch 2.13's own backward of vander fails on an
  in-place write), ``cartesian_prod`` and ``combinations`` (rows of values taken from 1-D
  tensors: indexing);
- ``empty_strided``: a tensor whose ``stride()`` is the one asked, a view of a buffer just
  large enough (of zeros, as ``tricycle.empty``'s), as torch's.
"""

import itertools

import numpy as np

from tricycle import checks, ops
from tricycle.einsum import einsum
from tricycle.linalg import structured
from tricycle.torch_functions import empty, no_out, tensor_input
from tricycle.torch_functions_more import meshgrid
from tricycle.torch_scatter import diagonal_scatter


def diagflat(input, offset: int = 0):  # noqa: A002 - torch's names
    """torch.diagflat: the square matrix with the flattened input on its ``offset`` diagonal
    (above the main one for > 0) and zeros elsewhere."""
    x = tensor_input("diagflat", input)
    return ops.reshape(x, (-1,)).diag(checks.integer("diagflat", "offset", offset))


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """torch.diag_embed: a tensor with one more axis, whose diagonal (``offset``) over the
    axes ``dim1`` and ``dim2`` (of the output) holds the input's last axis, zeros elsewhere."""
    x = tensor_input("diag_embed", input)
    if x.ndim < 1:
        checks.fail("diag_embed", "input's shape", "at least 1 axis", x.shape)
    offset = checks.integer("diag_embed", "offset", offset)
    a, b = (
        checks.axis("diag_embed", n, d, x.ndim + 1) for n, d in (("dim1", dim1), ("dim2", dim2))
    )
    if a == b:
        checks.fail("diag_embed", "dim2", f"an axis other than dim1={dim1}", dim2)
    n, rest = x.shape[-1] + abs(offset), iter(x.shape[:-1])
    shape = tuple(n if d in (a, b) else next(rest) for d in range(x.ndim + 1))
    zeros = x.new(x.xp.zeros(shape, dtype=x.dtype), requires_grad=False)
    return diagonal_scatter(zeros, x, offset, a, b)


def block_diag(*tensors):
    """torch.block_diag: the tensors (numbers as (1, 1), vectors as rows (1, N), matrices)
    as blocks down the diagonal of one matrix, zeros elsewhere, in their common dtype."""
    xs = [tensor_input("block_diag", t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not xs:
        checks.fail("block_diag", "tensors", "at least one tensor", tensors, TypeError)
    for i, x in enumerate(xs):
        if x.ndim > 2:
            checks.fail("block_diag", f"tensors[{i}]'s shape", "at most 2 axes", x.shape)
    blocks = [
        ops.reshape(x, (1, 1) if x.ndim == 0 else (1, x.size)) if x.ndim < 2 else x for x in xs
    ]
    floats = [x.dtype for x in xs if x.dtype.kind == "f"]  # torch's: a float's dtype wins
    dtype = np.result_type(*(floats or [x.dtype for x in xs]))
    blocks = [x if x.dtype == dtype else x.to(dtype) for x in blocks]
    width, rows, done = sum(x.shape[1] for x in blocks), [], 0
    for x in blocks:
        (m, n), xp = x.shape, x.xp
        before = x.new(xp.zeros((m, done), dtype=dtype), requires_grad=False)
        after = x.new(xp.zeros((m, width - done - n), dtype=dtype), requires_grad=False)
        rows.append(ops.concatenate([before, x, after], 1))
        done += n
    return ops.concatenate(rows, 0)


def kron(input, other, *, out=None):  # noqa: A002
    """torch.kron: the Kronecker product, the blocks input[i] * other laid out as input's
    entries are (the shorter shape padded with leading 1s): shape input.shape * other.shape."""
    no_out("kron", out)
    a, b = tensor_input("kron", input), tensor_input("kron", other, "other")
    n = max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + a.shape, (1,) * (n - b.ndim) + b.shape
    spread_a = ops.reshape(a, [m for size in sa for m in (size, 1)])  # (a0, 1, a1, 1, ...)
    spread_b = ops.reshape(b, [m for size in sb for m in (1, size)])  # (1, b0, 1, b1, ...)
    return ops.reshape(spread_a * spread_b, tuple(p * q for p, q in zip(sa, sb)))


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: the sum of products of ``a`` and ``b`` over pairs of axes: the last
    ``dims`` of a with the first ``dims`` of b, or the lists ``dims = (a's axes, b's axes)``;
    the remaining axes of a, then of b (one einsum)."""
    no_out("tensordot", out)
    a, b = tensor_input("tensordot", a, "a"), tensor_input("tensordot", b, "b")
    dims = dims.tolist() if hasattr(dims, "array") else dims
    if checks.is_integer(dims):
        checks.integer("tensordot", "dims", dims, 0)
        if dims > min(a.ndim, b.ndim):
            checks.fail("tensordot", "dims", f"at most {min(a.ndim, b.ndim)} axes", dims)
        pairs = (list(range(a.ndim - dims, a.ndim)), list(range(dims)))
    elif isinstance(dims, tuple | list) and len(dims) == 2:
        pairs = [[d] if checks.is_integer(d) else list(d) for d in dims]
    else:
        checks.fail("tensordot", "dims", "an integer or two lists of axes", dims, TypeError)
    axes_a = [checks.axis("tensordot", "dims", d, a.ndim, a.shape) for d in pairs[0]]
    axes_b = [checks.axis("tensordot", "dims", d, b.ndim, b.shape) for d in pairs[1]]
    sizes = [(a.shape[i], b.shape[j]) for i, j in zip(axes_a, axes_b)]
    if len(axes_a) != len(axes_b) or any(m != n for m, n in sizes):
        expected = f"pairs of axes of one size (a {a.shape}, b {b.shape})"
        checks.fail("tensordot", "dims", expected, dims)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    of_a = [next(letters) for _ in range(a.ndim)]
    of_b = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(axes_a, axes_b):
        of_b[j] = of_a[i]
    kept = [c for i, c in enumerate(of_a) if i not in axes_a]
    kept += [c for j, c in enumerate(of_b) if j not in axes_b]
    return einsum(f"{''.join(of_a)},{''.join(of_b)}->{''.join(kept)}", a, b)


def vander(x, N=None, increasing: bool = False):  # noqa: N803 - torch's name
    """torch.vander: the Vandermonde matrix of the vector ``x``: columns x^(N-1), ..., x, 1
    (``N`` = len(x) unless given; the other way round if ``increasing``)."""
    x = tensor_input("vander", x, "x")
    if x.ndim != 1:
        checks.fail("vander", "x's shape", "1 axis", x.shape)
    N = x.shape[0] if N is None else checks.non_negative_int("vander", "N", N)  # noqa: N806
    dtype = np.int64 if x.dtype.kind in "biu" else x.dtype
    x = x if x.dtype == dtype else x.to(dtype)
    if N > 1:  # torch.linalg.vander's columns 1, x, ..., x^(N-1)
        columns = structured.vander(x, N)
    else:  # no column, or the one of ones
        columns = x.new(x.xp.ones((x.shape[0], N), dtype=dtype), requires_grad=False)
    return columns if increasing else columns[:, ::-1]


def cartesian_prod(*tensors):
    """torch.cartesian_prod: every tuple of one value from each 1-D tensor, in row-major
    order, as the rows of a (n0 * n1 * ..., len(tensors)) matrix (one tensor: itself)."""
    xs = [tensor_input("cartesian_prod", t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not xs or any(x.ndim != 1 for x in xs):
        shapes = [x.shape for x in xs]
        checks.fail("cartesian_prod", "tensors' shapes", "one or more 1-D tensors", shapes)
    if len(xs) == 1:
        return xs[0]
    return ops.stack([ops.reshape(grid, (-1,)) for grid in meshgrid(*xs, indexing="ij")], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):  # noqa: A002
    """torch.combinations: every choice of ``r`` values of the 1-D input (in order, as
    Python's ``itertools.combinations``; ``with_replacement`` allows one value many times),
    as the rows of a matrix; r = 0 gives an empty vector, as torch's."""
    x = tensor_input("combinations", input)
    if x.ndim != 1:
        checks.fail("combinations", "input's shape", "1 axis", x.shape)
    r = checks.non_negative_int("combinations", "r", r)
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    if r == 0:
        return x[:0]
    ids = np.array(list(choose(range(x.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return x[x.xp.asarray(ids)]


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False):  # fmt: skip
    """torch.empty_strided: a tensor of ``size`` whose ``stride()`` is ``stride`` (elements
    between neighbours along each axis), over memory just large enough (zeros, as
    ``tricycle.empty``'s); entries that overlap share memory, as torch's."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or not all(map(checks.is_integer, size + stride)):
        checks.fail("empty_strided", "stride", f"{len(size)} integers, one per size", stride)
    if any(n < 0 for n in size + stride):
        checks.fail("empty_strided", "size and stride", "integers >= 0", (size, stride))
    span = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    memory = empty(max(span, 1), dtype=dtype, device=device)  # zeros, as tricycle.empty's
    strides = tuple(s * memory.array.itemsize for s in stride)
    if memory.xp is np:  # a view whose base is the memory: storage() and storage_offset() see it
        array = np.ndarray(size, memory.dtype, buffer=memory.array, strides=strides)
    else:
        array = memory.xp.ndarray(size, memory.dtype, memptr=memory.array.data, strides=strides)
    return memory.new(array, requires_grad=requires_grad)
