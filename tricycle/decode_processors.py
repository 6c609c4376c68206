"""How generation turns a model's next-token logits (B, V) into the next ids: the logits
processors of transformers' ``generate``, in its order.

    logits (B, V) -> repetition penalty -> no repeated n-grams        every mode ("scores")
                  -> greedy: argmax                                   do_sample=False
                  -> / temperature -> top_k -> top_p -> min_p         do_sample=True
                     -> softmax -> one draw per row

The first two read each row's whole sequence so far (B, T), prompt included:

- the repetition penalty (CTRL's) makes every id already in the row less likely: its score
  divided by ``penalty`` where positive, multiplied where negative, once however often the id
  occurred;
- ``no_repeat_ngram_size`` n forbids (-inf) every id that would complete an n-gram the row
  already holds: the ids that followed an earlier occurrence of its last n - 1 ids.

The warpers that follow shape the distribution a sample is drawn from: ``temperature``
divides the scores; ``top_k`` keeps the k largest (ties with the k-th too); ``top_p`` keeps
the fewest likeliest ids whose probability reaches it (the likeliest always stays); ``min_p``
keeps the ids at least ``min_p`` times as likely as the likeliest. Beam search runs the
processors, and in beam sampling the warpers, on log-probabilities (``tricycle.decode_beam``),
as transformers does.
"""

from dataclasses import dataclass

import numpy as np

from tricycle import checks

# the checks of the options a next token is chosen by (GPT.generate's and GPT.stream's)
TOKEN_CHECKS = dict(
    do_sample=checks.optional(checks.boolean),
    temperature=checks.non_negative,
    top_k=checks.optional(checks.positive_int),
    top_p=checks.optional(checks.interval(0, 1, "(]")),
    min_p=checks.optional(checks.interval(0, 1, "[]")),
    repetition_penalty=checks.positive,
    no_repeat_ngram_size=checks.non_negative_int,
)


# ------------------------------------------------------------------ processors: every mode


def penalise_repetitions(sequences: np.ndarray, scores: np.ndarray, penalty: float) -> np.ndarray:
    """CTRL's repetition penalty: each id that occurs in its row of ``sequences`` (B, T) has
    its score (B, V) divided by ``penalty`` where positive, multiplied where negative."""
    B, V = scores.shape
    seen = np.zeros((B, V + 1), dtype=bool)  # (B, V + 1): ids the head cannot give land last
    np.put_along_axis(seen, np.minimum(sequences, V), True, axis=1)
    penalised = np.where(scores < 0, scores * penalty, scores / penalty)
    return np.where(seen[:, :V], penalised, scores)


def ban_repeated_ngrams(sequences: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """Scores (B, V) with -inf for each id that would complete an n-gram already in its row
    of ``sequences`` (B, T): an id that followed an earlier occurrence of the row's last
    n - 1 ids."""
    (B, T), V = sequences.shape, scores.shape[1]
    if T < n:  # no n-gram complete yet
        return scores
    windows = np.lib.stride_tricks.sliding_window_view(sequences, n, axis=1)  # (B, T-n+1, n)
    prefix = sequences[:, T - n + 1 :]  # (B, n - 1): what the next id would complete
    matches = (windows[:, :, :-1] == prefix[:, None]).all(axis=-1)  # (B, T - n + 1)
    rows, starts = np.nonzero(matches)
    banned = np.zeros((B, V + 1), dtype=bool)
    banned[rows, np.minimum(windows[rows, starts, -1], V)] = True
    return np.where(banned[:, :V], -np.inf, scores)


def ban_early_ends(scores: np.ndarray, ends: tuple[int, ...], new: int, least: int) -> np.ndarray:
    """Scores (B, V) with -inf for the end ids ``ends`` while fewer than ``least`` ids
    (``new`` so far) follow the prompt: transformers' ``min_new_tokens`` (and
    ``min_length``, as min_length - T new ones)."""
    if new >= least:
        return scores
    banned = scores.copy()
    banned[:, [i for i in ends if i < scores.shape[1]]] = -np.inf
    return banned


# ------------------------------------------------------------------ warpers: sampling only


def probabilities(logits: np.ndarray, temperature: float, top_k: int | None = None,
                  top_p: float | None = None, min_p: float | None = None):  # fmt: skip
    """The distribution (B, V) that sampling draws from, in transformers' order: logits
    divided by ``temperature`` (> 0), then only the ``top_k`` largest kept (ties with the
    k-th kept too), then only the smallest set of likeliest ids whose probability reaches
    ``top_p`` (nucleus sampling; the likeliest id always stays), then only the ids at least
    ``min_p`` times as likely as the likeliest, then softmax."""
    weights = _weights(logits, temperature, top_k, top_p, min_p)
    return weights / weights.sum(axis=-1, keepdims=True)


def _weights(logits, temperature, top_k, top_p, min_p=None) -> np.ndarray:
    """exp(filtered logits / temperature - max): ``probabilities`` unnormalised."""
    scores = warp(logits, temperature, top_k, top_p, min_p)
    return np.exp(scores - scores.max(axis=-1, keepdims=True))  # (B, V): the likeliest 1


def warp(scores: np.ndarray, temperature: float, top_k: int | None = None,
         top_p: float | None = None, min_p: float | None = None,
         keep: int = 1) -> np.ndarray:  # fmt: skip
    """transformers' warpers on scores (B, V) (logits, or a beam's log-probabilities): divided
    by ``temperature``, then -inf for the ids that ``top_k``, ``top_p`` and ``min_p`` drop, in
    that order; each keeps at least the ``keep`` likeliest (its ``min_tokens_to_keep``)."""
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"sample_next: top_p must be a number in (0, 1], got {top_p!r}")
    scores = scores / temperature
    k = None if top_k is None else max(top_k, keep)
    if k is not None and k < scores.shape[-1]:
        kth = np.partition(scores, -k, axis=-1)[:, -k, None]  # (B, 1)
        scores = np.where(scores < kth, -np.inf, scores)  # (ties with the k-th stay)
    if top_p is not None and top_p < 1:
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (B, V)
        order = np.argsort(scores, axis=-1, kind="stable")  # (B, V): least likely first
        ascending = np.take_along_axis(weights, order, axis=-1)
        mass = np.cumsum(ascending, axis=-1) / ascending.sum(axis=-1, keepdims=True)
        drop = mass <= 1 - top_p  # the tail that holds at most 1 - top_p
        drop[:, -keep:] = False
        scores = _dropped(scores, order, drop)
    if min_p is not None:  # p < min_p * p_max: weights where the likeliest weighs 1
        order = np.argsort(-scores, axis=-1, kind="stable")  # (B, V): likeliest first
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        drop = np.take_along_axis(weights, order, axis=-1) < min_p
        drop[:, :keep] = False
        scores = _dropped(scores, order, drop)
    return scores


def _dropped(scores: np.ndarray, order: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """``scores`` (B, V) with -inf where ``drop`` (B, V), which is in the ``order`` given."""
    mask = np.zeros_like(drop)
    np.put_along_axis(mask, order, drop, axis=-1)
    return np.where(mask, -np.inf, scores)


def draw(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One id (B,) per row of unnormalised ``weights`` (B, V), with one uniform draw a row."""
    cdf = np.cumsum(weights, axis=-1)
    u = rng.random((len(weights), 1)) * cdf[:, -1:]
    return np.minimum((cdf <= u).sum(axis=-1), weights.shape[-1] - 1)


def sample_next(logits: np.ndarray, temperature: float, top_k: int | None, rng,
                top_p: float | None = None) -> np.ndarray:  # fmt: skip
    """Sample one id per row of ``logits`` (B, V) from ``probabilities``; temperature 0 is
    the greedy argmax."""
    if temperature == 0:
        return logits.argmax(axis=-1)
    return draw(_weights(logits, temperature, top_k, top_p), rng)


# ------------------------------------------------------------------ the options together


@dataclass(frozen=True)
class NextToken:
    """How each next id is chosen: the options of transformers' ``generate`` that act on one
    step's scores (checked by ``TOKEN_CHECKS``; ``of`` resolves ``do_sample``)."""

    do_sample: bool = True
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    least_new: int = 0  # no id of ``ends`` before this many new ids (min_new_tokens)
    ends: tuple[int, ...] = ()
    prompt_length: int = 0  # of the sequences the processors see: where new ids begin

    @classmethod
    def of(cls, owner: str, do_sample: bool | None, temperature: float, *options,
           beams: bool = False) -> "NextToken":  # fmt: skip
        """The options as given to ``owner``. ``do_sample=None`` keeps tricycle's rule, to
        sample unless ``temperature`` is 0, but for beams (``beams``), which search greedily as
        transformers' default; ``do_sample=True`` needs a temperature above 0."""
        if do_sample is None:
            do_sample = temperature != 0 and not beams
        if do_sample and temperature == 0:
            raise ValueError(
                f"{owner}: temperature must be > 0 to sample (do_sample=True), got 0; "
                f"do_sample=False chooses the likeliest id"
            )
        return cls(do_sample, temperature, *options)

    @property
    def reads_history(self) -> bool:
        """Whether the processors read the sequences so far (a penalty, an n-gram ban, or the
        count of new ids while an end id is banned)."""
        return self.repetition_penalty != 1 or self.no_repeat_ngram_size > 0 or self.least_new > 0

    def scores(self, sequences: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The processors every mode runs: the repetition penalty, the n-gram ban, then the
        early end ids' ban (transformers' order), of scores (B, V) after ``sequences`` (B, T)."""
        if self.repetition_penalty != 1:
            scores = penalise_repetitions(sequences, scores, self.repetition_penalty)
        if self.no_repeat_ngram_size > 0:
            scores = ban_repeated_ngrams(sequences, scores, self.no_repeat_ngram_size)
        if self.least_new > 0:
            new = sequences.shape[1] - self.prompt_length
            scores = ban_early_ends(scores, self.ends, new, self.least_new)
        return scores

    def warp(self, scores: np.ndarray, keep: int = 1) -> np.ndarray:
        """The sampling warpers (``warp``) on ``scores`` (B, V), each keeping at least the
        ``keep`` likeliest; greedy choice takes the scores as they are."""
        if not self.do_sample:
            return scores
        return warp(scores, self.temperature, self.top_k, self.top_p, self.min_p, keep)

    def __call__(self, sequences: np.ndarray | None, logits: np.ndarray, rng) -> np.ndarray:
        """The next ids (B,) after ``sequences`` (B, T) (None where ``reads_history`` is
        False) from host ``logits`` (B, V)."""
        if self.reads_history:
            logits = self.scores(sequences, logits)
        if not self.do_sample:
            return logits.argmax(axis=-1)
        return draw(_weights(logits, self.temperature, self.top_k, self.top_p, self.min_p), rng)
