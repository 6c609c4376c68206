"""Double backward of fused ops by recomputation (``create_graph=True``: ``tricycle.second_order``).

A fused op (layer norm, batch norm, a pooling, a loss) computes its output and its gradients
with array formulas, so the graph holds one node whose back_fns no walk can differentiate.
Its rule here rebuilds the op's output from its inputs with tricycle's differentiable ops
(``build``) and differentiates that with the walk itself (``gradients``): the cost is paid
only under create_graph, and the op's own code and its ordinary backward stay as they are.

The rebuilt graph starts from leaf proxies of the op's inputs (so that the walk stops there
and never follows an input's own history), which are then made identity nodes of the inputs:
the gradients it returns hang off the inputs, and every higher derivative goes through them.

A quantity the forward computed from a constant the closures do not keep (a norm's ``eps``)
is rebuilt from the saved one: rstd = 1 / sqrt(var + eps) becomes (var + c)^(-1/2) with the
constant c = 1 / rstd^2 - var, whose value is the saved rstd and whose derivatives in var are
rstd's, whatever eps was.
"""

import importlib
import threading

from tricycle.second_order_base import Linear, cell, constant

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)
# this thread's (node, g, value) of the last node whose inputs' gradients were computed
# together, for its other inputs' rules: one tuple per thread, so that another thread's walk
# never mixes in; forgotten when a walk ends
_last = threading.local()


def forget() -> None:
    """Drop this thread's memo (and the graph it holds): ``second_order.backward`` calls it
    when a walk ends."""
    _last.entry = None


def remembered(node, g, compute):
    """``compute()``, once for ``node`` and its output's gradient ``g``: a rule that finds
    every input's gradient at once (a rebuilt op, a custom Function) computes it for the
    first input the walk meets and reads it back for the others."""
    entry = getattr(_last, "entry", None)
    if entry is not None and entry[0] is node and entry[1] is g:
        return entry[2]
    value = compute()  # (a walk of its own may run, and forget, in here)
    _last.entry = (node, g, value)
    return value


def gradients(node, build, g) -> dict:
    """{id(input): its gradient Tensor} of ``node``, from the output's gradient ``g``:
    ``build(proxy)`` rebuilds node's output from ``proxy(input)`` (a leaf of the input's
    value, or the input itself where it needs no gradient) with differentiable ops."""
    return remembered(node, g, lambda: _rebuilt_gradients(node, build, g))


def _rebuilt_gradients(node, build, g) -> dict:
    # the walk is the module above this one's rules: reached by name, not in an import cycle
    second_order = importlib.import_module("tricycle.second_order")
    proxies = {
        id(arg): node.new(arg.array, requires_grad=True, name="input")
        for arg in node.args
        if arg.requires_grad
    }

    def proxy(t):
        return None if t is None else proxies.get(id(t), t)

    out = build(proxy)
    if out.shape != node.shape:
        raise RuntimeError(
            f"backward of {node.name} (create_graph=True): its rebuilt output has shape "
            f"{out.shape}, the op's {node.shape}"
        )
    wanted = {id(p) for p in proxies.values()}
    captured = second_order.backward(out, g, retain_graph=True, wanted=wanted)
    grads = {}
    for arg in node.args:
        p = proxies.get(id(arg))
        if p is None:
            continue
        p.args, p.back_fns = (arg,), (Linear(_identity, _identity),)  # the proxy joins x
        found = captured.get(id(p))
        grads[id(arg)] = found if found is not None else constant(node, g.xp.zeros_like(arg.array))
    return grads


def _identity(d):
    return d


def _offset(saved_rstd, var):
    """c with (var + c)^(-1/2) the saved rstd: the eps the forward added (see the module)."""
    return constant(var, 1 / (saved_rstd * saved_rstd) - var.array)


def _normalised(centred, var, saved_rstd):
    return centred * (var + _offset(saved_rstd, var)) ** -0.5


# ------------------------------------------------------------------ the builders
def _layer_norm(node, backward):
    x, gamma, args = cell(backward, "x"), cell(backward, "gamma"), cell(backward, "args")
    rstd = cell(backward, "rstd")

    def build(p):
        xs = p(x)
        centred = xs - xs.mean(axis=-1, keepdims=True)
        y = _normalised(centred, (centred * centred).mean(axis=-1, keepdims=True), rstd) * p(gamma)
        return y if len(args) == 2 else y + p(args[2])

    return build


def _rms_norm(node, backward):
    x, gamma, rstd = cell(backward, "x"), cell(backward, "gamma"), cell(backward, "rstd")

    def build(p):
        xs = p(x)
        return _normalised(xs, (xs * xs).mean(axis=-1, keepdims=True), rstd) * p(gamma)

    return build


def _per_channel(y, gamma, beta, C):
    """y (N, C, R) scaled and shifted by the per-channel gamma and beta (either may be None)."""
    if gamma is not None:
        y = y * gamma.reshape(C, 1)
    return y if beta is None else y + beta.reshape(C, 1)


def _batch_norm(node, backward):
    x, gamma, beta = cell(backward, "x"), cell(backward, "gamma"), cell(backward, "beta")
    N, C, R = cell(backward, "N"), cell(backward, "C"), cell(backward, "rest")
    rstd, xhat = cell(backward, "rstd"), cell(backward, "xhat")
    batch_statistics = cell(backward, "batch_statistics")

    def build(p):
        x3 = p(x).reshape(N, C, R)
        if batch_statistics:
            centred = x3 - x3.mean(axis=(0, 2), keepdims=True)
            var = (centred * centred).mean(axis=(0, 2), keepdims=True)
            xh = _normalised(centred, var, rstd.reshape(1, C, 1))
        else:  # fixed statistics: xhat is linear in x, anchored at the saved value
            anchor = constant(x, x.array.reshape(N, C, R))
            xh = constant(x, xhat) + (x3 - anchor) * constant(x, rstd.reshape(1, C, 1))
        return _per_channel(xh, p(gamma), p(beta), C).reshape(x.shape)

    return build


def _group_norm(node, backward):
    x, gamma, beta = cell(backward, "x"), cell(backward, "gamma"), cell(backward, "beta")
    N, C, S = cell(backward, "N"), cell(backward, "C"), cell(backward, "S")
    G, rstd = cell(backward, "num_groups"), cell(backward, "rstd")

    def build(p):
        xg = p(x).reshape(N, G, -1)
        centred = xg - xg.mean(axis=-1, keepdims=True)
        var = (centred * centred).mean(axis=-1, keepdims=True)
        xh = _normalised(centred, var, rstd.reshape(N, G, 1)).reshape(N, C, S)
        return _per_channel(xh, p(gamma), p(beta), C).reshape(x.shape)

    return build


def fused_rule(builder):
    """A rule of ``second_order_more.FUSED`` (node, the op's shared backward, input i, g)."""

    def rule(node, backward, i, g):
        return gradients(node, builder(node, backward), g)[id(node.args[i])]

    return rule


def plain_rule(builder):
    """A rule of a plain back_fn (node, fn, g) whose op is rebuilt by ``builder(node, fn)``
    (``second_order_shapes`` and ``second_order_final`` make theirs with it too)."""

    def rule(node, fn, g):
        i = next(k for k, f in enumerate(node.back_fns) if f is fn)
        return gradients(node, builder(node, fn), g)[id(node.args[i])]

    return rule


def _max_pool(node, fn):
    """The output is x at each window's (first) largest element: a differentiable index, at
    torch's indices (the reference's: a kernel's own index may differ), found by pooling
    again; ``ceil_mode`` is the one whose output has the node's shape."""
    pooling = importlib.import_module("tricycle.nn.pooling")
    x, xp = cell(fn, "x"), cell(fn, "xp")
    kernel, stride, padding = cell(fn, "kernel"), cell(fn, "stride"), cell(fn, "padding")
    dilation = getattr(cell(fn, "backward"), "keywords", {}).get("dilation", 1)
    plain = constant(node, x.array)
    for ceil_mode in (False, True):
        out, at = pooling.max_pool(plain, kernel, stride, padding, dilation, ceil_mode, True)
        if out.shape == node.shape:
            break
    N, C = x.shape[:2]
    flat = at.array.reshape(N, C, -1)
    rows = xp.arange(N).reshape(N, 1, 1), xp.arange(C).reshape(1, C, 1)

    def build(p):
        return p(x).reshape(N, C, -1)[rows[0], rows[1], flat].reshape(node.shape)

    return build


def _cross_entropy(node, fn):
    """Mean over the counted rows of -log_softmax(logits)[label]."""
    functions = importlib.import_module("tricycle.functions")
    loss_reduction = importlib.import_module("tricycle.loss_reduction")
    logits, labels, xp = cell(fn, "logits"), cell(fn, "labels"), cell(fn, "xp")
    safe, valid = loss_reduction.labels_and_mask(xp, labels, cell(fn, "ignore_index"))
    C = logits.shape[-1]
    picked = (xp.arange(C) == safe[:, None]).astype(logits.dtype)  # (N, C) one-hot
    if valid is not None:
        picked = picked * valid[:, None]
    count = max(int(picked.sum()), 1)  # (only under create_graph: a read-back is fine)

    def build(p):
        z = p(node.args[0])
        logp = functions.LogSoftmax()(z.reshape(-1, C))
        return (logp * constant(z, picked)).sum() * (-1 / count)

    return build


def _mean_squared_error(node, fn):
    def build(p):
        pred, target = (p(t) for t in node.args)
        diff = pred - target
        return (diff * diff).sum() / diff.size

    return build


def _tree_product(rows):
    """The product over the last axis of ``rows`` (..., n), halves multiplied pairwise: log n
    differentiable products, exact where an entry is 0."""
    from tricycle.ops import concatenate

    while rows.shape[-1] > 1:
        n, h = rows.shape[-1], rows.shape[-1] // 2
        paired = rows[..., :h] * rows[..., h : 2 * h]
        rows = paired if n % 2 == 0 else concatenate([paired, rows[..., 2 * h :]], -1)
    return rows[..., 0]


def _prod(node, fn):
    """The product over the axes, the reduced axes moved last and multiplied pairwise."""
    x, axes = cell(fn, "x"), cell(fn, "axes")
    kept = [a for a in range(x.ndim) if a not in axes]

    def build(p):
        moved = p(x).permute(*kept, *axes) if x.ndim else p(x).reshape(1)
        return _tree_product(moved.reshape(*(x.shape[a] for a in kept), -1)).reshape(node.shape)

    return build


def _cumprod(node, fn):
    """The running product as a scan: at step s = 1, 2, 4, ... each entry is multiplied by
    the one s before it (log n differentiable products, exact where an entry is 0)."""
    from tricycle.ops import concatenate

    x, axis = cell(fn, "x"), cell(fn, "axis")
    at = (slice(None),) * axis

    def build(p):
        out, n, s = p(x).reshape(node.shape), node.shape[axis], 1
        while s < n:
            head, tail = out[(*at, slice(0, s))], out[(*at, slice(s, None))]
            out = concatenate([head, tail * out[(*at, slice(0, n - s))]], axis)
            s *= 2
        return out

    return build


def _sdpa(node, backward):
    """softmax(q k^T scale + bias, hidden keys at -inf) (times the dropout's multiplier) v,
    the query heads grouped by the key/value head they share; a learnt mask (a fourth input)
    is added as itself, its hidden keys (-inf) as constants."""
    functions = importlib.import_module("tricycle.functions")
    sdpa = importlib.import_module("tricycle.nn.sdpa")
    _, _, _, bias, _, _, causal, window, scale, dropout = cell(backward, "saved")
    q, k, v, *learnt = node.args
    (B, H, Tq, D), (Hkv, Tk), xp = q.shape, k.shape[1:3], node.xp
    scale = D**-0.5 if scale is None else scale
    extra = xp.zeros((1, 1, 1, Tq, Tk), q.dtype)
    if bias is not None:  # a learnt mask joins in build: here only where it hides
        hidden = xp.where(xp.isneginf(bias), -xp.inf, 0).astype(q.dtype) if learnt else bias
        extra = extra + sdpa._grouped_bias(hidden, Hkv)
    seen = sdpa.visible_keys(xp, Tq, Tk, causal, window)
    if seen is not None:
        extra = xp.where(seen, extra, -xp.inf)
    if bool(xp.isneginf(extra).all(axis=-1).any()):  # (only under create_graph: a read-back)
        raise NotImplementedError(
            "backward with create_graph=True: the second derivative of sdpa where a query "
            f"sees no key (q {q.shape}, k {k.shape}) is not implemented"
        )
    multiplier = None
    if dropout.probability:
        multiplier = sdpa._dropout_multiplier(xp, dropout, (B, H, Tq, Tk), Hkv, q.dtype)

    def build(p):
        from tricycle.ops import swapaxes

        qs = p(q).reshape(B, Hkv, H // Hkv, Tq, D)
        ks, vs = p(k).reshape(B, Hkv, 1, Tk, D), p(v).reshape(B, Hkv, 1, Tk, v.shape[-1])
        scores = qs @ swapaxes(ks, -1, -2) * scale + constant(node, extra)
        if learnt:
            mask = p(learnt[0])
            scores = scores + sdpa._grouped_bias(
                mask.reshape(*(1,) * (4 - mask.ndim), *mask.shape), Hkv
            )
        probs = functions.Softmax()(scores)
        if multiplier is not None:
            probs = probs * constant(node, multiplier)
        return (probs @ vs).reshape(node.shape)

    return build


# ------------------------------------------------------------------ finding the keys
def rules(t) -> tuple[dict, dict]:
    """({key: rule} for ``second_order_more.FUSED``, keyed by the code of the backward that a
    fused op's back_fns share; {key: rule} of plain back_fns, keyed by their code): every op
    run once on small tensors made by ``t(*shape)``."""
    norms = importlib.import_module("tricycle.norms")
    batch_norm = importlib.import_module("tricycle.nn.batch_norm")
    group_norm = importlib.import_module("tricycle.nn.group_norm")
    pooling = importlib.import_module("tricycle.nn.pooling")
    loss = importlib.import_module("tricycle.loss")
    x3 = t(2, 2, 3)
    fused = {
        "layer_norm": (norms.layer_norm(t(2, 3), t(3), t(3)), fused_rule(_layer_norm)),
        "rms_norm": (norms.rms_norm(t(2, 3), t(3)), fused_rule(_rms_norm)),
        "batch_norm": (batch_norm.batch_norm(x3, t(2), t(2))[0], fused_rule(_batch_norm)),
        "group_norm": (group_norm.group_norm(x3, 1, t(2), t(2)), fused_rule(_group_norm)),
    }
    sdpa = importlib.import_module("tricycle.nn.sdpa").scaled_dot_product_attention
    fused["sdpa"] = (sdpa(t(1, 1, 2, 2), t(1, 1, 2, 2), t(1, 1, 2, 2)), fused_rule(_sdpa))
    reduce = importlib.import_module("tricycle.reduce")
    squared = loss.MeanSquaredError()(t(2, 3), t(2, 3))
    labels = x3.new(x3.xp.asarray([0, 1]), requires_grad=False)
    plain = {
        "max_pool": (pooling.max_pool(t(1, 1, 4, 4), 2), (plain_rule(_max_pool),)),
        "cross_entropy": (loss.CrossEntropy()(labels, t(2, 3)), (plain_rule(_cross_entropy),)),
        "mean_squared_error": (squared, (plain_rule(_mean_squared_error),) * 2),
        "prod": (reduce.prod(t(2, 3), 1), (plain_rule(_prod),)),
        "cumprod": (reduce.cumprod(t(2, 3), 1), (plain_rule(_cumprod),)),
    }
    shared, own = {}, {}
    for name, (out, rule) in fused.items():
        KEYS[name] = key = cell(out.back_fns[0], "backward").__code__
        shared[key] = rule
    for name, (out, rules_) in plain.items():
        for i, rule in enumerate(rules_):
            KEYS[name if i == 0 else f"{name}[{i}]"] = key = out.back_fns[i].__code__
            own[key] = rule
    return shared, own
