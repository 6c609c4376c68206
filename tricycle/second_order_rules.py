"""The differentiable backwards of the ops, for the walk of ``create_graph=True``
(``tricycle.second_order``).

A rule ``rule(node, fn, g) -> Tensor`` gives what the back_fn ``fn`` of ``node`` gives its
input, from the output's gradient ``g`` (a Tensor), written with differentiable ops: it
reads the op's inputs and constants from ``fn``'s closure (``cell``) and the output from
``node``. Rules are keyed by the back_fn's code object, found once, at the first walk that
needs them, by running each op on small tensors and reading the back_fns it made (nothing
runs at import, and the ops keep their code). ``KEYS`` names every key for the test that
checks each rule against torch.
"""

import importlib

import numpy as np

from tricycle.second_order_base import Linear, cell, linear
from tricycle.second_order_base import constant as _constant
from tricycle.second_order_base import summed_to as _summed_to
from tricycle.second_order_more import rules as fused_rules


class Seed:
    """The back_fn of the node that joins several outputs (``tricycle.autograd``): it sends
    output ``i`` its seed, a Tensor (which may itself need gradients)."""

    __slots__ = ("seed",)

    def __init__(self, seed):
        self.seed = seed

    def __call__(self, dout):
        return self.seed.array


def differentiable(node, fn, g):
    """The gradient that ``fn`` (a back_fn of ``node``) gives its input, from ``g`` (a Tensor,
    the gradient of ``node``), as a Tensor recorded in the graph."""
    rule = rule_for(fn)
    if rule is None:
        raise NotImplementedError(
            f"backward with create_graph=True: the second derivative of {node.name or 'an op'} "
            f"(output shape {node.shape}; its back_fn {_name(fn)}) is not implemented; "
            "differentiate it once (create_graph=False) or write it with ops that have one"
        )
    return rule(node, fn, g)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", type(fn).__qualname__)


_RULES: dict = {}
KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def rule_for(fn):
    """The rule of the back_fn ``fn``, or None."""
    if not _RULES:
        _build()
    return _RULES.get(getattr(fn, "__code__", None) or type(fn))


# ------------------------------------------------------------------ shared pieces
def _same(node, fn, g):
    return g


def _expanded(node, x, g, axes, keepdims):
    """The gradient of a reduction over ``axes`` put back on x's shape (broadcast)."""
    shape = list(x.shape)
    for a in axes:
        shape[a] = 1
    g = g if keepdims else g.reshape(tuple(shape))
    small, big, xp = tuple(shape), x.shape, g.xp
    return linear(
        g,
        lambda d: xp.broadcast_to(d, big),
        lambda d: d.sum(axis=axes, keepdims=True).reshape(small),
        "expand",
    )


# ------------------------------------------------------------------ the rules
def _unbroadcasting(node, fn, g):
    inner = cell(fn, "fn")
    return _summed_to(differentiable(node, inner, g), cell(fn, "shape"))


def _pow_a(node, fn, g):
    from tricycle.ops import where

    a, b = cell(fn, "a"), cell(fn, "b")
    zero = _constant(node, a.xp.zeros((), a.dtype))
    return g * where(b.array == 0, zero, b * a ** (b - 1))


def _pow_b(node, fn, g):
    from tricycle.ops import where

    a = cell(fn, "a")
    one = _constant(node, a.xp.ones((), a.dtype))
    return g * node * where(a.array == 0, one, a).log()


def _power(node, fn, g):
    c = cell(fn, "c")
    return g * c * cell(fn, "x") ** (c - 1)


def _masked(mask):
    """A rule for ``dout * mask(fn)`` with a mask that needs no gradient."""

    def rule(node, fn, g):
        m = mask(fn)
        m = m.astype(g.dtype) if hasattr(m, "astype") else m
        return g * _constant(node, m)

    return rule


def _at_least_c(fn):
    return cell(fn, "x").array >= cell(fn, "c")


def _at_most_c(fn):
    return cell(fn, "x").array <= cell(fn, "c")


def _inside(fn):  # clip's: its back_fn of ones is the mask of the interval
    x = cell(fn, "x")
    return fn(x.xp.ones(x.shape, x.dtype))


def _sign(fn):
    x = cell(fn, "x")
    return x.xp.sign(x.array)


def _div_b(node, fn, g):  # d(a / b)/db = -out / b
    return -g * node / cell(fn, "b")


def _sum(node, fn, g):
    return _expanded(node, cell(fn, "x"), g, cell(fn, "axes"), cell(fn, "keepdims"))


def _reshaped_back(node, fn, g):
    return g.reshape(cell(fn, "x").shape)


def _log_of(c) -> float:
    return float(np.log(c))


def _extremum(node, fn, g):
    x, axes = cell(fn, "x"), cell(fn, "axes")
    keepdims = cell(fn, "keepdims")
    out = node.array if keepdims else node.array.reshape(_kept_shape(x.shape, axes))
    hits = (x.array == out).astype(x.dtype)
    share = hits / hits.sum(axis=axes, keepdims=True)
    return _expanded(node, x, g, axes, keepdims) * _constant(node, share)


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _var(node, fn, g):
    x, axes = cell(fn, "x"), cell(fn, "axes")
    centred = x - x.mean(axis=axes, keepdims=True)  # as the closure's, but differentiable
    scale = 2 / (cell(fn, "n") - cell(fn, "ddof"))
    return _expanded(node, x, g, axes, cell(fn, "keepdims")) * centred * scale


def _logsumexp(node, fn, g):
    x, axes, keepdims = cell(fn, "x"), cell(fn, "axes"), cell(fn, "keepdims")
    total = node if keepdims else node.reshape(_kept_shape(x.shape, axes))
    return _expanded(node, x, g, axes, keepdims) * (x - total).exp()


def _scatter(node, fn, g):  # getitem's: the adjoint is the index again
    index = cell(fn, "index")
    return linear(g, fn, lambda d: d[index], "scatter")


def _piece(node, fn, g):  # cat / stack: one piece of the output's gradient
    where, shape, xp = fn.__defaults__[0], node.shape, g.xp

    def place(d):
        out = xp.zeros(shape, d.dtype)
        out[where] = d
        return out

    return linear(g, fn, place, "piece")


def _where(keeps: bool, name: str):
    """where's rule for a (``keeps``: the gradient passes where the condition holds) or b."""

    def rule(node, fn, g):
        condition, xp = cell(fn, "condition"), g.xp

        def mask(d):
            return xp.where(condition, d, 0) if keeps else xp.where(condition, 0, d)

        return _summed_to(linear(g, mask, mask, "where"), cell(fn, name).shape)

    return rule


def _clamp(node, fn, g):
    """clamp's with tensor bounds (``binary.clamp``): the gradient passes where its mask
    holds, summed to its input's shape."""
    passes, xp = cell(fn, "where"), g.xp

    def mask(d):
        return xp.where(passes, d, 0)

    return _summed_to(linear(g, mask, mask, "clamp"), cell(fn, "shape"))


def _share(of_a: bool):
    """maximum's and minimum's rule: the share of the gradient (1, 0.5 on ties, 0)."""

    def rule(node, fn, g):
        share = cell(fn, "share_a")()
        return g * _constant(node, share if of_a else 1 - share)

    return rule


def _matmul(which):
    def rule(node, fn, g):
        from tricycle.ops import swapaxes

        a, b = node.args
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        b2 = b.reshape(-1, 1) if b.ndim == 1 else b
        d = g
        if b.ndim == 1:
            d = d.reshape(*d.shape, 1)
        if a.ndim == 1:
            d = d.reshape(*d.shape[:-2], 1, d.shape[-1])
        if which == 0:
            return _summed_to(d @ swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
        return _summed_to(swapaxes(a2, -1, -2) @ d, b2.shape).reshape(b.shape)

    return rule


def _einsum(node, fn, g):
    from tricycle.einsum import Subscript, einsum

    tensors, i = cell(fn, "tensors"), cell(fn, "i")
    sub = Subscript.parse(node.name[len("einsum ") :]).expand([t.shape for t in tensors])
    parts = list(sub.inputs)
    target = parts[i]
    if any(len(set(p)) != len(p) for p in parts):
        _refuse(node, "an operand repeats an index")
    others = parts[:i] + parts[i + 1 :]
    kept = "".join(c for c in target if c in "".join(others) + sub.output)
    if kept != target:
        _refuse(node, f"operand {i}'s indices {target!r} are summed away alone")
    grad = einsum(
        ",".join(others + [sub.output]) + "->" + target, *tensors[:i], *tensors[i + 1 :], g
    )
    if grad.shape != tensors[i].shape:
        _refuse(node, f"operand {i} of shape {tensors[i].shape} is broadcast")
    return grad


def _refuse(node, why: str):
    raise NotImplementedError(
        f"backward with create_graph=True: the second derivative of {node.name} is not "
        f"implemented where {why}"
    )


def _softmax(node, fn, g):
    if node.name == "log_softmax":
        return g - node.exp() * g.sum(axis=-1, keepdims=True)
    return node * (g - (g * node).sum(axis=-1, keepdims=True))


# ------------------------------------------------------------------ finding the keys
def _build():
    """Run each op once on small tensors and key its rules by the back_fns it made."""
    from tricycle import binary, ops, reduce, unary
    from tricycle.einsum import einsum
    from tricycle.tensor import Tensor

    rng = np.random.default_rng(0)

    def t(*shape):
        return Tensor(rng.uniform(0.5, 1.5, shape).astype(np.float32), requires_grad=True)

    a, b, row = t(2, 3), t(2, 3), t(3)
    pairs = []  # (name, back_fn, rule); a rule is (node, back_fn, gradient) -> Tensor

    def add(name, out, *rules):
        for i, (fn, rule) in enumerate(zip(out.back_fns, rules)):
            if rule is not None:
                pairs.append((name if len(rules) == 1 else f"{name}[{i}]", fn, rule))

    add("add", binary.add(a, b), _same, _same)
    add("sub", binary.sub(a, b), None, lambda n, f, g: -g)
    add("unbroadcast", binary.add(a, row), None, _unbroadcasting)
    add("mul", binary.mul(a, b), lambda n, f, g: g * cell(f, "b"), lambda n, f, g: g * cell(f, "a"))
    add("div", binary.div(a, b), lambda n, f, g: g / cell(f, "b"), _div_b)
    add("pow", binary.pow(a, b), _pow_a, _pow_b)
    add("matmul", binary.matmul(a, t(3, 2)), _matmul(0), _matmul(1))
    add("maximum", binary.maximum(a, b), _share(True), _share(False))
    add("minimum", binary.minimum(a, b), _share(True), _share(False))
    add("clamp", binary.clamp(a, row, b), _clamp, _clamp, _clamp)
    add("add_scalar", unary.add_scalar(a, 1.0), _same)
    add("sub_scalar", unary.sub_scalar(a, 1.0), _same)
    add("rsub_scalar", unary.rsub_scalar(a, 1.0), lambda n, f, g: -g)
    add("mul_scalar", unary.mul_scalar(a, 2.0), lambda n, f, g: g * cell(f, "c"))
    add("div_scalar", unary.div_scalar(a, 2.0), lambda n, f, g: g / cell(f, "c"))
    add("rdiv_scalar", unary.rdiv_scalar(a, 2.0), lambda n, f, g: -g * n / cell(f, "x"))
    add("pow_0", unary.pow_scalar(a, 0), lambda n, f, g: g * 0)
    add("pow_2", unary.pow_scalar(a, 2), lambda n, f, g: g * 2 * cell(f, "x"))
    add("pow_c", unary.pow_scalar(a, 1.5), _power)
    add("rpow_scalar", unary.rpow_scalar(a, 2.0), lambda n, f, g: g * n * _log_of(cell(f, "c")))
    add("maximum_scalar", unary.maximum_scalar(a, 1.0), _masked(_at_least_c))
    add("minimum_scalar", unary.minimum_scalar(a, 1.0), _masked(_at_most_c))
    add("clip", unary.clip(a, 0.9, 1.1), _masked(_inside))
    add("neg", unary.neg(a), lambda n, f, g: -g)
    add("exp", unary.exp(a), lambda n, f, g: g * n)
    add("log", unary.log(a), lambda n, f, g: g / cell(f, "x"))
    add("sqrt", unary.sqrt(a), lambda n, f, g: g * 0.5 / n)
    add("abs", unary.abs(a), _masked(_sign))
    add("sin", unary.sin(a), lambda n, f, g: g * cell(f, "x").cos())
    add("cos", unary.cos(a), lambda n, f, g: -g * cell(f, "x").sin())
    add("tanh", unary.tanh(a), lambda n, f, g: g * (1 - n * n))
    add("sigmoid", unary.sigmoid(a), lambda n, f, g: g * n * (1 - n))
    add("sum", reduce.sum(a, 1), _sum)
    add("mean", reduce.mean(a, 1), lambda n, f, g: _sum(n, f, g) / cell(f, "n"))
    add("max", reduce.max(a, 1), _extremum)
    add("min", reduce.min(a, 1), _extremum)
    add("var", reduce.var(a, 1), _var)
    add("logsumexp", reduce.logsumexp(a, 1), _logsumexp)
    add("reshape", ops.reshape(a, (3, 2)), _reshaped_back)
    add("expand_dims", ops.expand_dims(a, 0), _reshaped_back)
    add("squeeze", ops.squeeze(ops.expand_dims(a, 0), 0), _reshaped_back)
    add("permute", ops.permute(a, 1, 0), lambda n, f, g: g.permute(*cell(f, "inverse")))
    add("getitem", ops.getitem(a, 1), _scatter)
    add("concatenate", ops.concatenate([a, b]), _piece)
    add("where", ops.where(a.array > 1, a, b), _where(True, "a"), _where(False, "b"))
    add("cast", a._cast("cast", np.float64), lambda n, f, g: g._cast("cast", cell(f, "source")))
    add("einsum", einsum("ij,jk->ik", a, t(3, 2)), _einsum, _einsum)
    _math_layer(add, a)
    rules = {Linear: lambda n, f, g: linear(g, f.apply, f.adjoint), Seed: lambda n, f, g: f.seed}
    rules.update(fused_rules())  # the fused ops' (conv, GeLU, ...): tricycle.second_order_more
    for name, fn, rule in pairs:
        KEYS[name] = getattr(fn, "__code__", None) or type(fn)
        rules[KEYS[name]] = rule
    _RULES.update(rules)  # at once: another thread sees all of them or none


def _math_layer(add, a):
    """The rules of ops of the math layer (softmax, ReLU, LeakyReLU): loaded by name, as the
    engine sits below it."""
    functions = importlib.import_module("tricycle.functions")
    activation = importlib.import_module("tricycle.activation")
    add("softmax", functions.Softmax()(a), _softmax)
    add("relu", activation.ReLU()(a), _masked(lambda f: cell(f, "x").array > 0))
    add("leaky_relu", activation.LeakyReLU(0.2)(a), _masked(lambda f: cell(f, "slopes")))
