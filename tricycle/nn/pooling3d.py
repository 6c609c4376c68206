"""Max and average pooling over (N, C, D, H, W) inputs, as PyTorch's ``MaxPool3d``, ``AvgPool3d``,
``F.max_pool3d`` and ``F.avg_pool3d``.

They are ``tricycle.nn.pooling``'s ops and layers over three spatial axes: its windows, ceil
mode, padding rules, indices and ``divisor_override`` know any number of axes. The backends'
kernels take one or two, so three run the references (written against the array module, on
either backend). Unbatched inputs (C, D, H, W) run as a batch of one, as torch's.
"""

from tricycle.nn.pooling import _AvgPoolDivided, _MaxPool, avg_pool, in_n_dims, max_pool

__all__ = ["AvgPool3d", "MaxPool3d", "avg_pool3d", "max_pool3d"]

max_pool3d, avg_pool3d = in_n_dims(max_pool, 3), in_n_dims(avg_pool, 3)


class MaxPool3d(_MaxPool):
    """Max pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.MaxPool3d`` (stride
    defaults to the kernel; ``dilation``, ``ceil_mode`` and ``return_indices`` as torch's,
    the indices flat into each (D, H, W) volume)."""

    n_dims = 3


class AvgPool3d(_AvgPoolDivided):
    """Average pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.AvgPool3d``
    (``ceil_mode``, ``count_include_pad`` and ``divisor_override`` as torch's)."""

    n_dims = 3
