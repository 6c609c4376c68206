"""torch.distributed's calls and ``DistributedDataParallel``, on tricycle's World.

A PyTorch script's data-parallel loop runs with its imports changed::

    import tricycle.distributed as dist
    from tricycle.distributed import DistributedDataParallel as DDP

    dist.init_process_group("nccl")              # the processes of `tricycle-run -n N`
    model = DDP(model, device_ids=[dist.get_node_local_rank()])
    for x, y in loader:                          # a loader with a DistributedSampler
        loss = loss_fn(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    dist.all_reduce(t, op=dist.ReduceOp.SUM); dist.barrier(); dist.destroy_process_group()

The code lives in three parts, re-exported here under torch's names:
``tricycle.parallel.torch_process_group`` (``init_process_group``, ``get_rank``, ``barrier``,
``destroy_process_group``...: the process group is the World of
``tricycle.parallel.distributed.init()``, started by ``tricycle-run``, which takes torchrun's
flags), ``tricycle.parallel.torch_collectives`` (``all_reduce``, ``broadcast``,
``all_gather``, ``reduce_scatter``, ``reduce``, ``gather``, ``scatter``, ``all_to_all``... in
place on a Tensor's array, with ``ReduceOp``) and
``tricycle.parallel.torch_ddp`` (``DistributedDataParallel``: gradients averaged over the
ranks by the time ``loss.backward()`` returns). The point-to-point calls are
``tricycle.parallel.torch_p2p``'s; sub-groups (``new_group``, ``new_subgroups``...), which
every call above takes as ``group=``, ``tricycle.parallel.torch_groups``'.
"""

from tricycle.parallel.torch_collectives import (
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    broadcast_object_list,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from tricycle.parallel.torch_ddp import DistributedDataParallel, _gpu_index  # noqa: F401
from tricycle.parallel.torch_groups import (
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
)
from tricycle.parallel.torch_process_group import (  # noqa: F401 (the checks: for torch_p2p...)
    BACKENDS,
    GroupMember,
    Work,
    _array,
    _check_group,
    _check_rank,
    _member_of,
    _the_world,
    barrier,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_node_local_rank,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
)

__all__ = [
    "DistributedDataParallel",
    "GroupMember",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_object",
    "all_gather_into_tensor",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_default_backend_for_device",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "is_available",
    "is_initialized",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
]
