"""Activation functions: ReLU, LeakyReLU, GeLU (exact and tanh), Swish/SiLU, GLU, Sigmoid, Tanh.

Each is a stateless layer (GLU holds a Dense). GeLU is fused: ``gelu_forward(xp, x,
approximate)`` and ``gelu_backward(xp, x, dy, approximate)`` are pure array functions that, on
numpy, run block by block so their many elementwise passes stay in cache. The layer asks the
forward for the slope dGeLU/dx as well and keeps it (one more array of the input's size), so
its backward is one product.
"""

from tricycle import checks, ops, unary
from tricycle.backends import cuda as kernels
from tricycle.blocking import blocked_ufunc, for_each_block
from tricycle.functions import Sigmoid, Tanh
from tricycle.layers import Dense, Layer, dense, shared_back_fns
from tricycle.tensor import Tensor, check_float, grad_enabled
from tricycle.unary import sigmoid_forward, unary_op

__all__ = [
    "GLU",
    "SwiGLU",
    "GeLU",
    "bias_gelu",
    "dense_gelu",
    "LeakyReLU",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Swish",
    "Tanh",
    "erf",
    "gelu_backward",
    "gelu_forward",
    "swiglu_backward",
    "swiglu_forward",
]


# ---------------------------------------------------------------------- ReLU family
class ReLU(Layer):
    """max(x, 0); the derivative at 0 is 0, as in PyTorch (name "> 0")."""

    def forward(self, x: Tensor) -> Tensor:
        xp = x.xp
        return unary_op(x, xp.maximum(x.array, 0), lambda dout: dout * (x.array > 0), "> 0")


class LeakyReLU(Layer):
    """x for x > 0, ``negative_slope * x`` otherwise."""

    @checks.arguments(negative_slope=checks.real)
    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        xp, slope = x.xp, self.negative_slope
        positive = x.array > 0
        return unary_op(
            x,
            xp.where(positive, x.array, slope * x.array),
            lambda dout: xp.where(positive, dout, slope * dout),
            "leaky_relu",
        )

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


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


# GeLU's `approximate` argument is parsed in one place, shared with the CUDA launchers
_is_tanh = kernels.is_tanh_gelu


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


def gelu_forward(xp, x, approximate=False, slope=False):
    """GeLU(x) = x * Phi(x), elementwise.

    Exact: Phi(x) = (1 + erf(x / sqrt 2)) / 2. ``approximate`` True or "tanh":
    Phi(x) ~ (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2, as GPT-2.

    With ``slope`` returns (y, dGeLU/dx at x): the derivative costs a few more passes over
    data that is already in cache, and the backward becomes one product, ``dy * slope``,
    instead of evaluating tanh (or erf) again (``gelu_backward``). The CUDA kernel path has
    no slope output: it returns (y, None) and its backward recomputes from x.
    """
    if kernels.enabled(x):  # one CUDA kernel on cupy (tricycle/backends/cuda/gelu.cu)
        y = kernels.gelu_forward(xp, x, approximate)
        return (y, None) if slope else y
    tanh_form = _is_tanh(approximate)
    flat = x.reshape(-1)
    y = xp.empty_like(flat)
    dydx = xp.empty_like(flat) if slope else None

    def block(rows):
        xb = flat[rows]
        if tanh_form:
            square, t = _tanh_form_pieces(xp, xb)
            if slope:
                _tanh_gelu_slope(xp, xb, square, t, out=dydx[rows])
            t *= 0.5
            t += 0.5
            xp.multiply(t, xb, out=y[rows])
        else:  # x Phi(x) = max(x, 0) - |x| Phi(-|x|), for either sign of x
            tail, gauss, a = _normal_tail(xp, xb)
            if slope:
                _exact_gelu_slope(xp, xb, tail, gauss, out=dydx[rows])
            tail *= a
            xp.maximum(xb, 0.0, out=y[rows])
            y[rows] -= tail

    for_each_block(xp, flat.size, 1, block)
    y = y.reshape(x.shape)
    return (y, dydx.reshape(x.shape)) if slope else y


def _tanh_form_pieces(xp, x):
    """(x^2, t = tanh(u)) with u = x (sqrt(2/pi) + sqrt(2/pi) c x^2): what the tanh form and
    its slope are made of."""
    square = x * x
    t = square * (_TANH_SCALE * _TANH_CUBIC)
    t += _TANH_SCALE
    t *= x
    xp.tanh(t, out=t)
    return square, t


def _tanh_gelu_slope(xp, x, square, t, out):
    """d/dx of tanh-form GeLU from t = tanh(sqrt(2/pi) (x + c x^3)) and ``square`` = x^2
    (overwritten): with v = x sqrt(2/pi) (1 + 3 c x^2) / 2,
    d/dx = (1 + t) / 2 + (1 - t^2) v = 1/2 + v + t (1/2 - t v)."""
    v = square
    v *= 1.5 * _TANH_SCALE * _TANH_CUBIC
    v += 0.5 * _TANH_SCALE
    v *= x
    xp.multiply(t, v, out=out)
    xp.subtract(0.5, out, out=out)
    out *= t
    out += v
    out += 0.5


def _exact_gelu_slope(xp, x, tail, gauss, out):
    """d/dx of exact GeLU, Phi(x) + x phi(x), from tail = Phi(-|x|) and gauss = exp(-x^2/2)
    (both kept): Phi(x) = 1/2 + sign(x) (1/2 - Phi(-|x|))."""
    xp.subtract(0.5, tail, out=out)
    xp.copysign(out, x, out=out)
    out += 0.5
    density = gauss * x
    density *= _INV_SQRT_2PI
    out += density


def gelu_backward(xp, x, dy, approximate=False):
    """dx = dy * d GeLU / dx, recomputed from x.

    Exact: d/dx = Phi(x) + x phi(x) with phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
    Tanh form, with t = tanh(sqrt(2/pi) (x + c x^3)), c = 0.044715 and
    v = x sqrt(2/pi) (1 + 3 c x^2) / 2: d/dx = (1 + t) / 2 + (1 - t^2) v = 1/2 + v + t (1/2 - t v).
    """
    if kernels.enabled(x, dy):
        return kernels.gelu_backward(xp, x, dy, approximate)
    tanh_form = _is_tanh(approximate)
    flat, dflat = x.reshape(-1), dy.reshape(-1)
    dx = xp.empty_like(flat)

    def block(rows):
        xb, dxb = flat[rows], dx[rows]
        if tanh_form:
            square, t = _tanh_form_pieces(xp, xb)
            _tanh_gelu_slope(xp, xb, square, t, out=dxb)
        else:
            tail, gauss, _ = _normal_tail(xp, xb)
            _exact_gelu_slope(xp, xb, tail, gauss, out=dxb)
        dxb *= dflat[rows]

    for_each_block(xp, flat.size, 1, block)
    return dx.reshape(x.shape)


class GeLU(Layer):
    """Gaussian error linear unit, x * Phi(x); exact (erf) unless ``approximate``.

    ``approximate=True`` (or "tanh") uses GPT-2's tanh form, which is cheaper on the CPU.
    """

    @checks.arguments(approximate=checks.one_of((False, True, "none", "tanh")))
    def __init__(self, approximate=False):
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        check_float("GeLU", x)
        xp, approximate = x.xp, self.approximate
        if not (x.requires_grad and grad_enabled()):  # no backward: no slope
            return unary_op(x, gelu_forward(xp, x.array, approximate), None, "gelu")
        y, slope = gelu_forward(xp, x.array, approximate, slope=True)
        if slope is not None:
            return unary_op(x, y, lambda dy: blocked_ufunc(xp, xp.multiply, dy, slope), "gelu")
        # the CUDA kernels have no slope output: their backward recomputes it from x
        return unary_op(x, y, lambda dy: gelu_backward(xp, x.array, dy, approximate), "gelu")

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


def bias_gelu(x: Tensor, bias: Tensor, approximate=False) -> Tensor:
    """GeLU(x + bias) with ``bias`` (C,) over the last axis of x (..., C).

    On a GPU one node runs one CUDA kernel each way (``kernels.bias_gelu_forward`` and
    ``_backward``): x + bias is never stored, and the bias gradient is the column sum of the
    input gradient. Elsewhere it is the bias add followed by ``GeLU``.
    """
    if not kernels.enabled(x.array, bias.array):
        return GeLU(approximate)(x + bias)
    xp = x.xp
    y = kernels.bias_gelu_forward(xp, x.array, bias.array, approximate)

    def backward(dy):  # (dx, dbias)
        return kernels.bias_gelu_backward(xp, x.array, bias.array, dy, approximate)

    return Tensor(y, args=(x, bias), back_fns=shared_back_fns(backward, 2), name="bias_gelu")


def dense_gelu(layer: Dense, x: Tensor, approximate=False) -> Tensor:
    """``GeLU(approximate)(layer(x))``, the first half of a GPT MLP.

    Where the kernels run, the Dense layer's bias is added inside GeLU's kernel (``bias_gelu``),
    which saves a pass over the (..., to_size) activations each way. Elsewhere the layer adds
    its bias in place and GeLU keeps its slope, as the two layers do on their own.
    """
    if layer.bias is None or not kernels.enabled(x.array, layer.bias.array):
        return GeLU(approximate)(layer(x))
    return bias_gelu(dense(layer.checked_input(x), layer.weights), layer.bias, approximate)


# ---------------------------------------------------------------------- Swish, GLU
class Swish(Layer):
    """x * sigmoid(x), also called SiLU."""

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
        return unary_op(
            x, swiglu_forward(xp, x.array), lambda dy: swiglu_backward(xp, x.array, dy), "swiglu"
        )
