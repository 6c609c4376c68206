"""The masked-language-model objective of BERT.

Of the positions that hold an ordinary token (not padding, not [CLS] or [SEP]), each is
chosen with probability ``probability`` (15%). A chosen position's input becomes the mask id
80% of the time, a random ordinary token 10% of the time, and stays as it is 10% of the
time; its label is the original token. Every other position's label is ``IGNORE`` and the
loss (cross-entropy, the mean over the chosen positions) never reads it. The random tokens
keep the model from trusting that an unmasked input is always right; the kept ones from
learning that a prediction is needed only where the mask is.

The draws come from tricycle's generator (``tricycle.manual_seed``) unless ``rng`` is given.
"""

import numpy as np

from tricycle import checks, random
from tricycle.loss import CrossEntropy
from tricycle.tensor import Tensor

IGNORE = -100  # the label of a position the loss does not read (as torch's ignore_index)


@checks.arguments(
    mask_id=checks.non_negative_int,
    vocab_size=checks.positive_int,
    probability=checks.interval(0, 1, "[]"),
)
def mask_tokens(ids, mask_id: int, vocab_size: int, probability: float = 0.15,
                special_ids=(), rng: np.random.Generator | None = None):  # fmt: skip
    """(inputs, labels) for ids (B, T) (numpy integers).

    ``special_ids`` (with ``mask_id``) are never chosen and never drawn as random tokens.
    """
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"mask_tokens: ids must be integers, got dtype {ids.dtype}")
    rng = random.generator() if rng is None else rng
    special = np.array(sorted({mask_id, *special_ids}), dtype=ids.dtype)
    ordinary = np.setdiff1d(np.arange(vocab_size), special)  # what random tokens are drawn from
    if ordinary.size == 0:
        raise ValueError("mask_tokens: every id of the vocabulary is special")

    chosen = ~np.isin(ids, special) & (rng.random(ids.shape) < probability)
    labels = np.where(chosen, ids, IGNORE)
    action = rng.random(ids.shape)  # < 0.8: mask, < 0.9: a random token, else keep
    inputs = np.where(chosen & (action < 0.8), mask_id, ids)
    randomised = chosen & (action >= 0.8) & (action < 0.9)
    random_tokens = ordinary[rng.integers(0, ordinary.size, size=ids.shape)]
    inputs = np.where(randomised, random_tokens, inputs).astype(ids.dtype)
    return inputs, labels


def mlm_loss(logits: Tensor, labels) -> Tensor:
    """Mean cross-entropy over the positions whose label is not ``IGNORE``: logits (..., V)
    and labels (...) (0 with a zero gradient when none is chosen)."""
    return CrossEntropy(ignore_index=IGNORE)(labels, logits)


def masked_accuracy(logits, labels) -> float:
    """The share of chosen positions (label not ``IGNORE``) whose top logit is the label."""
    logits = logits.numpy() if isinstance(logits, Tensor) else np.asarray(logits)
    labels = np.asarray(labels)
    chosen = labels != IGNORE
    if not chosen.any():
        return 0.0
    return float((logits.argmax(axis=-1)[chosen] == labels[chosen]).mean())
