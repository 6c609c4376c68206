"""torch's elementwise functions beyond the arithmetic of ``tricycle.torch_math``: of one tensor
``exp2``, ``expm1``, ``frac``, ``fix``, ``sgn``, ``signbit``, ``deg2rad``, ``rad2deg``, ``logit``,
``sinc``, ``frexp`` and, for real tensors, ``angle``, ``conj``, ``real`` and ``imag``; of two
``xlogy``, ``heaviside``, ``atan2`` (``arctan2``), ``hypot``, ``logaddexp``, ``logaddexp2``,
``copysign``, ``ldexp``, ``float_power``, ``fmax`` and ``fmin``; of three ``lerp``, ``addcmul``
and ``addcdiv``.

Each is an op with its derivative beside it (``of_one``, ``of_two``: ``dout`` times the
partial derivative, summed back over broadcast axes), or a composition of differentiable ops
where torch's is one (``ldexp``, ``float_power``, ``lerp``, ``addcmul``, ``addcdiv``). Either
operand of a function of two may be a Python number, as torch's. dtypes as torch's: an
integer tensor becomes float32 where the result is a float; two floats give numpy's promotion,
a 0-d tensor taking the other's dtype. Outside a domain they give NaN or inf without numpy's
warnings, as torch's. They are Tensor methods too (``tricycle.tensor_math``).
"""

import math
from collections import namedtuple

import numpy as np

from tricycle import backend, binary, checks, unary
from tricycle.graph import Node
from tricycle.torch_functions import no_out, operand, tensor_input
from tricycle.torch_math import sign, trunc

FLOAT = backend.DEFAULT_FLOAT


def _float_dtype(*tensors: Node):
    """The float dtype of a result of ``tensors``: numpy's promotion of the floats among them,
    a 0-d one giving way to one with axes (torch's rule); float32 if none is a float."""
    floats = [t for t in tensors if backend.is_float(t.dtype)]
    shaped = [t for t in floats if t.ndim] or floats
    return np.result_type(*(t.dtype for t in shaped)) if shaped else np.dtype(FLOAT)


def _grad(x: Node, grad):
    """A gradient array for ``x``: summed back to its shape, in its dtype."""
    return binary.unbroadcast(grad, x.shape).astype(x.dtype, copy=False)


def of_one(name: str, forward, derivative, what: str):
    """torch.<name>(input): ``forward(xp, a)`` of input's float array ``a``, of gradient
    ``dout * derivative(xp, a, out)``; without ``derivative`` (None) the result requires no
    gradient, as torch's Bessel functions'."""

    def op(input, *, out=None):  # noqa: A002 - torch's names
        no_out(name, out)
        x = tensor_input(name, input)
        xp, a = x.xp, unary.floats(x)
        with np.errstate(all="ignore"):
            result = forward(xp, a)
        if derivative is None:
            return x.new(result, requires_grad=False, name=name)

        def back_fn(dout):
            with np.errstate(all="ignore"):
                return (dout * derivative(xp, a, result)).astype(x.dtype, copy=False)

        return unary.unary_op(x, result, back_fn, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name}: {what}."
    return op


def _pair(op: str, input, other, dtype=None) -> tuple[Node, Node, object, object]:  # noqa: A002
    """``input`` and ``other`` as tensors (either may be a number) and their arrays in ``dtype``
    (by default the float dtype of the result), on one device."""
    a = operand(op, input, other)
    b = binary.constant(other, a, op)
    backend.check_same_device(op, a.array, b.array)
    dtype = _float_dtype(a, b) if dtype is None else dtype
    return a, b, a.array.astype(dtype, copy=False), b.array.astype(dtype, copy=False)


def of_two(name: str, forward, derivatives, what: str, dtype=None):
    """torch.<name>(input, other): ``forward(xp, a, b)``, broadcast; its gradients
    ``derivatives(xp, a, b, out, dout) -> (da, db)`` (None for one that has no gradient)."""

    def op(input, other, *, out=None):  # noqa: A002 - torch's names
        no_out(name, out)
        x, y, a, b = _pair(name, input, other, None if dtype is None else dtype(input, other))
        xp = x.xp
        try:
            with np.errstate(all="ignore"):
                result = forward(xp, a, b)
        except ValueError:
            raise ValueError(f"{name}: shapes {x.shape} and {y.shape} cannot be broadcast "
                             "together") from None  # fmt: skip

        def back(which: int, of: Node):
            def back_fn(dout):
                with np.errstate(all="ignore"):  # NaN and inf as torch's, unwarned
                    grad = derivatives(xp, a, b, result, dout)[which]
                    if grad is not None:
                        return _grad(of, xp.broadcast_to(grad, result.shape))
                raise NotImplementedError(f"{name}: the derivative with respect to "
                                          f"{('input', 'other')[which]} is not implemented, "
                                          "as torch's")  # fmt: skip

            return back_fn

        return x.new(result, args=(x, y), back_fns=(back(0, x), back(1, y)), name=name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name}: {what}."
    return op


# ------------------------------------------------------------------ of one tensor
_LN2 = math.log(2)
exp2 = of_one("exp2", lambda xp, a: xp.exp2(a), lambda xp, a, out: out * _LN2, "2 ** input")
expm1 = of_one(
    "expm1", lambda xp, a: xp.expm1(a), lambda xp, a, out: out + 1, "exp(input) - 1, exact near 0"
)
deg2rad = of_one(
    "deg2rad", lambda xp, a: a * (math.pi / 180), lambda xp, a, out: math.pi / 180,
    "degrees to radians",
)  # fmt: skip
rad2deg = of_one(
    "rad2deg", lambda xp, a: a * (180 / math.pi), lambda xp, a, out: 180 / math.pi,
    "radians to degrees",
)  # fmt: skip


def _sinc(xp, a):
    return xp.sinc(a).astype(a.dtype, copy=False)


def _sinc_derivative(xp, a, out):
    """(cos(pi x) - sinc(x)) / x, 0 at x = 0 (torch's)."""
    return xp.where(a == 0, 0, (xp.cos(math.pi * a) - out) / xp.where(a == 0, 1, a))


sinc = of_one("sinc", _sinc, _sinc_derivative, "sin(pi x) / (pi x), 1 at 0")


def frac(input, *, out=None):  # noqa: A002
    """torch.frac: input - trunc(input), of gradient 1; a float tensor's alone (torch's too)."""
    no_out("frac", out)
    x = tensor_input("frac", input)
    if not backend.is_float(x.dtype):
        checks.fail("frac", "input", "a float tensor (torch's too)", x.dtype, TypeError)
    return unary.unary_op(x, x.array - x.xp.trunc(x.array), lambda dout: dout, "frac")


fix = trunc  # torch's other name
sgn = sign  # of a real tensor, torch.sgn is torch.sign


def signbit(input, *, out=None):  # noqa: A002
    """torch.signbit: booleans, True where the sign bit is set (-0.0 included), no gradient."""
    no_out("signbit", out)
    x = tensor_input("signbit", input)
    return x.new(x.xp.signbit(x.array), requires_grad=False)


def logit(input, eps=None, *, out=None):  # noqa: A002
    """torch.logit: log(p / (1 - p)), p = input clamped into [eps, 1 - eps] when ``eps`` is
    given (the gradient 0 outside), NaN outside [0, 1] without it."""
    no_out("logit", out)
    x = tensor_input("logit", input)
    checks.real("logit", "eps", eps, optional=True)
    xp, a = x.xp, unary.floats(x)
    p = a if eps is None else xp.clip(a, eps, 1 - eps)
    with np.errstate(all="ignore"):
        result = xp.log(p / (1 - p))

    def back_fn(dout):
        with np.errstate(all="ignore"):
            grad = dout / (a * (1 - a))
        if eps is not None:
            grad = xp.where((a < eps) | (a > 1 - eps), 0, grad)
        return grad.astype(x.dtype, copy=False)

    return unary.unary_op(x, result, back_fn, "logit")


Frexp = namedtuple("Frexp", ["mantissa", "exponent"])  # torch.return_types.frexp


def frexp(input, *, out=None):  # noqa: A002
    """torch.frexp: ``(mantissa, exponent)``, input = mantissa * 2 ** exponent with |mantissa|
    in [0.5, 1) (0 for 0), the exponent int32; the mantissa's gradient is dout / 2 ** exponent.
    A float tensor's alone (torch's too)."""
    no_out("frexp", out)
    x = tensor_input("frexp", input)
    if not backend.is_float(x.dtype):
        checks.fail("frexp", "input", "a float tensor (torch's too)", x.dtype, TypeError)
    mantissa, exponent = x.xp.frexp(x.array)
    scale = x.xp.ldexp(x.xp.ones_like(x.array), -exponent)  # 2 ** -exponent
    mantissa = unary.unary_op(x, mantissa, lambda dout: dout * scale, "frexp")
    return Frexp(mantissa, x.new(exponent.astype(np.int32), requires_grad=False))


# for a real tensor, as torch's: angle is 0 or pi (NaN for NaN), of gradient 0
def angle(input, *, out=None):  # noqa: A002
    """torch.angle of a real tensor: pi where input < 0, else 0 (NaN for NaN), float;
    gradient 0."""
    no_out("angle", out)
    x = tensor_input("angle", input)
    a = unary.floats(x)
    result = x.xp.where(a < 0, math.pi, x.xp.where(a == a, 0, a)).astype(a.dtype)
    return unary.unary_op(x, result, lambda dout: x.xp.zeros_like(dout), "angle")


def conj(input):  # noqa: A002
    """torch.conj of a real tensor: the tensor itself, as torch's."""
    return tensor_input("conj", input)


real = conj  # torch.real of a real tensor: itself


def imag(input):  # noqa: A002
    """torch.imag: refused for a real tensor (tricycle's all are), as torch refuses it."""
    x = tensor_input("imag", input)
    raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes "
                       f"(shape {x.shape}, {x.dtype}), as torch's")  # fmt: skip


# ------------------------------------------------------------------ of two tensors
def _xlogy(xp, a, b):
    return xp.where((a == 0) & (b == b), 0, a * xp.log(b))


xlogy = of_two(
    "xlogy", _xlogy,
    lambda xp, a, b, out, d: (xp.where((a == 0) & (b <= 0), 0, _xlogy(xp, d, b)), d * a / b),
    "input * log(other), 0 where input is 0 (unless other is NaN); input's gradient is "
    "xlogy(dout, other), 0 where input is 0 and other <= 0, as torch's",
)  # fmt: skip
atan2 = of_two(
    "atan2", lambda xp, a, b: xp.arctan2(a, b),
    lambda xp, a, b, out, d: (d * b / (a * a + b * b), -d * a / (a * a + b * b)),
    "the angle of the point (other, input), in [-pi, pi]",
)  # fmt: skip
arctan2 = atan2  # torch's other name


def _floats_only(name: str):
    def dtype(*values):
        for value in values:
            if isinstance(value, Node) and not backend.is_float(value.dtype):
                checks.fail(name, "input", "float tensors (torch's too)", value.dtype, TypeError)
        return None

    return dtype


hypot = of_two(
    "hypot", lambda xp, a, b: xp.hypot(a, b),
    lambda xp, a, b, out, d: (d * a / out, d * b / out),
    "sqrt(input ** 2 + other ** 2), without overflow", _floats_only("hypot"),
)  # fmt: skip
logaddexp = of_two(
    "logaddexp", lambda xp, a, b: xp.logaddexp(a, b),
    lambda xp, a, b, out, d: (d * xp.exp(a - out), d * xp.exp(b - out)),
    "log(exp(input) + exp(other)), without overflow", _floats_only("logaddexp"),
)  # fmt: skip
logaddexp2 = of_two(
    "logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b),
    lambda xp, a, b, out, d: (d * xp.exp2(a - out), d * xp.exp2(b - out)),
    "log2(2 ** input + 2 ** other), without overflow", _floats_only("logaddexp2"),
)  # fmt: skip
copysign = of_two(
    "copysign", lambda xp, a, b: xp.copysign(a, b),
    lambda xp, a, b, out, d: (d * xp.where(a == 0, 0, out / xp.where(a == 0, 1, a)), d * 0),
    "|input| with the sign of other (its sign bit: -0.0 is negative); other's gradient is 0, "
    "as torch's",
)  # fmt: skip


def _same_dtype(*values):
    """fmax's and fmin's: the promoted dtype of the two, integers kept (torch's)."""
    dtypes = [v.dtype for v in values if isinstance(v, Node)]
    if all(not backend.is_float(d) for d in dtypes) and all(
        isinstance(v, Node) or checks.is_integer(v) for v in values
    ):
        return np.result_type(*dtypes)
    return None


def _extremum(name: str, numpy_op: str, wins):
    """fmax / fmin: numpy's, a NaN giving way to the other value; the gradient goes to input
    where it wins or ties (or other is NaN), else to other, as torch's."""

    def derivatives(xp, a, b, out, d):
        to_a = wins(a, b) | (b != b)
        return d * to_a, d * ~to_a

    what = f"the elementwise {name[1:]}imum, NaN giving way to a number"
    return of_two(name, lambda xp, a, b: getattr(xp, numpy_op)(a, b), derivatives, what,
                   _same_dtype)  # fmt: skip


fmax = _extremum("fmax", "fmax", lambda a, b: a >= b)
fmin = _extremum("fmin", "fmin", lambda a, b: a <= b)


def heaviside(input, values, *, out=None):  # noqa: A002
    """torch.heaviside: 0 where input < 0, ``values`` where it is 0, 1 where it is > 0, in
    input's dtype (``values`` must have it, as torch's); no gradient (torch has none)."""
    no_out("heaviside", out)
    x, v = tensor_input("heaviside", input), tensor_input("heaviside", values, "values")
    if x.dtype != v.dtype:
        checks.fail("heaviside", "values", f"of input's dtype {x.dtype}", v.dtype, TypeError)
    if x.dtype.kind == "c":  # torch's: numpy would compare complex numbers lexicographically
        checks.fail("heaviside", "input", "a real tensor", x.dtype, RuntimeError)
    backend.check_same_device("heaviside", x.array, v.array)
    xp = x.xp
    try:
        result = xp.where(x.array == 0, v.array, (x.array > 0).astype(x.dtype))
    except ValueError:
        raise ValueError(f"heaviside: shapes {x.shape} and {v.shape} cannot be broadcast "
                         "together") from None  # fmt: skip
    return x.new(result.astype(x.dtype, copy=False), requires_grad=False)


# ------------------------------------------------------------------ compositions
def ldexp(input, other, *, out=None):  # noqa: A002
    """torch.ldexp: input * 2 ** other, a float; differentiable in both, as torch's (whose is
    this product)."""
    no_out("ldexp", out)
    x = tensor_input("ldexp", input)
    exponent = tensor_input("ldexp", other, "other")
    dtype = _float_dtype(x, exponent)
    x = x if x.dtype == dtype else x.to(dtype=dtype)
    exponent = exponent if exponent.dtype == dtype else exponent.to(dtype=dtype)
    return x * unary.rpow_scalar(exponent, 2.0)


def float_power(input, exponent, *, out=None):  # noqa: A002
    """torch.float_power: input ** exponent in float64 (either may be a number)."""
    no_out("float_power", out)
    x = operand("float_power", input, exponent).to(dtype=np.float64)
    if isinstance(exponent, Node):
        return x ** exponent.to(dtype=np.float64)
    if not checks.is_real(exponent):
        checks.fail("float_power", "exponent", "a Tensor or a number", exponent, TypeError)
    return x ** float(exponent)


def lerp(input, end, weight, *, out=None):  # noqa: A002
    """torch.lerp: input + weight * (end - input), ``weight`` a number or a tensor; the
    gradients are 1 - weight, weight and end - input (``Tensor.lerp``)."""
    no_out("lerp", out)
    tensor_input("lerp", end, "end")
    return tensor_input("lerp", input).lerp(end, weight)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):  # noqa: A002
    """torch.addcmul: input + value * tensor1 * tensor2, broadcast."""
    no_out("addcmul", out)
    x = tensor_input("addcmul", input)
    t1 = tensor_input("addcmul", tensor1, "tensor1")
    t2 = tensor_input("addcmul", tensor2, "tensor2")
    checks.real("addcmul", "value", value)
    return x + value * (t1 * t2)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):  # noqa: A002
    """torch.addcdiv: input + value * tensor1 / tensor2, broadcast; integer tensor1 and
    tensor2 are refused, as torch's."""
    no_out("addcdiv", out)
    x = tensor_input("addcdiv", input)
    t1 = tensor_input("addcdiv", tensor1, "tensor1")
    t2 = tensor_input("addcdiv", tensor2, "tensor2")
    if not (backend.is_float(t1.dtype) or backend.is_float(t2.dtype)):
        expected = "float tensors: integer division with addcdiv is no longer supported (torch)"
        checks.fail("addcdiv", "tensor1 and tensor2", expected, (t1.dtype, t2.dtype), TypeError)
    checks.real("addcdiv", "value", value)
    return x + value * (t1 / t2)
