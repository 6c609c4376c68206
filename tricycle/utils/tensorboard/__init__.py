"""``tricycle.utils.tensorboard``: ``from tricycle.utils.tensorboard import SummaryWriter``, as
``from torch.utils.tensorboard import SummaryWriter``, writing TensorBoard's event files with
no tensorboard or protobuf package (see ``writer``)."""

from tricycle.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
