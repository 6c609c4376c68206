"""Generation: one token after another from a GPT with a KV cache (the loop of ``GPT.stream``).

    prompt (B, T) -> prefill: every position at once, one KVCache per block filled
                  -> logits (B, V) of the last position -> choose ids (B,)
    ids (B,)      -> decode step: one position more in each cache -> logits -> choose -> ...

``Steps`` holds that state (the window of positions the model sees, the caches, the
``Decoder``) and gives each step's logits; ``sample`` chooses ids from them with a
``NextToken`` (greedy or sampled, after the processors of ``tricycle.decode_processors``), and
beam search (``tricycle.decode_beam``) continues other rows than it was given, reordering the
caches by row. On the CPU a decode step is the model's forward on one position with
``KVCache``s (``tricycle.attention``), which append it and attend to the filled positions.

On a GPU that step is a few hundred small kernels with Python between them, and the host,
not the GPU, sets the pace. So there the decode steps have fixed shapes, and one step is
recorded once as a CUDA graph and replayed for every token (``Decoder``):

- each cache keeps its arrays of a fixed capacity and counts its positions on the device
  (``FixedKVCache``): a step writes its key and value at the counted position and attends
  to the whole capacity, masked beyond it (``attend_masked``; O(capacity) a token, which is
  nothing at these sizes), and positions (learnt or RoPE) are read from that count;
- the ids come from a preallocated (B, 1) buffer, and the step ends with the greedy argmax
  written back into it, so greedy decoding feeds itself and the host reads back the (B,) ids
  alone. Sampling (or a processor: a penalty, an n-gram ban, beam search) reads the logits
  back and chooses on the host, with the caller's numpy ``rng`` as on the CPU, then fills
  the buffer.

The recording is the CUDA backend's "graph" runner (found through ``tricycle.dispatch``: the
first call runs eagerly, the second is recorded and launched, later ones replay; a step that
cannot be recorded keeps running eagerly). Everything here is ``xp``: with numpy the same
fixed-shape step runs eagerly, which is how the CPU tests check it against the eager path.
When the window is full, the last half window is encoded afresh (see ``GPT.stream``) and a
new ``Decoder`` starts from those caches.
"""

import math

import numpy as np

from tricycle import backend, dispatch
from tricycle.attention import KVCache, _product_dtype
from tricycle.decode_processors import (  # noqa: F401 - probabilities, sample_next: here before
    NextToken,
    probabilities,
    sample_next,
)


def sample(model, prompt, max_new_tokens, choose: NextToken, rng, use_cache, vocab_limit):
    """Yield ``max_new_tokens`` ids (B,) continuing ``prompt`` (B, T), each chosen by
    ``choose`` (``tricycle.decode_processors``), as ``GPT.stream`` (which checks the arguments
    and runs this in eval mode under no_grad) describes."""
    steps = Steps(model, prompt, max_new_tokens, use_cache, vocab_limit)
    sequences = prompt if choose.reads_history else None  # (B, T + step): for the processors
    greedy = not choose.do_sample and not choose.reads_history  # the device's argmax will do
    logits, next_ids = steps.logits, None  # logits: host (B, V), or None where a Decoder chose
    for step in range(max_new_tokens):
        if logits is not None:
            next_ids = choose(sequences, logits, rng)  # (B,)
        yield next_ids
        if step == max_new_tokens - 1:
            break
        if sequences is not None:
            sequences = np.concatenate([sequences, next_ids[:, None]], axis=1)
        logits, argmax = steps.advance(next_ids, greedy)
        next_ids = next_ids if argmax is None else argmax


class Steps:
    """The model's next-token logits for rows of sequences that grow by one id a step.

    ``Steps(model, prompt, max_new_tokens, use_cache, vocab_limit)`` encodes the prompt (B, T)
    (its last context_window positions), after which ``logits`` holds the host float64 logits
    (B, V) of each row's next id; ``advance(ids)`` appends ids (B,) and returns the next
    logits. Beam search continues other rows than it was given: ``advance(ids, rows)`` appends
    ids[i] to the sequence that was row ``rows[i]`` (the caches are reordered in place, so a
    ``Decoder`` recorded on them stays valid). Ids at or past ``vocab_limit`` get logits -inf.
    """

    def __init__(self, model, prompt, max_new_tokens: int, use_cache: bool, vocab_limit):
        self.model, self.use_cache, self.vocab_limit = model, use_cache, vocab_limit
        self.window_size = model.config.context_window
        self.head = model._head_matrix(len(prompt))
        self.window = prompt[:, -self.window_size :]  # (B, <= W): the positions the model sees
        self.capacity = self.window.shape[1] + max_new_tokens  # what this call can fill
        self.caches, logits = self._prefill(self.window)
        self.recorded = use_cache and records(self.caches)  # the device stays: asked once
        self.decoder = None
        self.logits = self._limited(logits)

    def _prefill(self, window):
        caches = self.model.new_caches(len(window), self.capacity) if self.use_cache else None
        return caches, self.model._last_logits(window, caches, self.head)

    def _limited(self, logits):
        if logits is not None and self.vocab_limit is not None:
            logits[:, self.vocab_limit :] = -np.inf
        return logits

    def advance(self, ids: np.ndarray, greedy: bool = False, rows: np.ndarray | None = None):
        """Append ids (B,) (to the sequences ``rows`` (B,) names) -> (host logits (B, V), None),
        or with ``greedy`` where a ``Decoder`` runs the step, (None, the argmax ids (B,))."""
        full = self.window.shape[1] == self.window_size
        if rows is not None:
            self.window = self.window[rows]
            if self.caches is not None and not full:  # a full window is encoded afresh
                reorder(self.caches, rows)
        self.window = np.concatenate([self.window, ids[:, None]], axis=1)
        model, head, argmax = self.model, self.head, None
        if full:  # re-encode the most recent half window into a fresh cache
            self.window = self.window[:, -max(1, self.window_size // 2) :]
            self.caches, logits = self._prefill(self.window)
            self.decoder = None
        elif not self.use_cache:
            logits = model._last_logits(self.window, None, head)
        elif self.recorded:
            self.decoder = self.decoder or Decoder(model, self.caches, head, self.vocab_limit)
            logits, argmax = self.decoder(ids, greedy=greedy)
        else:
            logits = model._last_logits(ids[:, None], self.caches, head)
        self.logits = self._limited(logits)
        return self.logits, argmax


def reorder(caches: list[KVCache], rows: np.ndarray) -> None:
    """Make row i of every cache hold what row ``rows[i]`` held, in place."""
    if np.array_equal(rows, np.arange(len(rows))):
        return
    xp = backend.array_module(caches[0].keys)
    rows = xp.asarray(rows)
    for cache in caches:
        cache.keys[...] = cache.keys[rows]
        cache.values[...] = cache.values[rows]


def records(caches: list[KVCache]) -> bool:
    """Whether decode steps on these caches' device are recorded as a graph (a GPU)."""
    return dispatch.kernel_for("graph", caches[0].keys) is not None


# ------------------------------------------------------------------ the fixed-shape step


class Decoder:
    """Decode steps of fixed shapes from prefilled ``caches``, run through the device's graph
    runner. ``decoder(ids, greedy)`` feeds ids (B,) (host) and returns (host float64 logits
    (B, V), None), or with ``greedy`` (None, the argmax ids (B,)). Each call advances the
    caches (``FixedKVCache`` views of the same arrays: the caller must not use ``caches``
    again) by one position; the caller keeps them within their capacity.
    """

    def __init__(self, model, caches: list[KVCache], head, vocab_limit: int | None = None):
        keys = caches[0].keys
        self.xp = backend.array_module(keys)
        fixed = [FixedKVCache(cache) for cache in caches]
        ids = self.xp.zeros((keys.shape[0], 1), dtype=np.int64)  # (B, 1): fed next

        def step():
            """ids -> (logits (B, V), argmax (B,)), the argmax written into ids: fixed shapes,
            no host synchronisation, nothing allocated that outlives it but its outputs."""
            logits = model._device_logits(ids, fixed, head)  # (B, V)
            wide = logits.astype(np.float32, copy=False)  # argmax of bfloat16 in float32
            argmax = wide[:, :vocab_limit].argmax(axis=-1)  # (B,)
            ids[:, 0] = argmax
            return logits, argmax

        self.ids, self.steps = ids, 0
        self.run = dispatch.choose("graph", _eager, keys)(step)  # no cycle through self

    def __call__(self, ids: np.ndarray, greedy: bool):
        if self.steps == 0 or not greedy:  # greedy: the last step left its argmax there
            self.ids[:, 0] = self.xp.asarray(ids)
        self.steps += 1
        logits, argmax = self.run()
        if greedy:
            return None, backend.to_host_array(argmax)
        return backend.to_host_array(logits).astype(np.float64), None


def _eager(step):
    """The graph runner where none is registered (the CPU): the step itself, run each call."""
    return step


class FixedKVCache(KVCache):
    """A ``KVCache``'s arrays (B, H, capacity, D) with its length counted on the device, in a
    (1,) int64 array that each ``attend`` advances: every shape is fixed, so a step that uses
    it can be recorded once and replayed. Nothing checks the capacity on the device: the
    caller (``sample``) never feeds more positions than it has.
    """

    def __init__(self, cache: KVCache):
        xp = backend.array_module(cache.keys)
        self.keys, self.values = cache.keys, cache.values
        self.length = xp.asarray([cache.length], dtype=np.int64)  # (1,)
        self.slots = xp.arange(cache.capacity)  # (C,): each slot's position

    @property
    def host_length(self) -> None:
        return None

    def positions(self, xp, count: int):
        return self.length + xp.arange(count)  # (count,)

    def attend(self, xp, q, k, v):
        """Write k, v (B, H, Tnew, D) at the counted positions, attend q there -> (B, Tnew,
        H, D), and count the new positions."""
        T_new = q.shape[2]
        new = (self.slots >= self.length) & (self.slots < self.length + T_new)  # (C,)
        offset = xp.clip(self.slots - self.length, 0, T_new - 1)  # (C,): the new one it takes
        for cached, fresh in ((self.keys, k), (self.values, v)):
            xp.copyto(cached, xp.take(fresh, offset, axis=2), where=new[:, None])
        out = attend_masked(xp, q, self.keys, self.values, self.positions(xp, T_new))
        self.length += T_new
        return out


def attend_masked(xp, q, keys, values, positions):
    """softmax(q k^T / sqrt(D)) v of queries q (B, H, T, D) at ``positions`` (T,) over the
    whole capacity of ``keys`` and ``values`` (B, H, C, D), each query masked to the slots at
    or before its position -> (B, T, H, D), in q's dtype (computed in float32 where cupy has
    no products for it). No shape depends on the positions, and the products are multiplies
    and sums (a graph cannot record cupy's batched matrix products): a recordable step."""
    dtype, product = q.dtype, _product_dtype(xp, q.dtype)
    q, keys, values = (x.astype(product, copy=False) for x in (q, keys, values))
    C, D = keys.shape[2], q.shape[3]
    scores = (q[:, :, :, None, :] * keys[:, :, None]).sum(axis=-1) / math.sqrt(D)  # (B,H,T,C)
    visible = xp.arange(C)[None, :] <= positions[:, None]  # (T, C): no future, no empty slot
    scores = xp.where(visible, scores, np.dtype(product).type(-np.inf))  # stays in product
    scores -= scores.max(axis=-1, keepdims=True)  # stable softmax over the slots
    probs = xp.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = (probs[..., None] * values[:, :, None]).sum(axis=3)  # (B, H, T, D)
    return out.transpose(0, 2, 1, 3).astype(dtype, copy=False)
