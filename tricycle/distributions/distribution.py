"""``Distribution``: the base of every distribution, as ``torch.distributions.Distribution``.

A distribution holds its parameters as Tensors and answers in Tensors made by tricycle's
differentiable ops, so ``log_prob``, ``entropy``, ``mean`` ... carry gradients back to the
parameters. Its shapes are torch's: ``batch_shape``, the shape over which parameters are
batched (independent distributions side by side), and ``event_shape``, the shape of one
draw (() for a number, (K,) for a one-hot vector). A draw of ``sample(sample_shape)`` has
shape ``sample_shape + batch_shape + event_shape``; ``log_prob(value)`` takes such a value
(or any that broadcasts against batch_shape + event_shape) and returns one log-density per
event: ``sample_shape + batch_shape``.

``sample`` draws without a graph; ``rsample`` (the reparameterised families: ``has_rsample``)
draws as a differentiable function of the parameters and noise drawn apart from them, so
that a gradient flows through the draw (a VAE's loss). Every draw comes from tricycle's
generator (``tricycle.manual_seed`` repeats it), made on the host and placed on the
parameters' device, as ``tricycle.randn`` does.

Validation (torch's default: on; ``validate_args=False`` or
``Distribution.set_default_validate_args(False)`` turns it off) checks the parameters
against ``arg_constraints`` when the distribution is made and the values given to
``log_prob`` against ``support``, and raises a ValueError naming the distribution, the
parameter or value, its shape, the constraint and the values that break it. Checking reads
the values back to the host.
"""

import numpy as np

from tricycle import backend, checks, factories, unary
from tricycle.distributions import constraints
from tricycle.distributions.utils import as_sample_shape, value_tensor
from tricycle.graph import no_grad
from tricycle.tensor import Tensor


class Distribution:
    """The base class: shapes, validation, ``sample`` from ``rsample``, ``stddev`` and
    ``perplexity`` from the others. A family defines ``arg_constraints``, ``support`` and
    the formulas it has; the others raise NotImplementedError naming the family."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support: constraints.Constraint | None = None
    _validate_args = True  # torch's default (Python's __debug__)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for every distribution made after (unless one is given
        ``validate_args``): validation reads values back, which a fast loop may not want."""
        checks.boolean("Distribution.set_default_validate_args", "value", value)
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        checks.boolean(type(self).__name__, "validate_args", validate_args, optional=True)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name in self.__dict__:  # a lazily derived parameter was not given: skip it
                    what = f"{type(self).__name__}: parameter {name}"
                    self._check(constraint, self.__dict__[name], what, "satisfy the constraint")

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of one draw, without the batch."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple[int, ...]:
        """sample_shape + batch_shape + event_shape: the shape of a draw."""
        sample_shape = as_sample_shape(type(self).__name__, sample_shape)
        return sample_shape + self._batch_shape + self._event_shape

    # ------------------------------------------------------------------ expand
    expand_params: tuple[str, ...] = ()  # the parameters ``expand`` broadcasts (a family's)

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """This distribution with its batch broadcast to ``batch_shape`` (torch's): the same
        family, its parameters ``expand``-ed (differentiably, no copy) to the new batch."""
        if not self.expand_params:
            raise NotImplementedError(f"{type(self).__name__}.expand")
        batch_shape = self.expanded_shape(batch_shape)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for param in self.expand_params:
            value = self.__dict__.get(param)
            if isinstance(value, Tensor):  # a lazily derived parameter is derived anew
                event = value.shape[len(self._batch_shape) :]
                new.__dict__[param] = value.expand(batch_shape + event)
        new._batch_shape = batch_shape
        return new

    def expanded_shape(self, batch_shape) -> tuple:
        """``batch_shape`` as a tuple, checked to be one this batch broadcasts to (``expand``'s
        argument); a ValueError naming the family otherwise."""
        name = type(self).__name__
        shape = factories.as_shape(f"{name}.expand", batch_shape)
        try:
            fits = np.broadcast_shapes(self._batch_shape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"{name}.expand: the batch shape {self._batch_shape} does not broadcast to "
                f"{shape}"
            )
        return shape

    # ------------------------------------------------------------------ draws
    def sample(self, sample_shape=()) -> Tensor:
        """A draw of shape sample_shape + batch_shape + event_shape, with no graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterised draw: a differentiable function of the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__}.rsample: its draws are not a differentiable function of "
            "its parameters (has_rsample is False); use sample() with a score-function "
            "(REINFORCE) estimator, -(log_prob(sample) * reward)"
        )

    # ------------------------------------------------------------------ formulas
    def log_prob(self, value) -> Tensor:
        """The log of the density (or mass) at ``value``, one per event."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob")

    def cdf(self, value) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.cdf")

    def icdf(self, value) -> Tensor:
        """The inverse of the cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.icdf")

    def entropy(self) -> Tensor:
        """The entropy, one per distribution of the batch: batch_shape."""
        raise NotImplementedError(f"{type(self).__name__}.entropy")

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return unary.exp(self.entropy())

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along a new first axis."""
        raise NotImplementedError(f"{type(self).__name__}.enumerate_support")

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: the square root of the variance."""
        return unary.sqrt(self.variance)

    # ------------------------------------------------------------------ validation
    def _value(self, value, like: Tensor) -> Tensor:
        """``value`` given to ``log_prob`` (or ``cdf``) as a Tensor beside ``like``, checked
        against the shapes and the support when validating."""
        value = value_tensor(like, value)
        if self._validate_args:
            self._validate_sample(value)
        return value

    def _validate_sample(self, value: Tensor) -> None:
        """A value's last axes must be the event shape, the ones before them broadcast with
        the batch shape, and every value lie in the support."""
        name, shape = type(self).__name__, value.shape
        n = len(self._event_shape)
        if shape[len(shape) - n :] != self._event_shape:
            raise ValueError(
                f"{name}.log_prob: the last axes of value must be the event shape "
                f"{self._event_shape}, got a value of shape {shape}"
            )
        expected = self._batch_shape + self._event_shape
        try:
            np.broadcast_shapes(shape, expected)
        except ValueError:
            raise ValueError(
                f"{name}.log_prob: a value of shape {shape} does not broadcast with "
                f"batch_shape + event_shape {expected}"
            ) from None
        if self.support is not None:
            self._check(self.support, value, f"{name}.log_prob: value", "lie in the support")

    def _check(self, constraint, value: Tensor, what: str, must: str = "satisfy") -> None:
        """Raise a ValueError, ``what`` (of shape ...) must ``must`` ``constraint``, unless every
        element (event) of ``value`` lies in ``constraint``."""
        valid = backend.to_host_array(constraint.check(value))
        if np.all(valid):
            return
        host = backend.to_host_array(value.array)
        n = host.ndim - constraint.event_dim  # the axes judged one element (event) at a time
        lead = np.broadcast_shapes(valid.shape, host.shape[:n])  # a batched bound widens it
        invalid = np.broadcast_to(host, lead + host.shape[n:])[~np.broadcast_to(valid, lead)]
        raise ValueError(
            f"{what} (of shape {value.shape}) must {must} {constraint!r} of {self!r}, "
            f"found invalid values {backend.preview(invalid[:4].tolist())}"
        )

    def __repr__(self) -> str:
        given = []
        for name in self.arg_constraints:
            value = self.__dict__.get(name)
            if isinstance(value, Tensor):
                shown = value.item() if value.size == 1 else f"shape {value.shape}"
                given.append(f"{name}: {shown}")
        return f"{type(self).__name__}({', '.join(given)})"


__all__ = ["Distribution"]


class CentredAtLoc(Distribution):
    """A family whose mean and mode are its parameter ``loc`` (Normal, Laplace, the
    multivariate normals; VonMises' circular mean)."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc
