"""Double backward (``create_graph=True``: tricycle/second_order.py, second_order_rules.py)
against torch: every rule's second derivatives on a function of its op, a WGAN-GP gradient
penalty, Hessians and Hessian-vector products (``autograd.functional``, ``tricycle.func``),
``Tensor.backward(create_graph=True)``, MAML's inner step through ``functional_call`` and
``gradgradcheck`` (finite differences of the first derivatives); and the clear error of an
op whose second derivative is not implemented."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_as_torchs,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    critic_penalties,
    exercise,
    lib_of,
    linear_weights,
    rules_met,
)
from tricycle import autograd, second_order_rules, unary
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
F_t = torch.nn.functional


def softmax(x):
    return F_t.softmax(x, -1) if isinstance(x, torch.Tensor) else tricycle.softmax(x, -1)


def log_softmax(x):
    return F_t.log_softmax(x, -1) if isinstance(x, torch.Tensor) else tricycle.log_softmax(x, -1)


# name -> (function of the inputs giving a scalar, input shapes, (low, high) of the values)
CASES = {
    "arithmetic": (lambda a, b: ((a + b) * (a - b) / (b + a * 2) - 3 - a).sum(), [(2, 3), (2, 3)]),
    "broadcast": (lambda a, b: (a * b + b / a - (a - b)).sum(), [(2, 3), (3,)]),
    "scalars": (lambda a: (2.0 / a + 3.0 - a - (1.0 - a) * 2.0 + a / 4.0).sum(), [(4,)]),
    "pow": (lambda a, b: (a**b).sum() + (a**2).sum() + (a**1.5).sum() + (a**0).sum(), [(3,), (3,)]),
    "rpow": (lambda a: (2.0**a).sum(), [(3,)]),
    "unary": (
        lambda a: (a.exp() * a.log() + a.sqrt() - (-a).abs() + a.sin() * a.cos()).sum(),
        [(5,)],
    ),
    "tanh_sigmoid": (lambda a: (a.tanh() * a.sigmoid()).sum(), [(5,)]),
    "clamps": (lambda a: (a.clamp(min=0.8) * a.clamp(max=1.2) * a.clamp(0.9, 1.1)).sum(), [(6,)]),
    "max_min": (
        lambda a, b: (lib_of(a).maximum(a, b) * lib_of(a).minimum(a, b) ** 2).sum(),
        [(4,), (4,)],
    ),
    "reductions": (
        lambda a: (a.sum(1) ** 2).sum() + (a.mean(0) ** 3).sum() + a.var(1, unbiased=False).sum(),
        [(3, 4)],
    ),
    "max_logsumexp": (
        lambda a: (a.amax(1) ** 2).sum() + (a.amin(0) ** 2).sum() + a.logsumexp(1).exp().sum(),
        [(3, 4)],
    ),
    "shapes": (
        lambda a: (
            a.reshape(6, 2).permute(1, 0) ** 2 * a.unsqueeze(0).squeeze(0).reshape(2, 6)
        ).sum(),
        [(3, 4)],
    ),
    "index_cat": (
        lambda a, b: (lib_of(a).cat([a[1:] ** 2, b]) * lib_of(a).cat([b, a[:2]]).exp()).sum(),
        [(3, 4), (1, 4)],
    ),
    "where": (lambda a, b: (lib_of(a).where(a > 1, a * a, b.exp())).sum(), [(3, 4), (4,)]),
    "clamp_tensors": (
        lambda a, b, c: (lib_of(a).clamp(a, b, c) ** 3).sum(),
        [(3, 4), (4,), (3, 1)],
    ),
    "matmul": (lambda a, b: ((a @ b) ** 2).sum() + ((b.T @ a[0]) ** 3).sum(), [(2, 3), (3, 4)]),
    "einsum": (lambda a, b: (lib_of(a).einsum("ij,jk->ik", a, b) ** 2).sum(), [(2, 3), (3, 4)]),
    "softmax": (lambda a: (softmax(a) * a).sum() + (log_softmax(a) ** 2).sum(), [(2, 5)]),
    "cast": (lambda a: (a.float() ** 2).double().sum(), [(3,)]),
    "scalar_bounds": (lambda a: (at_most(a, 1.0) * at_least(a, 0.9) * a).sum(), [(5,)]),
    "activations": (
        lambda a: (F_of(a).relu(a - 1) * F_of(a).leaky_relu(a - 1, 0.2) * a).sum(),
        [(6,)],
    ),
}


def at_most(x, c):
    """min(x, c): torch's clamp; tricycle's op of a tensor and a number."""
    return x.clamp(max=c) if isinstance(x, torch.Tensor) else unary.minimum_scalar(x, c)


def at_least(x, c):
    """max(x, c): torch's clamp; tricycle's op of a tensor and a number (the losses')."""
    return x.clamp(min=c) if isinstance(x, torch.Tensor) else unary.maximum_scalar(x, c)


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_of_each_rule_as_torchs(name):
    fn, shapes = CASES[name]
    values = arrays(*shapes, seed=len(name))
    if name == "clamps":  # away from the clamp edges, where the derivative jumps
        values = [np.array([0.5, 0.85, 0.95, 1.05, 1.15, 1.4])]
    assert_first_and_second_as_torchs(fn, values, arrays(*shapes, low=-1, high=1, seed=1))


def test_every_rule_is_exercised(monkeypatch):
    """Each op's rule (``second_order_rules.KEYS``) is met by one of the cases above."""
    used = rules_met(monkeypatch)
    exercise(CASES)
    # a third derivative goes through the recorded linear nodes
    x = tricycle.tensor(arrays((3, 4))[0], requires_grad=True)
    (g,) = autograd.grad((x.sum(1) ** 3).sum(), x, create_graph=True)
    (h,) = autograd.grad((g * g).sum(), x, create_graph=True)
    h.sum().backward()
    missing = {name for name, key in second_order_rules.KEYS.items() if key not in used}
    assert not missing


def critic(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.Tanh(),
                         nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))  # fmt: skip


def test_wgan_gp_gradient_penalty_as_torchs():
    """``g, = grad(D(x_hat).sum(), x_hat, create_graph=True)``, the penalty on its norm
    backpropagated to the critic's parameters (and to x_hat)."""
    ours, results = critic_penalties(critic, (6, 3))
    # the last bias: the penalty does not depend on it (None); the bias before the ReLU
    # reaches it only through the ReLU's mask: torch's zeros, None here
    assert_as_torchs(*results, linear_weights(ours, 3), rtol=1e-9, atol=1e-12)


def quartic(x, y):
    return (x.exp() * y.sin()).sum() + ((x @ y) ** 2).sum() + (x**4).sum()


def test_hessians_and_products_as_torchs():
    x0, y0, u, v = arrays((3,), (3,), (3,), (3,), low=-1, high=1)
    for name in ("hessian", "hvp", "vhp"):
        f_ours = getattr(autograd.functional, name)
        f_theirs = getattr(torch.autograd.functional, name)
        args = ((tricycle.tensor(x0), tricycle.tensor(y0)),)
        args_t = ((torch.tensor(x0), torch.tensor(y0)),)
        if name != "hessian":
            args += ((tricycle.tensor(u), tricycle.tensor(v)),)
            args_t += ((torch.tensor(u), torch.tensor(v)),)
        ours, theirs = f_ours(quartic, *args), f_theirs(quartic, *args_t)
        flat = [np.asarray(t.numpy()) for t in _leaves(ours)]
        flat_t = [t.numpy() for t in _leaves(theirs)]
        assert len(flat) == len(flat_t)
        for a, b in zip(flat, flat_t):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=name)
    one = autograd.functional.hessian(lambda x: (x**3).sum(), tricycle.tensor(x0))
    np.testing.assert_allclose(one.numpy(), np.diag(6 * x0), rtol=1e-12)
    with pytest.raises(RuntimeError, match="single element"):
        autograd.functional.hvp(lambda x: x**2, tricycle.tensor(x0), tricycle.tensor(u))


def _leaves(tree):
    if isinstance(tree, tuple | list):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def test_func_hessian_and_nested_transforms_as_torchs():
    x0 = arrays((4,), low=-1, high=1)[0]

    def f(x):
        return (x.sin() * x.exp()).sum() + (x**3).sum() * (x**2).sum()

    expected = torch.func.hessian(f)(torch.tensor(x0)).numpy()
    for ours in (tricycle.func.hessian(f), tricycle.func.jacfwd(tricycle.func.jacrev(f))):
        np.testing.assert_allclose(ours(tricycle.tensor(x0)).numpy(), expected, rtol=1e-9)
    twice = tricycle.func.grad(lambda x: tricycle.func.grad(f)(x).sum())(tricycle.tensor(x0))
    twice_t = torch.func.grad(lambda x: torch.func.grad(f)(x).sum())(torch.tensor(x0))
    np.testing.assert_allclose(twice.numpy(), twice_t.numpy(), rtol=1e-9)


def test_backward_with_create_graph_as_torchs():
    """``.grad`` requires grad and is differentiated again; the graph is retained by default;
    a hook sees the recorded gradient; accumulation adds recorded gradients."""
    x0 = arrays((3,))[0]
    results = []
    for lib in (tricycle, torch):
        x = lib.tensor(x0, requires_grad=True)
        seen = []
        y = x.exp() * x
        y.register_hook(lambda g, seen=seen: seen.append(g.detach().numpy() * 1))
        z = (y**2).sum()
        z.backward(create_graph=True)
        first = x.grad
        assert first.requires_grad and len(seen) == 1
        z.backward(create_graph=True)  # retained by default: accumulates 2 z'
        second = x.grad
        x.grad = None
        second.sum().backward()
        results.append((seen[0], first.detach().numpy(), second.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    x = Tensor(x0, requires_grad=True)
    y = x.exp().sum()  # its gradient, the output itself, goes through the freed exp
    y.backward(create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="freed"):
        x.grad.sum().backward()


def test_maml_inner_step_as_torchs():
    """``grads = grad(loss, params, create_graph=True)``, fast weights ``p - lr * g`` run
    through ``func.functional_call``, the outer loss backpropagated to the parameters."""
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    theirs = theirs.double()
    nn = tricycle.nn
    ours = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 1)).double()
    nn.from_torch(ours, theirs.state_dict())
    xs, ys, xq, yq = arrays((5, 2), (5, 1), (4, 2), (4, 1), low=-1, high=1)
    out = []
    for lib, model in ((tricycle, ours), (torch, theirs)):
        params = dict(model.named_parameters())
        loss = ((model(lib.tensor(xs)) - lib.tensor(ys)) ** 2).mean()
        grads = lib.autograd.grad(loss, list(params.values()), create_graph=True)
        fast = {name: p - 0.1 * g for (name, p), g in zip(params.items(), grads)}
        pred = lib.func.functional_call(model, fast, (lib.tensor(xq),))
        outer = ((pred - lib.tensor(yq)) ** 2).mean()
        outer.backward()
        out.append((outer.item(), [p.grad.numpy() for p in params.values()]))
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-12)
    for a, b in zip(out[0][1], out[1][1]):
        np.testing.assert_allclose(a, b.T if b.ndim == 2 else b, rtol=1e-9, atol=1e-13)


def test_gradgradcheck_on_the_ops():
    """Finite differences of the first derivatives (torch's gradgradcheck, float64)."""
    a, b = (Tensor(v, requires_grad=True) for v in arrays((2, 3), (3, 2)))
    assert autograd.gradgradcheck(lambda a, b: (a @ b).tanh() * 2.0, (a, b))
    assert autograd.gradgradcheck(lambda a: (tricycle.softmax(a, -1) * a.exp()).sum(0), (a,))
    assert autograd.gradgradcheck(lambda a: a.var(1) / a.sqrt().sum(), (a,))
    assert autograd.gradgradcheck(lambda a: a * a, (a,))


def test_an_op_without_a_rule_is_a_clear_error():
    x = Tensor(arrays((4,))[0], requires_grad=True)
    multilabel = tricycle.nn.functional.multilabel_margin_loss  # (torch refuses it too)
    with pytest.raises(
        NotImplementedError, match="second derivative of the loss multilabel_margin .* not"
    ):
        autograd.grad(multilabel(x, Tensor(np.array([3, 0, -1, 1]))), x, create_graph=True)
    c = Tensor(arrays((4,))[0], requires_grad=False)  # a constant branch needs no rule
    (g,) = autograd.grad((x * c.cumsum(0)).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), np.cumsum(c.numpy()))
    assert not g.requires_grad


@pytest.mark.skipif(not tricycle.backend.cupy_available(), reason="needs a CUDA GPU")
def test_double_backward_on_a_gpu_as_on_the_host():
    """The rules compute with the arrays' own module: every case, on cupy, as on numpy."""
    assert_on_a_gpu_as_on_the_host(
        (name, fn, arrays(*shapes, seed=len(name)), arrays(*shapes, low=-1, high=1, seed=1))
        for name, (fn, shapes) in sorted(CASES.items())
    )
