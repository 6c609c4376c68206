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

import math
import os
from pathlib import Path

import numpy as np

from tricycle import backend

_DIR = Path(__file__).resolve().parent
_OPTIONS = ("-std=c++17",)

# numpy dtype name -> the C type that stores it in common.cuh
_CTYPES = {"float32": "float", "float16": "half_t", "bfloat16": "bf16_t"}
_LABEL_CTYPES = {"int32": "int", "int64": "long long"}

_WARP_MAX_COLS = 512  # rows up to this long get a warp each, longer rows a whole block
_ATTENTION_HEAD_DIMS = (32, 64, 128)
_LOG2E = 1.4426950408889634


# ====================================================================== dispatch predicates
def enabled(*arrays) -> bool:
    """True when every array is a cupy array of a supported float dtype and kernels are on.

    This is the dispatch test at the top of each pinned xp function. It is cheap (no cupy
    import, no device query) and False for every numpy array.
    """
    if not arrays or os.environ.get("TRICYCLE_DISABLE_KERNELS"):
        return False
    return all(backend.is_cupy_array(a) and a.dtype.name in _CTYPES for a in arrays)


def attention_enabled(qkv, n_heads: int) -> bool:
    """``enabled(qkv)`` and a shape the attention kernels handle: (B, T, 3E), D in 32/64/128."""
    if not enabled(qkv) or qkv.ndim != 3 or qkv.shape[-1] % (3 * n_heads):
        return False
    return qkv.shape[-1] // (3 * n_heads) in _ATTENTION_HEAD_DIMS and qkv.shape[0] * n_heads < 65536


def adam_enabled(w, grad) -> bool:
    """The fused Adam step updates float32, C-contiguous parameters in place."""
    return (
        enabled(w, grad)
        and w.dtype == np.float32
        and w.flags.c_contiguous
        and w.shape == grad.shape
    )


class KernelSaved(tuple):
    """What a kernel forward saves for its backward; a tuple, marked as the kernels' own.

    The xp versions save different things (attention keeps its probabilities), so the
    backward dispatches on ``owns(saved)`` rather than on the arrays.
    """

    __slots__ = ()


def owns(saved) -> bool:
    """True when ``saved`` came from a kernel forward here (dispatch test for backwards)."""
    return isinstance(saved, KernelSaved)


# ====================================================================== loading and launching
_sources: dict[str, str] = {}
_functions: dict[tuple, object] = {}
_sm_counts: dict[int, int] = {}


def _source(file: str) -> str:
    if file not in _sources:
        common = (_DIR / "common.cuh").read_text()
        _sources[file] = f"{common}\n// ---- {file}\n{(_DIR / file).read_text()}"
    return _sources[file]


def _function(file: str, name: str, *template_args: str):
    """The compiled kernel ``name<template_args>`` from ``file`` (compiled once, then cached)."""
    cp = backend.cupy()
    expression = f"{name}<{', '.join(template_args)}>" if template_args else name
    key = (file, expression, cp.cuda.runtime.getDevice())
    function = _functions.get(key)
    if function is None:
        module = cp.RawModule(
            code=_source(file),
            options=_OPTIONS,
            name_expressions=[expression] if template_args else None,
        )
        function = _functions[key] = module.get_function(expression)
    return function


def _sm_count() -> int:
    cp = backend.cupy()
    device = cp.cuda.runtime.getDevice()
    if device not in _sm_counts:
        _sm_counts[device] = cp.cuda.Device(device).attributes["MultiProcessorCount"]
    return _sm_counts[device]


def _ctype(array) -> str:
    try:
        return _CTYPES[array.dtype.name]
    except KeyError:
        raise TypeError(
            f"tricycle.kernels: dtype {array.dtype} is not supported (float32, float16, bfloat16)"
        ) from None


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _rows_of(x) -> tuple[int, int]:
    """(rows, cols) of x viewed as a matrix of its last axis; checks the int32 limits."""
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    if rows >= 2**31 or cols >= 2**31:
        raise ValueError(f"tricycle.kernels: shape {x.shape} is too large for int32 indexing")
    return rows, cols


def _row_launch(rows: int, cols: int) -> tuple[bool, int, int]:
    """(warp_per_row, grid, block) for a kernel with one RowGroup per row."""
    if cols <= _WARP_MAX_COLS:
        block = 256
        return True, -(-rows // (block // 32)), block
    block = min(1024, max(128, 32 * -(-cols // 256)))  # about 8 elements per thread
    return False, rows, block


def _contiguous(cp, a, dtype=None):
    """A C-contiguous array of ``dtype`` (a no-op when ``a`` already is one)."""
    return cp.ascontiguousarray(a if dtype is None or a.dtype == dtype else a.astype(dtype))


def _labels(cp, labels):
    """Flat contiguous int32/int64 labels and their C type."""
    labels = labels.reshape(-1)
    if labels.dtype.name not in _LABEL_CTYPES:
        labels = labels.astype(np.int64)
    labels = cp.ascontiguousarray(labels)
    return labels, _LABEL_CTYPES[labels.dtype.name]


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


def _elementwise_grid(n: int) -> int:
    return max(1, min(-(-n // 256), 32 * _sm_count()))  # grid-stride beyond ~32 blocks per SM


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


# ====================================================================== AdamW
def _adam_constants(lr: float, beta1: float, beta2: float, step: int) -> tuple:
    """Bias corrections in float64 on the host, as torch: (lr / (1 - b1^t), 1/sqrt(1 - b2^t))."""
    return np.float32(lr / (1.0 - beta1**step)), np.float32(1.0 / math.sqrt(1.0 - beta2**step))


def _grad_mult_args(cp, grad_multiplier):
    if grad_multiplier is None:
        return _dummy_float(cp), np.int32(0)
    return _contiguous(cp, cp.asarray(grad_multiplier), np.float32), np.int32(1)


_dummies: dict[int, object] = {}


def _dummy_float(cp):
    """A one-element float32 device array passed where a kernel's pointer is unused."""
    device = cp.cuda.runtime.getDevice()
    if device not in _dummies:
        _dummies[device] = cp.ones(1, dtype=np.float32)
    return _dummies[device]


def adamw_step(
    xp, w, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, step,
    weight_decay=0.0, grad_multiplier=None,
):  # fmt: skip
    """One fused AdamW step on one float32 tensor, in place on w, exp_avg and exp_avg_sq.

    ``step`` is the 1-based step count t for the bias corrections. ``grad_multiplier``
    (optional 0-d device array) scales the gradient first; non-finite means skip the step.
    """
    cp = backend.cupy()
    grad = _contiguous(cp, grad, np.float32)
    n = w.size
    if n == 0:
        return
    step_size, inv_sqrt_bc2 = _adam_constants(lr, beta1, beta2, step)
    mult, has_mult = _grad_mult_args(cp, grad_multiplier)
    kernel = _function("adamw.cu", "adamw_kernel")
    kernel(
        (_elementwise_grid(n),),
        (256,),
        (w, grad, exp_avg, exp_avg_sq, np.int64(n), np.float32(1.0 - lr * weight_decay),
         np.float32(beta1), np.float32(beta2), np.float32(eps), step_size, inv_sqrt_bc2,
         mult, has_mult),
    )  # fmt: skip


def adam_update(xp, w, grad, state, lr, beta1, beta2, eps, decay=0.0) -> None:
    """Drop-in for ``tricycle.optimisers._adam_update``: same state keys, same math (including
    the decoupled decay ``w *= 1 - lr * decay``), one kernel.

    Dispatch with ``adam_enabled(w, grad)`` (float32, contiguous w).
    """
    cp = backend.cupy()
    if "exp_avg" not in state:
        state["exp_avg"], state["exp_avg_sq"], state["step"] = (
            cp.zeros_like(w), cp.zeros_like(w), 0,
        )  # fmt: skip
    state["step"] = t = state["step"] + 1
    adamw_step(xp, w, grad, state["exp_avg"], state["exp_avg_sq"], lr, beta1, beta2, eps, t, decay)


class _BlockTable:
    """Device tables for a multi-tensor launch: sizes, block -> (tensor, start), decays."""

    # elements per block: small enough for ~10 blocks per SM at GPT-2 small sizes (run 1: 65536
    # elements a block left most SMs idle, 397 us vs 133 us for one flat tensor)
    chunk = 8192

    def __init__(self, cp, sizes: list[int], weight_decays: list[float] | None):
        block_tensor, block_start = [], []
        for t, size in enumerate(sizes):
            starts = range(0, size, self.chunk)
            block_tensor += [t] * len(starts)
            block_start += list(starts)
        self.n_blocks = len(block_tensor)
        self.sizes = cp.asarray(np.asarray(sizes, dtype=np.int64))
        self.block_tensor = cp.asarray(np.asarray(block_tensor, dtype=np.int32))
        self.block_start = cp.asarray(np.asarray(block_start, dtype=np.int64))
        self.decays = (
            None if weight_decays is None else cp.asarray(np.asarray(weight_decays, np.float32))
        )


_tables: dict[tuple, _BlockTable] = {}
_pointer_tables: dict[tuple, object] = {}


def _table(cp, sizes: list[int], weight_decays: list[float] | None) -> _BlockTable:
    key = (cp.cuda.runtime.getDevice(), tuple(sizes), weight_decays and tuple(weight_decays))
    if key not in _tables:
        if len(_tables) > 64:
            _tables.clear()
        _tables[key] = _BlockTable(cp, sizes, weight_decays)
    return _tables[key]


def _pointers(cp, arrays_lists) -> object:
    """A device int64 array of the arrays' addresses; cached, since the memory pool tends to
    hand the same addresses back step after step (then no upload at all)."""
    pointers = tuple(a.data.ptr for arrays in arrays_lists for a in arrays)
    key = (cp.cuda.runtime.getDevice(), pointers)
    table = _pointer_tables.get(key)
    if table is None:
        if len(_pointer_tables) > 256:
            _pointer_tables.clear()
        table = _pointer_tables[key] = cp.asarray(np.asarray(pointers, dtype=np.int64))
    return table


def _check_multi(name: str, *lists) -> None:
    n = len(lists[0])
    for arrays in lists:
        if len(arrays) != n:
            raise ValueError(f"{name}: lists of different lengths {[len(a) for a in lists]}")
        for a in arrays:
            if a.dtype != np.float32 or not a.flags.c_contiguous:
                raise TypeError(
                    f"{name}: every array must be float32 and C-contiguous, got {a.dtype} "
                    f"{a.shape} (contiguous: {a.flags.c_contiguous})"
                )


def adamw_multi_step(
    xp, weights, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, step,
    weight_decays=0.0, grad_multiplier=None,
):  # fmt: skip
    """One AdamW step over many float32 tensors in a single launch (in place).

    ``weight_decays``: one float for all tensors or one per tensor (0 for biases and gains).
    ``grad_multiplier``: as in ``adamw_step`` (see ``clip_multiplier``).
    """
    cp = backend.cupy()
    grads = [_contiguous(cp, g, np.float32) for g in grads]
    _check_multi("adamw_multi_step", weights, grads, exp_avgs, exp_avg_sqs)
    if not weights:
        return
    if np.ndim(weight_decays) == 0:
        weight_decays = [float(weight_decays)] * len(weights)
    table = _table(cp, [w.size for w in weights], [float(wd) for wd in weight_decays])
    pointers = _pointers(cp, (weights, grads, exp_avgs, exp_avg_sqs))
    step_size, inv_sqrt_bc2 = _adam_constants(lr, beta1, beta2, step)
    mult, has_mult = _grad_mult_args(cp, grad_multiplier)
    kernel = _function("adamw.cu", "adamw_multi_kernel")
    kernel(
        (table.n_blocks,),
        (256,),
        (pointers, table.sizes, table.decays, table.block_tensor, table.block_start,
         np.int32(len(weights)), np.int32(table.chunk), np.float32(lr), np.float32(beta1),
         np.float32(beta2),
         np.float32(eps), step_size, inv_sqrt_bc2, mult, has_mult),
    )  # fmt: skip


def clip_multiplier(xp, grads, max_norm: float = 0.0, loss_scale=None):
    """Global gradient norm and the gradient multiplier for the AdamW kernels, on the device.

    ``loss_scale``: None, or a 0-d float32 device array holding the loss scale s (the
    gradients are s times too large). Returns (norm, multiplier), 0-d float32 device arrays:
    norm = ||grads|| / s, multiplier = min(1, max_norm / (norm + 1e-6)) / s (no clipping when
    max_norm <= 0), or NaN when the norm is inf/NaN, which makes the AdamW kernels skip the
    step. Two launches and no host synchronisation.
    """
    cp = backend.cupy()
    grads = [_contiguous(cp, g, np.float32) for g in grads]
    norm = cp.zeros((), dtype=np.float32)
    multiplier = cp.ones((), dtype=np.float32)
    if not grads:
        return norm, multiplier
    scale, has_scale = _grad_mult_args(cp, loss_scale)
    table = _table(cp, [g.size for g in grads], None)
    pointers = _pointers(cp, (grads,))
    partial = cp.empty(table.n_blocks, dtype=np.float32)
    sumsq = _function("adamw.cu", "sumsq_multi_kernel")
    sumsq(
        (table.n_blocks,),
        (256,),
        (pointers, table.sizes, table.block_tensor, table.block_start, np.int32(table.chunk),
         partial),
    )  # fmt: skip
    finalize = _function("adamw.cu", "clip_multiplier_kernel")
    finalize(
        (1,),
        (1024,),
        (partial, np.int32(table.n_blocks), np.float32(max_norm), scale, has_scale, norm,
         multiplier),
    )  # fmt: skip
    return norm, multiplier


def optimiser_update(optimiser, parameters, grad_multiplier=None) -> bool:
    """``optimiser.update(parameters)`` for Adam/AdamW as multi-tensor kernel launches.

    Same state (``exp_avg``, ``exp_avg_sq``, ``step`` per parameter name) and the same math as
    ``tricycle.optimisers``; one launch per distinct step count (normally one). Returns False,
    having done nothing, where it does not apply: another optimiser (or a subclass), Adam with
    L2 weight decay, or a parameter/gradient that is not a float32 C-contiguous cupy array.
    ``grad_multiplier``: see ``clip_multiplier``. Gradients are left in place (zero them as
    usual). A step skipped on the device (non-finite multiplier) still counts in ``step``.
    """
    from tricycle.optimisers import Adam, AdamW, _named  # here: optimisers may import us

    kind = type(optimiser)
    if kind not in (Adam, AdamW) or (kind is Adam and optimiser.weight_decay):
        return False
    named = [(n, p) for n, p in _named(parameters) if p.grad is not None]
    if not named:
        return True
    for _, p in named:
        g = p.grad.array
        if not (adam_enabled(p.array, g) and g.dtype == np.float32):
            return False
    cp = backend.cupy()
    lr = float(optimiser.learning_rate)
    beta1, beta2 = optimiser.betas
    groups: dict[int, list] = {}
    for name, p in named:
        state = optimiser.state.setdefault(name, {})
        for key, value in state.items():  # state loaded from a checkpoint: move it here
            if hasattr(value, "shape") and not backend.is_cupy_array(value):
                state[key] = backend.to_device_array(value, p.array.device.id)
        if "exp_avg" not in state:
            state["exp_avg"] = cp.zeros_like(p.array)
            state["exp_avg_sq"] = cp.zeros_like(p.array)
            state["step"] = 0
        state["step"] += 1
        decay = kind is AdamW and optimiser.weight_decay and optimiser.decay_filter(name, p)
        groups.setdefault(state["step"], []).append(
            (p.array, p.grad.array, state["exp_avg"], state["exp_avg_sq"],
             optimiser.weight_decay if decay else 0.0)
        )  # fmt: skip
    for step, members in groups.items():
        w, g, m, v, wd = (list(column) for column in zip(*members))
        adamw_multi_step(
            None, w, g, m, v, lr, beta1, beta2, optimiser.eps, step, wd, grad_multiplier
        )
    return True


# ====================================================================== attention
def _attention_shapes(qkv, n_heads: int) -> tuple[int, int, int, int]:
    B, T, three_e = qkv.shape
    D = three_e // (3 * n_heads)
    if three_e != 3 * n_heads * D or D not in _ATTENTION_HEAD_DIMS:
        raise ValueError(
            f"attention kernel: qkv of shape {qkv.shape} with {n_heads} heads gives head dim "
            f"{three_e / (3 * n_heads)}; the kernels handle {_ATTENTION_HEAD_DIMS}"
        )
    return B, T, three_e // 3, D


def _aligned(cp, a):
    """Contiguous and 16-byte aligned (the kernels load 4 elements at a time)."""
    a = cp.ascontiguousarray(a)
    return a if a.data.ptr % 16 == 0 else a.copy()


def attention_forward(xp, qkv, n_heads: int):
    """Causal attention of packed qkv (B, T, 3E) -> (out (B, T, E), saved), flash style.

    As ``tricycle.attention.attention_forward``, but saved = (qkv, out, lse, n_heads) with lse
    (B, H, T) float32 (base 2): no (B, H, T, T) array exists at any point.
    """
    cp = backend.cupy()
    qkv = _aligned(cp, qkv)
    B, T, E, D = _attention_shapes(qkv, n_heads)
    out = cp.empty((B, T, E), dtype=qkv.dtype)
    lse = cp.empty((B, n_heads, T), dtype=np.float32)
    if B and T:
        rows_per_block = 128 // (D // 32)
        kernel = _function("attention.cu", "attention_forward_kernel", _ctype(qkv), str(D))
        kernel(
            (-(-T // rows_per_block), B * n_heads),
            (128,),
            (qkv, out, lse, np.int32(T), np.int32(n_heads), np.float32(_LOG2E / math.sqrt(D))),
        )
    return out, KernelSaved((qkv, out, lse, n_heads))


def attention_backward(xp, dout, saved):
    """dqkv (B, T, 3E) from dout (B, T, E) and a kernel forward's ``saved``."""
    cp = backend.cupy()
    qkv, out, lse, n_heads = saved
    B, T, E, D = _attention_shapes(qkv, n_heads)
    dout = _aligned(cp, dout if dout.dtype == qkv.dtype else dout.astype(qkv.dtype))
    dqkv = cp.empty_like(qkv)
    if B == 0 or T == 0:
        return dqkv
    delta = cp.empty((B, n_heads, T), dtype=np.float32)
    grid = (-(-T // (128 // (D // 32))), B * n_heads)
    scale = 1.0 / math.sqrt(D)
    dims = (np.int32(T), np.int32(n_heads), np.float32(_LOG2E * scale), np.float32(scale))
    dq = _function("attention.cu", "attention_backward_dq_kernel", _ctype(qkv), str(D))
    dq(grid, (128,), (qkv, out, dout, lse, delta, dqkv) + dims)  # also writes delta
    dkv = _function("attention.cu", "attention_backward_dkv_kernel", _ctype(qkv), str(D))
    dkv(grid, (128,), (qkv, dout, lse, delta, dqkv) + dims)
    return dqkv


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
    return out


def compile_all() -> int:
    """Compile (or load from CuPy's disk cache) every instantiation; returns how many."""
    items = instantiations()
    for file, name, args in items:
        _function(file, name, *args)
    return len(items)
