"""``torch.nn.modules.pixelshuffle``'s names."""

from tricycle.nn.reshapes import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
