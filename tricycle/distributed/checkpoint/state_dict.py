"""``torch.distributed.checkpoint.state_dict``: state dicts keyed by the unwrapped model's
names, sharded under FSDP (``tricycle.parallel.checkpoint_state_dict``'s)."""

from tricycle.parallel.checkpoint_state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

__all__ = [
    "StateDictOptions",
    "get_model_state_dict",
    "get_optimizer_state_dict",
    "get_state_dict",
    "set_model_state_dict",
    "set_optimizer_state_dict",
    "set_state_dict",
]
