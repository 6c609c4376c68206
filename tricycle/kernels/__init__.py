"""Fused CUDA kernels for cupy arrays, with the same signatures as the xp functions they replace.

Each fused op in tricycle is a pure array function written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``). On a GPU the same op may run as one CUDA kernel from here;
the owner's function dispatches in its first two lines::

    if kernels.enabled(x):
        return kernels.softmax_forward(xp, x)

and the xp version stays the reference the kernel is tested against (tests/test_kernels.py).

Kernels are CUDA C in the ``*.cu`` files beside this one (one file per concern, each prefixed
with ``common.cuh``), compiled by NVRTC through ``cupy.RawModule`` on first use, one template
instantiation at a time, and cached: in this process by (file, instantiation, device), and on
disk by CuPy's kernel cache. cupy comes only from ``tricycle.backend.cupy()``; importing this
module on a machine without CUDA imports nothing from cupy and prints nothing.

Supported storage types: float32, float16 and bfloat16 (``ml_dtypes.bfloat16`` arrays); all
arithmetic is float32. Set the environment variable ``TRICYCLE_DISABLE_KERNELS`` (to anything
non-empty) to force the xp versions, e.g. to benchmark or debug them.
"""

import numpy as np

from tricycle import backend
from tricycle.kernels.flash_attention import attention_backward, attention_forward
from tricycle.kernels.gemm import column_sums, gemm, gemm_enabled
from tricycle.kernels.launch import (
    _ATTENTION_HEAD_DIMS,
    _CTYPES,
    _LABEL_CTYPES,
    KernelSaved,
    _contiguous,
    _ctype,
    _elementwise_grid,
    _flag,
    _function,
    _labels,
    _row_launch,
    _rows_of,
    _sm_count,
    adam_enabled,
    attention_enabled,
    enabled,
    owns,
)
from tricycle.kernels.optimiser import (
    adam_update,
    adamw_multi_step,
    adamw_step,
    clip_multiplier,
    multi_cast,
    multi_cast_enabled,
    optimiser_update,
)


# ====================================================================== softmax
def softmax_forward(xp, x):
    """Softmax over the last axis (as ``tricycle.functions.softmax_forward``)."""
    cp = backend.cupy()
    x = _contiguous(cp, x)
    y = cp.empty_like(x)
    rows, cols = _rows_of(x)
    if rows == 0 or cols == 0:
        return y
    warp, grid, block = _row_launch(rows, cols)
    kernel = _function("softmax.cu", "softmax_forward_kernel", _ctype(x), _flag(warp))
    kernel((grid,), (block,), (x, y, np.int32(rows), np.int32(cols)))
    return y


def softmax_backward(xp, y, dy):
    """dx = y * (dy - sum(y * dy)) over the last axis (as ``functions.softmax_backward``)."""
    cp = backend.cupy()
    y = _contiguous(cp, y)
    dy = _contiguous(cp, dy, y.dtype)
    dx = cp.empty_like(y)
    rows, cols = _rows_of(y)
    if rows == 0 or cols == 0:
        return dx
    warp, grid, block = _row_launch(rows, cols)
    kernel = _function("softmax.cu", "softmax_backward_kernel", _ctype(y), _flag(warp))
    kernel((grid,), (block,), (y, dy, dx, np.int32(rows), np.int32(cols)))
    return dx


# ====================================================================== layer norm, RMS norm
def _norm_forward(x, gamma, beta, eps: float, rms: bool):
    cp = backend.cupy()
    x = _contiguous(cp, x)
    gamma = _contiguous(cp, gamma)
    has_beta = np.int32(0 if rms or beta is None else 1)  # decided before beta is stood in for
    beta = gamma if beta is None else _contiguous(cp, beta, gamma.dtype)
    rows, cols = _rows_of(x)
    if gamma.size != cols:
        raise ValueError(f"norm: gamma has {gamma.size} elements, x has rows of {cols}")
    y = cp.empty_like(x)
    stats_shape = x.shape[:-1] + (1,)
    mean = rstd = cp.empty(stats_shape, dtype=np.float32)  # float32 whatever x's dtype
    if not rms:
        mean = cp.empty(stats_shape, dtype=np.float32)
    if rows and cols:
        warp, grid, block = _row_launch(rows, cols)
        kernel = _function(
            "norm.cu", "norm_forward_kernel", _ctype(x), _ctype(gamma), _flag(warp), _flag(rms)
        )
        kernel(
            (grid,),
            (block,),
            (x, gamma, beta, has_beta, y, mean, rstd, np.int32(rows), np.int32(cols),
             np.float32(eps)),
        )  # fmt: skip
    return y, mean, rstd


def _norm_backward(dy, x, gamma, mean, rstd, rms: bool):
    cp = backend.cupy()
    x = _contiguous(cp, x)
    dy = _contiguous(cp, dy, x.dtype)
    gamma = _contiguous(cp, gamma)
    rstd = _contiguous(cp, rstd, np.float32)
    mean = rstd if rms else _contiguous(cp, mean, np.float32)
    rows, cols = _rows_of(x)
    dx = cp.empty_like(x)
    width = cols if rms else 2 * cols  # dgamma | dbeta accumulators per warp
    if rows == 0 or cols == 0:
        zeros = cp.zeros(cols, dtype=gamma.dtype)
        return dx, zeros, zeros.copy()

    # 8 warps a block, each with a private accumulator row in shared memory; fewer warps for
    # wide rows, and global scratch (one row per warp) past 48 KB for a single warp
    n_warps = max(1, min(8, 49152 // (4 * width)))
    use_smem = 4 * width * n_warps <= 49152
    grid = max(1, min(-(-rows // n_warps), 4 * _sm_count()))
    n_parts = grid if use_smem else grid * n_warps
    partial = cp.empty((n_parts, width), dtype=np.float32)
    kernel = _function("norm.cu", "norm_backward_kernel", _ctype(x), _ctype(gamma), _flag(rms))
    kernel(
        (grid,),
        (32 * n_warps,),
        (dy, x, gamma, mean, rstd, dx, partial, np.int32(rows), np.int32(cols),
         np.int32(use_smem)),
        shared_mem=4 * width * n_warps if use_smem else 0,
    )  # fmt: skip

    dgamma = cp.empty(cols, dtype=gamma.dtype)
    dbeta = dgamma if rms else cp.empty(cols, dtype=gamma.dtype)
    reduce = _function("norm.cu", "norm_reduce_kernel", _ctype(gamma), _flag(rms))
    reduce(
        (-(-width // 256),),
        (256,),
        (partial, np.int32(n_parts), np.int32(cols), dgamma, dbeta),
    )
    return dx, dgamma, dbeta


def layer_norm_forward(xp, x, gamma, beta, eps: float):
    """(y, mean, rstd) as ``tricycle.layers.layer_norm_forward``; mean and rstd (..., 1) are
    float32 whatever x's dtype. ``beta`` may be None."""
    return _norm_forward(x, gamma, beta, eps, rms=False)


def layer_norm_backward(xp, dy, x, gamma, mean, rstd):
    """(dx, dgamma, dbeta) as ``tricycle.layers.layer_norm_backward`` (dgamma, dbeta in
    gamma's dtype)."""
    return _norm_backward(dy, x, gamma, mean, rstd, rms=False)


def rms_norm_forward(xp, x, gamma, eps: float):
    """(y, rstd) as ``tricycle.layers.rms_norm_forward``; rstd (..., 1) is float32."""
    y, _, rstd = _norm_forward(x, gamma, None, eps, rms=True)
    return y, rstd


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """(dx, dgamma) as ``tricycle.layers.rms_norm_backward``."""
    dx, dgamma, _ = _norm_backward(dy, x, gamma, None, rstd, rms=True)
    return dx, dgamma


# ====================================================================== GeLU
def is_tanh_gelu(approximate) -> bool:
    """Parse GeLU's ``approximate``: True/"tanh" for the tanh form, False/None/"none" exact."""
    if approximate in (True, "tanh"):
        return True
    if approximate in (False, None, "none"):
        return False
    raise ValueError(f"GeLU: approximate must be False/'none' or True/'tanh', got {approximate!r}")


def _gelu(kernel_name: str, x, bias, dy, approximate):
    cp = backend.cupy()
    x = _contiguous(cp, x)
    cols = x.shape[-1] if x.ndim else 1
    if bias is not None:
        bias = _contiguous(cp, bias, x.dtype)
        if bias.size != cols:
            raise ValueError(f"GeLU: bias of {bias.size} elements for rows of {cols}")
    out = cp.empty_like(x)
    n = x.size
    if n == 0:
        return out
    kernel = _function("gelu.cu", kernel_name, _ctype(x), _flag(is_tanh_gelu(approximate)))
    has_bias = np.int32(bias is not None)
    bias = x if bias is None else bias
    args = (x, bias, has_bias, np.int32(cols))
    if dy is not None:
        args += (_contiguous(cp, dy, x.dtype),)
    kernel((_elementwise_grid(n),), (256,), args + (out, np.int64(n)))
    return out


def gelu_forward(xp, x, approximate=False):
    """GeLU, exact (erf) or tanh form (as ``tricycle.activation.gelu_forward``)."""
    return _gelu("gelu_forward_kernel", x, None, None, approximate)


def gelu_backward(xp, x, dy, approximate=False):
    """dx = dy * gelu'(x) (as ``tricycle.activation.gelu_backward``)."""
    return _gelu("gelu_backward_kernel", x, None, dy, approximate)


def bias_gelu_forward(xp, x, bias, approximate=False):
    """gelu(x + bias) with bias (C,) over the last axis; x + bias is never stored."""
    return _gelu("gelu_forward_kernel", x, bias, None, approximate)


def bias_gelu_backward(xp, x, bias, dy, approximate=False):
    """Gradients (dx, dbias) of ``bias_gelu_forward``; dbias sums dx over the leading axes."""
    dx = _gelu("gelu_backward_kernel", x, bias, dy, approximate)
    dbias = dx.reshape(-1, dx.shape[-1]).sum(axis=0, dtype=np.float32).astype(bias.dtype)
    return dx, dbias


# ====================================================================== cross-entropy
def cross_entropy_forward(xp, logits, labels, ignore_index=None):
    """(loss, (peak, log_sum, count)) as ``tricycle.loss.cross_entropy_forward``.

    One pass over the logits; loss, peak (N,), log_sum (N,) and count are float32 whatever
    the logits' dtype. A label outside [0, C) (and not ignored) makes the loss NaN instead of
    raising: checking on the host would need a synchronisation (the CrossEntropy op checks
    before calling).
    """
    cp = backend.cupy()
    logits = _contiguous(cp, logits)
    rows, cols = _rows_of(logits)
    labels, label_ctype = _labels(cp, labels)
    if labels.size != rows:
        raise ValueError(f"cross_entropy: {labels.size} labels for {rows} rows of logits")
    peak = cp.empty(rows, dtype=np.float32)
    log_sum = cp.empty(rows, dtype=np.float32)
    row_loss = cp.empty(rows, dtype=np.float32)
    loss = cp.empty((), dtype=np.float32)
    count = cp.empty((), dtype=np.float32)
    has_ignore = np.int32(ignore_index is not None)
    ignore = np.int64(0 if ignore_index is None else ignore_index)
    if rows:
        warp, grid, block = _row_launch(rows, cols)
        forward = _function(
            "cross_entropy.cu", "ce_forward_kernel", _ctype(logits), label_ctype, _flag(warp)
        )
        forward(
            (grid,),
            (block,),
            (logits, labels, peak, log_sum, row_loss, np.int32(rows), np.int32(cols), ignore,
             has_ignore),
        )  # fmt: skip
    reduce = _function("cross_entropy.cu", "ce_reduce_kernel", label_ctype)
    reduce((1,), (1024,), (row_loss, labels, np.int32(rows), ignore, has_ignore, loss, count))
    return loss, KernelSaved((peak, log_sum, count))


def cross_entropy_backward(xp, dloss, logits, labels, saved, ignore_index=None):
    """dlogits = dloss * (softmax - onehot) / count, zero on ignored rows, in one pass (as
    ``tricycle.loss.cross_entropy_backward``). dloss may be a device scalar: no sync."""
    cp = backend.cupy()
    peak, log_sum, count = saved
    shape = logits.shape
    logits = _contiguous(cp, logits)
    rows, cols = _rows_of(logits)
    labels, label_ctype = _labels(cp, labels)
    peak = _contiguous(cp, peak, np.float32)
    log_sum = _contiguous(cp, log_sum, np.float32)
    count = _contiguous(cp, cp.asarray(count), np.float32)
    dloss = _contiguous(cp, cp.asarray(dloss), np.float32)
    dlogits = cp.empty_like(logits)
    if rows:
        warp, grid, block = _row_launch(rows, cols)
        kernel = _function(
            "cross_entropy.cu", "ce_backward_kernel", _ctype(logits), label_ctype, _flag(warp)
        )
        kernel(
            (grid,),
            (block,),
            (logits, labels, peak, log_sum, dloss, count, dlogits, np.int32(rows),
             np.int32(cols), np.int64(0 if ignore_index is None else ignore_index),
             np.int32(ignore_index is not None)),
        )  # fmt: skip
    return dlogits.reshape(shape)


# ====================================================================== embedding
def embedding_backward(xp, dout, ids, vocab_size: int, dtype=None):
    """dW (vocab_size, E) with dW[ids[n]] += dout[n] (as the back_fn of ``layers.embedding``).

    Accumulates in float32 with atomics; returns ``dtype`` (default: float32, which is
    dout's dtype in float32 training and the master-weight dtype in mixed precision).
    """
    cp = backend.cupy()
    dim = dout.shape[-1]
    dout = _contiguous(cp, dout).reshape(-1, dim)
    ids, id_ctype = _labels(cp, ids)
    n_tokens = ids.size
    if dout.shape[0] != n_tokens:
        raise ValueError(f"embedding: {n_tokens} ids for {dout.shape[0]} gradient rows")
    dweights = cp.zeros((vocab_size, dim), dtype=np.float32)
    if n_tokens and dim:
        kernel = _function("embedding.cu", "embedding_backward_kernel", _ctype(dout), id_ctype)
        warps = 8
        kernel(
            (-(-n_tokens // warps),),
            (32 * warps,),
            (dout, ids, dweights, np.int32(n_tokens), np.int32(dim)),
        )
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    return dweights if dtype == np.float32 else dweights.astype(dtype)


# ====================================================================== every instantiation
def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel the functions above may launch.

    Used to compile everything ahead of a benchmark (``compile_all``) and by the nvcc syntax
    check in the tests, which needs no GPU.
    """
    floats = list(_CTYPES.values())
    labels = list(_LABEL_CTYPES.values())
    flags = ("true", "false")
    out = []
    for t in floats:
        for w in flags:
            out += [("softmax.cu", "softmax_forward_kernel", (t, w))]
            out += [("softmax.cu", "softmax_backward_kernel", (t, w))]
            for p in {t, "float"}:
                for rms in flags:
                    out += [("norm.cu", "norm_forward_kernel", (t, p, w, rms))]
            for lab in labels:
                out += [("cross_entropy.cu", "ce_forward_kernel", (t, lab, w))]
                out += [("cross_entropy.cu", "ce_backward_kernel", (t, lab, w))]
        for p in {t, "float"}:
            for rms in flags:
                out += [("norm.cu", "norm_backward_kernel", (t, p, rms))]
        for rms in flags:
            out += [("norm.cu", "norm_reduce_kernel", (t, rms))]
        for tanh in flags:
            out += [("gelu.cu", "gelu_forward_kernel", (t, tanh))]
            out += [("gelu.cu", "gelu_backward_kernel", (t, tanh))]
        for lab in labels:
            out += [("embedding.cu", "embedding_backward_kernel", (t, lab))]
        for d in _ATTENTION_HEAD_DIMS:
            for name in ("forward", "backward_dq", "backward_dkv"):
                out += [("attention.cu", f"attention_{name}_kernel", (t, str(d)))]
    for lab in labels:
        out += [("cross_entropy.cu", "ce_reduce_kernel", (lab,))]
    for name in ("adamw_kernel", "adamw_multi_kernel", "sumsq_multi_kernel",
                 "clip_multiplier_kernel"):  # fmt: skip
        out += [("adamw.cu", name, ())]
    for t in ("half_t", "bf16_t"):
        out += [("cast.cu", "multi_cast_kernel", (t,))]
    return out


def compile_all() -> int:
    """Compile (or load from CuPy's disk cache) every instantiation; returns how many."""
    items = instantiations()
    for file, name, args in items:
        _function(file, name, *args)
    return len(items)


__all__ = [
    "adam_enabled",
    "adam_update",
    "adamw_multi_step",
    "adamw_step",
    "attention_backward",
    "attention_enabled",
    "attention_forward",
    "bias_gelu_backward",
    "bias_gelu_forward",
    "clip_multiplier",
    "column_sums",
    "compile_all",
    "cross_entropy_backward",
    "cross_entropy_forward",
    "embedding_backward",
    "enabled",
    "gelu_backward",
    "gelu_forward",
    "gemm",
    "gemm_enabled",
    "instantiations",
    "is_tanh_gelu",
    "layer_norm_backward",
    "layer_norm_forward",
    "multi_cast",
    "multi_cast_enabled",
    "optimiser_update",
    "owns",
    "rms_norm_backward",
    "rms_norm_forward",
    "softmax_backward",
    "softmax_forward",
]
