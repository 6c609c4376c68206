"""torch.distributed.fsdp on tricycle's World: ``FullyShardedDataParallel`` (FSDP1) and
``fully_shard`` (FSDP2). Each rank keeps 1/N of every parameter; a unit's forward gathers
its full parameters, its backward reduce-scatters their gradients (the mean over the ranks),
so each rank's optimizer, built on ``model.parameters()`` after wrapping, steps its shards::

    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))   # FSDP1: flat shards
    fully_shard(block) for each block; fully_shard(model)            # FSDP2: row shards
    optimizer = optim.AdamW(model.parameters(), lr=3e-4)

The shards are ``tricycle.parallel.fsdp_units``'s, the units ``fsdp_unit``'s (read it for
what is freed when), the settings ``fsdp_settings``'s, FSDP2 ``fsdp2``'s (all named here too).
Strategies: FULL_SHARD frees each unit's gathered parameters after its forward and gathers
them again for its backward, which recomputes the unit's forward (activation
checkpointing; the root keeps its own until backward, as torch's); SHARD_GRAD_OP keeps them
from the forward until backward; NO_SHARD holds every parameter whole on every rank (DDP:
gradients all-reduced). HYBRID_SHARD (and _HYBRID_SHARD_ZERO2, SHARD_GRAD_OP's way) shards
within a group of ranks and replicates across such groups: the gradients are reduce-scattered
within the group, then all-reduced over the ranks holding the same shard. The groups come
from a 2-D ``DeviceMesh`` (``init_device_mesh("cpu", (replicas, shards), mesh_dim_names=
("replicate", "shard"))``: dimension 1 shards, dimension 0 replicates), torch's
``process_group=(intra, inter)`` pair, or (with an auto-wrap policy) the machines: each
machine's ranks shard, the ranks of one local rank replicate. ``fully_shard(mesh=...)``
does the same with a 2-D mesh (HSDP). Sub-groups are ``tricycle.parallel.subgroups``'.
"""

from contextlib import contextmanager

import numpy as np

from tricycle import checks
from tricycle.graph import no_grad
from tricycle.layers import Layer
from tricycle.parallel import torch_distributed as dist
from tricycle.parallel.checkpoint_state_dict import load_model_state, model_state
from tricycle.parallel.device_mesh import DeviceMesh
from tricycle.parallel.fsdp2 import FSDPModule, fully_shard  # noqa: F401 (torch's names here)
from tricycle.parallel.fsdp_settings import (  # noqa: F401 (torch's names here)
    BackwardPrefetch,
    CPUOffload,
    FullStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    MixedPrecisionPolicy,
    ModuleWrapPolicy,
    OffloadPolicy,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictType,
    lambda_auto_wrap_policy,
    size_based_auto_wrap_policy,
    transformer_auto_wrap_policy,
)
from tricycle.parallel.fsdp_unit import Sharded, Unit, cast_inputs, check_alike, flat_shard
from tricycle.parallel.fsdp_units import clean, owned_parameters, place, slots
from tricycle.parallel.subgroups import Group
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

OWNER = "FullyShardedDataParallel"
HYBRID = (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)


class FullyShardedDataParallel(Sharded, Layer):
    """torch's FSDP1: ``module`` (and each sublayer ``auto_wrap_policy`` picks, in a unit of
    its own) with its parameters flattened and sharded over the ranks.

    Args (torch's): ``process_group`` None (the World), a ``Group`` to shard within
    (``DeviceMesh.get_group``), or HYBRID_SHARD's ``(intra, inter)`` pair; ``device_mesh``
    instead of it (1-D: its group; 2-D for HYBRID_SHARD: shards along dimension 1, replicas
    along 0); ``sharding_strategy`` FULL_SHARD (default), SHARD_GRAD_OP, NO_SHARD,
    HYBRID_SHARD or _HYBRID_SHARD_ZERO2; ``cpu_offload`` (see ``CPUOffload``);
    ``auto_wrap_policy`` a callable ``(module, recurse, nonwrapped_numel) -> bool``
    (``ModuleWrapPolicy``, ``functools.partial(transformer_auto_wrap_policy, ...)``);
    ``mixed_precision`` (``MixedPrecision``); ``ignored_modules`` (kept whole, not sharded);
    ``device_id`` the GPU to move the module to; ``sync_module_states`` give every rank rank
    0's parameters and buffers first. ``backward_prefetch``, ``forward_prefetch`` and
    ``limit_all_gathers`` are checked and change nothing: in torch they are performance hints
    (when the next unit's all-gather is issued, how many may be in flight), never what is
    computed, and tricycle issues each all-gather when the forward or backward needing it
    runs, without overlap to order or limit. ``use_orig_params=True``, ``param_init_fn`` and
    ``ignored_states`` are refused. Every rank must hold the same module (or pass
    ``sync_module_states=True``).
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
        ):
            if value is not None:
                raise NotImplementedError(f"{OWNER}: {name} ({what}) is not supported")
        world = dist._the_world(OWNER)
        group, replicas = _process_groups(world, strategy, process_group, device_mesh,
                                          auto_wrap_policy)  # fmt: skip
        if device_id is not None:
            module.to_gpu(dist._gpu_index(device_id))
        on_gpu = any(p.on_gpu for p in module.parameters())
        if cpu_offload is not None and cpu_offload.offload_params and on_gpu:
            raise NotImplementedError(
                f"{OWNER}: CPUOffload(offload_params=True) for a module on a GPU is not "
                "supported; keep the module on the host, or the shards on the GPU"
            )
        if sync_module_states:  # the ranks' tensors checked alike before any broadcast
            named = [(name, t, None) for name, t in module.named_tensors()]
            for over in (replicas, group) if replicas is not None else (group,):
                check_alike(OWNER, over, named, "tensors")  # torch's order: across, within
                for _, t, _ in named:
                    over.broadcast(t.array, 0)
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
            process_group=(group, replicas) if strategy in HYBRID else group,  # the same groups
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
        parts = 1 if strategy is ShardingStrategy.NO_SHARD else group.world_size
        owned = owned_parameters(module, (Sharded,))
        params = [entry for entry in owned if not _in(entry, ignored)]
        if replicas is not None:  # the copies must shard alike too
            check_alike(OWNER, replicas, params)
        shards = [flat_shard(OWNER, group, params, parts)] if params else []
        self._unit = Unit(group, shards, False, mp.param_dtype, mp.reduce_dtype, replicas, module)
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
            args = cast_inputs(args, self._mp.param_dtype)
        reshard = self.sharding_strategy in _RESHARDING  # the root never: torch's FSDP1
        return self._unit.run(self._fsdp_wrapped_module, args, kwargs, reshard)

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
        sharded = {  # NO_SHARD's flat parameters are whole on every rank: counted once
            id(u._flat_param)
            for u in self.fsdp_modules(self)
            if u._flat_param is not None and u.sharding_strategy is not ShardingStrategy.NO_SHARD
        }
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
            total = max(float(world.all_gather(np.array([local]), check=False)[:, 0].max()), shared)
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
        if kind is StateDictType.LOCAL_STATE_DICT:
            out = {clean(name): t.numpy().copy() for name, t in self.named_persistent()}
        else:
            out = model_state(self, full=kind is StateDictType.FULL_STATE_DICT)
        config = self._state_dict_config
        if getattr(config, "rank0_only", False) and self._unit.world.rank != 0:
            return {}
        return out

    def load_state_dict(self, state: dict, strict: bool = True):
        """Restore from ``state_dict()``'s kind set by ``state_dict_type`` (full values: each
        rank takes its part; sharded: this rank's pieces, as saved at this world size)."""
        if self._state_dict_type is StateDictType.LOCAL_STATE_DICT:
            return _load_local(self, state)
        return load_model_state(f"{OWNER}.load_state_dict", self, state, strict)


_RESHARDING = (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD)


def _process_groups(world, strategy, process_group, device_mesh, policy) -> tuple:
    """(the group a unit shards within, the group of its replicas or None) from torch's
    arguments (see ``FullyShardedDataParallel``)."""
    if process_group is not None and device_mesh is not None:
        raise ValueError(f"{OWNER}: Cannot pass both process_group and device_mesh at the same "
                         "time. Please just pass only one of them.")  # fmt: skip
    if device_mesh is not None:
        if not isinstance(device_mesh, DeviceMesh):
            checks.fail(OWNER, "device_mesh", "a DeviceMesh or None", device_mesh, TypeError)
        if strategy not in HYBRID:
            return device_mesh.group(0), None  # torch's: the mesh's first dimension
        if device_mesh.ndim != 2:
            raise ValueError(
                f"{OWNER}: {strategy.name} needs a device_mesh of 2 dimensions (replicate, "
                f"shard), got {device_mesh!r}"
            )
        return device_mesh.group(1), device_mesh.group(0)
    if strategy not in HYBRID:
        if isinstance(process_group, tuple):
            raise ValueError(
                f"{OWNER}: a pair of process groups is HYBRID_SHARD's (intra, inter); "
                f"{strategy.name} takes one group or None"
            )
        return _group(world, process_group), None
    if process_group is None:
        if policy is None:  # torch's rule: each unit made by hand would make its own groups
            raise ValueError(
                f"{OWNER}: Manual wrapping with {strategy} requires explicit specification "
                "of process group or device_mesh."
            )
        return _machine_groups(world)
    if not (isinstance(process_group, tuple) and len(process_group) == 2):
        raise ValueError(
            f"{OWNER}: Expected process_group to be passed in as either None or "
            f"Tuple[ProcessGroup, ProcessGroup] (intra, inter) but got {process_group!r}"
        )
    return _group(world, process_group[0]), _group(world, process_group[1])


def _group(world, group):
    """The World (None, or the World itself) or a ``Group`` of it; anything else refused."""
    if group is None or group is world:
        return world
    if isinstance(group, Group) and group.parent is world:
        return group
    raise ValueError(
        f"{OWNER}: a process group must be None (the World) or a Group of its ranks "
        f"(DeviceMesh.get_group), got {group!r}"
    )


def _machine_groups(world) -> tuple:
    """torch's HYBRID_SHARD groups without a process group: this machine's ranks (which
    shard) and the ranks of this local rank on every machine (the replicas). The machines
    must hold equal numbers of consecutive ranks (as mpiexec places them by default)."""
    layout = world.all_gather_object((world.local_rank, world.local_size))
    per = world.local_size
    if any(size != per or local != rank % per for rank, (local, size) in enumerate(layout)):
        raise ValueError(
            f"{OWNER}: HYBRID_SHARD without a process group shards within each machine, "
            f"which needs machines of equal numbers of consecutive ranks; the ranks' (local "
            f"rank, ranks on the machine) are {layout}: pass a device_mesh"
        )
    kind = "cuda" if world.device is not None else "cpu"
    mesh = DeviceMesh(kind, np.arange(world.world_size).reshape(-1, per))
    return mesh.group(1), mesh.group(0)


def _load_local(model, state: dict):
    for name, t in model.named_persistent():
        if clean(name) in state:
            t.array[...] = t.xp.asarray(np.asarray(state[clean(name)]))
    return [], []


def _in(entry, ignored: tuple) -> bool:
    if not ignored:
        return False
    return any(entry[1] is p for m in ignored for p in m.parameters())


def _wrap_children(layer: Layer, policy, ignored: tuple, make) -> None:
    """torch's recursive wrap: each sublayer the policy lets it recurse into first has its
    own sublayers wrapped, then is wrapped itself if the policy says so."""
    for _, child, holder, key, attribute in slots(layer):
        if not isinstance(child, Layer):
            continue
        if isinstance(child, (FullyShardedDataParallel, *ignored)) or child in ignored:
            continue
        if policy(module=child, recurse=True, nonwrapped_numel=_numel(child)):
            _wrap_children(child, policy, ignored, make)
            if policy(module=child, recurse=False, nonwrapped_numel=_numel(child)):
                place(holder, key, attribute, make(child))


def _numel(layer: Layer) -> int:
    return sum(p.size for _, p, _ in owned_parameters(layer, (Sharded,)))
