"""Complex tensors: complex64 and complex128 (torch's cfloat and cdouble), as torch's.

A tensor whose array is complex is a ``ComplexTensor`` (``tricycle.graph`` makes it one as it
is built). Its gradient follows torch's convention: for a real loss L of z = a + ib, z.grad is
dL/da + i dL/db (the conjugate Wirtinger derivative, times 2), so that ``z - lr * z.grad``
descends. Four ops are written with that rule by hand (``tricycle.complex_parts``: ``complex``,
``.real``, ``.imag``, ``abs``); every other complex op is a formula of those and of the real
ops (``tricycle.complex_math``: a product is (ac - bd) + i(ad + bc) of real products; a
real-linear op with real coefficients, such as roll or trace, is that op of both parts), so
its gradient is the real ops'.

Containment: the real path pays nothing. Only an array of kind 'c' reaches ``adopt``, where
an op's complex output is accepted from a complex-aware op alone (one whose ``back_fns`` are
an ``Aware`` tuple: the primitives and ``tricycle.fft``'s transforms). Any other op given a
complex tensor raises NotImplementedError there (a RuntimeError, torch's kind: "not
implemented for 'ComplexFloat'"), naming the op: numpy's numbers and a real op's gradient
would be silently wrong (``relu``, ``max``, ``sort``, a fused loss...). Comparisons (``<``
...) raise as torch's. Complex-aware: + - * / (complex, real or Python numbers, broadcast),
``@``, ``matmul``/``mm``/``bmm``, ``einsum``, ``dot``/``vdot``/``inner``/``outer``, ``sum``,
``mean``, ``prod``, ``cumsum``, ``var``/``std``, ``norm``, ``exp``, ``log``, ``pow`` (a real
exponent), ``sqrt``/``rsqrt``, ``reciprocal``, ``sigmoid``, ``sin``/``cos``/``tanh``/``sinh``/
``cosh``, ``abs``, ``angle``, ``conj``, ``real``, ``imag``, the shape ops and indexing
(reshape, permute, transpose/``mT``, squeeze, expand, repeat, tile, flip, roll, narrow,
chunk/split, index_select, gather, diag/diagonal/trace, tril/triu, setitem), ``cat``,
``stack`` and the transforms of ``tricycle.fft``. Their second derivatives
(``create_graph=True``) come from the rules of the primitives in
``tricycle.second_order_complex`` (the fft transforms have none yet).
"""

import warnings

import numpy as np

from tricycle import backend, ops, rebase
from tricycle import complex_math as M

# complex_tensor's names, as before the primitives and the functions moved out
from tricycle.complex_math import (
    angle,
    einsum,
    exp,
    log,
    matmul,
    polar,
    pow,  # noqa: A004 - torch's name
    reciprocal,
    sigmoid,
    sqrt,
)
from tricycle.complex_parts import (  # noqa: A004 - torch's names
    Aware,
    _plus,
    _product,
    _quotient,
    abs,  # noqa: A004 - torch's name
    complex,  # noqa: A004 - torch's name
    conj,
    imag,
    linear,
    parts,
    real,
    result,
)
from tricycle.tensor import Tensor

# the casts a user asks for by name: torch keeps the real part there (and warns)
_EXPLICIT_CASTS = frozenset(
    "to type type_as float double half bfloat16 long int short char byte bool".split()
)
# the real-linear methods with real coefficients: each of a complex tensor is the real
# method of its real and imaginary parts (their gradient the real ones', as torch's)
_OF_PARTS = (
    "reshape view flatten unflatten permute transpose movedim moveaxis swapaxes swapdims "
    "squeeze unsqueeze expand expand_as broadcast_to view_as reshape_as repeat tile "
    "repeat_interleave flip fliplr flipud roll rot90 narrow select chunk split tensor_split "
    "hsplit vsplit unbind index_select gather take take_along_dim masked_select diag "
    "diag_embed diagonal trace tril triu cumsum sum mean clone"
).split()


def adopt(node, args, back_fns, name) -> bool:
    """Called by ``Node.__init__`` for a complex array: ``node`` becomes a ComplexTensor; an
    op's output is refused unless the op is complex-aware. True: it may require gradients."""
    if args is not None and type(back_fns) not in (Aware, backend.ComplexSafe):
        raise NotImplementedError(
            f"{name or 'an op'}: does not take complex tensors (see tricycle.complex_tensor "
            "for the ops that do)"
        )
    if type(node) is Tensor:
        node.__class__ = ComplexTensor
    return True


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


def _index_put(z, index, value):
    """z with z[index] = value, of both parts (a real value's imaginary part 0)."""
    (re, im), (value_re, value_im) = parts(z), parts(value)
    value_im = 0.0 if value_im is None else value_im
    return complex(rebase.index_put(re, index, value_re), rebase.index_put(im, index, value_im))


def _of_parts(method: str):
    """The real method ``method`` applied to both parts (a real-linear one: reshape, sum...)."""

    def of_parts(self, *args, **kwargs):
        return linear(self, lambda part: getattr(part, method)(*args, **kwargs))

    of_parts.__name__ = of_parts.__qualname__ = method
    of_parts.__doc__ = f"torch.Tensor.{method} of a complex tensor: that of both parts."
    return of_parts


def _refuse_order(symbol, error=NotImplementedError):
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
    rsqrt, sin, cos, tanh, sinh, cosh = M.rsqrt, M.sin, M.cos, M.tanh, M.sinh, M.cosh
    dot, inner = M.bilinear_of(Tensor.dot), M.bilinear_of(Tensor.inner)
    outer, ger, vdot = M.bilinear_of(Tensor.outer), M.bilinear_of(Tensor.outer), M.vdot
    prod, var, std = M.prod, M.var, M.std
    norm, dist = M.of_size(Tensor.norm, "norm"), M.dist
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
            raise NotImplementedError(f"{op}: does not take complex tensors (dtype {self.dtype})")
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)  # fmt: skip
        return real(self)._cast(op, dtype)

    def is_complex(self) -> bool:
        return True

    def is_floating_point(self) -> bool:
        return False

    def __getitem__(self, index):
        return linear(self, lambda x: x[index])

    def __setitem__(self, index, value):
        """``z[index] = value``; into an op's output, ``index_put`` of both parts (torch's)."""
        if (selections := rebase.rebased(self, "__setitem__", "index_put", value)) is None:
            return Tensor.__setitem__(self, index, value)
        return rebase.rebase(self, selections, _index_put, index, value)

    T = property(lambda self: linear(self, lambda x: x.T))
    mT = property(lambda self: linear(self, lambda x: x.mT), doc="The last two axes swapped.")
    # the conjugate transposes (adjoint() reads mH): Tensor's transpose, then conjugated
    mH = property(lambda self: conj(Tensor.mH.fget(self)), doc="The last two axes' adjoint.")
    H = property(lambda self: conj(Tensor.H.fget(self)), doc="A matrix's conjugate transpose.")

    def __repr__(self):
        return f"tensor({self.array!r}, requires_grad={self.requires_grad})"


for _method in _OF_PARTS:
    setattr(ComplexTensor, _method, _of_parts(_method))

__all__ = [
    "Aware", "ComplexTensor", "abs", "angle", "cat", "complex", "conj", "einsum", "exp", "imag",
    "log", "matmul", "polar", "pow", "real", "reciprocal", "sigmoid", "sqrt", "stack",
    "view_as_complex", "view_as_real",
]  # fmt: skip
