"""torch's statistics, scans and distances beyond ``tricycle.torch_math``: ``std_mean``,
``var_mean``, ``aminmax``, the running ``cummax``, ``cummin`` and ``logcumsumexp``, the
integrals ``trapezoid`` (``trapz``) and ``cumulative_trapezoid``, ``diff``, ``cov``,
``corrcoef``, ``renorm``, ``dist`` and ``pdist``.

Most are compositions of differentiable ops (``reduce.var``, ``amin``/``amax``, slices,
``norm``, matrix products), so their gradients are those ops'; ``cummax``/``cummin`` and
``logcumsumexp`` are ops with their derivative beside them, their running values a scan in
log2(n) steps of whole-array ops (``scan``: cupy has no ``maximum.accumulate``). Tensor
methods too where torch has them (``x.cummax(0)``, ``x.diff()``, ``x.cov()``:
``tricycle.tensor_math``).
"""

import math
from collections import namedtuple

import numpy as np

from tricycle import backend, checks, ops, reduce
from tricycle.graph import Node
from tricycle.torch_functions import no_out, tensor_input


# ------------------------------------------------------------------ moments
def _moments(name: str, input, dim, unbiased, keepdim, correction):  # noqa: A002
    """``(variance, mean)`` over ``dim`` with torch's ``correction`` (1 unless
    ``unbiased=False`` or ``correction`` says otherwise)."""
    x = tensor_input(name, input)
    if isinstance(dim, bool):  # torch's std_mean(x, False): unbiased in dim's place
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}: unbiased={unbiased!r} or correction={correction!r}, not both")
    if correction is None:
        correction = int(checks.boolean(name, "unbiased", True if unbiased is None else unbiased))
    axis = None if dim == () else dim
    return reduce.var(x, axis, keepdim, correction), reduce.mean(x, axis, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None):  # noqa: A002
    """torch.std_mean: ``(std, mean)`` over ``dim`` (all by default), correction 1 as torch's."""
    no_out("std_mean", out)
    variance, mean = _moments("std_mean", input, dim, unbiased, keepdim, correction)
    return variance.sqrt(), mean


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None):  # noqa: A002
    """torch.var_mean: ``(var, mean)`` over ``dim`` (all by default), correction 1 as torch's."""
    no_out("var_mean", out)
    return _moments("var_mean", input, dim, unbiased, keepdim, correction)


Aminmax = namedtuple("Aminmax", ["min", "max"])  # torch.return_types.aminmax


def aminmax(input, *, dim=None, keepdim: bool = False, out=None):  # noqa: A002
    """torch.aminmax: ``(min, max)`` over ``dim`` (all values by default); tied extremes share
    the gradient evenly, as torch's. An empty axis is refused, as torch's."""
    no_out("aminmax", out)
    x = tensor_input("aminmax", input)
    axis = None if dim is None else checks.axis("aminmax", "dim", dim, max(x.ndim, 1), x.shape)
    if x.size == 0 and (axis is None or x.shape[axis] == 0):
        raise RuntimeError(f"aminmax: cannot compute aminmax over an empty dimension (input "
                           f"shape {x.shape}) as the operation has no identity")  # fmt: skip
    axes = () if dim is None or x.ndim == 0 else axis
    return Aminmax(x.amin(axes, keepdim), x.amax(axes, keepdim))


# ------------------------------------------------------------------ running extremes
def scan(op, a, axis: int):
    """The running ``op`` (associative: maximum, logaddexp) of ``a`` along ``axis``: out[i] =
    op(a[0], ..., a[i]), in log2(n) steps, step k combining each entry with the one 2^k
    before it (Hillis and Steele's scan), with whole-array ops that numpy and cupy both have."""
    out, n, shift = a.copy(), a.shape[axis], 1
    before = (slice(None),) * axis
    while shift < n:
        out[before + (slice(shift, None),)] = op(
            out[before + (slice(shift, None),)], out[before + (slice(None, n - shift),)]
        )
        shift *= 2
    return out


Cumulative = namedtuple("Cumulative", ["values", "indices"])  # torch.return_types.cummax


def _running(name: str, numpy_op: str):
    """cummax / cummin along ``dim``: the running extreme (NaN once one is met) and the index
    of the last entry that set it (ties go to the later one, as torch's); the gradient of each
    value goes to that entry."""

    def running(input, dim: int, *, out=None):  # noqa: A002
        no_out(name, out)
        x = tensor_input(name, input)
        xp, a = x.xp, x.array
        if a.ndim == 0:
            index = xp.zeros((), dtype=np.int64)
            values = x.new(a.copy(), args=(x,), back_fns=(lambda dout: dout,), name=name)
            return Cumulative(values, x.new(index, requires_grad=False))
        axis = checks.axis(name, "dim", dim, a.ndim, x.shape)
        values = scan(getattr(xp, numpy_op), a, axis)
        positions = xp.arange(a.shape[axis]).reshape((-1,) + (1,) * (a.ndim - axis - 1))
        setter = (a == values) | ((a != a) & (values != values))  # the entries that set a value
        indices = scan(xp.maximum, xp.where(setter, positions, -1), axis)

        def back_fn(dout):
            onto = xp.moveaxis(indices, axis, -1).reshape(-1, a.shape[axis])
            flat = xp.moveaxis(dout, axis, -1).reshape(-1, a.shape[axis])
            rows = xp.arange(onto.shape[0])[:, None] * a.shape[axis] + onto
            summed = xp.bincount(rows.ravel(), flat.ravel(), minlength=flat.size)
            grad = xp.moveaxis(summed.reshape(xp.moveaxis(dout, axis, -1).shape), -1, axis)
            return grad.astype(a.dtype, copy=False)

        values = x.new(values, args=(x,), back_fns=(back_fn,), name=name)
        return Cumulative(values, x.new(indices.astype(np.int64), requires_grad=False))

    running.__name__ = running.__qualname__ = name
    running.__doc__ = (
        f"torch.{name}: ``(values, indices)``, the running {numpy_op[:3]}imum along ``dim`` "
        "and the index of the entry that set it (the later of ties; NaN stays once met); the "
        "gradient of each value goes to that entry."
    )
    return running


cummax = _running("cummax", "maximum")
cummin = _running("cummin", "minimum")


def _logcumsumexp_array(xp, a, axis: int):
    with np.errstate(all="ignore"):
        return scan(xp.logaddexp, a, axis)


def logcumsumexp(input, dim: int, *, out=None):  # noqa: A002
    """torch.logcumsumexp: log(cumsum(exp(input))) along ``dim``, without overflow. The
    gradient of x_j is sum_{t >= j} dout_t exp(x_j - out_t), summed in log space (the
    positive and the negative parts of dout apart), as torch's, so nothing overflows."""
    no_out("logcumsumexp", out)
    x = tensor_input("logcumsumexp", input)
    if not backend.is_float(x.dtype):
        checks.fail("logcumsumexp", "input", "a float tensor", x.dtype, TypeError)
    xp, a = x.xp, x.array
    if a.ndim == 0:
        return x.new(a.copy(), args=(x,), back_fns=(lambda dout: dout,), name="logcumsumexp")
    axis = checks.axis("logcumsumexp", "dim", dim, a.ndim, x.shape)
    result = _logcumsumexp_array(xp, a, axis)

    def back_fn(dout):
        def part(weights):  # log sum_{t >= j} w_t exp(-out_t), a reversed running sum
            with np.errstate(all="ignore"):
                logs = xp.flip(xp.log(weights) - result, axis)
            return xp.flip(_logcumsumexp_array(xp, logs, axis), axis)

        with np.errstate(all="ignore"):
            grad = xp.exp(part(xp.maximum(dout, 0)) + a) - xp.exp(part(xp.maximum(-dout, 0)) + a)
        return grad.astype(a.dtype, copy=False)

    return x.new(result, args=(x,), back_fns=(back_fn,), name="logcumsumexp")


# ------------------------------------------------------------------ differences, integrals
def _slice(x: Node, axis: int, start, stop) -> Node:
    """x[..., start:stop, ...] along ``axis`` (a differentiable slice)."""
    return x[(slice(None),) * axis + (slice(start, stop),)]


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):  # noqa: A002
    """torch.diff: the ``n``-th forward difference along ``dim``, ``prepend`` and ``append``
    (tensors) joined first; booleans differ by xor, as torch's."""
    x = tensor_input("diff", input)
    n = checks.integer("diff", "n", n, low=0)
    if x.ndim == 0:
        raise RuntimeError("diff: expected a tensor of at least 1 dimension, got a 0-d tensor")
    axis = checks.axis("diff", "dim", dim, x.ndim, x.shape)
    given = ((prepend, "prepend"), (x, "input"), (append, "append"))
    parts = [tensor_input("diff", p, name) for p, name in given if p is not None]
    parts = [p if p.ndim else p.expand(*x.shape[:axis], 1, *x.shape[axis + 1 :]) for p in parts]
    x = ops.cat(parts, axis) if len(parts) > 1 else x
    for _ in range(min(n, x.shape[axis])):  # n past the length leaves an empty axis
        later, earlier = _slice(x, axis, 1, None), _slice(x, axis, None, -1)
        if x.dtype == np.bool_:
            x = x.new(later.array != earlier.array, requires_grad=False)
        else:
            x = later - earlier
    return x


def _widths(name: str, y: Node, x, dx, dim: int):
    """The axis of ``dim`` and the widths between samples: ``dx`` (a number), or the
    differences of ``x`` (1-D along the axis, or of y's shape)."""
    axis = checks.axis(name, "dim", dim, y.ndim, y.shape)
    if x is None:
        return axis, 1 if dx is None else checks.real(name, "dx", dx)
    if dx is not None:
        raise TypeError(f"{name}: give x or dx, not both")
    x = tensor_input(name, x, "x")
    if x.ndim == 1:
        if x.shape[0] != y.shape[axis]:
            checks.fail(name, "x", f"{y.shape[axis]} samples (y's axis {dim})", x.shape)
        return axis, diff(x).reshape((-1,) + (1,) * (y.ndim - axis - 1))
    return axis, diff(x, dim=axis)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """torch.trapezoid: the integral of samples ``y`` along ``dim`` by the trapezoid rule, at
    spacing ``dx`` (1 by default) or at the points ``x``."""
    y = tensor_input("trapezoid", y, "y")
    axis, widths = _widths("trapezoid", y, x, dx, dim)
    heights = _slice(y, axis, 1, None) + _slice(y, axis, None, -1)
    return (heights * widths).sum(axis) / 2


def trapz(y, x=None, *, dx=None, dim: int = -1):
    """torch.trapz: ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """torch.cumulative_trapezoid: the running trapezoid integral along ``dim`` (one fewer
    entry than ``y``)."""
    y = tensor_input("cumulative_trapezoid", y, "y")
    axis, widths = _widths("cumulative_trapezoid", y, x, dx, dim)
    heights = _slice(y, axis, 1, None) + _slice(y, axis, None, -1)
    return reduce.cumsum(heights * widths, axis) / 2


# ------------------------------------------------------------------ covariance
def cov(input, *, correction: int = 1, fweights=None, aweights=None):  # noqa: A002
    """torch.cov: the covariance matrix of the variables in the rows of ``input`` (one
    variable, a 1-D input or one row: a 0-d result), observations in the columns, weighted
    by integer ``fweights`` and float ``aweights``; normalised by torch's rule (a divisor
    that is not positive gives inf or NaN, as torch's)."""
    x = tensor_input("cov", input)
    if x.ndim > 2:
        checks.fail("cov", "input", "a 1-D or 2-D tensor (variables, observations)", x.shape)
    matrix = x.reshape(1, -1) if x.ndim < 2 else x
    matrix = (
        matrix if backend.is_float(matrix.dtype) else matrix._cast("cov", backend.DEFAULT_FLOAT)
    )
    n = matrix.shape[1]
    weights = None
    for given, name in ((fweights, "fweights"), (aweights, "aweights")):
        if given is None:
            continue
        w = tensor_input("cov", given, name)
        if w.ndim != 1 or w.shape[0] != n:
            checks.fail("cov", name, f"a 1-D tensor of {n} observations", w.shape)
        if name == "fweights" and w.dtype.kind not in "iu":
            checks.fail("cov", name, "integers", w.dtype, TypeError)
        if bool((w.array < 0).any()):
            checks.fail("cov", name, "non-negative", "negative entries")
        w = w.to(dtype=matrix.dtype) if w.dtype != matrix.dtype else w
        weights = w if weights is None else weights * w
    total = n if weights is None else weights.sum()
    mean = (matrix if weights is None else matrix * weights).sum(1, keepdims=True) / total
    if weights is None:
        divisor = n - correction
    elif correction == 0:
        divisor = total
    elif aweights is None:
        divisor = total - correction
    else:
        a = tensor_input("cov", aweights, "aweights").to(dtype=matrix.dtype)
        divisor = total - correction * (weights * a).sum() / total
    centred = matrix - mean
    weighted = centred if weights is None else centred * weights
    products = weighted @ centred.t()  # (V, V)
    if isinstance(divisor, Node):
        with np.errstate(all="ignore"):
            c = products / divisor.clamp(min=0)
    else:  # 0 (or less): inf where the sum is not 0, NaN where it is, as torch's
        c = products * (1 / divisor if divisor > 0 else math.inf)
    return c.reshape(()) if c.shape == (1, 1) else c  # one variable: 0-d, as torch's


def corrcoef(input):  # noqa: A002
    """torch.corrcoef: Pearson's correlation coefficients of the rows of ``input``, the
    covariance over the product of standard deviations, clamped into [-1, 1] as torch's."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    return (c / std.reshape(-1, 1) / std.reshape(1, -1)).clamp(-1, 1)


# ------------------------------------------------------------------ norms and distances
def renorm(input, p, dim: int, maxnorm):  # noqa: A002
    """torch.renorm: each slice of ``input`` along ``dim`` whose p-norm exceeds ``maxnorm`` is
    scaled to norm ``maxnorm`` (by maxnorm / (norm + 1e-7), as torch's); the scale is
    differentiated too, as torch's."""
    x = tensor_input("renorm", input)
    axis = checks.axis("renorm", "dim", dim, max(x.ndim, 1), x.shape)
    checks.real("renorm", "maxnorm", maxnorm, low=0)
    if not (checks.is_real(p) and (p >= 1 or p == math.inf)):
        checks.fail("renorm", "p", "a number >= 1 or inf (tricycle has no p < 1)", p)
    others = tuple(a for a in range(x.ndim) if a != axis)
    norm = x.norm(p, dim=others, keepdim=True) if others else x.abs()
    over = norm.array > maxnorm
    scale = (maxnorm / (norm + 1e-7)) * over.astype(x.dtype) + (~over).astype(x.dtype)
    return x * scale


def dist(input, other, p: float = 2):  # noqa: A002
    """torch.dist: the p-norm of input - other (broadcast), a 0-d tensor."""
    x = tensor_input("dist", input)
    return (x - tensor_input("dist", other, "other")).norm(p)


def pdist(input, p: float = 2):  # noqa: A002
    """torch.pdist: the p-norm distances between the rows of ``input`` (N, M), every pair i < j
    in row order: N (N - 1) / 2 values; the gradient is 0 between equal rows, as torch's."""
    x = tensor_input("pdist", input)
    if x.ndim != 2:
        checks.fail("pdist", "input", "a 2-D tensor (N, M)", x.shape)
    if not (checks.is_real(p) and (p >= 1 or p == math.inf)):
        checks.fail("pdist", "p", "a number >= 1 or inf (tricycle has no p < 1)", p)
    first, second = map(x.xp.asarray, np.triu_indices(x.shape[0], 1))  # pairs i < j, in order
    if len(first) == 0:
        return x.new(x.xp.zeros(0, dtype=x.dtype), requires_grad=False)
    return (x[first] - x[second]).norm(p, dim=-1)
