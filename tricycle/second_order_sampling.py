"""Double backward of ``F.grid_sample`` (``create_graph=True``: ``tricycle.second_order``).

grid_sample is a fused op (``tricycle.nn.grid_sample``): one node whose backward scatters
arrays. Its rule rebuilds the output from the input x and the grid with differentiable ops
and walks that (``second_order_fused.gradients``), so every order goes through it:

- the source coordinate s of each grid value g, along each axis, is piecewise linear in g:
  s = ds (g - g0) + s0, with s0 and its slope ds = ds/dg the op's own (``source``: the
  scale from [-1, 1] to pixels, reflection's sign, 0 where clamping holds s), taken as
  constants at the grid's value g0. Its value is the op's and its derivative the op's
  first one; its second is 0, as it is (the pieces are straight);
- bilinear: along each axis t = s - floor(s) (the floor constant: the derivative from the
  right at an integer s, as the op's), the weights 1 - t and t, a corner's weight their
  product over the axes; nearest: the pixel at round(s), of weight 1, so the grid has no
  gradient, as torch's;
- each corner's pixels are gathered from x seen as rows of channels (N S, C) (a
  differentiable index, its adjoint the scatter), 0 where the corner lies outside.

The corners, rows and coordinates are ``tricycle.nn.grid_sample``'s own helpers: the rule
adds only the Tensors. The op sits in the math layer, above this engine module: it is
loaded by name when the table is built.
"""

import importlib
import math

from tricycle import second_order_fused
from tricycle.second_order_base import cell, constant

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _module():
    return importlib.import_module("tricycle.nn.grid_sample")


def _sources(grid, sizes, padding_mode: str, align_corners: bool) -> list:
    """[s per spatial axis ((D,) H, W)], each a Tensor (N, P) of the grid (N, ..., n): the op's
    coordinates, piecewise linear in the grid (see the module)."""
    n, xp = len(sizes), grid.xp
    g = grid.reshape(grid.shape[0], -1, n)  # (N, P, n): (x, y[, z]), the axes reversed
    coordinates = []
    for a, size in enumerate(sizes):
        ga = g[..., n - 1 - a]  # (N, P)
        s0, ds = _module().source(xp, ga.array, size, padding_mode, align_corners)
        offset = s0 - ds * ga.array  # s = ds g + (s0 - ds g0)
        coordinates.append(ga * constant(grid, ds) + constant(grid, offset))
    return coordinates


def _grid_sample(node, backward):
    """The op rebuilt from x (N, C, *sizes) and the grid (N, *out, n)."""
    from tricycle.ops import where

    sampling = _module()
    x, grid = node.args
    mode, padding_mode = cell(backward, "mode"), cell(backward, "padding_mode")
    align_corners, xp = cell(backward, "align"), node.xp
    (N, C), sizes = x.shape[:2], x.shape[2:]

    def build(p):
        table = p(x).reshape(N, C, -1).permute(0, 2, 1).reshape(-1, C)  # (N S, C)
        s = _sources(p(grid), sizes, padding_mode, align_corners)
        t = [sa - constant(sa, xp.floor(sa.array)) for sa in s]  # (N, P) each
        zero, out = constant(node, xp.zeros((), node.dtype)), None
        for index, weights, offsets in sampling._corners(xp, [sa.array for sa in s], mode):
            rows, inside = sampling._rows(xp, index, sizes)  # (N, P) each
            value = where(inside[..., None], table[rows], zero)  # (N, P, C)
            if weights is not None:
                weight = math.prod(ta if o else 1 - ta for ta, o in zip(t, offsets))
                value = value * weight.unsqueeze(-1)
            out = value if out is None else out + value
        return out.permute(0, 2, 1).reshape(node.shape)  # (N, C, *out)

    return build


def rules(t) -> dict:
    """{code of grid_sample's shared backward: rule} for ``second_order_more.FUSED``, the op
    run once on small tensors made by ``t(*shape)``."""
    out = _module().grid_sample(t(1, 1, 2, 2), t(1, 1, 1, 2) - 1)
    KEYS["grid_sample"] = key = cell(out.back_fns[0], "backward").__code__
    return {key: second_order_fused.fused_rule(_grid_sample)}
