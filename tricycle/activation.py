"""Activation functions: ReLU, LeakyReLU, GeLU (exact and tanh), Swish/SiLU, GLU, Sigmoid, Tanh.

Each is a stateless layer (GLU holds a Dense). GeLU, bias+GeLU and SwiGLU are fused ops:
``gelu_forward(xp, x, approximate)`` and ``gelu_backward(xp, x, dy, approximate)`` (and so on)
are the reference formulas in ``xp``; each Tensor op asks ``tricycle.dispatch`` once for a
backend's kernels with the same signatures. ``ACTIVATIONS`` names the ones a block or a
config may ask for by name ("gelu", "gelu_tanh", "relu", "silu"). ReLU, LeakyReLU and SiLU take
PyTorch's ``inplace``, and write their result into their input as torch's do
(``InPlaceActivation``).
"""

from collections.abc import Callable

from tricycle import checks, dispatch, ops, rebase, unary
from tricycle.backend import check_same_device
from tricycle.functions import Sigmoid, Tanh
from tricycle.layers import Dense, Layer, dense, shared_back_fns
from tricycle.tensor import Tensor, check_float
from tricycle.unary import sigmoid_forward, unary_op

__all__ = [
    "ACTIVATIONS", "GLU", "SwiGLU", "GeLU", "bias_gelu", "bias_gelu_backward", "bias_gelu_forward",
    "check_activation", "dense_gelu", "LeakyReLU", "ReLU", "SiLU", "Sigmoid", "Swish", "Tanh",
    "erf", "gelu_backward", "gelu_forward", "swiglu_backward", "swiglu_forward",
]  # fmt: skip


# ---------------------------------------------------------------------- ReLU family
class InPlaceActivation(Layer):
    """An activation that takes torch's ``inplace``: with it, the result is written into the
    input as torch's in-place activations write it (``tricycle.rebase.in_place``), so every
    reference to the input sees it (features kept before ``ReLU(inplace=True)`` hold its
    output, as in torch). Where tricycle cannot write (the input is a view of another tensor's
    values, an op already uses it, a leaf requires grad) it computes out of place."""

    inplace = False  # a class default: layers pickled before the argument still load

    def __call__(self, x, *args, **kwargs):
        if not (self.inplace and isinstance(x, Tensor)):
            return Layer.__call__(self, x, *args, **kwargs)
        name, instead = f"{type(self).__name__}(inplace=True)", f"{type(self).__name__}()"

        def call(v):
            return Layer.__call__(self, v, *args, **kwargs)

        return rebase.in_place(x, name, call, instead, otherwise=call)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""  # as torch's: shown when True

    def with_inplace(self, arguments: str) -> str:
        """``arguments`` of the repr, then ", inplace=True" when it is."""
        return arguments + (", inplace=True" if self.inplace else "")


class ReLU(InPlaceActivation):
    """max(x, 0); the derivative at 0 is 0, as in PyTorch (name "> 0").

    ``inplace``: the result written into the input, as torch's (``InPlaceActivation``).
    """

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        xp = x.xp
        return unary_op(x, xp.maximum(x.array, 0), lambda dout: dout * (x.array > 0), "> 0")


class LeakyReLU(InPlaceActivation):
    """x for x > 0, ``negative_slope * x`` otherwise. ``inplace``: as ``ReLU``'s."""

    @checks.arguments(negative_slope=checks.real, inplace=checks.boolean)
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        xp, slope = x.xp, self.negative_slope
        positive = (x.array > 0).astype(x.dtype)  # 1 where x > 0, else 0
        # each element's derivative, 1 or the slope, exactly: for a slope in [0, 1] (every
        # usual one) a maximum, which unlike xp.where costs no branch per element
        if 0 <= slope <= 1:
            slopes = xp.maximum(positive, slope)
        else:
            slopes = xp.where(positive > 0, 1, slope).astype(x.dtype)
        return unary_op(x, x.array * slopes, lambda dout: dout * slopes, "leaky_relu")

    def extra_repr(self) -> str:
        return self.with_inplace(f"negative_slope={self.negative_slope}")


# ---------------------------------------------------------------------- erf
# float32: Abramowitz & Stegun 7.1.26, erfc(z) = t P(t) exp(-z^2) with t = 1 / (1 + p z) for
# z >= 0, absolute error <= 1.5e-7: float32 accuracy in few passes, and the exp(-z^2) it needs
# is the Gaussian density that GeLU's backward needs too.
# float64: Cephes' ndtr.c, error ~1e-16: x T(x^2) / U(x^2) for |x| < 1, else
# 1 - erfc(|x|) with erfc = exp(-x^2) P(|x|) / Q(|x|) (R / S beyond 8).
_AS_P = 0.3275911
_AS_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)  # a5 ... a1
_ERF64_T = (9.60497373987051638749, 90.0260197203842689217, 2232.00534594684319226,
            7003.32514112805075473, 55592.3013010394962768)  # fmt: skip
_ERF64_U = (1.0, 33.5617141647503099647, 521.357949780152679795, 4594.32382970980127987,
            22629.0000613890934246, 49267.3942608635921086)  # fmt: skip
_ERFC64_P = (2.46196981473530512524e-10, 0.564189564831068821977, 7.46321056442269912687,
             48.6371970985681366614, 196.520832956077098242, 526.445194995477358631,
             934.528527171957607540, 1027.55188689515710272, 557.535335369399327526)  # fmt: skip
_ERFC64_Q = (1.0, 13.2281951154744992508, 86.7072140885989742329, 354.937778887819891062,
             975.708501743205489753, 1823.90916687909736289, 2246.33760818710981792,
             1656.66309194161350182, 557.535340817727675546)  # fmt: skip
_ERFC64_R = (0.564189583547755073984, 1.27536670759978104416, 5.01905042251180477414,
             6.16021097993053585195, 7.40974269950448939160, 2.97886665372100240670)  # fmt: skip
_ERFC64_S = (1.0, 2.26052863220117276590, 9.39603524938001434673, 12.0489539808096656605,
             17.0814450747565897222, 9.60896809063285878198, 3.36907645100081516050)  # fmt: skip


def _polynomial(xp, z, coefficients):
    """Horner's rule: coefficients[0] * z^n + ... + coefficients[n], in a new array."""
    out = z * coefficients[0]
    out += coefficients[1]
    for c in coefficients[2:]:
        out *= z
        out += c
    return out


def _erfc_ratio_as(xp, a, scale: float = 1.0, factor: float = 1.0):
    """factor * erfc(z) / exp(-z^2) for z = scale * a >= 0 by Abramowitz & Stegun 7.1.26
    (float32 accuracy); ``scale`` and ``factor`` are folded into the constants."""
    t = a * (_AS_P * scale)
    t += 1.0
    xp.reciprocal(t, out=t)
    ratio = _polynomial(xp, t, tuple(factor * c for c in _AS_A))
    ratio *= t
    return ratio


def _erf_cephes(xp, x):
    """erf to float64 precision (Cephes)."""
    z = x * x
    small = x * _polynomial(xp, z, _ERF64_T) / _polynomial(xp, z, _ERF64_U)  # |x| < 1
    a = xp.abs(x)
    ratio = xp.where(
        a < 8,
        _polynomial(xp, a, _ERFC64_P) / _polynomial(xp, a, _ERFC64_Q),
        _polynomial(xp, a, _ERFC64_R) / _polynomial(xp, a, _ERFC64_S),
    )
    large = xp.sign(x) * (1.0 - xp.exp(-z) * ratio)  # 1 - erfc(|x|), with x's sign
    return xp.where(a < 1, small, large)


def erf(xp, x):
    """The error function, elementwise, accurate to the precision of x's dtype.

    numpy has no erf: float32 (and smaller) use Abramowitz & Stegun 7.1.26 (error <= 1.5e-7),
    float64 uses Cephes' rational approximations (error ~1e-16). Returns a new array.
    """
    if x.dtype.itemsize > 4:
        return _erf_cephes(xp, x)
    a = xp.abs(x)
    out = _erfc_ratio_as(xp, a)
    xp.multiply(a, a, out=a)
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    out *= a  # erfc(|x|)
    xp.subtract(1.0, out, out=out)
    return xp.copysign(out, x, out=out)


# ---------------------------------------------------------------------- GeLU
_SQRT_HALF = 0.7071067811865476  # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
_TANH_SCALE = 0.7978845608028654  # sqrt(2 / pi)
_TANH_CUBIC = 0.044715


def _is_tanh(approximate) -> bool:
    """GeLU's ``approximate``: True or "tanh" for the tanh form, False/None/"none" exact."""
    return approximate is True or approximate == "tanh"


def _normal_tail(xp, x):
    """(Phi(-|x|), exp(-x^2 / 2), |x|): the lower tail of the standard normal CDF at -|x|,
    the unnormalised density and |x|, the pieces of GeLU and its derivative."""
    a = xp.abs(x)
    gauss = x * x
    gauss *= -0.5
    xp.exp(gauss, out=gauss)
    if x.dtype.itemsize > 4:
        tail = _erf_cephes(xp, a * _SQRT_HALF)  # Phi(-|x|) = (1 - erf(|x| / sqrt 2)) / 2
        tail *= -0.5
        tail += 0.5
    else:  # Phi(-|x|) = erfc(|x| / sqrt 2) / 2 = exp(-x^2 / 2) * ratio / 2
        tail = _erfc_ratio_as(xp, a, scale=_SQRT_HALF, factor=0.5)
        tail *= gauss
    return tail, gauss, a


def gelu_forward(xp, x, approximate=False):
    """GeLU(x) = x * Phi(x), elementwise.

    Exact: Phi(x) = (1 + erf(x / sqrt 2)) / 2, computed as x Phi(x) = max(x, 0) - |x| Phi(-|x|)
    so that no tail cancels. ``approximate`` True or "tanh": GPT-2's
    Phi(x) ~ (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2.
    """
    if _is_tanh(approximate):
        t = xp.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x * x * x))
        return 0.5 * x * (1 + t)
    tail, _, a = _normal_tail(xp, x)
    return xp.maximum(x, 0) - a * tail


def gelu_backward(xp, x, dy, approximate=False):
    """dx = dy * d GeLU / dx, recomputed from x.

    Exact: d/dx = Phi(x) + x phi(x) with phi(x) = exp(-x^2 / 2) / sqrt(2 pi) and
    Phi(x) = 1/2 + sign(x) (1/2 - Phi(-|x|)). Tanh form, with
    t = tanh(sqrt(2/pi) (x + c x^3)), c = 0.044715 and v = x sqrt(2/pi) (1 + 3 c x^2) / 2:
    d/dx = (1 + t) / 2 + (1 - t^2) v = 1/2 + v + t (1/2 - t v).
    """
    if _is_tanh(approximate):
        t = xp.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x * x * x))
        v = 0.5 * _TANH_SCALE * x * (1 + 3 * _TANH_CUBIC * x * x)
        return dy * (0.5 + v + t * (0.5 - t * v))
    tail, gauss, _ = _normal_tail(xp, x)
    return dy * (xp.copysign(0.5 - tail, x) + 0.5 + _INV_SQRT_2PI * x * gauss)


class GeLU(Layer):
    """Gaussian error linear unit, x * Phi(x); exact (erf) unless ``approximate``.

    ``approximate=True`` (or "tanh") uses GPT-2's tanh form.
    """

    @checks.arguments(approximate=checks.one_of((False, True, "none", "tanh")))
    def __init__(self, approximate=False):
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        check_float("GeLU", x)
        xp, approximate = x.xp, self.approximate
        forward, backward = dispatch.choose("gelu", (gelu_forward, gelu_backward), x.array)
        y = forward(xp, x.array, approximate)
        return unary_op(x, y, lambda dy: backward(xp, x.array, dy, approximate), "gelu")

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


def bias_gelu_forward(xp, x, bias, approximate=False):
    """GeLU(x + bias) with ``bias`` (C,) over the last axis of x (..., C)."""
    return gelu_forward(xp, x + bias, approximate)


def bias_gelu_backward(xp, x, bias, dy, approximate=False):
    """Gradients (dx, dbias) of ``bias_gelu_forward``: dbias sums dx over the leading axes."""
    dx = gelu_backward(xp, x + bias, dy, approximate)
    return dx, dx.sum(axis=tuple(range(dx.ndim - 1))).astype(bias.dtype, copy=False)


def bias_gelu(x: Tensor, bias: Tensor, approximate=False) -> Tensor:
    """GeLU(x + bias) as one op: a kernel need never store x + bias."""
    check_float("GeLU", x)
    xp = check_same_device("bias_gelu", x.array, bias.array)
    forward, backward = dispatch.choose(
        "bias_gelu", (bias_gelu_forward, bias_gelu_backward), x.array, bias.array
    )
    y = forward(xp, x.array, bias.array, approximate)

    def grads(dy):  # (dx, dbias)
        return backward(xp, x.array, bias.array, dy, approximate)

    return Tensor(y, args=(x, bias), back_fns=shared_back_fns(grads, 2), name="bias_gelu")


def dense_gelu(layer: Dense, x: Tensor, approximate=False) -> Tensor:
    """``GeLU(approximate)(layer(x))``, the first half of a GPT MLP, with the Dense layer's
    bias added inside GeLU (``bias_gelu``): one pass less over the activations each way."""
    if layer.bias is None:
        return GeLU(approximate)(layer(x))
    return bias_gelu(dense(layer.checked_input(x), layer.weights), layer.bias, approximate)


# ---------------------------------------------------------------------- Swish, GLU
class Swish(InPlaceActivation):
    """x * sigmoid(x), also called SiLU. ``inplace``: as ``ReLU``'s."""

    @checks.arguments(inplace=checks.boolean)
    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return x * unary.sigmoid(x)


SiLU = Swish


class GLU(Layer):
    """Gated linear unit: a Dense from ``size`` to ``2 * size``, split in halves a and b,
    then a * sigmoid(b): (..., size) -> (..., size).

    This is the layer of the original tricycle, which includes the projection; PyTorch's
    ``nn.GLU`` is the gating alone (apply it after your own Linear).
    """

    @checks.arguments(size=checks.positive_int, initialiser=checks.optional(checks.function))
    def __init__(self, size: int, initialiser=None):
        self.size = size
        self.linear = Dense(size, 2 * size, initialiser=initialiser)

    def forward(self, x: Tensor) -> Tensor:
        a, b = ops.split(self.linear(x), 2, axis=-1)  # (..., size) each
        return a * unary.sigmoid(b)

    def extra_repr(self) -> str:
        return f"size={self.size}"


# ---------------------------------------------------------------------- SwiGLU
def swiglu_forward(xp, x):
    """silu(a) * b for x = a | b (..., 2F) -> (..., F), silu(a) = a sigmoid(a)."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    out = sigmoid_forward(xp, a)
    out *= a
    out *= b
    # in x's dtype: cupy computes 16-bit inputs' exp in float32, and a float32 result would
    # make the next product (the down projection) float32 too
    return out if out.dtype == x.dtype else out.astype(x.dtype)


def swiglu_backward(xp, x, dy):
    """d(a | b) of ``swiglu_forward``, with s = sigmoid(a): da = dy b s (1 + a (1 - s)),
    db = dy a s. Recomputes s from x, the one array kept."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    s = sigmoid_forward(xp, a)
    dx = xp.empty(x.shape, dtype=dy.dtype)
    silu = a * s
    xp.multiply(dy, silu, out=dx[..., half:])  # db
    slope = silu - silu * s  # a s (1 - s)
    slope += s  # s (1 + a (1 - s))
    slope *= b
    xp.multiply(dy, slope, out=dx[..., :half])  # da
    return dx


class SwiGLU(Layer):
    """The gating of Llama's MLP (Shazeer's SwiGLU): x = a | b (..., 2F) -> silu(a) * b
    (..., F), as one op. Put the two projections a = x W1 and b = x W3 side by side in one
    Dense of width 2F (one matrix product), then apply this."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 0 or x.shape[-1] % 2:
            raise ValueError(f"SwiGLU: the last axis must have an even size, got shape {x.shape}")
        xp = x.xp
        forward, backward = dispatch.choose("swiglu", (swiglu_forward, swiglu_backward), x.array)
        y = forward(xp, x.array)
        return unary_op(x, y, lambda dy: backward(xp, x.array, dy), "swiglu")


# ====================================================================== by name
ACTIVATIONS: dict[str, Callable[[], Callable]] = {
    "gelu": lambda: GeLU(approximate=False),  # exact, as torch.nn.GELU()
    "gelu_tanh": lambda: GeLU(approximate=True),  # GPT-2's tanh approximation
    "relu": ReLU,
    "silu": SiLU,
}


def check_activation(owner: str, name: str, value):
    """An activation argument: a callable op, or a name from ``ACTIVATIONS``."""
    if not (callable(value) or (isinstance(value, str) and value in ACTIVATIONS)):
        error = ValueError if isinstance(value, str) else TypeError
        names = ", ".join(map(repr, ACTIVATIONS))
        checks.fail(owner, name, f"callable or one of {names}", value, error)
    return value


def _activation(activation: str | Callable) -> Callable:
    """The op an (already checked) activation argument names."""
    return activation if callable(activation) else ACTIVATIONS[activation]()
