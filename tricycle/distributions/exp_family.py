"""``ExponentialFamily``, as torch's: the base of families whose density is
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)), with theta the natural parameters, t the
sufficient statistic, F the log-normaliser and k the carrier measure.

A subclass gives ``_natural_params`` (theta, a tuple of Tensors), ``_log_normalizer(*theta)``
(F) and ``_mean_carrier_measure`` (E[k(x)]); the entropy then follows from F alone, as a
Bregman divergence: H = F(theta) - <theta, grad F(theta)> - E[k(x)], grad F taken by autograd
(Nielsen and Nock, Entropies and cross-entropies of exponential families). KL(p || q) between
two members of one family is the Bregman divergence of F, F(theta_q) - F(theta_p) -
<theta_q - theta_p, grad F(theta_p)>, registered for ``kl_divergence``.

As in torch, theta_p enters through detached copies: the entropy and p's side of the
divergence carry no gradient back to p's parameters (q's side does). tricycle's backward
records no graph of its own, so grad F is a constant here, where torch builds it with
``create_graph=True``; the values, and the gradients reaching the parameters, are the same.
Each term <theta_q - theta_p, grad F> is summed over that parameter's own axes (all but the
batch): torch sums over the event's axes, which for a parameter of fewer axes (Wishart's
degrees of freedom) also sums the batch, so its batched divergences differ from
tricycle's (the unbatched ones agree).
"""

import numpy as np

from tricycle import autograd
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.kl import register_kl
from tricycle.grad_modes import enable_grad


def _log_normalizer_and_grads(dist: "ExponentialFamily"):
    """F at detached copies of ``dist``'s natural parameters, the copies and grad F at them."""
    with enable_grad():
        params = [p.detach().requires_grad_() for p in dist._natural_params]
        log_normalizer = dist._log_normalizer(*params)
        grads = autograd.grad(log_normalizer.sum(), params)
    return log_normalizer.detach(), params, grads


class ExponentialFamily(Distribution):
    """The base of exponential families: ``entropy`` and same-family KL from the
    log-normaliser (see the module's docstring)."""

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters theta, a tuple of Tensors."""
        raise NotImplementedError(f"{type(self).__name__}._natural_params")

    def _log_normalizer(self, *natural_params):
        """F(theta), one per distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__}._log_normalizer")

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the expected carrier measure (a number or a Tensor)."""
        raise NotImplementedError(f"{type(self).__name__}._mean_carrier_measure")

    def entropy(self):
        """F(theta) - <theta, grad F(theta)> - E[k(x)], by autograd (no gradient to the
        parameters, as torch's)."""
        log_normalizer, params, grads = _log_normalizer_and_grads(self)
        result = log_normalizer - self._mean_carrier_measure
        for param, grad in zip(params, grads):
            term = (param.detach() * grad).reshape(self._batch_shape + (-1,)).sum(-1)
            result = result - term
        return result


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError(
            "kl_divergence: the cross KL-divergence between different exponential families "
            f"({type(p).__name__}, {type(q).__name__}) cannot be computed using Bregman "
            "divergences"
        )
    log_normalizer, params, grads = _log_normalizer_and_grads(p)
    result = q._log_normalizer(*q._natural_params) - log_normalizer
    batch_ndim = len(np.broadcast_shapes(p.batch_shape, q.batch_shape))
    for p_param, q_param, grad in zip(params, q._natural_params, grads):
        term = (q_param - p_param.detach()) * grad  # summed over the parameter's own axes
        result = result - term.reshape(term.shape[:batch_ndim] + (-1,)).sum(-1)
    return result


__all__ = ["ExponentialFamily"]
