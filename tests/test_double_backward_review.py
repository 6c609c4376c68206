"""Double backward (``create_graph=True``) checked where the other double-backward test files
do not look: third derivatives of the rebuilt norms against torch's own formula written with
its differentiable ops (torch's fused ``layer_norm``/``batch_norm``/``instance_norm`` treat
their saved mean and rstd as constants in their double backward, so their third derivatives
are wrong: probed with torch 2.13), and a custom Function's gradients not kept alive by a
walk that skips one of its inputs."""

import gc
import weakref

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import F_of, arrays, lib_of
from tricycle import second_order_fused

torch = pytest.importorskip("torch")


def normalised(x, axes, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over ``axes``, with differentiable ops of either library."""
    if lib_of(x) is torch:
        centred = x - x.mean(axes, keepdim=True)
        return centred * ((centred * centred).mean(axes, keepdim=True) + eps) ** -0.5
    centred = x - x.mean(axis=axes, keepdims=True)
    return centred * ((centred * centred).mean(axis=axes, keepdims=True) + eps) ** -0.5


def per_channel(w):
    return w.reshape(-1, 1)


# name -> (tricycle's fused op, the same written with differentiable ops, input shapes)
NORMS = {
    "layer_norm": (
        lambda x, w, b: F_of(x).layer_norm(x, (4,), w, b),
        lambda x, w, b: normalised(x, (-1,)) * w + b,
        [(2, 4), (4,), (4,)],
    ),
    "layer_norm_2d": (
        lambda x, w, b: F_of(x).layer_norm(x, (2, 3), w, b),
        lambda x, w, b: normalised(x, (-2, -1)) * w + b,
        [(2, 2, 3), (2, 3), (2, 3)],
    ),
    "batch_norm": (
        lambda x, w, b: F_of(x).batch_norm(x, None, None, w, b, training=True, eps=0.1),
        lambda x, w, b: normalised(x, (0, 2), 0.1) * per_channel(w) + per_channel(b),
        [(3, 2, 2), (2,), (2,)],
    ),
    "instance_norm": (
        lambda x, w, b: F_of(x).instance_norm(x, weight=w, bias=b),
        lambda x, w, b: normalised(x, (-1,)) * per_channel(w) + per_channel(b),
        [(2, 3, 4), (3,), (3,)],
    ),
    "group_norm": (
        lambda x, w, b: F_of(x).group_norm(x, 1, w, b),
        lambda x, w, b: normalised(x, (1, 2)) * per_channel(w) + per_channel(b),
        [(2, 3, 2), (3,), (3,)],
    ),
}


def three_orders(lib, op, values, weights) -> list:
    """sum(op(x, w, b)^3)'s gradients, then the gradients of their weighted sum, twice: three
    orders of derivatives, each in (x, w, b)."""
    xs = [lib.tensor(v, requires_grad=True) for v in values]
    out, found = (op(*xs) ** 3).sum(), []
    for k, ws in enumerate(weights):
        grads = lib.autograd.grad(out, xs, create_graph=k < 2)
        found += [g.detach().numpy() for g in grads]
        out = sum((g * lib.tensor(w)).sum() for g, w in zip(grads, ws))
    return found


@pytest.mark.parametrize("name", sorted(NORMS))
def test_third_derivatives_of_the_rebuilt_norms_as_torchs_formula(name):
    fused, formula, shapes = NORMS[name]
    values = arrays(*shapes, low=-1.5, high=1.5, seed=len(name))
    weights = [arrays(*shapes, low=-1, high=1, seed=k) for k in range(3)]
    ours = three_orders(tricycle, fused, values, weights)
    theirs = three_orders(torch, formula, values, weights)
    assert len(ours) == len(theirs) == 9
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    # the formula itself is tricycle's too: the fused op's rule agrees with it
    for a, b in zip(ours, three_orders(tricycle, formula, values, weights)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_a_function_keeps_no_gradient_after_a_walk_that_skips_an_input():
    """grad(..., a, create_graph=True) through a Function of (a, b): b's gradient, computed
    with a's, is not kept by the Function's node once the walk ends (nor anything else of
    the walk: the memo of the node whose gradients were computed together is forgotten)."""
    returned = []

    class Product(tricycle.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            grads = g * b, g * a
            returned.append(weakref.ref(grads[1]))
            return grads

    a, b = (tricycle.tensor(v, requires_grad=True) for v in arrays((3,), (3,)))
    y = Product.apply(a, b)
    (g,) = tricycle.autograd.grad((y * y).sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * (a * b * b).detach().numpy())
    gc.collect()
    assert len(returned) == 1 and returned[0]() is None
    assert second_order_fused._last.entry is None
    (gg,) = tricycle.autograd.grad(g.sum(), b)  # the graph of a's gradient is whole
    np.testing.assert_allclose(gg.numpy(), (4 * a * b).detach().numpy())
