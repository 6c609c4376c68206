"""Double backward of the losses built on ``loss_reduction.reduced`` (``create_graph=True``:
``tricycle.second_order``): L1, smooth L1, Huber, binary cross-entropy (of probabilities and
of logits), KL divergence, the negative log-likelihood, soft margin, hinge embedding, margin
ranking, cosine embedding, and the Poisson and Gaussian negative log-likelihoods.

Such a loss computes one loss per element (per row for NLL) and, for each input, its slope:
the derivative of each element's loss. Its back_fns (one code object, ``reduced``'s) send an
input the output's gradient, scaled by the reduction, times that slope. The rule here writes
the slope again as a Tensor of the loss's inputs with differentiable ops (``SLOPES``, by the
loss's node name), so that the gradient's own derivative reaches them: the reduction is read
from the back_fn's closure, the loss's constants (Huber's delta, a pos_weight) from the
defaults its slope function keeps. A loss of ``reduced`` with no slope here raises
NotImplementedError naming it (CTC's is refused before: torch refuses it too).
"""

import importlib

import numpy as np

from tricycle.second_order_base import cell, constant, summed_to

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _reduced(node, fn, g):
    """The gradient ``fn`` (a back_fn of ``reduced``'s node) gives its input, from ``g``."""
    slope_of = SLOPES.get(node.name)
    if slope_of is None:
        raise NotImplementedError(
            f"backward with create_graph=True: the second derivative of the loss {node.name} "
            f"(output shape {node.shape}) is not implemented; differentiate it once "
            "(create_graph=False) or write it with ops that have one"
        )
    i = next(k for k, f in enumerate(node.back_fns) if f is fn)
    scale = cell(cell(fn, "dlosses"), "scale")  # None for "sum" and "none"
    dlosses = g if scale is None else g * constant(g, scale)
    return slope_of(node, fn.__defaults__[0], i, dlosses)


def _difference(node):
    prediction, target = node.args
    return prediction - target


def _constants(node):
    """What the loss's first slope function keeps as defaults (its constants)."""
    return node.back_fns[0].__defaults__[0].__defaults__ or (None,)


def _l1(node, local, i, dl):
    slope = constant(node, cell(local, "slope"))
    return dl * slope if i == 0 else -(dl * slope)


def _smooth(node, local, i, dl):
    """Smooth L1 (beta): d / beta where |d| < beta, else sign(d); Huber (delta): d where
    |d| < delta, else delta sign(d)."""
    from tricycle.ops import where

    (forward,) = _constants(node)
    d = _difference(node)
    size, sign = abs(d.array), d.xp.sign(d.array)
    if node.name == "huber":
        delta = cell(forward, "delta")
        slope = where(size < delta, d, constant(node, sign * delta))
    elif cell(forward, "beta") == 0:
        slope = constant(node, sign)
    else:
        beta = cell(forward, "beta")
        slope = where(size < beta, d / beta, constant(node, sign))
    return dl * slope if i == 0 else -(dl * slope)


def _softplus(z):
    """log(1 + e^z) = max(z, 0) + log(1 + e^-|z|), differentiable."""
    from tricycle import unary

    return unary.maximum_scalar(z, 0.0) + ((-z.abs()).exp() + 1).log()


def _bce_with_logits(node, local, i, dl):
    """dz = (1 - y) s(z) - p y (1 - s(z)); dy = p (softplus(z) - z) - softplus(z)."""
    z, y = node.args
    (p,) = _constants(node)
    py = y if p is None else y * constant(node, p)
    if i == 0:
        s = z.sigmoid()
        return dl * ((1 - y) * s - py * (1 - s))
    softplus = _softplus(z)
    pos = softplus - z
    return dl * ((pos if p is None else pos * constant(node, p)) - softplus)


def _bce(node, local, i, dl):
    """torch's: dx = w (x - y) / max(x (1 - x), floor); dy = w (log(1 - x) - log x), the
    logs clamped at -100."""
    from tricycle.ops import where

    more_losses = importlib.import_module("tricycle.nn.more_losses")
    x, y = node.args
    (w,) = _constants(node)
    a, xp = x.array, x.xp
    if i == 0:
        spread = a * (1 - a)
        floor = constant(node, xp.asarray(more_losses.SLOPE_FLOOR, a.dtype))
        slope = (x - y) / where(spread > more_losses.SLOPE_FLOOR, x * (1 - x), floor)
    else:  # a log is clamped where its argument is below e^-100
        tiny = float(np.exp(more_losses.LOG_FLOOR))
        floor = constant(node, xp.asarray(more_losses.LOG_FLOOR, a.dtype))
        one = constant(node, xp.ones((), a.dtype))
        log_x = where(a > tiny, where(a > tiny, x, one).log(), floor)
        log_not_x = where(1 - a > tiny, where(1 - a > tiny, 1 - x, one).log(), floor)
        slope = log_not_x - log_x
    return dl * (slope if w is None else slope * constant(node, w))


def _kl_div(node, local, i, dl):
    """log_target: -e^t and e^t (t - log q + 1); else -t and log t + 1 - log q (0 at t = 0)."""
    from tricycle.ops import where

    log_q, t = node.args
    (log_target,) = _constants(node)
    if log_target:
        p = t.exp()
        return dl * (-p if i == 0 else p * (t - log_q + 1))
    if i == 0:
        return dl * -t
    positive, one = t.array > 0, constant(node, t.xp.ones((), t.dtype))
    zero = constant(node, t.xp.zeros((), t.dtype))
    return dl * where(positive, where(positive, t, one).log() + 1 - log_q, zero)


def _nll(node, local, i, dl):
    """-dl at each label (0 on ignored rows): linear in dl, its coefficient a constant."""
    log_probs, rows = cell(local, "log_probs"), cell(local, "rows")
    safe, valid, labels = cell(local, "safe"), cell(local, "valid"), cell(local, "labels")
    picked = node.xp.zeros_like(log_probs)
    picked[rows, safe] = -valid
    per_row = dl if dl.ndim == 0 else dl.reshape(*labels.shape, 1)
    return per_row * constant(node, picked.reshape(*labels.shape, log_probs.shape[-1]))


def _hinge_embedding(node, local, i, dl):
    """Constant between kinks (second derivative 0): dl times the slope the loss computed,
    read as ``local`` of ones."""
    x = node.args[i]
    return dl * constant(node, local(x.xp.ones(x.shape, x.dtype)))


def _margin_ranking(node, local, i, dl):
    """Where the hinge is active: -y for x1, y for x2, x2 - x1 for the target y."""
    x1, x2, y = node.args
    active = constant(node, cell(local, "active"))
    return dl * active * (-y if i == 0 else y if i == 1 else x2 - x1)


def _soft_margin(node, local, i, dl):
    """-y sigmoid(-y x), y = +-1 read back as the sign of the slope the loss computed."""
    x = node.args[0]
    minus_y = constant(node, x.xp.sign(cell(local, "slopes")))
    return dl * minus_y * (x * minus_y).sigmoid()


def _poisson_nll(node, local, i, dl):
    """log_input: dx = e^x - y, dy = -x; else dx = 1 - y / (x + eps), dy = -log(x + eps);
    with ``full``, dy adds log y + 1 / (2 y) where y > 1."""
    from tricycle.ops import where

    x, y = node.args
    ((log_input, full, eps),) = _constants(node)
    if i == 0:
        return dl * (x.exp() - y if log_input else 1 - y / (x + eps))
    slope = -x if log_input else -(x + eps).log()
    if full:
        many, xp = y.array > 1, y.xp
        safe = where(many, y, constant(node, xp.ones((), y.dtype)))
        slope = slope + where(many, safe.log() + 0.5 / safe, constant(node, xp.zeros((), y.dtype)))
    return dl * slope


def _gaussian_nll(node, local, i, dl):
    """With v floored at eps (the gradient passing through the floor, as the loss's): dx =
    (x - y) / v = -dy, dv = (1 - (x - y)^2 / v) / (2 v), each summed back to its input."""
    x, y, v = node.args
    (eps,) = _constants(node)
    row = v.ndim and v.shape == x.shape[:-1]  # one variance a row
    wide = v.reshape(*v.shape, 1) if row else v
    floor = wide.xp.maximum(wide.array, eps) - wide.array
    floored = wide + constant(node, floor.astype(x.dtype, copy=False))
    diff = x - y
    scaled = diff / floored
    if i == 0:
        return dl * scaled
    if i == 1:
        return summed_to(-(dl * scaled), y.shape)
    dv = (1 - diff * scaled) / floored * 0.5
    return summed_to(dl * dv, wide.shape).reshape(v.shape)


def _cosine_embedding(node, local, i, dl):
    """dl dloss/dcos (a constant: -1, 0 or 1) times dcos/du = v r - cos u / |u|^2 per row, r =
    1 / sqrt((|u|^2 + EPS) (|v|^2 + EPS)), u the input, v the other."""
    x1, x2 = node.args
    eps = importlib.import_module("tricycle.criteria").CosineEmbedding.EPS
    a, b = ((t * t).sum(axis=-1, keepdims=True) + eps for t in (x1, x2))
    rsqrt = (a * b) ** -0.5
    cos = (x1 * x2).sum(axis=-1, keepdims=True) * rsqrt
    u, v, n = (x1, x2, a) if i == 0 else (x2, x1, b)
    per_row = dl * constant(node, cell(local, "dcos"))
    return per_row.reshape(*per_row.shape, 1) * (v * rsqrt - cos / n * u)


SLOPES = {
    "l1": _l1,
    "smooth_l1": _smooth,
    "huber": _smooth,
    "bce_with_logits": _bce_with_logits,
    "binary_cross_entropy": _bce,
    "kl_div": _kl_div,
    "nll": _nll,
    "hinge_embedding": _hinge_embedding,
    "margin_ranking": _margin_ranking,
    "soft_margin": _soft_margin,
    "poisson_nll": _poisson_nll,
    "gaussian_nll": _gaussian_nll,
    "cosine_embedding": _cosine_embedding,
}


def rules(t) -> dict:
    """{code of ``reduced``'s back_fn: rule}, found by running one loss on small tensors
    made by ``t(*shape)``."""
    criteria = importlib.import_module("tricycle.criteria")
    out = criteria.L1()(t(2, 3), t(2, 3))
    KEYS["reduced"] = key = out.back_fns[0].__code__
    return {key: _reduced}
