"""Recurrent layers: RNN (tanh or ReLU), GRU and LSTM, as PyTorch's.

Parameters have PyTorch's names, shapes and gate order, so weights copy 1:1
(``lstm.load_state_dict({k: v.numpy() for k, v in torch_lstm.state_dict().items()})``)::

    weight_ih_l{k}{s} (G H, I_k)   weight_hh_l{k}{s} (G H, H)
    bias_ih_l{k}{s}, bias_hh_l{k}{s} (G H,)

with G = 1 for the RNN, 3 for the GRU (r, z, n) and 4 for the LSTM (i, f, g, o). The suffix s
is "" for the forward direction and "_reverse" for the backward one of a bidirectional layer;
with D directions (2 if ``bidirectional`` else 1), I_0 = input_size and I_k = D H above it.
An LSTM with ``proj_size=P`` also has ``weight_hr_l{k}{s}`` (P, H) after the biases; its hidden
states are P wide (``weight_hh`` (4H, P), I_k = D P): ``tricycle.nn.lstm_projection``.

Each layer's each direction is one ``recurrent_layer``: the input projections of every step
as one einsum, then one ``recurrence`` (``tricycle.nn.recurrent_cells``: the fused cells and
the op that runs one over the sequence); the single-step cells of
``tricycle.nn.recurrent_cell_layers`` are the same function on a sequence of one step. The
backward direction is the same op on the sequence reversed in time (its inputs flipped
before, its states flipped back after), so the op, and the backends' kernels for it, know one
direction only. The directions' outputs join on the feature axis, (T, N, D H), which is
what the layer above reads (through dropout in training); the final states are
(num_layers D, N, H) in PyTorch's order: layer 0 forward, layer 0 backward, layer 1
forward, ... An unbatched input (T, I), with states (num_layers D, H), runs as a batch of
one. A ``PackedSequence`` (``tricycle.nn.utils.rnn``) runs as its padded batch through the
same stack of layers, the backward direction reading each sequence reversed within its own
length and the final states taken at each sequence's own last step
(``tricycle.nn.recurrent_packed``).
"""

import math

from tricycle import checks, ops
from tricycle.einsum import Einsum
from tricycle.initialisers import init_uniform
from tricycle.layers import Dropout, Layer, parameter
from tricycle.nn.lstm_projection import projected_lstm_recurrence
from tricycle.nn.recurrent_cells import (  # noqa: F401 (re-exported: first defined here)
    CELLS,
    gru_cell_backward,
    gru_cell_forward,
    lstm_cell_backward,
    lstm_cell_forward,
    recurrence,
    recurrence_backward,
    recurrence_forward,
    rnn_cell_backward,
    rnn_cell_forward,
)
from tricycle.nn.recurrent_packed import packed_forward
from tricycle.nn.utils.rnn import PackedSequence
from tricycle.tensor import Tensor, as_tensor

__all__ = ["GRU", "LSTM", "RNN", "RNNBase", "recurrence", "recurrent_layer"]

_INPUT_PROJECTION = Einsum("tni,gi->tng")  # (T, N, I) x (G H, I) -> (T, N, G H)
DIRECTIONS = ("", "_reverse")  # the parameters' suffixes: forward, backward in time


def recurrent_layer(
    cell: str,
    x: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None,
    b_hh: Tensor | None,
    h0: Tensor,
    c0: Tensor | None,
) -> Tensor:
    """One layer of ``cell`` in one direction over x (T, N, I), from the initial states h0 (and
    the LSTM's c0) (N, H): the states of every step, as ``recurrence`` returns them. The input
    projections of every step are one einsum before the loop over time."""
    xg = _INPUT_PROJECTION(x, w_ih)  # (T, N, G H)
    if b_ih is not None and cell == "gru":
        xg = xg + b_ih  # the GRU's b_hn is inside r (h W_hn^T + b_hn): no sum
    elif b_ih is not None:
        b_hh = b_ih + b_hh  # (G H,): added once, in the recurrence, not to all of xg
    return recurrence(cell, xg, w_hh, b_hh, h0, c0)


def _reversed_in_time(x: Tensor) -> Tensor:
    """(T, N, *) with the last step first: how the backward direction reads a padded batch."""
    return x[::-1]


def _last_step(states: Tensor) -> Tensor:
    """The recurrence's states (T, N, H) (the LSTM's (2, T, N, H)) at the last step."""
    return states[..., -1, :, :]


class RNNBase(Layer):
    """torch's ``nn.RNNBase``, shared by RNN, GRU and LSTM (its subclasses name the cell: no
    ``mode`` argument): a stack of ``num_layers`` recurrent layers, each reading
    the hidden states of the one below (with ``dropout`` between them in training), each
    with a second direction reading the sequence reversed if ``bidirectional``.

    Inputs are (T, N, input_size), or (N, T, input_size) with ``batch_first``, or unbatched
    (T, input_size); the state is (num_layers D, N, hidden_size) whatever ``batch_first``
    says, as in PyTorch, or (num_layers D, hidden_size) with an unbatched input. Weights and
    biases start as PyTorch's, U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    cell = ""
    proj_size = 0  # the LSTM's projection of its hidden state (0: none)

    @checks.arguments(
        input_size=checks.positive_int,
        hidden_size=checks.positive_int,
        num_layers=checks.positive_int,
        bias=checks.boolean,
        batch_first=checks.boolean,
        dropout=checks.probability,
        bidirectional=checks.boolean,
    )
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        G, H, D, R = CELLS[self.cell][0], hidden_size, self.num_directions, self.hidden_width
        bound = 1 / math.sqrt(hidden_size)
        for k in range(num_layers):  # PyTorch's names, in PyTorch's order
            width = input_size if k == 0 else D * R
            for suffix in DIRECTIONS[:D]:
                name = f"l{k}{suffix}"
                setattr(self, f"weight_ih_{name}", parameter(init_uniform((G * H, width), bound)))
                setattr(self, f"weight_hh_{name}", parameter(init_uniform((G * H, R), bound)))
                if bias:
                    setattr(self, f"bias_ih_{name}", parameter(init_uniform((G * H,), bound)))
                    setattr(self, f"bias_hh_{name}", parameter(init_uniform((G * H,), bound)))
                if self.proj_size:
                    setattr(self, f"weight_hr_{name}", parameter(init_uniform((R, H), bound)))
        self.inter_layer_dropout = Dropout(dropout)

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def hidden_width(self) -> int:
        """The hidden state's size: ``proj_size`` for a projected LSTM, else ``hidden_size``
        (the cell state's, always)."""
        return self.proj_size or self.hidden_size

    def forward(self, x: Tensor, state=None):
        """Outputs (T, N, D H) (batch-first: (N, T, D H); unbatched: (T, D H)) and the final
        state: h_n, or for the LSTM (h_n, c_n), each (num_layers D, N, H) (unbatched:
        (num_layers D, H)). ``state`` is the initial one in the same form (zeros if None).
        A ``PackedSequence`` in gives a ``PackedSequence`` out (``packed_forward``)."""
        if isinstance(x, PackedSequence):
            return packed_forward(self, x, state)
        unbatched = self._check_input(x)
        if unbatched:
            x = ops.expand_dims(x, 1)  # (T, 1, I): a batch of one
        elif self.batch_first:
            x = ops.swapaxes(x, 0, 1)  # (T, N, I)
        h0, c0 = self._initial_state(x, state, unbatched)  # (L D, N, H) each
        x, finals = self.stack_over_time(x, h0, c0, _reversed_in_time, _last_step)
        if unbatched:
            x, finals = ops.squeeze(x, 1), [ops.squeeze(f, 1) for f in finals]  # (T, D H)
        elif self.batch_first:
            x = ops.swapaxes(x, 0, 1)  # (N, T, D H)
        return (x, finals[0]) if c0 is None else (x, tuple(finals))

    def stack_over_time(self, x: Tensor, h0: Tensor, c0: Tensor | None, reverse, last):
        """Every layer and direction over x (T, N, I) from h0 (and c0) (L D, N, H): the top
        layer's outputs (T, N, D H) and the final states [h_n] or [h_n, c_n], (L D, N, H).

        ``reverse(t)`` turns t (T, N, *) into the order the backward direction reads it (an
        involution: it also turns that direction's states back), and ``last(states)`` picks
        each sequence's final state from the recurrence's states ((T, N, H), the LSTM's
        (2, T, N, H)) in the direction's time: the last step of a padded batch, or each
        sequence's own last step of a packed one."""
        last_h, last_c, D = [], [], self.num_directions
        for k in range(self.num_layers):
            outputs = []
            for d in range(D):
                j = k * D + d  # the state's row: PyTorch's order
                x_d = reverse(x) if d else x  # in the direction's time
                c0_j = None if c0 is None else c0[j]
                states = self.layer_over_time(k, d, x_d, h0[j], c0_j)
                final_h, final_c = self.hidden_and_cell(last(states))  # (N, H) each
                last_h.append(final_h)
                if c0 is not None:
                    last_c.append(final_c)
                hs = self.hidden_and_cell(states)[0]  # (T, N, H) in the direction's time
                outputs.append(reverse(hs) if d else hs)  # back in the order of the input
            x = outputs[0] if D == 1 else ops.concatenate(outputs, axis=-1)  # (T, N, D H)
            if k < self.num_layers - 1:
                x = self.inter_layer_dropout(x)
        return x, [ops.stack(last_h)] + ([ops.stack(last_c)] if c0 is not None else [])

    def layer_over_time(self, k: int, d: int, x: Tensor, h0: Tensor, c0: Tensor | None):
        """Layer k's direction d over x (T, N, I) in the direction's time: the recurrence's
        states, (T, N, H), the LSTM's (2, T, N, H), the projected LSTM's (T, N, P + H)."""
        if not self.proj_size:
            return recurrent_layer(self.cell, x, *self.direction_weights(k, d), h0, c0)
        w_ih, w_hh, b_ih, b_hh = self.direction_weights(k, d)
        w_hr = getattr(self, f"weight_hr_l{k}{DIRECTIONS[d]}")
        xg = _INPUT_PROJECTION(x, w_ih)  # (T, N, 4H)
        b = b_hh if b_ih is None else b_ih + b_hh  # (4H,): added once, in the recurrence
        return projected_lstm_recurrence(xg, w_hh, b, w_hr, h0, c0)

    def hidden_and_cell(self, states: Tensor) -> tuple:
        """(hidden, cell) states (*, N, R) and (*, N, H) from what ``layer_over_time`` gives
        (or its states at one step); the cell's are None but for the LSTM."""
        if self.proj_size:
            return states[..., : self.proj_size], states[..., self.proj_size :]
        return (states[0], states[1]) if self.cell == "lstm" else (states, None)

    def direction_weights(self, k: int, d: int) -> tuple:
        """Layer k's direction d's (w_ih, w_hh, b_ih, b_hh), the biases None without bias."""
        name = f"l{k}{DIRECTIONS[d]}"
        w_ih, w_hh = getattr(self, f"weight_ih_{name}"), getattr(self, f"weight_hh_{name}")
        b_ih = getattr(self, f"bias_ih_{name}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_{name}") if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    def _check_input(self, x: Tensor) -> bool:
        """Whether x is unbatched (T, I); a clear error unless it is that or batched."""
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(batch, time, " if self.batch_first else "(time, batch, "
            raise ValueError(
                f"{type(self).__name__}: expected input {layout}{self.input_size}) (3-D) or "
                f"unbatched (time, {self.input_size}) (2-D), got shape {x.shape}"
            )
        return x.ndim == 2

    def _initial_state(self, x: Tensor, state, unbatched: bool):
        """(h0, c0) as (L D, N, R) and (L D, N, H) Tensors from x (T, N, I), R the hidden
        state's size (``hidden_width``); c0 is None but for the LSTM."""
        name, LD, N = type(self).__name__, self.num_layers * self.num_directions, x.shape[1]
        widths = (self.hidden_width, self.hidden_size)  # h's, then c's
        lstm = self.cell == "lstm"
        if state is None:
            h0, c0 = (
                Tensor(x.xp.zeros((LD, N, w), dtype=x.dtype), requires_grad=False) for w in widths
            )
            return h0, c0 if lstm else None
        parts = tuple(state) if lstm else (state,)
        if lstm and len(parts) != 2:
            raise ValueError(f"{name}: the state must be a pair (h0, c0), got {len(parts)} items")
        parts = tuple(map(as_tensor, parts))
        words = ("proj_size" if self.proj_size else "hidden", "hidden")  # h's size, c's
        for t, label, word, width in zip(parts, ("h0", "c0"), words, widths):
            expected = (LD, width) if unbatched else (LD, N, width)
            if t.shape != expected:
                axes = f"{word}) for an unbatched input" if unbatched else f"batch, {word})"
                raise ValueError(
                    f"{name}: expected an initial state of shape (num_layers * num_directions, "
                    f"{axes} = {expected}, got {t.shape}" + (f" ({label})" if lstm else "")
                )
        if unbatched:
            parts = tuple(ops.expand_dims(t, 1) for t in parts)  # (L D, 1, H)
        return parts if lstm else (parts[0], None)

    def flatten_parameters(self) -> None:
        """torch's ``flatten_parameters`` (it packs the weights into one block for cuDNN):
        nothing to do, as torch's on the CPU. A script that calls it after loading a model
        runs as written."""

    @property
    def _flat_weights_names(self) -> list[str]:
        """torch's private list of the weights' and biases' names, in its order
        (``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ...): the courses' initialisers
        read it (d2l's ``init_seq2seq``: ``for param in module._flat_weights_names``)."""
        return [name for name, _ in self.named_parameters()]

    @property
    def _parameters(self) -> dict:
        """torch's private dict of the layer's parameters by name, as read beside
        ``_flat_weights_names``: each is the layer's own tensor, so an in-place
        initialiser (``nn.init.xavier_uniform_(module._parameters[name])``) sets it."""
        return dict(self.named_parameters())

    def extra_repr(self) -> str:
        """PyTorch's: the sizes, then only the arguments given other than their defaults."""
        dropout = self.inter_layer_dropout.probability
        given = (
            ("num_layers", self.num_layers, 1),
            ("bias", self.bias, True),
            ("batch_first", self.batch_first, False),
            ("dropout", dropout, 0.0),
            ("bidirectional", self.bidirectional, False),
        )
        rest = "".join(f", {name}={value}" for name, value, default in given if value != default)
        proj = f", proj_size={self.proj_size}" if self.proj_size else ""
        return f"{self.input_size}, {self.hidden_size}{proj}{rest}"

    def __repr__(self) -> str:
        """One line, as PyTorch's: the dropout between layers is an argument (``dropout=``),
        not a child layer to list."""
        n_params = self.num_parameters()
        return f"{type(self).__name__}({self.extra_repr()})  # {n_params:,} parameters"


NONLINEARITIES = {"tanh": "rnn", "relu": "rnn_relu"}  # the RNN's nonlinearity -> its cell


class RNN(RNNBase):
    """Elman RNN, as ``torch.nn.RNN``: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), or with
    ``nonlinearity="relu"`` h' = relu(...). ``model(x, h0)`` returns (outputs, h_n).

    The arguments are PyTorch's, in its order: ``nonlinearity`` is the fourth, before ``bias``
    (``RNN(4, 8, 2, "relu")``); GRU and LSTM, which have none, take ``bias`` fourth, as
    PyTorch's do. Each nonlinearity is its own cell ("rnn", "rnn_relu"), with its own
    kernels."""

    cell = "rnn"

    @checks.arguments(nonlinearity=checks.one_of(NONLINEARITIES))
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        self.nonlinearity, self.cell = nonlinearity, NONLINEARITIES[nonlinearity]
        super().__init__(
            input_size,
            hidden_size,
            num_layers=num_layers,
            bias=bias,
            batch_first=batch_first,
            dropout=dropout,
            bidirectional=bidirectional,
        )

    def extra_repr(self) -> str:
        relu = ", nonlinearity='relu'" if self.cell == "rnn_relu" else ""
        return super().extra_repr() + relu


class GRU(RNNBase):
    """Gated recurrent unit, as ``torch.nn.GRU`` (gates r, z, n). ``model(x, h0)`` returns
    (outputs, h_n)."""

    cell = "gru"


class LSTM(RNNBase):
    """Long short-term memory, as ``torch.nn.LSTM`` (gates i, f, g, o).
    ``model(x, (h0, c0))`` returns (outputs, (h_n, c_n)).

    With ``proj_size=P`` (0 < P < hidden_size) each step's hidden state is projected down to P
    units, h = (o tanh(c)) W_hr^T, as torch's: each layer and direction has a
    ``weight_hr_l{k}{s}`` (P, hidden_size) (after its biases), ``weight_hh`` is (4H, P), the
    outputs are (T, N, D P) and h_0, h_n (num_layers D, N, P), while c_0, c_n stay
    (num_layers D, N, hidden_size) (``tricycle.nn.lstm_projection``)."""

    cell = "lstm"

    @checks.arguments(proj_size=checks.non_negative_int)
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
    ):
        if proj_size and checks.is_integer(hidden_size) and proj_size >= hidden_size:
            raise ValueError(
                f"LSTM: proj_size has to be smaller than hidden_size, got proj_size={proj_size} "
                f"and hidden_size={hidden_size}"
            )
        self.proj_size = proj_size
        super().__init__(
            input_size,
            hidden_size,
            num_layers=num_layers,
            bias=bias,
            batch_first=batch_first,
            dropout=dropout,
            bidirectional=bidirectional,
        )
