"""The categorical distribution with one-hot draws, as ``torch.distributions.OneHotCategorical``:
a ``Categorical`` whose event is a vector of K zeros with a single one (event_shape (K,)).
Its formulas are the categorical's, read at the class the one-hot vector names."""

from tricycle.distributions import constraints
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.tensor import Tensor


class CategoricalParameters:
    """``probs``, ``logits`` and ``param_shape`` of a distribution over K classes read from
    the ``Categorical`` it holds (``_categorical``): OneHotCategorical's, Multinomial's."""

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape


class OneHotCategorical(CategoricalParameters, Distribution):
    """One-hot vectors of K classes, given ``probs`` or ``logits`` as ``Categorical``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most probable class."""
        return _one_hot(self._categorical.mode, self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """One-hot vectors of shape sample_shape + batch_shape + (K,), in the probs' dtype."""
        return _one_hot(self._categorical.sample(sample_shape), self.probs)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.probs)
        return self._categorical._log_prob(value.argmax(dim=-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(K,) + batch_shape + (K,): the K one-hot vectors (size-1 batch axes unless
        ``expand``)."""
        ids = self._categorical.enumerate_support(expand)
        return _one_hot(ids, self.probs)

    def __repr__(self) -> str:
        return f"OneHotCategorical({self._categorical!r})"


def _one_hot(ids: Tensor, like: Tensor) -> Tensor:
    """The class ids as one-hot vectors (a new last axis of size K), of like's dtype."""
    xp = like.xp
    eye = xp.eye(like.shape[-1], dtype=like.dtype)  # (K, K): row k is class k's vector
    return like.new(eye[ids.array], requires_grad=False)


__all__ = ["OneHotCategorical"]
