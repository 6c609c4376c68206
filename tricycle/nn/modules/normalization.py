"""``torch.nn.modules.normalization``'s names: ``LayerNorm``, ``GroupNorm`` and ``RMSNorm``,
which are ``tricycle.nn``'s (their parameters ``gamma`` and ``beta``)."""

from tricycle.layers import LayerNorm, RMSNorm
from tricycle.nn.group_norm import GroupNorm

__all__ = ["GroupNorm", "LayerNorm", "RMSNorm"]
