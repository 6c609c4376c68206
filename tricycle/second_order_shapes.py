"""Double backward of the remaining ops that move, mask or pick entries, and of three small
ops rebuilt from their inputs (``create_graph=True``: ``tricycle.second_order``).

A masked fill, an expand, a repeat, a scatter and a running extreme have backwards linear in
the gradient with constant coefficients: each rule records the back_fn as one node
(``second_order_base.linear``) whose own back_fn is the op's forward on an array, its adjoint.
``logcumsumexp``, ``cosine_similarity`` and ``prelu`` are rebuilt from their inputs with
differentiable ops and walked (``second_order_fused.gradients``). The ops sit in the math
layer, above this engine module: they are loaded by name when the table is built.
"""

import importlib

from tricycle import second_order_fused
from tricycle.second_order_base import cell, constant, linear, summed_to
from tricycle.second_order_linear import _self_adjoint

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _masked_fill(node, fn, g):
    """dx = g zeroed under the mask, summed back to x's shape; the adjoint broadcasts."""
    mask, xp, shape = cell(fn, "mask"), g.xp, node.shape
    return linear(g, fn, lambda d: xp.where(mask, 0, xp.broadcast_to(d, shape)), "masked_fill")


def _expand(node, fn, g):
    """dx = g summed back to x's shape; the adjoint broadcasts."""
    return summed_to(g, cell(fn, "shape"))


def _repeat(node, fn, g):
    """dx = g's repeats summed; the adjoint repeats each entry again."""
    repeats, axis, xp = cell(fn, "repeats"), cell(fn, "axis"), g.xp
    flat = len(cell(fn, "source")) == 1 and node.args[0].ndim != 1

    def again(d):
        return xp.repeat(d.reshape(-1) if flat else d, repeats, axis=axis)

    return linear(g, fn, again, "repeat")


def _scatter_source(node, fn, g):
    """dsrc = g read at the places src was written to; the adjoint adds it back there."""
    at, written, src, xp, shape = (
        cell(fn, "at"),
        cell(fn, "written"),
        cell(fn, "src"),
        g.xp,
        node.shape,
    )

    def place(d):
        out = xp.zeros(shape, d.dtype)
        xp.add.at(out, at, d[written] if src.ndim else d)
        return out

    return linear(g, fn, place, "scatter")


def _running(node, fn, g):
    """cummax/cummin: dx adds g into the entries that set each value; the adjoint reads them."""
    indices, axis, xp = cell(fn, "indices"), cell(fn, "axis"), g.xp
    return linear(g, fn, lambda d: xp.take_along_axis(d, indices, axis=axis), "running")


def _logcumsumexp(node, fn):
    """log(cumsum(exp(x - m))) + m, m the constant largest x along the axis."""
    reduce = importlib.import_module("tricycle.reduce")
    x, axis = node.args[0], cell(fn, "axis")
    top = constant(node, x.array.max(axis=axis, keepdims=True))

    def build(p):
        return reduce.cumsum((p(x) - top).exp(), axis).log() + top

    return build


def _cosine_similarity(node, fn):
    """sum(u v) along the axis, u and v the inputs over their norms floored at eps."""
    unary = importlib.import_module("tricycle.unary")
    x1, x2 = node.args
    axis, eps = cell(fn, "axis"), _eps(fn)

    def build(p):
        def unit(x):
            return x / unary.maximum_scalar((x * x).sum(axis=axis, keepdims=True).sqrt(), eps)

        return (unit(p(x1)) * unit(p(x2))).sum(axis=axis)

    return build


def _eps(fn):
    """The eps a cosine's norms were floored at, read where the floor held (any floor at or
    below the norms where it held none: the rebuilt values and derivatives are the same)."""
    norm, free = cell(fn, "norm"), cell(fn, "free")
    below = norm[~free]
    return float(below.reshape(-1)[0]) if below.size else 0.0


def _prelu(node, fn):
    """x where x > 0, else w x (w one number or one per channel on axis 1)."""
    from tricycle.ops import where

    x, w = node.args
    positive = cell(fn, "positive")
    shape = () if w.size == 1 else (w.size,) + (1,) * (x.ndim - 2)

    def build(p):
        xs = p(x)
        return where(positive, xs, p(w).reshape(shape) * xs)

    return build


def rules(t) -> dict:
    """{code of an op's back_fn: rule}, every op run once on small tensors made by
    ``t(*shape)``."""
    ops = importlib.import_module("tricycle.ops")
    indexing = importlib.import_module("tricycle.indexing")
    statistics = importlib.import_module("tricycle.torch_statistics")
    more_losses = importlib.import_module("tricycle.nn.more_losses")
    activations = importlib.import_module("tricycle.nn.activations")
    rebuilt = second_order_fused.plain_rule  # (the op rebuilt from its inputs and walked)
    x = t(2, 3)
    at = x.xp.asarray([[0, 1], [1, 0]])
    mask = x.array > 1
    made = {
        "masked_fill": (ops.masked_fill(x, mask, 0.0), 0, _masked_fill),
        "expand": (x.expand(2, 2, 3), 0, _expand),
        "repeat": (ops.repeat(x, 2, 0), 0, _repeat),
        "scatter": (indexing._scatter("scatter", x, 1, at, t(2, 2), False), 0, _self_adjoint),
        "scatter[1]": (indexing._scatter("scatter", x, 1, at, t(2, 2), False), 1, _scatter_source),
        "cummax": (statistics.cummax(x, 1).values, 0, _running),
        "logcumsumexp": (statistics.logcumsumexp(x, 1), 0, rebuilt(_logcumsumexp)),
        "prelu": (activations.prelu(x, t(1)), 0, rebuilt(_prelu)),
        "prelu[1]": (activations.prelu(x, t(1)), 1, rebuilt(_prelu)),
    }
    cosine = more_losses.cosine_similarity(x, t(2, 3))
    made["cosine_similarity"] = (cosine, 0, rebuilt(_cosine_similarity))
    table = {}
    for name, (out, i, rule) in made.items():
        KEYS[name] = key = out.back_fns[i].__code__
        table[key] = rule
    return table
