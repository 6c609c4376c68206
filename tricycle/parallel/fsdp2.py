"""torch's FSDP2, ``fully_shard(module)`` (``torch.distributed.fsdp.fully_shard``): the
module's own parameters sharded by rows over the ranks (of a mesh's shard dimension), in
place, its class made an ``FSDPModule`` whose forward gathers them
(``tricycle.parallel.fsdp_unit``'s ``Unit``)."""

from tricycle import checks
from tricycle.layers import Layer
from tricycle.parallel import torch_distributed as dist
from tricycle.parallel.device_mesh import DeviceMesh
from tricycle.parallel.fsdp_settings import MixedPrecisionPolicy, OffloadPolicy
from tricycle.parallel.fsdp_unit import Sharded, Unit, cast_inputs, check_alike, row_shard
from tricycle.parallel.fsdp_units import owned_parameters
from tricycle.tensor import Tensor


class FSDPModule(Sharded):
    """What ``fully_shard`` makes a module's class derive from (``FSDP<Class>``): its forward
    gathers the module's own row-sharded parameters (not those of sublayers sharded apart)."""

    def forward(self, *args, **kwargs):
        mp = self._fsdp_mp
        if mp.cast_forward_inputs:
            args = cast_inputs(args, mp.param_dtype)
        reshard = self._reshard_after_forward  # None: True, but False for the root (torch's)
        out = self._unit.run(super().forward, args, kwargs, reshard is not False, bool(reshard))
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
    ``mesh``: None (the World), a 1-D ``DeviceMesh`` (shard over it), or a 2-D one (HSDP:
    shard along dimension 1, replicate along 0, the gradients reduce-scattered within the
    shard group and then all-reduced across the replicas). ``reshard_after_forward``: None
    frees the gathered parameters after the forward (FULL_SHARD) but the root's, which
    backward needs first (torch's); True frees the root's too (its forward is then
    recomputed in backward, its nested modules' with it: ``tricycle.parallel.fsdp_unit``);
    False keeps them until backward (SHARD_GRAD_OP). ``shard_placement_fn`` and offloading
    are refused."""
    owner = "fully_shard"
    if not isinstance(module, Layer):
        raise TypeError(f"{owner}: module must be a Layer, got {type(module).__name__}")
    if isinstance(module, FSDPModule):
        raise ValueError(f"{owner}: {type(module).__name__} is fully sharded already")
    if isinstance(module, Sharded):
        raise ValueError(f"{owner}: the module is a FullyShardedDataParallel already")
    for name, value in (("shard_placement_fn", shard_placement_fn),
                        ("offload_policy", offload_policy)):  # fmt: skip
        if value is not None and not isinstance(value, OffloadPolicy):
            raise NotImplementedError(
                f"{owner}: {name} is not supported (rows sharded on dim 0, no offloading)"
            )
    if reshard_after_forward is not None and not isinstance(reshard_after_forward, bool):
        checks.fail(owner, "reshard_after_forward", "a bool or None", reshard_after_forward,
                    TypeError)  # fmt: skip
    mp = mp_policy or MixedPrecisionPolicy()
    if not isinstance(mp, MixedPrecisionPolicy):
        checks.fail(owner, "mp_policy", "a MixedPrecisionPolicy", mp, TypeError)
    world = dist._the_world(owner)
    group, replicas = _mesh_groups(owner, world, mesh)
    skip = {id(p) for p in (ignored_params or ())}
    params = [e for e in owned_parameters(module, (Sharded,))
              if id(e[1]) not in skip]  # fmt: skip
    for over in (group, replicas) if replicas is not None else (group,):
        check_alike(owner, over, params)
    shards = [row_shard(group, name, p, places) for name, p, places in params]
    unit = Unit(group, shards, True, mp.param_dtype, mp.reduce_dtype, replicas, module)
    unit.reshard()
    cls = type(module)
    module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    object.__setattr__(module, "_unit", unit)
    object.__setattr__(module, "_fsdp_mp", mp)
    object.__setattr__(module, "_reshard_after_forward", reshard_after_forward)
    return module


def _mesh_groups(owner: str, world, mesh) -> tuple:
    """(the group to shard over, the replicas' group or None) of ``fully_shard``'s mesh."""
    if mesh is None:
        return world, None
    if not isinstance(mesh, DeviceMesh):
        checks.fail(owner, "mesh", "a DeviceMesh or None", mesh, TypeError)
    if mesh.ndim == 1:
        return mesh.group(0), None
    if mesh.ndim == 2:
        return mesh.group(1), mesh.group(0)
    raise ValueError(f"{owner}: mesh must be 1-D (FSDP) or 2-D (HSDP), got {mesh!r}")
