"""Resampling the spatial axes of (N, C, *spatial) to a new size, as PyTorch's
``F.interpolate``: modes "nearest", "nearest-exact", "linear" (N, C, L), "bilinear" and
"bicubic" (N, C, H, W), "trilinear" (N, C, D, H, W) and "area", with torch's coordinates.

Every mode is separable: along each spatial axis, output position i reads a few inputs near
a source position s_i, and the whole resampling is one such map per axis applied in turn.
Nearest picks one input (a gather, whose gradient scatter-adds back); the other modes weigh
inputs, a matrix W (out, in) per axis applied by Einsum, so that the backward is the
transpose of the weights, Einsum's own derivative::

    linear, (N, C, L):  out = Einsum("ncl,il->nci")(x, W)
    bilinear:           the same along H, then along W

The source position of output i, along an axis of ``n_in`` inputs resized to ``n_out``::

    align_corners=True:   s_i = i (n_in - 1) / (n_out - 1)        (corner centres meet)
    align_corners=False:  s_i = (i + 1/2) r - 1/2                  (pixel edges meet)

with r = 1 / scale_factor where a scale_factor is given (and recompute_scale_factor is not
True: torch maps coordinates with the factor given, not the ratio of the rounded sizes),
else n_in / n_out. The output size is floor(n_in * scale_factor). Linear weighs the two
inputs around s_i by 1 - t and t (t = s_i - floor(s_i); s_i < 0 is clamped to 0 first);
bicubic the four around it with Keys' cubic kernel, A = -0.75, reading the border input for
the taps past the edge; antialias=True widens the kernel by the downsampling factor and
normalises it (PIL's filters: the triangle and Keys' with A = -0.5); "area" averages the
adaptive pooling bins (``tricycle.nn.adaptive_pooling.bin_means``). Nearest takes input
floor(i r) ("nearest") or floor((i + 1/2) r) ("nearest-exact"), computed in float32 as torch
does so that the picks agree; by whole factors it is a repeat (``upsample_nearest``).

An axis whose size a factor leaves unchanged is copied where torch's forward copies it
(linear and antialiased modes; "nearest" in 2-D) and mapped by the factor elsewhere; the
gradient is always the forward's transpose, even where torch's backward kernels treat that
axis otherwise than its forward ones. The weights are built with numpy on the host and moved
to the input's device. Because each weighted axis is a dense matrix product, a non-finite
input spreads along its row.
"""

import numpy as np

from tricycle import checks
from tricycle.backend import check_same_device
from tricycle.einsum import einsum
from tricycle.nn.adaptive_pooling import bin_means
from tricycle.nn.windows import as_tuple
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["MODES", "check_settings", "interpolate", "upsample_nearest"]

# each mode and the number of spatial axes it takes (None: any)
MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2,
         "bicubic": 2, "trilinear": 3}  # fmt: skip
_WEIGHING = ("linear", "bilinear", "bicubic", "trilinear")  # the modes with align_corners


# ---------------------------------------------------------------------- per-axis maps
def _ratio(n_in: int, n_out: int, align_corners: bool, scale: float | None) -> float:
    """How far the source moves per output step (torch's ``area_pixel_compute_scale``)."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None else n_in / n_out


def _floor_and_fraction(s: np.ndarray, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """The input index at or left of each source position (at most n_in - 1) and the
    fraction t in [0, 1] past it. torch floors in float32 (``floorf``): so do we."""
    index = np.minimum(np.floor(s.astype(np.float32)).astype(np.int64), n_in - 1)
    return index, np.clip(s - index, 0.0, 1.0)


def _triangle(d: np.ndarray) -> np.ndarray:
    """The linear interpolation kernel: weight 1 - |d| within one input of the source."""
    return np.maximum(0.0, 1.0 - np.abs(d))


def _keys(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter ``a``, nonzero for |d| < 2."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1  # |d| < 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a  # 1 <= |d| < 2
    return np.where(d < 1, near, np.where(d < 2, far, 0.0))


def _taps(n_in, n_out, align_corners, scale, cubic: bool) -> np.ndarray:
    """W (n_out, n_in) of linear (taps 0, 1 from the floor) or bicubic (taps -1 .. 2)
    interpolation; taps past the border read the border input, so their weights add up."""
    i = np.arange(n_out)
    s = _ratio(n_in, n_out, align_corners, scale) * (i if align_corners else i + 0.5)
    if not align_corners:
        s = s - 0.5 if cubic else np.maximum(s - 0.5, 0.0)  # linear clamps to the first input
    index, t = _floor_and_fraction(s, n_in)
    weights = np.zeros((n_out, n_in))
    for k in (-1, 0, 1, 2) if cubic else (0, 1):
        kernel = _keys(t - k, -0.75) if cubic else _triangle(t - k)
        np.add.at(weights, (i, np.clip(index + k, 0, n_in - 1)), kernel)
    return weights


def _antialiased(n_in, n_out, align_corners, scale, cubic: bool) -> np.ndarray:
    """W (n_out, n_in) of antialiased bilinear or bicubic resizing (torch's ``_aa`` ops):
    when shrinking by r > 1 the kernel is stretched r times (a low-pass filter) and each
    row's weights over the inputs inside the image are normalised to sum to 1."""
    r = _ratio(n_in, n_out, align_corners, scale)
    stretch = max(r, 1.0)
    support = (2.0 if cubic else 1.0) * stretch  # the kernel's half-width, in inputs
    centre = r * (np.arange(n_out) + 0.5)  # (n_out,), in pixel-edge coordinates
    first = np.maximum((centre - support + 0.5).astype(np.int64), 0)
    stop = np.minimum((centre + support + 0.5).astype(np.int64), n_in)
    j = first[:, None] + np.arange(int(np.ceil(support)) * 2 + 1)  # (n_out, window)
    d = (j - centre[:, None] + 0.5) / stretch
    kernel = np.where(j < stop[:, None], _keys(d, -0.5) if cubic else _triangle(d), 0.0)
    total = kernel.sum(axis=1, keepdims=True)
    kernel = kernel / np.where(total == 0, 1.0, total)
    weights = np.zeros((n_out, n_in + j.shape[1]))  # room for window columns past the end
    np.put_along_axis(weights, j, kernel, axis=1)
    return weights[:, :n_in]


def _nearest(n_in, n_out, scale, exact: bool, copy_same: bool) -> np.ndarray:
    """The input index (n_out,) that each output copies, as torch's ``nearest_idx`` and
    ``nearest_exact_idx`` (in float32, as they are). ``copy_same``: an axis whose size is
    unchanged is copied whatever the factor (torch's 2-D "nearest"; its 1-D and 3-D map it
    by the factor)."""
    i = np.arange(n_out)
    if not exact and (n_out == 2 * n_in or (copy_same and n_out == n_in)):
        return i * n_in // n_out
    r = np.float32(1.0 / scale) if scale is not None else np.float32(n_in) / np.float32(n_out)
    s = ((i + 0.5) * np.float64(r)).astype(np.float32) if exact else i.astype(np.float32) * r
    return np.minimum(np.floor(s).astype(np.int64), n_in - 1)


def _weights(mode, n_in, n_out, align_corners, scale, antialias) -> np.ndarray | None:
    """W (n_out, n_in) of a weighing mode along one axis, or None where it is the identity."""
    cubic = mode == "bicubic"
    if mode == "area":
        weights = bin_means(n_in, n_out)
    elif n_in == n_out and (antialias or not cubic):
        return None  # torch copies an axis of unchanged size, whatever the factor
    elif antialias:
        weights = _antialiased(n_in, n_out, align_corners, scale, cubic)
    else:
        weights = _taps(n_in, n_out, align_corners, scale, cubic)
    return None if n_in == n_out and np.array_equal(weights, np.eye(n_in)) else weights


# ---------------------------------------------------------------------- the op
def _along(axis: int, ndim: int) -> str:
    """The einsum applying W (out, in) to one axis: ``"abcd,zc->abzd"`` for axis 2 of 4."""
    letters = "abcdefghijklmnop"[:ndim]
    out = letters[:axis] + "z" + letters[axis + 1 :]
    return f"{letters},z{letters[axis]}->{out}"


def _sizes_and_scales(op, x: Tensor, size, scale_factor, recompute) -> tuple[tuple, tuple]:
    """The output size of each spatial axis, and the scale that maps its coordinates (None:
    the ratio of the sizes), by torch's rules."""
    spatial = x.shape[2:]
    n = len(spatial)
    if size is not None:
        if recompute:
            raise ValueError(f"{op}: recompute_scale_factor=True needs scale_factor, not size")
        return as_tuple(size, n, "size", op), (None,) * n
    factors = tuple(scale_factor) if isinstance(scale_factor, tuple | list) else (scale_factor,) * n
    if len(factors) != n:
        raise ValueError(f"{op}: scale_factor {scale_factor!r} must give one factor per spatial "
                         f"axis of the input {x.shape} ({n}), or one for all")  # fmt: skip
    sizes = tuple(int(s * float(f)) for s, f in zip(spatial, factors))  # torch's floor
    if 0 in sizes:
        raise ValueError(f"{op}: scale_factor {scale_factor!r} shrinks spatial size {spatial} "
                         f"to {sizes}; every axis needs at least one output")  # fmt: skip
    return sizes, (None,) * n if recompute else tuple(float(f) for f in factors)


def check_settings(op: str, size, scale_factor, mode, align_corners, antialias=False) -> None:
    """Raise for settings that no input makes valid: an unknown mode, both or neither of
    size and scale_factor, bad values, align_corners or antialias in a mode without them."""
    checks.one_of(MODES)(op, "mode", mode)
    if (size is None) == (scale_factor is None):
        given = "both" if size is not None else "neither"
        raise ValueError(f"{op}: give either size or scale_factor, not {given}")
    if scale_factor is not None:
        for f in scale_factor if isinstance(scale_factor, tuple | list) else (scale_factor,):
            checks.positive(op, "scale_factor", f)
    elif not isinstance(size, tuple | list):
        checks.positive_int(op, "size", size)
    checks.boolean(op, "align_corners", align_corners, optional=True)
    if align_corners is not None and mode not in _WEIGHING:
        raise ValueError(
            f"{op}: align_corners is only for the interpolating modes (linear, bilinear, "
            f"bicubic, trilinear), got {align_corners!r} with {mode!r}"
        )
    if checks.boolean(op, "antialias", antialias) and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"{op}: antialias=True is only for 'bilinear' and 'bicubic', not {mode!r}")


def interpolate(
    input: Tensor,  # noqa: A002 - torch's names
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """(N, C, *spatial) resized to ``size`` or by ``scale_factor`` (one, or one per spatial
    axis) in ``mode``, as ``torch.nn.functional.interpolate`` (see the module's docstring)."""
    op = "F.interpolate"
    x = as_tensor(input)
    check_settings(op, size, scale_factor, mode, align_corners, antialias)
    recompute = checks.boolean(op, "recompute_scale_factor", recompute_scale_factor, True)
    n = MODES[mode]
    if x.ndim < 3 or 0 in x.shape[2:] or (n is not None and x.ndim != n + 2):
        need = "(N, C, *spatial)" if n is None else f"(N, C, {('L', 'H, W', 'D, H, W')[n - 1]})"
        raise ValueError(f"{op}: mode {mode!r} needs a non-empty input {need}, got shape "
                         f"{x.shape}")  # fmt: skip
    sizes, scales = _sizes_and_scales(op, x, size, scale_factor, recompute)
    axes = list(zip(range(2, x.ndim), x.shape[2:], sizes, scales))
    xp, source = check_same_device(op, x.array), x
    if mode in ("nearest", "nearest-exact"):
        exact, copy_same = mode == "nearest-exact", len(axes) == 2
        picks = [_nearest(n_in, n_out, s, exact, copy_same) for _, n_in, n_out, s in axes]
        factors = [n_out // n_in for _, n_in, n_out, _ in axes]
        if all(f and np.array_equal(p, np.arange(len(p)) // f) for p, f in zip(picks, factors)):
            return upsample_nearest(x, factors)  # a repeat, by whole factors
        for (axis, n_in, _, _), pick in zip(axes, picks):
            if not np.array_equal(pick, np.arange(n_in)):
                x = x[(slice(None),) * axis + (xp.asarray(pick),)]  # gather; scatter-add back
        return x.clone() if x is source else x  # a new tensor, as torch's
    check_float(f"{op} (mode {mode!r})", x)  # the weights are fractions
    align = bool(align_corners)
    for axis, n_in, n_out, scale in sorted(axes, key=lambda a: a[2] / a[1]):  # shrinking first
        weights = _weights(mode, n_in, n_out, align, scale, antialias)
        if weights is not None:
            w = Tensor(xp.asarray(weights, dtype=x.dtype), requires_grad=False)  # (out, in)
            x = einsum(_along(axis, x.ndim), x, w)
    return x.clone() if x is source else x


# ---------------------------------------------------------------------- nearest, by whole factors
def _interleaved(size, scale, ones: bool) -> tuple[int, ...]:
    """(H, s_1, W, s_2, ...), or (H, 1, W, 1, ...) when ``ones``."""
    return tuple(n for pair in zip(size, scale) for n in (pair[0], 1 if ones else pair[1]))


def upsample_nearest(x: Tensor, scale_factor=2) -> Tensor:
    """(N, C, *size) -> (N, C, *(size * scale_factor)), each element repeated
    ``scale_factor`` times along each spatial axis (an int, or one int per axis)::

        out[n, c, h, w] = x[n, c, h // s_1, w // s_2]

    The output viewed as (N, C, H, s_1, W, s_2) is x viewed as (N, C, H, 1, W, 1) broadcast
    along the s axes; the backward sums each block of the output's gradient back onto the
    element it copies."""
    if x.ndim < 3:
        raise ValueError(
            f"upsample_nearest: expected input (batch, channels, *spatial), got shape {x.shape}"
        )
    spatial = x.ndim - 2
    scale = as_tuple(scale_factor, spatial, "scale_factor", "upsample_nearest")
    xp = check_same_device("upsample_nearest", x.array)
    lead, size = x.shape[:2], x.shape[2:]
    blocks = lead + _interleaved(size, scale, ones=False)  # (N, C, H, s_1, W, s_2)
    out_shape = lead + tuple(n * s for n, s in zip(size, scale))
    repeated = xp.broadcast_to(x.array.reshape(lead + _interleaved(size, scale, True)), blocks)
    out = xp.ascontiguousarray(repeated).reshape(out_shape)
    block_axes = tuple(range(3, 2 + 2 * spatial, 2))  # the s axes

    def back_fn(dout):  # (N, C, H s_1, W s_2) -> (N, C, H, W): each block's sum
        return dout.reshape(blocks).sum(axis=block_axes)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name="upsample_nearest")
