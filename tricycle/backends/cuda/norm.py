"""Layer norm and RMS norm over the last axis (norm.cu), as ``tricycle.layers``'
``layer_norm_forward``/``_backward`` and ``rms_norm_forward``/``_backward``.

The forward saves mean and rstd in float32 whatever x's dtype; the backward writes dx in one
pass and reduces dgamma/dbeta from per-block partial rows in a second, small launch.
"""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import (
    CTYPES,
    aligned4,
    compiled,
    contiguous,
    ctype,
    flag,
    row_launch,
    rows_of,
    sm_count,
)


def _norm_forward(x, gamma, beta, eps: float, rms: bool):
    cp = backend.cupy()
    x = contiguous(cp, x)
    gamma = contiguous(cp, gamma)
    has_beta = np.int32(0 if rms or beta is None else 1)  # decided before beta is stood in for
    beta = gamma if beta is None else contiguous(cp, beta, gamma.dtype)
    rows, cols = rows_of(x)
    if gamma.size != cols:
        raise ValueError(f"norm: gamma has {gamma.size} elements, x has rows of {cols}")
    y = cp.empty_like(x)
    stats_shape = x.shape[:-1] + (1,)
    mean = rstd = cp.empty(stats_shape, dtype=np.float32)  # float32 whatever x's dtype
    if not rms:
        mean = cp.empty(stats_shape, dtype=np.float32)
    if rows and cols:
        warp, grid, block = row_launch(rows, cols)
        vec = flag(cols % 4 == 0 and aligned4(x, gamma, beta, y))
        kernel = compiled(
            "norm.cu", "norm_forward_kernel", ctype(x), ctype(gamma), flag(warp), flag(rms), vec
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
    x = contiguous(cp, x)
    dy = contiguous(cp, dy, x.dtype)
    gamma = contiguous(cp, gamma)
    rstd = contiguous(cp, rstd, np.float32)
    mean = rstd if rms else contiguous(cp, mean, np.float32)
    rows, cols = rows_of(x)
    dx = cp.empty_like(x)
    width = cols if rms else 2 * cols  # dgamma | dbeta accumulators per warp
    if rows == 0 or cols == 0:
        zeros = cp.zeros(cols, dtype=gamma.dtype)
        return dx, zeros, zeros.copy()

    # 8 warps a block, each with a private accumulator row in shared memory; fewer warps for
    # wide rows, and global scratch (one row per warp) past 48 KB for a single warp
    n_warps = max(1, min(8, 49152 // (4 * width)))
    use_smem = 4 * width * n_warps <= 49152
    grid = max(1, min(-(-rows // n_warps), 4 * sm_count()))
    n_parts = grid if use_smem else grid * n_warps
    partial = cp.empty((n_parts, width), dtype=np.float32)
    vec = flag(cols % 4 == 0 and aligned4(dy, x, gamma, dx))
    kernel = compiled("norm.cu", "norm_backward_kernel", ctype(x), ctype(gamma), flag(rms), vec)
    kernel(
        (grid,),
        (32 * n_warps,),
        (dy, x, gamma, mean, rstd, dx, partial, np.int32(rows), np.int32(cols),
         np.int32(use_smem)),
        shared_mem=4 * width * n_warps if use_smem else 0,
    )  # fmt: skip

    dgamma = cp.empty(cols, dtype=gamma.dtype)
    dbeta = dgamma if rms else cp.empty(cols, dtype=gamma.dtype)
    reduce = compiled("norm.cu", "norm_reduce_kernel", ctype(gamma), flag(rms))
    reduce(
        (-(-width // 256),),
        (256,),
        (partial, np.int32(n_parts), np.int32(cols), dgamma, dbeta),
    )
    return dx, dgamma, dbeta


def layer_norm_forward(xp, x, gamma, beta, eps: float):
    """(y, mean, rstd) as ``tricycle.norms.layer_norm_forward``; mean and rstd (..., 1) are
    float32 whatever x's dtype. ``beta`` may be None."""
    return _norm_forward(x, gamma, beta, eps, rms=False)


def layer_norm_backward(xp, dy, x, gamma, mean, rstd):
    """(dx, dgamma, dbeta) as ``tricycle.norms.layer_norm_backward`` (dgamma, dbeta in
    gamma's dtype)."""
    return _norm_backward(dy, x, gamma, mean, rstd, rms=False)


def rms_norm_forward(xp, x, gamma, eps: float):
    """(y, rstd) as ``tricycle.norms.rms_norm_forward``; rstd (..., 1) is float32."""
    y, _, rstd = _norm_forward(x, gamma, None, eps, rms=True)
    return y, rstd


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """(dx, dgamma) as ``tricycle.norms.rms_norm_backward``."""
    dx, dgamma, _ = _norm_backward(dy, x, gamma, None, rstd, rms=True)
    return dx, dgamma


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch: activations in
    any float type, parameters in the same type or float32."""
    out = []
    flags = ("true", "false")
    for t in CTYPES.values():
        for p in {t, "float"}:
            for rms in flags:
                for vec in flags:
                    out += [("norm.cu", "norm_forward_kernel", (t, p, w, rms, vec)) for w in flags]
                    out += [("norm.cu", "norm_backward_kernel", (t, p, rms, vec))]
        out += [("norm.cu", "norm_reduce_kernel", (t, rms)) for rms in flags]
    return out


dispatch.add("layer_norm", "cuda", (layer_norm_forward, layer_norm_backward), dtypes=tuple(CTYPES))
dispatch.add("rms_norm", "cuda", (rms_norm_forward, rms_norm_backward), dtypes=tuple(CTYPES))
