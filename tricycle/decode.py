"""Generation: one token after another from a GPT with a KV cache (the loop of ``GPT.stream``).

    prompt (B, T) -> prefill: every position at once, one KVCache per block filled
                  -> logits (B, V) of the last position -> sample ids (B,)
    ids (B,)      -> decode step: one position more in each cache -> logits -> sample -> ...

On the CPU a decode step is the model's forward on one position with ``KVCache``s
(``tricycle.attention``), which append it and attend to the filled positions.

On a GPU that step is a few hundred small kernels with Python between them, and the host,
not the GPU, sets the pace. So there the decode steps have fixed shapes, and one step is
recorded once as a CUDA graph and replayed for every token (``Decoder``):

- each cache keeps its arrays of a fixed capacity and counts its positions on the device
  (``FixedKVCache``): a step writes its key and value at the counted position and attends
  to the whole capacity, masked beyond it (``attend_masked``; O(capacity) a token, which is
  nothing at these sizes), and positions (learnt or RoPE) are read from that count;
- the ids come from a preallocated (B, 1) buffer, and the step ends with the greedy argmax
  written back into it, so greedy decoding feeds itself and the host reads back the (B,) ids
  alone. Sampling with a temperature reads the logits back and samples on the host, with the
  caller's numpy ``rng`` as on the CPU, then fills the buffer.

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


def sample(model, prompt, max_new_tokens, temperature, top_k, rng, use_cache, vocab_limit,
           top_p=None):  # fmt: skip
    """Yield ``max_new_tokens`` ids (B,) continuing ``prompt`` (B, T), as ``GPT.stream``
    (which checks the arguments and runs this in eval mode under no_grad) describes;
    ``top_p``: nucleus sampling (``probabilities``)."""
    window_size = model.config.context_window
    keep = max(1, window_size // 2)
    head = model._head_matrix(len(prompt))
    window = prompt[:, -window_size:]  # (B, <= W): the positions the model sees
    capacity = window.shape[1] + max_new_tokens  # what this call can fill

    def prefill(window):
        caches = model.new_caches(len(window), capacity) if use_cache else None
        return caches, model._last_logits(window, caches, head)

    caches, logits = prefill(window)  # logits: host (B, V), or None where a Decoder sampled
    recorded = use_cache and records(caches)  # the device does not change: asked once
    decoder = None
    for step in range(max_new_tokens):
        if logits is not None:
            if vocab_limit is not None:
                logits[:, vocab_limit:] = -np.inf
            next_ids = sample_next(logits, temperature, top_k, rng, top_p)  # (B,)
        yield next_ids
        if step == max_new_tokens - 1:
            break
        full = window.shape[1] == window_size
        window = np.concatenate([window, next_ids[:, None]], axis=1)
        if full:  # re-encode the most recent half window into a fresh cache
            window = window[:, -keep:]
            caches, logits = prefill(window)
            decoder = None
        elif not use_cache:
            logits = model._last_logits(window, None, head)
        elif recorded:
            decoder = decoder or Decoder(model, caches, head, vocab_limit)
            logits, next_ids = decoder(next_ids, greedy=temperature == 0)
        else:
            logits = model._last_logits(next_ids[:, None], caches, head)


def records(caches: list[KVCache]) -> bool:
    """Whether decode steps on these caches' device are recorded as a graph (a GPU)."""
    return dispatch.kernel_for("graph", caches[0].keys) is not None


def sample_next(logits: np.ndarray, temperature: float, top_k: int | None, rng,
                top_p: float | None = None) -> np.ndarray:  # fmt: skip
    """Sample one id per row of ``logits`` (B, V) from ``probabilities``; temperature 0 is
    the greedy argmax."""
    if temperature == 0:
        return logits.argmax(axis=-1)
    weights = _weights(logits, temperature, top_k, top_p)  # (B, V), unnormalised
    cdf = np.cumsum(weights, axis=-1)
    u = rng.random((len(logits), 1)) * cdf[:, -1:]
    return np.minimum((cdf <= u).sum(axis=-1), logits.shape[-1] - 1)


def probabilities(logits: np.ndarray, temperature: float, top_k: int | None = None,
                  top_p: float | None = None) -> np.ndarray:  # fmt: skip
    """The distribution (B, V) that ``sample_next`` draws from, in transformers' order:
    logits divided by ``temperature`` (> 0), then only the ``top_k`` largest kept (ties
    with the k-th kept too), then only the smallest set of likeliest ids whose probability
    reaches ``top_p`` (nucleus sampling; the likeliest id always stays), then softmax."""
    weights = _weights(logits, temperature, top_k, top_p)
    return weights / weights.sum(axis=-1, keepdims=True)


def _weights(logits, temperature, top_k, top_p) -> np.ndarray:
    """exp(filtered logits / temperature - max): ``probabilities`` unnormalised."""
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"sample_next: top_p must be a number in (0, 1], got {top_p!r}")
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = np.partition(logits, -top_k, axis=-1)[:, -top_k, None]  # (B, 1)
        logits = np.where(logits < kth, -np.inf, logits)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))  # (B, V)
    if top_p is not None and top_p < 1:
        order = np.argsort(logits, axis=-1, kind="stable")  # (B, V): least likely first
        ascending = np.take_along_axis(weights, order, axis=-1)
        mass = np.cumsum(ascending, axis=-1) / ascending.sum(axis=-1, keepdims=True)
        drop = mass <= 1 - top_p  # the tail that holds at most 1 - top_p
        drop[:, -1] = False
        np.put_along_axis(weights, order, np.where(drop, 0.0, ascending), axis=-1)
    return weights


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
