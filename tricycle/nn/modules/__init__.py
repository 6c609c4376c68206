"""``torch.nn.modules``' paths for what a PyTorch script reaches there: ``module``, with the
global module hooks (``from tricycle.nn.modules.module import register_module_forward_hook``),
and the layers under their torch modules' names (``tricycle.nn.modules.rnn.LSTM``,
``tricycle.nn.modules.linear.Linear``, ...), as a safe-globals list for
``tricycle.load(weights_only=True)`` names them. The layers themselves are ``tricycle.nn``'s:
each name here is the same class."""

from tricycle.nn.modules import (
    activation,
    batchnorm,
    container,
    conv,
    dropout,
    linear,
    module,
    normalization,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
)

__all__ = [
    "activation",
    "batchnorm",
    "container",
    "conv",
    "dropout",
    "linear",
    "module",
    "normalization",
    "pixelshuffle",
    "pooling",
    "rnn",
    "sparse",
    "transformer",
]
