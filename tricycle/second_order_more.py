"""More differentiable backwards for ``create_graph=True`` (``tricycle.second_order``): the
fused ops of the layer catalogue, whose back_fns share one code object
(``tricycle.fused.shared_back_fns``) and are told apart by the op's own ``backward``.

``rules()`` gives ``tricycle.second_order_rules`` the one rule of every fused back_fn; it
looks up the op's rule by the code of the ``backward`` it shares (``FUSED``). The ops sit in
the math layer, above this engine module: they are loaded by name when the table is built.
``KEYS`` names each op's key for the tests.
"""

import importlib

import numpy as np

from tricycle.second_order_rules import cell

FUSED: dict = {}  # code of a fused op's shared backward -> rule(node, backward, i, g)
KEYS: dict = {}  # a readable name -> its key in FUSED (for the tests)


def fused_rule_for(backward):
    """The rule of the fused op whose shared ``backward`` this is, or None."""
    return FUSED.get(getattr(backward, "__code__", None))


def _fused(node, fn, g):
    backward, i = cell(fn, "backward"), cell(fn, "i")
    rule = fused_rule_for(backward)
    if rule is None:
        raise NotImplementedError(
            f"backward with create_graph=True: the second derivative of {node.name or 'an op'} "
            f"(output shape {node.shape}; its input {i}) is not implemented; differentiate it "
            "once (create_graph=False) or write it with ops that have one"
        )
    return rule(node, backward, i, g)


# ------------------------------------------------------------------ convolution
def _conv(node, backward, i, g):
    """y = x * w + b (a correlation): dx is g's transposed convolution with w; dw[o, c, k] =
    sum_{n, l} g[n, o, l] x[n, c, l s + k d], a correlation of x (channels as batch) with g
    (samples as channels) at stride d and dilation s; db sums g over all but the channels."""
    conv_module = importlib.import_module("tricycle.nn.conv")
    transpose = importlib.import_module("tricycle.nn.conv_transpose").conv_transpose
    from tricycle.ops import concatenate

    x, w = cell(backward, "x"), cell(backward, "weights")
    stride, padding, dilation, groups = cell(backward, "geometry")
    n, kernel = w.ndim - 2, w.shape[2:]
    spatial = tuple(range(2, n + 2))
    if i == 2:
        return g.sum(axis=(0, *spatial))
    if i == 0:
        reached = (
            (o - 1) * s - 2 * p + d * (k - 1) + 1
            for o, s, p, d, k in zip(g.shape[2:], stride, padding, dilation, kernel)
        )
        extra = tuple(size - r for size, r in zip(x.shape[2:], reached))
        return transpose(g, w, None, stride, padding, extra, groups, dilation)
    swap = (1, 0, *spatial)
    c, o = x.shape[1] // groups, w.shape[0] // groups
    pieces = []
    for j in range(groups):
        xj = x if groups == 1 else x[:, j * c : (j + 1) * c]
        gj = g if groups == 1 else g[:, j * o : (j + 1) * o]
        wide = conv_module.conv(xj.permute(*swap), gj.permute(*swap), None, dilation, padding,
                                stride).permute(*swap)  # fmt: skip
        if wide.shape[2:] != kernel:  # the stride left positions past the kernel
            wide = wide[(slice(None), slice(None), *(slice(0, k) for k in kernel))]
        pieces.append(wide)
    return pieces[0] if groups == 1 else concatenate(pieces, 0)


# ------------------------------------------------------------------ padding
def _pad(node, fn, g):
    """F.pad's back_fn is linear: A^T of the padding A (its crop, then each axis padded with
    zeros, reflected, replicated or wrapped); its adjoint is A with the value 0."""
    from tricycle.second_order_rules import linear

    padding = importlib.import_module("tricycle.nn.padding")
    axes, crop, mode, xp = cell(fn, "axes"), cell(fn, "crop"), cell(fn, "mode"), g.xp

    def padded(d):
        d = d if crop is None else d[crop]
        for axis, left, right in axes:
            d = padding.pad_axis_forward(xp, d, axis, left, right, mode, 0.0)
        return d

    return linear(g, fn, padded, "pad")


# ------------------------------------------------------------------ finding the keys
def rules() -> dict:
    """{key: rule} for ``second_order_rules``' table, after filling ``FUSED`` by running each
    fused op once on small tensors."""
    from tricycle import fused
    from tricycle.tensor import Tensor

    rng = np.random.default_rng(0)

    def t(*shape):
        return Tensor(rng.uniform(0.5, 1.5, shape).astype(np.float32), requires_grad=True)

    def add(name, out, rule):
        backward = cell(out.back_fns[0], "backward")
        KEYS[name] = backward.__code__
        FUSED[backward.__code__] = rule

    conv_module = importlib.import_module("tricycle.nn.conv")
    add("conv", conv_module.conv(t(1, 2, 4), t(3, 2, 2), t(3)), _conv)
    shared = fused.shared_back_fns(lambda d: (d,), 1)[0]
    pad = importlib.import_module("tricycle.nn.padding").pad(t(2, 3), (1, -1), "reflect")
    KEYS["pad"] = pad.back_fns[0].__code__
    return {shared.__code__: _fused, KEYS["pad"]: _pad}
