"""Complex tensors: complex64 and complex128 (torch's cfloat and cdouble), as torch's.

A tensor whose array is complex is a ``ComplexTensor`` (``tricycle.graph`` makes it one as it
is built). Its gradient follows torch's convention: for a real loss L of z = a + ib, z.grad is
dL/da + i dL/db (the conjugate Wirtinger derivative, times 2), so that ``z - lr * z.grad``
descends. Four ops are written with that rule by hand: ``complex(real, imag)``, ``.real``,
``.imag`` and ``abs``; every other complex op here is a formula of those and of the real ops
(a product is (ac - bd) + i(ad + bc) of real products), so its gradient is the real ops'.

Containment: the real path pays nothing. Only an array of kind 'c' reaches ``adopt``, where
an op's complex output is accepted from a complex-aware op alone (one whose ``back_fns`` are
an ``Aware`` tuple: the four here and ``tricycle.fft``'s transforms). Any other op given a
complex tensor raises a TypeError there (numpy's numbers and a real op's gradient would be
silently wrong: ``relu``, ``max``, ``sort``, a fused loss...). Comparisons (``<`` ...) raise
as torch's. Complex-aware: + - * / (complex, real or Python numbers, broadcast), ``@``,
``matmul``, ``einsum``, ``sum``, ``mean``, ``exp``, ``abs``, ``angle``, ``conj``, ``real``,
``imag``, reshape/view/flatten/permute/transpose/indexing, ``cat``, ``stack`` and the
transforms of ``tricycle.fft``.
"""

import numbers
import warnings

import numpy as np

from tricycle import backend, binary, ops, unary
from tricycle.tensor import Tensor

# the casts a user asks for by name: torch keeps the real part there (and warns)
_EXPLICIT_CASTS = frozenset(
    "to type type_as float double half bfloat16 long int short char byte bool".split()
)
_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


class Aware(tuple):
    """The back_fns of a complex-aware op: each maps the output's gradient (torch's
    convention) to its input's (real for a real input)."""


def adopt(node, args, back_fns, name) -> bool:
    """Called by ``Node.__init__`` for a complex array: ``node`` becomes a ComplexTensor; an
    op's output is refused unless the op is complex-aware. True: it may require gradients."""
    if args is not None and type(back_fns) not in (Aware, backend.ComplexSafe):
        raise TypeError(
            f"{name or 'an op'}: does not take complex tensors (complex-aware: + - * / @, "
            "matmul, einsum, sum, mean, exp, abs, angle, conj, real, imag, reshape, permute, "
            "indexing, cat, stack and tricycle.fft; see tricycle.complex_tensor)"
        )
    if type(node) is Tensor:
        node.__class__ = ComplexTensor
    return True


def result(out, args: tuple, back_fns: tuple, name: str) -> "Tensor":
    """The output of a complex-aware op (``out`` complex or real)."""
    return Tensor(out, args, Aware(back_fns), name=name)


def _complex_dtype(array):
    if array.dtype not in _COMPLEX_OF:
        raise TypeError(f"complex: needs float32 or float64 parts, got {array.dtype}")
    return _COMPLEX_OF[array.dtype]


def _real_grad(g):
    """The gradient sent to a real input: the real part (torch's)."""
    return g.real.copy() if getattr(g, "dtype", None) is not None and g.dtype.kind == "c" else g


# ------------------------------------------------------------ the four primitives
def complex(real, imag) -> "Tensor":  # noqa: A001 - torch's name
    """torch.complex: real + i imag, of two float tensors of one dtype (broadcast)."""
    for part in (real, imag):
        if not isinstance(part, Tensor) or part.dtype.kind != "f" or part.dtype.itemsize < 4:
            raise TypeError(f"complex: expected float32 or float64 Tensors, got {part!r:.60}")
    if real.dtype != imag.dtype:
        raise RuntimeError(f"complex: real is {real.dtype} but imag is {imag.dtype}")
    out = real.array + 1j * imag.array
    out = out.astype(_complex_dtype(real.array), copy=False)
    re_back = lambda g: binary.unbroadcast(_real_grad(g), real.shape)  # noqa: E731
    im_back = lambda g: binary.unbroadcast(imag.xp.asarray(g).imag.copy(), imag.shape)  # noqa: E731
    return result(out, (real, imag), (re_back, im_back), "complex")


def real(z) -> "Tensor":
    """torch.real: the real part (a real tensor itself, for a real one)."""
    if z.dtype.kind != "c":
        return z
    return result(z.array.real.copy(), (z,), (lambda g: z.xp.asarray(g, dtype=z.dtype),), "real")


def imag(z) -> "Tensor":
    """torch.imag: the imaginary part; a RuntimeError for a real tensor, as torch's."""
    if z.dtype.kind != "c":
        raise RuntimeError(f"imag: not implemented for real tensors (dtype {z.dtype})")
    return result(
        z.array.imag.copy(), (z,), (lambda g: z.xp.asarray(1j * g, dtype=z.dtype),), "imag"
    )


def abs(z) -> "Tensor":  # noqa: A001 - torch's name
    """|z|, whose gradient is g z/|z| (0 at 0, as torch's sgn)."""
    if z.dtype.kind != "c":
        return unary.abs(z)
    xp, size = z.xp, z.xp.abs(z.array)

    def back(g):
        safe = xp.where(size == 0, 1, size)
        return xp.asarray(g * xp.where(size == 0, 0, z.array / safe), dtype=z.dtype)

    return result(size, (z,), (back,), "abs")


# ------------------------------------------------------------ formulas of the primitives
def parts(value):
    """(real, imag) of a complex tensor, a real tensor (imag None) or a Python number."""
    if isinstance(value, Tensor):
        return (real(value), imag(value)) if value.dtype.kind == "c" else (value, None)
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return value.real, value.imag
    if isinstance(value, numbers.Real):
        return value, None
    raise TypeError(f"complex op: expected a Tensor or a number, got {type(value).__name__}")


def _join(re, im):
    if im is None:
        return re
    if not isinstance(re, Tensor):  # a number beside a tensor
        re = im * 0 + re
    if not isinstance(im, Tensor):
        im = re * 0 + im
    return complex(re, im)


def _plus(a, b, sign: int):
    (ar, ai), (br, bi) = parts(a), parts(b)
    re = ar + br if sign > 0 else ar - br
    im = ai if bi is None else (bi if sign > 0 else -bi) if ai is None else (
        ai + bi if sign > 0 else ai - bi)  # fmt: skip
    return _join(re, im)


def _product(a, b, times):
    """(ar + i ai)(br + i bi) with ``times`` a real bilinear product (``*``, ``@``, einsum)."""
    (ar, ai), (br, bi) = parts(a), parts(b)
    re = times(ar, br)
    if ai is not None and bi is not None:
        re = re - times(ai, bi)
    im = [times(x, y) for x, y in ((ar, bi), (ai, br)) if x is not None and y is not None]
    return _join(re, None if not im else im[0] if len(im) == 1 else im[0] + im[1])


def _quotient(a, b):
    (br, bi) = parts(b)
    if bi is None:
        ar, ai = parts(a)
        return _join(ar / br, None if ai is None else ai / br)
    size2 = br * br + bi * bi
    return _product(a, _join(br / size2, -bi / size2), lambda x, y: x * y)


def linear(z, fn):
    """``fn`` (a real-linear op with real coefficients: reshape, sum, indexing...) of z."""
    re, im = parts(z)
    return _join(fn(re), None if im is None else fn(im))


def conj(z) -> "Tensor":
    """torch.conj (here the values themselves: tricycle keeps no lazy conjugate bit)."""
    re, im = parts(z)
    return z if im is None else complex(re, -im)


def exp(z) -> "Tensor":
    """e^z = e^a (cos b + i sin b)."""
    re, im = parts(z)
    if im is None:
        return unary.exp(re)
    size = unary.exp(re)
    return complex(size * unary.cos(im), size * unary.sin(im))


def angle(z) -> "Tensor":
    """torch.angle: atan2(imag, real); for a real tensor pi where it is negative, else 0."""
    if z.dtype.kind != "c":
        return z.new(z.xp.where(z.array < 0, np.pi, 0).astype(z.dtype), requires_grad=False)
    xp, a = z.xp, z.array

    def back(g):  # d angle = (-b da + a db)/|z|^2: g i z/|z|^2 (0 at 0, as torch's)
        size2 = xp.abs(a) ** 2
        turn = xp.where(size2 == 0, 0, 1j * a / xp.where(size2 == 0, 1, size2))
        return xp.asarray(g * turn, dtype=z.dtype)

    return result(xp.angle(a).astype(a.real.dtype), (z,), (back,), "angle")


def log(z) -> "Tensor":
    """The principal logarithm: log|z| + i angle(z)."""
    re, im = parts(z)
    return unary.log(re) if im is None else complex(unary.log(abs(z)), angle(z))


def pow(z, exponent) -> "Tensor":  # noqa: A001 - torch's name
    """z ** p for a real number p (the principal branch): |z|^p (cos p angle + i sin p angle)."""
    if not isinstance(exponent, numbers.Real) or isinstance(exponent, bool):
        raise TypeError(f"pow: a complex tensor's exponent must be a real number here, got "
                        f"{type(exponent).__name__}")  # fmt: skip
    if z.dtype.kind != "c":
        return z**exponent
    return polar(abs(z) ** exponent, angle(z) * exponent)


def sqrt(z) -> "Tensor":
    """The principal square root."""
    return pow(z, 0.5)


def reciprocal(z) -> "Tensor":
    """1 / z."""
    return _quotient(1, z)


def sigmoid(z) -> "Tensor":
    """1 / (1 + e^-z)."""
    return _quotient(1, _plus(1, exp(linear(z, lambda x: -x)), 1))


def polar(abs, angle) -> "Tensor":  # noqa: A002 - torch's names
    """torch.polar: abs (cos angle + i sin angle)."""
    return complex(abs * unary.cos(angle), abs * unary.sin(angle))


def view_as_real(z) -> "Tensor":
    """torch.view_as_real: (..., 2) of real and imaginary parts (a copy here)."""
    if z.dtype.kind != "c":
        raise RuntimeError(f"view_as_real: expects a complex tensor, got {z.dtype}")
    return ops.stack([real(z), imag(z)], -1)


def view_as_complex(x) -> "Tensor":
    """torch.view_as_complex: a float tensor whose last dim is 2 (real, imaginary)."""
    if x.dtype.kind != "f" or not x.ndim or x.shape[-1] != 2:
        raise RuntimeError(f"view_as_complex: expects a float tensor of shape (..., 2), got "
                           f"{x.dtype} of shape {x.shape}")  # fmt: skip
    return complex(x[..., 0], x[..., 1])


def cat(tensors, dim: int = 0) -> "Tensor":
    """torch.cat of complex (and real) tensors."""
    pieces = [parts(t) for t in tensors]
    if all(im is None for _, im in pieces):
        return ops.concatenate([re for re, _ in pieces], dim)
    re = ops.concatenate([re for re, _ in pieces], dim)
    return complex(re, ops.concatenate([im if im is not None else re_ * 0 for re_, im in pieces],
                                       dim))  # fmt: skip


def stack(tensors, dim: int = 0) -> "Tensor":
    """torch.stack of complex (and real) tensors."""
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def einsum(subscripts: str, *operands) -> "Tensor":
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


def matmul(a, b) -> "Tensor":
    """torch.matmul with complex operands."""
    return _product(a, b, lambda x, y: x @ y)


def _of_parts(method: str):
    """The real method ``method`` applied to both parts (a real-linear one: reshape, sum...)."""
    return lambda self, *args, **kwargs: linear(self, lambda x: getattr(x, method)(*args, **kwargs))


def _refuse_order(symbol, error=TypeError):
    def compare(self, *args, **kwargs):
        raise error(f"{symbol}: complex numbers have no order (torch's too)")

    return compare


class ComplexTensor(Tensor):
    """A Tensor of complex64 or complex128 values; its methods are complex-aware (see the
    module). Made by ``tricycle.graph`` for any complex array; never built by hand."""

    __slots__ = ()

    def new(self, array, args=None, back_fns=None, requires_grad=None, is_batched=False,
            name=None, dtype=None):  # fmt: skip
        """A real result of a complex tensor is a plain Tensor."""
        return Tensor(array, args, back_fns, requires_grad, is_batched, name, dtype)

    __add__ = lambda self, other: _plus(self, other, 1)  # noqa: E731
    __radd__ = __add__
    __sub__ = lambda self, other: _plus(self, other, -1)  # noqa: E731
    __rsub__ = lambda self, other: _plus(other, self, -1)  # noqa: E731
    __mul__ = lambda self, other: _product(self, other, lambda x, y: x * y)  # noqa: E731
    __rmul__ = lambda self, other: _product(other, self, lambda x, y: x * y)  # noqa: E731
    __truediv__ = lambda self, other: _quotient(self, other)  # noqa: E731
    __rtruediv__ = lambda self, other: _quotient(other, self)  # noqa: E731
    __neg__ = lambda self: linear(self, lambda x: -x)  # noqa: E731
    __pos__ = lambda self: self  # noqa: E731
    __matmul__ = matmul
    __rmatmul__ = lambda self, other: matmul(other, self)  # noqa: E731
    __abs__ = abs
    __lt__, __le__ = _refuse_order("<"), _refuse_order("<=")
    __gt__, __ge__ = _refuse_order(">"), _refuse_order(">=")
    argmax, argmin = _refuse_order("argmax", RuntimeError), _refuse_order("argmin", RuntimeError)
    __hash__ = Tensor.__hash__

    def add(self, other, *, alpha=1):
        """torch.Tensor.add: self + alpha * other."""
        return _plus(self, other if alpha == 1 else other * alpha, 1)

    def sub(self, other, *, alpha=1):
        """torch.Tensor.sub: self - alpha * other."""
        return _plus(self, other if alpha == 1 else other * alpha, -1)

    subtract = sub
    mul = multiply = __mul__

    def div(self, other, *, rounding_mode=None):
        """torch.Tensor.div: self / other (complex numbers are not rounded, as torch's)."""
        if rounding_mode is not None:
            raise RuntimeError(f"div: rounding_mode={rounding_mode!r} of a complex tensor")
        return _quotient(self, other)

    divide = div
    matmul = mm = __matmul__
    abs = absolute = abs
    exp, conj, conj_physical, angle = exp, conj, conj, angle
    log, pow, sqrt, reciprocal, sigmoid = log, pow, sqrt, reciprocal, sigmoid
    __pow__ = pow  # noqa: A003 - the class attribute above, torch's name
    real = property(real, doc="The real part.")
    imag = property(imag, doc="The imaginary part.")

    def resolve_conj(self):
        return self

    def _cast(self, op: str, dtype):
        """This tensor in ``dtype``: another complex dtype keeps both parts; an explicit cast
        to a real dtype (``to``, ``float``, ``type`` ...) keeps the real part with torch's
        warning, its gradient real; any other op's cast of a complex tensor is refused."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self
        if dtype.kind == "c":
            return result(self.array.astype(dtype), (self,),
                          (lambda g: g.astype(self.dtype, copy=False),), op)  # fmt: skip
        if op.rpartition(".")[2] not in _EXPLICIT_CASTS:
            raise TypeError(f"{op}: does not take complex tensors (dtype {self.dtype})")
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)  # fmt: skip
        return real(self)._cast(op, dtype)

    def is_complex(self) -> bool:
        return True

    def is_floating_point(self) -> bool:
        return False

    def __getitem__(self, index):
        return linear(self, lambda x: x[index])

    reshape = view = _of_parts("reshape")
    flatten, permute, transpose = _of_parts("flatten"), _of_parts("permute"), _of_parts("transpose")
    unsqueeze, squeeze = _of_parts("unsqueeze"), _of_parts("squeeze")
    sum, mean, clone = _of_parts("sum"), _of_parts("mean"), _of_parts("clone")

    T = property(lambda self: linear(self, lambda x: x.T))
    # the conjugate transposes (adjoint() reads mH): Tensor's transpose, then conjugated
    mH = property(lambda self: conj(Tensor.mH.fget(self)), doc="The last two axes' adjoint.")
    H = property(lambda self: conj(Tensor.H.fget(self)), doc="A matrix's conjugate transpose.")

    def __repr__(self):
        return f"tensor({self.array!r}, requires_grad={self.requires_grad})"


__all__ = [
    "Aware", "ComplexTensor", "abs", "angle", "cat", "complex", "conj", "einsum", "exp", "imag",
    "log", "matmul", "polar", "pow", "real", "reciprocal", "sigmoid", "sqrt", "stack",
    "view_as_complex", "view_as_real",
]  # fmt: skip
