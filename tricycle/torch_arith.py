"""torch's remaining elementwise functions and their other names: the inverse hyperbolic
functions ``acosh``, ``asinh``, ``atanh`` (``arccosh``, ``arcsinh``, ``arctanh``), the integer
``gcd`` and ``lcm``, ``floor_divide``, ``reciprocal``, ``rsub``, ``positive``, ``negative``,
the comparisons' long names (``greater``, ``less_equal``, ``not_equal`` ...), ``addr`` (and
``ger``, torch's old name of ``outer``), and the functions of torch that are Tensor methods
first: ``clone``, ``detach``, ``t``, ``fill`` and ``zero_``.

The inverse hyperbolic functions are ops with their derivative beside them
(``torch_pointwise.of_one``: an integer tensor becomes float32, NaN outside the domain without
numpy's warning, as torch's); the rest are compositions of differentiable ops, or integer
functions with no gradient (``gcd``, ``lcm``: floats refused, as torch's). They are Tensor
methods too (``tricycle.tensor_math``).
"""

from tricycle import binary, checks
from tricycle.graph import Node
from tricycle.torch_functions import no_out, operand, tensor_input
from tricycle.torch_functions_more import ge, gt, le, lt, ne
from tricycle.torch_pointwise import of_one

acosh = of_one(
    "acosh", lambda xp, a: xp.arccosh(a), lambda xp, a, out: 1 / xp.sqrt(a * a - 1),
    "the inverse hyperbolic cosine; d/dx = 1/sqrt(x^2 - 1)",
)  # fmt: skip
asinh = of_one(
    "asinh", lambda xp, a: xp.arcsinh(a), lambda xp, a, out: 1 / xp.sqrt(a * a + 1),
    "the inverse hyperbolic sine; d/dx = 1/sqrt(x^2 + 1)",
)  # fmt: skip
atanh = of_one(
    "atanh", lambda xp, a: xp.arctanh(a), lambda xp, a, out: 1 / (1 - a * a),
    "the inverse hyperbolic tangent; d/dx = 1/(1 - x^2)",
)  # fmt: skip
arccosh, arcsinh, arctanh = acosh, asinh, atanh  # torch's other names
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _integers(name: str, input, other) -> tuple[Node, Node]:  # noqa: A002 - torch's names
    """``input`` and ``other`` (either may be a Python int) as integer tensors on one device."""
    x = operand(name, input, other)
    y = binary.constant(other, x, name)
    for what, t in (("input", x), ("other", y)):
        if t.dtype.kind not in "iub":
            expected = "an integer tensor (torch's is not implemented for floats)"
            checks.fail(name, f"{what}'s dtype", expected, t.dtype, TypeError)
    return x, y


def _integer_op(name: str, what: str):
    def op(input, other, *, out=None):  # noqa: A002 - torch's names
        no_out(name, out)
        x, y = _integers(name, input, other)
        try:
            result = getattr(x.xp, name)(x.array, y.array)
        except ValueError:
            raise ValueError(f"{name}: shapes {x.shape} and {y.shape} cannot be broadcast "
                             "together") from None  # fmt: skip
        return x.new(result, requires_grad=False)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.{name}: {what}, elementwise, of integers (no gradient)."
    return op


gcd = _integer_op("gcd", "the greatest common divisor of |input| and |other|")
lcm = _integer_op("lcm", "the least common multiple of |input| and |other|")


def floor_divide(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.floor_divide: ``input // other``, the quotient rounded down, in the inputs' dtype,
    of gradient 0 (``div(rounding_mode="floor")``); either may be a Python number."""
    no_out("floor_divide", out)
    return operand("floor_divide", input, other).div(other, rounding_mode="floor")


def reciprocal(input, *, out=None):  # noqa: A002 - torch's names
    """torch.reciprocal: 1 / input (an integer tensor gives float32, as torch's)."""
    no_out("reciprocal", out)
    return tensor_input("reciprocal", input).reciprocal()


def rsub(input, other, *, alpha=1, out=None):  # noqa: A002 - torch's names
    """torch.rsub: ``other - alpha * input`` (torch's subtraction with its operands swapped)."""
    no_out("rsub", out)
    x = operand("rsub", input, other)
    return other - (x if alpha == 1 else alpha * x)


def positive(input):  # noqa: A002 - torch's names
    """torch.positive: ``input`` itself (a bool tensor refused, as torch's)."""
    x = tensor_input("positive", input)
    if x.dtype.kind == "b":
        checks.fail("positive", "input's dtype", "a number dtype, not bool", x.dtype, TypeError)
    return x


def negative(input, *, out=None):  # noqa: A002 - torch's names
    """torch.negative: ``-input`` (torch's other name of ``neg``)."""
    no_out("negative", out)
    return -tensor_input("negative", input)


def _outer(op: str, vec1, vec2, names=("vec1", "vec2")) -> Node:
    """The outer product of two 1-d tensors, as a differentiable product of broadcast views."""
    a, b = tensor_input(op, vec1, names[0]), tensor_input(op, vec2, names[1])
    if a.ndim != 1 or b.ndim != 1:
        checks.fail(op, f"{names[0]} and {names[1]}", "1-d tensors", f"{a.shape} and {b.shape}")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):  # noqa: A002 - torch's names
    """torch.addr: ``beta * input + alpha * outer(vec1, vec2)``, the outer product of two 1-d
    tensors added to a matrix (``input`` broadcast to it); beta 0 does not read input (its
    NaN and inf do not spread), as torch's."""
    no_out("addr", out)
    x, product = tensor_input("addr", input), _outer("addr", vec1, vec2)
    product = product if alpha == 1 else alpha * product
    if beta == 0:
        return product + x.detach().new_zeros(x.shape)
    return (x if beta == 1 else beta * x) + product


def ger(input, vec2, *, out=None):  # noqa: A002 - torch's names
    """torch.ger: the outer product of two 1-d tensors (torch's old name of ``outer``)."""
    no_out("ger", out)
    return _outer("ger", input, vec2, ("input", "vec2"))


def clone(input, *, memory_format=None):  # noqa: A002 - torch's names
    """torch.clone: ``input.clone()``, a copy whose gradient flows back to ``input``."""
    return tensor_input("clone", input).clone(memory_format=memory_format)


def detach(input):  # noqa: A002 - torch's names
    """torch.detach: ``input.detach()``, the same values off the graph."""
    return tensor_input("detach", input).detach()


def t(input):  # noqa: A002 - torch's names
    """torch.t: ``input.t()``, a matrix transposed (a 0-d or 1-d tensor as it is)."""
    return tensor_input("t", input).t()


def fill(input, value):  # noqa: A002 - torch's names
    """torch.fill: a new tensor of ``input``'s shape, dtype and device, each entry ``value``
    (a number or a one-element tensor, whose gradient is the sum of the output's)."""
    x = tensor_input("fill", input)
    if isinstance(value, Node):
        if value.size != 1:
            checks.fail("fill", "value", "a number or a one-element tensor", value.shape)
        return value.reshape(()).to(x.dtype).expand(*x.shape)
    return x.new_full(x.shape, value)


def zero_(input):  # noqa: A002 - torch's names
    """torch.zero_: ``input.zero_()``, zeros written into ``input`` (``add_``'s rule)."""
    return tensor_input("zero_", input).zero_()
