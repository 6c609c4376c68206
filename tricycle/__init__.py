"""tricycle: a small, readable, fast deep-learning library on numpy and cupy.

Importing tricycle is cheap: it loads numpy and the pure-Python ops; cupy is imported only
when a tensor is moved to a GPU.
"""

import os

# OpenBLAS (numpy's BLAS) keeps its worker threads spinning for about 0.1 s (2^28 cycles) after
# every matrix product, so on a laptop-sized CPU they take the cores from the elementwise work
# that tricycle runs on its own threads between products (10-19% of a CPU training step,
# measured on 2 cores). 2^4 cycles lets them sleep at once, at no cost to the products. OpenBLAS
# reads this when it loads: it applies where tricycle is imported before numpy (the scripts
# do that); an explicit setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from tricycle import operators  # noqa: E402, F401 - binds +, *, [], .sum() ... to Tensor
from tricycle.einsum import Einsum  # noqa: E402
from tricycle.tensor import Tensor, no_grad, to_tensor  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Einsum", "Tensor", "no_grad", "to_tensor", "__version__"]
