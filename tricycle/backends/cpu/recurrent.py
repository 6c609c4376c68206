"""The recurrent cells on the CPU: one loop over the (batch, hidden) elements of a step,
each element's gates, state and gradients computed in registers (``tricycle.recurrent``'s
cells make a whole-array pass per operation). The products h W_hh^T stay with BLAS in
``tricycle.recurrent``. Same signatures as the reference cells: the forward writes the
activated gates over hg and the new states into h_new and c_new; the backward returns
(dxg, dhg, dh through the cell or None, dc).

The activations go through ``tanh`` below, a rational function in float32 that the compiler
vectorises (the C library's tanh and exp, called element by element, would cost more than the
step's matrix product), and sigmoid(z) = (1 + tanh(z / 2)) / 2. float64 keeps the C
library's tanh."""

import math

import numpy as np
from numba import types
from numba.extending import overload

from tricycle import dispatch
from tricycle.backends.cpu.compile import jit
from tricycle.backends.cpu.gemm import matmul, matmul_into
from tricycle.backends.cpu.maths import typed

# Eigen's generic_fast_tanh_float: tanh(x) ~ x P(x^2) / Q(x^2) on |x| <= 7.9053111 (beyond,
# tanh is 1 to float32), a few units in the last place off
_TANH_CLAMP = np.float32(7.90531110763549805)
_ALPHA = tuple(np.float32(a) for a in (
    -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
    1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03))  # x^13 ... x^1  # fmt: skip
_BETA = tuple(np.float32(b) for b in (
    1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03
))  # x^6 ... x^0  # fmt: skip


def tanh(x):
    """tanh(x) of a scalar (overloaded per dtype below)."""
    return math.tanh(x)


@overload(tanh)
def _tanh_overload(x):
    if x != types.float32:
        return lambda x: math.tanh(x)

    def tanh32(x):
        x = min(max(x, -_TANH_CLAMP), _TANH_CLAMP)
        s = x * x
        p = _ALPHA[0] * s + _ALPHA[1]
        p = ((((p * s + _ALPHA[2]) * s + _ALPHA[3]) * s + _ALPHA[4]) * s + _ALPHA[5]) * s
        p = x * (p + _ALPHA[6])
        q = ((_BETA[0] * s + _BETA[1]) * s + _BETA[2]) * s + _BETA[3]
        return p / q

    return tanh32


@jit
def _sigmoid(z):
    half = typed(z, 0.5)
    return half + half * tanh(half * z)


# Each kernel takes a row's gates as slices (gates[n, H : 2 H], ...) indexed from 0: numba
# wraps negative indices around, and an index it cannot prove >= 0 (H + j) keeps the loop from
# vectorising. Constants go through ``typed`` so that float32 stays float32.


@jit
def rnn_forward_kernel(xg, hg, h_new):
    N, H = h_new.shape
    for n in range(N):
        x_row, z_row, h_row = xg[n], hg[n], h_new[n]
        for j in range(H):
            z_row[j] += x_row[j]
            h_row[j] = tanh(z_row[j])


@jit
def rnn_backward_kernel(dh_new, h_new, dz):
    N, H = h_new.shape
    for n in range(N):
        dh_row, h_row, dz_row = dh_new[n], h_new[n], dz[n]
        for j in range(H):
            dz_row[j] = dh_row[j] * (typed(h_row[j], 1.0) - h_row[j] * h_row[j])


@jit
def lstm_forward_kernel(xg, gates, bias, c, h_new, c_new):
    """gates (N, 4H) = activated i | f | g | o of hg + xg + bias; c' = f c + i g;
    h' = o tanh(c')."""
    N, H = h_new.shape
    bi, bf, bg, bo = bias[:H], bias[H : 2 * H], bias[2 * H : 3 * H], bias[3 * H :]
    for n in range(N):
        zi, zf = gates[n, :H], gates[n, H : 2 * H]
        zg, zo = gates[n, 2 * H : 3 * H], gates[n, 3 * H :]
        xi, xf, xg_, xo = xg[n, :H], xg[n, H : 2 * H], xg[n, 2 * H : 3 * H], xg[n, 3 * H :]
        c_row, c_out, h_out = c[n], c_new[n], h_new[n]
        for j in range(H):
            i = _sigmoid(zi[j] + xi[j] + bi[j])
            f = _sigmoid(zf[j] + xf[j] + bf[j])
            g = tanh(zg[j] + xg_[j] + bg[j])
            o = _sigmoid(zo[j] + xo[j] + bo[j])
            zi[j], zf[j], zg[j], zo[j] = i, f, g, o
            c_next = f * c_row[j] + i * g
            c_out[j] = c_next
            h_out[j] = o * tanh(c_next)


@jit
def lstm_backward_kernel(dh_later, dh_here, dc_later, dc_here, gates, c, c_new, dz, dc):
    """With dh' = dh_later + dh_here and dc' = dc_later + dc_here (the gradients reaching
    the step's outputs through the next step and directly): dc = dc' + dh' o (1 - t^2),
    t = tanh(c'); the gates' pre-activation gradients dz = [dc g i (1 - i), dc c f (1 - f),
    dc i (1 - g^2), dh' t o (1 - o)]; dc_prev = dc f, written to ``dc`` (not dc_later)."""
    N, H = c.shape
    for n in range(N):
        gi, gf = gates[n, :H], gates[n, H : 2 * H]
        gg, go = gates[n, 2 * H : 3 * H], gates[n, 3 * H :]
        di, df, dg, do = dz[n, :H], dz[n, H : 2 * H], dz[n, 2 * H : 3 * H], dz[n, 3 * H :]
        dh_a, dh_b, dc_a, dc_b = dh_later[n], dh_here[n], dc_later[n], dc_here[n]
        c_row, c_out, dc_row = c[n], c_new[n], dc[n]
        for j in range(H):
            i, f, g, o = gi[j], gf[j], gg[j], go[j]
            one = typed(i, 1.0)
            dh = dh_a[j] + dh_b[j]
            t = tanh(c_out[j])
            dcell = dc_a[j] + dc_b[j] + dh * o * (one - t * t)
            di[j] = dcell * g * i * (one - i)
            df[j] = dcell * c_row[j] * f * (one - f)
            dg[j] = dcell * i * (one - g * g)
            do[j] = dh * t * o * (one - o)
            dc_row[j] = dcell * f


@jit
def gru_forward_kernel(xg, saved, h, h_new):
    """saved (N, 3H): hg, then r | z | hg_n; n = tanh(xg_n + r hg_n); h' = (1 - z) n + z h."""
    N, H = h.shape
    for n in range(N):
        sr, sz, sn = saved[n, :H], saved[n, H : 2 * H], saved[n, 2 * H :]
        xr, xz, xn = xg[n, :H], xg[n, H : 2 * H], xg[n, 2 * H :]
        h_row, h_out = h[n], h_new[n]
        for j in range(H):
            r = _sigmoid(sr[j] + xr[j])
            z = _sigmoid(sz[j] + xz[j])
            candidate = tanh(xn[j] + r * sn[j])
            sr[j], sz[j] = r, z
            h_out[j] = (typed(z, 1.0) - z) * candidate + z * h_row[j]


@jit
def gru_backward_kernel(dh_new, saved, xg, h, dxg, dhg, dh):
    N, H = h.shape
    for n in range(N):
        sr, sz, sn = saved[n, :H], saved[n, H : 2 * H], saved[n, 2 * H :]
        xn = xg[n, 2 * H :]
        dxr, dxz, dxn = dxg[n, :H], dxg[n, H : 2 * H], dxg[n, 2 * H :]
        dhr, dhz, dhn = dhg[n, :H], dhg[n, H : 2 * H], dhg[n, 2 * H :]
        dh_row, h_row, dh_out = dh_new[n], h[n], dh[n]
        for j in range(H):
            r, z, hn = sr[j], sz[j], sn[j]
            one = typed(r, 1.0)
            candidate = tanh(xn[j] + r * hn)
            dn = dh_row[j] * (one - z) * (one - candidate * candidate)
            dr = dn * hn * r * (one - r)
            dzz = dh_row[j] * (h_row[j] - candidate) * z * (one - z)
            dxr[j], dxz[j], dxn[j] = dr, dzz, dn
            dhr[j], dhz[j], dhn[j] = dr, dzz, dn * r
            dh_out[j] = dh_row[j] * z


# ------------------------------------------------------------------ the cells' signatures


def rnn_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    rnn_forward_kernel(xg, hg, h_new)


def rnn_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dz = np.empty(h_new.shape, dtype=h_new.dtype)
    rnn_backward_kernel(dh_new, h_new, dz)
    return dz, dz, None, None


def lstm_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    lstm_forward_kernel(xg, hg, np.zeros(hg.shape[-1], hg.dtype), c, h_new, c_new)


def lstm_cell_backward(xp, dh_new, dc_new, gates, xg, h, h_new, c, c_new):
    dz = np.empty(gates.shape, dtype=gates.dtype)
    dc = np.empty(c.shape, dtype=gates.dtype)
    zeros = np.zeros(c.shape, dtype=gates.dtype)
    lstm_backward_kernel(dh_new, zeros, dc_new, zeros, gates, c, c_new, dz, dc)
    return dz, dz, None, dc


def gru_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    gru_forward_kernel(xg, hg, h, h_new)


def gru_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dxg = np.empty(saved.shape, dtype=saved.dtype)
    dhg = np.empty(saved.shape, dtype=saved.dtype)
    dh = np.empty(h.shape, dtype=saved.dtype)
    gru_backward_kernel(dh_new, saved, xg, h, dxg, dhg, dh)
    return dxg, dhg, dh, None


# ------------------------------------------------------------------ the LSTM over a sequence


def lstm_recurrence_forward(xp, cell, xg, w_hh, b_hh, h0, c0):
    """``tricycle.recurrent.recurrence_forward`` for the LSTM: per step one BLAS product
    h W_hh^T written into its row of ``saved``, then the cell, which adds xg and b_hh."""
    T, N, GH = xg.shape
    dtype = xg.dtype
    xg = np.ascontiguousarray(xg)
    bias = np.zeros(GH, dtype) if b_hh is None else np.ascontiguousarray(b_hh, dtype)
    w_t = np.ascontiguousarray(w_hh.T, dtype)  # (H, 4H): BLAS's fast layout for h @ W^T
    states = np.empty((2, T, N, h0.shape[-1]), dtype=dtype)
    saved = np.empty_like(xg)
    h, c = np.ascontiguousarray(h0, dtype), np.ascontiguousarray(c0, dtype)
    for t in range(T):
        matmul_into(h, w_t, saved[t])
        lstm_forward_kernel(xg[t], saved[t], bias, c, states[0, t], states[1, t])
        h, c = states[0, t], states[1, t]
    return states, saved


def lstm_recurrence_backward(xp, cell, dhs, dcs, xg, w_hh, h0, c0, hs, cs, saved):
    """``tricycle.recurrent.recurrence_backward`` for the LSTM: the cell writes each step's
    d(gates) straight into its row of dxg (for the LSTM d(hg) = d(xg)), and adds the
    gradients arriving from the next step and from the outputs itself."""
    T, N, GH = xg.shape
    dtype = xg.dtype
    w = np.ascontiguousarray(w_hh, dtype)  # (4H, H)
    dhs, dcs = np.ascontiguousarray(dhs, dtype), np.ascontiguousarray(dcs, dtype)
    h0, c0 = np.ascontiguousarray(h0, dtype), np.ascontiguousarray(c0, dtype)
    dxg = np.empty((T, N, GH), dtype=dtype)
    dh = np.zeros(h0.shape, dtype=dtype)  # through the next step's h W_hh^T
    dc, dc_prev = np.zeros(c0.shape, dtype=dtype), np.empty(c0.shape, dtype=dtype)
    for t in reversed(range(T)):
        c = cs[t - 1] if t else c0
        lstm_backward_kernel(dh, dhs[t], dc, dcs[t], saved[t], c, cs[t], dxg[t], dc_prev)
        dc, dc_prev = dc_prev, dc
        matmul_into(dxg[t], w, dh)
    h_prev = np.concatenate([h0[None], hs[:-1]]).reshape(-1, h0.shape[-1])  # (T N, H)
    dw_hh = matmul(dxg.reshape(-1, GH).T, h_prev)  # sum over t and n
    db_hh = dxg.reshape(-1, GH).sum(axis=0)
    return dxg, dw_hh, db_hh, dh, dc


dispatch.add("rnn_cell", "cpu", (rnn_cell_forward, rnn_cell_backward))
dispatch.add("lstm_cell", "cpu", (lstm_cell_forward, lstm_cell_backward))
dispatch.add("gru_cell", "cpu", (gru_cell_forward, gru_cell_backward))
dispatch.add("lstm_recurrence", "cpu", (lstm_recurrence_forward, lstm_recurrence_backward))
