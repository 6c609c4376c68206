"""Transforms that read the last axes together, as torch's: ``SoftmaxTransform`` and
``StickBreakingTransform`` (vectors onto the simplex), ``LowerCholeskyTransform`` (square
matrices onto Cholesky factors), ``IndependentTransform`` (a transform's last batch axes read
as one event) and ``ReshapeTransform`` (an event reshaped).

The stick-breaking map takes K reals to K + 1 probabilities: with offsets o_k = K + 1 - k
(k = 1..K), z_k = sigmoid(x_k - log o_k) is the share of what is left of the stick that the
k-th piece takes, y_k = z_k prod_{j<k} (1 - z_j), and the last piece is what remains. Its
log-Jacobian (on the K free coordinates) is sum_k log sigmoid(x_k - log o_k) - (x_k - log o_k)
+ log y_k, torch's formula. With x = 0 every piece is 1 / (K + 1).
"""

import numpy as np

from tricycle import checks, factories
from tricycle.distributions import constraints
from tricycle.distributions.transform import Transform
from tricycle.distributions.utils import sum_rightmost
from tricycle.nn import functional as F
from tricycle.tensor import Tensor
from tricycle.torch_construction import diag_embed


def _offsets(like: Tensor, n: int, start: int) -> Tensor:
    """log of start, start - 1, ..., start - n + 1: the stick's remaining piece counts."""
    counts = np.arange(start, start - n, -1, dtype=np.float64)
    return like.new(like.xp.asarray(np.log(counts), dtype=like.dtype), requires_grad=False)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis: not a bijection (adding a constant to x changes
    nothing), so it has no log-Jacobian; its ``inv`` is log y."""

    domain, codomain = constraints.real_vector, constraints.simplex

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.softmax(-1)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(Transform):
    """K reals onto the K-simplex of K + 1 probabilities, by breaking a stick (see the
    module's docstring): the bijection ``LogisticNormal`` draws through."""

    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    def __eq__(self, other) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        z = (x - _offsets(x, x.shape[-1], x.shape[-1])).sigmoid()
        left = (1 - z).cumprod(-1)
        return F.pad(z, (0, 1), value=1.0) * F.pad(left, (1, 0), value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        tiny = float(np.finfo(y.dtype).tiny)
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=tiny)
        return y_crop.log() - remaining.log() + _offsets(y, y_crop.shape[-1], y_crop.shape[-1])

    def log_abs_det_jacobian(self, x, y):
        x = x - _offsets(x, x.shape[-1], x.shape[-1])
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _need_axes("StickBreakingTransform.forward_shape", shape, 1)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _need_axes("StickBreakingTransform.inverse_shape", shape, 1)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """A square matrix onto a Cholesky factor: its strict lower triangle kept and its
    diagonal exponentiated (not a bijection of all matrices: the upper triangle is lost)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class IndependentTransform(Transform):
    """``base_transform`` with its last ``reinterpreted_batch_ndims`` batch axes read as one
    event: the same map, its log-Jacobian summed over those axes."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0):  # fmt: skip
        if not isinstance(base_transform, Transform):
            checks.fail("IndependentTransform", "base_transform", "a Transform", base_transform,
                        TypeError)  # fmt: skip
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = checks.non_negative_int(
            "IndependentTransform", "reinterpreted_batch_ndims", reinterpreted_batch_ndims
        )

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)  # fmt: skip

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)  # fmt: skip

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        _need_axes("IndependentTransform", x.shape, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y):
        _need_axes("IndependentTransform.inv", y.shape, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        term = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(term, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """An event of ``in_shape`` reshaped to ``out_shape`` (of the same number of elements);
    its log-Jacobian is 0, one per batch element."""

    bijective, sign = True, 1

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = factories.as_shape("ReshapeTransform", in_shape)
        self.out_shape = factories.as_shape("ReshapeTransform", out_shape)
        if int(np.prod(self.in_shape)) != int(np.prod(self.out_shape)):
            raise ValueError(
                f"ReshapeTransform: in_shape {self.in_shape} and out_shape {self.out_shape} "
                "must hold the same number of elements"
            )
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = _batch_of("ReshapeTransform", x.shape, self.in_shape)
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = _batch_of("ReshapeTransform.inv", y.shape, self.out_shape)
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = x.shape[: x.ndim - len(self.in_shape)]
        return factories.zeros(batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        return _batch_of("ReshapeTransform.forward_shape", tuple(shape), self.in_shape) + (
            self.out_shape
        )

    def inverse_shape(self, shape):
        return _batch_of("ReshapeTransform.inverse_shape", tuple(shape), self.out_shape) + (
            self.in_shape
        )


def _need_axes(owner: str, shape, n: int) -> None:
    """A ValueError unless ``shape`` has at least n axes."""
    if len(shape) < n:
        raise ValueError(
            f"{owner}: expected a tensor of at least {n} axes, got shape {tuple(shape)}"
        )


def _batch_of(owner: str, shape: tuple, event: tuple) -> tuple:
    """The batch part of ``shape``, whose last axes must be ``event``."""
    cut = len(shape) - len(event)
    if cut < 0 or tuple(shape[cut:]) != tuple(event):
        raise ValueError(f"{owner}: expected a shape ending in {event}, got {tuple(shape)}")
    return tuple(shape[:cut])


__all__ = [
    "IndependentTransform",
    "LowerCholeskyTransform",
    "ReshapeTransform",
    "SoftmaxTransform",
    "StickBreakingTransform",
]
