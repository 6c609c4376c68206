"""torch's top-level functions (``tricycle.cat``, ``tricycle.exp``, ``tricycle.where`` ...) on
complex tensors as well as real ones.

Each name here is the real function it wraps (``functools.wraps``: its signature, its doc),
with one check in front: a complex operand goes to ``tricycle.complex_tensor``'s op, anything
else to the real function untouched. Only the top-level name pays that check; the ops that
the library calls inside (``ops.concatenate``, ``unary.exp`` ...) and the Tensor methods (a
``ComplexTensor`` has its own) pay nothing. The functions that call a method of their input
(``tricycle.sum``, ``mean``, ``flatten``, ``add``, ``mul``, ``matmul``, ``square``) need no
wrapper: the complex tensor's method answers.
"""

import functools

from tricycle import complex_math as M
from tricycle import complex_tensor as C
from tricycle import einsum as einsum_module
from tricycle import (
    factories,
    ops,
    reduce,
    torch_arith,
    torch_construction,
    torch_functions,
    torch_functions_more,
    torch_indexing,
    torch_math,
    torch_pointwise,
    torch_products,
    torch_put,
    torch_scatter,
    torch_shapes,
    torch_statistics,
    trigonometry,
    unary,
)
from tricycle.complex_tensor import ComplexTensor


def _of_input(real_fn, complex_fn):
    """``real_fn``, but ``complex_fn`` when its first argument is a complex tensor."""

    @functools.wraps(real_fn)
    def routed(input, *args, **kwargs):  # noqa: A002 - torch's name
        if isinstance(input, ComplexTensor):
            return complex_fn(input, *args, **kwargs)
        return real_fn(input, *args, **kwargs)

    return routed


def _of_any(real_fn, complex_fn, operands):
    """``real_fn``, but ``complex_fn`` when any of ``operands(args)`` is a complex tensor."""

    @functools.wraps(real_fn)
    def routed(*args, **kwargs):
        if any(isinstance(x, ComplexTensor) for x in operands(*args, **kwargs)):
            return complex_fn(*args, **kwargs)
        return real_fn(*args, **kwargs)

    return routed


def _cat(tensors, dim=0, *, axis=None, out=None):
    torch_functions.no_out("cat", out)
    return C.cat(tensors, dim if axis is None else axis)


def _stack(tensors, dim=0, *, axis=None, out=None):
    torch_functions.no_out("stack", out)
    return C.stack(tensors, dim if axis is None else axis)


def _where(condition, input=None, other=None, *, out=None):  # noqa: A002 - torch's names
    """input where condition holds, else other: the parts chosen apart (a real operand's
    imaginary part 0, a number's its own)."""
    torch_functions.no_out("where", out)
    (ar, ai), (br, bi) = C.parts(input), C.parts(other)
    re = ops.where(condition, ar, br)
    if ai is None and bi is None:
        return re
    return C.complex(re, ops.where(condition, 0.0 if ai is None else ai, 0.0 if bi is None else bi))


def _sequence(tensors, *args, **kwargs):
    return tensors


def _einsum_operands(subscripts, *operands):
    return operands[0] if len(operands) == 1 and isinstance(operands[0], list | tuple) else operands


def _values_of_where(condition, input=None, other=None, **_):  # noqa: A002 - torch's names
    return input, other


def _clone(z, *, memory_format=None):
    return C.linear(z, lambda part: part.clone())


concatenate = _of_any(ops.concatenate, _cat, _sequence)
cat = concatenate  # one function, as ops.cat is ops.concatenate
stack = _of_any(ops.stack, _stack, _sequence)
einsum = _of_any(einsum_module.einsum, C.einsum, _einsum_operands)
where = _of_any(torch_functions.where, _where, _values_of_where)
exp = _of_input(unary.exp, C.exp)
abs = _of_input(unary.abs, C.abs)  # noqa: A001 - torch's name
angle = _of_input(torch_pointwise.angle, C.angle)
conj = _of_input(torch_pointwise.conj, C.conj)
conj_physical = conj
real = _of_input(torch_pointwise.real, C.real)
imag = _of_input(torch_pointwise.imag, C.imag)
reshape = _of_input(ops.reshape, lambda z, *shape: z.reshape(*shape))
neg = _of_input(torch_functions_more.neg, lambda z: -z)
negative = _of_input(torch_arith.negative, lambda z: -z)
clone = _of_input(torch_arith.clone, _clone)
sqrt = _of_input(unary.sqrt, C.sqrt)
log = _of_input(unary.log, C.log)
sigmoid = _of_input(unary.sigmoid, C.sigmoid)
reciprocal = _of_input(torch_arith.reciprocal, C.reciprocal)
sgn = _of_input(torch_pointwise.sgn, M.sgn)


def _method(name: str):
    """A complex tensor's own method ``name`` (``tricycle.complex_tensor``) as a function."""

    def call(z, *args, **kwargs):
        return getattr(z, name)(*args, **kwargs)

    return call


def _first_two(a, b, *args, **kwargs):
    return a, b


# torch's functions whose complex tensors' methods answer: the shape ops and indexing (of
# both parts), the circular and hyperbolic functions, the reductions
_BY_METHOD = {
    torch_indexing: "diag roll repeat_interleave index_select flip diagonal select",
    ops: "chunk split swapaxes permute",
    torch_shapes: "tensor_split hsplit vsplit unbind narrow fliplr flipud rot90 tile movedim "
    "moveaxis swapdims",
    torch_functions: "gather squeeze unsqueeze flatten norm",
    torch_functions_more: "transpose broadcast_to",
    torch_put: "take",
    torch_scatter: "take_along_dim masked_select",
    torch_construction: "diag_embed",
    factories: "tril triu",
    reduce: "cumsum",
    unary: "sin cos tanh",
    trigonometry: "sinh cosh",
    torch_math: "rsqrt prod var std",
    torch_products: "trace",
}
globals().update(
    {name: _of_input(getattr(module, name), _method(name))
     for module, names in _BY_METHOD.items() for name in names.split()}
)  # fmt: skip
dot = _of_any(torch_math.dot, M.bilinear_of(torch_math.dot), _first_two)
inner = _of_any(torch_products.inner, M.bilinear_of(torch_products.inner), _first_two)
outer = _of_any(torch_functions.outer, M.bilinear_of(torch_functions.outer), _first_two)
ger = _of_any(torch_arith.ger, M.bilinear_of(torch_arith.ger), _first_two)
vdot = _of_any(torch_products.vdot, M.vdot, _first_two)
dist = _of_any(torch_statistics.dist, M.dist, _first_two)

__all__ = [
    "abs", "angle", "cat", "clone", "concatenate", "conj", "conj_physical", "einsum", "exp",
    "imag", "log", "neg", "negative", "real", "reciprocal", "reshape", "sgn", "sigmoid", "sqrt",
    "stack", "where", "dot", "inner", "outer", "ger", "vdot", "dist",
    *(name for names in _BY_METHOD.values() for name in names.split()),
]  # fmt: skip
