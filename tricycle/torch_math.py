"""torch's top-level math on tricycle's engine: the reductions ``sum``, ``mean``, ``std``, ``var``,
``logsumexp``, ``prod``, ``cumprod``, ``amax``, ``amin``, ``count_nonzero``, ``all`` and ``any``
(named ``all_nonzero`` and ``any_nonzero`` here), ``histogram``, ``nansum``, ``nanmean``,
``median``, ``nanmedian``, ``mode``, ``kthvalue``, ``quantile`` and ``nanquantile``; the
elementwise ``add``, ``sub``, ``mul``, ``div`` (and their other names), ``absolute``, ``log1p``,
``log2``, ``log10``, ``fmod``, ``remainder``, ``nan_to_num``, ``maximum``, ``minimum``, the
logical ops and the step functions ``sign``, ``round``, ``floor``, ``ceil``, ``trunc``; the
products ``mv`` and ``addmm``; the distances ``cdist``. ``mm`` and ``addmm`` with a sparse
``mat1`` are ``tricycle.sparse``'s.

Each calls the ``Tensor`` method of the same name (``tricycle.tensor_torch``, or the modules
its methods import: ``pointwise``, ``reduce_torch``, ``products``; the ops of ``reduce`` and
``binary`` beneath, whose gradients these are) with torch's argument names and defaults;
``out=`` is refused, as by ``tricycle.torch_functions``. ``add``, ``sub``, ``mul`` and ``div``
take a Python number as ``input`` too, as torch's (``torch_functions.operand``). The step
functions (``sign``, ``round``, ``floor``, ``ceil``, ``trunc``, ``div`` with a
``rounding_mode``) have gradient 0, as torch's. ``cdist`` is the norm of the difference of
every pair of rows.

Where torch and tricycle differ: ``var`` is ``Tensor.var``, numpy's (ddof 0, ``axis``,
``keepdims``) unless a call names one of torch's keywords (``dim``, ``unbiased``,
``correction``, ``keepdim``), as ``tricycle.var`` always was: ``var(x, dim=1)`` is torch's,
``var(x, 1)`` numpy's. ``std`` has no numpy past and is torch's (correction 1).
"""

import importlib
import math
from collections import namedtuple

from tricycle import backend, checks
from tricycle.graph import Node
from tricycle.torch_functions import no_out, operand, tensor_input


# ------------------------------------------------------------------ reductions
def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None):  # noqa: A002
    """torch.std: the standard deviation over ``dim`` (an axis or a tuple; all by default),
    with ``correction`` 1 (Bessel's) unless ``correction`` or ``unbiased=False`` says 0."""
    no_out("std", out)
    if unbiased is not None and correction is not None:
        raise TypeError(f"std: unbiased={unbiased!r} or correction={correction!r}, not both")
    unbiased = True if unbiased is None else unbiased
    return tensor_input("std", input).std(dim, unbiased, keepdim, correction=correction)


def sum(input, *args, dtype=None, out=None, **kwargs):  # noqa: A001, A002
    """torch.sum with torch's keywords (``dim``, ``keepdim``); without them numpy's (``axis``,
    ``keepdims``), as ``tricycle.sum`` always was: ``Tensor.sum``, whose two meanings agree
    on a positional axis. ``dtype``, as torch's, casts the input before it sums."""
    no_out("sum", out)
    return _cast("sum", input, dtype).sum(*args, **kwargs)


def mean(input, *args, dtype=None, out=None, **kwargs):  # noqa: A002
    """torch.mean with torch's keywords (``dim``, ``keepdim``), or numpy's: ``Tensor.mean``;
    ``dtype`` casts the input first."""
    no_out("mean", out)
    return _cast("mean", input, dtype).mean(*args, **kwargs)


def _cast(op: str, input, dtype):  # noqa: A002
    """``input`` in ``dtype`` (as it is for None), through the differentiable ``Tensor.to``."""
    x = tensor_input(op, input)
    return x if dtype is None else x.to(dtype=dtype)


def var(input, *args, out=None, **kwargs):  # noqa: A002
    """torch.var with torch's keywords (``dim``, ``unbiased``, ``correction``, ``keepdim``),
    correction 1 by default; without them numpy's (``axis``, ``keepdims``, ``ddof`` 0): see
    the module's doc. ``Tensor.var``."""
    no_out("var", out)
    return tensor_input("var", input).var(*args, **kwargs)


def rsqrt(input, *, out=None):  # noqa: A002
    """torch.rsqrt: 1 / sqrt(x), elementwise (``Tensor.rsqrt``)."""
    no_out("rsqrt", out)
    return tensor_input("rsqrt", input).rsqrt()


def logsumexp(input, dim, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.logsumexp: log(sum(exp(x))) over ``dim``, computed without overflow; its
    gradient is the softmax over ``dim``."""
    no_out("logsumexp", out)
    return tensor_input("logsumexp", input).logsumexp(dim, keepdim)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None, out=None):  # noqa: A002
    """torch.prod: the product over ``dim`` (all elements by default), in ``dtype`` if given;
    its gradient is the product of the other factors (exact where a factor is 0)."""
    no_out("prod", out)
    return tensor_input("prod", input).prod(dim, keepdim, dtype)


def cumprod(input, dim: int, *, dtype=None, out=None):  # noqa: A002
    """torch.cumprod: the running product along ``dim``, in ``dtype`` if given."""
    no_out("cumprod", out)
    return tensor_input("cumprod", input).cumprod(dim, dtype)


def amax(input, dim=(), keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.amax: the maximum over ``dim`` (all by default); tied maxima share the gradient
    evenly, as torch's."""
    no_out("amax", out)
    return tensor_input("amax", input).amax(dim, keepdim)


def amin(input, dim=(), keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.amin: the minimum over ``dim`` (all by default); tied minima share the gradient
    evenly, as torch's."""
    no_out("amin", out)
    return tensor_input("amin", input).amin(dim, keepdim)


def count_nonzero(input, dim=None):  # noqa: A002
    """torch.count_nonzero: int64 counts of the nonzero values over ``dim`` (all by default)."""
    return tensor_input("count_nonzero", input).count_nonzero(dim)


def all_nonzero(input, dim=None, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.all (``tricycle.all``: not named ``all`` here, which would hide Python's): booleans,
    whether every value over ``dim`` (all by default) is nonzero."""
    no_out("all", out)
    return tensor_input("all", input).all(dim, keepdim)


def any_nonzero(input, dim=None, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.any (``tricycle.any``, as ``all_nonzero``): booleans, whether some value over
    ``dim`` (all by default) is nonzero."""
    no_out("any", out)
    return tensor_input("any", input).any(dim, keepdim)


Histogram = namedtuple("Histogram", ["hist", "bin_edges"])  # as torch.return_types.histogram


def histogram(input, bins=100, *, range=None, weight=None, density: bool = False, out=None):  # noqa: A002
    """torch.histogram: ``(hist, bin_edges)`` of ``input``'s values, in its float dtype, with
    no gradient: ``bins`` equal bins over ``range`` (the values' min and max by default), or
    the edges of a 1-d tensor; each value counts its ``weight`` (1 by default), and
    ``density`` divides by the total weight times the bin's width. The last bin holds its
    right edge (torch's and numpy's rule)."""
    no_out("histogram", out)
    x = tensor_input("histogram", input)
    if not backend.is_float(x.dtype):
        checks.fail("histogram", "input", "a float tensor (torch's too)", x.dtype, TypeError)
    if isinstance(bins, Node):
        edges = bins.array
    else:
        edges = checks.positive_int("histogram", "bins", bins)
    weights = None
    if weight is not None:
        weights = tensor_input("histogram", weight, "weight").array
        if weights.shape != x.shape:
            checks.fail("histogram", "weight", f"input's shape {x.shape}", weights.shape)
    hist, edges = x.xp.histogram(x.array, edges, range=range, weights=weights, density=density)
    as_input = (x.new(a.astype(x.dtype), requires_grad=False) for a in (hist, edges))
    return Histogram(*as_input)


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """torch.nansum: the sum over ``dim`` (all by default) with NaN counted as 0."""
    return tensor_input("nansum", input).nansum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None, out=None):  # noqa: A002
    """torch.nanmean: the mean over ``dim`` (all by default) of the values that are not NaN."""
    no_out("nanmean", out)
    return tensor_input("nanmean", input).nanmean(dim, keepdim, dtype=dtype)


def _by_rank(name: str, what: str):
    def by_rank(input, dim=None, keepdim: bool = False, *, out=None):  # noqa: A002
        no_out(name, out)
        return getattr(tensor_input(name, input), name)(dim, keepdim)

    by_rank.__name__ = by_rank.__qualname__ = name
    by_rank.__doc__ = (
        f"torch.{name}: {what}; of all values without ``dim`` (the gradient shared among the "
        "entries equal to it), else ``(values, indices)`` along it (the gradient to the index)."
    )
    return by_rank


median = _by_rank("median", "the lower median (NaN if any value is)")
nanmedian = _by_rank("nanmedian", "the lower median of the values that are not NaN")


def mode(input, dim: int = -1, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.mode: ``(values, indices)`` of the most frequent value along ``dim`` (the smallest
    of those as frequent, the index of its last entry); the gradient goes to the index."""
    no_out("mode", out)
    return tensor_input("mode", input).mode(dim, keepdim)


def kthvalue(input, k: int, dim=None, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.kthvalue: ``(values, indices)`` of the k-th smallest value along ``dim`` (the last
    by default); the gradient goes to the index."""
    no_out("kthvalue", out)
    return tensor_input("kthvalue", input).kthvalue(k, -1 if dim is None else dim, keepdim)


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation="linear", out=None):  # noqa: A002
    """torch.quantile: the ``q``-quantiles (a number, or a 1-D tensor: then the first axis)
    over ``dim`` (all values by default), by torch's ``interpolation``; NaN if a value is."""
    no_out("quantile", out)
    x = tensor_input("quantile", input)
    return x.quantile(q, dim, keepdim, interpolation=interpolation)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation="linear", out=None):  # noqa: A002
    """torch.nanquantile: ``quantile`` of the values that are not NaN."""
    no_out("nanquantile", out)
    x = tensor_input("nanquantile", input)
    return x.nanquantile(q, dim, keepdim, interpolation=interpolation)


# ------------------------------------------------------------------ elementwise
def add(input, other, *, alpha=1, out=None):  # noqa: A002
    """torch.add: input + alpha * other (a sparse input: the sparse tensor's ``add``)."""
    no_out("add", out)
    if getattr(input, "_sparse_layout", False):  # + sparse: sparse; + dense: refused, as torch
        return input + (other if alpha == 1 else other * alpha)
    return operand("add", input, other).add(other, alpha=alpha)


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """torch.sub (``subtract``): input - alpha * other (a sparse input: its ``sub``)."""
    no_out("sub", out)
    if getattr(input, "_sparse_layout", False):  # as add's
        return input - (other if alpha == 1 else other * alpha)
    return operand("sub", input, other).sub(other, alpha=alpha)


def mul(input, other, *, out=None):  # noqa: A002
    """torch.mul (``multiply``): input * other."""
    no_out("mul", out)
    return operand("mul", input, other).mul(other)


def div(input, other, *, rounding_mode=None, out=None):  # noqa: A002
    """torch.div (``divide``): input / other, or the quotient rounded towards 0
    (``rounding_mode="trunc"``) or down ("floor"), of gradient 0."""
    no_out("div", out)
    return operand("div", input, other).div(other, rounding_mode=rounding_mode)


subtract, multiply, divide = sub, mul, div  # torch's other names


def true_divide(dividend, divisor, *, out=None):
    """torch.true_divide: dividend / divisor."""
    no_out("true_divide", out)
    return tensor_input("true_divide", dividend, "dividend") / divisor


def _elementwise(name: str, what: str, of_two: bool = False):
    """torch.<name>(input, *, out=None), or (input, other, *, out=None) ``of_two``: the Tensor
    method of that name."""

    def of_input(input, *, out=None):  # noqa: A002
        no_out(name, out)
        return getattr(tensor_input(name, input), name)()

    def of_input_and_other(input, other, *, out=None):  # noqa: A002
        no_out(name, out)
        return getattr(tensor_input(name, input), name)(other)

    function = of_input_and_other if of_two else of_input
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}: {what}."
    return function


absolute = _elementwise("absolute", "|input| (``abs``), of gradient sign(input)")
log1p = _elementwise("log1p", "log(1 + input), exact near 0, of gradient 1 / (1 + input)")
log2 = _elementwise("log2", "the base-2 logarithm")
log10 = _elementwise("log10", "the base-10 logarithm")
fmod = _elementwise("fmod", "input - other q, q = input / other rounded towards 0", True)
remainder = _elementwise("remainder", "input - other q, q rounded down (Python's %)", True)
logical_not = _elementwise("logical_not", "booleans, True where input is 0")
logical_and = _elementwise("logical_and", "booleans, input and other (nonzero: True)", True)
logical_or = _elementwise("logical_or", "booleans, input or other (nonzero: True)", True)
logical_xor = _elementwise("logical_xor", "booleans, input xor other (nonzero: True)", True)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):  # noqa: A002
    """torch.nan_to_num: NaN, inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by
    default the dtype's largest and lowest numbers); the gradient passes where x is finite."""
    no_out("nan_to_num", out)
    return tensor_input("nan_to_num", input).nan_to_num(nan, posinf, neginf)


def maximum(input, other, *, out=None):  # noqa: A002
    """torch.maximum: the elementwise maximum of two tensors (broadcast); where they tie each
    gets half the gradient, as torch's."""
    no_out("maximum", out)
    return tensor_input("maximum", input).maximum(tensor_input("maximum", other, "other"))


def minimum(input, other, *, out=None):  # noqa: A002
    """torch.minimum: the elementwise minimum of two tensors (broadcast); where they tie each
    gets half the gradient, as torch's."""
    no_out("minimum", out)
    return tensor_input("minimum", input).minimum(tensor_input("minimum", other, "other"))


def _step(name: str, what: str):
    """A step function: the method of that name, whose gradient is 0."""
    return _elementwise(name, f"{what}, in the input's dtype; its gradient is 0, as torch's")


sign = _step("sign", "-1, 0 or 1 as x < 0, x = 0 or x > 0")
floor = _step("floor", "the largest integer <= x")
ceil = _step("ceil", "the smallest integer >= x")
trunc = _step("trunc", "x without its fraction (rounded towards 0)")


def round(input, *, decimals: int = 0, out=None):  # noqa: A001, A002 - torch's names
    """torch.round: x rounded to ``decimals`` decimals, halves to even (as torch's and
    numpy's), in the input's dtype; its gradient is 0, as torch's."""
    no_out("round", out)
    return tensor_input("round", input).round(checks.integer("round", "decimals", decimals))


# ------------------------------------------------------------------ products
def mm(input, mat2, *, out=None):  # noqa: A002
    """torch.mm: the product (N, P) of two matrices (N, M) and (M, P), without broadcasting;
    a sparse (COO or CSR) ``input`` gives ``tricycle.sparse.mm``'s product."""
    no_out("mm", out)
    if getattr(input, "_sparse_layout", False):
        return importlib.import_module("tricycle.sparse").mm(input, mat2)
    return tensor_input("mm", input).mm(mat2)


def mv(input, vec, *, out=None):  # noqa: A002
    """torch.mv: the product (N,) of a matrix (N, M) and a vector (M,)."""
    no_out("mv", out)
    return tensor_input("mv", input).mv(vec)


def dot(input, other, *, out=None):  # noqa: A002
    """torch.dot: the inner product (0-d) of two vectors of one length."""
    no_out("dot", out)
    return tensor_input("dot", input).dot(other)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """torch.addmm: beta input + alpha (mat1 @ mat2), input broadcast to the product's shape;
    a sparse (COO or CSR) ``mat1`` gives ``tricycle.sparse.addmm``'s."""
    no_out("addmm", out)
    if getattr(mat1, "_sparse_layout", False):
        return importlib.import_module("tricycle.sparse").addmm(input, mat1, mat2, beta=beta,
                                                                alpha=alpha)  # fmt: skip
    return tensor_input("addmm", input).addmm(mat1, mat2, beta=beta, alpha=alpha)


# ------------------------------------------------------------------ distances
def cdist(x1, x2, p: float = 2.0, compute_mode=None):
    """torch.cdist: the p-norm distances (..., P, R) between the rows of ``x1`` (..., P, M)
    and those of ``x2`` (..., R, M), the leading axes broadcast: ``Tensor.norm`` of the
    difference of every pair (P * R * M values), whose gradient is 0 where two rows are equal,
    as torch's. ``compute_mode`` (torch's choice of a matrix-product path) changes nothing."""
    a, b = tensor_input("cdist", x1, "x1"), tensor_input("cdist", x2, "x2")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        expected = "(..., P, M) and (..., R, M), rows of one length M"
        checks.fail("cdist", "the shapes of x1 and x2", expected, (a.shape, b.shape))
    if not (checks.is_real(p) and (p >= 1 or p == math.inf)):
        checks.fail("cdist", "p", "a number >= 1 or inf (tricycle has no p < 1)", p)
    return (a.unsqueeze(-2) - b.unsqueeze(-3)).norm(p, dim=-1)  # (..., P, R, M) -> (..., P, R)
