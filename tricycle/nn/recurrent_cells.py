"""The recurrent cells (RNN with tanh or ReLU, GRU, LSTM) and the sequence op that runs one
of them over time: one layer, one direction, as one node of the graph.
``tricycle.nn.recurrent`` stacks them into PyTorch's layers (several layers, both directions,
batch-first and unbatched inputs).

Per layer and direction, the input projections of every time step are one einsum,
xg = Einsum("tni,gi->tng")(x, W_ih) + b_ih; then the recurrence over time is one op
(``recurrence``). Each step computes hg = h W_hh^T + b_hh and a fused cell: one llm.c-style
pair of array functions with a hand-derived backward per cell (G H gates of H units each)::

    RNN   h' = tanh(xg + hg)               (cell "rnn")
          h' = relu(xg + hg)               (cell "rnn_relu")
    LSTM  i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the quarters of xg + hg
          c' = f c + i g                    h' = o tanh(c')
    GRU   r, z = sigmoid(xg_r + hg_r), sigmoid(xg_z + hg_z)
          n = tanh(xg_n + r hg_n)          h' = (1 - z) n + z h       (PyTorch's form)

Kernels registered for the ops "{cell}_cell" ("rnn_cell", "gru_cell", "lstm_cell": a
(forward, backward) pair with the cells' signatures) take the cells' place through
``tricycle.dispatch``, and kernels for "{cell}_recurrence" (with the signatures of
``recurrence_forward`` and ``recurrence_backward``) the whole loop over time. The op names
are the cells' names, so each cell finds only its own kernels: "rnn_relu_cell" is not
"rnn_cell", and a cell no backend registers for runs the references here.
The backward walks back through time with the cells' backwards and collects d(hg) of every
step, so that the weight gradient d(W_hh) = sum_t d(hg_t)^T h_{t-1} is one matrix product at
the end. One op for the whole sequence, rather than a few ops per step, keeps the graph (and
Python's overhead) independent of the sequence length, and avoids slicing the projected
inputs per step, whose gradients would each be sequence-sized.
"""

from tricycle import dispatch
from tricycle.backend import check_same_device
from tricycle.layers import shared_back_fns
from tricycle.tensor import Tensor
from tricycle.unary import sigmoid_forward

__all__ = ["CELLS", "recurrence", "recurrence_backward", "recurrence_forward"]


# ====================================================================== cells
# forward(xp, xg, hg, h, c, h_new, c_new): hg = h W_hh^T + b_hh (N, G H) is the step's row of
#     the op's saved array: the cell turns it, in place, into what its backward needs, and
#     writes h' into h_new and (the LSTM) c' into c_new.
# backward(xp, dh', dc', saved, xg, h, h', c, c') -> (dxg, dhg, dh through the cell or None,
#     dc). dh' and dc' are the total gradients of the step's outputs; dhg's own path to h
#     (through W_hh) is added by ``recurrence``.


def rnn_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    """h' = tanh(xg + hg); backward needs only h'."""
    hg += xg
    xp.tanh(hg, out=h_new)


def rnn_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    """dz = dh' (1 - h'^2), the gradient of both xg and hg."""
    dz = dh_new * (1 - h_new * h_new)
    return dz, dz, None, None


def rnn_relu_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    """h' = relu(xg + hg) = max(xg + hg, 0); backward needs only h'."""
    hg += xg
    xp.maximum(hg, 0, out=h_new)


def rnn_relu_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    """dz = dh' [h' > 0] (zero where the unit is off, at 0 too, as PyTorch), the gradient of
    both xg and hg."""
    dz = dh_new * (h_new > 0)
    return dz, dz, None, None


def lstm_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    """The LSTM step; saves the activated gates i | f | g | o (N, 4H) in place of hg.

    The four activations share one tanh over the whole (N, 4H) array: sigmoid(z) is
    (1 + tanh(z / 2)) / 2, so the i, f and o quarters are halved before it and halved and
    shifted after, while g is the tanh itself."""
    H = h.shape[-1]
    gates = hg  # pre-activations, then gates
    gates += xg
    sigmoid_parts = (gates[:, : 2 * H], gates[:, 3 * H :])  # i, f | o
    for part in sigmoid_parts:
        part *= 0.5
    xp.tanh(gates, out=gates)
    for part in sigmoid_parts:
        part *= 0.5
        part += 0.5
    i, f, g, o = (gates[:, k * H : (k + 1) * H] for k in range(4))
    xp.multiply(f, c, out=c_new)
    c_new += i * g  # c' = f c + i g
    xp.tanh(c_new, out=h_new)
    h_new *= o  # h' = o tanh(c')


def lstm_cell_backward(xp, dh_new, dc_new, gates, xg, h, h_new, c, c_new):
    """With t = tanh(c'): dc = dc' + dh' o (1 - t^2); then through each gate's activation:
    di = dc g i (1 - i), df = dc c f (1 - f), dg = dc i (1 - g^2), do = dh' t o (1 - o);
    dc_prev = dc f."""
    H = h.shape[-1]
    i, f, g, o = (gates[:, k * H : (k + 1) * H] for k in range(4))
    t = xp.tanh(c_new)
    dc = dc_new + dh_new * o * (1 - t * t)
    dz = xp.empty_like(gates)
    dz[:, :H] = dc * g * i * (1 - i)
    dz[:, H : 2 * H] = dc * c * f * (1 - f)
    dz[:, 2 * H : 3 * H] = dc * i * (1 - g * g)
    dz[:, 3 * H :] = dh_new * t * o * (1 - o)
    return dz, dz, None, dc * f


def gru_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    """The GRU step; saves r | z | hg_n (N, 3H) in place of hg (n is recomputed)."""
    H = h.shape[-1]
    hg[:, : 2 * H] += xg[:, : 2 * H]
    sigmoid_forward(xp, hg[:, : 2 * H], out=hg[:, : 2 * H])  # r, z
    n = _gru_candidate(xp, xg, hg)
    xp.subtract(h, n, out=h_new)
    h_new *= hg[:, H : 2 * H]
    h_new += n  # h' = (1 - z) n + z h


def _gru_candidate(xp, xg, saved):
    """n = tanh(xg_n + r hg_n) from the saved r | z | hg_n."""
    H = saved.shape[-1] // 3
    n = saved[:, :H] * saved[:, 2 * H :]
    n += xg[:, 2 * H :]
    return xp.tanh(n, out=n)


def gru_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    """dn = dh' (1 - z), dz = dh' (h - n), dh = dh' z directly; with dn~ = dn (1 - n^2):
    dxg = [dr~, dz~, dn~] and dhg = [dr~, dz~, dn~ r], where dr~ = dn~ hg_n r (1 - r) and
    dz~ = dz z (1 - z)."""
    H = h.shape[-1]
    r, z, hn = (saved[:, k * H : (k + 1) * H] for k in range(3))
    n = _gru_candidate(xp, xg, saved)
    dn = dh_new * (1 - z) * (1 - n * n)
    dxg = xp.empty(h.shape[:-1] + (3 * H,), dtype=dh_new.dtype)
    dxg[:, :H] = dn * hn * r * (1 - r)
    dxg[:, H : 2 * H] = dh_new * (h - n) * z * (1 - z)
    dxg[:, 2 * H :] = dn
    dhg = dxg.copy()
    dhg[:, 2 * H :] *= r
    return dxg, dhg, dh_new * z, None


CELLS = {
    "rnn": (1, rnn_cell_forward, rnn_cell_backward),
    "rnn_relu": (1, rnn_relu_cell_forward, rnn_relu_cell_backward),
    "gru": (3, gru_cell_forward, gru_cell_backward),
    "lstm": (4, lstm_cell_forward, lstm_cell_backward),
}


# ====================================================================== the sequence op


def recurrence_forward(xp, cell: str, xg, w_hh, b_hh, h0, c0):
    """Run ``cell`` over time: xg (T, N, G H), w_hh (G H, H), b_hh (G H,) or None, h0 and c0
    (N, H) (c0 only for the LSTM) -> (states, saved): states are the hidden states of every
    step (T, N, H), for the LSTM stacked with the cell states: (2, T, N, H); saved (T, N, G H)
    is what the cells' backwards need."""
    _, reference, backward = CELLS[cell]
    forward = dispatch.choose(f"{cell}_cell", (reference, backward), xg, w_hh, h0)[0]
    T, N = xg.shape[:2]
    lstm = cell == "lstm"
    states = xp.empty((2,) * lstm + (T, N, h0.shape[-1]), dtype=xg.dtype)
    hs, cs = (states[0], states[1]) if lstm else (states, None)
    saved = xp.empty_like(xg)
    w_t = xp.ascontiguousarray(w_hh.T)  # (H, G H): row-major, as BLAS likes it best here
    h, c = h0, c0
    for t in range(T):
        hg = xp.matmul(h, w_t, out=saved[t])  # (N, G H)
        if b_hh is not None:
            hg += b_hh
        h_new, c_new = hs[t], None if cs is None else cs[t]
        forward(xp, xg[t], hg, h, c, h_new, c_new)
        h, c = h_new, c_new
    return states, saved


def recurrence_backward(xp, cell: str, dhs, dcs, xg, w_hh, h0, c0, hs, cs, saved):
    """Back through time: (dxg, dw_hh, db_hh, dh0, dc0) from the gradients of every step's
    hidden states dhs (T, N, H) and cell states dcs (LSTM; else None)."""
    _, forward, reference = CELLS[cell]
    backward = dispatch.choose(f"{cell}_cell", (forward, reference), xg, w_hh, h0)[1]
    T = xg.shape[0]
    dxg = xp.empty_like(xg)
    dhg_all = dxg if cell != "gru" else xp.empty_like(xg)  # d(hg) = d(xg) but in the GRU
    dh = xp.zeros_like(h0)
    dc = None if c0 is None else xp.zeros_like(c0)
    for t in reversed(range(T)):
        dh = dh + dhs[t]
        if dcs is not None:
            dc = dc + dcs[t]
        h, c = (hs[t - 1], None if cs is None else cs[t - 1]) if t else (h0, c0)
        dxg_t, dhg, dh_direct, dc = backward(
            xp, dh, dc, saved[t], xg[t], h, hs[t], c, None if cs is None else cs[t]
        )
        dxg[t] = dxg_t
        if dhg_all is not dxg:
            dhg_all[t] = dhg
        dh = dhg @ w_hh  # (N, H)
        if dh_direct is not None:
            dh += dh_direct
    h_prev = xp.concatenate([h0[None], hs[:-1]])  # (T, N, H): each step's input state
    GH, H = w_hh.shape
    dw_hh = dhg_all.reshape(-1, GH).T @ h_prev.reshape(-1, H)  # sum over t and n
    db_hh = dhg_all.reshape(-1, GH).sum(axis=0)
    return dxg, dw_hh, db_hh, dh, dc


def recurrence(
    cell: str, xg: Tensor, w_hh: Tensor, b_hh: Tensor | None, h0: Tensor, c0: Tensor | None
) -> Tensor:
    """One recurrent layer over a whole sequence, as one node of the graph.

    ``cell`` is "rnn", "rnn_relu", "gru" or "lstm"; xg (T, N, G H) are the projected inputs (bias
    included), w_hh (G H, H) and b_hh (G H,) or None the recurrent weights, h0 (N, H) the
    initial hidden state and c0 (N, H) the LSTM's initial cell state. Returns the hidden
    states of every step (T, N, H); for the LSTM, hidden and cell states stacked:
    (2, T, N, H).
    """
    if cell not in CELLS:
        raise ValueError(f"recurrence: cell must be one of {sorted(CELLS)}, got {cell!r}")
    G = CELLS[cell][0]
    H = h0.shape[-1] if h0.ndim == 2 else -1
    shapes_ok = (
        xg.ndim == 3
        and xg.shape[0] > 0
        and xg.shape[1:] == (h0.shape[0], G * H)
        and w_hh.shape == (G * H, H)
        and (b_hh is None or b_hh.shape == (G * H,))
        and ((c0 is None) == (cell != "lstm"))
        and (c0 is None or c0.shape == h0.shape)
    )
    if not shapes_ok:
        shapes = [None if t is None else t.shape for t in (xg, w_hh, b_hh, h0, c0)]
        raise ValueError(
            f"recurrence({cell}): shapes of (xg, w_hh, b_hh, h0, c0) {shapes} do not fit: "
            f"expected (T >= 1, N, {G}H), ({G}H, H), ({G}H,), (N, H) and, for the LSTM only, "
            "(N, H)"
        )
    args = tuple(t for t in (xg, w_hh, b_hh, h0, c0) if t is not None)
    xp = check_same_device(f"recurrence({cell})", *(t.array for t in args))
    arrays = [None if t is None else t.array for t in (xg, w_hh, b_hh, h0, c0)]
    xg_, w_, b_, h0_, c0_ = arrays
    forward, backward_arrays = dispatch.choose(
        f"{cell}_recurrence", (recurrence_forward, recurrence_backward), xg_, w_, b_, h0_, c0_
    )
    out, saved = forward(xp, cell, xg_, w_, b_, h0_, c0_)
    hs, cs = (out, None) if c0 is None else (out[0], out[1])

    def backward(dout):
        dhs, dcs = (dout, None) if cs is None else (dout[0], dout[1])
        dxg, dw, db, dh0, dc0 = backward_arrays(
            xp, cell, dhs, dcs, xg_, w_, h0_, c0_, hs, cs, saved
        )
        return [
            g for g, t in zip((dxg, dw, db, dh0, dc0), (xg, w_hh, b_hh, h0, c0)) if t is not None
        ]

    back_fns = shared_back_fns(backward, len(args))
    return Tensor(out, args=args, back_fns=back_fns, name=cell)
