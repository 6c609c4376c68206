"""torch's FSDP2, ``fully_shard(module)`` (``torch.distributed.fsdp.fully_shard``): the
module's own parameters sharded by rows over the ranks, in place, its class made an
``FSDPModule`` whose forward gathers them (``tricycle.parallel.fsdp_unit``'s ``Unit``)."""

from tricycle import checks
from tricycle.layers import Layer
from tricycle.parallel import torch_distributed as dist
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
        out = self._unit.run(super().forward, args, kwargs, self._reshard_after_forward)
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
    if isinstance(module, FSDPModule):
        raise ValueError(f"{owner}: {type(module).__name__} is fully sharded already")
    if isinstance(module, Sharded):
        raise ValueError(f"{owner}: the module is a FullyShardedDataParallel already")
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
    params = [e for e in owned_parameters(module, (Sharded,))
              if id(e[1]) not in skip]  # fmt: skip
    check_alike(owner, world, params)
    shards = [row_shard(world, name, p, places) for name, p, places in params]
    unit = Unit(world, shards, True, mp.param_dtype, mp.reduce_dtype)
    unit.reshard()
    cls = type(module)
    module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    object.__setattr__(module, "_unit", unit)
    object.__setattr__(module, "_fsdp_mp", mp)
    object.__setattr__(module, "_reshard_after_forward", reshard)
    return module
