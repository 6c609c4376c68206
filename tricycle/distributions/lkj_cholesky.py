"""LKJCholesky(dim, concentration eta), as torch's: a distribution over the lower Cholesky
factors L of dim x dim correlation matrices, the matrix L L^T having density proportional to
det(L L^T)^(eta - 1) (eta = 1: uniform over correlation matrices). Per Stan's reference,

    log p(L) = sum_{i=2..D} (2 (eta - 1) + D - i) log L_ii - log C(eta, D)
    log C    = (D - 1) log(pi) / 2 + mvlgamma(eta + (D - 1) / 2 - 1/2, D - 1)
               - (D - 1) lgamma(eta + (D - 1) / 2)

(the (D - i) the Jacobian from L to L L^T). ``sample`` is the onion method of Lewandowski,
Kurowicka and Joe (2009, section 3.2) as torch vectorises it: row i's squared length below
the diagonal is y_i ~ Beta(i / 2, eta + (D - 2) / 2 - i / 2) (row 0: 0), its direction
uniform on the sphere (a normal vector, normalised), and the diagonal what is left,
sqrt(1 - |w_i|^2). Draws come from tricycle's generator; there is no ``rsample`` (torch's
neither).
"""

import math

import numpy as np

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.dirichlet import Beta
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import rebuilt
from tricycle.distributions.utils import broadcast_all
from tricycle.graph import no_grad
from tricycle.tensor import Tensor
from tricycle.torch_construction import diag_embed
from tricycle.torch_special import lgamma, mvlgamma


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): ``dim`` >= 2, ``concentration`` (a Tensor or a
    number, > 0) the batch."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None):
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 2:
            raise ValueError(
                "LKJCholesky: expected dim to be an integer greater than or equal to 2. "
                f"Found dim={dim}."
            )
        self.dim = int(dim)
        (self.concentration,) = broadcast_all("LKJCholesky", concentration=concentration)
        c = self.concentration
        offset = np.concatenate([[0.0], np.arange(self.dim - 1)])  # 0, 0, 1, ..., D - 2
        offset = c.new(c.xp.asarray(offset, dtype=c.dtype), requires_grad=False)
        marginal = c + 0.5 * (self.dim - 2)
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - offset * 0.5)
        super().__init__(c.shape, (self.dim, self.dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "LKJCholesky":
        c = self.concentration
        return rebuilt(self, batch_shape, lambda s: LKJCholesky(
            self.dim, c.expand(s), validate_args=False))  # fmt: skip

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            normal = factories.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = normal.norm(dim=-1, keepdim=True)
            first = factories.arange(self.dim, device=y.device).reshape(self.dim, 1) == 0
            direction = (normal / norm.masked_fill(first.array, 1.0)).masked_fill(first.array, 0.0)
            w = y.sqrt() * direction
            tiny = float(np.finfo(w.dtype).tiny)
            diagonal = (1 - (w * w).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag_embed(diagonal)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.concentration)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = np.arange(2, self.dim + 1)
        c = self.concentration
        order = (c - 1).unsqueeze(-1) * 2 + c.new(c.xp.asarray(self.dim - order, dtype=c.dtype))
        unnormalised = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = c + 0.5 * dm1
        log_normaliser = (
            0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) - lgamma(alpha) * dm1
        )
        return unnormalised - log_normaliser


__all__ = ["LKJCholesky"]
