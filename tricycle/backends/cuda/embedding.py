"""The embedding's backward, a scatter-add of rows (embedding.cu), as
``tricycle.layers.embedding_backward``."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import (
    CTYPES,
    LABEL_CTYPES,
    compiled,
    contiguous,
    ctype,
    flat_labels,
)


def embedding_forward(xp, weights, ids):
    """Rows of weights picked by ids (as ``tricycle.layers.embedding_forward``)."""
    return backend.cupy().take(weights, ids, axis=0)


def embedding_backward(xp, dout, ids, vocab_size: int, dtype=None):
    """dW (vocab_size, E) with dW[ids[n]] += dout[n] (as the back_fn of ``layers.embedding``).

    Accumulates in float32, each row of dW by one warp in token order (embedding.cu: the same
    numbers on every run); returns ``dtype`` (default: float32, which is
    dout's dtype in float32 training and the master-weight dtype in mixed precision). Ids
    outside [0, vocab_size) add nothing (their range check may be deferred).
    """
    cp = backend.cupy()
    dim = dout.shape[-1]
    dout = contiguous(cp, dout).reshape(-1, dim)
    ids, id_ctype = flat_labels(cp, ids)
    n_tokens = ids.size
    if dout.shape[0] != n_tokens:
        raise ValueError(f"embedding: {n_tokens} ids for {dout.shape[0]} gradient rows")
    dweights = cp.zeros((vocab_size, dim), dtype=np.float32)
    if n_tokens and dim:
        first = cp.full(vocab_size, n_tokens, dtype=np.int32)  # (V,) each id's first token
        n, vocab = np.int32(n_tokens), np.int64(vocab_size)
        firsts = compiled("embedding.cu", "first_occurrence_kernel", id_ctype)
        firsts((-(-n_tokens // 256),), (256,), (ids, first, n, vocab))
        kernel = compiled("embedding.cu", "embedding_backward_kernel", ctype(dout), id_ctype)
        warps = 8
        kernel((-(-n_tokens // warps),), (32 * warps,),
               (dout, ids, first, dweights, n, np.int32(dim), vocab))  # fmt: skip
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    return dweights if dtype == np.float32 else dweights.astype(dtype)


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("embedding.cu", "first_occurrence_kernel", (lab,)) for lab in LABEL_CTYPES.values()
    ] + [
        ("embedding.cu", "embedding_backward_kernel", (t, lab))
        for t in CTYPES.values()
        for lab in LABEL_CTYPES.values()
    ]


dispatch.add("embedding", "cuda", (embedding_forward, embedding_backward), dtypes=tuple(CTYPES))
