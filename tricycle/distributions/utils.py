"""What the distributions share, as ``torch.distributions.utils``: parameters as broadcast
Tensors (``broadcast_all``), probabilities and logits each from the other, the lazily derived
parameter (``lazy_property``), sample shapes, and sums over the rightmost axes.

Every conversion here is made of tricycle's differentiable ops (``clip``, ``log``,
``sigmoid``, ``Softmax``, ``Tensor.expand``), so a gradient reaches the parameters a user
gave, whichever form (probs or logits) a formula reads.
"""

import functools
import math

import numpy as np

from tricycle import backend, binary, checks, factories, reduce, unary
from tricycle.functions import Softmax
from tricycle.grad_modes import enable_grad
from tricycle.tensor import Tensor, as_tensor


def broadcast_all(owner: str, **values) -> tuple[Tensor, ...]:
    """The parameters ``values`` (Tensors, arrays or numbers, by name) as float Tensors of one
    broadcast shape on one device, in the order given. A number takes the dtype and device
    of the first Tensor (float32 if there is none); a Tensor of another shape is expanded,
    differentiably (its gradient is summed back). Errors name ``owner`` and the parameter."""
    tensors = {}
    for name, value in values.items():
        if isinstance(value, Tensor) or not checks.is_real(value):
            tensors[name] = _float_tensor(owner, name, value)
    like = next(iter(tensors.values()), None)
    out = []
    for name, value in values.items():
        if name in tensors:
            out.append(tensors[name])
        elif like is None:
            out.append(Tensor(np.asarray(value, dtype=backend.DEFAULT_FLOAT), requires_grad=False))
        else:
            out.append(binary.constant(float(value), like, owner))
    if len(tensors) > 1:
        backend.check_same_device(owner, *(t.array for t in tensors.values()))
    shapes = [t.shape for t in out]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        given = ", ".join(f"{n} {s}" for n, s in zip(values, shapes))
        raise ValueError(
            f"{owner}: the shapes of the parameters do not broadcast: {given}"
        ) from None
    return tuple(t if t.shape == shape else t.expand(shape) for t in out)


def _float_tensor(owner: str, name: str, value) -> Tensor:
    """``value`` (a Tensor, array or list) as a floating Tensor, else a TypeError."""
    if isinstance(value, str | bytes) or value is None:
        checks.fail(owner, name, "a Tensor, an array or a number", value, TypeError)
    tensor = as_tensor(value)
    if not backend.is_float(tensor.dtype):
        expected = "floating (convert it: tricycle.tensor(values, dtype=tricycle.float64))"
        checks.fail(owner, f"{name}'s dtype", expected, tensor.dtype, TypeError)
    return tensor


def parameter(owner: str, name: str, value, min_ndim: int = 0) -> Tensor:
    """One parameter (``Categorical``'s probs or logits) as a floating Tensor of at least
    ``min_ndim`` axes."""
    tensor = _float_tensor(owner, name, value)
    if tensor.ndim < min_ndim or (min_ndim and tensor.shape[-1] == 0):
        expected = f"a tensor with at least {min_ndim} axis and a non-empty last axis"
        checks.fail(owner, f"{name}'s shape", expected, tensor.shape)
    return tensor


def as_sample_shape(owner: str, sample_shape) -> tuple[int, ...]:
    """``sample_shape`` (a tuple of sizes, or one size) as a shape tuple."""
    return factories.as_shape(f"{owner}.sample", sample_shape)


def value_tensor(like: Tensor, value) -> Tensor:
    """A value given to ``log_prob`` (a Tensor, array or number) as a Tensor beside ``like``:
    a Tensor as it is, anything else a constant (on like's device)."""
    return binary.constant(value, like, "log_prob")


def sum_rightmost(value: Tensor, n: int) -> Tensor:
    """``value`` summed over its last ``n`` axes (itself for n = 0)."""
    return value if n == 0 else reduce.sum(value, axis=tuple(range(value.ndim - n, value.ndim)))


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into [eps, 1 - eps] (eps the dtype's machine epsilon), so that
    their logarithms (and those of 1 - p) stay finite; the gradient passes inside."""
    eps = float(np.finfo(probs.dtype).eps)
    return unary.clip(probs, eps, 1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log p for a categorical distribution; the log-odds log p - log(1 - p) for a binary one."""
    clamped = clamp_probs(probs)
    if is_binary:
        return unary.log(clamped) - unary.log(unary.rsub_scalar(clamped, 1.0))
    return unary.log(clamped)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """The sigmoid of log-odds (binary), or the softmax of logits over the last axis."""
    return unary.sigmoid(logits) if is_binary else Softmax()(logits)


class lazy_property:  # noqa: N801 - torch's name
    """A parameter derived from the one given (``probs`` from ``logits``, or back), computed on
    first use and kept on the instance. It is computed with the graph recorded, even inside
    ``no_grad`` (a ``sample`` may be first to ask), so later uses still reach the given
    parameter's gradient. A distribution's validation skips a parameter not yet computed:
    it was derived from a checked one."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value  # the next lookup finds it directly
        return value


def nan_like(owner_shape: tuple, like: Tensor) -> Tensor:
    """NaN in ``owner_shape``, of like's dtype and device: an undefined mean or mode."""
    return factories.full(owner_shape, math.nan, dtype=like.dtype, device=like.device)


def _tril_positions(n: int, diag: int) -> np.ndarray:
    """The flat positions i n + j of an n x n matrix's entries with j <= i + diag, row by row."""
    rows, cols = np.tril_indices(n, k=diag)
    return rows * n + cols


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (a batch of) n x n matrices on and below diagonal ``diag`` (0 the main,
    -1 below it), row by row, as vectors: torch's ``distributions.utils.tril_matrix_to_vec``."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"tril_matrix_to_vec: diag ({diag}) provided is outside [{-n}, {n - 1}].")
    positions = mat.new(mat.xp.asarray(_tril_positions(n, diag)), requires_grad=False)
    return mat.reshape(mat.shape[:-2] + (n * n,))[..., positions]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """(A batch of) vectors laid out on and below diagonal ``diag`` of n x n matrices, row by
    row, zeros elsewhere: the inverse of ``tril_matrix_to_vec``; n is the root of
    n^2 + (1 + 2 diag) n - |diag| (diag + 1) = 2 len(vec), which must be a whole number."""
    k = vec.shape[-1]
    b = 1 + 2 * diag
    root = (-b + math.sqrt(b * b + 8 * k + 4 * abs(diag) * (diag + 1))) / 2
    if round(root) - root > float(np.finfo(vec.dtype).eps):
        raise ValueError(
            f"vec_to_tril_matrix: the size of last dimension is {k} which cannot be expressed "
            "as the lower triangular part of a square D x D matrix."
        )
    n = round(root)
    positions = _tril_positions(n, diag)
    index = vec.new(vec.xp.asarray(positions), requires_grad=False).expand(vec.shape)
    flat = factories.zeros(vec.shape[:-1] + (n * n,), dtype=vec.dtype, device=vec.device)
    return flat.scatter(-1, index, vec).reshape(vec.shape[:-1] + (n, n))


__all__ = [
    "as_sample_shape",
    "broadcast_all",
    "clamp_probs",
    "lazy_property",
    "logits_to_probs",
    "nan_like",
    "parameter",
    "probs_to_logits",
    "sum_rightmost",
    "tril_matrix_to_vec",
    "value_tensor",
    "vec_to_tril_matrix",
]
