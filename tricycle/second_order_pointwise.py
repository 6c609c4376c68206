"""Double backward of elementwise ops and norms whose slopes are array formulas
(``create_graph=True``: ``tricycle.second_order``).

An elementwise op of one input sends its input ``dout * slope(x)``, the slope computed from
arrays. Its rule writes the slope again as a Tensor of the input (and of the output, the op's
node, where the slope is written with it: tan's is 1 + y^2) with differentiable ops, so that
the gradient's own derivative reaches the input. Ops made by one factory share one back_fn
code object (``torch_pointwise.of_one``'s, ``trigonometry._op``'s, ...) and are told apart by
their node's name (``ONE``, ``TWO``, then ``second_order_special``'s); a name with no
slope raises NotImplementedError.
A back_fn that only multiplies by a fixed mask (hardtanh, a shrink, a step function) is
linear, its own adjoint (``second_order_linear``'s dropout rule). The ops sit in the math
layer, above this engine module: they are loaded by name when the table is built.
"""

import importlib
import math

from tricycle.second_order_base import cell, constant, summed_to
from tricycle.second_order_linear import _self_adjoint
from tricycle.second_order_special import ONE as SPECIAL_ONE
from tricycle.second_order_special import TWO as SPECIAL_TWO

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)
_SQRT_PI = math.sqrt(math.pi)


def _special(name: str):
    return getattr(importlib.import_module("tricycle.torch_special"), name)


def _polygamma_slope(x, y, fn):
    """polygamma(n, x)' = polygamma(n + 1, x): n read from the back_fn's derivative."""
    return _special("polygamma")(cell(cell(fn, "derivative"), "n") + 1, x)


def _mish_slope(x, y, fn):
    """t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))."""
    softplus = importlib.import_module("tricycle.second_order_losses")._softplus
    t = softplus(x).tanh()
    return t + x * x.sigmoid() * (1 - t * t)


def _hardswish_slope(x, y, fn):
    """x / 3 + 1/2 strictly inside (-3, 3); outside, the op's own constant slope (0 or 1)."""
    from tricycle.ops import where

    a = x.array
    outside = constant(x, fn(x.xp.ones(a.shape, a.dtype)))
    return where((a > -3) & (a < 3), x * (1 / 3) + 0.5, outside)


def _nonzero(x, slope, at_zero: float):
    """``slope(x)`` where x != 0 (computed at 1 there), the constant ``at_zero`` at 0."""
    from tricycle.ops import where

    a, xp = x.array, x.xp
    safe = where(a != 0, x, constant(x, xp.ones((), a.dtype)))
    return where(a != 0, slope(safe), constant(x, xp.asarray(at_zero, a.dtype)))


def _sinc_slope(x, y, fn):
    """(pi x cos(pi x) - sin(pi x)) / (pi x^2); at 0 its value 0 and its slope -pi^2 / 3
    (written as x (-pi^2 / 3): torch's second derivative there is NaN, 0 / 0 under a mask)."""
    from tricycle.ops import where

    a, xp = x.array, x.xp
    safe = where(a != 0, x, constant(x, xp.ones((), a.dtype)))
    pi_s = safe * math.pi
    return where(a != 0, (pi_s * pi_s.cos() - pi_s.sin()) / (pi_s * safe), x * (-(math.pi**2) / 3))


def _entr_slope(x, y, fn):
    """-(log x + 1) where x > 0; -inf at 0, NaN below (the op's own slope, constant there)."""
    from tricycle.ops import where

    a, xp = x.array, x.xp
    positive = a > 0
    safe = where(positive, x, constant(x, xp.ones((), a.dtype)))
    return where(positive, -(safe.log() + 1), constant(x, fn(xp.ones(a.shape, a.dtype))))


# name of the op's node -> slope(x, y, back_fn) as a differentiable Tensor
ONE = {
    "expm1": lambda x, y, fn: y + 1,
    "exp2": lambda x, y, fn: y * math.log(2),
    "erf": lambda x, y, fn: (x * x * -1).exp() * (2 / _SQRT_PI),
    "erfc": lambda x, y, fn: (x * x * -1).exp() * (-2 / _SQRT_PI),
    "erfinv": lambda x, y, fn: (y * y).exp() * (_SQRT_PI / 2),
    "ndtr": lambda x, y, fn: (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi)),
    "lgamma": lambda x, y, fn: _special("digamma")(x),
    "digamma": lambda x, y, fn: _special("polygamma")(1, x),
    "polygamma": _polygamma_slope,
    "tan": lambda x, y, fn: y * y + 1,
    "asin": lambda x, y, fn: (1 - x * x) ** -0.5,
    "acos": lambda x, y, fn: -((1 - x * x) ** -0.5),
    "atan": lambda x, y, fn: 1 / (x * x + 1),
    "sinh": lambda x, y, fn: x.cosh(),
    "cosh": lambda x, y, fn: x.sinh(),
    "asinh": lambda x, y, fn: (x * x + 1) ** -0.5,
    "acosh": lambda x, y, fn: (x * x - 1) ** -0.5,
    "atanh": lambda x, y, fn: 1 / (1 - x * x),
    "log1p": lambda x, y, fn: 1 / (x + 1),
    "log2": lambda x, y, fn: 1 / (x * math.log(2)),
    "log10": lambda x, y, fn: 1 / (x * math.log(10)),
    "log_sigmoid": lambda x, y, fn: (-x).sigmoid(),
    "softsign": lambda x, y, fn: (x.abs() + 1) ** -2,
    "tanhshrink": lambda x, y, fn: x.tanh() ** 2,
    "mish": _mish_slope,
    "hardswish": _hardswish_slope,
    "erfcx": lambda x, y, fn: x * y * 2 - 2 / _SQRT_PI,
    "ndtri": lambda x, y, fn: (y * y * 0.5).exp() * math.sqrt(2 * math.pi),
    "log_ndtr": lambda x, y, fn: (x * x * -0.5 - y).exp() * (1 / math.sqrt(2 * math.pi)),
    "sinc": _sinc_slope,
    "entr": _entr_slope,
    "i0": lambda x, y, fn: _special("i1")(x),
    "i1": lambda x, y, fn: _nonzero(x, lambda s: _special("i0")(s) - _special("i1")(s) / s, 0.5),
}


def _one(node, fn, g):
    """dout * slope(x) of an elementwise op of one input, the slope from ``ONE`` (or
    ``second_order_special.ONE``)."""
    slope = ONE.get(node.name) or SPECIAL_ONE.get(node.name)
    if slope is None:
        _refuse(node)
    x = node.args[0]
    return g * slope(x, node, fn)


def _root(node, fn, g):
    """lp_pool's s^(1/p): g y / (p s), 0 where s = 0 (the op's own slope there)."""
    s, p = node.args[0], cell(fn, "p")
    return g * _nonzero(s, lambda safe: node / (safe * p), 0.0)


def _log_exp_2(d):
    return (d * math.log(2)).exp()


# name -> (x, y, out, g) -> (dx, dy) before summing back over broadcast axes
TWO = {
    "atan2": lambda a, b, y, g: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
    "hypot": lambda a, b, y, g: (g * a / y, g * b / y),
    "logaddexp": lambda a, b, y, g: (g * (a - y).exp(), g * (b - y).exp()),
    "logaddexp2": lambda a, b, y, g: (g * _log_exp_2(a - y), g * _log_exp_2(b - y)),
    "xlogy": lambda a, b, y, g: (_xlog(a, b, g, "xlogy", 0), g * a / b),
    "xlog1py": lambda a, b, y, g: (_xlog(a, b, g, "xlog1py", -1), g * a / (b + 1)),
}


def _xlog(a, b, g, name: str, edge: float):
    """xlogy's (xlog1py's) dx: xlogy(g, b) (xlog1py), 0 where a is 0 and b <= 0 (-1), as
    torch's."""
    from tricycle.ops import where

    op = getattr(importlib.import_module("tricycle.torch_pointwise"), name, None)
    op = op or _special(name)
    dx = op(g, b)
    hidden = (a.array == 0) & (b.array <= edge)
    return where(hidden, constant(a, a.xp.zeros((), a.dtype)), dx)


def _two(node, fn, g):
    """The gradient of input ``which`` of an op of ``torch_pointwise.of_two``, from ``TWO``
    (or ``second_order_special.TWO``)."""
    derivatives = TWO.get(node.name) or SPECIAL_TWO.get(node.name)
    if derivatives is None:
        _refuse(node)
    which = cell(fn, "which")
    a, b = node.args
    grad = derivatives(a, b, node, g)[which]
    if grad is None:  # (the first derivative raises the same)
        raise NotImplementedError(
            f"{node.name}: the derivative with respect to {('input', 'other')[which]} is not "
            "implemented, as torch's"
        )
    return summed_to(grad, node.args[which].shape)


def _norm(node, fn, g):
    """A vector norm's: g (on the norm's kept shape) times x / n for p = 2, sign(x) for 1,
    sign(x) |x|^(p-1) n^(1-p) otherwise, 0 where the norm (or x for p < 1) is 0; the inf
    norms' and p = 0's are constants (a share of the entries at the norm; 0)."""
    from tricycle.ops import where

    x, p, norm, a, xp = node.args[0], cell(fn, "p"), cell(fn, "norm"), cell(fn, "a"), node.xp
    g = g.reshape(norm.shape)
    if p == 0 or p == 1 or math.isinf(p):
        return g * constant(node, fn(xp.ones(norm.shape, a.dtype)))
    n, zero = node.reshape(norm.shape), constant(node, xp.zeros((), a.dtype))
    if p == 2:
        return g * where(norm > 0, x / where(norm > 0, n, constant(node, xp.ones_like(norm))), zero)
    one = constant(node, xp.ones((), a.dtype))
    magnitude = where(a != 0, x.abs(), one) ** (p - 1)
    scaled = where(a != 0, magnitude * constant(node, xp.sign(a)), zero)
    if p < 1:
        return g * scaled * n ** (1 - p)
    return g * scaled * where(norm > 0, where(norm > 0, n, one) ** (1 - p), zero)


def _refuse(node):
    raise NotImplementedError(
        f"backward with create_graph=True: the second derivative of {node.name} (output shape "
        f"{node.shape}) is not implemented; differentiate it once (create_graph=False) or "
        "write it with ops that have one"
    )


def rules(t) -> dict:
    """{code of an op's back_fn: rule}, every op (one of each factory) run once on small
    tensors made by ``t(*shape)``."""
    special = importlib.import_module("tricycle.torch_special")
    pointwise = importlib.import_module("tricycle.torch_pointwise")
    trigonometry = importlib.import_module("tricycle.trigonometry")
    logarithms = importlib.import_module("tricycle.pointwise")
    activations = importlib.import_module("tricycle.nn.activations")
    shrinks = importlib.import_module("tricycle.nn.shrinks")
    more_losses = importlib.import_module("tricycle.nn.more_losses")
    norms = importlib.import_module("tricycle.linalg.norms")
    factories = importlib.import_module("tricycle.factories")
    torch_math = importlib.import_module("tricycle.tensor_torch")
    lp_pooling = importlib.import_module("tricycle.nn.lp_pooling")
    x = t(2, 3)
    made = {
        "of_one": (special.erf(x), _one),
        "trigonometry": (trigonometry.tan(x), _one),
        "logarithm": (logarithms.log1p(x), _one),
        "log_sigmoid": (activations.LogSigmoid()(x), _one),
        "softsign": (activations.Softsign()(x), _one),
        "tanhshrink": (activations.Tanhshrink()(x), _one),
        "mish": (activations.Mish()(x), _one),
        "hardswish": (activations.Hardswish()(x), _one),
        "of_two": (pointwise.atan2(x, t(2, 3)), _two),
        "lp_pool_root": (lp_pooling._root(x, 2.0), _root),
        "vector_norm": (more_losses.vector_norm(x), _norm),
        "linalg_vector_norm": (norms.vector_norm(x), _norm),
        # a fixed mask: linear, its own adjoint
        "hardtanh": (activations.Hardtanh()(x), _self_adjoint),
        "threshold": (activations.Threshold(1.0, 0.0)(x), _self_adjoint),
        "hardshrink": (shrinks.hardshrink(x), _self_adjoint),
        "softshrink": (shrinks.softshrink(x), _self_adjoint),
        "rrelu": (shrinks.rrelu(x), _self_adjoint),
        "tril": (factories.tril(x), _self_adjoint),
        "stepwise": (torch_math._stepwise("floor")(x), _self_adjoint),
        "fmod": (logarithms.fmod(x, t(2, 3)), _self_adjoint),
        "fmod[1]": (logarithms.fmod(x, t(2, 3)), _self_adjoint),
    }
    table = {}
    for name, (out, rule) in made.items():
        i = 1 if name.endswith("[1]") else 0
        KEYS[name] = key = out.back_fns[i].__code__
        table[key] = rule
    return table
