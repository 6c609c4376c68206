"""torch.nn.utils' ``convert_conv2d_weight_memory_format`` and
``convert_conv3d_weight_memory_format``: torch rewrites the convolutions' weights in another
memory layout (``channels_last``), the same values in another order of strides, for its
kernels' speed. tricycle's convolutions choose their own layout when they run, so a weight's
values are all there is: the module comes back as it is, with torch's return value."""

from tricycle.module import Layer

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _unchanged(op: str, module, memory_format):
    if not isinstance(module, Layer):
        raise TypeError(f"{op}: expected a module, got {type(module).__name__}")
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """torch's: ``module`` with its Conv2d/ConvTranspose2d weights in ``memory_format``;
    tricycle has no memory formats to convert to: ``module`` itself."""
    return _unchanged("convert_conv2d_weight_memory_format", module, memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """torch's: ``module`` with its Conv3d/ConvTranspose3d weights in ``memory_format``;
    tricycle has no memory formats to convert to: ``module`` itself."""
    return _unchanged("convert_conv3d_weight_memory_format", module, memory_format)
