"""The recurrent cells on the CPU: one loop over the (batch, hidden) elements of a step,
each element's gates, state and gradients computed in registers (``tricycle.recurrent``'s
cells make a whole-array pass per operation). The products h W_hh^T stay with BLAS in
``tricycle.recurrent``. Same signatures as the reference cells: the forward writes the
activated gates over hg and the new states into h_new and c_new; the backward returns
(dxg, dhg, dh through the cell or None, dc)."""

import math

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import jit


@jit
def _sigmoid(z):
    return 1 / (1 + math.exp(-z))


@jit
def rnn_forward_kernel(xg, hg, h_new):
    N, H = h_new.shape
    for n in range(N):
        for j in range(H):
            hg[n, j] += xg[n, j]
            h_new[n, j] = math.tanh(hg[n, j])


@jit
def rnn_backward_kernel(dh_new, h_new, dz):
    N, H = h_new.shape
    for n in range(N):
        for j in range(H):
            dz[n, j] = dh_new[n, j] * (1 - h_new[n, j] * h_new[n, j])


@jit
def lstm_forward_kernel(xg, gates, c, h_new, c_new):
    """gates (N, 4H) = activated i | f | g | o of hg + xg; c' = f c + i g; h' = o tanh(c')."""
    N, H = h_new.shape
    for n in range(N):
        for j in range(H):
            i = _sigmoid(gates[n, j] + xg[n, j])
            f = _sigmoid(gates[n, H + j] + xg[n, H + j])
            g = math.tanh(gates[n, 2 * H + j] + xg[n, 2 * H + j])
            o = _sigmoid(gates[n, 3 * H + j] + xg[n, 3 * H + j])
            gates[n, j], gates[n, H + j], gates[n, 2 * H + j], gates[n, 3 * H + j] = i, f, g, o
            c_next = f * c[n, j] + i * g
            c_new[n, j] = c_next
            h_new[n, j] = o * math.tanh(c_next)


@jit
def lstm_backward_kernel(dh_new, dc_new, gates, c, c_new, dz, dc):
    """dc = dc' + dh' o (1 - t^2) with t = tanh(c'); the gates' pre-activation gradients
    dz = [dc g i (1 - i), dc c f (1 - f), dc i (1 - g^2), dh' t o (1 - o)]; dc_prev = dc f."""
    N, H = c.shape
    for n in range(N):
        for j in range(H):
            i, f = gates[n, j], gates[n, H + j]
            g, o = gates[n, 2 * H + j], gates[n, 3 * H + j]
            t = math.tanh(c_new[n, j])
            dcell = dc_new[n, j] + dh_new[n, j] * o * (1 - t * t)
            dz[n, j] = dcell * g * i * (1 - i)
            dz[n, H + j] = dcell * c[n, j] * f * (1 - f)
            dz[n, 2 * H + j] = dcell * i * (1 - g * g)
            dz[n, 3 * H + j] = dh_new[n, j] * t * o * (1 - o)
            dc[n, j] = dcell * f


@jit
def gru_forward_kernel(xg, saved, h, h_new):
    """saved (N, 3H): hg, then r | z | hg_n; n = tanh(xg_n + r hg_n); h' = (1 - z) n + z h."""
    N, H = h.shape
    for n in range(N):
        for j in range(H):
            r = _sigmoid(saved[n, j] + xg[n, j])
            z = _sigmoid(saved[n, H + j] + xg[n, H + j])
            candidate = math.tanh(xg[n, 2 * H + j] + r * saved[n, 2 * H + j])
            saved[n, j], saved[n, H + j] = r, z
            h_new[n, j] = (1 - z) * candidate + z * h[n, j]


@jit
def gru_backward_kernel(dh_new, saved, xg, h, dxg, dhg, dh):
    N, H = h.shape
    for n in range(N):
        for j in range(H):
            r, z, hn = saved[n, j], saved[n, H + j], saved[n, 2 * H + j]
            candidate = math.tanh(xg[n, 2 * H + j] + r * hn)
            dn = dh_new[n, j] * (1 - z) * (1 - candidate * candidate)
            dr = dn * hn * r * (1 - r)
            dzz = dh_new[n, j] * (h[n, j] - candidate) * z * (1 - z)
            dxg[n, j], dxg[n, H + j], dxg[n, 2 * H + j] = dr, dzz, dn
            dhg[n, j], dhg[n, H + j], dhg[n, 2 * H + j] = dr, dzz, dn * r
            dh[n, j] = dh_new[n, j] * z


# ------------------------------------------------------------------ the cells' signatures


def rnn_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    rnn_forward_kernel(xg, hg, h_new)


def rnn_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dz = np.empty(h_new.shape, dtype=h_new.dtype)
    rnn_backward_kernel(dh_new, h_new, dz)
    return dz, dz, None, None


def lstm_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    lstm_forward_kernel(xg, hg, c, h_new, c_new)


def lstm_cell_backward(xp, dh_new, dc_new, gates, xg, h, h_new, c, c_new):
    dz = np.empty(gates.shape, dtype=gates.dtype)
    dc = np.empty(c.shape, dtype=gates.dtype)
    lstm_backward_kernel(dh_new, dc_new, gates, c, c_new, dz, dc)
    return dz, dz, None, dc


def gru_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    gru_forward_kernel(xg, hg, h, h_new)


def gru_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dxg = np.empty(saved.shape, dtype=saved.dtype)
    dhg = np.empty(saved.shape, dtype=saved.dtype)
    dh = np.empty(h.shape, dtype=saved.dtype)
    gru_backward_kernel(dh_new, saved, xg, h, dxg, dhg, dh)
    return dxg, dhg, dh, None


dispatch.add("rnn_cell", "cpu", (rnn_cell_forward, rnn_cell_backward))
dispatch.add("lstm_cell", "cpu", (lstm_cell_forward, lstm_cell_backward))
dispatch.add("gru_cell", "cpu", (gru_cell_forward, gru_cell_backward))
