"""Double backward of ``scatter_reduce`` and ``torch_put.index_put`` (``create_graph=True``:
``tricycle.second_order``).

scatter_reduce's sum, mean, amax and amin give each contributor (the input's own value where
it takes part, then src's) the output's gradient at its target times a fixed coefficient (1,
a mean's 1 / count, a tie's even share: constants, as torch's): a linear map recorded as one
node (``second_order_base.linear``) whose own back_fn is its adjoint, which adds the
coefficients times the gradient back at the targets. prod's coefficients (the product of the
others) depend on the values: it is rebuilt from its inputs with differentiable ops and
walked (``second_order_fused.plain_rule``), zeros and all (where torch refuses two zeros of
src in one group, this gives the derivative). index_put's gradients are linear too: the
input's is the output's, zeroed where written unless accumulating (a fixed mask, its own
adjoint); the values' is the output's read at the written places and summed to their shape,
whose adjoint broadcasts and adds back there (a place written twice gets both). The ops sit
in the math layer, above this engine module: they are loaded by name when the table is built.
"""

import importlib

from tricycle import second_order_fused
from tricycle.second_order_base import cell, constant, linear

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _scatter_reduced(node, fn, g):
    """scatter_reduce's sum, mean, amax and amin (as torch's: a tie's share and a mean's
    1 / count are constants): each contributor's gradient is g at its target times a fixed
    coefficient, a linear map whose adjoint adds the coefficients times the gradient back at
    the targets. prod's coefficients depend on the values: it is rebuilt (``_scatter_prod``)."""
    if fn.reduce == "prod":
        return second_order_fused.plain_rule(_scatter_prod)(node, fn, g)
    t, d_dv, n, xp = cell(fn, "t"), cell(fn, "d_dv"), cell(fn, "t_self").size, g.xp
    of_x = fn is node.back_fns[0]
    written = None if of_x else cell(fn, "written")
    mine = slice(None, n) if of_x else slice(n, None)  # this input's contributors

    def back(d):
        out = xp.zeros(node.size, d.dtype)
        xp.add.at(
            out, t[mine], d_dv[mine] * (d.reshape(-1)[t[:n]] if of_x else d[written].reshape(-1))
        )
        return out.reshape(node.shape)

    return linear(g, fn, back, "scatter_reduce")


def _scatter_prod(node, fn):
    """scatter_reduce's prod: each target's contributors (the input's own value where it
    takes part, then src's) multiplied one rank of each group at a time, each rank a
    differentiable pick from the contributors (a padding 1 where a group has none of it)."""
    ops = importlib.import_module("tricycle.ops")
    (x, src), (dx, dsrc) = node.args, node.back_fns
    t, t_self, written, xp = cell(dx, "t"), cell(dx, "t_self"), cell(dsrc, "written"), node.xp
    order = xp.argsort(t, kind="stable")
    rank = xp.arange(t.size) - xp.searchsorted(t[order], t[order], side="left")
    picks = []
    for r in range(int(rank.max()) + 1 if t.size else 0):
        these = order[rank == r]
        pick = xp.full(node.size, t.size)  # the padding 1 after the contributors
        pick[t[these]] = these
        picks.append(pick)
    one = constant(node, xp.ones(1, node.dtype))

    def build(p):
        v = [p(x).reshape(-1)[t_self], p(src)[written].reshape(-1), one]
        contributors, out = ops.concatenate(v), constant(node, xp.ones(node.size, node.dtype))
        for pick in picks:
            out = out * contributors[pick]
        return out.reshape(node.shape)

    return build


def _index_put_input(node, fn, g):
    """torch_put.index_put's input gradient: g itself when accumulating, else g zeroed where
    written (a fixed mask, its own adjoint)."""
    return g if cell(fn, "accumulate") else linear(g, fn, fn, "index_put")


def _index_put_values(node, fn, g):
    """index_put's values gradient: g read at the written places, summed to values' shape;
    the adjoint broadcasts back and adds into the places (a place written twice gets both)."""
    at, xp, shape = cell(fn, "at"), g.xp, node.shape
    target = node.array[at].shape

    def place(d):
        out = xp.zeros(shape, d.dtype)
        xp.add.at(out, at, xp.broadcast_to(d, target))
        return out

    return linear(g, fn, place, "index_put")


def rules(t) -> dict:
    """{code of an op's back_fn: rule}, each op run once on small tensors made by
    ``t(*shape)``."""
    scatter = importlib.import_module("tricycle.torch_scatter")
    put = importlib.import_module("tricycle.torch_put")
    x = t(2, 3)
    at = x.xp.asarray([[0, 1], [1, 0]])
    reduced = scatter.scatter_reduce(x, 1, at, t(2, 2), "sum")
    written = put.index_put(x, (constant(x, at[0]),), t(3), accumulate=True)
    made = {
        "scatter_reduce": (reduced, 0, _scatter_reduced),
        "scatter_reduce[1]": (reduced, 1, _scatter_reduced),
        "index_put": (written, 0, _index_put_input),
        "index_put[1]": (written, 1, _index_put_values),
    }
    table = {}
    for name, (out, i, rule) in made.items():
        KEYS[name] = key = out.back_fns[i].__code__
        table[key] = rule
    return table
