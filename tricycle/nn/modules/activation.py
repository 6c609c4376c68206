"""``torch.nn.modules.activation``'s names: the activation layers and ``MultiheadAttention``,
which are ``tricycle.nn``'s (a script's safe-globals list or import names them here)."""

from tricycle.activation import GLU, GeLU, LeakyReLU, ReLU, SiLU
from tricycle.functions import Sigmoid, Tanh
from tricycle.nn.activations import (
    CELU,
    ELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    Softplus,
    Softsign,
    Tanhshrink,
    Threshold,
)
from tricycle.nn.multihead import MultiheadAttention
from tricycle.nn.softmaxes import LogSoftmax, Softmax, Softmax2d, Softmin

GELU = GeLU

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
    "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention", "PReLU", "ReLU", "ReLU6", "SELU",
    "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softsign", "Tanh",
    "Tanhshrink", "Threshold",
]  # fmt: skip
