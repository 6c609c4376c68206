"""What FullyShardedDataParallel and ``fully_shard`` share (``tricycle.parallel.fsdp``): the
shards of a unit's parameters, whose values each rank holds 1/N of, gathered for a forward.

**Flat shards.** A *shard* is a parameter the optimizer steps: 1/N of a flat vector, the
concatenation of the unit's parameters flattened (FSDP1: one per unit, ``_flat_param``) or of
one parameter (``fully_shard``: one per parameter, its rows ``torch.chunk`` would give this
rank). The vector is padded to N equal parts of ``k`` values; rank r holds values
``[r*k, r*k + n_r)``, ``n_r`` its shard's size (``k``, or fewer for a row-sharded parameter).

**Unshard.** ``unshard`` all-gathers the shards into the full vector (a graph node of the
shard, ``gathered``) and sets each parameter's places in its layers to a view of it, so the
layers' forward reads the full weights. That node's backward is a reduce-scatter: the full
gradient averaged over the ranks, this rank's part of it for the shard's ``.grad``: the
World's reduce-scatter (MPI's or NCCL's), each rank receiving its block alone. When the
gathered weights are freed (FULL_SHARD: after the unit's forward, which backward recomputes)
is ``tricycle.parallel.fsdp_unit``'s; ``gathered_bytes`` counts those alive.
"""

import math
import weakref

import numpy as np

from tricycle.layers import Layer
from tricycle.parameter import Parameter, is_parameter
from tricycle.tensor import Tensor


class Resharded:
    """What a parameter's place in a layer holds while FSDP keeps only this rank's shard of
    it (FSDP1 outside a forward): reading it says so, rather than giving wrong values."""

    def __init__(self, name: str, shape: tuple):
        self.name, self.shape = name, tuple(shape)

    def __repr__(self) -> str:
        return f"Resharded({self.name!r}, shape={self.shape})"

    def __getattr__(self, attribute):
        raise RuntimeError(
            f"FullyShardedDataParallel: parameter {self.name!r} (shape {self.shape}) is "
            "sharded outside the forward; read it inside summon_full_params(model)"
        )


class FlatShard:
    """A rank's piece of one parameter (or one of its optimizer states) in a sharded state
    dict: ``local`` holds the values ``[start, start + local.size)`` of the flattened
    ``shape`` (torch's ShardedTensor/DTensor, as tricycle keeps them: flat ranges, since an
    FSDP1 shard may cut a parameter anywhere). ``tricycle.distributed.checkpoint`` saves and
    loads them at any world size."""

    def __init__(self, shape: tuple, start: int, local):
        self.shape, self.start, self.local = tuple(shape), int(start), local

    @property
    def dtype(self):
        return self.local.dtype

    def __repr__(self) -> str:
        end = self.start + self.local.size
        return f"FlatShard(shape={self.shape}, values [{self.start}, {end}), {self.dtype})"


class Entry:
    """One parameter of a shard: its name in the unit, shape, range ``[a, b)`` of the flat
    vector and the places (holder, key, is_attribute) that hold it in the layers."""

    def __init__(self, name: str, shape: tuple, a: int, places: list):
        self.name, self.shape, self.a, self.places = name, tuple(shape), a, places
        self.b = a + math.prod(self.shape)

    def put(self, value) -> None:
        for holder, key, attribute in self.places:
            place(holder, key, attribute, value)


def slots(layer):
    """(dotted name, value, holder, key, is_attribute) of each attribute of ``layer``, the
    items of its list and dict attributes in their stead: where parameters and sublayers sit."""
    for attr, value in list(vars(layer).items()):
        if isinstance(value, (list, dict)):
            pairs = list(value.items() if isinstance(value, dict) else enumerate(value))
            for key, item in pairs:
                yield f"{attr}.{key}", item, value, key, False
        else:
            yield attr, value, layer, attr, True


def place(holder, key, attribute: bool, value) -> None:
    """Put ``value`` in one of ``slots``' places (an attribute set past the layer's hooks)."""
    if attribute:
        object.__setattr__(holder, key, value)
    else:
        holder[key] = value


class Shard:
    """One shard Parameter and the layout of the flat vector it is a part of."""

    def __init__(self, tensor: Parameter, entries: list, total: int, parts: int, rank: int):
        self.tensor, self.entries, self.total = tensor, entries, total
        self.parts, self.rank = parts, rank  # parts = 1: every rank holds the whole (NO_SHARD)
        self.k = math.ceil(total / parts) if total else 0

    @property
    def begin(self) -> int:
        """Where this rank's shard starts in the flat vector."""
        return self.rank * self.k if self.parts > 1 else 0

    def padded_local(self, values=None):
        local = (self.tensor.array if values is None else values).reshape(-1)
        if local.size == self.k:
            return local
        out = self.tensor.xp.zeros(self.k, dtype=local.dtype)
        out[: local.size] = local
        return out

    def gather_array(self, world, values=None):
        """The full flat vector (an all-gather of the shards; no graph), or of ``values``
        (an array of the shard's shape on every rank: an optimizer state)."""
        local = self.padded_local(values)
        if self.parts == 1:
            return local[: self.total]
        gathered = world.all_gather(local, check=False)  # equal shards: checked at the wrap
        return counted(gathered).reshape(-1)[: self.total]

    def gathered(self, world, dtype=None, reduce_dtype=None, source=None, done=None,
                 replicas=None) -> Tensor:  # fmt: skip
        """The full flat vector as a graph node of the shard (or of ``source``, a stand-in
        of its values: a checkpointed segment's input), in ``dtype`` (the shard's by
        default); its backward averages the gradient over the ranks of ``world`` (in
        ``reduce_dtype``) and keeps this rank's part, then averages that part over
        ``replicas`` (HYBRID_SHARD: the ranks holding the same shard), for the shard's
        ``.grad``, then calls ``done()``."""
        full = self.gather_array(world)
        if dtype is not None and full.dtype != dtype:
            full = counted(full.astype(dtype))
        shard = self.tensor if source is None else source

        def reduce_scatter(grad):
            xp = shard.xp
            padded = xp.zeros(max(self.k * self.parts, 1), dtype=reduce_dtype or grad.dtype)
            padded[: self.total] = grad
            what = f"FSDP's reduce-scatter of {self.total} gradient values"
            if world.world_size == 1:
                mine = padded
            elif self.parts == 1:  # NO_SHARD: every rank steps the whole
                world.wait(world.start_all_reduce(padded, mean=True), what)
                mine = padded
            else:
                mine = xp.empty(self.k, dtype=padded.dtype)
                world.wait(world.start_reduce_scatter(padded, mine, mean=True), what)
            if replicas is not None and replicas.world_size > 1:  # the mean of the means
                across = f"FSDP's all-reduce of {mine.size} gradient values over the replicas"
                replicas.wait(replicas.start_all_reduce(mine, mean=True), across)
            if done is not None:
                done()
            return mine[: shard.array.size].astype(shard.dtype).reshape(shard.shape)

        return shard.new(full, args=(shard,), back_fns=(reduce_scatter,), name="fsdp unshard")

    def pieces(self, values=None) -> dict:
        """{entry name: FlatShard} of this rank's part of each parameter, from ``values``
        (an array of the shard's shape: an optimizer state; the shard's own by default)."""
        flat = (self.tensor.array if values is None else values).reshape(-1)
        begin, end = self.begin, self.begin + flat.size
        out = {}
        for e in self.entries:
            lo = min(max(e.a, begin), e.b)
            hi = max(min(e.b, end), lo)
            out[e.name] = FlatShard(e.shape, lo - e.a, flat[lo - begin : hi - begin])
        return out

    def fill(self, target, values: dict) -> None:
        """Write into ``target`` (an array of the shard's shape) this rank's part of each
        entry's full flat value (``values``: {entry name: the full array, or a callable
        giving the flat range [lo, hi) of it})."""
        flat = target.reshape(-1)
        begin, end = self.begin, self.begin + flat.size
        for e in self.entries:
            lo, hi = max(e.a, begin), min(e.b, end)
            if hi <= lo:
                continue
            value = values[e.name]
            if callable(value):
                part = value(lo - e.a, hi - e.a)
            else:
                part = np.asarray(value).reshape(-1)[lo - e.a : hi - e.a]
            flat[lo - begin : hi - begin] = self.tensor.xp.asarray(part)


_gathered = {"bytes": 0}  # of the arrays gathered by all-gathers and not yet freed


def counted(array):
    """``array`` (a gathered array, owning its memory), its bytes counted by
    ``gathered_bytes`` until it is freed."""
    try:
        weakref.finalize(array, _freed, array.nbytes)
    except TypeError:  # an array kind without weak references: not counted
        return array
    _gathered["bytes"] += array.nbytes
    return array


def _freed(nbytes: int) -> None:
    _gathered["bytes"] -= nbytes


def gathered_bytes() -> int:
    """The bytes of full parameters gathered by FSDP (its all-gathers, and their casts to
    a mixed-precision dtype) still alive in this process: what its resharding frees."""
    return _gathered["bytes"]


def full_or_piece(value, entry, shard):
    """A full value, or a FlatShard as a function of the flat range it must cover."""
    if not isinstance(value, FlatShard):
        return np.asarray(value.numpy() if isinstance(value, Tensor) else value)

    def part(lo: int, hi: int):
        if lo < value.start or hi > value.start + value.local.size:
            raise ValueError(
                f"FullyShardedDataParallel.load_state_dict: the sharded value of "
                f"{entry.name!r} holds [{value.start}, {value.start + value.local.size}), this "
                f"rank needs [{lo}, {hi}): load a sharded state at its own world size (or "
                "through tricycle.distributed.checkpoint at any)"
            )
        return np.asarray(value.local)[lo - value.start : hi - value.start]

    return part


def owned_parameters(module: Layer, stop: tuple) -> list:
    """(dotted name, Tensor, places) for each parameter that ``module`` and its sublayers hold
    (not those under a layer of a ``stop`` class: units of their own), each once, with every
    place (holder, key, is_attribute) that holds it (a tied weight has several)."""
    found: dict[int, list] = {}
    order: list = []
    seen: set[int] = set()

    def visit(layer, prefix: str) -> None:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        children = []
        for name, item, holder, key, attribute in slots(layer):
            path = f"{prefix}{name}"
            if isinstance(item, Layer):
                if not isinstance(item, stop):
                    children.append((item, path + "."))
            elif isinstance(item, Tensor) and item.args is None and is_parameter(item):
                if id(item) not in found:
                    found[id(item)] = [path, item, []]
                    order.append(id(item))
                found[id(item)][2].append((holder, key, attribute))
        for child, path in children:
            visit(child, path)

    visit(module, "")
    return [tuple(found[i]) for i in order]


def clean(name: str) -> str:
    """A parameter's name as the unwrapped model's (FSDP1's wrappers taken out), as torch's."""
    return name.replace("_fsdp_wrapped_module.", "")
