"""The softmax family under torch's names and arguments, as layers: ``Softmax(dim)``,
``LogSoftmax(dim)``, ``Softmin(dim)`` and ``Softmax2d``; and ``along``, which they and
``F.softmax``, ``F.log_softmax`` and ``F.softmin`` share. ``nn.Softmax`` is a layer (hooks,
``named_modules``) and still a ``tricycle.functions.Softmax``.

Over the last axis each is the fused op of ``tricycle.functions`` (one node, a hand-derived
backward); along another axis it is the Tensor method, which composes ops along any axis.
``dim=None`` is tricycle's last axis (torch's implicit choice for None, which torch
deprecates, picks axis 0 or 1 by the input's rank).
"""

from tricycle import checks, functions, ops, unary
from tricycle.module import Layer
from tricycle.tensor import Tensor, as_tensor


def along(owner: str, fused, x, dim: int | None, dtype=None) -> Tensor:
    """``fused()(x)`` when ``dim`` is the last axis of ``x`` (cast to ``dtype``, if given),
    else the Tensor method of ``fused``'s op (``softmax``, ``log_softmax``) along ``dim``."""
    x = as_tensor(x)
    x = x if dtype is None else x.to(dtype)
    last = max(x.ndim, 1) - 1
    if dim is None or checks.axis(owner, "dim", dim, last + 1, x.shape) == last:
        return fused()(x)
    method = "softmax" if fused is functions.Softmax else "log_softmax"
    return getattr(x, method)(dim)


class Softmax(Layer, functions.Softmax):
    """``torch.nn.Softmax(dim)``: softmax along ``dim`` (the last axis by default), the fused
    ``tricycle.functions.Softmax`` over the last axis."""

    def __init__(self, dim: int | None = None):
        checks.optional(checks.integer)("nn.Softmax", "dim", dim)
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return along("nn.Softmax", functions.Softmax, x, self.dim)

    def __repr__(self) -> str:
        return f"Softmax(dim={self.dim})"


class LogSoftmax(Layer, functions.LogSoftmax):
    """``torch.nn.LogSoftmax(dim)``: log-softmax along ``dim`` (the last axis by default),
    the fused ``tricycle.functions.LogSoftmax`` over the last axis."""

    def __init__(self, dim: int | None = None):
        checks.optional(checks.integer)("nn.LogSoftmax", "dim", dim)
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return along("nn.LogSoftmax", functions.LogSoftmax, x, self.dim)

    def __repr__(self) -> str:
        return f"LogSoftmax(dim={self.dim})"


class Softmin(Softmax):
    """``torch.nn.Softmin(dim)``: softmax(-x) along ``dim`` (the last axis by default): the
    smallest entries get the most weight."""

    def forward(self, x: Tensor) -> Tensor:
        return along("nn.Softmin", functions.Softmax, unary.neg(as_tensor(x)), self.dim)

    def __repr__(self) -> str:
        return f"Softmin(dim={self.dim})"


class Softmax2d(Layer):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) inputs (axis -3) at every
    position, as ``torch.nn.Softmax2d``."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected an input (N, C, H, W) or (C, H, W), got shape {x.shape}"
            )
        return ops.swapaxes(functions.Softmax()(ops.swapaxes(x, -3, -1)), -3, -1)

    def __repr__(self) -> str:
        return "Softmax2d()"
