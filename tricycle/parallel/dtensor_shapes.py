"""Where a DTensor's shards go when its shape changes (torch's view rules for
``view``/``reshape``/``flatten``, ``transpose``/``permute``): placements in, placements out,
or a refusal naming the sharded dimension that does not map cleanly.

A reshape pairs the input's dimensions with the output's in groups of equal size (a
dimension of size 1 alone is a group of its own). A dimension sharded over n ranks keeps
its shard when its group is

- one dimension in and one out of the same size: the shard moves to it (even uneven
  shards: each rank's piece is the same);
- a split (``(6,) -> (2, 3)``) or a merge (``(4, 6) -> (24,)``) where the sharded dimension
  is the outermost of the group, its size divisible by n, and the first output dimension's
  too: each rank's piece is then a contiguous piece of the output's first dimension.

Anything else (an inner dimension merged, which torch keeps as a ``_StridedShard``; an
uneven split) is refused: redistribute first.
"""

import math

from tricycle.parallel.dtensor_ops import Replicate, Shard


def target_shape(owner: str, shape: tuple, wanted) -> tuple:
    """``wanted`` (torch's ``view`` arguments: one sequence or the sizes, one of them -1 at
    most) as a shape of ``shape``'s number of elements."""
    if len(wanted) == 1 and not isinstance(wanted[0], int):
        wanted = tuple(wanted[0])
    wanted = tuple(int(n) for n in wanted)
    known = math.prod(n for n in wanted if n != -1)
    numel = math.prod(shape)
    if wanted.count(-1) > 1 or any(n < -1 for n in wanted):
        raise ValueError(f"{owner}: invalid shape {wanted} (one -1 at most, sizes >= 0)")
    if -1 in wanted:
        if known == 0 or numel % known:
            raise ValueError(f"{owner}: shape {wanted} is invalid for a DTensor of shape {shape}")
        wanted = tuple(numel // known if n == -1 else n for n in wanted)
    if math.prod(wanted) != numel:
        raise ValueError(f"{owner}: shape {wanted} is invalid for a DTensor of shape {shape}")
    return wanted


def _groups(shape: tuple, target: tuple) -> list:
    """The (input dims, output dims) of equal size, in order (size-1 dimensions alone)."""
    groups, i, j = [], 0, 0
    while i < len(shape) or j < len(target):
        if i < len(shape) and shape[i] == 1 and (j == len(target) or target[j] != 1):
            groups.append(([i], []))
            i += 1
            continue
        if j < len(target) and target[j] == 1 and (i == len(shape) or shape[i] != 1):
            groups.append(([], [j]))
            j += 1
            continue
        ins, outs = [i], [j]
        size_in, size_out = shape[i], target[j]
        i, j = i + 1, j + 1
        while size_in != size_out:  # equal products: the sizes are positive here
            if size_in < size_out:
                size_in, i = size_in * shape[i], i + 1
                ins.append(i - 1)
            else:
                size_out, j = size_out * target[j], j + 1
                outs.append(j - 1)
        groups.append((ins, outs))
    return groups


def reshaped(owner: str, shape: tuple, target: tuple, mesh, placements: tuple) -> tuple:
    """The placements of a DTensor of ``shape`` placed as ``placements`` viewed as
    ``target`` (see the module's docstring)."""
    sharded = any(p.is_shard() for p in placements)
    if sharded and math.prod(shape) == 0:
        raise RuntimeError(f"{owner}: a sharded DTensor of shape {shape} (no elements) is not "
                           "viewed: redistribute it first")  # fmt: skip
    where = {d: group for group in _groups(shape, target) for d in group[0]} if sharded else {}
    out = []
    for mesh_dim, p in enumerate(placements):
        if not p.is_shard():
            out.append(p)
            continue
        n = mesh.size(mesh_dim)
        ins, outs = where[p.dim]
        if n == 1:  # one rank holds the whole: any dimension of the group is it
            out.append(Shard(outs[0]) if outs else Replicate())
            continue
        simple = len(ins) == 1 and len(outs) == 1
        even = shape[p.dim] % n == 0 and bool(outs) and target[outs[0]] % n == 0
        if not outs or ins[0] != p.dim or not (simple or even):
            raise RuntimeError(
                f"{owner}: the DTensor of shape {shape} is sharded on dimension {p.dim} "
                f"over {n} ranks ({p}), which the view as {target} does not keep as a shard "
                "(only the outermost of merged dimensions, divisible by the ranks, maps "
                "cleanly): redistribute it first"
            )
        out.append(Shard(outs[0]))
    return tuple(out)


def permuted(owner: str, ndim: int, dims, placements: tuple) -> tuple:
    """``dims`` made non-negative (checked as a permutation), and the placements of the
    permuted DTensor: ``Shard(d)`` follows d to where the permutation puts it."""
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    dims = tuple(d % ndim if -ndim <= d < ndim else d for d in dims)
    if sorted(dims) != list(range(ndim)):
        raise ValueError(f"{owner}: dims {dims} are not a permutation of {ndim} dimensions")
    return dims, tuple(Shard(dims.index(p.dim)) if p.is_shard() else p for p in placements)


def transposition(owner: str, ndim: int, dim0: int, dim1: int) -> tuple:
    """The permutation that swaps ``dim0`` and ``dim1`` of ``ndim`` dimensions."""
    for d in (dim0, dim1):
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"{owner}: dimension {d} of a DTensor of {ndim} dimensions")
    order = list(range(ndim))
    if ndim:
        a, b = dim0 % ndim, dim1 % ndim
        order[a], order[b] = order[b], order[a]
    return tuple(order)
