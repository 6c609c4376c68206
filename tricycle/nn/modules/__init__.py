"""``torch.nn.modules``' path for what a PyTorch script reaches there: ``module``, with the
global module hooks (``from tricycle.nn.modules.module import register_module_forward_hook``).
The layers themselves are ``tricycle.nn``'s."""

from tricycle.nn.modules import module

__all__ = ["module"]
