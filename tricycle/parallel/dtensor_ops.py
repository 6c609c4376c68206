"""torch's placements (``Shard(dim)``, ``Replicate()``, ``Partial(reduce_op)``) and the moves
between them on arrays: what ``DTensor.redistribute`` (``tricycle.parallel.dtensor``) runs
forward, and backward from the gradient's placement to the input's.

A mesh dimension of n ranks (the World, or a single rank: ``tricycle.parallel.device_mesh``)
holds a tensor of global shape S as:

- ``Shard(d)``: rank r holds the r-th of ``torch.chunk``'s n pieces along d (pieces of
  ceil(S[d] / n), the last ones shorter or empty);
- ``Replicate()``: every rank holds the whole;
- ``Partial("sum" | "avg")``: every rank holds an addend: the tensor is their sum (mean).

The moves: Shard -> Replicate all-gathers, Replicate -> Shard slices, Partial -> Replicate
all-reduces, Partial -> Shard reduce-scatters, Shard -> Shard all-gathers then slices, and
Replicate -> Partial divides by n ("sum"; torch's partition of a value). A gradient's
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
    shape = list(shape)
    for mesh_dim, p in enumerate(placements):
        if p.is_shard():
            n, rank = mesh.group_of(mesh_dim)
            s = piece(shape[p.dim], n, rank)
            shape[p.dim] = s.stop - s.start
    return tuple(shape)


def _take(array, dim: int, part: slice):
    index = [slice(None)] * array.ndim
    index[dim] = part
    return array[tuple(index)]


def _gather(world, array, n: int, dim: int, length: int):
    """The whole of a tensor sharded along ``dim`` (``length`` long) from its pieces."""
    xp = _xp(array)
    size = -(-length // n) if length else 0
    pad = [(0, 0)] * array.ndim
    pad[dim] = (0, size - array.shape[dim])
    padded = xp.ascontiguousarray(xp.pad(array, pad) if pad[dim][1] else array)
    pieces = world.all_gather(padded)  # (n, ...)
    parts = [_take(pieces[r], dim, slice(0, piece(length, n, r).stop - piece(length, n, r).start))
             for r in range(n)]  # fmt: skip
    return xp.concatenate(parts, axis=dim)


def _reduce_scatter(world, array, n: int, rank: int, dim: int, mean: bool):
    """This rank's piece along ``dim`` of the sum (mean) over the ranks of ``array``."""
    xp = _xp(array)
    length = array.shape[dim]
    size = -(-length // n) if length else 0
    pad = [(0, 0)] * array.ndim
    pad[dim] = (0, size * n - length)
    front = xp.moveaxis(xp.pad(array, pad), dim, 0)
    block = world.reduce_scatter(xp.ascontiguousarray(front), mean=mean)
    block = xp.moveaxis(block.reshape((size, *front.shape[1:])), 0, dim)
    mine = piece(length, n, rank)
    return xp.ascontiguousarray(_take(block, dim, slice(0, mine.stop - mine.start)))


def _xp(array):
    return backend.array_module(array)


def move(array, shape: tuple, mesh, source: tuple, target: tuple):
    """``array`` (this rank's values of a tensor of global ``shape`` placed as ``source``)
    placed as ``target`` instead, one mesh dimension after another."""
    for mesh_dim, (a, b) in enumerate(zip(source, target)):
        if a == b:
            continue
        n, rank = mesh.group_of(mesh_dim)
        array = _move_one(mesh.world, array, shape, n, rank, a, b)
    return array


def _move_one(world, array, shape, n: int, rank: int, a: Placement, b: Placement):
    if a.is_partial():
        mean = a.reduce_op == "avg"
        if n == 1:
            whole = array
        elif b.is_shard():
            return _reduce_scatter(world, array, n, rank, b.dim, mean)
        else:
            whole = world.all_reduce(array, mean=mean)
        return (
            _move_one(world, whole, shape, n, rank, Replicate(), b)
            if b.is_partial()
            else (whole if b.is_replicate() else _take(whole, b.dim, piece(shape[b.dim], n, rank)))
        )
    if a.is_shard():
        whole = array if n == 1 else _gather(world, array, n, a.dim, shape[a.dim])
        return _move_one(world, whole, shape, n, rank, Replicate(), b)
    if b.is_replicate():
        return array
    if b.is_shard():
        return _xp(array).ascontiguousarray(_take(array, b.dim, piece(shape[b.dim], n, rank)))
    if b.reduce_op == "sum":
        return array / n
    return array  # avg: the mean of n equal values is the value
