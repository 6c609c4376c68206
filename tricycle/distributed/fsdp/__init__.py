"""``torch.distributed.fsdp``: ``FullyShardedDataParallel`` (FSDP1, flat shards) and its
settings, and ``fully_shard`` (FSDP2, row shards): ``tricycle.parallel.fsdp``'s."""

from tricycle.parallel.fsdp import (
    BackwardPrefetch,
    CPUOffload,
    FSDPModule,
    FullStateDictConfig,
    FullyShardedDataParallel,
    LocalStateDictConfig,
    MixedPrecision,
    MixedPrecisionPolicy,
    ModuleWrapPolicy,
    OffloadPolicy,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictType,
    fully_shard,
)

__all__ = [
    "BackwardPrefetch",
    "CPUOffload",
    "FSDPModule",
    "FullStateDictConfig",
    "FullyShardedDataParallel",
    "LocalStateDictConfig",
    "MixedPrecision",
    "MixedPrecisionPolicy",
    "ModuleWrapPolicy",
    "OffloadPolicy",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictType",
    "fully_shard",
]
