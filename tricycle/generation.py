"""``GPT.generate`` and ``GPT.stream``: continuing prompts with the options of transformers'
``generate``.

    generate(prompt (B, T), max_new_tokens, ...) -> (B * num_return_sequences, T + new)
        num_beams == 1: one id a step per row (``stream``), greedy or sampled, until
                        max_new_tokens or every row has ended at an end id
        num_beams >= 2: beam search (``tricycle.decode_beam``)
    stream(prompt (B, T), max_new_tokens, ...) -> yields ids (B,) one step at a time

How an id is chosen is ``tricycle.decode_processors``' (``NextToken``); the steps with their
KV caches and CUDA graphs are ``tricycle.decode``'s. ``GenerationMixin`` gives a model these
two methods (transformers' name for the same idea); the model provides ``config``
(``context_window``), ``new_caches``, ``_head_matrix``, ``_last_logits``, ``_device_logits``
and the train/eval modes.
"""

from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import replace

import numpy as np

from tricycle import backend, checks, decode
from tricycle.decode_beam import beam_search
from tricycle.decode_processors import TOKEN_CHECKS, NextToken
from tricycle.tensor import no_grad

STEP_CHECKS = dict(
    max_new_tokens=checks.non_negative_int,
    rng=checks.optional(checks.instance(np.random.Generator)),
    use_cache=checks.boolean,
    vocab_limit=checks.optional(checks.positive_int),
    **TOKEN_CHECKS,
)
BEAM_CHECKS = dict(
    num_beams=checks.positive_int,
    length_penalty=checks.real,
    early_stopping=checks.one_of([True, False, "never"]),
    num_return_sequences=checks.positive_int,
    pad_token_id=checks.optional(checks.non_negative_int),
    min_new_tokens=checks.optional(checks.non_negative_int),
    min_length=checks.non_negative_int,
)


class GenerationMixin:
    """``generate`` and ``stream`` for a GPT (see the module's docstring)."""

    @checks.arguments(**STEP_CHECKS, **BEAM_CHECKS)
    def generate(
        self, tokens, max_new_tokens: int, eos_token_id=None, *, do_sample: bool | None = None,
        temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
        min_p: float | None = None, repetition_penalty: float = 1.0,
        no_repeat_ngram_size: int = 0, num_beams: int = 1, length_penalty: float = 1.0,
        early_stopping: bool | str = False, num_return_sequences: int = 1,
        pad_token_id: int | None = None, min_new_tokens: int | None = None, min_length: int = 0,
        attention_mask=None, rng: np.random.Generator | None = None,
        use_cache: bool = True, vocab_limit: int | None = None,
    ) -> np.ndarray:  # fmt: skip
        """Continue ``tokens`` (B, T) or (T,) by up to ``max_new_tokens``; returns the prompts
        with their continuations, (B * num_return_sequences, T + new) (a (T,) prompt with one
        sequence: (T + new,)), the continuations of one prompt together.

        As transformers' ``generate``: ``do_sample=False`` chooses the likeliest id whatever
        the temperature; ``do_sample=True`` samples (``temperature`` > 0, ``top_k``,
        ``top_p``, ``min_p``, from ``rng``, a numpy Generator); left out, tricycle's rule holds:
        sample unless ``temperature`` is 0 (beams: greedy). ``repetition_penalty`` and
        ``no_repeat_ngram_size`` act in every mode (``tricycle.decode_processors``).
        ``eos_token_id`` (an id or a list of them) ends a row where it is chosen: later
        places hold ``pad_token_id`` (default: the first end id), and generation stops once
        every row has ended (so fewer than ``max_new_tokens`` may come back); no end id is
        chosen before ``min_new_tokens`` new ids or, where it is None, before the rows are
        ``min_length`` long with their prompts (transformers' precedence).
        ``num_return_sequences`` samples per prompt (or with beams, the best hypotheses).

        ``num_beams`` >= 2 searches beams (``do_sample=True``: samples them, the warpers on
        the log-probabilities, as transformers' beam sampling), scored by
        the sum of log-probabilities over generated length ** ``length_penalty``;
        ``early_stopping`` (True, False or "never") says when a prompt's search may end
        (``tricycle.decode_beam``). ``use_cache`` and ``vocab_limit``: as for ``stream``.

        ``attention_mask`` (B, T) of 0 and 1: prompts of different lengths padded on the left
        (transformers' ``padding_side="left"``); each row continues its own ids (where the
        mask is 1) as it would alone, and keeps its padding in the output. Rows of one length
        continue together, one group after another (the attention kernels take no mask);
        ``min_length`` counts the padding, as transformers does, but the repetition penalty
        and the n-gram ban read a row's own ids only (transformers' read the pad ids too).
        """
        choose = NextToken.of(
            "GPT.generate", do_sample, temperature, top_k, top_p, min_p, repetition_penalty,
            no_repeat_ngram_size, beams=num_beams > 1,
        )  # fmt: skip
        prompt = _host_ids(tokens)
        single = prompt.ndim == 1
        prompt = _checked_prompt(prompt.reshape(1, -1) if single else prompt)
        lengths = _prompt_lengths(attention_mask, prompt.shape)  # (B,), or None: no padding
        ends, n = _end_ids(eos_token_id), num_return_sequences
        pad = ends[0] if pad_token_id is None and ends else pad_token_id
        T = prompt.shape[1]
        least = min_length - T if min_new_tokens is None else min_new_tokens
        if ends and least > 0:  # no end ids: nothing to hold back
            choose = replace(choose, least_new=least, ends=tuple(ends))
        if num_beams > 1:
            _check_beams(num_beams, n)
        elif n > 1 and not choose.do_sample:
            raise ValueError(
                f"GPT.generate: num_return_sequences must be 1 to choose greedily "
                f"(do_sample=False, num_beams=1), got {n}; sample (do_sample=True) or "
                f"search beams (num_beams >= {n})"
            )

        rng = np.random.default_rng() if rng is None else rng  # one for every group of rows

        def continued(rows: np.ndarray) -> np.ndarray:  # (b, t) -> (b * n, t + new)
            how = replace(choose, prompt_length=rows.shape[1])  # where new ids begin
            if num_beams > 1:
                with inference(self):
                    return beam_search(self, rows, max_new_tokens, how, num_beams,
                                       length_penalty, early_stopping, n, ends, pad,
                                       use_cache, vocab_limit, rng)  # fmt: skip
            rows = np.repeat(rows, n, axis=0)  # (b * n, t): each prompt's rows together
            steps = _stream(self, rows, max_new_tokens, how, rng, use_cache, vocab_limit)
            return _until_ended(steps, rows, ends, pad)

        if lengths is None:
            out = continued(prompt)
        else:
            out = _left_padded(continued, prompt, lengths, n, pad)
        return out[0] if single and len(out) == 1 else out

    @checks.arguments(**STEP_CHECKS)
    def stream(
        self, tokens, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
        rng: np.random.Generator | None = None, use_cache: bool = True,
        vocab_limit: int | None = None, top_p: float | None = None, *,
        do_sample: bool | None = None, min_p: float | None = None,
        repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0,
    ) -> Iterator[np.ndarray]:  # fmt: skip
        """Yield the next token ids (B,) one step at a time, in eval mode, under no_grad.

        ``temperature`` divides the logits (0 means greedy argmax, as ``do_sample=False``
        does whatever the temperature); ``top_k`` keeps only the k most likely tokens;
        ``top_p`` then the fewest likeliest whose probability reaches it (nucleus sampling);
        ``min_p`` then those at least min_p times as likely as the likeliest; before them all,
        ``repetition_penalty`` and ``no_repeat_ngram_size`` (transformers' order:
        ``tricycle.decode_processors``). ``rng`` (a numpy Generator) makes sampling
        reproducible; ``vocab_limit`` samples only ids below it (a tokeniser that learnt
        fewer ids than the model's ``vocab_size`` cannot decode the rest).

        The KV cache makes each new token cost one position. The model sees at most
        ``context_window`` positions: when the cache is full, the oldest positions are
        dropped and the most recent half window (ending with the newest token) is encoded
        afresh into an empty cache, after which single-token steps resume. So every token is
        conditioned on between context_window / 2 and context_window previous tokens, and a
        full re-encode happens once every context_window / 2 tokens (the penalty and the
        n-gram ban read the whole sequence). With ``use_cache=False`` the same windows are
        recomputed in full at every step (slow; for testing). On a GPU the single-token steps
        are recorded once as a CUDA graph and replayed (``tricycle.decode``): the same
        tokens, without Python between the kernels.
        """
        choose = NextToken.of("GPT.stream", do_sample, temperature, top_k, top_p, min_p,
                              repetition_penalty, no_repeat_ngram_size)  # fmt: skip
        return _stream(self, tokens, max_new_tokens, choose, rng, use_cache, vocab_limit)


def _stream(model, tokens, max_new_tokens, choose, rng, use_cache, vocab_limit):
    """``stream``'s generator, for checked options."""
    prompt = _checked_prompt(_host_ids(tokens))
    rng = np.random.default_rng() if rng is None else rng
    with inference(model):
        yield from decode.sample(model, prompt, max_new_tokens, choose, rng, use_cache,
                                 vocab_limit)  # fmt: skip


def _left_padded(continued, prompt: np.ndarray, lengths: np.ndarray, n: int, pad):
    """``continued`` (rows of one length -> their continuations, n a row) on each group of
    the left-padded ``prompt``'s rows (B, T) of one length ``lengths`` (B,); the rows back
    in their places, (B * n, T + new), their padding kept, and a group that ended sooner
    filled on the right with ``pad`` (as its ended rows would be)."""
    B, T = prompt.shape
    groups = {length: np.flatnonzero(lengths == length) for length in np.unique(lengths)}
    outs = {length: continued(prompt[rows, T - length :]) for length, rows in groups.items()}
    new = max(out.shape[1] - length for length, out in outs.items())
    result = np.empty((B * n, T + new), dtype=prompt.dtype)
    for length, rows in groups.items():
        out = outs[length].reshape(len(rows), n, -1)  # (rows, n, length + its new)
        places = result.reshape(B, n, -1)[rows]  # (rows, n, T + new): a copy, put back below
        places[:, :, :T] = prompt[rows, None, :]
        places[:, :, T - length : T - length + out.shape[2]] = out
        if out.shape[2] - length < new:  # this group ended sooner (so there are end ids)
            places[:, :, T - length + out.shape[2] :] = pad
        result.reshape(B, n, -1)[rows] = places
    return result


def _prompt_lengths(attention_mask, shape: tuple) -> np.ndarray | None:
    """Each row's length (B,) under a left-padding ``attention_mask`` (B, T) of 0 and 1;
    None where there is none or no row is padded."""
    if attention_mask is None:
        return None
    mask = _host_ids(attention_mask)
    mask = mask.reshape(1, -1) if mask.ndim == 1 else mask
    if mask.shape != shape or not np.isin(mask, (0, 1)).all():
        held = np.unique(mask)[:5].tolist()
        raise ValueError(f"GPT.generate: attention_mask must be 0 and 1 in the prompt's shape "
                         f"{shape}, got {mask.shape} holding {held}")  # fmt: skip
    lengths = mask.sum(axis=1)
    left = np.arange(shape[1]) >= shape[1] - lengths[:, None]  # (B, T): ones after zeros
    bad = np.flatnonzero((mask != left).any(axis=1) | (lengths == 0))
    if len(bad):
        raise ValueError(
            f"GPT.generate: attention_mask row {bad[0]} is {mask[bad[0]].tolist()}: expected "
            "its padding (0) before its ids (1), and some ids (transformers' tokeniser with "
            'padding_side="left" gives this)'
        )
    return None if (lengths == shape[1]).all() else lengths


def _until_ended(steps, prompt: np.ndarray, ends: list[int], pad: int | None) -> np.ndarray:
    """The prompt (B, T) with the ids ``steps`` yields (B,) after it, until every row has
    chosen one of ``ends``; a row's places after its end hold ``pad``."""
    new, ended = [], np.zeros(len(prompt), dtype=bool)  # (B,)
    with closing(steps):  # back to the model's mode at once, however it stops
        for ids in steps:
            new.append(np.where(ended, pad, ids) if ends else ids)
            ended |= np.isin(ids, ends)
            if ends and ended.all():
                break
    return np.concatenate([prompt, np.stack(new, axis=1)], axis=1) if new else prompt


@contextmanager
def inference(model):
    """The model in eval mode under no_grad, then back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            yield
    finally:
        if was_training:
            model.train()


def _check_beams(num_beams: int, num_return_sequences: int) -> None:
    if num_return_sequences > num_beams:
        raise ValueError(
            f"GPT.generate: num_return_sequences must be <= num_beams ({num_beams}), "
            f"got {num_return_sequences}"
        )


def _host_ids(tokens) -> np.ndarray:
    """Token ids (a Tensor, an array on any device, a list) as a host array."""
    try:
        return np.asarray(backend.to_host_array(getattr(tokens, "array", tokens)))
    except ValueError:  # rows of different lengths
        raise ValueError(
            "GPT.generate: the prompt must be a (batch, tokens) array; its rows differ in "
            "length: pad them on the left and pass attention_mask, or generate for each alone"
        ) from None


def _checked_prompt(prompt: np.ndarray) -> np.ndarray:
    if prompt.ndim != 2 or prompt.shape[1] == 0:
        raise ValueError(
            f"GPT.generate: expected a non-empty prompt of shape (batch, tokens), "
            f"got {prompt.shape}"
        )
    return prompt


def _end_ids(eos_token_id) -> list[int]:
    """``generate``'s ``eos_token_id`` (None, an id or a list of ids) as a list."""
    ids = [] if eos_token_id is None else np.atleast_1d(eos_token_id).tolist()
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise ValueError(
            f"GPT.generate: eos_token_id must be an id or a list of ids, got {eos_token_id!r}"
        )
    return ids
