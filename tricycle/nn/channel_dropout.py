"""Channel-wise dropout, torch's ``Dropout1d``, ``Dropout2d`` and ``Dropout3d`` (and
``F.dropout1d``/``dropout2d``/``dropout3d``): each channel of each sample is zeroed whole with
probability p and the others scaled by 1 / (1 - p), for feature maps whose neighbouring values
move together (elementwise dropout would hardly take anything away from them):

    m[n, c] = 0 with probability p, 1 / (1 - p) otherwise       # one draw per (sample, channel)
    y[n, c, ...] = x[n, c, ...] m[n, c]                           # (N, C, ...)
    dx[n, c, ...] = dy[n, c, ...] m[n, c]

Inputs as torch's: (N, C, L) or unbatched (C, L) for 1d, (N, C, H, W) or (C, H, W) for 2d,
(N, C, D, H, W) or (C, D, H, W) for 3d; an unbatched input is a batch of one. As torch's,
``dropout2d`` reads a 3-D input as (N, C, L) (1d's behaviour), and it and ``dropout3d`` take
the other ranks as (N, C, ...), warning as torch does: a 2-D (N, C) input, as
pytorch/examples' mnist_rnn passes one, has one value per channel, so each is dropped on its
own. The mask is drawn from a numpy Generator (the layer's own, as ``Dropout``'s, so
``tricycle.manual_seed`` reproduces it) and moved to the input's device.
"""

import warnings

import numpy as np

from tricycle import checks, ops, random, rebase
from tricycle.layers import Dropout
from tricycle.tensor import Tensor, as_tensor
from tricycle.unary import unary_op

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "dropout1d", "dropout2d", "dropout3d"]


def channel_dropout(x: Tensor, p: float, rng: np.random.Generator) -> Tensor:
    """x (N, C, ...) with each (n, c) channel zeroed with probability ``p`` (in (0, 1)) and the
    rest scaled by 1 / (1 - p); the gradient is masked the same way."""
    N, C = x.shape[:2]
    # random generators make only float32/64 numbers: draw in float32 for 16-bit inputs
    draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    keep = rng.random((N, C), dtype=draw) >= p  # (N, C)
    mask = (keep * (1.0 / (1.0 - p))).astype(x.dtype).reshape((N, C) + (1,) * (x.ndim - 2))
    mask = x.xp.asarray(mask)  # (N, C, 1, ...): onto the input's device
    return unary_op(x, x.array * mask, lambda dout: dout * mask, "channel_dropout")


def _warn(message: str) -> None:
    """A UserWarning at the caller of the ``dropoutNd`` function (or of the layer's forward)."""
    warnings.warn(message, UserWarning, stacklevel=3)


def _dropout_nd(op: str, x, p, training, inplace, rng, batched: int | None) -> Tensor:
    """The checks and the cases every ``dropoutNd`` shares: ``batched`` is the rank of a
    batched input (one less is a batch of one), None for an input already (N, C, ...)."""
    checks.real(op, "p", p, 0, 1)
    checks.boolean(op, "training", training)
    checks.boolean(op, "inplace", inplace)  # the result written into the input, as torch's
    x = as_tensor(x)
    if x.ndim < 2:
        checks.fail(op, "input's shape", "(N, C, ...) or (C, ...): a channel axis", x.shape)
    if not training or p == 0:
        return x
    if p == 1:  # every channel dropped: zeros, with a zero gradient
        return rebase.written_if(inplace, x, op, lambda v: v * 0.0)
    rng = rng or np.random.default_rng(random.draw_seed())

    def dropped(v):
        if batched is not None and v.ndim == batched - 1:  # unbatched: a batch of one
            return ops.squeeze(channel_dropout(ops.expand_dims(v, 0), p, rng), 0)
        return channel_dropout(v, p, rng)

    return rebase.written_if(inplace, x, op, dropped)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False, *,  # noqa: A002
              rng: np.random.Generator | None = None) -> Tensor:  # fmt: skip
    """torch's ``F.dropout1d``: channel dropout of (N, C, L) or (C, L) (see the module doc)."""
    ndim = as_tensor(input).ndim
    if ndim not in (2, 3):
        checks.fail("F.dropout1d", "input's rank", "2 (C, L) or 3 (N, C, L)", ndim)
    return _dropout_nd("F.dropout1d", input, p, training, inplace, rng, batched=3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False, *,  # noqa: A002
              rng: np.random.Generator | None = None) -> Tensor:  # fmt: skip
    """torch's ``F.dropout2d``: channel dropout of (N, C, H, W); (C, H, W) is read as (N, C, L)
    and other ranks as (N, C, ...), with torch's warnings (see the module doc)."""
    ndim = as_tensor(input).ndim
    if ndim == 3:
        _warn("F.dropout2d: a 3-D input is read as (N, C, L), as torch does (1d's channel "
              "dropout); use dropout1d for it")  # fmt: skip
    elif ndim != 4:
        _warn(f"F.dropout2d: a {ndim}-D input is read as (N, C, ...), as torch does (which "
              "deprecates it); dropout2d expects (N, C, H, W)")  # fmt: skip
    return _dropout_nd("F.dropout2d", input, p, training, inplace, rng, batched=None)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False, *,  # noqa: A002
              rng: np.random.Generator | None = None) -> Tensor:  # fmt: skip
    """torch's ``F.dropout3d``: channel dropout of (N, C, D, H, W) or (C, D, H, W); other ranks
    are read as (N, C, ...), with torch's warning."""
    ndim = as_tensor(input).ndim
    if ndim not in (4, 5):
        _warn(f"F.dropout3d: a {ndim}-D input is read as (N, C, ...), as torch does (which "
              "deprecates it); dropout3d expects (N, C, D, H, W)")  # fmt: skip
    return _dropout_nd("F.dropout3d", input, p, training, inplace, rng, batched=5)


class Dropout1d(Dropout):
    """torch's ``nn.Dropout1d(p=0.5)``: ``F.dropout1d`` in training, the identity in eval mode;
    the arguments (``p`` or ``probability``, ``seed``, ``inplace``) are ``Dropout``'s."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout1d(x, self.probability, self.training, rng=self.rng)


class Dropout2d(Dropout):
    """torch's ``nn.Dropout2d(p=0.5)``: ``F.dropout2d`` in training, the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout2d(x, self.probability, self.training, rng=self.rng)


class Dropout3d(Dropout):
    """torch's ``nn.Dropout3d(p=0.5)``: ``F.dropout3d`` in training, the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout3d(x, self.probability, self.training, rng=self.rng)
