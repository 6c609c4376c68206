"""``torch.nn.modules.pooling``'s names."""

from tricycle.nn.adaptive_max_pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d
from tricycle.nn.adaptive_pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d
from tricycle.nn.lp_pooling import LPPool1d, LPPool2d, LPPool3d
from tricycle.nn.pooling import AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from tricycle.nn.pooling3d import AvgPool3d, MaxPool3d

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxPool1d", "MaxPool2d", "MaxPool3d"]  # fmt: skip
