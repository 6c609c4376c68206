"""Double backward of the recurrent layers, the linear algebra ops, nearest upsampling and
the sliding blocks (``create_graph=True``: ``tricycle.second_order``).

- A recurrent layer (``nn.RNN``/``GRU``/``LSTM`` and their cells: one fused node per layer and
  direction, ``recurrent_cells.recurrence``; the LSTM with projections,
  ``lstm_projection``'s) is rebuilt step by step from its projected inputs,
  weights and initial states with differentiable ops, and walked
  (``second_order_fused.gradients``): the cells' equations as ``recurrent_cells`` writes them.
- ``inv``, ``det``, ``slogdet``, ``solve``, ``cross`` and ``cholesky`` write their backwards
  with the same differentiable ops (dA = -X^T g X^T with X = A^-1 the node itself;
  g det(A) A^-T; g A^-T; dB = A^-T g, dA = -dB X^T; a x b's partners crossed with g;
  Murray's L^-T S L^-1), so that every order goes through them (``solve_triangular``,
  which shares solve's back_fns, in ``second_order_solve``). ``det``'s second
  derivative needs A^-1: at a singular A it raises ``LinAlgError`` (torch's goes through an
  SVD there).
- Nearest upsampling, ``unfold`` and ``fold`` are linear: each back_fn is recorded with its
  adjoint (``second_order_base.linear``), the op's forward on an array.
- ``logit``'s slope 1 / (p (1 - p)) (0 outside [eps, 1 - eps]) is written with ops.
The ops sit in the math layer, above this engine module: they are loaded by name when the
table is built.
"""

import importlib

from tricycle import second_order_fused, second_order_solve
from tricycle.second_order_base import cell, constant, linear, summed_to

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _linalg():
    return importlib.import_module("tricycle.linalg")


def _transposed(x):
    from tricycle.ops import swapaxes

    return swapaxes(x, -1, -2)


def _matrices(g):
    """A gradient of one number per matrix (...) as (..., 1, 1)."""
    return g.reshape(*g.shape, 1, 1)


# ------------------------------------------------------------------ recurrent layers
def _rnn_step(xg, hg, h, c, H):
    return (xg + hg).tanh(), None


def _rnn_relu_step(xg, hg, h, c, H):
    from tricycle.ops import where

    z = xg + hg
    return where(z.array > 0, z, constant(z, z.xp.zeros((), z.dtype))), None


def _lstm_step(xg, hg, h, c, H):
    z = xg + hg
    i, f = z[:, :H].sigmoid(), z[:, H : 2 * H].sigmoid()
    g, o = z[:, 2 * H : 3 * H].tanh(), z[:, 3 * H :].sigmoid()
    c_new = f * c + i * g
    return o * c_new.tanh(), c_new


def _gru_step(xg, hg, h, c, H):
    r = (xg[:, :H] + hg[:, :H]).sigmoid()
    z = (xg[:, H : 2 * H] + hg[:, H : 2 * H]).sigmoid()
    n = (xg[:, 2 * H :] + r * hg[:, 2 * H :]).tanh()
    return (1 - z) * n + z * h, None


STEPS = {"rnn": _rnn_step, "rnn_relu": _rnn_relu_step, "lstm": _lstm_step, "gru": _gru_step}


def _recurrence(node, backward):
    """The layer's states, step by step: hg = h W_hh^T + b_hh, then the cell (``STEPS``)."""
    from tricycle.ops import stack

    step = STEPS[cell(backward, "cell")]
    xg, w_hh, b_hh = cell(backward, "xg"), cell(backward, "w_hh"), cell(backward, "b_hh")
    h0, c0 = cell(backward, "h0"), cell(backward, "c0")
    H = h0.shape[-1]

    def build(p):
        xs, w_t, b, h, c = p(xg), p(w_hh).permute(1, 0), p(b_hh), p(h0), p(c0)
        hs, cs = [], []
        for t in range(xg.shape[0]):
            hg = h @ w_t if b is None else h @ w_t + b
            h, c = step(xs[t], hg, h, c, H)
            hs.append(h)
            cs.append(c)
        states = stack(hs)
        return states if c0 is None else stack([states, stack(cs)])

    return build


def _projected_lstm(node, backward):
    """The LSTM with projections: the LSTM step on h (N, P), its new hidden state m W_hr^T;
    the hidden and cell states side by side (T, N, P + H)."""
    from tricycle.ops import concatenate, stack

    xg, w_hh, b_hh = cell(backward, "xg"), cell(backward, "w_hh"), cell(backward, "b_hh")
    w_hr, h0, c0 = cell(backward, "w_hr"), cell(backward, "h0"), cell(backward, "c0")
    H = c0.shape[-1]

    def build(p):
        xs, w_t, b, h, c = p(xg), p(w_hh).permute(1, 0), p(b_hh), p(h0), p(c0)
        w_hr_t, hs, cs = p(w_hr).permute(1, 0), [], []
        for t in range(xg.shape[0]):
            hg = h @ w_t if b is None else h @ w_t + b
            m, c = _lstm_step(xs[t], hg, h, c, H)
            h = m @ w_hr_t
            hs.append(h)
            cs.append(c)
        return concatenate([stack(hs), stack(cs)], -1)

    return build


# ------------------------------------------------------------------ linear algebra
def _inv(node, fn, g):
    """d(A^-1) = -X^T g X^T, X = A^-1 (the node: its own rule differentiates it again)."""
    x_t = _transposed(node)
    return -(x_t @ g @ x_t)


def _det(node, fn, g):
    """g det(A) A^-T (A^-1 differentiable: ``inv``'s rule)."""
    A = node.args[0]
    return _matrices(g * node) * _transposed(_linalg().inv(A))


def _slogdet(node, fn, g):
    """g A^-T."""
    return _matrices(g) * _transposed(_linalg().inv(node.args[0]))


def _solve(which: int):
    """X = A^-1 B: dB = A^-T g (summed over B's broadcast axes), dA = -dB X^T (over A's);
    a triangular solve's (its A read as a triangle) in ``second_order_solve``."""

    def rule(node, fn, g):
        if second_order_solve.reads_a_triangle(node):  # solve_triangular's: its own rule
            return second_order_solve.triangular(node, which, g)
        A, B = node.args
        dB = _linalg().solve(_transposed(A), g)
        if which == 1:
            return summed_to(dB, B.shape)
        return summed_to(-(dB @ _transposed(node)), A.shape)

    return rule


def _cross(which: int):
    """d(a x b): da = b x g, db = g x a (each summed over its broadcast axes)."""

    def rule(node, fn, g):
        a, b = node.args
        axis = cell(fn, "axis")
        crossed = _linalg().cross(b, g, dim=axis) if which == 0 else _linalg().cross(g, a, dim=axis)
        return summed_to(crossed, node.args[which].shape)

    return rule


def _cholesky(node, fn, g):
    """dA = L^-T S L^-1, S = (G + tril(G, -1)^T) / 2, G = tril(L^T g) (the op's formula, with
    L the node and L^-1 ``inv``'s, both differentiable)."""
    factories = importlib.import_module("tricycle.factories")
    tril = factories.tril(_transposed(node) @ g)
    symmetric = (tril + _transposed(factories.tril(tril, -1))) * 0.5
    inverse = _linalg().inv(node)
    return _transposed(inverse) @ symmetric @ inverse


# ------------------------------------------------------------------ linear: adjoints
def _upsample_nearest(node, fn, g):
    """dx sums each block of g; the adjoint copies each entry over its block again."""
    blocks, block_axes, xp, shape = cell(fn, "blocks"), cell(fn, "block_axes"), g.xp, node.shape
    ones = tuple(1 if i in block_axes else n for i, n in enumerate(blocks))

    def copied(d):
        return xp.ascontiguousarray(xp.broadcast_to(d.reshape(ones), blocks)).reshape(shape)

    return linear(g, fn, copied, "upsample_nearest")


def _unfold(node, fn, g):
    """dx is col2im of g; the adjoint is im2col again."""
    fold = importlib.import_module("tricycle.nn.fold")
    xp, kernel, dilation = cell(fn, "xp"), cell(fn, "kernel"), cell(fn, "dilation")
    padding, stride = cell(fn, "padding"), cell(fn, "stride")
    return linear(g, fn, lambda d: fold.columns(xp, d, kernel, dilation, padding, stride), "unfold")


def _fold(node, fn, g):
    """dx is im2col of g; the adjoint is col2im again."""
    fold = importlib.import_module("tricycle.nn.fold")
    xp, kernel, dilation = cell(fn, "xp"), cell(fn, "kernel"), cell(fn, "dilation")
    padding, stride, size = cell(fn, "padding"), cell(fn, "stride"), node.shape[2:]
    return linear(
        g, fn, lambda d: fold.images(xp, d, size, kernel, dilation, padding, stride), "fold"
    )


def _logit(node, fn, g):
    """g / (p (1 - p)), 0 where p was clamped (outside [eps, 1 - eps])."""
    from tricycle.ops import where

    x, eps = node.args[0], cell(fn, "eps")
    slope = 1 / (x * (1 - x))
    if eps is None:
        return g * slope
    a = x.array
    return g * where((a < eps) | (a > 1 - eps), constant(x, x.xp.zeros((), x.dtype)), slope)


# ------------------------------------------------------------------ finding the keys
def rules(t) -> tuple[dict, dict]:
    """({key: rule} for ``second_order_more.FUSED``: the recurrence, keyed by the code of its
    shared backward; {code of a back_fn: rule} of the others), every op run once on small
    tensors made by ``t(*shape)``."""
    recurrent = importlib.import_module("tricycle.nn.recurrent_cells")
    interpolate = importlib.import_module("tricycle.nn.interpolate")
    fold = importlib.import_module("tricycle.nn.fold")
    pointwise = importlib.import_module("tricycle.torch_pointwise")
    linalg = _linalg()
    layer = recurrent.recurrence("rnn", t(2, 1, 2), t(2, 2), t(2), t(1, 2), None)
    KEYS["recurrence"] = key = cell(layer.back_fns[0], "backward").__code__
    fused = {key: second_order_fused.fused_rule(_recurrence)}
    projection = importlib.import_module("tricycle.nn.lstm_projection")
    projected = projection.projected_lstm_recurrence(
        t(1, 1, 4), t(4, 1), None, t(1, 1), t(1, 1), t(1, 1)
    )
    KEYS["lstm_proj"] = key = cell(projected.back_fns[0], "backward").__code__
    fused[key] = second_order_fused.fused_rule(_projected_lstm)
    square, pair = t(2, 2), (t(2, 3), t(2, 3))
    made = {
        "inv": (linalg.inv(square), (_inv,)),
        "det": (linalg.det(square), (_det,)),
        "slogdet": (linalg.slogdet(square).logabsdet, (_slogdet,)),
        "solve": (linalg.solve(square, t(2, 1)), (_solve(0), _solve(1))),
        "cross": (linalg.cross(*pair), (_cross(0), _cross(1))),
        "cholesky": (linalg.cholesky(square @ square.permute(1, 0) + 1), (_cholesky,)),
        "upsample_nearest": (interpolate.upsample_nearest(t(1, 1, 2)), (_upsample_nearest,)),
        "unfold": (fold.unfold(t(1, 1, 2, 2), 1), (_unfold,)),
        "fold": (fold.fold(t(1, 1, 4), (2, 2), 1), (_fold,)),
        "logit": (pointwise.logit(t(2) * 0.5), (_logit,)),
    }
    plain = {}
    for name, (out, rules_) in made.items():
        for i, rule in enumerate(rules_):
            KEYS[name if i == 0 else f"{name}[{i}]"] = key = out.back_fns[i].__code__
            plain[key] = rule
    return fused, plain
