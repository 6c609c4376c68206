"""Double backward (``create_graph=True``) of the fused ops rebuilt from their inputs
(tricycle/second_order_fused.py) against torch, in float64: each op's first and second
derivatives (LayerNorm, RMSNorm, BatchNorm in training and evaluation, GroupNorm,
InstanceNorm, max pooling, cross-entropy, MSE), MAML's inner step through a small conv net
with BatchNorm and max pooling, a WGAN-GP penalty on a critic with LayerNorm, and the same
rules on a GPU compared with the host."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_as_torchs,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    constant,
    critic_penalties,
    exercise,
    linear_weights,
    rules_met,
)
from tricycle import backend, second_order_fused

torch = pytest.importorskip("torch")


# name -> (function of the inputs giving a scalar, input shapes)
CASES = {
    "layer_norm": (
        lambda x, w, b: (
            (F_of(x).layer_norm(x, (4,), w, b) ** 3).sum()
            + (F_of(x).layer_norm(x, (4,), eps=0.1) * x).sum()
        ),
        [(3, 4), (4,), (4,)],
    ),
    "rms_norm": (
        lambda x, w: (F_of(x).rms_norm(x, (4,), w, eps=1e-3) ** 3).sum(),
        [(3, 4), (4,)],
    ),
    "batch_norm_train": (
        lambda x, w, b: (F_of(x).batch_norm(x, None, None, w, b, training=True) ** 3).sum(),
        [(3, 2, 4), (2,), (2,)],
    ),
    "batch_norm_eval": (
        lambda x, w, b: (
            F_of(x).batch_norm(
                x, constant(x, [0.2, -0.1]), constant(x, [0.5, 2.0]), w, b, training=False
            )
            ** 3
        ).sum(),
        [(3, 2, 4), (2,), (2,)],
    ),
    "group_norm": (
        lambda x, w, b: (F_of(x).group_norm(x, 2, w, b, eps=0.01) ** 3).sum(),
        [(3, 4, 3), (4,), (4,)],
    ),
    "instance_norm": (lambda x: (F_of(x).instance_norm(x) ** 3).sum(), [(3, 2, 4)]),
    "max_pool": (
        lambda x: (
            (F_of(x).max_pool2d(x, 2) ** 3).sum()
            + (F_of(x).max_pool2d(x, 3, 1, 1, dilation=2) ** 2).sum()
        ),
        [(1, 2, 4, 5)],
    ),
    "cross_entropy": (
        lambda x: F_of(x).cross_entropy(x * x, constant(x, [0, 2, 1])) ** 2,
        [(3, 4)],
    ),
    "mse_loss": (lambda x, y: F_of(x).mse_loss(x * y, y) ** 2, [(3, 4), (3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_of_each_rebuilt_op_as_torchs(name):
    fn, shapes = CASES[name]
    values = arrays(*shapes, low=-1.5, high=1.5, seed=len(name))
    assert_first_and_second_as_torchs(fn, values, arrays(*shapes, low=-1, high=1, seed=1))


def test_every_rebuilt_rule_is_exercised(monkeypatch):
    """Each rule of ``second_order_fused`` (its ``KEYS``) is met by one of the cases above."""
    used = rules_met(monkeypatch)
    exercise(CASES)
    mine = {name: key for name, key in second_order_fused.KEYS.items() if name not in REST}
    assert len(mine) == 8
    assert not {name for name, key in mine.items() if key not in used}


REST = ("sdpa", "prod", "cumprod")  # (met in tests/test_double_backward_rest.py)


def conv_net(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4 * 2 * 2, 3),
    )  # fmt: skip


def maml(lib, model, x, labels, x_query, labels_query):
    """One inner SGD step on the support set, kept in the graph; the query loss's gradients
    at the adapted weights reach the original ones."""
    names = [name for name, _ in model.named_parameters()]
    params = list(model.parameters())
    loss = lib.nn.functional.cross_entropy(model(x), labels)
    grads = lib.autograd.grad(loss, params, create_graph=True)
    adapted = {n: p - 0.1 * g for n, p, g in zip(names, params, grads)}
    call = lib.func.functional_call if lib is torch else tricycle.func.functional_call
    outer = lib.nn.functional.cross_entropy(call(model, adapted, (x_query,)), labels_query)
    outer.backward()
    return [loss.detach().numpy(), outer.detach().numpy()] + [
        g.detach().numpy() for g in grads
    ] + [p.grad.numpy() for p in params]  # fmt: skip


def test_maml_inner_step_through_a_conv_net_as_torchs():
    theirs = conv_net(torch).double()
    ours = conv_net(tricycle).double()
    tricycle.nn.from_torch(ours, theirs.state_dict())
    x, xq = arrays((4, 1, 8, 8), (4, 1, 8, 8), low=-1, high=1)
    labels, query = np.array([0, 2, 1, 2]), np.array([1, 0, 2, 2])
    results = [
        maml(lib, model, lib.tensor(x), lib.tensor(labels), lib.tensor(xq), lib.tensor(query))
        for lib, model in ((tricycle, ours), (torch, theirs))
    ]
    assert len(results[0]) == len(results[1]) == 2 + 2 * 10
    transposed = linear_weights(ours, 2) | linear_weights(ours, 2 + 10)  # (grads, then .grad)
    assert_as_torchs(*results, transposed, rtol=1e-8, atol=1e-11)


def critic(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Linear(6, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 8), nn.LayerNorm(8),
        nn.Tanh(), nn.Linear(8, 1),
    )  # fmt: skip


def test_wgan_gp_penalty_on_a_critic_with_layer_norm_as_torchs():
    ours, results = critic_penalties(critic, (5, 6))
    assert results[0][-1] is None  # the last bias has no part in the penalty
    assert_as_torchs(*results, linear_weights(ours, 3), rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_conv_and_layer_norm_second_order_rules_on_a_gpu_as_on_the_host():
    F = tricycle.nn.functional
    cases = [
        (lambda x, w, b: (F.conv2d(x, w, b, padding=1, stride=2) ** 2).sum(),
         [(2, 2, 6, 5), (4, 2, 3, 3), (4,)]),
        (lambda x, w, b: (F.conv_transpose2d(x, w, b, stride=2) ** 2).sum(),
         [(1, 2, 3, 3), (2, 3, 2, 2), (3,)]),
        (lambda x, w, b: (F.layer_norm(x, (4,), w, b) ** 3).sum(), [(3, 4), (4,), (4,)]),
        (lambda x, w, b: (F.batch_norm(x, None, None, w, b, training=True) ** 3).sum(),
         [(3, 2, 4), (2,), (2,)]),
    ]  # fmt: skip
    assert_on_a_gpu_as_on_the_host(
        (f"case {i}", fn, arrays(*shapes, low=-1, high=1), arrays(*shapes, seed=1))
        for i, (fn, shapes) in enumerate(cases)
    )
