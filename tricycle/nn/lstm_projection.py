"""The LSTM with projections (``torch.nn.LSTM(..., proj_size=P)``): one layer, one direction, as
one node of the graph.

Each step is the LSTM cell of ``tricycle.nn.recurrent_cells`` on a hidden state of P units
rather than H, whose new hidden state is projected down from H to P::

    i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the quarters of xg + h W_hh^T + b_hh
    c' = f c + i g     (N, H)          m = o tanh(c')  (N, H)          h' = m W_hr^T  (N, P)

with W_hh (4H, P) and W_hr (P, H): torch's ``weight_hh_l{k}`` and ``weight_hr_l{k}``. The cell
itself is the same pair of array functions as the plain LSTM's (``lstm_cell_forward`` and
``lstm_cell_backward``, which write and read m where the plain LSTM has h'); the projection
and its gradient wrap it. The references run here on both backends (they are written against
the array module ``xp``): no backend registers kernels for the projected cell, whose hidden
state is narrower than its cell state. The backward walks back through time as
``recurrence_backward`` does, collecting d(hg) and dh' of every step so that
d(W_hh) = sum_t d(hg_t)^T h_{t-1} and d(W_hr) = sum_t dh'_t^T m_t are one product each.

The states come out as one Tensor (T, N, P + H), the hidden states first and the cell states
after them on the feature axis: the two differ in width, so they cannot stack as the plain
LSTM's (2, T, N, H); ``tricycle.nn.recurrent`` splits them.
"""

from tricycle.backend import check_same_device
from tricycle.layers import shared_back_fns
from tricycle.nn.recurrent_cells import lstm_cell_backward, lstm_cell_forward
from tricycle.tensor import Tensor

__all__ = ["projected_lstm_recurrence"]


def projected_lstm_forward(xp, xg, w_hh, b_hh, w_hr, h0, c0):
    """xg (T, N, 4H), w_hh (4H, P), b_hh (4H,) or None, w_hr (P, H), h0 (N, P), c0 (N, H) ->
    (hs (T, N, P), cs (T, N, H), ms (T, N, H) the unprojected o tanh(c), saved (T, N, 4H) the
    gates)."""
    (T, N, _), (P, H) = xg.shape, w_hr.shape
    hs = xp.empty((T, N, P), dtype=xg.dtype)
    cs, ms = xp.empty((T, N, H), dtype=xg.dtype), xp.empty((T, N, H), dtype=xg.dtype)
    saved = xp.empty_like(xg)
    w_hh_t, w_hr_t = xp.ascontiguousarray(w_hh.T), xp.ascontiguousarray(w_hr.T)  # (P, 4H), (H, P)
    h, c = h0, c0
    for t in range(T):
        hg = xp.matmul(h, w_hh_t, out=saved[t])  # (N, 4H)
        if b_hh is not None:
            hg += b_hh
        lstm_cell_forward(xp, xg[t], hg, c, c, ms[t], cs[t])  # the cell reads H from c
        xp.matmul(ms[t], w_hr_t, out=hs[t])  # (N, P)
        h, c = hs[t], cs[t]
    return hs, cs, ms, saved


def projected_lstm_backward(xp, dhs, dcs, xg, w_hh, w_hr, h0, c0, hs, cs, ms, saved):
    """Back through time: (dxg, dw_hh, db_hh, dw_hr, dh0, dc0) from the gradients of every
    step's hidden states dhs (T, N, P) and cell states dcs (T, N, H)."""
    T, P = xg.shape[0], w_hr.shape[0]
    dxg = xp.empty_like(xg)  # d(xg) = d(hg) for the LSTM
    dh_all = xp.empty_like(hs)  # each step's total dh'
    dh, dc = xp.zeros_like(h0), xp.zeros_like(c0)
    for t in reversed(range(T)):
        dh = dh + dhs[t]
        dh_all[t] = dh
        dc = dc + dcs[t]
        dm = dh @ w_hr  # (N, H)
        c = cs[t - 1] if t else c0
        dxg[t], _, _, dc = lstm_cell_backward(xp, dm, dc, saved[t], xg[t], c, None, c, cs[t])
        dh = dxg[t] @ w_hh  # (N, P)
    h_prev = xp.concatenate([h0[None], hs[:-1]])  # (T, N, P): each step's input state
    dz = dxg.reshape(-1, xg.shape[-1])  # (T N, 4H)
    dw_hh = dz.T @ h_prev.reshape(-1, P)
    dw_hr = dh_all.reshape(-1, P).T @ ms.reshape(-1, ms.shape[-1])  # (P, H)
    return dxg, dw_hh, dz.sum(axis=0), dw_hr, dh, dc


def projected_lstm_recurrence(
    xg: Tensor, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor, h0: Tensor, c0: Tensor
) -> Tensor:
    """The projected LSTM over a whole sequence: xg (T, N, 4H) the projected inputs (bias
    included), w_hh (4H, P), b_hh (4H,) or None, w_hr (P, H), h0 (N, P), c0 (N, H). Returns the
    hidden and cell states of every step side by side, (T, N, P + H)."""
    P, H = w_hr.shape if w_hr.ndim == 2 else (-1, -1)
    shapes_ok = (
        xg.ndim == 3
        and xg.shape[0] > 0
        and xg.shape[1:] == (h0.shape[0], 4 * H)
        and w_hh.shape == (4 * H, P)
        and (b_hh is None or b_hh.shape == (4 * H,))
        and h0.shape == (xg.shape[1], P)
        and c0.shape == (xg.shape[1], H)
    )
    if not shapes_ok:
        shapes = [None if t is None else t.shape for t in (xg, w_hh, b_hh, w_hr, h0, c0)]
        raise ValueError(
            f"projected_lstm_recurrence: shapes of (xg, w_hh, b_hh, w_hr, h0, c0) {shapes} do "
            "not fit: expected (T >= 1, N, 4H), (4H, P), (4H,), (P, H), (N, P) and (N, H)"
        )
    args = tuple(t for t in (xg, w_hh, b_hh, w_hr, h0, c0) if t is not None)
    xp = check_same_device("projected_lstm_recurrence", *(t.array for t in args))
    xg_, w_, b_, w_hr_, h0_, c0_ = (
        None if t is None else t.array for t in (xg, w_hh, b_hh, w_hr, h0, c0)
    )
    hs, cs, ms, saved = projected_lstm_forward(xp, xg_, w_, b_, w_hr_, h0_, c0_)

    def backward(dout):
        dhs, dcs = dout[..., :P], dout[..., P:]
        grads = projected_lstm_backward(xp, dhs, dcs, xg_, w_, w_hr_, h0_, c0_, hs, cs, ms, saved)
        dxg, dw, db, dw_hr, dh0, dc0 = grads
        return [
            g
            for g, t in zip((dxg, dw, db, dw_hr, dh0, dc0), (xg, w_hh, b_hh, w_hr, h0, c0))
            if t is not None
        ]

    out = xp.concatenate([hs, cs], axis=-1)  # (T, N, P + H)
    return Tensor(out, args=args, back_fns=shared_back_fns(backward, len(args)), name="lstm_proj")
