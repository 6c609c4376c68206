"""Double backward of ops whose backward is linear in the gradient with constant
coefficients (``create_graph=True``: ``tricycle.second_order``): a running sum, a sort, an
embedding's lookup, an average or adaptive max pool, dropout.

Each op's back_fn is a fixed linear map A^T of the output's gradient (a scatter, a window
sum, a mask), so its rule records it as one node (``second_order_base.linear``) whose own
back_fn is A, the op's forward on an array (a gather, a window mean): both are linear again,
so every order of derivative goes through them. The ops sit in the math layer, above this
engine module: they are loaded by name when the table is built.
"""

import importlib

from tricycle.second_order_base import cell, linear

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _cumsum(node, fn, g):
    """dx = the running sum of g from the end; its adjoint is the running sum itself."""
    axis, xp, shape = cell(fn, "axis"), g.xp, node.shape
    return linear(g, fn, lambda d: xp.cumsum(d.reshape(shape), axis=axis), "cumsum")


def _sort(node, fn, g):
    """dx = g put back where each value came from; the adjoint takes them in sorted order."""
    ids, axis, xp = cell(fn, "ids"), cell(fn, "axis"), g.xp
    return linear(g, fn, lambda d: xp.take_along_axis(d, ids, axis=axis), "sort")


def _embedding(node, fn, g):
    """dW = g's rows added into the rows picked (none into the padding row); the adjoint is
    the lookup of those rows (the padding row read as zeros)."""
    ids, padding_idx = cell(fn, "ids"), cell(fn, "padding_idx")

    def lookup(d):
        if padding_idx is not None:
            d = d.copy()
            d[padding_idx] = 0
        return d[ids]

    return linear(g, fn, lookup, "embedding")


def _avg_pool(node, fn, g):
    """dx = each window's gradient shared among its elements; the adjoint is the pool."""
    pooling = importlib.import_module("tricycle.nn.pooling")
    kernel, stride, padding = cell(fn, "kernel"), cell(fn, "stride"), cell(fn, "padding")
    count_include_pad, xp = cell(fn, "count_include_pad"), g.xp
    divisor = getattr(cell(fn, "backward"), "keywords", {}).get("divisor")
    x_shape = cell(fn, "x").shape
    # ceil_mode is the one whose output has the node's shape (it only adds windows)
    ceil_mode = pooling.pooled_size(
        x_shape[2:], kernel, stride, padding, (1,) * len(kernel), False, "avg_pool"
    ) != tuple(node.shape[2:])

    def pool(d):
        return pooling.avg_pool_forward(
            xp, d, kernel, stride, padding, count_include_pad, ceil_mode, divisor
        )

    return linear(g, fn, pool, "avg_pool")


def _picked(node, fn, g):
    """An adaptive max pool's dx adds g into the entries picked; the adjoint picks them."""
    planes, index, rows, out_shape = (
        cell(fn, "planes"),
        cell(fn, "index"),
        cell(fn, "rows"),
        node.shape,
    )

    def pick(d):
        return d.reshape(planes.shape)[rows, index].reshape(out_shape)

    return linear(g, fn, pick, "adaptive_max_pool")


def _self_adjoint(node, fn, g):
    """A back_fn that multiplies by a fixed mask (dropout's) is its own adjoint."""
    return linear(g, fn, fn, "mask")


def rules(t) -> dict:
    """{code of the op's back_fn: rule}, every op run once on small tensors made by
    ``t(*shape)``."""
    reduce = importlib.import_module("tricycle.reduce")
    ops = importlib.import_module("tricycle.ops")
    layers = importlib.import_module("tricycle.layers")
    pooling = importlib.import_module("tricycle.nn.pooling")
    adaptive = importlib.import_module("tricycle.nn.adaptive_max_pooling")
    x = t(1, 1, 4, 4)
    ids = x.xp.asarray([0, 1])
    made = {
        "cumsum": (reduce.cumsum(t(2, 3), 1), _cumsum),
        "sort": (ops.sort(t(2, 3), 1), _sort),
        "embedding": (layers.embedding(ids, t(2, 3)), _embedding),
        "avg_pool": (pooling.avg_pool(x, 2), _avg_pool),
        "adaptive_max_pool": (adaptive.adaptive_max_pool2d(x, 2), _picked),
        "dropout": (layers.dropout(t(2, 3), 0.5), _self_adjoint),
    }
    table = {}
    for name, (out, rule) in made.items():
        KEYS[name] = key = out.back_fns[0].__code__
        table[key] = rule
    return table
