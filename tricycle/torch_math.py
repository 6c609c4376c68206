"""torch's top-level reductions, step functions and distances on tricycle's engine: ``std``,
``var``, ``logsumexp``, ``prod``, ``cumprod``, ``amax``, ``amin``, ``count_nonzero``,
``maximum``, ``minimum``, ``sign``, ``round``, ``floor``, ``ceil``, ``trunc`` and ``cdist``.

Each calls the ``Tensor`` method of the same name (``tricycle.tensor_torch``: the ops of
``reduce`` and ``binary``, whose gradients these are) with torch's argument names and
defaults; ``out=`` is refused, as by ``tricycle.torch_functions``. The step functions
(``sign``, ``round``, ``floor``, ``ceil``, ``trunc``) have gradient 0, as torch's. ``cdist``
is the norm of the difference of every pair of rows.

Where torch and tricycle differ: ``var`` is ``Tensor.var``, numpy's (ddof 0, ``axis``,
``keepdims``) unless a call names one of torch's keywords (``dim``, ``unbiased``,
``correction``, ``keepdim``), as ``tricycle.var`` always was: ``var(x, dim=1)`` is torch's,
``var(x, 1)`` numpy's. ``std`` has no numpy past and is torch's (correction 1).
"""

import math

from tricycle import checks
from tricycle.torch_functions import no_out, tensor_input


# ------------------------------------------------------------------ reductions
def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, out=None):  # noqa: A002
    """torch.std: the standard deviation over ``dim`` (an axis or a tuple; all by default),
    with ``correction`` 1 (Bessel's) unless ``correction`` or ``unbiased=False`` says 0."""
    no_out("std", out)
    if unbiased is not None and correction is not None:
        raise TypeError(f"std: unbiased={unbiased!r} or correction={correction!r}, not both")
    unbiased = True if unbiased is None else unbiased
    return tensor_input("std", input).std(dim, unbiased, keepdim, correction=correction)


def var(input, *args, out=None, **kwargs):  # noqa: A002
    """torch.var with torch's keywords (``dim``, ``unbiased``, ``correction``, ``keepdim``),
    correction 1 by default; without them numpy's (``axis``, ``keepdims``, ``ddof`` 0): see
    the module's doc. ``Tensor.var``."""
    no_out("var", out)
    return tensor_input("var", input).var(*args, **kwargs)


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


# ------------------------------------------------------------------ elementwise
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
    def step(input, *, out=None):  # noqa: A002
        no_out(name, out)
        return getattr(tensor_input(name, input), name)()

    step.__name__ = step.__qualname__ = name
    step.__doc__ = f"torch.{name}: {what}, in the input's dtype; its gradient is 0, as torch's."
    return step


sign = _step("sign", "-1, 0 or 1 as x < 0, x = 0 or x > 0")
floor = _step("floor", "the largest integer <= x")
ceil = _step("ceil", "the smallest integer >= x")
trunc = _step("trunc", "x without its fraction (rounded towards 0)")


def round(input, *, decimals: int = 0, out=None):  # noqa: A001, A002 - torch's names
    """torch.round: x rounded to ``decimals`` decimals, halves to even (as torch's and
    numpy's), in the input's dtype; its gradient is 0, as torch's."""
    no_out("round", out)
    return tensor_input("round", input).round(checks.integer("round", "decimals", decimals))


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
