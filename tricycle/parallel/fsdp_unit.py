"""FSDP's unit (``tricycle.parallel.fsdp``): the shards of a set of parameters, gathered
whole for the unit's forward and put back after it, and the forward itself.

**Freeing between forward and backward.** tricycle's ops keep their inputs for backward in
their closures, so a forward recorded on the gathered weights would hold them until backward.
With ``reshard`` after the forward (FULL_SHARD, ``fully_shard``'s default) and gradients
recorded, the unit's forward is instead a checkpointed segment
(``tricycle.utils.checkpoint``, non-reentrant) whose inputs are the forward's own and the
unit's shards: the segment gathers the shards, runs the forward, puts the shards back, and
its recorded graph is dropped, so only its output outlives it. Backward gathers the shards
again, recomputes the forward from the same random state (the same dropout masks) and
differentiates it: the gathered node's backward reduce-scatters the gradient to the shards
(and, with HYBRID_SHARD, all-reduces that shard's gradient over its replicas).

**Nesting: each forward once, and once more in backward.** A unit whose forward runs inside
another's checkpointed segment is part of that segment: the outer segment takes the nested
units' shards as inputs too, and a nested unit gathers from their stand-ins there, runs its
forward recorded and puts its shards back; its gathered values live as long as the segment's
graph (to the end of the outer forward; in backward, until backward has passed them). So a
nested unit runs its forward once in the forward and once in its outer unit's
recomputation, never a third time in a recomputation of its own; the price is that the outer
unit's recomputation holds its nested units' gathered parameters and activations together,
as one unit of their size would.
The *root* (the outermost unit running, none around it) keeps its gathered parameters from
its forward until backward has used them and is not recomputed, as torch's do (FSDP1's root
never reshards after forward; FSDP2's when ``reshard_after_forward`` is left None): backward
needs them first. SHARD_GRAD_OP (``reshard`` False) keeps every unit's gathered weights from
the forward until backward has used them (the shard's reduce-scatter puts the shard back in
the layers), as torch's does.
"""

import functools
import importlib
import threading

import numpy as np

from tricycle.graph import grad_enabled
from tricycle.layers import Layer
from tricycle.parallel.fsdp_units import Entry, Resharded, Shard, clean
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor


class Sharded:
    """What FSDP1's wrapper and FSDP2's modules derive from: a layer with a ``_unit``."""


class Unit:
    """A unit's shards, gathered and scattered together (see ``fsdp_units``) over ``world``
    (the World, or the sub-group the unit shards within), their gradients averaged over
    ``replicas`` too where given (HYBRID_SHARD: the group of the unit's copies). ``layer``
    holds the units nested in this one (its sublayers'), which its recomputation runs."""

    def __init__(self, world, shards: list, reshard_to_shard: bool, param_dtype, reduce_dtype,
                 replicas=None, layer: Layer | None = None):  # fmt: skip
        self.world, self.shards, self.replicas = world, shards, replicas
        self.reshard_to_shard = reshard_to_shard  # FSDP2: the shard goes back in the place
        self.param_dtype, self.reduce_dtype = param_dtype, reduce_dtype
        self.layer, self._nested = layer, None

    def learned(self) -> list:
        """The shards that require grad."""
        return [s.tensor for s in self.shards if s.tensor.requires_grad]

    def nested(self) -> list:
        """The units inside this one's layer (not itself), each once: found at the first
        forward (units are made bottom-up, as torch's)."""
        if self._nested is None:
            inner = units_of(self.layer) if self.layer is not None else []
            self._nested = list({id(u): u for _, u in inner if u is not self}.values())
        return self._nested

    def run(self, forward, args: tuple, kwargs: dict, reshard: bool, reshard_root: bool = False):
        """``forward(*args, **kwargs)`` on the unit's full parameters; with ``reshard`` they
        are put back (freed) after it, and recomputed for backward (the module's docstring);
        without, they stay in the layers (and the graph) until backward has used them. The
        root unit reshards only with ``reshard_root``."""
        learned = self.learned()
        nesting = _nesting()
        recording = grad_enabled() and bool(learned)
        if nesting.depth == 0:
            reshard = reshard and reshard_root
        if not (reshard and recording) or nesting.stand_ins is not None:
            self.unshard()
            nesting.depth += 1
            try:
                return forward(*args, **kwargs)
            finally:
                nesting.depth -= 1
                if reshard or not recording:
                    self.reshard()
        # the segment's inputs: the forward's, this unit's shards and its nested units' (whose
        # gathered values are then computed inside it, and dropped with its graph)
        n, shards = len(args), learned + [t for u in self.nested() for t in u.learned()]

        def segment(*values, **named):
            inside = _nesting()  # (backward may call it on another thread)
            inside.stand_ins = {id(t): v for t, v in zip(shards, values[n:])}
            inside.depth += 1
            try:
                self.unshard()
                return forward(*values[:n], **named)
            finally:
                inside.depth, inside.stand_ins = inside.depth - 1, None
                self.reshard()

        # tricycle.utils lies above the parallel layer: reached by name, when first used
        checkpoint = importlib.import_module("tricycle.utils.checkpoint").checkpoint
        return checkpoint(segment, *args, *shards, **kwargs)

    def unshard(self) -> None:
        """Put a view of each parameter's full values in its places: a graph node of its
        shard (or, inside a checkpointed segment, of the shard's stand-in there) where
        gradients are recorded."""
        stand_ins = _nesting().stand_ins or {}
        for shard in self.shards:
            if grad_enabled() and shard.tensor.requires_grad:
                source = stand_ins.get(id(shard.tensor), shard.tensor)
                done = functools.partial(self.put_back, shard)  # once backward has used it
                full = shard.gathered(self.world, self.param_dtype, self.reduce_dtype, source,
                                      done, self.replicas)  # fmt: skip
                for e in shard.entries:
                    e.put(full[e.a : e.b].reshape(e.shape))
            else:
                full = shard.gather_array(self.world)
                if self.param_dtype is not None:
                    full = full.astype(self.param_dtype)
                for e in shard.entries:
                    e.put(Tensor(full[e.a : e.b].reshape(e.shape), requires_grad=False))

    def reshard(self) -> None:
        for shard in self.shards:
            self.put_back(shard)

    def put_back(self, shard: Shard) -> None:
        """Put ``shard`` (FSDP2), or a ``Resharded`` marker (FSDP1), back in the places of
        its parameters: the layers hold the gathered values no more."""
        for e in shard.entries:
            e.put(shard.tensor if self.reshard_to_shard else Resharded(e.name, e.shape))


_running = threading.local()  # this thread's units inside their forward


def _nesting():
    """This thread's count of units inside their forward (``depth``; 0: the next is the
    root), and the stand-ins of the shards in the checkpointed segment running, if one is
    (``stand_ins``: {id(shard): stand-in}; a unit inside it runs as part of it)."""
    if not hasattr(_running, "depth"):
        _running.depth, _running.stand_ins = 0, None
    return _running


def units_of(model: Layer) -> list:
    """(clean name prefix, Unit) of every FSDP1 wrapper and FSDP2 module in ``model``."""
    out = []
    for name, layer in model.named_layers():
        unit = getattr(layer, "_unit", None) if isinstance(layer, Sharded) else None
        if unit is not None:
            out.append((clean(name + ".") if name else "", unit))
    return out


def _check_uniform(owner: str, params: list) -> None:
    kinds = {(p.requires_grad, p.dtype, p.device) for _, p, _ in params}
    if len(kinds) > 1:
        raise ValueError(
            f"{owner}: one flat parameter needs its parameters alike in requires_grad, "
            f"dtype and device, got {sorted(map(str, kinds))}; wrap the others apart"
        )


def check_alike(owner: str, world, params: list, what: str = "parameters") -> None:
    """Every rank must shard the same parameters (names, shapes, dtypes): a rank whose module
    differs would exchange shards of other sizes, silently wrong. One gather of the layout
    when a unit is made (as torch's DDP checks its parameters' shapes), and before
    ``sync_module_states`` broadcasts the module's tensors (``what``: "tensors")."""
    if world.world_size == 1:
        return
    mine = [(name, tuple(p.shape), str(p.dtype)) for name, p, _ in params]
    for rank, theirs in enumerate(world.all_gather_object(mine)):
        if theirs != mine:
            differ = sorted(set(mine) ^ set(theirs), key=str)[:4] or "their order"
            raise ValueError(
                f"{owner}: rank {world.rank}'s {what} differ from rank {rank}'s "
                f"({len(mine)} and {len(theirs)} of them; (name, shape, dtype) in one only: "
                f"{differ}): every rank must wrap the same module"
            )


def flat_shard(owner: str, world, params: list, parts: int) -> Shard:
    """FSDP1's flat shard of ``params`` (name, Tensor, places)."""
    _check_uniform(owner, params)
    check_alike(owner, world, params)
    entries, a = [], 0
    for name, p, places in params:
        entries.append(Entry(name, p.shape, a, places))
        a += p.size
    rank = world.rank if parts > 1 else 0
    template = params[0][1]
    k = -(-a // parts)
    flat = template.xp.zeros(k * parts, dtype=template.dtype)
    for e, (_, p, _) in zip(entries, params):
        flat[e.a : e.b] = p.array.reshape(-1)
    tensor = Parameter(flat[rank * k : (rank + 1) * k].copy(), requires_grad=template.requires_grad)
    return Shard(tensor, entries, a, parts, rank)


def row_shard(world, name: str, p: Tensor, places: list) -> Shard:
    """FSDP2's shard of one parameter: the rows ``torch.chunk`` gives this rank."""
    n = world.world_size
    rows = p.shape[0] if p.ndim else 1
    per_row = p.size // max(rows, 1) if p.ndim else 1
    chunk = -(-rows // n)
    lo, hi = min(world.rank * chunk, rows), min((world.rank + 1) * chunk, rows)
    local = p.array.reshape(rows, per_row)[lo:hi].reshape((hi - lo, *p.shape[1:]))
    tensor = Parameter(local.copy(), requires_grad=p.requires_grad)
    shard = Shard(tensor, [Entry(name, p.shape, 0, places)], p.size, n, world.rank)
    shard.k = chunk * per_row
    return shard


def cast_inputs(values, dtype):
    if dtype is None:
        return values
    return type(values)(
        v.to(dtype) if isinstance(v, Tensor) and np.dtype(v.dtype).kind == "f" else v
        for v in values
    )


# ====================================================================== FSDP1
