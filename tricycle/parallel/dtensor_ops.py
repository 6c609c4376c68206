"""torch's placements (``Shard(dim)``, ``Replicate()``, ``Partial(reduce_op)``) and the moves
between them on arrays: what ``DTensor.redistribute`` (``tricycle.parallel.dtensor``) runs
forward, and backward from the gradient's placement to the input's.

A mesh dimension of n ranks (the World, a sub-group of it, or a single rank:
``tricycle.parallel.device_mesh``) holds a tensor of global shape S as:

- ``Shard(d)``: rank r holds the r-th of ``torch.chunk``'s n pieces along d (pieces of
  ceil(S[d] / n), the last ones shorter or empty);
- ``Replicate()``: every rank holds the whole;
- ``Partial("sum" | "avg")``: every rank holds an addend: the tensor is their sum (mean).

The moves: Shard -> Replicate all-gathers, Replicate -> Shard slices, Partial -> Replicate
all-reduces, Partial -> Shard reduce-scatters, Shard -> Shard all-gathers then slices, and
Replicate -> Partial divides by n ("sum"; torch's partition of a value), each move with
the collectives of that dimension's group (its rank: this rank's coordinate). A gradient's
placement is its tensor's, with Partial read as Replicate (torch's rule for gradients).
"""

from tricycle import backend

REDUCE_OPS = ("sum", "avg")


class Placement:
    """What every placement answers (torch's ``is_shard``, ``is_replicate``, ``is_partial``)."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return False


class Shard(Placement):
    """torch's ``Shard(dim)``: each rank holds a ``torch.chunk`` piece along ``dim``."""

    def __init__(self, dim: int):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Shard: dim must be an int, got {type(dim).__name__}")
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other) -> bool:
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(("Shard", self.dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


class Replicate(Placement):
    """torch's ``Replicate()``: every rank holds the whole tensor."""

    def is_replicate(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


class Partial(Placement):
    """torch's ``Partial(reduce_op="sum")``: the tensor is the sum ("avg": the mean) of the
    ranks' values. torch's "max", "min" and "product" are refused: the World reduces sums."""

    def __init__(self, reduce_op: str = "sum"):
        if reduce_op not in REDUCE_OPS:
            raise NotImplementedError(
                f"Partial: reduce_op {reduce_op!r}; tricycle's Partial sums ('sum') or "
                "averages ('avg')"
            )
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other) -> bool:
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self) -> int:
        return hash(("Partial", self.reduce_op))

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return f"P({self.reduce_op})"


def checked_placements(owner: str, placements, mesh, ndim: int) -> tuple:
    """``placements`` (one per mesh dimension) with each Shard's dim made non-negative."""
    placements = (placements,) if isinstance(placements, Placement) else tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(
            f"{owner}: `placements` must have the same length as `device_mesh.ndim`! Found "
            f"placements length: {len(placements)}, and device_mesh.ndim: {mesh.ndim}."
        )
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"{owner}: placements must be Shard, Replicate or Partial, got {p!r}")
        if p.is_shard():
            if not -ndim <= p.dim < ndim:
                raise IndexError(
                    f"{owner}: Shard(dim={p.dim}) of a tensor of {ndim} dimensions (expected "
                    f"a dim in [{-ndim}, {ndim - 1}])"
                )
            p = Shard(p.dim % ndim)
        out.append(p)
    return tuple(out)


def for_grad(placements) -> tuple:
    """A gradient's placements: Partial read as Replicate (torch's rule)."""
    return tuple(Replicate() if p.is_partial() else p for p in placements)


def piece(length: int, n: int, rank: int) -> slice:
    """``torch.chunk``'s piece of rank ``rank`` of ``length`` values split n ways."""
    size = -(-length // n) if length else 0
    lo = min(rank * size, length)
    return slice(lo, min(lo + size, length))


def local_shape(shape: tuple, mesh, placements) -> tuple:
    """This rank's shape of a tensor of global ``shape``."""
    return _shapes_along(shape, mesh, placements)[-1]


def _shapes_along(shape: tuple, mesh, placements) -> list:
    """The tensor's shape as each mesh dimension sees it (the pieces of the dimensions
    before it: torch's logical shapes), then this rank's: a dimension sharded on several
    mesh dimensions is split by the first, its piece by the next, and so on."""
    shapes, current = [], list(shape)
    for mesh_dim, p in enumerate(placements):
        shapes.append(tuple(current))
        if p.is_shard():
            n, rank = mesh.group_of(mesh_dim)
            s = piece(current[p.dim], n, rank)
            current[p.dim] = s.stop - s.start
    return [*shapes, tuple(current)]


def _take(array, dim: int, part: slice):
    index = [slice(None)] * array.ndim
    index[dim] = part
    return array[tuple(index)]


def _gather(group, array, n: int, dim: int, length: int):
    """The whole of a tensor sharded along ``dim`` (``length`` long) from its pieces."""
    xp = _xp(array)
    size = -(-length // n) if length else 0
    pad = [(0, 0)] * array.ndim
    pad[dim] = (0, size - array.shape[dim])
    padded = xp.ascontiguousarray(xp.pad(array, pad) if pad[dim][1] else array)
    pieces = group.all_gather(padded)  # (n, ...)
    parts = [_take(pieces[r], dim, slice(0, piece(length, n, r).stop - piece(length, n, r).start))
             for r in range(n)]  # fmt: skip
    return xp.concatenate(parts, axis=dim)


def _reduce_scatter(group, array, n: int, rank: int, dim: int, mean: bool):
    """This rank's piece along ``dim`` of the sum (mean) over the ranks of ``array``."""
    xp = _xp(array)
    length = array.shape[dim]
    size = -(-length // n) if length else 0
    pad = [(0, 0)] * array.ndim
    pad[dim] = (0, size * n - length)
    front = xp.moveaxis(xp.pad(array, pad), dim, 0)
    block = group.reduce_scatter(xp.ascontiguousarray(front), mean=mean)
    block = xp.moveaxis(block.reshape((size, *front.shape[1:])), 0, dim)
    mine = piece(length, n, rank)
    return xp.ascontiguousarray(_take(block, dim, slice(0, mine.stop - mine.start)))


def _xp(array):
    return backend.array_module(array)


def move(array, shape: tuple, mesh, source: tuple, target: tuple):
    """``array`` (this rank's values of a tensor of global ``shape`` placed as ``source``)
    placed as ``target`` instead, one mesh dimension at a time (``steps``)."""
    seen = _shapes_along(shape, mesh, source)
    for mesh_dim, a, b in steps(source, target):
        group = mesh.group(mesh_dim)  # the ranks along this dimension: this rank's line
        array = _move_one(group, array, seen[mesh_dim], group.world_size, int(group.rank), a, b)
    return array


def steps(source: tuple, target: tuple) -> list:
    """The moves from ``source`` to ``target``, (mesh dimension, from, to) each, in torch's
    order: from the innermost mesh dimension out, each to its target, but to Replicate where
    the target shards a tensor dimension on other mesh dimensions than the placements then
    do (a nested shard that would not line up); then from the outermost in, each still
    short of its target (a Replicate) to it."""
    current, out = list(source), []
    for mesh_dim in reversed(range(len(current))):
        b = target[mesh_dim]
        if b.is_shard() and _sharding(current, b.dim) != _sharding(target, b.dim):
            b = Replicate()
        if current[mesh_dim] != b:
            out.append((mesh_dim, current[mesh_dim], b))
            current[mesh_dim] = b
    for mesh_dim, b in enumerate(target):
        if current[mesh_dim] != b:
            out.append((mesh_dim, current[mesh_dim], b))
            current[mesh_dim] = b
    return out


def _sharding(placements, dim: int) -> list:
    """The mesh dimensions that shard tensor dimension ``dim``."""
    return [m for m, p in enumerate(placements) if p.is_shard(dim)]


def _move_one(group, array, seen: tuple, n: int, rank: int, a: Placement, b: Placement):
    """One mesh dimension's move from ``a`` to ``b`` over ``group`` (n ranks, this one
    ``rank`` among them), the tensor's shape along it ``seen``: a shard's whole is ``seen``'s
    length; a new shard is a piece of this rank's values, as they are."""
    if a.is_partial():
        mean = a.reduce_op == "avg"
        if n > 1 and b.is_shard():
            return _reduce_scatter(group, array, n, rank, b.dim, mean)
        whole = group.all_reduce(array, mean=mean) if n > 1 else array
        return _move_one(group, whole, seen, n, rank, Replicate(), b)
    if a.is_shard():
        whole = array if n == 1 else _gather(group, array, n, a.dim, seen[a.dim])
        return _move_one(group, whole, seen, n, rank, Replicate(), b)
    if b.is_replicate():
        return array
    if b.is_shard():
        part = piece(array.shape[b.dim], n, rank)
        return _xp(array).ascontiguousarray(_take(array, b.dim, part))
    if b.reduce_op == "sum":
        return array / n
    return array  # avg: the mean of n equal values is the value
