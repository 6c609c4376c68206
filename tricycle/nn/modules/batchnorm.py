"""``torch.nn.modules.batchnorm``'s names."""

from tricycle.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
