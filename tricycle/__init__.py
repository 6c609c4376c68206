"""tricycle: a small, readable, fast deep-learning library on numpy and cupy.

Importing tricycle is cheap: it loads numpy and the pure-Python ops; cupy is imported only
when a tensor is moved to a GPU.
"""

from tricycle import operators  # noqa: F401 - binds +, *, [], .sum() ... to Tensor
from tricycle.einsum import Einsum
from tricycle.tensor import Tensor, no_grad, to_tensor

__version__ = "0.1.0"
__all__ = ["Einsum", "Tensor", "no_grad", "to_tensor", "__version__"]
