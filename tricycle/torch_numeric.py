"""torch's numeric odds and ends: ``gradient`` (finite differences along axes), the samplers
``binomial`` and ``poisson`` (on tricycle's generator), the deprecated norms
``frobenius_norm`` and ``nuclear_norm`` (``linalg.vector_norm`` and ``linalg.matrix_norm``
under torch's old names, with torch's warning) and ``nextafter`` (the next float after
``input`` towards ``other``; a Tensor method, with ``nextafter_``).

``gradient`` is a composition of differentiable ops (slices, arithmetic, ``cat``): its
gradient flows to the input (and to coordinate tensors), as torch's. The draws are made on
the host from tricycle's generator (or ``generator=``) and moved to the input's device, as
every draw of tricycle (``tricycle.torch_random``): seeded, they repeat, but they are not
torch's numbers. As torch's, ``poisson`` passes a gradient of 0 and ``binomial``'s backward
raises NotImplementedError; ``nextafter`` passes ``input``'s gradient through (1) and 0 to
``other``.
"""

import warnings

import numpy as np

from tricycle import backend, checks, linalg, ops
from tricycle import random as tricycle_random
from tricycle.graph import Node
from tricycle.special_more import float_tensors
from tricycle.torch_functions import no_out, tensor_input
from tricycle.torch_pointwise import of_two


# ------------------------------------------------------------------ gradient
def _spacings(input, spacing, dims: list[int]) -> list:  # noqa: A002 - torch's names
    """One spacing per axis of ``dims``: a number (the step) or a 1-d coordinate tensor."""
    if spacing is None:
        return [1.0] * len(dims)
    if isinstance(spacing, Node) and spacing.ndim == 0:
        spacing = spacing.item()
    if isinstance(spacing, (int, float)) and not isinstance(spacing, bool):
        return [float(spacing)] * len(dims)
    if not isinstance(spacing, (list, tuple)):
        checks.fail("gradient", "spacing", "a number, or a list of numbers or of 1-d "
                    "coordinate tensors, one per dim", spacing, TypeError)  # fmt: skip
    if len(spacing) != len(dims):
        raise RuntimeError(f"gradient: expected spacing to be unspecified, a scalar or a list as "
                           f"long as dim, but got a spacing of length {len(spacing)} and "
                           f"{len(dims)} dims")  # fmt: skip
    steps = []
    for h, d in zip(spacing, dims):
        if isinstance(h, Node) and h.ndim != 1:
            raise RuntimeError(f"gradient: each coordinate tensor of spacing must have one "
                               f"dimension, got shape {h.shape}")  # fmt: skip
        if isinstance(h, Node) and h.shape[0] != input.shape[d]:
            raise RuntimeError(f"gradient: the coordinates of dim {d} have {h.shape[0]} "
                               f"values, but the input has {input.shape[d]} along it")  # fmt: skip
        steps.append(h if isinstance(h, Node) else float(h))
    return steps


def _along(x: Node, dim: int, h, edge_order: int) -> Node:
    """The finite-difference derivative of ``x`` along ``dim``: central inside, one-sided at
    the edges (to first or second order), for a step ``h`` or coordinates ``h``."""
    n = x.shape[dim]
    part = lambda start, length: x.narrow(dim, start, length)  # noqa: E731
    if not isinstance(h, Node):
        inside = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (-3 * part(0, 1) + 4 * part(1, 1) - part(2, 1)) / (2 * h)
            last = (3 * part(n - 1, 1) - 4 * part(n - 2, 1) + part(n - 3, 1)) / (2 * h)
        return ops.cat([first, inside, last], dim)
    c = h.reshape((n,) + (1,) * (x.ndim - 1 - dim))  # the coordinates along dim
    dx = c.narrow(0, 1, n - 1) - c.narrow(0, 0, n - 1)
    left, right = dx.narrow(0, 0, n - 2), dx.narrow(0, 1, n - 2)
    inside = (
        left * left * part(2, n - 2) - right * right * part(0, n - 2)
        + (right * right - left * left) * part(1, n - 2)
    ) / (right * left * left + right * right * left)  # fmt: skip
    if edge_order == 1:
        first = (part(1, 1) - part(0, 1)) / dx.narrow(0, 0, 1)
        last = (part(n - 1, 1) - part(n - 2, 1)) / dx.narrow(0, n - 2, 1)
    else:
        d1, d2 = dx.narrow(0, 0, 1), dx.narrow(0, 1, 1)
        first = (
            -(2 * d1 + d2) / (d1 * (d1 + d2)) * part(0, 1) + (d1 + d2) / (d1 * d2) * part(1, 1)
            - d1 / (d2 * (d1 + d2)) * part(2, 1)
        )  # fmt: skip
        d1, d2 = dx.narrow(0, n - 3, 1), dx.narrow(0, n - 2, 1)
        last = (
            d2 / (d1 * (d1 + d2)) * part(n - 3, 1) - (d1 + d2) / (d1 * d2) * part(n - 2, 1)
            + (2 * d2 + d1) / (d2 * (d1 + d2)) * part(n - 1, 1)
        )  # fmt: skip
    return ops.cat([first, inside, last], dim)


def gradient(input, *, spacing=None, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002
    """torch.gradient: the derivative of ``input`` along each axis of ``dim`` (all by default)
    by finite differences, as a tuple of tensors of ``input``'s shape. ``spacing`` is the
    step (a number, or one per axis) or, per axis, a 1-d tensor of coordinates; inside,
    central differences exact for quadratics; at the edges, one-sided of ``edge_order`` 1 or
    2. An integer input gives float32."""
    x = tensor_input("gradient", input)
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise RuntimeError(f"gradient: only edge_order=1 and edge_order=2 are supported, got "
                           f"{edge_order!r}")  # fmt: skip
    if dim is None:
        dims = list(range(x.ndim))
    else:
        given = [dim] if checks.is_integer(dim) else list(dim)
        dims = [checks.axis("gradient", "dim", d, max(x.ndim, 1), x.shape) for d in given]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"gradient: dim {given} names an axis more than once")
    steps = _spacings(x, spacing, dims)
    for d in dims:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError(f"gradient: each axis differentiated needs at least edge_order "
                               f"+ 1 = {edge_order + 1} values; dim {d} of shape {x.shape} has "
                               f"{x.shape[d]}")  # fmt: skip
    x = x if backend.is_float(x.dtype) else x.to(dtype=backend.DEFAULT_FLOAT)
    float_steps = [
        h.to(dtype=backend.DEFAULT_FLOAT) if isinstance(h, Node) and not backend.is_float(h.dtype)
        else h for h in steps
    ]  # fmt: skip
    return tuple(_along(x, d, h, edge_order) for d, h in zip(dims, float_steps))


# ------------------------------------------------------------------ samplers
def _zero_grad(x: Node):
    return lambda dout: x.xp.zeros(x.shape, dtype=x.dtype)


def poisson(input, generator=None):  # noqa: A002 - torch's names
    """torch.poisson: a draw of Poisson(rate) for each rate of ``input`` (floats, >= 0), in its
    shape, dtype and device; its gradient is 0, as torch's."""
    x = tensor_input("poisson", input)
    if not backend.is_float(x.dtype):
        dtype = np.dtype(x.dtype).name
        raise NotImplementedError(f"poisson: not implemented for dtype {dtype}, as torch's; "
                                  "give float rates")  # fmt: skip
    rate = backend.to_host_array(x.array).astype(np.float64)
    if not (rate >= 0).all():  # NaN too
        raise RuntimeError(f"poisson: invalid Poisson rate, expected rate to be non-negative, "
                           f"got {rate[~(rate >= 0)][:3].tolist()}")  # fmt: skip
    draws = tricycle_random.given_or_ours("poisson", generator).poisson(rate)
    array = x.xp.asarray(draws.astype(x.dtype))
    return x.new(array, args=(x,), back_fns=(_zero_grad(x),), name="poisson")


def _no_binomial_grad(dout):
    raise NotImplementedError("binomial: the derivative is not implemented, as torch's")


def binomial(count, prob, generator=None):
    """torch.binomial: a draw of Binomial(count, prob) for each pair (broadcast): ``count``
    and ``prob`` float tensors of one dtype; a count is truncated to an integer (below 0: 0),
    a probability clipped to [0, 1], NaN gives NaN. Backward raises, as torch's."""
    for name, value in (("count", count), ("prob", prob)):
        tensor_input("binomial", value, name)
    if not backend.is_float(count.dtype):
        raise ValueError(f"binomial: only floating-point dtypes are supported for count, got "
                         f"{np.dtype(count.dtype).name}")  # fmt: skip
    if prob.dtype != count.dtype:
        raise RuntimeError(f"binomial: prob's dtype {np.dtype(prob.dtype).name} must be count's "
                           f"{np.dtype(count.dtype).name}")  # fmt: skip
    xp = backend.check_same_device("binomial", count.array, prob.array)
    n, p = (backend.to_host_array(t.array).astype(np.float64) for t in (count, prob))
    try:
        n, p = np.broadcast_arrays(n, p)
    except ValueError:
        raise ValueError(f"binomial: the shapes of count {count.shape} and prob {prob.shape} "
                         "cannot be broadcast together") from None  # fmt: skip
    unknown = np.isnan(n) | np.isnan(p)
    trials = np.where(unknown | (n < 0), 0, np.trunc(np.nan_to_num(n))).astype(np.int64)
    chance = np.clip(np.nan_to_num(p), 0, 1)
    draws = tricycle_random.given_or_ours("binomial", generator).binomial(trials, chance)
    array = xp.asarray(np.where(unknown, np.nan, draws).astype(count.dtype))
    return count.new(array, args=(count, prob), back_fns=(_no_binomial_grad,) * 2,
                     name="binomial")  # fmt: skip


# ------------------------------------------------------------------ norms
def _deprecated(name: str, instead: str) -> None:
    warnings.warn(f"{name} is deprecated, as torch's (kept for old code); use {instead}",
                  UserWarning, stacklevel=3)  # fmt: skip


def frobenius_norm(input, dim, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.frobenius_norm (deprecated): ``linalg.vector_norm(input, 2, dim, keepdim)`` over
    at most 2 axes (``()``: all of them)."""
    no_out("frobenius_norm", out)
    _deprecated("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = (dim,) if checks.is_integer(dim) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"frobenius_norm: expected at most 2 dims, got {dims}")
    x = tensor_input("frobenius_norm", input)
    return linalg.vector_norm(x, 2, dims or None, keepdim)


def nuclear_norm(input, dim=None, keepdim: bool = False, *, out=None):  # noqa: A002
    """torch.nuclear_norm (deprecated): ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``,
    the sum of the singular values over the last two axes (or the two of ``dim``);
    ``nuclear_norm(x, True)`` is torch's keepdim form."""
    no_out("nuclear_norm", out)
    _deprecated("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    x = tensor_input("nuclear_norm", input)
    return linalg.matrix_norm(x, "nuc", (-2, -1) if dim is None else dim, keepdim)


# ------------------------------------------------------------------ nextafter
_nextafter = of_two(
    "nextafter", lambda xp, a, b: xp.nextafter(a, b),
    lambda xp, a, b, out, dout: (xp.where(a == b, 0, dout), xp.zeros_like(dout)), "",
)  # fmt: skip


def nextafter(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.nextafter: the next float after ``input`` towards ``other`` (``other`` itself
    where equal), elementwise in their float dtype; ``input``'s gradient passes through
    (0 where input equals other: the result is other there) and ``other``'s is 0, as torch's."""
    no_out("nextafter", out)
    float_tensors("nextafter", input, other)
    return _nextafter(input, other)
