"""``torch.nn.modules.rnn``'s names: the recurrent layers and cells, which are
``tricycle.nn``'s."""

from tricycle.nn.recurrent import GRU, LSTM, RNN
from tricycle.nn.recurrent_cell_layers import GRUCell, LSTMCell, RNNCell

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]
