"""The recurrent cells on the CPU: one loop over the (batch, hidden) elements of a step,
each element's gates, state and gradients computed in registers (``tricycle.nn.recurrent``'s
cells make a whole-array pass per operation). Same signatures as the reference cells: the
forward writes the activated gates over hg and the new states into h_new and c_new; the
backward returns (dxg, dhg, dh through the cell or None, dc).

The LSTM over a whole sequence is one parallel kernel each way: every step, chunks of the
units each take their own product (their columns of h W_hh^T) and their own cells (below).

The activations go through ``tanh`` below, a rational function in float32 that the compiler
vectorises (the C library's tanh and exp, called element by element, would cost more than the
step's matrix product), and sigmoid(z) = (1 + tanh(z / 2)) / 2. float64 keeps the C
library's tanh."""

import math

import numpy as np
from numba import prange, types
from numba.extending import overload

from tricycle import dispatch
from tricycle.backends.cpu import blas
from tricycle.backends.cpu.arrays import aligned_empty
from tricycle.backends.cpu.compile import jit, parfor_jit, thread_count, uses_one_pool
from tricycle.backends.cpu.gemm import gemm_blocks_into, matmul
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
def _gates(row, H, j0, Hc):
    """Gates i, f, g, o of units [j0, j0 + Hc) in a row laid out i | f | g | o, H wide each."""
    return (row[j0 : j0 + Hc], row[H + j0 : H + j0 + Hc], row[2 * H + j0 : 2 * H + j0 + Hc],
            row[3 * H + j0 : 3 * H + j0 + Hc])  # fmt: skip


@jit
def _copy(src, dst):
    for j in range(src.shape[0]):
        dst[j] = src[j]


@jit
def lstm_units_forward(z, xg, bias, c, gates, h_new, c_new, j0):
    """One step of the units [j0, j0 + Hc): z (N, 4 Hc) = h W_hh^T's columns for them, its
    gates i | f | g | o each Hc wide; xg (N, 4H) and bias (4H,) add to them. Writes the
    activated gates into gates (N, 4H) and c' = f c + i g, h' = o tanh(c') into h_new and
    c_new (N, H). z is not gates itself: where they overlap the loop does not vectorise."""
    N, Hc = z.shape[0], z.shape[1] // 4
    H = c.shape[1]
    bi, bf, bg, bo = _gates(bias, H, j0, Hc)
    for n in range(N):
        zi, zf, zg, zo = _gates(z[n], Hc, 0, Hc)
        xi, xf, xg_, xo = _gates(xg[n], H, j0, Hc)
        gi, gf, gg, go = _gates(gates[n], H, j0, Hc)
        c_row, c_out, h_out = c[n, j0 : j0 + Hc], c_new[n, j0 : j0 + Hc], h_new[n, j0 : j0 + Hc]
        for j in range(Hc):
            i = _sigmoid(zi[j] + xi[j] + bi[j])
            f = _sigmoid(zf[j] + xf[j] + bf[j])
            g = tanh(zg[j] + xg_[j] + bg[j])
            o = _sigmoid(zo[j] + xo[j] + bo[j])
            gi[j], gf[j], gg[j], go[j] = i, f, g, o
            c_next = f * c_row[j] + i * g
            c_out[j] = c_next
            h_out[j] = o * tanh(c_next)


@jit
def lstm_units_backward(dh_parts, dh_here, dc_later, dc_here, gates, c, c_new, dz, dxg, dc, j0):
    """The backward of ``lstm_units_forward`` for units [j0, j0 + Hc). With dh' = dh_here +
    the sum of dh_parts (P, N, H) (the gradient reaching h' directly and, in parts, through
    the next step) and dc' = dc_later + dc_here: dc = dc' + dh' o (1 - t^2), t = tanh(c');
    the gates' pre-activation gradients [dc g i (1 - i), dc c f (1 - f), dc i (1 - g^2),
    dh' t o (1 - o)], written to dz (N, 4 Hc) and to their columns of dxg (N, 4H) (another
    array); dc_prev = dc f, written to ``dc`` (N, H)."""
    N, Hc = dz.shape[0], dz.shape[1] // 4
    H = c.shape[1]
    dh_row = np.empty(Hc, dtype=dz.dtype)
    for n in range(N):
        gi, gf, gg, go = _gates(gates[n], H, j0, Hc)
        xi, xf, xg_, xo = _gates(dxg[n], H, j0, Hc)
        di, df, dg, do = _gates(dz[n], Hc, 0, Hc)
        _copy(dh_here[n, j0 : j0 + Hc], dh_row)
        for p in range(dh_parts.shape[0]):
            part = dh_parts[p, n, j0 : j0 + Hc]
            for j in range(Hc):
                dh_row[j] += part[j]
        dc_a, dc_b = dc_later[n, j0 : j0 + Hc], dc_here[n, j0 : j0 + Hc]
        c_row, c_out, dc_row = c[n, j0 : j0 + Hc], c_new[n, j0 : j0 + Hc], dc[n, j0 : j0 + Hc]
        for j in range(Hc):
            i, f, g, o = gi[j], gf[j], gg[j], go[j]
            one = typed(i, 1.0)
            dh = dh_row[j]
            t = tanh(c_out[j])
            dcell = dc_a[j] + dc_b[j] + dh * o * (one - t * t)
            di[j] = dcell * g * i * (one - i)
            df[j] = dcell * c_row[j] * f * (one - f)
            dg[j] = dcell * i * (one - g * g)
            do[j] = dh * t * o * (one - o)
            dc_row[j] = dcell * f
        # copied one gate at a time: a loop that reads and writes many arrays which might
        # overlap does not vectorise
        _copy(di, xi)
        _copy(df, xf)
        _copy(dg, xg_)
        _copy(do, xo)


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


def _call(kernel, *args, written=()):
    """``kernel(*args)`` with every array C-contiguous (a copy of one that is not; those at
    the positions ``written`` copied back after): the loops are compiled for contiguous rows,
    where they vectorise (typed as strided, the cells ran several times slower in float32:
    ``benchmarks/README.md``), and for one layout only: a kernel is compiled once per dtype,
    whatever the caller's views."""
    contiguous = [np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel(*contiguous)
    for i in written:
        if contiguous[i] is not args[i]:
            args[i][...] = contiguous[i]


def rnn_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    _call(rnn_forward_kernel, xg, hg, h_new, written=(1, 2))


def rnn_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dz = np.empty(h_new.shape, dtype=h_new.dtype)
    _call(rnn_backward_kernel, dh_new, h_new, dz)
    return dz, dz, None, None


def lstm_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    # z is a copy of hg: the loops vectorise only where what they read and write do not overlap
    bias = np.zeros(hg.shape[-1], hg.dtype)
    _call(lstm_units_forward, hg.copy(), xg, bias, c, hg, h_new, c_new, 0, written=(4, 5, 6))


def lstm_cell_backward(xp, dh_new, dc_new, gates, xg, h, h_new, c, c_new):
    dz, dxg = np.empty(gates.shape, dtype=gates.dtype), np.empty(gates.shape, dtype=gates.dtype)
    dc = np.empty(c.shape, dtype=gates.dtype)
    zeros = np.zeros((1,) + c.shape, dtype=gates.dtype)  # no gradient through a next step
    _call(lstm_units_backward, zeros, dh_new, dc_new, zeros[0], gates, c, c_new, dz, dxg, dc, 0)
    return dxg, dxg, None, dc


def gru_cell_forward(xp, xg, hg, h, c, h_new, c_new):
    _call(gru_forward_kernel, xg, hg, h, h_new, written=(1, 3))


def gru_cell_backward(xp, dh_new, dc_new, saved, xg, h, h_new, c, c_new):
    dxg = np.empty(saved.shape, dtype=saved.dtype)
    dhg = np.empty(saved.shape, dtype=saved.dtype)
    dh = np.empty(h.shape, dtype=saved.dtype)
    _call(gru_backward_kernel, dh_new, saved, xg, h, dxg, dhg, dh)
    return dxg, dhg, dh, None


# ------------------------------------------------------------------ the LSTM over a sequence


# The units are cut into a fixed number of chunks (``chunks``), and each step runs them in
# parallel: chunk k's product (its columns of h W_hh^T, one BLAS call) and its units' cell.
# Back, chunk k's share of the next gradient, dz_k W_hh[rows of k], goes to its own buffer,
# and the next step sums the buffers for its units: a step never waits on a lock, and the
# numbers do not depend on the thread count. Buffers alternate between steps (``now`` and
# ``later``), so that no chunk overwrites one that another chunk is still reading.


@parfor_jit(blas=True)
def lstm_forward_steps(xg, w_chunks, bias, h0, c0, states, gates, z, rows, columns):
    """The LSTM over T steps: xg (T, N, 4H); w_chunks (chunks, H, 4 Hc), chunk k's columns of
    W_hh^T, gates i | f | g | o of units [k Hc, (k + 1) Hc); bias (4H,). Writes states
    (2, T, N, H), each step's h and c, and gates (T, N, 4H), activated. Scratch: z
    (chunks, N, 4 Hc). ``rows`` x ``columns``: a product's block to a BLAS call."""
    T, H = xg.shape[0], states.shape[3]
    chunks = w_chunks.shape[0]
    Hc = H // chunks
    for t in range(T):
        for k in prange(chunks):
            h, c = (states[0, t - 1], states[1, t - 1]) if t else (h0, c0)
            gemm_blocks_into(z[k], h, w_chunks[k], rows, columns)  # (N, 4 Hc)
            lstm_units_forward(z[k], xg[t], bias, c, gates[t], states[0, t], states[1, t],
                               k * Hc)  # fmt: skip


@parfor_jit(blas=True)
def lstm_backward_steps(dhs, dcs, gates, cs, c0, w_rows, dxg, dz, dh_parts, dc, rows, columns):
    """Back through ``lstm_forward_steps``: dhs and dcs (T, N, H) reach each step's outputs,
    cs (T, N, H) are its cell states; w_rows (chunks, 4 Hc, H) are chunk k's rows of W_hh.
    Writes dxg (T, N, 4H); leaves dh_parts[0] (chunks, N, H), whose sum is dh0, and
    dc[0] = dc0. Scratch: dz (chunks, N, 4 Hc); dh_parts (2, chunks, N, H) and dc (2, N, H)
    zero. ``rows`` x ``columns``: a product's block to a BLAS call."""
    T, H = dhs.shape[0], dhs.shape[2]
    chunks = w_rows.shape[0]
    Hc = H // chunks
    for t in range(T - 1, -1, -1):
        now, later = t % 2, (t + 1) % 2
        for k in prange(chunks):
            c = cs[t - 1] if t else c0
            lstm_units_backward(dh_parts[later], dhs[t], dc[later], dcs[t], gates[t], c, cs[t],
                                dz[k], dxg[t], dc[now], k * Hc)  # fmt: skip
            gemm_blocks_into(dh_parts[now, k], dz[k], w_rows[k], rows, columns)  # (N, H)


# a chunk's product wants many columns: on two cores two chunks of 128 units ran the steps
# faster than four of 64, and four of 128 slower than two of 256 (kept from H = 512 on: more
# cores can take them); two chunks of 64 still beat one of 128 (benchmarks/README.md)
CHUNK_UNITS = {4: 128, 2: 64}  # the fewest units to a chunk, by the number of chunks


def chunks(H: int, itemsize: int = 4) -> int:
    """How many chunks the units are cut into: 4 of 128 units or more, else 2 of 64 or more,
    else 1; and where BLAS has small-matrix kernels for the steps' products
    (``blas.step_blocks``), more (doubling) until a chunk's weights, H x 4 Hc, fit a core's
    L2 cache, which those kernels need: at H = 768 and 1024, sixteen chunks ran the steps
    faster than four (``benchmarks/README.md``). Fixed by H and the machine's BLAS, so that
    the numbers never depend on the thread count."""
    n = next((n for n in (4, 2) if H % n == 0 and H // n >= CHUNK_UNITS[n]), 1)
    if blas.small_step_weights(H, 4, itemsize):  # they take H-deep products of one unit
        while not blas.small_step_weights(H, 4 * (H // n), itemsize) and H % (2 * n) == 0:
            n *= 2
    return n


def lstm_recurrence_forward(xp, cell, xg, w_hh, b_hh, h0, c0):
    """``tricycle.nn.recurrent.recurrence_forward`` for the LSTM: one parallel kernel for all the
    steps on the tbb pool, where a launch a step is cheap (``compile.uses_one_pool``);
    elsewhere a loop of steps, each a product on numpy's threads and the cells (one chunk).
    ``saved`` holds the activated gates."""
    T, N, GH = xg.shape
    H, dtype = h0.shape[-1], xg.dtype
    pool = uses_one_pool()
    k = chunks(H, dtype.itemsize) if pool else 1
    bias = np.zeros(GH, dtype) if b_hh is None else np.ascontiguousarray(b_hh, dtype)
    xg, h0, c0 = (np.ascontiguousarray(a, dtype) for a in (xg, h0, c0))
    w_chunks = aligned_empty((k, H, 4, H // k), dtype)  # W_hh^T (H, 4H) regrouped:
    w_chunks[...] = np.asarray(w_hh).T.reshape(H, 4, k, H // k).transpose(2, 0, 1, 3)
    w_chunks = w_chunks.reshape(k, H, GH // k)  # (chunks, H, 4 Hc)
    states = np.empty((2, T, N, H), dtype=dtype)
    gates = np.empty((T, N, GH), dtype=dtype)
    z = np.empty((k, N, GH // k), dtype=dtype)
    if pool:
        rows, columns = blas.step_blocks(N, H, GH // k, xg.itemsize)
        lstm_forward_steps.run(k > 1 and thread_count() > 1, xg, w_chunks, bias, h0, c0,
                               states, gates, z, rows, columns)  # fmt: skip
        return states, gates
    for t in range(T):
        h, c = (states[0, t - 1], states[1, t - 1]) if t else (h0, c0)
        np.matmul(h, w_chunks[0], out=z[0])
        lstm_units_forward(z[0], xg[t], bias, c, gates[t], states[0, t], states[1, t], 0)
    return states, gates


def lstm_recurrence_backward(xp, cell, dhs, dcs, xg, w_hh, h0, c0, hs, cs, saved):
    """``tricycle.nn.recurrent.recurrence_backward`` for the LSTM, the steps run as the forward's
    (for the LSTM d(hg) = d(xg)); then dW_hh and db_hh in one product and sum."""
    T, N, GH = xg.shape
    H, dtype = h0.shape[-1], xg.dtype
    pool = uses_one_pool()
    k = chunks(H, dtype.itemsize) if pool else 1
    dhs, dcs, saved, cs, h0, c0 = (
        np.ascontiguousarray(a, dtype) for a in (dhs, dcs, saved, cs, h0, c0)
    )
    w_rows = aligned_empty((k, 4, H // k, H), dtype)  # W_hh (4H, H) regrouped:
    w_rows[...] = np.asarray(w_hh).reshape(4, k, H // k, H).transpose(1, 0, 2, 3)
    w_rows = w_rows.reshape(k, GH // k, H)  # (chunks, 4 Hc, H)
    dxg = np.empty((T, N, GH), dtype=dtype)
    dz = np.empty((k, N, GH // k), dtype=dtype)
    dh_parts = np.zeros((2, k, N, H), dtype=dtype)
    dc = np.zeros((2, N, H), dtype=dtype)
    if pool:
        rows, columns = blas.step_blocks(N, GH // k, H, xg.itemsize)
        lstm_backward_steps.run(k > 1 and thread_count() > 1, dhs, dcs, saved, cs, c0, w_rows,
                                dxg, dz, dh_parts, dc, rows, columns)  # fmt: skip
    else:
        for t in reversed(range(T)):
            now, later, c = t % 2, (t + 1) % 2, cs[t - 1] if t else c0
            lstm_units_backward(dh_parts[later], dhs[t], dc[later], dcs[t], saved[t], c, cs[t],
                                dz[0], dxg[t], dc[now], 0)  # fmt: skip
            np.matmul(dz[0], w_rows[0], out=dh_parts[now, 0])
    h_prev = np.concatenate([h0[None], hs[:-1]]).reshape(-1, H)  # (T N, H)
    dw_hh = matmul(dxg.reshape(-1, GH).T, h_prev)  # sum over t and n
    db_hh = dxg.reshape(-1, GH).sum(axis=0)
    return dxg, dw_hh, db_hh, dh_parts[0].sum(axis=0), dc[0]


dispatch.add("rnn_cell", "cpu", (rnn_cell_forward, rnn_cell_backward))
dispatch.add("lstm_cell", "cpu", (lstm_cell_forward, lstm_cell_backward))
dispatch.add("gru_cell", "cpu", (gru_cell_forward, gru_cell_backward))
dispatch.add("lstm_recurrence", "cpu", (lstm_recurrence_forward, lstm_recurrence_backward))
