"""3 x 3 convolution with stride 1 by Winograd's minimal filtering, F(2 x 2, 3 x 3).

Each 2 x 2 tile of the output is computed from the 4 x 4 patch d of padded input under it and
the 3 x 3 kernel g with 16 multiplications instead of 36 (Lavin and Gray, 2015)::

    Y = A^T [(G g G^T) * (B^T d B)] A                    (* elementwise, 4 x 4)

        B^T = [1  0 -1  0]     G = [1    0    0 ]     A^T = [1  1  1  0]
              [0  1  1  0]         [1/2  1/2  1/2]           [0  1 -1 -1]
              [0 -1  1  0]         [1/2 -1/2  1/2]
              [0  1  0 -1]         [0    0    1 ]

Summed over the input channels, each of the 16 elements xi of the 4 x 4 products is a matrix
product over the tiles t::

    U[xi] (Co, C) = (G g G^T)[xi]                        the weights, once a call
    V[xi] (C, T)  = (B^T d B)[xi]                        a sample's tiles
    M[xi] (Co, T) = U[xi] @ V[xi]                        16 BLAS calls a sample
    out           = A^T M A                              tile by tile, plus the bias

The weights' gradient follows from the same formula by the chain rule::

    Z[xi] (Co, T) = (A dY A^T)[xi]                       dY's 2 x 2 tiles
    dU[xi]        = the sum over the samples of Z[xi] @ V[xi]^T
    dW            = G^T dU G
    db            = the sum over the samples and tiles of Z[5]   (a tile's sum)

(Z is stored transposed, (T, Co): BLAS runs Z @ V^T faster so), and the input's gradient
is itself such a convolution (``conv.py``), so every pass makes 2.25x fewer multiplications
than the columns' products. The transforms only add and subtract, and G only halves, so
float32 results differ from a direct sum's by about as much as two direct sums in different
orders do.

As in ``conv.py``, the batch is cut into tasks (runs of samples, each with its own scratch)
fixed by the shapes, and the weights' gradient is summed per task and then over the tasks in
order: the same bits on any number of threads. A sample's transforms are written just before
its products read them, in the core's cache. An odd output size is covered by tiles that
overhang it: the padded input has a zero row or column more, and the overhang is dropped.

Tried and measured against this (``benchmarks/README.md``): F(4 x 4, 3 x 3), whose products
take less time but whose 6 x 6 transforms cost as much more, with float32 results further
from a direct sum's; the transforms as vectorised loops over whole rows of tiles,
which need the sample split by the parity of its rows and columns: the split and its inverse
cost what the vectorised loops save.
"""

import numpy as np

from tricycle.backends.cpu.arrays import aligned_empty, pad_into, unpad_into
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.gemm import gemm_into

# G (4, 3): the kernel's transform, U = G g G^T
G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
# where it beats the columns (``benchmarks/README.md``): channels in and out within these, and
# an output of at least MIN_POSITIONS positions
MIN_CHANNELS, MAX_CHANNELS, MIN_POSITIONS = 32, 64, 256
PLANE_PAD = 16  # elements between two of the transforms' planes (``_planes``)


@jit
def _bt(d0, d1, d2, d3):
    """B^T d for a column d of 4 (and d B for a row)."""
    return d0 - d2, d1 + d2, d2 - d1, d1 - d3


@jit
def _at(m0, m1, m2, m3):
    """A^T m for a column m of 4 (and m A for a row): 2 values."""
    return m0 + m1 + m2, m1 - m2 - m3


@jit
def _a(y0, y1):
    """A y for a column y of 2 (and y A^T for a row): 4 values."""
    return y0, y0 + y1, y0 - y1, -y1


@jit
def input_tiles(xpad, v, tw):
    """v[xi, c, t] = (B^T d B)[xi] for the patch d of tile t = ty tw + tx: rows 2 ty.. 2 ty + 3
    and columns 2 tx.. 2 tx + 3 of xpad (C, 2 th + 2, 2 tw + 2); v (16, C, th tw)."""
    C, T = v.shape[1], v.shape[2]
    for c in range(C):
        for ty in range(T // tw):
            rows = xpad[c, 2 * ty : 2 * ty + 4]
            r0, r1, r2, r3 = rows[0], rows[1], rows[2], rows[3]
            for tx in range(tw):
                t, x = ty * tw + tx, 2 * tx
                # B^T d, a column at a time: ajk is row k of column j
                a00, a01, a02, a03 = _bt(r0[x], r1[x], r2[x], r3[x])
                a10, a11, a12, a13 = _bt(r0[x + 1], r1[x + 1], r2[x + 1], r3[x + 1])
                a20, a21, a22, a23 = _bt(r0[x + 2], r1[x + 2], r2[x + 2], r3[x + 2])
                a30, a31, a32, a33 = _bt(r0[x + 3], r1[x + 3], r2[x + 3], r3[x + 3])
                # (B^T d) B, a row at a time: row k is v[4 k: 4 k + 4]
                v[0, c, t], v[1, c, t], v[2, c, t], v[3, c, t] = _bt(a00, a10, a20, a30)
                v[4, c, t], v[5, c, t], v[6, c, t], v[7, c, t] = _bt(a01, a11, a21, a31)
                v[8, c, t], v[9, c, t], v[10, c, t], v[11, c, t] = _bt(a02, a12, a22, a32)
                v[12, c, t], v[13, c, t], v[14, c, t], v[15, c, t] = _bt(a03, a13, a23, a33)


@jit
def output_tiles(m, bias, out, tw):
    """out[o, 2 ty + a, 2 tx + b] = (A^T M A)[a, b] + bias[o] for tile t = ty tw + tx of
    m (16, Co, T); out (Co, 2 th, 2 tw)."""
    Co, T = m.shape[1], m.shape[2]
    for o in range(Co):
        b = bias[o]
        for ty in range(T // tw):
            y0, y1 = out[o, 2 * ty], out[o, 2 * ty + 1]
            for tx in range(tw):
                t, x = ty * tw + tx, 2 * tx
                # M A: each of M's four rows gives 2 values, pk for column 0 and qk for 1
                p0, q0 = _at(m[0, o, t], m[1, o, t], m[2, o, t], m[3, o, t])
                p1, q1 = _at(m[4, o, t], m[5, o, t], m[6, o, t], m[7, o, t])
                p2, q2 = _at(m[8, o, t], m[9, o, t], m[10, o, t], m[11, o, t])
                p3, q3 = _at(m[12, o, t], m[13, o, t], m[14, o, t], m[15, o, t])
                # A^T (M A), a column at a time
                top, bottom = _at(p0, p1, p2, p3)
                y0[x], y1[x] = top + b, bottom + b
                top, bottom = _at(q0, q1, q2, q3)
                y0[x + 1], y1[x + 1] = top + b, bottom + b


@jit
def gradient_tiles(d, z, tw):
    """z[xi, t, o] = (A dy A^T)[xi] for the tile dy = d[o, 2 ty: 2 ty + 2, 2 tx: 2 tx + 2] of
    t = ty tw + tx; d (Co, 2 th, 2 tw), z (16, T, Co): Z[xi] transposed, the layout in which
    BLAS makes Z[xi] @ V[xi]^T fastest (``benchmarks/README.md``)."""
    T, Co = z.shape[1], z.shape[2]
    for t in range(T):
        y, x = 2 * (t // tw), 2 * (t % tw)
        for o in range(Co):
            r0, r1 = d[o, y], d[o, y + 1]
            # A dy, a column at a time: ajk is row k of column j
            a00, a01, a02, a03 = _a(r0[x], r1[x])
            a10, a11, a12, a13 = _a(r0[x + 1], r1[x + 1])
            # (A dy) A^T, a row at a time: row k is z[4 k: 4 k + 4]
            z[0, t, o], z[1, t, o], z[2, t, o], z[3, t, o] = _a(a00, a10)
            z[4, t, o], z[5, t, o], z[6, t, o], z[7, t, o] = _a(a01, a11)
            z[8, t, o], z[9, t, o], z[10, t, o], z[11, t, o] = _a(a02, a12)
            z[12, t, o], z[13, t, o], z[14, t, o], z[15, t, o] = _a(a03, a13)


# Each kernel's tasks: task t takes samples [t N / tasks, (t + 1) N / tasks) and scratch [t];
# a launch runs tasks first..last.


@parallel_jit(blas=True)
def forward_kernel(x, u, bias, out, xpad, v, m, tiled, ph, pw, first, last):
    """out (N, Co, Ho, Wo) = x (N, C, H, W) convolved with the 3 x 3 kernel transformed into
    u (16, Co, C), plus bias (Co,). Scratch per task: xpad (tasks, C, 2 th + 2, 2 tw + 2) zero,
    v (tasks, 16, C, T), m (tasks, 16, Co, T), and tiled (tasks, Co, 2 th, 2 tw) for an odd
    output size (else unused)."""
    N, tasks, tw = x.shape[0], xpad.shape[0], (xpad.shape[3] - 2) // 2
    Ho, Wo = out.shape[2], out.shape[3]
    even = Ho % 2 == 0 and Wo % 2 == 0
    for task in range(first, last):
        for n in range(task * N // tasks, (task + 1) * N // tasks):
            pad_into(x[n], xpad[task], ph, pw)
            input_tiles(xpad[task], v[task], tw)
            for xi in range(16):
                gemm_into(m[task, xi], u[xi], v[task, xi], False, False, 0.0)
            if even:
                output_tiles(m[task], bias, out[n], tw)
            else:
                output_tiles(m[task], bias, tiled[task], tw)
                unpad_into(tiled[task], out[n], 0, 0)


@parallel_jit(blas=True)
def weights_grad_kernel(x, d, parts, sums, xpad, v, z, tiled, ph, pw, first, last):
    """parts[task] (16, Co, C) += Z[xi] @ V[xi]^T over the task's samples: x (N, C, H, W),
    d (N, Co, Ho, Wo); and sums[task] (Co,) += the sum of d over each sample's positions,
    which is Z[5] (a tile's four elements) summed over the tiles: the bias's gradient. Scratch
    per task: xpad and v as ``forward_kernel``'s, z (tasks, 16, T, Co), and tiled (tasks, Co,
    2 th, 2 tw) zero for an odd output size."""
    N, tasks, tw = x.shape[0], xpad.shape[0], (xpad.shape[3] - 2) // 2
    Ho, Wo = d.shape[2], d.shape[3]
    even = Ho % 2 == 0 and Wo % 2 == 0
    for task in range(first, last):
        for n in range(task * N // tasks, (task + 1) * N // tasks):
            pad_into(x[n], xpad[task], ph, pw)
            input_tiles(xpad[task], v[task], tw)
            if even:
                gradient_tiles(d[n], z[task], tw)
            else:
                pad_into(d[n], tiled[task], 0, 0)
                gradient_tiles(tiled[task], z[task], tw)
            for xi in range(16):
                gemm_into(parts[task, xi], z[task, xi], v[task, xi], True, True, 1.0)
            total = sums[task]
            for t in range(z.shape[2]):
                tile_sums = z[task, 5, t]  # (A dy A^T)[1, 1]: the sum of the tile
                for o in range(total.size):
                    total[o] += tile_sums[o]


def applies(geometry) -> bool:
    """A 3 x 3 kernel, stride 1, no dilation and one group, where it is the faster: from
    ``MIN_CHANNELS`` to ``MAX_CHANNELS`` channels in and out, and at least ``MIN_POSITIONS``
    output positions. Outside these the columns won (forward + backward; the times are in
    ``benchmarks/README.md``): with 16 channels the 16 products are too thin; with 128 or 256
    the columns' 9 x C-deep products run near BLAS's peak while the transforms and per-task
    sums grow; at 8 x 8 outputs a sample has only 16 tiles."""
    C, Co = geometry.x_shape[1], geometry.out_channels
    Ho, Wo = geometry.out
    return (
        geometry.kernel == (3, 3) and geometry.stride == (1, 1) and geometry.dilation == (1, 1)
        and geometry.groups == 1 and MIN_CHANNELS <= min(C, Co)
        and max(C, Co) <= MAX_CHANNELS and Ho * Wo >= MIN_POSITIONS
    )  # fmt: skip


def _tiles(geometry):
    """(th, tw): the 2 x 2 tiles over the output, rounded up."""
    Ho, Wo = geometry.out
    return (Ho + 1) // 2, (Wo + 1) // 2


def _planes(tasks, channels, T, dtype):
    """Scratch (tasks, 16, channels, T) whose planes do not lie a multiple of 4 KiB apart.
    Planes that do fall in the same sets of the cache, and a tile's 16 writes evict each other
    (many times slower at 32 channels x 256 tiles: ``benchmarks/README.md``). It starts on a
    cache line, and so do the planes where channels x T is a multiple of 16: BLAS's
    small-matrix kernels read an operand so aligned faster (``blas.step_blocks``)."""
    flat = aligned_empty((tasks, 16, channels * T + PLANE_PAD), dtype)
    return flat[..., : channels * T].reshape(tasks, 16, channels, T)


def _scratch(geometry, tasks, channels, dtype):
    """Each task's padded sample (zero: only its inside is written afterwards), its tiles'
    transforms V, as many for ``channels`` (M or Z), and, for an odd output size, an
    output-sized sample in whole tiles (zero; else empty)."""
    th, tw = _tiles(geometry)
    C = geometry.x_shape[1]
    xpad = np.zeros((tasks, C, 2 * th + 2, 2 * tw + 2), dtype=dtype)
    v, other = _planes(tasks, C, th * tw, dtype), _planes(tasks, channels, th * tw, dtype)
    odd = any(n % 2 for n in geometry.out)
    tiled = np.zeros((tasks, channels, 2 * th, 2 * tw) if odd else (tasks, 0, 0, 0), dtype=dtype)
    return xpad, v, other, tiled


def _bytes_per_task(geometry, channels, itemsize) -> int:
    th, tw = _tiles(geometry)
    C = geometry.x_shape[1]
    return (C * (2 * th + 2) * (2 * tw + 2) + 16 * (C + channels) * th * tw) * itemsize


def convolve(geometry, x, weights, bias, out, parallel):
    """out (N, Co, Ho, Wo) = x (N, C, H, W) convolved with weights (Co, C, 3, 3), plus bias;
    ``parallel(tasks, x)`` says whether the tasks run on threads."""
    Co, dtype = weights.shape[0], x.dtype
    u = np.tensordot(np.tensordot(G, weights, (1, 2)), G, (3, 1))  # G g G^T: (x, o, c, y)
    u = u.transpose(0, 3, 1, 2).astype(dtype, order="C").reshape(16, Co, -1)
    tasks = geometry.tasks(_bytes_per_task(geometry, Co, x.itemsize))
    xpad, v, m, tiled = _scratch(geometry, tasks, Co, dtype)
    forward_kernel.run(parallel(tasks, x), x, u, bias, out, xpad, v, m,
                       tiled, *geometry.padding, tasks)  # fmt: skip


def weights_grad(geometry, x, d, parallel):
    """(dW, db): dW (Co, C, 3, 3) = G^T dU G, dU[xi] the sum over the samples of
    Z[xi] @ V[xi]^T, and db (Co,) the sum of d over its samples and positions."""
    Co, dtype = d.shape[1], d.dtype
    tasks = geometry.tasks(_bytes_per_task(geometry, Co, x.itemsize))
    xpad, v, _, tiled = _scratch(geometry, tasks, Co, dtype)
    z = _planes(tasks, v.shape[3], Co, dtype)  # Z[xi] transposed: (T, Co)
    parts = np.zeros((tasks, 16, Co, x.shape[1]), dtype=dtype)
    sums = np.zeros((tasks, Co))  # float64: a channel's sum over the batch
    weights_grad_kernel.run(parallel(tasks, x), x, d, parts, sums, xpad, v, z, tiled,
                            *geometry.padding, tasks)  # fmt: skip
    du = parts.sum(axis=0).reshape(4, 4, Co, -1)  # over the tasks, in order
    dw = np.tensordot(np.tensordot(G, du, (0, 0)), G, (1, 0))  # G^T dU G: (i, o, c, j)
    return dw.transpose(1, 2, 0, 3).astype(dtype), sums.sum(axis=0).astype(dtype)
