"""Student's t and Fisher-Snedecor's F, the ratios of normal and chi-squared draws, as
torch's ``StudentT(df, loc, scale)`` and ``FisherSnedecor(df1, df2)``:

    StudentT:  loc + scale X / sqrt(Z / df),   X ~ N(0, 1), Z ~ Chi2(df)
               log p(x) = -(df + 1)/2 log(1 + y^2 / df) - log scale - log(df)/2 - log(pi)/2
                          - lgamma(df / 2) + lgamma((df + 1) / 2),   y = (x - loc) / scale
    FisherSnedecor: X1 / X2,   X1 ~ Gamma(df1 / 2, df1 / 2), X2 ~ Gamma(df2 / 2, df2 / 2)

Both are reparameterised, the chi-squared and gamma draws implicitly (``gamma``), so the
gradient of a draw reaches the degrees of freedom too. Moments that do not exist are NaN
(or inf where they diverge), as torch's.
"""

import math

import numpy as np

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import Chi2, Gamma, rebuilt
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor
from tricycle.torch_special import digamma, lgamma


def _nan_where(t: Tensor, mask) -> Tensor:
    """t with NaN where ``mask`` (an array): a moment that does not exist there."""
    return t.masked_fill(t.xp.broadcast_to(mask, t.shape), math.nan)


class StudentT(Distribution):
    """Student's t of ``df`` degrees of freedom, shifted by ``loc`` and scaled by ``scale``
    (df, scale > 0; all broadcast)."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None):
        self.df, self.loc, self.scale = broadcast_all("StudentT", df=df, loc=loc, scale=scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "StudentT":
        return rebuilt(self, batch_shape, lambda s: StudentT(
            self.df.expand(s), self.loc.expand(s), self.scale.expand(s),
            validate_args=False))  # fmt: skip

    @property
    def mean(self) -> Tensor:
        return _nan_where(self.loc * 1, self.df.array <= 1)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale^2 df / (df - 2) for df > 2, inf for 1 < df <= 2, NaN for df <= 1."""
        df = self.df.array
        variance = self.scale**2 * self.df / (self.df - 2)
        variance = variance.masked_fill((df <= 2) & (df > 1), math.inf)
        return _nan_where(variance, df <= 1)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = factories.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        df = self.df
        y = (value - self.loc) / self.scale
        log_z = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * df)
            - lgamma(0.5 * (df + 1))
        )
        return -0.5 * (df + 1) * (y**2 / df).log1p() - log_z

    def entropy(self) -> Tensor:
        df = self.df
        log_beta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (
            self.scale.log()
            + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
            + 0.5 * df.log()
            + log_beta
        )


class FisherSnedecor(Distribution):
    """The F distribution of ``df1`` and ``df2`` degrees of freedom (both > 0, broadcast)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args: bool | None = None):
        self.df1, self.df2 = broadcast_all("FisherSnedecor", df1=df1, df2=df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "FisherSnedecor":
        return rebuilt(self, batch_shape, lambda s: FisherSnedecor(
            self.df1.expand(s), self.df2.expand(s), validate_args=False))  # fmt: skip

    @property
    def mean(self) -> Tensor:
        return _nan_where(self.df2 / (self.df2 - 2), self.df2.array <= 2)

    @property
    def mode(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        return _nan_where((df1 - 2) / df1 * df2 / (df2 + 2), df1.array <= 2)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        variance = 2 * df2**2 * (df1 + df2 - 2) / (df1 * (df2 - 2) ** 2 * (df2 - 4))
        return _nan_where(variance, df2.array <= 4)

    def rsample(self, sample_shape=()) -> Tensor:
        """X1 / X2 of the two gammas, kept at least the dtype's smallest normal number."""
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape)
        ratio = x1 / x2
        ratio.array[...] = ratio.xp.maximum(ratio.array, np.finfo(ratio.dtype).tiny)
        return ratio

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.df1)
        half1, half2, ratio = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = lgamma(half1 + half2) - lgamma(half1) - lgamma(half2)
        t2 = half1 * ratio.log() + (half1 - 1) * value.log()
        t3 = (half1 + half2) * (ratio * value).log1p()
        return t1 + t2 - t3


__all__ = ["FisherSnedecor", "StudentT"]
