"""``torch.distributed.fsdp.wrap``: the auto-wrap policies (``tricycle.parallel.fsdp``'s)."""

from tricycle.parallel.fsdp import (
    ModuleWrapPolicy,
    lambda_auto_wrap_policy,
    size_based_auto_wrap_policy,
    transformer_auto_wrap_policy,
)

__all__ = [
    "ModuleWrapPolicy",
    "lambda_auto_wrap_policy",
    "size_based_auto_wrap_policy",
    "transformer_auto_wrap_policy",
]
