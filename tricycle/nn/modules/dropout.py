"""``torch.nn.modules.dropout``'s names: the dropout layers, which are ``tricycle.nn``'s."""

from tricycle.layers import Dropout
from tricycle.nn.channel_dropout import Dropout1d, Dropout2d, Dropout3d

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]
