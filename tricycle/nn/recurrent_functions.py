"""torch's low-level recurrent functions, reached as ``tricycle.<name>``: the cells
``rnn_tanh_cell``, ``rnn_relu_cell``, ``lstm_cell`` and ``gru_cell`` (one step), and the whole
stacks ``rnn_tanh``, ``rnn_relu``, ``lstm`` and ``gru`` that ``nn.RNN``/``LSTM``/``GRU`` call in
torch, with ATen's arguments: ``(input, hx, params, has_biases, num_layers, dropout, train,
bidirectional, batch_first)``, ``params`` the flat list of weights in torch's order (per layer,
per direction: w_ih, w_hh, then b_ih, b_hh with biases), ``hx`` (num_layers * directions, N, H)
(the LSTM's a pair (h0, c0)). They return (output, h_n) (the LSTM's (output, h_n, c_n)).

Each layer and direction is ``tricycle.nn.recurrent.recurrent_layer`` (the fused cells of
``recurrent_cells``, one node per sequence), the cells the same on a sequence of one step; the
backward direction reads the sequence reversed, as ``nn.RNNBase``. Dropout between layers, in
training, is ``F.dropout``'s. Not built: the LSTM with projections (``w_hr`` in ``params``) and
the packed forms (``batch_sizes``): use ``nn.LSTM(proj_size=...)`` and packed sequences there.
"""

from tricycle import checks, ops
from tricycle.nn import functional as F
from tricycle.nn.recurrent import recurrent_layer
from tricycle.tensor import Tensor, as_tensor

__all__ = ["gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh",
           "rnn_tanh_cell"]  # fmt: skip

GATES = {"rnn": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}


def _layer(cell: str, x: Tensor, w_ih, w_hh, b_ih, b_hh, h0, c0) -> Tensor:
    """``recurrent_layer`` with either bias alone allowed, as torch's cells allow it."""
    w_ih, w_hh = as_tensor(w_ih), as_tensor(w_hh)
    if b_hh is None and b_ih is not None and cell != "gru":
        b_ih, b_hh = None, b_ih  # one bias: added once, in the recurrence
    return recurrent_layer(cell, x, w_ih, w_hh, b_ih, b_hh, h0, c0)


def _cell(cell: str, op: str, input, hx, w_ih, w_hh, b_ih, b_hh):  # noqa: A002
    """One step of ``cell`` from x (N, I) and the state(s) (N, H) (zeros where None). ATen's
    cells take batches only (``nn.RNNCell`` adds the batch axis), as here."""
    x = as_tensor(input)
    h, c = (hx if cell == "lstm" else (hx, None)) if hx is not None else (None, None)
    H = as_tensor(w_hh).shape[-1]
    if x.ndim != 2:
        raise IndexError(f"{op}: expected a 2-D input (batch, input), got shape {x.shape}")
    N = x.shape[0]

    def state(t):
        if t is None:
            return Tensor(x.xp.zeros((N, H), dtype=x.dtype), requires_grad=False)
        if (t := as_tensor(t)).shape != (N, H):
            raise RuntimeError(f"{op}: expected a state of shape {(N, H)}, got {t.shape}")
        return t

    h, c = state(h), state(c) if cell == "lstm" else None
    states = _layer(cell, ops.expand_dims(x, 0), w_ih, w_hh, b_ih, b_hh, h, c)
    return (states[0, 0], states[1, 0]) if cell == "lstm" else states[0]


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """``torch.rnn_tanh_cell``: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("rnn", "torch.rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """``torch.rnn_relu_cell``: h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("rnn_relu", "torch.rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """``torch.gru_cell``: one GRU step (gates r, z, n, as ``nn.GRUCell``)."""
    return _cell("gru", "torch.gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> tuple:  # noqa: A002
    """``torch.lstm_cell``: one LSTM step from ``hx`` = (h, c): (h', c')."""
    if hx is None or len(hx) != 2:
        raise RuntimeError("torch.lstm_cell: expected hx a pair (h, c)")
    return _cell("lstm", "torch.lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh)


def _stack(cell: str, op: str, input, hx, params, has_biases: bool, num_layers: int,  # noqa: A002
           dropout: float, train: bool, bidirectional: bool, batch_first: bool):  # fmt: skip
    """The layers of ``cell`` over input (T, N, I) (batch_first: (N, T, I)) from ``hx``."""
    checks.integer(op, "num_layers", num_layers, 1)
    checks.real(op, "dropout", dropout, 0, 1)
    for name, flag in (("has_biases", has_biases), ("train", train),
                       ("bidirectional", bidirectional), ("batch_first", batch_first)):  # fmt: skip
        checks.boolean(op, name, flag)
    x = as_tensor(input)
    if x.ndim != 3:
        raise RuntimeError(f"{op}: expected a 3-D input, got shape {x.shape}")
    D, per = 1 + bidirectional, 4 if has_biases else 2
    params = list(params)
    if len(params) != num_layers * D * per:
        raise RuntimeError(f"{op}: expected {num_layers * D * per} params (w_ih, w_hh"
                           f"{', b_ih, b_hh' if has_biases else ''} per layer and direction), "
                           f"got {len(params)} (LSTM projections are not supported)")  # fmt: skip
    lstm = cell == "lstm"
    h0, c0 = (as_tensor(hx[0]), as_tensor(hx[1])) if lstm else (as_tensor(hx), None)
    if batch_first:
        x = x.transpose(0, 1)
    H = as_tensor(params[1]).shape[-1]
    for name, t in (("h0", h0), ("c0", c0)):
        if t is not None and t.shape != (num_layers * D, x.shape[1], H):
            raise RuntimeError(f"{op}: expected {name} of shape "
                               f"{(num_layers * D, x.shape[1], H)}, got {t.shape}")  # fmt: skip
    last_h, last_c = [], []
    for k in range(num_layers):
        outputs = []
        for d in range(D):
            j = k * D + d
            weights = params[j * per : (j + 1) * per] + [None, None] * (not has_biases)
            x_d = x[::-1] if d else x
            states = _layer(cell, x_d, *weights, h0[j], None if c0 is None else c0[j])
            hs, cs = (states[0], states[1]) if lstm else (states, None)
            last_h.append(hs[-1])
            last_c += [cs[-1]] if lstm else []
            outputs.append(hs[::-1] if d else hs)
        x = outputs[0] if D == 1 else ops.concatenate(outputs, axis=-1)
        if k < num_layers - 1 and train and dropout > 0:
            x = F.dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    return (out, ops.stack(last_h)) + ((ops.stack(last_c),) if lstm else ())


def _stacked(cell: str, name: str):
    def function(input, hx, params, has_biases: bool, num_layers: int, dropout: float,  # noqa: A002
                 train: bool, bidirectional: bool, batch_first: bool) -> tuple:  # fmt: skip
        return _stack(cell, f"torch.{name}", input, hx, params, has_biases, num_layers,
                      dropout, train, bidirectional, batch_first)  # fmt: skip

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``torch.{name}(input, hx, params, has_biases, num_layers, dropout, "
                        f"train, bidirectional, batch_first)``: the stacked layers of "
                        f"``nn.{'LSTM' if cell == 'lstm' else cell.upper()[:3]}``, as the "
                        f"module's docstring says.")  # fmt: skip
    return function


rnn_tanh, rnn_relu = _stacked("rnn", "rnn_tanh"), _stacked("rnn_relu", "rnn_relu")
lstm, gru = _stacked("lstm", "lstm"), _stacked("gru", "gru")
