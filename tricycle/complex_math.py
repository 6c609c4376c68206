"""The functions of complex tensors (torch's, on complex64 and complex128): elementary
functions, products and reductions, each a formula of ``tricycle.complex_parts``' primitives
and of real ops, so that its gradient is torch's (the conjugate Wirtinger convention) by
construction. ``tricycle.complex_tensor``'s ComplexTensor takes them as its methods and
``tricycle.complex_functions`` routes torch's top-level names to them.
"""

import numbers

import numpy as np

from tricycle import ops, trigonometry, unary
from tricycle.complex_parts import (  # noqa: A004 - torch's names
    _plus,
    _product,
    _quotient,
    abs,  # noqa: A004 - torch's name
    complex,  # noqa: A004 - torch's name
    conj,
    linear,
    parts,
    result,
)
from tricycle.tensor import Tensor


def exp(z) -> Tensor:
    """e^z = e^a (cos b + i sin b)."""
    re, im = parts(z)
    if im is None:
        return unary.exp(re)
    size = unary.exp(re)
    return complex(size * unary.cos(im), size * unary.sin(im))


def angle(z) -> Tensor:
    """torch.angle: atan2(imag, real); for a real tensor pi where it is negative, else 0."""
    if z.dtype.kind != "c":
        return z.new(z.xp.where(z.array < 0, np.pi, 0).astype(z.dtype), requires_grad=False)
    xp, a = z.xp, z.array

    def back(g):  # d angle = (-b da + a db)/|z|^2: g i z/|z|^2 (0 at 0, as torch's)
        size2 = xp.abs(a) ** 2
        turn = xp.where(size2 == 0, 0, 1j * a / xp.where(size2 == 0, 1, size2))
        return xp.asarray(g * turn, dtype=z.dtype)

    return result(xp.angle(a).astype(a.real.dtype), (z,), (back,), "angle")


def sgn(z) -> Tensor:
    """torch.sgn of a complex tensor: z / |z|, 0 where z is 0 (its gradient there 0)."""
    size = abs(z)
    vanishes = size.array == 0
    safe = ops.where(vanishes, 1.0, size)
    return linear(z, lambda part: ops.where(vanishes, 0.0, part / safe))


def log(z) -> Tensor:
    """The principal logarithm: log|z| + i angle(z)."""
    re, im = parts(z)
    return unary.log(re) if im is None else complex(unary.log(abs(z)), angle(z))


def pow(z, exponent) -> Tensor:  # noqa: A001 - torch's name
    """z ** p for a real number p (the principal branch): |z|^p (cos p angle + i sin p angle)."""
    if not isinstance(exponent, numbers.Real) or isinstance(exponent, bool):
        raise TypeError(f"pow: a complex tensor's exponent must be a real number here, got "
                        f"{type(exponent).__name__}")  # fmt: skip
    if z.dtype.kind != "c":
        return z**exponent
    return polar(abs(z) ** exponent, angle(z) * exponent)


def sqrt(z) -> Tensor:
    """The principal square root."""
    return pow(z, 0.5)


def reciprocal(z) -> Tensor:
    """1 / z."""
    return _quotient(1, z)


def sigmoid(z) -> Tensor:
    """1 / (1 + e^-z)."""
    return _quotient(1, _plus(1, exp(linear(z, lambda x: -x)), 1))


def polar(abs, angle) -> Tensor:  # noqa: A002 - torch's names
    """torch.polar: abs (cos angle + i sin angle)."""
    return complex(abs * unary.cos(angle), abs * unary.sin(angle))


def einsum(subscripts: str, *operands) -> Tensor:
    """torch.einsum with complex operands: a sum of real einsums."""
    from tricycle.einsum import einsum as real_einsum  # noqa: PLC0415

    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    out = operands[0]
    if len(operands) == 1:
        return linear(out, lambda x: real_einsum(subscripts, x))
    if len(operands) != 2:
        raise NotImplementedError("einsum: complex operands in twos (nest the calls)")
    return _product(*operands, lambda x, y: real_einsum(subscripts, x, y))


def matmul(a, b) -> Tensor:
    """torch.matmul with complex operands."""
    return _product(a, b, lambda x, y: x @ y)


def rsqrt(z) -> Tensor:
    """1 / sqrt(z), the principal branch."""
    return pow(z, -0.5)


# ------------------------------------------------- the circular and hyperbolic functions
def _circular_hyperbolic(z):
    """(sin a, cos a, sinh b, cosh b) of z = a + ib."""
    re, im = parts(z)
    return unary.sin(re), unary.cos(re), trigonometry.sinh(im), trigonometry.cosh(im)


def sin(z) -> Tensor:
    """sin(a + ib) = sin a cosh b + i cos a sinh b."""
    if z.dtype.kind != "c":
        return unary.sin(z)
    sin_a, cos_a, sinh_b, cosh_b = _circular_hyperbolic(z)
    return complex(sin_a * cosh_b, cos_a * sinh_b)


def cos(z) -> Tensor:
    """cos(a + ib) = cos a cosh b - i sin a sinh b."""
    if z.dtype.kind != "c":
        return unary.cos(z)
    sin_a, cos_a, sinh_b, cosh_b = _circular_hyperbolic(z)
    return complex(cos_a * cosh_b, -(sin_a * sinh_b))


def sinh(z) -> Tensor:
    """sinh z = -i sin(iz): sinh a cos b + i cosh a sin b."""
    if z.dtype.kind != "c":
        return trigonometry.sinh(z)
    re, im = parts(z)
    return complex(trigonometry.sinh(re) * unary.cos(im), trigonometry.cosh(re) * unary.sin(im))


def cosh(z) -> Tensor:
    """cosh z = cos(iz): cosh a cos b + i sinh a sin b."""
    if z.dtype.kind != "c":
        return trigonometry.cosh(z)
    re, im = parts(z)
    return complex(trigonometry.cosh(re) * unary.cos(im), trigonometry.sinh(re) * unary.sin(im))


def tanh(z) -> Tensor:
    """tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), both divided by cosh 2a:
    (tanh 2a + i s sin 2b) / (1 + s cos 2b) with s = sech 2a = 2e / (1 + e^2), e = e^-2|a|,
    so that a large |a| gives +-1 (and finite gradients) rather than inf / inf."""
    if z.dtype.kind != "c":
        return unary.tanh(z)
    re, im = parts(z)
    e = unary.exp(unary.abs(re) * -2)
    sech = e * 2 / (e * e + 1)
    denominator = sech * unary.cos(im * 2) + 1
    return complex(unary.tanh(re * 2) / denominator, sech * unary.sin(im * 2) / denominator)


# ------------------------------------------------------------ products
def bilinear_of(real_fn):
    """``real_fn`` (a real bilinear product: dot, inner, outer, mm, F.linear's x W^T) of
    operands either of which may be complex: the four real products of their parts."""

    def product(a, b, *args, **kwargs):
        return _product(a, b, lambda x, y: real_fn(x, y, *args, **kwargs))

    return product


def vdot(a, b) -> Tensor:
    """torch.vdot: the dot product with the first vector conjugated."""
    return _product(conj(a), b, lambda x, y: (x * y).sum())


# ------------------------------------------------------------ reductions
def prod(z, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """torch.prod: the product along ``dim`` (all, flattened, without one), by halves: each
    step a complex product of the first half and the second (an odd last slice waits)."""
    if dtype is not None and np.dtype(dtype) != z.dtype:
        z = z.to(dtype)
    if dim is None:
        z, dim, keepdim = linear(z, lambda part: part.reshape(-1)), 0, False
    dim = dim % max(z.ndim, 1)
    if z.shape[dim] == 0:  # the empty product: 1
        return _plus(linear(z, lambda part: part.sum(dim, keepdim=keepdim)), 1, 1)
    while (n := z.shape[dim]) > 1:
        half = n // 2
        low = linear(z, lambda part: part.narrow(dim, 0, half))
        high = linear(z, lambda part: part.narrow(dim, half, half))
        product = _product(low, high, lambda x, y: x * y)
        if n % 2:  # the odd last slice waits for the next step
            product = _cat2(product, linear(z, lambda part: part.narrow(dim, n - 1, 1)), dim)
        z = product
    return z if keepdim else linear(z, lambda part: part.squeeze(dim))


def _cat2(a, b, dim):
    (ar, ai), (br, bi) = parts(a), parts(b)
    return complex(ops.concatenate([ar, br], dim), ops.concatenate([ai, bi], dim))


def var(z, *args, **kwargs) -> Tensor:
    """torch.var of a complex tensor: the mean |z - mean|^2, var(real) + var(imag) (real)."""
    re, im = parts(z)
    return re.var(*args, **kwargs) + im.var(*args, **kwargs)


def std(z, dim=None, unbiased: bool = True, keepdim: bool = False, *, correction=None):
    """torch.std of a complex tensor: the square root of its (real) variance (correction 1
    by default, as ``Tensor.std``)."""
    dim, unbiased = (None, dim) if isinstance(dim, bool) else (dim, unbiased)  # std(False)
    correction = int(bool(unbiased)) if correction is None else correction
    return var(z, dim=dim, correction=correction, keepdim=keepdim).sqrt()


def of_size(real_fn, what: str):
    """``real_fn`` (a norm of real values) of |z|: torch's vector norms of a complex tensor."""

    def of_abs(z, *args, **kwargs):
        return real_fn(abs(z), *args, **kwargs)

    of_abs.__name__ = of_abs.__qualname__ = what
    return of_abs


def dist(a, b, p=2) -> Tensor:
    """torch.dist: the p-norm of a - b (that of its sizes |a - b|)."""
    return abs(_plus(a, b, -1)).norm(p)
