"""The adaptive softmax (Grave et al., 2016), as PyTorch's ``nn.AdaptiveLogSoftmaxWithLoss``:
a softmax over many classes, cheap where a few of them are most of the data.

The classes are sorted by frequency and cut at ``cutoffs`` [c1, c2, ...]: the head classifies
into the shortlist [0, c1) and one entry per tail cluster ([c1, c2), [c2, c3), ...), and each
cluster has its own small classifier, a projection down to in_features / div_value^(i + 1)
features then up to the cluster's classes. The log-probability of a class in cluster i is
the head's log-probability of the cluster plus the cluster's of the class. ``forward`` scores
each row's target only (running each cluster's classifier on its own rows), ``log_prob``
every class, ``predict`` the most probable class. The layers are torch's (``head`` a Linear,
``tail`` a ModuleList of two-Linear Sequentials), so ``nn.from_torch`` loads torch's
weights.
"""

import math
from collections import namedtuple

import numpy as np

from tricycle import checks
from tricycle.functions import LogSoftmax
from tricycle.layers import Dense, Layer, Sequential
from tricycle.nn.containers import ModuleList
from tricycle.ops import concatenate
from tricycle.tensor import Tensor, as_tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])  # torch's name for (output, loss)


class AdaptiveLogSoftmaxWithLoss(Layer):
    """The adaptive softmax, with torch's arguments: ``in_features``, ``n_classes``,
    ``cutoffs`` (increasing integers in [1, n_classes - 1]), ``div_value`` (each cluster's
    projection divides the features by it once more) and ``head_bias``. ``forward(input,
    target)`` gives (output, loss): each row's log-probability of its target (N,) and their
    negated mean; ``log_prob(input)`` (N, n_classes); ``predict(input)`` (N,) int64."""

    @checks.arguments(
        in_features=checks.positive_int,
        n_classes=checks.positive_int,
        div_value=checks.positive,
        head_bias=checks.boolean,
    )
    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False):  # fmt: skip
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            not all(checks.is_integer(c) or float(c).is_integer() for c in cutoffs)
            or cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1 "
                f"(n_classes={n_classes}), got {cutoffs}"
            )
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Dense(in_features, self.head_size, bias=head_bias)
        tails = []
        for i in range(self.n_clusters):
            hidden = int(in_features // div_value ** (i + 1))  # torch's width, 0 allowed
            classes = self.cutoffs[i + 1] - self.cutoffs[i]
            checks.positive_int(type(self).__name__, f"the width of cluster {i}", hidden)
            tails.append(
                Sequential(
                    Dense(in_features, hidden, bias=False), Dense(hidden, classes, bias=False)
                )
            )
        self.tail = ModuleList(tails)

    def _rows(self, input, target):  # noqa: A002 - torch's name
        """(input (B, in_features), target ids (B,), batched): torch's checks of the shapes."""
        owner = type(self).__name__
        x = as_tensor(input)
        ids = target.array if isinstance(target, Tensor) else target
        ids = ids if hasattr(ids, "dtype") else np.asarray(ids)
        batched = ids.ndim == 1
        if ids.dtype.kind not in "iu":
            raise TypeError(f"{owner}: target must hold integer class ids, got dtype {ids.dtype}")
        if ids.ndim == 1:
            if x.ndim != 2:
                raise RuntimeError(f"{owner}: 1D target tensor expects 2D input tensors, but "
                                   f"found inputs with size {x.shape}")  # fmt: skip
            if x.shape[0] != ids.shape[0]:
                raise RuntimeError(
                    f"{owner}: Input and target should have the same size in the batch "
                    f"dimension, got {x.shape} and {ids.shape}"
                )
        elif ids.ndim == 0:
            if x.ndim != 1:
                raise RuntimeError(f"{owner}: 0D target tensor expects 1D input tensors, but "
                                   f"found inputs with size {x.shape}")  # fmt: skip
            x, ids = x[None], ids[None]
        else:
            raise RuntimeError(f"{owner}: 0D or 1D target tensor expected, multi-target not "
                               f"supported, got target {ids.shape}")  # fmt: skip
        if x.shape[-1] != self.in_features:
            raise ValueError(f"{owner}: expected input (..., {self.in_features}), got {x.shape}")
        return x, x.xp.asarray(ids), batched

    def forward(self, input, target) -> _ASMoutput:  # noqa: A002 - torch's name
        x, ids, batched = self._rows(input, target)
        xp, B = x.xp, x.shape[0]
        if B and (int(ids.min()) < 0 or int(ids.max()) >= self.n_classes):
            raise RuntimeError(
                f"{type(self).__name__}: Target values should be in [0, {self.n_classes - 1}], "
                f"but values in range [{int(ids.min())}, {int(ids.max())}] were found."
            )
        cluster = xp.searchsorted(xp.asarray(self.cutoffs), ids, side="right")  # (B,) 0: head
        head_ids = xp.where(cluster == 0, ids, self.shortlist_size + cluster - 1)
        head_logprob = LogSoftmax()(self.head(x))  # (B, head_size)
        output = head_logprob[xp.arange(B), head_ids]  # (B,)
        rows = [xp.nonzero(cluster == 0)[0]]  # each row's tail term, cluster by cluster
        terms = [Tensor(xp.zeros(rows[0].shape[0], dtype=output.dtype), requires_grad=False)]
        for i in range(1, self.n_clusters + 1):
            mine = xp.nonzero(cluster == i)[0]
            if mine.shape[0] == 0:
                continue
            cluster_logprob = LogSoftmax()(self.tail[i - 1](x[mine]))  # (rows, classes)
            terms.append(cluster_logprob[xp.arange(mine.shape[0]), ids[mine] - self.cutoffs[i - 1]])
            rows.append(mine)
        order = xp.argsort(xp.concatenate(rows))  # the terms back in the rows' order
        output = concatenate(terms)[order] + output
        loss = (-output).mean()
        return _ASMoutput(output if batched else output[0], loss)

    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        """(B, n_classes): the shortlist's head log-probabilities, then each cluster's classes'
        log-probabilities plus their cluster's."""
        head_logprob = LogSoftmax()(head_output)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = head_logprob[:, self.shortlist_size + i][:, None]  # (B, 1)
            parts.append(LogSoftmax()(tail(x)) + cluster)
        return concatenate(parts, axis=1)

    def log_prob(self, input) -> Tensor:  # noqa: A002 - torch's name
        """The log-probability of every class, (N, n_classes), for input (N, in_features)."""
        x = self._checked(input)
        return self._full_log_prob(x, self.head(x))

    def predict(self, input) -> Tensor:  # noqa: A002 - torch's name
        """The most probable class of each row, (N,) int64: the head's argmax where that is a
        shortlist class, else the argmax of the full log-probabilities (``log_prob``'s)."""
        x = self._checked(input)
        xp, head_output = x.xp, self.head(x)
        output = head_output.array.argmax(axis=1).astype(np.int64)
        outside = xp.nonzero(output >= self.shortlist_size)[0]  # a cluster won in the head
        if outside.shape[0]:
            full = self._full_log_prob(x[outside], head_output[outside])
            output[outside] = full.array.argmax(axis=1)
        return Tensor(output, requires_grad=False, name="predict")

    def _checked(self, input) -> Tensor:  # noqa: A002 - torch's name
        x = as_tensor(input)
        if x.ndim != 2 or x.shape[1] != self.in_features or math.prod(x.shape) == 0:
            raise ValueError(f"{type(self).__name__}: expected a non-empty input (N, "
                             f"{self.in_features}), got {x.shape}")  # fmt: skip
        return x
