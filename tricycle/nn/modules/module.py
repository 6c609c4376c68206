"""``torch.nn.modules.module``'s names: ``Module`` and torch's global module hooks, which are
``tricycle.module_hooks``'s (run for every layer call, before the layer's own hooks)."""

from tricycle.module import Layer as Module
from tricycle.module_hooks import (
    RemovableHandle,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = [
    "Module",
    "RemovableHandle",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
]
