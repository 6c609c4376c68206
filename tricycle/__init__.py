"""tricycle: a small, readable, fast deep-learning library on numpy and cupy.

``import tricycle as tc`` gives the Tensor, the factories, the common ops as functions and
the tools around them::

    import tricycle as tc

    tc.manual_seed(0)
    x = tc.randn(4, 3, requires_grad=True)
    y = tc.softmax(tc.einsum("ij,jk->ik", x, tc.ones(3, 5))).sum()
    y.backward()  # x.grad

Every module stays importable on its own (``from tricycle.tensor import Tensor`` gives a
Tensor with its operators). Importing tricycle is cheap and changes nothing: it loads numpy
and the pure-Python ops, starts no threads, and imports cupy only when a tensor is moved to
a GPU.
"""

from tricycle.activation import GeLU, LeakyReLU, ReLU, Swish
from tricycle.binary import maximum, minimum
from tricycle.deferred import checks_pending, raise_pending_errors
from tricycle.einsum import Einsum, einsum
from tricycle.factories import (
    arange,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from tricycle.functions import LogSoftmax, Softmax
from tricycle.gradcheck import GradcheckError, gradcheck
from tricycle.ops import (
    cat,
    concatenate,
    expand_dims,
    masked_fill,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    transpose,
    where,
)
from tricycle.random import manual_seed
from tricycle.reduce import max, mean, min, sum, var  # noqa: A004 - the names from the math
from tricycle.tensor import Tensor, no_grad, to_tensor
from tricycle.unary import abs, clip, cos, exp, log, sigmoid, sin, sqrt, tanh  # noqa: A004

__version__ = "0.1.0"


# ---------------------------------------------------------------------- fused ops as functions
def softmax(x: Tensor) -> Tensor:
    """Softmax over the last axis (the fused ``tricycle.functions.Softmax``)."""
    return Softmax()(x)


def log_softmax(x: Tensor) -> Tensor:
    """Log-softmax over the last axis, computed stably (``tricycle.functions.LogSoftmax``)."""
    return LogSoftmax()(x)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), elementwise (``tricycle.activation.ReLU``)."""
    return ReLU()(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else ``negative_slope * x`` (``tricycle.activation.LeakyReLU``)."""
    return LeakyReLU(negative_slope)(x)


def gelu(x: Tensor, approximate=False) -> Tensor:
    """x * Phi(x), exact unless ``approximate`` ("tanh"): ``tricycle.activation.GeLU``."""
    return GeLU(approximate)(x)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x), also called Swish (``tricycle.activation.Swish``)."""
    return Swish()(x)


__all__ = [
    "Einsum",
    "GradcheckError",
    "Tensor",
    "__version__",
    "abs",
    "arange",
    "cat",
    "checks_pending",
    "clip",
    "concatenate",
    "cos",
    "einsum",
    "exp",
    "expand_dims",
    "eye",
    "full",
    "full_like",
    "gelu",
    "gradcheck",
    "leaky_relu",
    "linspace",
    "log",
    "log_softmax",
    "manual_seed",
    "masked_fill",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "raise_pending_errors",
    "randn_like",
    "relu",
    "repeat",
    "reshape",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "sum",
    "swapaxes",
    "tanh",
    "to_tensor",
    "transpose",
    "tril",
    "triu",
    "var",
    "where",
    "zeros",
    "zeros_like",
]
