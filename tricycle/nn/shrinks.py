"""torch's shrinkage and randomised activations: ``Hardshrink``, ``Softshrink`` and ``RReLU``
(and ``F.hardshrink``, ``F.softshrink``, ``F.rrelu``), with ``F.gumbel_softmax``.

    hardshrink(x) = x where |x| > lambd, else 0                 slope 1 outside, 0 inside
    softshrink(x) = x - lambd sign(x) where |x| > lambd, else 0  slope 1 outside, 0 inside
    rrelu(x)      = x where x >= 0, else a x                     slope 1, or a

RReLU's negative slope a is (lower + upper) / 2 in evaluation; in training each element draws
its own a ~ U(lower, upper), as torch's (the draw is from a numpy Generator seeded from
tricycle's generator, so ``tricycle.manual_seed`` reproduces it, not torch's numbers).
``gumbel_softmax`` adds Gumbel noise g = -log(E), E ~ Exp(1), to the logits and takes
softmax((logits + g) / tau); ``hard=True`` returns the one-hot of its argmax whose gradient is
the soft sample's (the straight-through estimator), as torch's.
"""

import numpy as np

from tricycle import checks, random, rebase
from tricycle.activation import InPlaceActivation
from tricycle.functions import Softmax
from tricycle.module import Layer
from tricycle.nn.softmaxes import along
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.unary import unary_op

__all__ = [
    "Hardshrink", "RReLU", "Softshrink", "gumbel_softmax", "hardshrink", "rrelu", "softshrink",
]  # fmt: skip


def _lambd(op: str, lambd) -> float:
    checks.real(op, "lambd", lambd, 0)  # torch: "lambda must be greater or equal to 0"
    return lambd


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002 - torch's name
    """x where |x| > lambd, else 0, as torch's ``F.hardshrink``."""
    x = as_tensor(input)
    check_float("F.hardshrink", x)
    outside = x.xp.abs(x.array) > _lambd("F.hardshrink", lambd)
    return unary_op(
        x,
        x.xp.where(outside, x.array, 0).astype(x.dtype),
        lambda dout: dout * outside,
        "hardshrink",
    )


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002 - torch's name
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0, as torch's
    ``F.softshrink``."""
    x = as_tensor(input)
    check_float("F.softshrink", x)
    lambd, xp, a = _lambd("F.softshrink", lambd), x.xp, x.array
    outside = xp.abs(a) > lambd
    y = xp.where(outside, a - xp.sign(a).astype(a.dtype) * a.dtype.type(lambd), 0).astype(a.dtype)
    return unary_op(x, y, lambda dout: dout * outside, "softshrink")


def _bounds(op: str, lower, upper) -> None:
    checks.real(op, "lower", lower)
    checks.real(op, "upper", upper)
    if lower > upper:
        raise ValueError(f"{op}: lower ({lower}) must be at most upper ({upper})")


def rrelu(
    input: Tensor,  # noqa: A002 - torch's names
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
    *,
    rng: np.random.Generator | None = None,
) -> Tensor:
    """Randomised leaky ReLU, as torch's ``F.rrelu``: slope (lower + upper) / 2 below 0 out of
    training, one slope a ~ U(lower, upper) per element in training (drawn from ``rng``, by
    default one seeded from tricycle's generator). ``inplace``: the result written into the
    input, which is returned, as torch's (``rebase.written_if``)."""
    op = "F.rrelu"
    _bounds(op, lower, upper)
    checks.boolean(op, "training", training)
    checks.boolean(op, "inplace", inplace)
    x = as_tensor(input)
    check_float(op, x)
    if inplace:
        return rebase.written_if(True, x, op, lambda v: rrelu(v, lower, upper, training, rng=rng))
    xp, a = x.xp, x.array
    if training:
        rng = rng or np.random.default_rng(random.draw_seed())
        draw = a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float32)
        slopes = xp.asarray(lower + (upper - lower) * rng.random(a.shape, dtype=draw))
        slope = xp.where(a >= 0, 1, slopes).astype(a.dtype)
    else:
        slope = xp.where(a >= 0, 1, (lower + upper) / 2).astype(a.dtype)
    return unary_op(x, a * slope, lambda dout: dout * slope, "rrelu")


class Hardshrink(Layer):
    """torch's ``nn.Hardshrink(lambd=0.5)``: ``F.hardshrink``."""

    @checks.arguments(lambd=checks.non_negative)
    def __init__(self, lambd: float = 0.5):
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """torch's ``nn.Softshrink(lambd=0.5)``: ``F.softshrink``."""

    def forward(self, x: Tensor) -> Tensor:
        return softshrink(x, self.lambd)


class RReLU(InPlaceActivation):
    """torch's ``nn.RReLU(lower=1/8, upper=1/3, inplace=False)``: ``F.rrelu`` with the layer's
    training flag; its slopes come from the layer's own generator (``seed``, by default one
    drawn from tricycle's), as ``Dropout``'s mask."""

    @checks.arguments(lower=checks.real, upper=checks.real, inplace=checks.boolean)
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False,
                 *, seed: int | None = None):  # fmt: skip
        _bounds("RReLU", lower, upper)
        self.lower, self.upper, self.inplace = lower, upper, inplace
        self.rng = np.random.default_rng(random.draw_seed() if seed is None else seed)

    def forward(self, x: Tensor) -> Tensor:
        return rrelu(x, self.lower, self.upper, self.training, rng=self.rng)

    def extra_repr(self) -> str:
        return self.with_inplace(f"lower={self.lower}, upper={self.upper}")


def gumbel_softmax(
    logits: Tensor,
    tau: float = 1.0,
    hard: bool = False,
    eps: float = 1e-10,
    dim: int = -1,
    *,
    rng: np.random.Generator | None = None,
) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution, as torch's ``F.gumbel_softmax``:
    softmax((logits + g) / tau) along ``dim`` with Gumbel noise g (from ``rng``, by default one
    seeded from tricycle's generator); with ``hard`` the one-hot of its argmax, whose gradient
    is the soft sample's. ``eps`` is torch's unused, deprecated argument."""
    op = "F.gumbel_softmax"
    checks.positive(op, "tau", tau)
    checks.boolean(op, "hard", hard)
    x = as_tensor(logits)
    check_float(op, x)
    axis = checks.axis(op, "dim", dim, x.ndim, x.shape)
    rng = rng or np.random.default_rng(random.draw_seed())
    draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    gumbels = x.xp.asarray(-np.log(rng.standard_exponential(x.shape, dtype=draw)))
    soft = along(op, Softmax, (x + gumbels.astype(x.dtype)) / tau, axis)
    if not hard:
        return soft
    xp, shape = x.xp, [1] * x.ndim
    shape[axis] = x.shape[axis]
    index = xp.expand_dims(xp.argmax(soft.array, axis=axis), axis)  # the first largest, as torch
    one_hot = (xp.arange(x.shape[axis]).reshape(shape) == index).astype(soft.dtype)
    return unary_op(soft, one_hot, lambda dout: dout, "gumbel_softmax_hard")  # straight through
