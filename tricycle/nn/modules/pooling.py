"""``torch.nn.modules.pooling``'s names."""

from tricycle.nn.adaptive_max_pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d
from tricycle.nn.adaptive_pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d
from tricycle.nn.pooling import AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]  # fmt: skip
