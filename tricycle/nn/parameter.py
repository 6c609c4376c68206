"""``torch.nn.parameter``'s path, for what a PyTorch script imports from there (``from
torch.nn.parameter import Parameter``): ``Parameter`` and the lazy layers'
``UninitializedParameter`` and ``UninitializedBuffer``, the same classes as ``tricycle.nn``'s."""

from tricycle.module import Parameter
from tricycle.nn.lazy import UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "UninitializedBuffer", "UninitializedParameter"]
