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

from tricycle import (
    second_order_complex,
    second_order_final,
    second_order_function,
    second_order_fused,
    second_order_linalg,
    second_order_linear,
    second_order_losses,
    second_order_pointwise,
    second_order_sampling,
    second_order_scatter,
    second_order_shapes,
)
from tricycle.second_order_base import cell, constant, linear

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
    """y = x * w + b (a correlation): dx is g's transposed convolution with w, dw the
    correlation of x with g (``_kernel_gradient``), db g summed over all but the channels."""
    transpose = importlib.import_module("tricycle.nn.conv_transpose").conv_transpose
    x, w = cell(backward, "x"), cell(backward, "weights")
    stride, padding, dilation, groups = cell(backward, "geometry")
    if i == 2:
        return g.sum(axis=(0, *range(2, g.ndim)))
    if i == 1:
        return _kernel_gradient(x, g, w.shape[2:], stride, padding, dilation, groups)
    reached = (
        (o - 1) * s - 2 * p + d * (k - 1) + 1
        for o, s, p, d, k in zip(g.shape[2:], stride, padding, dilation, w.shape[2:])
    )
    extra = tuple(size - r for size, r in zip(x.shape[2:], reached))
    return transpose(g, w, None, stride, padding, extra, groups, dilation)


def _conv_transpose(node, backward, i, g):
    """y = C^T x + b with C the convolution by w: dx = C g (a convolution of g with w), dw the
    correlation of g (C's input) with x (its output), db g summed over all but the channels."""
    conv = importlib.import_module("tricycle.nn.conv").conv
    x, w = cell(backward, "x"), cell(backward, "weights")
    stride, padding, dilation, groups = cell(backward, "geometry")
    if i == 2:
        return g.sum(axis=(0, *range(2, g.ndim)))
    if i == 1:
        return _kernel_gradient(g, x, w.shape[2:], stride, padding, dilation, groups)
    return conv(g, w, None, stride, padding, dilation, groups)


def _kernel_gradient(inputs, grads, kernel, stride, padding, dilation, groups):
    """dw[o, c, k] = sum_{n, l} grads[n, o, l] inputs[n, c, l s + k d] (inputs padded), per
    group: a correlation of the inputs (channels as the batch) with the gradients (samples as
    the channels) at stride d and dilation s, cut to the kernel's size; groups stacked."""
    from tricycle.ops import concatenate

    conv = importlib.import_module("tricycle.nn.conv").conv
    swap = (1, 0, *range(2, inputs.ndim))
    c, o = inputs.shape[1] // groups, grads.shape[1] // groups
    pieces = []
    for j in range(groups):
        a = inputs if groups == 1 else inputs[:, j * c : (j + 1) * c]
        b = grads if groups == 1 else grads[:, j * o : (j + 1) * o]
        wide = conv(a.permute(*swap), b.permute(*swap), None, dilation, padding, stride)
        wide = wide.permute(*swap)  # (o, c, *wide kernel)
        if wide.shape[2:] != kernel:  # the stride left positions past the kernel
            wide = wide[(slice(None), slice(None), *(slice(0, k) for k in kernel))]
        pieces.append(wide)
    return pieces[0] if groups == 1 else concatenate(pieces, 0)


# ------------------------------------------------------------------ padding
def _pad(node, fn, g):
    """F.pad's back_fn is linear: A^T of the padding A (its crop, then each axis padded with
    zeros, reflected, replicated or wrapped); its adjoint is A with the value 0."""

    padding = importlib.import_module("tricycle.nn.padding")
    axes, crop, mode, xp = cell(fn, "axes"), cell(fn, "crop"), cell(fn, "mode"), g.xp

    def padded(d):
        d = d if crop is None else d[crop]
        for axis, left, right in axes:
            d = padding.pad_axis_forward(xp, d, axis, left, right, mode, 0.0)
        return d

    return linear(g, fn, padded, "pad")


# ------------------------------------------------------------------ smooth activations
_SQRT_HALF = 0.7071067811865476  # 1 / sqrt 2


def _normal_density(x):
    """phi(x) = e^(-x^2 / 2) / sqrt(2 pi), differentiable."""
    activation = importlib.import_module("tricycle.activation")
    return (x * x * -0.5).exp() * activation._INV_SQRT_2PI


def _normal_cdf(x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2 as a node whose back_fn, d phi(x), has a rule."""
    activation = importlib.import_module("tricycle.activation")
    a, xp = x.array, x.xp
    slope = xp.exp(a * a * -0.5) * activation._INV_SQRT_2PI
    value = 0.5 * (1 + activation.erf(xp, a * _SQRT_HALF))
    return x.new(value, args=(x,), back_fns=(lambda d: d * slope,), name="normal_cdf")


def _gelu(node, fn, g):
    """GeLU'(x) = Phi(x) + x phi(x); tanh form, with u = sqrt(2 / pi) (x + c x^3) and
    t = tanh u: (1 + t) / 2 + x (1 - t^2) u' / 2, u' = sqrt(2 / pi) (1 + 3 c x^2)."""
    activation = importlib.import_module("tricycle.activation")
    x = cell(fn, "x")
    if not activation._is_tanh(cell(fn, "approximate")):
        return g * (_normal_cdf(x) + x * _normal_density(x))
    scale, cubic = activation._TANH_SCALE, activation._TANH_CUBIC
    t = ((x + x * x * x * cubic) * scale).tanh()
    du = (x * x * (3 * cubic) + 1) * scale
    return g * ((t + 1) * 0.5 + x * (1 - t * t) * du * 0.5)


def _exponential_linear(node, fn, g):
    """ELU, SELU, CELU: slope scale where x > 0, else k e^(input_scale min(x, 0))."""
    from tricycle.ops import where

    x, positive = node.args[0], cell(fn, "positive")
    scale, input_scale, k = cell(fn, "scale"), cell(fn, "input_scale"), cell(fn, "k")
    below = (x.minimum(constant(node, x.xp.zeros((), x.dtype))) * input_scale).exp() * k
    return g * where(positive, constant(node, x.xp.asarray(scale, x.dtype)), below)


def _softplus(node, fn, g):
    """Softplus: slope sigmoid(beta x), or 1 where beta x passes the threshold."""
    from tricycle.ops import where

    x, one = node.args[0], constant(node, node.xp.ones((), node.dtype))
    return g * where(cell(fn, "linear"), one, (x * cell(fn, "beta")).sigmoid())


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
    transpose = importlib.import_module("tricycle.nn.conv_transpose").conv_transpose
    add("conv_transpose", transpose(t(1, 2, 4), t(2, 3, 2), t(3)), _conv_transpose)
    shared = fused.shared_back_fns(lambda d: (d,), 1)[0]
    pad = importlib.import_module("tricycle.nn.padding").pad(t(2, 3), (1, -1), "reflect")
    activation = importlib.import_module("tricycle.activation")
    activations = importlib.import_module("tricycle.nn.activations")
    plain = {"pad": (pad, _pad), "normal_cdf": (_normal_cdf(t(3)), _normal_cdf_rule)}
    plain["gelu"] = (activation.GeLU()(t(3)), _gelu)
    plain["elu"] = (activations.ELU()(t(3)), _exponential_linear)
    plain["softplus"] = (activations.Softplus()(t(3)), _softplus)
    table = {shared.__code__: _fused}
    for name, (out, rule) in plain.items():
        KEYS[name] = out.back_fns[0].__code__
        table[KEYS[name]] = rule
    rebuilt, rebuilt_plain = second_order_fused.rules(t)  # the ops rebuilt from their inputs
    FUSED.update(rebuilt)
    table.update(rebuilt_plain)
    table.update(second_order_linear.rules(t))  # linear backwards: cumsum, sort, pools, ...
    table.update(second_order_losses.rules(t))  # the losses of loss_reduction.reduced
    table.update(second_order_function.rules(t))  # custom autograd.Functions
    table.update(second_order_pointwise.rules(t))  # elementwise slopes, norms, masks
    table.update(second_order_shapes.rules(t))  # masked fill, expand, scatter, rebuilt ones
    table.update(second_order_scatter.rules(t))  # scatter_reduce, index_put
    recurrent, final = second_order_final.rules(t)  # recurrent layers, linear algebra, ...
    FUSED.update(recurrent)
    table.update(final)
    table.update(second_order_linalg.rules(t))  # eigh, svd, qr, pinv, matrix_exp
    FUSED.update(second_order_sampling.rules(t))  # grid_sample, rebuilt
    table.update(second_order_complex.rules(t, table))  # complex ops (wraps linalg's, so last)
    return table


def _normal_cdf_rule(node, fn, g):
    return g * _normal_density(node.args[0])
