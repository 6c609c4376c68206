"""``torch.nn.modules.conv``'s names: the convolutions (weights in torch's layout)."""

from tricycle.nn.conv import Conv1d, Conv2d, Conv3d
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]
