"""Complex tensors' primitives: the four ops whose gradient is written by hand (``complex``,
``real``, ``imag``, ``abs``) and the joints that build every other complex op from real ops.

torch's convention for complex gradients: for a real loss L of z = a + ib, z.grad is
dL/da + i dL/db (the conjugate Wirtinger derivative, times 2), so that ``z - lr * z.grad``
descends. ``complex``, ``real``, ``imag`` and ``abs`` follow it by hand; any op written as a
formula of them and of real ops (a product is (ac - bd) + i(ad + bc) of real products) gets
its gradient from the real ops, right by construction. ``linear`` applies a real-linear op
with real coefficients (reshape, indexing, roll, pad, cumsum, trace ...) to both parts.
``tricycle.complex_tensor`` holds the ComplexTensor; ``tricycle.complex_math`` the functions.
"""

import numbers
import sys

import numpy as np

from tricycle import binary, unary
from tricycle.tensor import Tensor

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


class Aware(tuple):
    """The back_fns of a complex-aware op: each maps the output's gradient (torch's
    convention) to its input's (real for a real input)."""


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
    raise NotImplementedError(
        f"{_caller()}: does not take complex tensors (it met a "
        f"{type(value).__name__} beside one, see tricycle.complex_tensor)"
    )


def _caller() -> str:
    """The public function outside these modules that reached a complex op with a raw array
    (a real op working on a complex tensor's array: softmax's shift ...): read on the error's
    path only."""
    frame = sys._getframe(2)
    while frame is not None:
        name, module = frame.f_code.co_name, frame.f_globals.get("__name__", "")
        if not name.startswith(("_", "<")) and not module.startswith("tricycle.complex_"):
            return name
        frame = frame.f_back
    return "an op"


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
    """``fn`` (a real-linear op with real coefficients: reshape, sum, indexing, roll...) of z;
    a tuple or list of tensors (``chunk``, ``split``, ``unbind``) part by part."""
    re, im = parts(z)
    if im is None:
        return fn(re)
    re, im = fn(re), fn(im)
    if isinstance(re, tuple | list):
        return type(re)(complex(a, b) for a, b in zip(re, im))
    return complex(re, im)


def conj(z) -> "Tensor":
    """torch.conj (here the values themselves: tricycle keeps no lazy conjugate bit)."""
    re, im = parts(z)
    return z if im is None else complex(re, -im)
