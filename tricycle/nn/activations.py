"""The activations PyTorch users reach for beyond ``tricycle.activation``, under torch's names
and arguments: ELU, SELU, CELU, Softplus, Mish, Hardtanh, ReLU6, Hardsigmoid, Hardswish,
PReLU, Softsign, LogSigmoid, Tanhshrink and Threshold (the softmax family is
``tricycle.nn.softmaxes``).

Each elementwise one is one graph node (``unary_op``): the forward in ``xp``, and beside it
the closed-form derivative, which the backward computes from the input (or from an array the
forward made anyway). At a kink the derivative is PyTorch's: the exponential family takes
its x <= 0 branch at 0; Hardtanh, ReLU6, Hardsigmoid, Hardswish and Threshold pass no
gradient at their bounds (the slope is that of the open interval inside). PReLU learns its
negative slope, one for every element or one per channel (axis 1).

Where torch's constructor takes ``inplace``, these do too (a bool), and write their result
into their input as torch's do (``tricycle.activation.InPlaceActivation``).
"""

from tricycle import checks
from tricycle.activation import InPlaceActivation
from tricycle.backend import check_same_device
from tricycle.module import Layer, parameter
from tricycle.tensor import Tensor, check_float
from tricycle.unary import sigmoid_forward, unary_op

__all__ = [
    "CELU", "ELU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "PReLU",
    "ReLU6", "Softplus", "Softsign", "Tanhshrink", "Threshold",
    "exponential_linear", "prelu", "softplus_forward",
]  # fmt: skip

SELU_ALPHA = 1.6732632423543772848170429916717  # Klambauer et al.'s self-normalising constants
SELU_SCALE = 1.0507009873554804934193349852946


def softplus_forward(xp, z):
    """log(1 + e^z) = max(z, 0) + log(1 + e^-|z|): e^-|z| <= 1 never overflows, and the small
    tail stays exact (softplus(-40) is e^-40, not 0)."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _floating(op: str, x: Tensor):
    """(xp, array) of x, once ``op`` has checked that x is floating."""
    check_float(op, x)
    return x.xp, x.array


def _nonzero(owner: str, name: str, value, optional: bool = False):
    """A finite number other than 0 (one that divides)."""
    checks.real(owner, name, value, optional=optional)
    if value == 0:
        checks.fail(owner, name, "a finite number other than 0", value)
    return value


# ====================================================================== exponential family
def exponential_linear(
    x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0, op: str = "ELU"
) -> Tensor:
    """scale x where x > 0, else scale alpha (e^(input_scale x) - 1), as PyTorch computes ELU
    (scale = input_scale = 1), SELU (its alpha and scale) and CELU (input_scale = 1 / alpha).

    Slope: scale where x > 0, else scale alpha input_scale e^(input_scale x) (at x = 0 too).
    Only min(x, 0) is exponentiated, so a large x never overflows.
    """
    xp, a = _floating(op, x)
    positive = a > 0
    y = xp.where(positive, a * scale, xp.expm1(xp.minimum(a, 0) * input_scale) * (alpha * scale))
    k = alpha * scale * input_scale

    def back_fn(dout):
        e = xp.exp(xp.minimum(a, 0) * input_scale)
        return xp.where(positive, dout * scale, dout * e * k)

    return unary_op(x, y, back_fn, op.lower())


class ELU(InPlaceActivation):
    """x where x > 0, alpha (e^x - 1) otherwise, as ``torch.nn.ELU``."""

    @checks.arguments(alpha=checks.real, inplace=checks.boolean)
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return exponential_linear(x, self.alpha, op="ELU")

    def extra_repr(self) -> str:
        return self.with_inplace(f"alpha={self.alpha}")


class SELU(InPlaceActivation):
    """scale ELU(x) with alpha = 1.6733 and scale = 1.0507 (to 5 figures), the constants that
    keep activations near zero mean and unit variance through deep stacks, as ``torch.nn.SELU``.
    """

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return exponential_linear(x, SELU_ALPHA, SELU_SCALE, op="SELU")


class CELU(InPlaceActivation):
    """x where x > 0, alpha (e^(x / alpha) - 1) otherwise (continuously differentiable at 0
    for any alpha), as ``torch.nn.CELU``; alpha must not be 0."""

    @checks.arguments(alpha=_nonzero, inplace=checks.boolean)
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return exponential_linear(x, self.alpha, 1.0, 1 / self.alpha, op="CELU")

    def extra_repr(self) -> str:
        return self.with_inplace(f"alpha={self.alpha}")


# ====================================================================== smooth
class Softplus(Layer):
    """log(1 + e^(beta x)) / beta, a smooth ReLU, as ``torch.nn.Softplus``: where
    beta x > threshold it is x itself (PyTorch's linear regime, which the smooth curve meets
    to float precision). Slope: sigmoid(beta x), or 1 in the linear regime."""

    @checks.arguments(beta=_nonzero, threshold=checks.real)
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Softplus", x)
        beta = self.beta
        linear = a * beta > self.threshold
        y = xp.where(linear, a, softplus_forward(xp, a * beta) / beta)
        return unary_op(
            x, y, lambda dout: xp.where(linear, dout, dout * sigmoid_forward(xp, a * beta)),
            "softplus",
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Mish(InPlaceActivation):
    """x tanh(softplus(x)), as ``torch.nn.Mish``. With t = tanh(softplus(x)), the slope is
    t + x sigmoid(x) (1 - t^2) (d softplus / dx is the sigmoid)."""

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Mish", x)
        t = xp.tanh(softplus_forward(xp, a))
        return unary_op(
            x, a * t, lambda dout: dout * (t + a * sigmoid_forward(xp, a) * (1 - t * t)), "mish"
        )


class Softsign(Layer):
    """x / (1 + |x|), as ``torch.nn.Softsign``; slope 1 / (1 + |x|)^2."""

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Softsign", x)
        d = 1 + xp.abs(a)
        return unary_op(x, a / d, lambda dout: dout / (d * d), "softsign")


class LogSigmoid(Layer):
    """log sigmoid(x) = -softplus(-x), computed without overflow for any x (-100 at x = -100),
    as ``torch.nn.LogSigmoid``; slope 1 - sigmoid(x) = sigmoid(-x)."""

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("LogSigmoid", x)
        y = -softplus_forward(xp, -a)
        return unary_op(x, y, lambda dout: dout * sigmoid_forward(xp, -a), "log_sigmoid")


class Tanhshrink(Layer):
    """x - tanh(x), as ``torch.nn.Tanhshrink``; slope tanh(x)^2."""

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Tanhshrink", x)
        t = xp.tanh(a)
        return unary_op(x, a - t, lambda dout: dout * (t * t), "tanhshrink")


# ====================================================================== piecewise linear
def _clamp(x: Tensor, low: float, high: float, op: str) -> Tensor:
    """x clamped into [low, high]; slope 1 strictly inside, 0 at the bounds and beyond (as
    PyTorch's hardtanh; ``tricycle.unary.clip``, torch.clamp's, passes the bounds)."""
    xp, a = _floating(op, x)
    return unary_op(
        x, xp.clip(a, low, high), lambda dout: dout * ((a > low) & (a < high)), "hardtanh"
    )


class Hardtanh(InPlaceActivation):
    """x clamped into [min_val, max_val], as ``torch.nn.Hardtanh``: the slope is 1 strictly
    between the bounds, 0 at them and beyond. PyTorch's deprecated ``min_value`` and
    ``max_value`` are not taken."""

    @checks.arguments(min_val=checks.real, max_val=checks.real, inplace=checks.boolean)
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        if not max_val > min_val:
            raise ValueError(
                f"{type(self).__name__}: max_val ({max_val}) must be greater than min_val "
                f"({min_val})"
            )
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        return _clamp(x, self.min_val, self.max_val, type(self).__name__)

    def extra_repr(self) -> str:
        return self.with_inplace(f"min_val={self.min_val}, max_val={self.max_val}")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6), as ``torch.nn.ReLU6`` (Hardtanh(0, 6)): the slope is 0 at 0 and 6."""

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return InPlaceActivation.extra_repr(self)


class Hardsigmoid(InPlaceActivation):
    """A piecewise-linear sigmoid, as ``torch.nn.Hardsigmoid``: 0 for x <= -3, 1 for x >= 3,
    x / 6 + 1/2 between; the slope is 1/6 strictly between -3 and 3, else 0."""

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Hardsigmoid", x)
        y = xp.clip(a * (1 / 6) + 0.5, 0, 1)
        return unary_op(x, y, lambda dout: dout * ((a > -3) & (a < 3)) * (1 / 6), "hardsigmoid")


class Hardswish(InPlaceActivation):
    """x Hardsigmoid(x) = x min(max(x + 3, 0), 6) / 6 (MobileNetV3), as ``torch.nn.Hardswish``:
    the slope is 0 for x <= -3, x / 3 + 1/2 for -3 < x < 3 and 1 for x >= 3 (PyTorch's
    choice at the two kinks)."""

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Hardswish", x)
        y = a * xp.clip(a + 3, 0, 6) * (1 / 6)

        def back_fn(dout):
            return xp.where(a >= 3, dout, dout * (a * (1 / 3) + 0.5)) * (a > -3)

        return unary_op(x, y, back_fn, "hardswish")


class Threshold(InPlaceActivation):
    """x where x > threshold, else ``value``, as ``torch.nn.Threshold``; the slope is 1 above
    the threshold, 0 at it and below."""

    @checks.arguments(threshold=checks.real, value=checks.real, inplace=checks.boolean)
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        xp, a = _floating("Threshold", x)
        above = a > self.threshold
        y = xp.where(above, a, xp.asarray(self.value, dtype=a.dtype))
        return unary_op(x, y, lambda dout: dout * above, "threshold")

    def extra_repr(self) -> str:
        return self.with_inplace(f"threshold={self.threshold}, value={self.value}")


# ====================================================================== learnable
def prelu(x: Tensor, weights: Tensor) -> Tensor:
    """max(0, x) + w min(0, x), as ``torch.nn.functional.prelu``: the slope w where x <= 0 is
    one number for every element (``weights`` of size 1) or one per channel, axis 1 of x
    (N, C, ...), for ``weights`` (C,).

    dx = dout where x > 0, else w dout (w at 0, as PyTorch); dw sums x dout where x <= 0 over
    every axis but the channels'.
    """
    check_float("prelu", x)
    xp = check_same_device("prelu", x.array, weights.array)
    a, w = x.array, weights.array
    channels = w.size
    if w.ndim > 1 or channels == 0:
        raise ValueError(f"prelu: weights must be (C,) or a single number, got shape {w.shape}")
    if channels > 1 and (x.ndim < 2 or x.shape[1] != channels):
        raise ValueError(
            f"prelu: {channels} weights need the input's channels on axis 1, (N, {channels}, "
            f"...), got shape {x.shape}"
        )
    shape = () if channels == 1 else (channels,) + (1,) * (x.ndim - 2)
    slope = w.reshape(shape).astype(a.dtype, copy=False)  # (C, 1, ...) or ()
    positive = a > 0
    y = xp.where(positive, a, slope * a)
    summed = tuple(i for i in range(a.ndim) if channels == 1 or i != 1)

    def d_x(dout):
        return xp.where(positive, dout, slope * dout)

    def d_weights(dout):
        dw = (a * dout * ~positive).sum(axis=summed)  # (C,) or ()
        return dw.reshape(w.shape).astype(w.dtype, copy=False)

    return x.new(y, args=(x, weights), back_fns=(d_x, d_weights), name="prelu")


class PReLU(Layer):
    """x where x > 0, else w x with a learnt slope w (``weights``), as ``torch.nn.PReLU``: one
    slope for every element (``num_parameters=1``) or one per channel of (N, C, ...) inputs
    (``num_parameters=C``), each starting at ``init``."""

    @checks.arguments(num_parameters=checks.positive_int, init=checks.real)
    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        # no num_parameters attribute: Layer.num_parameters() counts the trainable numbers
        self.weights = parameter([float(init)] * num_parameters, "weights")  # (C,)

    def forward(self, x: Tensor) -> Tensor:
        return prelu(x, self.weights)

    def extra_repr(self) -> str:
        return f"num_parameters={self.weights.size}"


# ====================================================================== softmax variants
