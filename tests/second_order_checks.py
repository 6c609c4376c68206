"""What the double-backward test files (``tests/test_double_backward*.py``) share: inputs,
first and second derivatives taken with tricycle or torch (on the host or a GPU), their
comparison with torch's and with the host's, the recorder of the rules a test file meets,
and a WGAN-GP gradient penalty on a critic."""

import numpy as np
import pytest

import tricycle
from tricycle import second_order_more, second_order_rules

torch = pytest.importorskip("torch")


def arrays(*shapes, low=0.5, high=1.5, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, shape) for shape in shapes]


def lib_of(x):
    return torch if isinstance(x, torch.Tensor) else tricycle


def constant(x, values):
    """``values`` as a tensor of x's library on x's device (targets, weights, masks)."""
    return lib_of(x).tensor(np.asarray(values), device=x.device)


def cube(y):
    return (y**3).sum()


def F_of(x):
    return torch.nn.functional if isinstance(x, torch.Tensor) else tricycle.nn.functional


def first_and_second(lib, fn, values, weights, device="cpu"):
    """The first derivatives (create_graph=True) and the gradient of their weighted sum, as
    host arrays (the tensors made on ``device``)."""
    xs = [lib.tensor(v, device=device).requires_grad_(True) for v in values]
    grads = lib.autograd.grad(fn(*xs), xs, create_graph=True)
    total = sum((g * lib.tensor(w, device=device)).sum() for g, w in zip(grads, weights))
    total.backward()
    return [g.detach().cpu().numpy() for g in grads], [x.grad.cpu().numpy() for x in xs]


def assert_first_and_second_as_torchs(fn, values, weights) -> None:
    """``fn``'s first derivatives and their weighted sum's gradient equal torch's."""
    ours = first_and_second(tricycle, fn, values, weights)
    theirs = first_and_second(torch, fn, values, weights)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def assert_on_a_gpu_as_on_the_host(cases) -> None:
    """For each (name, fn, values, weights) of ``cases``: tricycle's first and second
    derivatives with cupy arrays equal those with numpy's (the rules compute with the arrays'
    own module)."""
    for name, fn, values, weights in cases:
        gpu = first_and_second(tricycle, fn, values, weights, device="cuda")
        host = first_and_second(tricycle, fn, values, weights)
        for a, b in zip(gpu[0] + gpu[1], host[0] + host[1]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=name)


def drawn(cases: dict):
    """(name, fn, values, weights) of each of ``cases`` ({name: (fn, input shapes, (low,
    high))}): the values drawn in [low, high) seeded by the name's length, the weights in
    [-1, 1)."""
    for name, (fn, shapes, (low, high)) in sorted(cases.items()):
        values = arrays(*shapes, low=low, high=high, seed=len(name))
        yield name, fn, values, arrays(*shapes, low=-1, high=1, seed=1)


def rules_met(monkeypatch, *slope_tables) -> set:
    """The set that records, while the test runs, the key of each rule a create_graph walk
    looks up (the back_fn's code, or the fused op's shared backward's) and the name of each
    slope of ``slope_tables`` ({name: slope}, e.g. ``second_order_pointwise.ONE``) it uses."""
    second_order_rules.rule_for(lambda d: d)  # (builds the tables)
    used, rule_for = set(), second_order_rules.rule_for
    fused_rule_for = second_order_more.fused_rule_for

    def recording(fn):
        used.add(getattr(fn, "__code__", None) or type(fn))
        return rule_for(fn)

    def recording_fused(backward):
        used.add(backward.__code__)
        return fused_rule_for(backward)

    monkeypatch.setattr(second_order_rules, "rule_for", recording)
    monkeypatch.setattr(second_order_more, "fused_rule_for", recording_fused)
    for table in slope_tables:
        for name, slope in table.items():
            monkeypatch.setitem(table, name, lambda *a, _s=slope, _n=name: used.add(_n) or _s(*a))
    return used


def exercise(cases: dict) -> None:
    """Each of ``cases`` ({name: (fn, input shapes[, (low, high)])}) differentiated twice
    with tricycle (the values drawn in [low, high), by default [0.5, 1.5)): what a test of
    the rules met runs while ``rules_met`` records."""
    for fn, shapes, *bounds in cases.values():
        low, high = bounds[0] if bounds else (0.5, 1.5)
        first_and_second(tricycle, fn, arrays(*shapes, low=low, high=high), arrays(*shapes))


def gradient_penalty(lib, score, parameters, real, fake, eps) -> list:
    """WGAN-GP: ``g, = grad(score(x_hat), x_hat, create_graph=True)`` at x_hat between
    ``real`` and ``fake``, the penalty mean((|g| - 1)^2) (a norm per sample) backpropagated:
    [the penalty, g, x_hat's gradient, then each of ``parameters``'s gradient]."""
    e = lib.tensor(eps)
    x_hat = (e * lib.tensor(real) + (1 - e) * lib.tensor(fake)).requires_grad_(True)
    (g,) = lib.autograd.grad(score(x_hat), x_hat, create_graph=True)
    penalty = ((g.reshape(g.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    penalty.backward()
    return [penalty, g, x_hat.grad] + [p.grad for p in parameters]


def critic_penalties(critic, x_shape: tuple) -> tuple:
    """``gradient_penalty`` of the critic ``critic(lib)`` (a module, seeded) in float64, with
    torch's weights loaded into tricycle's, at x_hat between real and fake of ``x_shape``:
    (tricycle's critic, [tricycle's results, torch's])."""
    theirs = critic(torch).double()
    ours = critic(tricycle).double()
    tricycle.nn.from_torch(ours, theirs.state_dict())
    eps_shape = (x_shape[0],) + (1,) * (len(x_shape) - 1)
    real, fake, eps = arrays(x_shape, x_shape, eps_shape, low=-1, high=1)
    results = [
        gradient_penalty(lib, lambda x: model(x).sum(), model.parameters(), real, fake, eps)
        for lib, model in ((tricycle, ours), (torch, theirs))
    ]
    return ours, results


def linear_weights(model, offset: int = 0) -> set:
    """The places (counted from ``offset``) of tricycle ``model``'s parameters that are a
    Linear's weights: (in, out) in tricycle, (out, in) in torch."""
    weights = {id(m.weights) for m in model.modules() if isinstance(m, tricycle.nn.Linear)}
    return {offset + i for i, p in enumerate(model.parameters()) if id(p) in weights}


def assert_as_torchs(ours, theirs, transposed=(), **tolerances) -> None:
    """Each of ``ours`` (Tensors, arrays or None) equals the same place of ``theirs``
    (torch's), those at the places ``transposed`` (a Linear's weights) transposed; a None of
    ours stands for torch's None or zeros (a parameter that the result does not reach, or
    reaches only through a ReLU's mask)."""
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = (v.detach().cpu().numpy() if hasattr(v, "detach") else v for v in (a, b))
        if a is None:
            assert b is None or not np.asarray(b).any(), i
            continue
        np.testing.assert_allclose(a.T if i in transposed else a, b, **tolerances)
