"""Beam search: the likeliest continuations of each prompt, as transformers' ``generate``
finds them with ``num_beams`` > 1 (``do_sample=False``), or samples them (``do_sample=True``).

Each prompt keeps K = num_beams running hypotheses, each scored by the sum of its ids'
log-probabilities. Only the first starts (the others at -inf), so the K never repeat one
another. A step, for each prompt:

    log_softmax(logits) (K, V) -> processors (repetition penalty, n-gram ban: on log-probs)
        -> sampling: the warpers (temperature, top_k, top_p, min_p), each keeping >= C / K ids
        + each hypothesis's score                    -> K * V candidates
        -> the best C = max(2, 1 + number of end ids) * K of them, best first (sampling: C
           drawn without replacement from the softmax of the candidates' scores, then
           ordered by score; the draw is Gumbel's: the C largest of score + Gumbel noise)
        -> a candidate that ends (an end id, or the last step) and ranks among the first K
           is a finished hypothesis, scored  sum / generated_length ** length_penalty,
           and kept if among the K best finished so far
        -> the K best candidates that do not end run on (their caches follow them)

C > K leaves K to run on however many end. A prompt is done when no finished hypothesis can
be added any more: when its K are in and the best running sum, divided by the generated
length ** length_penalty, does not beat the worst of them (transformers' heuristic: the
length is the current one, or max_new_tokens for ``early_stopping="never"`` with a
positive ``length_penalty``), or, with ``early_stopping=True``, as soon as its K are in. The
search ends when every prompt is done, or after ``max_new_tokens``. It returns each prompt's
``num_return_sequences`` best finished hypotheses, best first, the shorter ones padded to the
longest with the pad id. A positive ``length_penalty`` favours longer sequences (the sums
are negative), a negative one shorter ones.
"""

import numpy as np

from tricycle.decode import Steps
from tricycle.decode_processors import NextToken


def beam_search(model, prompt: np.ndarray, max_new_tokens: int, choose: NextToken,
                num_beams: int, length_penalty: float, early_stopping: bool | str,
                num_return_sequences: int, ends: list[int], pad: int | None, use_cache: bool,
                vocab_limit: int | None,
                rng: np.random.Generator | None = None) -> np.ndarray:  # fmt: skip
    """The ``num_return_sequences`` best hypotheses (B * num_return_sequences, T + new) of
    each prompt (B, T), each prompt's together, best first; ``ends``: the end ids, ``pad``:
    what fills a sequence that ended early (the module's docstring says how); ``rng``: the
    draws of beam sampling."""
    if max_new_tokens == 0:
        return np.repeat(prompt, num_return_sequences, axis=0)
    (B, T0), K = prompt.shape, num_beams
    length = T0 + max_new_tokens
    fill = -1 if pad is None else pad  # shows only where a hypothesis ended, at an end id
    running = np.full((B, K, length), fill, dtype=prompt.dtype)  # (B, K, L)
    running[:, :, :T0] = prompt[:, None]
    running_scores = np.full((B, K), -np.inf)
    running_scores[:, 0] = 0.0
    finished = Finished(B, K, length, fill, prompt.dtype)
    steps = Steps(model, running[:, :, :T0].reshape(B * K, T0), max_new_tokens, use_cache,
                  vocab_limit)  # fmt: skip
    for t in range(max_new_tokens):
        cur = T0 + t  # the ids so far; this step chooses the one at ``cur``
        log_probs = _log_softmax(steps.logits)  # (B*K, V)
        if choose.reads_history:
            log_probs = choose.scores(running[:, :, :cur].reshape(B * K, cur), log_probs)
        log_probs = choose.warp(log_probs, keep=max(2, 1 + len(ends)))  # (sampling only)
        V = log_probs.shape[1]
        scores = (log_probs.reshape(B, K, V) + running_scores[:, :, None]).reshape(B, K * V)
        C = min(max(2, 1 + len(ends)) * K, K * V)
        best = _drawn(scores, C, rng) if choose.do_sample else _best(scores, C)  # (B, C)
        beam, ids = best // V, best % V  # (B, C): the hypothesis each extends, its new id
        sums = np.take_along_axis(scores, best, axis=1)  # (B, C)
        candidates = np.take_along_axis(running, beam[:, :, None], axis=1)  # (B, C, L)
        candidates[:, :, cur] = ids
        ended = np.isin(ids, ends) | (t == max_new_tokens - 1)  # (B, C)

        finished.add(candidates, sums / (t + 1) ** length_penalty, ended[:, :K], t + 1)
        on = np.argsort(ended, axis=1, kind="stable")[:, :K]  # (B, K): the best not ended
        running = np.take_along_axis(candidates, on[:, :, None], axis=1)
        running_scores = np.where(np.take_along_axis(ended, on, axis=1), -np.inf,
                                  np.take_along_axis(sums, on, axis=1))  # fmt: skip
        if early_stopping == "never" and length_penalty > 0:
            longest = max_new_tokens  # the best the running ones could still reach
        else:
            longest = t + 1  # transformers' heuristic: as if they ended now
        finished.close(running_scores[:, 0] / longest**length_penalty, early_stopping)
        if ended.all() or finished.done.all():
            break
        rows = (np.take_along_axis(beam, on, axis=1) + K * np.arange(B)[:, None]).reshape(-1)
        steps.advance(running[:, :, cur].reshape(-1), rows=rows)  # (B*K,) ids after ``rows``
    return finished.best(num_return_sequences, T0)


class Finished:
    """Each prompt's K best finished hypotheses: sequences (B, K, L) (``fill`` past their
    end), scores (B, K) (-inf where none yet), their generated lengths (B, K), and ``done``
    (B,): whether the prompt takes no more."""

    def __init__(self, B: int, K: int, length: int, fill: int, dtype):
        self.sequences = np.full((B, K, length), fill, dtype=dtype)
        self.scores = np.full((B, K), -np.inf)
        self.lengths = np.zeros((B, K), dtype=np.int64)
        self.done = np.zeros(B, dtype=bool)

    def add(self, candidates, scores, ended, generated: int) -> None:
        """Keep the K best of those held and the first K ``candidates`` (B, C, L) that
        ``ended`` (B, K), scored ``scores`` (B, C), in the prompts not done."""
        K = ended.shape[1]
        new = np.where(ended & ~self.done[:, None], scores[:, :K], -np.inf)  # (B, K)
        merged = np.concatenate([self.scores, new], axis=1)  # (B, 2K): the held ones first
        keep = _best(merged, K)  # (B, K)
        pool = np.concatenate([self.sequences, candidates[:, :K]], axis=1)
        lengths = np.concatenate([self.lengths, np.full_like(self.lengths, generated)], axis=1)
        self.sequences = np.take_along_axis(pool, keep[:, :, None], axis=1)
        self.scores = np.take_along_axis(merged, keep, axis=1)
        self.lengths = np.take_along_axis(lengths, keep, axis=1)

    def full(self) -> np.ndarray:
        """(B,): whether K hypotheses have finished."""
        return np.isfinite(self.scores).all(axis=1)

    def close(self, best_possible: np.ndarray, early_stopping) -> None:
        """Mark done the prompts whose K are in and whose ``best_possible`` (B,) running
        score does not beat the worst of them (or, with ``early_stopping=True``, whose K are
        in)."""
        full = self.full()
        self.done |= full & (best_possible <= self.scores.min(axis=1))
        self.done |= full & (early_stopping is True)

    def best(self, n: int, T0: int) -> np.ndarray:
        """The n best of each prompt (B * n, T0 + the longest of them)."""
        B, _, length = self.sequences.shape
        out = self.sequences[:, :n].reshape(B * n, length)
        return out[:, : T0 + int(self.lengths[:, :n].max())]


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis of (B, V) (ids at -inf stay -inf)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _drawn(scores: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k indices (B, k) of each row drawn without replacement from softmax(``scores``) (B, N)
    (the k largest of scores + Gumbel noise), ordered by score, largest first."""
    drawn = _best(scores + rng.gumbel(size=scores.shape), k)
    by_score = np.argsort(-np.take_along_axis(scores, drawn, axis=1), axis=1, kind="stable")
    return np.take_along_axis(drawn, by_score, axis=1)


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """The indices (B, k) of each row's k largest ``scores`` (B, N), largest first (equal
    scores among them in the order of the row)."""
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else None
    top = np.broadcast_to(np.arange(scores.shape[1]), scores.shape) if top is None else top
    values = np.take_along_axis(scores, top, axis=1)
    order = np.lexsort((top, -values), axis=1)  # by score, then by place
    return np.take_along_axis(top, order, axis=1)
