"""Double backward (``create_graph=True``) of the fused ops (tricycle/second_order_more.py)
against torch, in float64: each rule's first and second derivatives on a function of its op,
a WGAN-GP gradient penalty on a small DCGAN-style convolutional critic, and a check that
every rule in ``second_order_more.KEYS`` is met."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_as_torchs,
    assert_first_and_second_as_torchs,
    critic_penalties,
    exercise,
    linear_weights,
    rules_met,
)
from tricycle import second_order_more

torch = pytest.importorskip("torch")


# name -> (function of the inputs giving a scalar, input shapes)
CASES = {
    "conv1d": (
        lambda x, w, b: (F_of(x).conv1d(x, w, b, stride=2, padding=1) ** 2).sum(),
        [(2, 2, 7), (3, 2, 3), (3,)],
    ),
    "conv2d": (
        lambda x, w: (F_of(x).conv2d(x, w, padding=1, dilation=2, stride=2) ** 2).sum(),
        [(2, 2, 6, 5), (4, 2, 2, 3)],
    ),
    "conv2d_groups": (
        lambda x, w, b: (F_of(x).conv2d(x, w, b, groups=2, padding="same") ** 3).sum(),
        [(1, 4, 4, 4), (6, 2, 2, 2), (6,)],
    ),
    "conv1d_unbatched": (
        lambda x, w: F_of(x).conv1d(x, w, stride=3).exp().sum(),
        [(2, 8), (2, 2, 2)],
    ),
    "pad": (
        lambda x: (
            (F_of(x).pad(x, (2, -1), "reflect") ** 2).sum()
            + (F_of(x).pad(x, (1, 1, 0, 2), "constant", 3.0) ** 3).sum()
            + (F_of(x).pad(x, (1, 2), "circular") * F_of(x).pad(x, (0, 3), "replicate")).sum()
        ),
        [(2, 3, 4)],
    ),
    "conv_transpose": (
        lambda x, w, b: (
            (
                F_of(x).conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
                ** 2
            ).sum()
            + (F_of(x).conv_transpose1d(x[0, :, 0], w[:, :, 0], dilation=2) ** 3).sum()
        ),
        [(1, 4, 3, 3), (4, 1, 3, 2), (2,)],
    ),
    "gelu": (
        lambda x: (F_of(x).gelu(x) * x).sum() + (F_of(x).gelu(x, approximate="tanh") ** 2).sum(),
        [(7,)],
    ),
    "elu_softplus": (
        lambda x: (
            (F_of(x).elu(x, 0.7) * F_of(x).selu(x) + F_of(x).celu(x, 0.5) ** 2).sum()
            + (F_of(x).softplus(x, 2.0, 1.0) ** 2).sum()
        ),
        [(8,)],
    ),
}


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's, of its own copy
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_of_each_rule_as_torchs(name):
    fn, shapes = CASES[name]
    values = arrays(*shapes, seed=len(name))
    if name in ("gelu", "elu_softplus"):  # both signs, and past softplus's threshold
        values = arrays(*shapes, low=-2.5, high=2.5, seed=len(name))
    assert_first_and_second_as_torchs(fn, values, arrays(*shapes, low=-1, high=1, seed=1))


def test_every_rule_is_exercised(monkeypatch):
    """Each rule (``second_order_more.KEYS``) is met by one of the cases above."""
    used = rules_met(monkeypatch)
    exercise(CASES)
    third_derivatives(tricycle)
    assert not {name for name, key in second_order_more.KEYS.items() if key not in used}


def third_derivatives(lib):
    """d^3/dx^3 of sum(GeLU(x)) (exact) and of a conv's cube, through the recorded rules."""
    x = lib.tensor(arrays((6,), low=-2, high=2)[0], requires_grad=True)
    (g,) = lib.autograd.grad(F_of(x).gelu(x).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x, create_graph=True)
    h.sum().backward()
    y, w = (lib.tensor(v, requires_grad=True) for v in arrays((1, 2, 5), (2, 2, 2)))
    (gy,) = lib.autograd.grad((F_of(y).conv1d(y, w) ** 3).sum(), y, create_graph=True)
    (hw,) = lib.autograd.grad((gy * gy).sum(), w, create_graph=True)
    (hw**2).sum().backward()
    return [v.detach().numpy() for v in (g, h, x.grad, gy, hw, y.grad, w.grad)]


def test_third_derivatives_as_torchs():
    for a, b in zip(third_derivatives(tricycle), third_derivatives(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def conv_critic(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 8, 4, 2, 1),
                         nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(8 * 2 * 2, 1))  # fmt: skip


def test_wgan_gp_penalty_on_a_conv_critic_as_torchs():
    """DCGAN-style critic on 8x8 images: the penalty ((|grad_x D(x_hat)| - 1)^2).mean()
    backpropagated to the critic's parameters (and x_hat), equal to torch's."""
    ours, results = critic_penalties(conv_critic, (3, 1, 8, 8))
    assert len(results[0]) == len(results[1]) == 3 + 6
    assert results[0][-1] is results[1][-1] is None  # the head's bias: no part in the penalty
    # the critic is piecewise linear: x_hat and the conv biases reach the penalty only through
    # LeakyReLU's slopes, whose derivative is 0: torch's gradients are zeros where ours are None
    for i in (2, 4, 6):
        assert results[0][i] is None and not results[1][i].any()
    assert_as_torchs(*results, linear_weights(ours, 3), rtol=1e-9, atol=1e-12)
