"""The bilinear layer, as PyTorch's ``nn.Bilinear`` and ``F.bilinear``: two inputs, one
output that is linear in each of them::

    out[..., o] = sum over i, j of x1[..., i] W[o, i, j] x2[..., j] + b[o]

one einsum, ``"...i,oij,...j->...o"`` (``tricycle.einsum``), so its gradients are the
einsum's: for x1 the contraction of W with x2 and the output gradient, and so on.

The layer keeps torch's layout and names, ``weight`` (out, in1, in2) and ``bias`` (out,)
(not tricycle's ``weights``: there is no transpose to tell apart, so a torch state dict loads
as it is, through ``tricycle.nn.from_torch`` too), both drawn as torch's from
U(-1/sqrt(in1), 1/sqrt(in1)).
"""

import math

from tricycle import checks
from tricycle.einsum import einsum
from tricycle.initialisers import init_uniform
from tricycle.layers import Layer, parameter
from tricycle.tensor import Tensor, as_tensor

__all__ = ["Bilinear", "bilinear"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """x1 (*, in1) and x2 (*, in2) -> (*, out) through ``weight`` (out, in1, in2) and
    ``bias`` (out,) or None, as PyTorch's ``F.bilinear``: the inputs share their leading
    axes."""
    x1, x2, weight = as_tensor(input1), as_tensor(input2), as_tensor(weight)
    leading_ok = x1.ndim > 0 and x2.ndim > 0 and x1.shape[:-1] == x2.shape[:-1]
    if not (leading_ok and weight.ndim == 3 and (x1.shape[-1], x2.shape[-1]) == weight.shape[1:]):
        raise ValueError(
            f"bilinear: expected input1 (*, in1), input2 (*, in2) with the same leading axes "
            f"and weight (out, in1, in2), got input1 {x1.shape}, input2 {x2.shape} and weight "
            f"{weight.shape}"
        )
    if bias is not None and as_tensor(bias).shape != weight.shape[:1]:
        raise ValueError(f"bilinear: bias must have shape ({weight.shape[0]},) for weight "
                         f"{weight.shape}, got {as_tensor(bias).shape}")  # fmt: skip
    out = einsum("...i,oij,...j->...o", x1, weight, x2)  # (*, out)
    return out if bias is None else out + bias


class Bilinear(Layer):
    """``x1^T W_o x2 + b_o`` for each output o, as ``torch.nn.Bilinear(in1_features,
    in2_features, out_features, bias=True)``: (*, in1) and (*, in2) -> (*, out)."""

    @checks.arguments(
        in1_features=checks.positive_int,
        in2_features=checks.positive_int,
        out_features=checks.positive_int,
        bias=checks.boolean,
    )
    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias=True):
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in1_features)  # torch's, for the weight and the bias
        shape = (out_features, in1_features, in2_features)
        self.weight = parameter(init_uniform(shape, bound), "weight")
        self.bias = parameter(init_uniform((out_features,), bound), "bias") if bias else None

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        x1, x2 = as_tensor(input1), as_tensor(input2)
        if x1.shape[-1:] != (self.in1_features,) or x2.shape[-1:] != (self.in2_features,):
            raise ValueError(
                f"{self._owner()}: expected input1 (*, {self.in1_features}) and input2 "
                f"(*, {self.in2_features}), got {x1.shape} and {x2.shape}"
            )
        return bilinear(x1, x2, self.weight, self.bias)

    def _owner(self) -> str:
        return f"Bilinear({self.in1_features}, {self.in2_features} -> {self.out_features})"

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
