"""torch's trigonometric and hyperbolic functions beyond ``sin``, ``cos`` and ``tanh``
(``tricycle.unary``'s): ``tan``, ``asin``, ``acos``, ``atan``, ``sinh`` and ``cosh``, each an op
of one tensor with its derivative beside it, and torch's other names (``arcsin`` ...).

They are Tensor methods (``x.asin()``, imported on the first call: ``tricycle.tensor_extra``)
and torch's functions (``tricycle.asin(x)``); the in-place forms (``x.asin_()``, and torch's
functions ``tricycle.sin_(x)`` ...) follow ``add_``'s rule (docs/pytorch.md). An integer tensor
becomes float32 first, as torch's. Outside their domain (``asin(2)``) they give NaN without
numpy's warning, as torch's; so do their gradients at the domain's edges (inf, as torch's).
"""

import numpy as np

from tricycle import unary
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def _op(name: str, forward: str, derivative, what: str):
    """The op ``name``: numpy's ``forward`` of x, of gradient ``dout * derivative(xp, x)``."""

    def op(x: Tensor) -> Tensor:
        xp, a = x.xp, unary.floats(x)  # an integer tensor as float32, as torch's
        with np.errstate(invalid="ignore", divide="ignore"):
            out = getattr(xp, forward)(a)

        def back_fn(dout):
            with np.errstate(invalid="ignore", divide="ignore"):
                return dout * derivative(xp, a, out)

        return unary.unary_op(x, out, back_fn, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name}: {what}."
    return op


tan = _op("tan", "tan", lambda xp, a, out: 1 + out * out, "the tangent; d/dx = 1 + tan(x)^2")
asin = _op(
    "asin", "arcsin", lambda xp, a, out: 1 / xp.sqrt(1 - a * a), "the arcsine; d/dx = 1/sqrt(1-x^2)"
)
acos = _op(
    "acos", "arccos", lambda xp, a, out: -1 / xp.sqrt(1 - a * a), "arccosine; d/dx = -1/sqrt(1-x^2)"
)
atan = _op("atan", "arctan", lambda xp, a, out: 1 / (1 + a * a), "the arctangent; d/dx = 1/(1+x^2)")
sinh = _op("sinh", "sinh", lambda xp, a, out: xp.cosh(a), "the hyperbolic sine; d/dx = cosh(x)")
cosh = _op("cosh", "cosh", lambda xp, a, out: xp.sinh(a), "the hyperbolic cosine; d/dx = sinh(x)")
arcsin, arccos, arctan = asin, acos, atan  # torch's other names


def _written(name: str):
    def in_place(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return getattr(input, f"{name}_")()

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = f"torch.{name}_: ``input.{name}_()``, ``{name}`` written into ``input``."
    return in_place


sin_, cos_, tan_, asin_, acos_, atan_ = map(_written, "sin cos tan asin acos atan".split())
sinh_, cosh_, tanh_, exp_, sqrt_ = map(_written, "sinh cosh tanh exp sqrt".split())
