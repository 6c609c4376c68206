"""Max pooling's indices as torch gives them (``return_indices=True``): where each window's
maximum lies in its plane of the input, from where it lies in its window, which
``tricycle.nn.pooling``'s ``max_pool_forward`` finds. ``tricycle.nn.unpooling``'s
``max_unpool`` takes them back.
"""

import math

import numpy as np

__all__ = ["input_indices"]


def input_indices(xp, index, x_shape, kernel, stride, padding, dilation=None):
    """torch's indices of max pooling, (N, C, *out) int64: where each window's maximum lies in
    its plane of the input, flattened row-major (h W + w in 2-D), from ``max_pool_forward``'s
    ``index`` within the window. (A window of -inf alone picks its first element, which may be
    padding: then it names, on each such axis, the window's first element at or past 0, as
    torch's does.)"""
    at = index[:, :, 0].astype(np.int64)  # (N, C, *out): row-major within the window
    n, out_shape = len(kernel), at.shape[2:]
    dilation = dilation or (1,) * n
    flat = xp.zeros_like(at)
    for a, size in enumerate(x_shape[2:]):
        d = dilation[a]
        offset = (at // math.prod(kernel[a + 1 :])) % kernel[a]  # along axis a, in the window
        start = xp.arange(out_shape[a]) * stride[a] - padding[a]  # each window's first element
        start = start.reshape((-1,) + (1,) * (n - 1 - a))
        first = start + (xp.maximum(-start, 0) + d - 1) // d * d  # its first one at or past 0
        flat = flat * size + xp.maximum(start + offset * d, first)
    return flat
