"""torch.distributed.fsdp on tricycle's World: ``FullyShardedDataParallel`` (FSDP1) and
``fully_shard`` (FSDP2). Each rank keeps 1/N of every parameter; a unit's forward gathers
its full parameters, its backward reduce-scatters their gradients (the mean over the ranks),
so each rank's optimizer, built on ``model.parameters()`` after wrapping, steps its shards::

    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))   # FSDP1: flat shards
    fully_shard(block) for each block; fully_shard(model)            # FSDP2: row shards
    optimizer = optim.AdamW(model.parameters(), lr=3e-4)

The units and their shards are ``tricycle.parallel.fsdp_units``'s (read it for what is freed
when: tricycle's graph holds the gathered weights a forward used until backward has used
them, so FULL_SHARD does not gather them again for backward). Strategies: FULL_SHARD puts the
shards back after each unit's forward, SHARD_GRAD_OP keeps the gathered views in the layers
until backward, NO_SHARD holds every parameter whole on every rank (DDP: gradients
all-reduced). HYBRID_SHARD needs process groups tricycle does not have: refused.
"""

import enum
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from tricycle import checks
from tricycle.graph import grad_enabled, no_grad
from tricycle.layers import Layer
from tricycle.parallel import torch_distributed as dist
from tricycle.parallel.fsdp_units import Entry, FlatShard, Resharded, Shard, clean, owned_parameters
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

OWNER = "FullyShardedDataParallel"


class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


@dataclass
class MixedPrecision:
    """FSDP1's: the dtype of the gathered parameters (the forward's and backward's), of the
    gradients' reduction (``param_dtype``'s by default) and of the buffers; the shards and
    the optimizer stay in the parameters' own dtype."""

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class MixedPrecisionPolicy:
    """FSDP2's: ``param_dtype``, ``reduce_dtype`` and ``output_dtype`` (the forward's output
    cast to it), floating inputs cast to ``param_dtype`` with ``cast_forward_inputs``."""

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class CPUOffload:
    """``offload_params=True`` keeps the shards on the host: what they are already for a
    model on the host; for a model on a GPU it is refused (not built)."""

    offload_params: bool = False


class OffloadPolicy:
    """FSDP2's default: no offloading."""


@dataclass
class FullStateDictConfig:
    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class LocalStateDictConfig:
    offload_to_cpu: bool = False


# ====================================================================== wrap policies
class ModuleWrapPolicy:
    """Wrap every sublayer that is an instance of one of ``module_classes`` in its own unit."""

    def __init__(self, module_classes):
        self._classes = tuple(module_classes)

    def __call__(self, module, recurse: bool, nonwrapped_numel: int = 0) -> bool:
        return True if recurse else isinstance(module, self._classes)


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls) -> bool:  # fmt: skip
    """torch's: wrap the layers of the classes ``transformer_layer_cls`` (use with
    ``functools.partial``)."""
    return ModuleWrapPolicy(transformer_layer_cls)(module, recurse, nonwrapped_numel)


def lambda_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int, lambda_fn) -> bool:
    """torch's: wrap the layers for which ``lambda_fn(module)`` is True."""
    return True if recurse else bool(lambda_fn(module))


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None) -> bool:  # fmt: skip
    """torch's: wrap a layer once it holds ``min_num_params`` parameter values not wrapped
    already, but never inside ``force_leaf_modules`` nor a layer of ``exclude_wrap_modules``."""
    leaf = tuple(force_leaf_modules or ())
    excluded = tuple(exclude_wrap_modules or ())
    if recurse:
        return not isinstance(module, leaf)
    return nonwrapped_numel >= min_num_params and not isinstance(module, excluded)


# ====================================================================== the unit
class _Unit:
    """A unit's shards, gathered and scattered together (see ``fsdp_units``)."""

    def __init__(self, world, shards: list, reshard_to_shard: bool, param_dtype, reduce_dtype):
        self.world, self.shards = world, shards
        self.reshard_to_shard = reshard_to_shard  # FSDP2: the shard goes back in the place
        self.param_dtype, self.reduce_dtype = param_dtype, reduce_dtype

    def unshard(self) -> None:
        """Put a view of each parameter's full values in its places (a graph node of its
        shard where gradients are recorded)."""
        for shard in self.shards:
            if grad_enabled() and shard.tensor.requires_grad:
                full = shard.gathered(self.world, self.param_dtype, self.reduce_dtype)
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
            for e in shard.entries:
                e.put(shard.tensor if self.reshard_to_shard else Resharded(e.name, e.shape))

    def full_arrays(self) -> dict:
        """{entry name: its full values} (an all-gather on every rank)."""
        out = {}
        for shard in self.shards:
            full = shard.gather_array(self.world)
            for e in shard.entries:
                out[e.name] = full[e.a : e.b].reshape(e.shape)
        return out


def _check_uniform(owner: str, params: list) -> None:
    kinds = {(p.requires_grad, p.dtype, p.device) for _, p, _ in params}
    if len(kinds) > 1:
        raise ValueError(
            f"{owner}: one flat parameter needs its parameters alike in requires_grad, "
            f"dtype and device, got {sorted(map(str, kinds))}; wrap the others apart"
        )


def _flat_shard(owner: str, world, params: list, parts: int) -> Shard:
    """FSDP1's flat shard of ``params`` (name, Tensor, places)."""
    _check_uniform(owner, params)
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


def _row_shard(world, name: str, p: Tensor, places: list) -> Shard:
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


def _cast_inputs(values, dtype):
    if dtype is None:
        return values
    return type(values)(
        v.to(dtype) if isinstance(v, Tensor) and np.dtype(v.dtype).kind == "f" else v
        for v in values
    )


# ====================================================================== FSDP1
class FullyShardedDataParallel(Layer):
    """torch's FSDP1: ``module`` (and each sublayer ``auto_wrap_policy`` picks, in a unit of
    its own) with its parameters flattened and sharded over the ranks.

    Args (torch's): ``process_group`` None (the world); ``sharding_strategy`` FULL_SHARD
    (default), SHARD_GRAD_OP or NO_SHARD; ``cpu_offload`` (see ``CPUOffload``);
    ``auto_wrap_policy`` a callable ``(module, recurse, nonwrapped_numel) -> bool``
    (``ModuleWrapPolicy``, ``functools.partial(transformer_auto_wrap_policy, ...)``);
    ``mixed_precision`` (``MixedPrecision``); ``ignored_modules`` (kept whole, not sharded);
    ``device_id`` the GPU to move the module to; ``sync_module_states`` give every rank rank
    0's parameters and buffers first. ``backward_prefetch``, ``forward_prefetch`` and
    ``limit_all_gathers`` are accepted (prefetching is an overlap tricycle does not do);
    ``use_orig_params=True``, ``param_init_fn``, ``ignored_states`` and ``device_mesh`` are
    refused. Every rank must hold the same module (or pass ``sync_module_states=True``).
    """

    def __init__(self, module: Layer, process_group=None, sharding_strategy=None,
                 cpu_offload=None, auto_wrap_policy=None,
                 backward_prefetch=BackwardPrefetch.BACKWARD_PRE, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states=None, device_mesh=None):  # fmt: skip
        if not isinstance(module, Layer):
            raise TypeError(f"{OWNER}: module must be a Layer, got {type(module).__name__}")
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else sharding_strategy
        if not isinstance(strategy, ShardingStrategy):
            checks.fail(OWNER, "sharding_strategy", "a ShardingStrategy", strategy, TypeError)
        if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
            raise NotImplementedError(
                f"{OWNER}: {strategy.name} shards within a machine and replicates across them, "
                "which needs process groups tricycle does not have; use FULL_SHARD"
            )
        for name, value in (("sync_module_states", sync_module_states),
                            ("forward_prefetch", forward_prefetch),
                            ("limit_all_gathers", limit_all_gathers),
                            ("use_orig_params", use_orig_params)):  # fmt: skip
            checks.boolean(OWNER, name, value)
        if backward_prefetch is not None and not isinstance(backward_prefetch, BackwardPrefetch):
            checks.fail(OWNER, "backward_prefetch", "a BackwardPrefetch or None",
                        backward_prefetch, TypeError)  # fmt: skip
        if mixed_precision is not None and not isinstance(mixed_precision, MixedPrecision):
            checks.fail(OWNER, "mixed_precision", "a MixedPrecision or None", mixed_precision,
                        TypeError)  # fmt: skip
        if cpu_offload is not None and not isinstance(cpu_offload, CPUOffload):
            checks.fail(OWNER, "cpu_offload", "a CPUOffload or None", cpu_offload, TypeError)
        if auto_wrap_policy is not None and not callable(auto_wrap_policy):
            checks.fail(
                OWNER, "auto_wrap_policy", "a callable or None", auto_wrap_policy, TypeError
            )
        for name, value, what in (
            (
                "use_orig_params",
                use_orig_params or None,
                "views of the flat shards as the "
                "original parameters; use fully_shard, whose parameters keep their names",
            ),
            ("param_init_fn", param_init_fn, "tricycle has no meta device: build the module"),
            ("ignored_states", ignored_states, "use ignored_modules"),
            ("device_mesh", device_mesh, "tricycle has one process group, the world"),
        ):
            if value is not None:
                raise NotImplementedError(f"{OWNER}: {name} ({what}) is not supported")
        dist._check_group(OWNER, process_group)
        world = dist._the_world(OWNER)
        if device_id is not None:
            module.to_gpu(dist._gpu_index(device_id))
        on_gpu = any(p.on_gpu for p in module.parameters())
        if cpu_offload is not None and cpu_offload.offload_params and on_gpu:
            raise NotImplementedError(
                f"{OWNER}: CPUOffload(offload_params=True) for a module on a GPU is not "
                "supported; keep the module on the host, or the shards on the GPU"
            )
        if sync_module_states:
            for _, t in module.named_tensors():
                world.broadcast(t.array, 0)
        mp = mixed_precision or MixedPrecision()
        if mp.buffer_dtype is not None:
            for _, t in module.named_tensors():
                if t.args is None and not t.requires_grad and np.dtype(t.dtype).kind == "f":
                    t.array = t.array.astype(mp.buffer_dtype)
        ignored = tuple(ignored_modules or ())
        self._settings = dict(
            sharding_strategy=strategy,
            mixed_precision=mixed_precision,
            cpu_offload=cpu_offload,
        )
        if auto_wrap_policy is not None:
            _wrap_children(module, auto_wrap_policy, ignored, self._make_child)
        object.__setattr__(self, "_fsdp_wrapped_module", module)
        self._is_root = True
        for layer in module.layers():
            if isinstance(layer, FullyShardedDataParallel):
                layer._is_root = False
        self.sharding_strategy, self._mp = strategy, mp
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        parts = 1 if strategy is ShardingStrategy.NO_SHARD else world.world_size
        owned = owned_parameters(module, (FullyShardedDataParallel, FSDPModule))
        params = [entry for entry in owned if not _in(entry, ignored)]
        shards = [_flat_shard(OWNER, world, params, parts)] if params else []
        self._unit = _Unit(world, shards, False, mp.param_dtype, mp.reduce_dtype)
        self._flat_param = shards[0].tensor if shards else None
        self._unit.reshard()

    def _make_child(self, child: Layer) -> "FullyShardedDataParallel":
        return FullyShardedDataParallel(child, **self._settings)

    @property
    def module(self) -> Layer:
        """The wrapped module (torch's ``FSDP.module``)."""
        return self._fsdp_wrapped_module

    def forward(self, *args, **kwargs):
        if self._is_root and self._mp.cast_root_forward_inputs or self._mp.cast_forward_inputs:
            args = _cast_inputs(args, self._mp.param_dtype)
        self._unit.unshard()
        try:
            return self._fsdp_wrapped_module(*args, **kwargs)
        finally:
            if self.sharding_strategy is not ShardingStrategy.SHARD_GRAD_OP or not grad_enabled():
                self._unit.reshard()

    # ------------------------------------------------------------------ utilities
    @staticmethod
    def fsdp_modules(module: Layer, root_only: bool = False) -> list:
        """The FSDP units in ``module`` (itself included), depth first."""
        found = [m for m in module.layers() if isinstance(m, FullyShardedDataParallel)]
        return [m for m in found if m._is_root] if root_only else found

    @staticmethod
    @contextmanager
    def summon_full_params(module: Layer, recurse: bool = True, writeback: bool = True,
                           rank0_only: bool = False, offload_to_cpu: bool = False,
                           with_grads: bool = False):  # fmt: skip
        """Inside this block every unit's parameters are whole Parameters in their layers
        (a collective on every rank); with ``writeback`` changes made to them reach the
        shards at its end. ``with_grads`` and ``rank0_only`` with ``writeback`` refused."""
        owner = f"{OWNER}.summon_full_params"
        if with_grads:
            raise NotImplementedError(f"{owner}: with_grads=True is not supported")
        if rank0_only and writeback:
            raise ValueError(f"{owner}: rank0_only=True with writeback=True is not supported")
        units = FullyShardedDataParallel.fsdp_modules(module)
        units = units if recurse else units[:1]
        held = []
        for unit in units:
            for shard in unit._unit.shards:
                full = shard.gather_array(unit._unit.world)
                params = {}
                for e in shard.entries:
                    values = full[e.a : e.b].reshape(e.shape).copy()
                    params[e.name] = Parameter(values, requires_grad=shard.tensor.requires_grad)
                    e.put(params[e.name])
                held.append((unit, shard, params))
        try:
            yield
        finally:
            for unit, shard, params in held:
                if writeback:
                    with no_grad():
                        shard.fill(shard.tensor.array, {n: p.array for n, p in params.items()})
                unit._unit.reshard()

    @staticmethod
    @contextmanager
    def state_dict_type(module: Layer, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):  # fmt: skip
        """Set the kind of ``state_dict()`` every unit of ``module`` gives inside the block."""
        if not isinstance(state_dict_type, StateDictType):
            checks.fail(f"{OWNER}.state_dict_type", "state_dict_type", "a StateDictType",
                        state_dict_type, TypeError)  # fmt: skip
        units = FullyShardedDataParallel.fsdp_modules(module)
        before = [(u._state_dict_type, u._state_dict_config) for u in units]
        config = (
            state_dict_config
            or {
                StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig,
                StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig,
            }[state_dict_type]()
        )
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, config
        try:
            yield
        finally:
            for u, (kind, old) in zip(units, before):
                u._state_dict_type, u._state_dict_config = kind, old

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Tensor:
        """Scale every gradient (the shards' and the unsharded ones') so that the norm of
        them all together, over every rank, is at most ``max_norm``; returns that norm."""
        checks.positive(f"{OWNER}.clip_grad_norm_", "max_norm", max_norm)
        world = self._unit.world
        sharded = {id(u._flat_param) for u in self.fsdp_modules(self) if u._flat_param is not None}
        grads = [(p, id(p) in sharded) for p in self.parameters() if p.grad is not None]
        infinite = norm_type == float("inf")
        local = shared = 0.0
        for p, is_shard in grads:
            g = np.abs(p.grad.numpy()).astype(np.float64)
            value = float(g.max(initial=0.0)) if infinite else float((g**norm_type).sum())
            if is_shard:
                local = max(local, value) if infinite else local + value
            else:
                shared = max(shared, value) if infinite else shared + value
        if infinite:
            total = max(float(world.all_gather(np.array([local]))[:, 0].max()), shared)
        else:
            total = (world.all_reduce(local, mean=False) + shared) ** (1.0 / norm_type)
        scale = max_norm / (total + 1e-6)
        if scale < 1.0:
            for p, _ in grads:
                p.grad.array *= p.grad.array.dtype.type(scale)
        return Tensor(np.array(total, dtype=np.float32), requires_grad=False)

    # ------------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """By ``state_dict_type``: the full parameters under the unwrapped model's names
        (FULL_STATE_DICT, the default: a collective; ``rank0_only`` gives {} elsewhere),
        this rank's ``FlatShard`` of each (SHARDED_STATE_DICT), or the flat shards
        themselves (LOCAL_STATE_DICT); the buffers whole, in every kind."""
        kind = self._state_dict_type
        out = {}
        for prefix, unit in units_of(self):
            if kind is StateDictType.FULL_STATE_DICT:
                out.update({prefix + n: v.copy() for n, v in unit.full_arrays().items()})
            elif kind is StateDictType.SHARDED_STATE_DICT:
                for shard in unit.shards:
                    out.update({prefix + n: v for n, v in shard.pieces().items()})
        shards = {id(s.tensor) for _, u in units_of(self) for s in u.shards}
        for name, t in self.named_persistent():
            if id(t) not in shards:
                out[clean(name)] = t.numpy().copy()
            elif kind is StateDictType.LOCAL_STATE_DICT:
                out[clean(name)] = t.numpy().copy()
        config = self._state_dict_config
        if getattr(config, "rank0_only", False) and self._unit.world.rank != 0:
            return {}
        return out

    def load_state_dict(self, state: dict, strict: bool = True):
        """Restore from ``state_dict()``'s kind set by ``state_dict_type`` (full values: each
        rank takes its part; sharded: this rank's pieces, as saved at this world size)."""
        if self._state_dict_type is StateDictType.LOCAL_STATE_DICT:
            return _load_local(self, state)
        expected = set(self.state_dict_keys())
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        if strict and (missing or unexpected):
            raise ValueError(
                f"{OWNER}.load_state_dict: missing keys {missing}, unexpected keys {unexpected}"
            )
        for prefix, unit in units_of(self):
            for shard in unit.shards:
                values = {}
                for e in shard.entries:
                    if prefix + e.name in state:
                        values[e.name] = _full_or_piece(state[prefix + e.name], e, shard)
                shard.fill(shard.tensor.array, values)
        shards = {id(s.tensor) for _, u in units_of(self) for s in u.shards}
        for name, t in self.named_persistent():
            if id(t) not in shards and clean(name) in state:
                t.array[...] = t.xp.asarray(np.asarray(state[clean(name)], dtype=t.dtype))
        return missing, unexpected

    def state_dict_keys(self) -> list:
        """The unwrapped model's parameter and buffer names."""
        keys = [
            prefix + e.name for prefix, u in units_of(self) for s in u.shards for e in s.entries
        ]
        shards = {id(s.tensor) for _, u in units_of(self) for s in u.shards}
        return keys + [clean(n) for n, t in self.named_persistent() if id(t) not in shards]


def _load_local(model, state: dict):
    for name, t in model.named_persistent():
        if clean(name) in state:
            t.array[...] = t.xp.asarray(np.asarray(state[clean(name)]))
    return [], []


def _full_or_piece(value, entry, shard):
    """A full value, or a FlatShard as a function of the flat range it must cover."""
    if not isinstance(value, FlatShard):
        return np.asarray(value.numpy() if isinstance(value, Tensor) else value)

    def part(lo: int, hi: int):
        if lo < value.start or hi > value.start + value.local.size:
            raise ValueError(
                f"{OWNER}.load_state_dict: the sharded value of {entry.name!r} holds "
                f"[{value.start}, {value.start + value.local.size}), this rank needs [{lo}, "
                f"{hi}): load a sharded state at its own world size (or through "
                "tricycle.distributed.checkpoint at any)"
            )
        return np.asarray(value.local)[lo - value.start : hi - value.start]

    return part


def _in(entry, ignored: tuple) -> bool:
    if not ignored:
        return False
    return any(entry[1] is p for m in ignored for p in m.parameters())


def _children(layer: Layer):
    """(holder, key, is_attribute, child) for each direct sublayer of ``layer``."""
    for attr, value in list(vars(layer).items()):
        if isinstance(value, Layer):
            yield layer, attr, True, value
        elif isinstance(value, (list, dict)):
            pairs = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            for key, item in pairs:
                if isinstance(item, Layer):
                    yield value, key, False, item


def _wrap_children(layer: Layer, policy, ignored: tuple, make) -> None:
    """torch's recursive wrap: each sublayer the policy lets it recurse into first has its
    own sublayers wrapped, then is wrapped itself if the policy says so."""
    for holder, key, attribute, child in _children(layer):
        if isinstance(child, (FullyShardedDataParallel, *ignored)) or child in ignored:
            continue
        if policy(module=child, recurse=True, nonwrapped_numel=_numel(child)):
            _wrap_children(child, policy, ignored, make)
            if policy(module=child, recurse=False, nonwrapped_numel=_numel(child)):
                wrapped = make(child)
                if attribute:
                    object.__setattr__(holder, key, wrapped)
                else:
                    holder[key] = wrapped


def _numel(layer: Layer) -> int:
    return sum(
        p.size for _, p, _ in owned_parameters(layer, (FullyShardedDataParallel, FSDPModule))
    )


def units_of(model: Layer) -> list:
    """(clean name prefix, _Unit) of every FSDP1 wrapper and FSDP2 module in ``model``."""
    out = []
    for name, layer in model.named_layers():
        unit = (
            getattr(layer, "_unit", None)
            if isinstance(layer, (FullyShardedDataParallel, FSDPModule))
            else None
        )
        if unit is not None:
            prefix = clean(name + ".") if name else ""
            out.append((prefix, unit))
    return out


# ====================================================================== FSDP2
class FSDPModule:
    """What ``fully_shard`` makes a module's class derive from (``FSDP<Class>``): its forward
    gathers the module's own row-sharded parameters (not those of sublayers sharded apart)."""

    def forward(self, *args, **kwargs):
        mp = self._fsdp_mp
        if mp.cast_forward_inputs:
            args = _cast_inputs(args, mp.param_dtype)
        self._unit.unshard()
        try:
            out = super().forward(*args, **kwargs)
        finally:
            if self._reshard_after_forward or not grad_enabled():
                self._unit.reshard()
        if mp.output_dtype is not None and isinstance(out, Tensor):
            out = out.to(mp.output_dtype)
        return out

    def unshard(self, async_op: bool = False):
        """Gather the full parameters into the module's places (until ``reshard``)."""
        self._unit.unshard()

    def reshard(self) -> None:
        """Put the shards back in the module's places."""
        self._unit.reshard()


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=None, offload_policy=None, ignored_params=None):  # fmt: skip
    """torch's FSDP2 entry point: shard ``module``'s parameters (those not in a sublayer
    sharded already) by rows over the ranks, in place, and return ``module``, now also an
    ``FSDPModule``. ``model.parameters()`` are then the shards, under their own names.
    ``reshard_after_forward``: True (None) frees the gathered parameters after the forward
    (FULL_SHARD), False keeps them until backward (SHARD_GRAD_OP). ``mesh``,
    ``shard_placement_fn`` and offloading are refused."""
    owner = "fully_shard"
    if not isinstance(module, Layer):
        raise TypeError(f"{owner}: module must be a Layer, got {type(module).__name__}")
    if isinstance(module, FullyShardedDataParallel):
        raise ValueError(f"{owner}: the module is a FullyShardedDataParallel already")
    if isinstance(module, FSDPModule):
        raise ValueError(f"{owner}: {type(module).__name__} is fully sharded already")
    for name, value in (("mesh", mesh), ("shard_placement_fn", shard_placement_fn),
                        ("offload_policy", offload_policy)):  # fmt: skip
        if value is not None and not isinstance(value, OffloadPolicy):
            raise NotImplementedError(
                f"{owner}: {name} is not supported (one process group, rows sharded on dim 0)"
            )
    reshard = True if reshard_after_forward is None else reshard_after_forward
    if not isinstance(reshard, bool):
        checks.fail(owner, "reshard_after_forward", "a bool or None", reshard, TypeError)
    mp = mp_policy or MixedPrecisionPolicy()
    if not isinstance(mp, MixedPrecisionPolicy):
        checks.fail(owner, "mp_policy", "a MixedPrecisionPolicy", mp, TypeError)
    world = dist._the_world(owner)
    skip = {id(p) for p in (ignored_params or ())}
    params = [e for e in owned_parameters(module, (FSDPModule, FullyShardedDataParallel))
              if id(e[1]) not in skip]  # fmt: skip
    shards = [_row_shard(world, name, p, places) for name, p, places in params]
    unit = _Unit(world, shards, True, mp.param_dtype, mp.reduce_dtype)
    unit.reshard()
    cls = type(module)
    module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    object.__setattr__(module, "_unit", unit)
    object.__setattr__(module, "_fsdp_mp", mp)
    object.__setattr__(module, "_reshard_after_forward", reshard)
    return module
