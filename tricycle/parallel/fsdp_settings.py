"""torch.distributed.fsdp's settings (``tricycle.parallel.fsdp``'s wrappers read them): the
sharding strategies, mixed precision and offloading policies, the state-dict kinds and their
configurations, and the auto-wrap policies that pick FSDP1's units."""

import enum
from dataclasses import dataclass


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
