"""Sampling an input at any points, as PyTorch's ``F.affine_grid`` and ``F.grid_sample``: the
two halves of a spatial transformer.

``affine_grid(theta, size)`` says, for each output position, which point of the input it
reads, in normalised coordinates (-1 and 1 are the input's borders): the output positions,
each as a row (x, y, 1), through one affine map per batch element, theta (N, 2, 3)::

    grid[n, h, w] = theta[n] @ (x_w, y_h, 1)        one einsum, "hwk,nik->nhwi"

with x_w = -1 + 2 w / (W - 1), times (W - 1) / W unless align_corners: the output's pixel
centres in the coordinates that grid_sample reads (-1 and 1 the outer pixels' centres with
align_corners, their outer edges without); y_h likewise. Its gradient with respect to theta
is the einsum's.

``grid_sample(input, grid)`` reads input (N, C, H, W) at those points: grid (N, Ho, Wo, 2)
holds (x, y), x along W. Along each spatial axis of ``size`` pixels a grid value g becomes a
source coordinate s, in pixels::

    align_corners=True:   s = (g + 1) (size - 1) / 2     (-1 and 1: the outer pixels' centres)
    align_corners=False:  s = (g + 1) size / 2 - 1/2      (-1 and 1: the outer pixels' edges)

``padding_mode`` says what a point outside reads: "zeros" zeros; "border" the nearest pixel
inside (s clamped into [0, size - 1]); "reflection" the input mirrored at its borders (s
reflected, then clamped). "nearest" reads the pixel at round(s) (ties to even, as torch);
"bilinear" weighs the 2^n pixels around s, along each axis floor(s) by 1 - t and floor(s) + 1
by t (t = s - floor(s)), a pixel's weight the product of its axes' weights; a pixel outside
the input reads 0. Inputs (N, C, D, H, W) with grids (N, Do, Ho, Wo, 3), (x, y, z), work
alike along three axes (torch's "bilinear" there is trilinear).

The sampling is a fused op, with its closed-form backward: the input's gradient scatters each
output's gradient back to the pixels it read, with their weights; the grid's differentiates
the weights, d out / d s_a = the sum over the pixels read of (+-) value x the other axes'
weights (+ for the pixel past s along axis a), times ds/dg: (size - 1) / 2 or size / 2, zero
where clamping holds s (the borders included), its sign flipped where reflection mirrors it.
At an integer s, where the weights' derivative jumps, it is the derivative from the right, as
torch's (s = floor(s)). "nearest" gives the grid no gradient, as torch's.
"""

import itertools
import math

import numpy as np

from tricycle import checks, dispatch
from tricycle.backend import check_same_device
from tricycle.einsum import einsum
from tricycle.fused import shared_back_fns
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["affine_grid", "grid_sample", "grid_sample_backward", "grid_sample_forward"]

MODES = ("bilinear", "nearest")
PADDING_MODES = ("zeros", "border", "reflection")


# ---------------------------------------------------------------------- affine_grid
def _positions(n: int, align_corners: bool) -> np.ndarray:
    """The ``n`` output positions along an axis in [-1, 1] coordinates (torch's
    ``linspace_from_neg_one``)."""
    if n <= 1:
        return np.zeros(n)
    positions = np.linspace(-1.0, 1.0, n)
    return positions if align_corners else positions * (n - 1) / n


def base_grid(spatial, align_corners: bool) -> np.ndarray:
    """(*spatial, n + 1): each output position as (x, y[, z], 1), x along the last axis."""
    mesh = np.meshgrid(*(_positions(s, align_corners) for s in spatial), indexing="ij")
    return np.stack([*reversed(mesh), np.ones(tuple(spatial))], axis=-1)


def affine_grid(theta, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the affine maps theta (N, 2, 3) for an output of
    ``size`` (N, C, H, W), or (N, D, H, W, 3) of theta (N, 3, 4) for (N, C, D, H, W), as
    ``torch.nn.functional.affine_grid``; ``align_corners`` None is False."""
    op = "F.affine_grid"
    theta = as_tensor(theta)
    check_float(op, theta)
    align = bool(checks.boolean(op, "align_corners", align_corners, optional=True))
    if not isinstance(size, tuple | list) or not all(map(checks.is_integer, size)):
        checks.fail(op, "size", "the output's shape, (N, C, H, W) or (N, C, D, H, W)", size,
                    TypeError)  # fmt: skip
    if len(size) not in (4, 5) or min(size) < 1:
        checks.fail(op, "size", "4 or 5 positive sizes, (N, C, H, W) or (N, C, D, H, W)", size)
    n = len(size) - 2
    if theta.shape != (size[0], n, n + 1):
        raise ValueError(
            f"{op}: expected theta ({size[0]}, {n}, {n + 1}), one {n} x {n + 1} affine matrix "
            f"per batch element of size {tuple(size)}, got shape {theta.shape}"
        )
    base = base_grid(size[2:], align)
    base = Tensor(theta.xp.asarray(base, dtype=theta.dtype), requires_grad=False)
    axes = "dhw"[3 - n :]
    return einsum(f"{axes}k,nik->n{axes}i", base, theta)  # (N, *spatial, n)


# ---------------------------------------------------------------------- source coordinates
def _reflect(xp, s, size: int, align_corners: bool):
    """s mirrored at the borders into [0, size - 1] (align_corners) or [-1/2, size - 1/2],
    and ds'/ds: -1 where the mirrors flip it an odd number of times, else 1 (torch's
    ``reflect_coordinates``)."""
    if align_corners and size <= 1:
        return xp.zeros_like(s), xp.zeros_like(s)
    low, twice_span = (0.0, 2.0 * (size - 1)) if align_corners else (-0.5, 2.0 * size)
    d = s - low
    distance = xp.abs(d)
    extra = distance - xp.trunc(distance / twice_span) * twice_span  # within one period
    mirrored = twice_span - extra
    flip = extra > mirrored
    sign = xp.where(flip ^ (d < 0), -1.0, 1.0).astype(s.dtype)
    return xp.where(flip, mirrored, extra) + low, sign


def source(xp, g, size: int, padding_mode: str, align_corners: bool):
    """(s, ds/dg): the source coordinates, in pixels, of grid values g along an axis of
    ``size`` pixels, after the padding mode's clamping or mirroring."""
    slope = (size - 1) / 2 if align_corners else size / 2
    s = (g + 1) * slope if align_corners else (g + 1) * slope - 0.5
    ds = xp.full_like(s, slope)
    if padding_mode == "reflection":
        s, sign = _reflect(xp, s, size, align_corners)
        ds = ds * sign
    if padding_mode != "zeros":
        ds = ds * ((s > 0) & (s < size - 1))  # a clamped s does not move (borders included)
        s = xp.clip(s, 0, size - 1)
    return s, ds


def _sources(xp, grid, sizes, padding_mode, align_corners):
    """[(s, ds/dg)] per spatial axis ((D,) H, W), each (N, P) for P output positions; the
    grid's last axis lists them the other way round, (x, y[, z])."""
    n = len(sizes)
    g = grid.reshape(grid.shape[0], -1, n)  # (N, P, n)
    return [source(xp, g[..., n - 1 - a], size, padding_mode, align_corners)
            for a, size in enumerate(sizes)]  # fmt: skip


def _corners(xp, s, mode: str):
    """The pixels each output position reads: [(index per axis, weight per axis, offsets)],
    the nearest pixel (weights None), or the 2^n around s (offsets 0 for floor(s), weight
    1 - t, and 1 for floor(s) + 1, weight t, along each axis)."""
    if mode == "nearest":
        return [([xp.rint(sa) for sa in s], None, None)]
    below = [xp.floor(sa) for sa in s]
    t = [sa - f for sa, f in zip(s, below)]
    return [
        ([f + o for f, o in zip(below, offsets)],
         [ta if o else 1 - ta for ta, o in zip(t, offsets)], offsets)
        for offsets in itertools.product((0, 1), repeat=len(s))
    ]  # fmt: skip


def _rows(xp, index, sizes):
    """(rows, inside), each (N, P): the row of each pixel read in the input seen as rows of
    channels (N S, C), and whether it lies inside the input (a pixel outside reads 0)."""
    inside, flat = True, 0
    for i, size in zip(index, sizes):
        within = (i >= 0) & (i <= size - 1)
        inside = inside & within
        flat = flat * size + xp.where(within, i, 0).astype(np.int64)
    n_images = index[0].shape[0]
    return flat + xp.arange(n_images)[:, None] * math.prod(sizes), inside


def _pixels(xp, x):
    """x (N, C, *sizes) as rows of channels (N S, C): pixel p of image n is row n S + p."""
    N, C = x.shape[:2]
    return xp.ascontiguousarray(xp.moveaxis(x.reshape(N, C, -1), 1, 2)).reshape(-1, C)


# ---------------------------------------------------------------------- the op
def grid_sample_forward(xp, x, grid, mode, padding_mode, align_corners):
    """out (N, C, *grid.shape[1:-1]): x (N, C, *sizes) read at the points of grid."""
    N, C, sizes = x.shape[0], x.shape[1], x.shape[2:]
    table = _pixels(xp, x)  # (N S, C)
    s = [sa for sa, _ in _sources(xp, grid, sizes, padding_mode, align_corners)]
    out = 0
    for index, weights, _ in _corners(xp, s, mode):
        rows, inside = _rows(xp, index, sizes)
        value = xp.where(inside[..., None], xp.take(table, rows, axis=0), 0)  # (N, P, C)
        out = out + (value if weights is None else value * math.prod(weights)[..., None])
    out = xp.moveaxis(out, 2, 1)  # (N, C, P)
    return xp.ascontiguousarray(out).reshape((N, C) + grid.shape[1:-1])


def grid_sample_backward(xp, dout, x, grid, mode, padding_mode, align_corners):
    """(dx, dgrid) of ``grid_sample_forward`` for the output's gradient dout."""
    N, C, sizes = x.shape[0], x.shape[1], x.shape[2:]
    n, table = len(sizes), _pixels(xp, x)
    dy = xp.moveaxis(dout.reshape(N, C, -1), 1, 2)  # (N, P, C)
    sources = _sources(xp, grid, sizes, padding_mode, align_corners)
    dtable, ds = xp.zeros_like(table), [xp.zeros_like(s) for s, _ in sources]
    for index, weights, offsets in _corners(xp, [s for s, _ in sources], mode):
        rows, inside = _rows(xp, index, sizes)
        weight = inside if weights is None else math.prod(weights) * inside  # (N, P)
        xp.add.at(dtable, rows.reshape(-1), (dy * weight[..., None]).reshape(-1, C))
        if weights is None:
            continue  # nearest: the grid gets no gradient
        value = xp.where(inside[..., None], xp.take(table, rows, axis=0), 0)
        dweight = (value * dy).sum(axis=-1)  # (N, P): d loss / d this pixel's weight
        for a in range(n):
            others = math.prod(w for b, w in enumerate(weights) if b != a) * dweight
            ds[a] = ds[a] + others if offsets[a] else ds[a] - others
    dx = xp.moveaxis(dtable.reshape(N, -1, C), 2, 1).reshape(x.shape)
    dgrid = xp.stack([ds[a] * sources[a][1] for a in reversed(range(n))], axis=-1)
    return dx, dgrid.reshape(grid.shape)


def grid_sample(
    input,  # noqa: A002 - torch's names
    grid,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """input (N, C, H, W) read at the points of grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo), or
    (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3), as ``torch.nn.functional.grid_sample`` (see
    the module's docstring); ``align_corners`` None is False."""
    op = "F.grid_sample"
    x, grid = as_tensor(input), as_tensor(grid)
    if mode == "bicubic":
        raise ValueError(f"{op}: mode 'bicubic' is not supported; use 'bilinear' or 'nearest'")
    checks.one_of(MODES)(op, "mode", mode)
    checks.one_of(PADDING_MODES)(op, "padding_mode", padding_mode)
    align = bool(checks.boolean(op, "align_corners", align_corners, optional=True))
    check_float(op, x)
    check_float(op, grid)
    n = x.ndim - 2
    if x.ndim not in (4, 5) or 0 in x.shape[1:]:
        raise ValueError(f"{op}: expected a non-empty input (N, C, H, W) or (N, C, D, H, W), "
                         f"got shape {x.shape}")  # fmt: skip
    if grid.ndim != x.ndim or grid.shape[0] != x.shape[0] or grid.shape[-1] != n:
        points = ("Ho, Wo", "Do, Ho, Wo")[n - 2]
        raise ValueError(f"{op}: expected grid ({x.shape[0]}, {points}, {n}) for input "
                         f"{x.shape}, got shape {grid.shape}")  # fmt: skip
    if grid.dtype != x.dtype:
        raise TypeError(f"{op}: input ({x.dtype}) and grid ({grid.dtype}) must have one dtype")
    xp = check_same_device(op, x.array, grid.array)
    forward, backward = dispatch.choose(
        "grid_sample", (grid_sample_forward, grid_sample_backward), x.array, grid.array
    )
    out = forward(xp, x.array, grid.array, mode, padding_mode, align)

    def grads(dout):
        return backward(xp, dout, x.array, grid.array, mode, padding_mode, align)

    return Tensor(out, args=(x, grid), back_fns=shared_back_fns(grads, 2), name="grid_sample")
