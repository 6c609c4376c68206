"""GeLU, exact (erf) or tanh form, optionally fused with the bias add before it (gelu.cu), as
``tricycle.activation.gelu_forward`` and ``gelu_backward``: one pass over the elements."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.gemm import column_sums, gemm_enabled
from tricycle.backends.cuda.launch import (
    CTYPES,
    aligned4,
    compiled,
    contiguous,
    ctype,
    elementwise_grid,
    flag,
)


def is_tanh_gelu(approximate) -> bool:
    """Parse GeLU's ``approximate``: True/"tanh" for the tanh form, False/None/"none" exact."""
    if approximate in (True, "tanh"):
        return True
    if approximate in (False, None, "none"):
        return False
    raise ValueError(f"GeLU: approximate must be False/'none' or True/'tanh', got {approximate!r}")


def _gelu(kernel_name: str, x, bias, dy, approximate):
    cp = backend.cupy()
    x = contiguous(cp, x)
    cols = x.shape[-1] if x.ndim else 1
    if bias is not None:
        bias = contiguous(cp, bias, x.dtype)
        if bias.size != cols:
            raise ValueError(f"GeLU: bias of {bias.size} elements for rows of {cols}")
    out = cp.empty_like(x)
    n = x.size
    if n == 0:
        return out
    vec = n % 4 == 0 and (bias is None or cols % 4 == 0)
    has_bias = np.int32(bias is not None)
    bias = x if bias is None else bias
    args = (x, bias, has_bias, np.int32(cols))
    if dy is not None:
        args += (contiguous(cp, dy, x.dtype),)
    vec = vec and aligned4(*args[:2], *args[4:], out)  # x, bias, dy (if any), out
    tanh = flag(is_tanh_gelu(approximate))
    kernel = compiled("gelu.cu", kernel_name, ctype(x), tanh, flag(vec))
    kernel((elementwise_grid(n // 4 if vec else n),), (256,), args + (out, np.int64(n)))
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
    """Gradients (dx, dbias) of ``bias_gelu_forward``; dbias sums dx over the leading axes
    (one GEMM against a row of ones when cuBLAS takes the dtype), in bias's dtype."""
    dx = _gelu("gelu_backward_kernel", x, bias, dy, approximate)
    dx2 = dx.reshape(-1, dx.shape[-1])
    if gemm_enabled(dx2, dx2):
        dbias = column_sums(dx2)
    else:
        dbias = dx2.sum(axis=0, dtype=np.float32)
    return dx, dbias.astype(bias.dtype, copy=False)


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("gelu.cu", f"gelu_{part}_kernel", (t, tanh, vec))
        for t in CTYPES.values()
        for tanh in ("true", "false")
        for vec in ("true", "false")
        for part in ("forward", "backward")
    ]


dispatch.add("gelu", "cuda", (gelu_forward, gelu_backward), dtypes=tuple(CTYPES))
dispatch.add("bias_gelu", "cuda", (bias_gelu_forward, bias_gelu_backward), dtypes=tuple(CTYPES))
