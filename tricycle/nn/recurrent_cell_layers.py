"""Single-step recurrent cells: RNNCell (tanh or ReLU), GRUCell and LSTMCell, as PyTorch's.

A call is one time step, h' = cell(x, h) (the LSTM's: (h', c') = cell(x, (h, c))), for loops
the user writes: a decoder that feeds its output back in, step-by-step teacher forcing, a
state carried across calls. Parameters have PyTorch's names and shapes, so weights copy 1:1
from ``torch.nn.RNNCell``, ``GRUCell`` and ``LSTMCell``::

    weight_ih (G H, I)   weight_hh (G H, H)   bias_ih, bias_hh (G H,)

with G = 1 for the RNN, 3 for the GRU (r, z, n) and 4 for the LSTM (i, f, g, o). A step is
the recurrent layers' own ``recurrent_layer`` (the input projection, then the fused cell of
``tricycle.nn.recurrent_cells`` in one ``recurrence``) on a sequence of one step: a cell and a
layer compute the same formulas with the same kernels, and a layer's weights ``*_l0`` are a
cell's. A cell may be called any number of times before one backward (ops keep what backward
needs in their closures); its weights' gradients sum over the steps.
"""

import math

from tricycle import checks, ops
from tricycle.initialisers import init_uniform
from tricycle.layers import Layer, parameter
from tricycle.nn.recurrent import NONLINEARITIES, recurrent_layer
from tricycle.nn.recurrent_cells import CELLS
from tricycle.tensor import Tensor, as_tensor

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase"]


class RNNCellBase(Layer):
    """torch's ``nn.RNNCellBase``, shared by RNNCell, GRUCell and LSTMCell (its subclasses
    name the cell: no ``num_chunks`` argument): the weights of one layer in one direction and
    one step of its cell. Inputs are (N, input_size) or unbatched (input_size,); states are
    (N, hidden_size), or (hidden_size,) with an unbatched input. Weights and biases start as
    PyTorch's, U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    cell = ""

    @checks.arguments(
        input_size=checks.positive_int, hidden_size=checks.positive_int, bias=checks.boolean
    )
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        G, H = CELLS[self.cell][0], hidden_size
        bound = 1 / math.sqrt(hidden_size)
        self.weight_ih = parameter(init_uniform((G * H, input_size), bound))  # PyTorch's order
        self.weight_hh = parameter(init_uniform((G * H, H), bound))
        if bias:
            self.bias_ih = parameter(init_uniform((G * H,), bound))
            self.bias_hh = parameter(init_uniform((G * H,), bound))

    def forward(self, x: Tensor, hx=None):
        """The next state from input x (N, I) (unbatched: (I,)) and the state ``hx``: h, or
        for the LSTM the pair (h, c), each (N, H) (unbatched: (H,)); zeros if None. Returns
        h' (N, H), or for the LSTM (h', c'), in the input's batchedness."""
        x = as_tensor(x)
        unbatched = self._check_input(x)
        N = 1 if unbatched else x.shape[0]  # an unbatched input is a batch of one
        x = ops.reshape(x, (1, N, self.input_size))  # (1, N, I): a sequence of one step
        h, c = self._state(x, hx, unbatched)  # (N, H) each; c None but for the LSTM
        b_ih, b_hh = (self.bias_ih, self.bias_hh) if self.bias else (None, None)
        states = recurrent_layer(self.cell, x, self.weight_ih, self.weight_hh, b_ih, b_hh, h, c)
        if c is None:
            h_new = states[0]  # (N, H)
            return ops.squeeze(h_new, 0) if unbatched else h_new
        h_new, c_new = states[0, 0], states[1, 0]  # (N, H) each
        return (ops.squeeze(h_new, 0), ops.squeeze(c_new, 0)) if unbatched else (h_new, c_new)

    def _check_input(self, x: Tensor) -> bool:
        """Whether x is unbatched (I,); a clear error unless it is that or (N, I)."""
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}: expected input (batch, {self.input_size}) (2-D) or "
                f"unbatched ({self.input_size},) (1-D), got shape {x.shape}"
            )
        return x.ndim == 1

    def _state(self, x: Tensor, hx, unbatched: bool):
        """(h, c) as (N, H) Tensors for x (1, N, I); c is None but for the LSTM."""
        name, lstm = type(self).__name__, self.cell == "lstm"
        shape = (x.shape[1], self.hidden_size)
        if hx is None:
            zeros = Tensor(x.xp.zeros(shape, dtype=x.dtype), requires_grad=False)
            return zeros, zeros if lstm else None
        if lstm and not (isinstance(hx, tuple | list) and len(hx) == 2):
            raise ValueError(f"{name}: the state must be a pair (h, c), got {type(hx).__name__}")
        parts = tuple(map(as_tensor, hx if lstm else (hx,)))
        expected = (self.hidden_size,) if unbatched else shape
        for t in parts:
            if t.shape != expected:
                what = "(hidden,) for an unbatched input" if unbatched else "(batch, hidden)"
                raise ValueError(
                    f"{name}: expected a state of shape {what} = {expected}, got {t.shape}"
                )
        parts = tuple(ops.reshape(t, shape) for t in parts)  # (N, H)
        return parts if lstm else (parts[0], None)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One step of the Elman RNN, as ``torch.nn.RNNCell``: h' = tanh(x W_ih^T + b_ih +
    h W_hh^T + b_hh), or relu(...) with ``nonlinearity="relu"``. ``cell(x, h)`` returns h'."""

    cell = "rnn"

    @checks.arguments(nonlinearity=checks.one_of(NONLINEARITIES))
    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"
    ):
        self.nonlinearity, self.cell = nonlinearity, NONLINEARITIES[nonlinearity]
        super().__init__(input_size, hidden_size, bias=bias)

    def extra_repr(self) -> str:
        relu = ", nonlinearity='relu'" if self.cell == "rnn_relu" else ""
        return super().extra_repr() + relu


class GRUCell(RNNCellBase):
    """One step of the gated recurrent unit, as ``torch.nn.GRUCell`` (gates r, z, n).
    ``cell(x, h)`` returns h'."""

    cell = "gru"


class LSTMCell(RNNCellBase):
    """One step of the long short-term memory, as ``torch.nn.LSTMCell`` (gates i, f, g, o).
    ``cell(x, (h, c))`` returns (h', c')."""

    cell = "lstm"
