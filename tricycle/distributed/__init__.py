"""The public name ``tricycle.distributed``: its code lives in ``tricycle.parallel.distributed``
(tricycle's World: ``init``, ``DataParallel``, ``fail_together``...) and, under torch's names,
in ``tricycle.parallel.torch_distributed`` (``init_process_group``, ``all_reduce``,
``DistributedDataParallel``...): ``import tricycle.distributed as dist`` gives both, and no
torch name changes the meaning of one of tricycle's.

This package keeps the imports the README writes working. ``rpc`` holds torch's ``RRef`` alone
(``tricycle.parallel.rpc``: no remote calls), for the scripts that test a value against it;
``optim`` holds torch's ``ZeroRedundancyOptimizer`` (``tricycle.parallel.torch_zero``),
``fsdp`` FullyShardedDataParallel and ``fully_shard`` (``tricycle.parallel.fsdp``),
``checkpoint`` torch's distributed checkpoints (``tricycle.parallel.checkpoint_sharded``),
``pipelining`` torch's pipeline stages and schedules (``tricycle.parallel.pipelining``),
``device_mesh``, ``tensor`` (DTensor, ``tensor.parallel``) and ``nn`` (differentiable
collectives) torch's tensor parallelism (``tricycle.parallel.device_mesh``, ``dtensor``,
``tensor_parallel``, ``collectives_autograd``), ``run`` and ``elastic`` torchrun's entry point
and error files. The point-to-point calls (``send``, ``recv``, ``isend``, ``irecv``,
``batch_isend_irecv``...) are ``tricycle.parallel.torch_p2p``'s; the sub-groups every call
takes as ``group=`` (``new_group``, ``new_subgroups``...) ``tricycle.parallel.torch_groups``'.
"""

import importlib

from tricycle.parallel import rpc  # noqa: F401
from tricycle.parallel.distributed import *  # noqa: F403
from tricycle.parallel.torch_distributed import *  # noqa: F403
from tricycle.parallel.torch_p2p import *  # noqa: F403

_SUBPACKAGES = ("optim", "fsdp", "checkpoint", "pipelining", "device_mesh", "tensor", "nn",
                "run", "elastic")  # fmt: skip


def __getattr__(name: str):
    """The sub-packages above imported on first use, as torch's ``torch.distributed.optim``
    is reached."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"tricycle.distributed.{name}")
    raise AttributeError(f"module 'tricycle.distributed' has no attribute {name!r}")
