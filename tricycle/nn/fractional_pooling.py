"""Fractional max pooling (Graham, 2014), as PyTorch's FractionalMaxPool2d and
FractionalMaxPool3d: windows of a fixed size whose starts advance by a random, non-integer
step, so that an axis of L elements pools to any O < L outputs.

Along an axis of size L, with windows of K elements and O outputs, each plane draws one
number u in [0, 1) (torch's ``_random_samples``, (N, C, 2) or (N, C, 3)) and output i starts
at int((i + u) a) - int(u a), a = (L - K) / (O - 1), computed in the input's dtype as torch
computes it; the last window starts at L - K, so the windows cover the axis. A window's
maximum is its first largest value in row-major order (the last NaN, if it holds one, as
torch's scan keeps it); its flat position in the plane (h W + w in 2-D) is torch's index
(``return_indices=True``), and the gradient goes there, overlapping windows adding up.
"""

import math

import numpy as np

from tricycle import checks, factories
from tricycle.layers import Layer
from tricycle.nn.adaptive_max_pooling import picked
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "FractionalMaxPool2d", "FractionalMaxPool3d", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]  # fmt: skip

# which of a plane's random samples each spatial axis reads, as torch's kernels read them:
# in 2-D the first is the width's, in 3-D they go in the axes' order
SAMPLE_OF_AXIS = {2: (1, 0), 3: (0, 1, 2)}


def window_starts(xp, u, size: int, out: int, kernel: int):
    """(..., out) int64: where each window starts along an axis of ``size``, from the planes'
    samples ``u`` (...) in the input's dtype: int((i + u) a) - int(u a) with
    a = (size - kernel) / (out - 1), and size - kernel for the last window."""
    starts = xp.full(u.shape + (out,), size - kernel, dtype=np.int64)
    if out > 1:
        alpha = u.dtype.type(size - kernel) / u.dtype.type(out - 1)  # in u's dtype, as torch's
        steps = (xp.arange(out - 1, dtype=u.dtype) + u[..., None]) * alpha
        starts[..., :-1] = steps.astype(np.int64) - (u * alpha).astype(np.int64)[..., None]
    return starts


def _sizes(op: str, name: str, value, n: int, kind) -> tuple:
    """A number or ``n`` of them, as a tuple (torch's _pair/_triple)."""
    values = tuple(value) if isinstance(value, tuple | list) else (value,) * n
    if len(values) != n or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        what = "integer" if kind is int else "number"
        checks.fail(op, name, f"an {what} or {n} of them", value, TypeError)
    return values


def fractional_max_pool(x, kernel_size, output_size, output_ratio, return_indices,
                        random_samples, n: int):  # fmt: skip
    """Fractional max pooling of the last ``n`` (2 or 3) axes of x (N, C, *size) or
    (C, *size) (see the module); returns the pooled tensor, or (pooled, indices) with
    ``return_indices``."""
    op = f"fractional_max_pool{n}d"
    x = as_tensor(x)
    if x.ndim not in (n + 1, n + 2) or 0 in x.shape:
        raise ValueError(
            f"{op}: expected a non-empty input (batch, channels, *{n} spatial axes) or "
            f"(channels, *{n} spatial axes), got shape {x.shape}"
        )
    checks.boolean(op, "return_indices", return_indices)
    kernel = _sizes(op, "kernel_size", kernel_size, n, int)
    sizes = x.shape[-n:]
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _sizes(op, "output_ratio", output_ratio, n, int | float)
        output_size = tuple(int(s * r) for s, r in zip(sizes, ratio))
    outs = _sizes(op, "output_size", output_size, n, int)
    room = "<=" if n == 2 else "<"  # torch's 3-D kernel asks for one more element
    for axis, (size, k, o) in enumerate(zip(sizes, kernel, outs)):
        if k < 1 or o < 1 or o + k - 1 > size - (n == 3):
            raise ValueError(
                f"{op}: kernel_size {kernel} and output_size {outs} must be >= 1 with "
                f"output_size + kernel_size - 1 {room} the input's size along each spatial "
                f"axis; axis {axis} has {size} (input {x.shape})"
            )
    xp, batched = x.xp, x.ndim == n + 2
    planes = x.array.reshape((-1 if batched else 1, x.shape[-n - 1], math.prod(sizes)))
    N, C = planes.shape[:2]
    if random_samples is None:  # one draw per plane and axis, from tricycle's generator
        random_samples = factories.rand(N, C, n, dtype=x.dtype)
    u = xp.asarray(random_samples.array if isinstance(random_samples, Tensor) else random_samples)
    if u.shape != (N, C, n):
        raise ValueError(
            f"{op}: _random_samples must have shape ({N}, {C}, {n}) for an input of shape "
            f"{x.shape}, got {u.shape}"
        )
    u = u.astype(x.dtype, copy=False)
    # every window's flat positions in its plane: (N, C, *outs, *kernel), row-major
    flat = xp.zeros((N, C) + (1,) * 2 * n, dtype=np.int64)
    for a, (size, k, o) in enumerate(zip(sizes, kernel, outs)):
        starts = window_starts(xp, u[:, :, SAMPLE_OF_AXIS[n][a]], size, o, k)  # (N, C, o)
        shape = [N, C] + [1] * 2 * n
        shape[2 + a], shape[2 + n + a] = o, k
        positions = starts[..., None] + xp.arange(k)  # (N, C, o, k)
        flat = flat * size + positions.reshape(shape)
    windows_at = flat.reshape(N, C, math.prod(outs), math.prod(kernel))  # (N, C, O, K)
    windows = xp.take_along_axis(planes, windows_at.reshape(N, C, -1), axis=2)
    windows = windows.reshape(windows_at.shape)
    nan = xp.isnan(windows)
    last_nan = windows.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
    pick = xp.where(nan.any(axis=-1), last_nan, windows.argmax(axis=-1))  # (N, C, O)
    index = xp.take_along_axis(windows_at, pick[..., None], axis=-1)[..., 0]  # (N, C, O)
    plane = planes.shape[2]
    return picked(x, planes.reshape(-1, plane), index.reshape(N * C, -1), x.shape[:-n] + outs,
                  op, return_indices)  # fmt: skip


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):  # fmt: skip
    """Fractional max pooling of (N, C, H, W) or (C, H, W), as torch's: ``output_size``
    (Ho, Wo) or ``output_ratio`` (of H and W, in (0, 1)); ``_random_samples`` (N, C, 2) in
    [0, 1), else drawn from tricycle's generator; ``return_indices`` gives (out, indices)."""
    return fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                               _random_samples, 2)  # fmt: skip


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):  # fmt: skip
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W), as torch's (see
    ``fractional_max_pool2d``; ``_random_samples`` (N, C, 3))."""
    return fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                               _random_samples, 3)  # fmt: skip


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):  # fmt: skip
    """``fractional_max_pool2d`` returning (out, indices) whatever ``return_indices`` says."""
    return fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                               _random_samples, 2)  # fmt: skip


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):  # fmt: skip
    """``fractional_max_pool3d`` returning (out, indices) whatever ``return_indices`` says."""
    return fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                               _random_samples, 3)  # fmt: skip


class _FractionalMaxPool(Layer):
    """torch's arguments; ``_random_samples`` a buffer (None: drawn at each call)."""

    n_dims = 0

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):  # fmt: skip
        owner, n = type(self).__name__, self.n_dims
        checks.boolean(owner, "return_indices", return_indices)
        self.kernel_size = _sizes(owner, "kernel_size", kernel_size, n, int)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{owner} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{owner}: only one of output_size and output_ratio may be specified")
        self.output_size = None
        if output_size is not None:
            self.output_size = _sizes(owner, "output_size", output_size, n, int)
        self.output_ratio = None
        if output_ratio is not None:
            self.output_ratio = _sizes(owner, "output_ratio", output_ratio, n, int | float)
            if not all(0 < r < 1 for r in self.output_ratio):
                raise ValueError(f"{owner}: output_ratio must be between 0 and 1 "
                                 f"(got {output_ratio})")  # fmt: skip

    def forward(self, x: Tensor):
        sizes = self.kernel_size, self.output_size, self.output_ratio
        return fractional_max_pool(x, *sizes, self.return_indices, self._random_samples,
                                   self.n_dims)  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, H, W) or (C, H, W), as ``torch.nn.FractionalMaxPool2d``
    (see ``fractional_max_pool2d``)."""

    n_dims = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W), as
    ``torch.nn.FractionalMaxPool3d`` (see ``fractional_max_pool3d``)."""

    n_dims = 3
