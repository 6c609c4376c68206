"""torch.func's transforms (tricycle/func.py) against torch.func with the same weights:
functional_call, grad (per-sample gradients, PyTorch's tutorial), vmap (nested, in_dims and
out_dims, randomness), stack_module_state (model ensembling), jacrev, jacfwd and vjp; and the
second derivatives (hessian, a transform inside grad) against torch's."""

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    stack_module_state,
    vjp,
    vmap,
)
from tricycle.tensor import Tensor

RNG = np.random.default_rng(0)


def mlp():
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))


def torch_mlp(torch):
    return torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).double()


def pair(torch):
    """The same MLP in float64 under both libraries: (ours, theirs)."""
    theirs = torch_mlp(torch)
    ours = mlp().to(tricycle.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def as_torch_name(name: str) -> str:
    return name.replace("weights", "weight").replace("sequence.", "")


def assert_like_torch(ours: dict, theirs: dict, rtol: float = 1e-10) -> None:
    """Our {name: array} against torch's {name: tensor}, a Linear's weights transposed."""
    assert len(ours) == len(theirs)
    for name, value in ours.items():
        expected = theirs[as_torch_name(name)].detach().numpy()
        value = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
        if name.endswith("weights"):
            value = np.swapaxes(value, -1, -2)
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=1e-12, err_msg=name)


def test_functional_call_runs_the_module_with_the_given_tensors():
    model = mlp()
    x = Tensor(RNG.normal(size=(4, 5)).astype(np.float32))
    own = {n: p.array.copy() for n, p in model.named_parameters()}
    new = {n: Tensor(p.array * 2.0, requires_grad=True) for n, p in model.named_parameters()}
    out = functional_call(model, new, (x,))
    doubled = mlp()
    for (_, p), q in zip(doubled.named_parameters(), new.values()):
        p.array[...] = q.array
    np.testing.assert_allclose(out.numpy(), doubled(x).numpy(), rtol=1e-6)
    out.sum().backward()
    for name, p in model.named_parameters():  # the module's own are back, untouched
        np.testing.assert_array_equal(p.array, own[name])
        assert p.grad is None
        assert new[name].grad is not None
    half = {n: t for n, t in list(new.items())[:2]}  # some names only: the rest are its own
    np.testing.assert_allclose(
        functional_call(model, half, x).numpy(), model[2](model[1](x @ new[list(half)[0]].array
        + new[list(half)[1]].array)).numpy(), rtol=1e-6)  # fmt: skip
    with pytest.raises(ValueError, match="no parameter or buffer named"):
        functional_call(model, {"nope": x}, (x,))
    with pytest.raises(RuntimeError, match="strict"):
        functional_call(model, half, (x,), strict=True)
    with pytest.raises(ValueError, match="has shape"):
        functional_call(model, {list(half)[0]: x}, (x,))


def test_tied_weights_are_replaced_together():
    class Tied(nn.Module):
        def __init__(self):
            self.a = nn.Linear(3, 3, bias=False)
            self.b = nn.Linear(3, 3, bias=False)
            self.b.weights = self.a.weights

        def forward(self, x):
            return self.b(self.a(x))

    model = Tied()
    x = Tensor(np.eye(3, dtype=np.float32))
    w = Tensor(np.full((3, 3), 0.5, dtype=np.float32))
    np.testing.assert_allclose(functional_call(model, {"a.weights": w}, x).numpy(), 0.75)
    untied = functional_call(model, {"a.weights": w}, x, tie_weights=False).numpy()
    np.testing.assert_allclose(untied, (w.numpy() @ model.b.weights.numpy()), rtol=1e-6)
    assert model.b.weights is model.a.weights


def test_per_sample_gradients_as_torch_s_tutorial():
    torch = pytest.importorskip("torch")
    ours, theirs = pair(torch)
    data = RNG.normal(size=(6, 5))
    targets = RNG.integers(0, 3, size=6)

    def run(lib, model, F, functional_call, vmap, grad):  # the tutorial's code, as written
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            batch = sample.unsqueeze(0)
            targets = target.unsqueeze(0)
            predictions = functional_call(model, (params, buffers), (batch,))
            loss = F.cross_entropy(predictions, targets)
            return loss

        ft_compute_grad = grad(compute_loss)
        ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
        return ft_compute_sample_grad(params, buffers, lib.tensor(data), lib.tensor(targets))

    got = run(tricycle, ours, F, functional_call, vmap, grad)
    expected = run(torch, theirs, torch.nn.functional, *(
        getattr(torch.func, n) for n in ("functional_call", "vmap", "grad")))  # fmt: skip
    assert_like_torch(got, expected)
    assert all(g.shape[0] == 6 for g in got.values())  # a gradient per sample
    loss = F.cross_entropy(ours(tricycle.tensor(data[:1])), tricycle.tensor(targets[:1]))
    loss.backward()
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(got[name].numpy()[0], p.grad.numpy(), rtol=1e-10)


def test_model_ensembling_as_torch_s_tutorial():
    torch = pytest.importorskip("torch")
    pairs = [pair(torch) for _ in range(3)]
    x = RNG.normal(size=(4, 5))

    def run(lib, models, vmap, functional_call, stack_module_state):
        params, buffers = stack_module_state(models)
        base = models[0]

        def fmodel(params, buffers, x):
            return functional_call(base, (params, buffers), (x,))

        return vmap(fmodel, in_dims=(0, 0, None))(params, buffers, lib.tensor(x)), params

    got, params = run(tricycle, [p[0] for p in pairs], vmap, functional_call,
                      stack_module_state)  # fmt: skip
    expected, _ = run(torch, [p[1] for p in pairs], torch.func.vmap, torch.func.functional_call,
                      torch.func.stack_module_state)  # fmt: skip
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10)
    assert got.shape == (3, 4, 3)
    assert all(p.requires_grad and p.args is None for p in params.values())
    got.sum().backward()  # through vmap's stack to the stacked parameters
    assert params["sequence.0.weights"].grad.shape == (3, 5, 8)


def test_vmap_dims_and_nesting_as_torch_s():
    torch = pytest.importorskip("torch")
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5))
    cases = [
        (lambda lib: lambda x, y: lib.outer(x, y), dict(in_dims=(1, 0)), (a, b)),
        (lambda lib: lambda x, y: lib.outer(x, y), dict(in_dims=(0, None), out_dims=1),
         (a, b[0])),
        (lambda lib: lambda x: (x.sum(), x * 2), dict(), (a,)),
        (lambda lib: lambda d: d["u"] * d["v"], dict(), ({"u": a, "v": a + 1},)),
    ]  # fmt: skip
    for make, kwargs, args in cases:
        got = vmap(make(tricycle), **kwargs)(*_as(tricycle, args))
        expected = torch.func.vmap(make(torch), **kwargs)(*_as(torch, args))
        for g, e in zip(_leaves(got), _leaves(expected)):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    # nested: every pair of rows' dot product
    dot = lambda x, y: (x * y).sum()  # noqa: E731
    got = vmap(vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(*_as(tricycle, (a, a)))
    np.testing.assert_allclose(got.numpy(), a @ a.T, rtol=1e-12)
    with pytest.raises(ValueError, match="one size"):
        vmap(dot)(tricycle.tensor(a), tricycle.tensor(b))


def _as(lib, args):
    return tuple({k: lib.tensor(v) for k, v in x.items()} if isinstance(x, dict)
                 else lib.tensor(x) for x in args)  # fmt: skip


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def test_vmap_randomness():
    x = tricycle.ones(4, 6)
    drop = lambda row: F.dropout(row, p=0.5, training=True)  # noqa: E731
    with pytest.raises(RuntimeError, match="randomness='error'"):
        vmap(drop)(x)
    tricycle.manual_seed(0)
    same = vmap(drop, randomness="same")(x).numpy()
    assert all((row == same[0]).all() for row in same)
    different = vmap(drop, randomness="different")(x).numpy()
    assert any((row != different[0]).any() for row in different)


def test_jacobians_and_vjp_as_torch_s():
    torch = pytest.importorskip("torch")
    w, x = RNG.normal(size=(3, 4)), RNG.normal(size=4)

    def f(lib):
        return lambda w, x: lib.sin(w @ x) * x[:3]

    for ours, theirs in ((jacrev, torch.func.jacrev), (jacfwd, torch.func.jacfwd)):
        for argnums in (0, 1, (0, 1)):
            got = ours(f(tricycle), argnums=argnums)(tricycle.tensor(w), tricycle.tensor(x))
            expected = theirs(f(torch), argnums=argnums)(torch.tensor(w), torch.tensor(x))
            for g, e in zip(_leaves(got), _leaves(expected)):
                assert g.shape == tuple(e.shape)
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    out, fn = vjp(f(tricycle), tricycle.tensor(w), tricycle.tensor(x))
    t_out, t_fn = torch.func.vjp(f(torch), torch.tensor(w), torch.tensor(x))
    cot = RNG.normal(size=3)
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    for _ in range(2):  # vjp_fn can be called again
        for g, e in zip(fn(tricycle.tensor(cot)), t_fn(torch.tensor(cot))):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)


def test_grad_arguments():
    x, y = tricycle.tensor([1.0, 2.0]), tricycle.tensor([3.0, 4.0])
    f = lambda x, y: (x * x).sum() * 2.0  # noqa: E731  y unused: zeros
    gx, gy = grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx.numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0])
    g, aux = grad(lambda x: ((x**2).sum(), "aux"), has_aux=True)(x)
    assert aux == "aux"
    g, value = grad_and_value(lambda x: (x**3).sum())(x)
    np.testing.assert_array_equal(g.numpy(), [3.0, 12.0])
    assert value.item() == 9.0 and x.grad is None and not x.requires_grad
    with pytest.raises(RuntimeError, match="one element"):
        grad(lambda x: x * 2)(x)
    with pytest.raises(TypeError, match="floating Tensors"):
        grad(f)(tricycle.tensor([1, 2]), y)


def test_torch_s_names_reach_them():
    assert tricycle.vmap is vmap and tricycle.func.grad is grad


def test_second_derivatives_as_torchs():
    x = tricycle.tensor([1.0, 2.0])
    np.testing.assert_allclose(hessian(lambda x: (x**3).sum())(x).numpy(), [[6, 0], [0, 12]])
    np.testing.assert_allclose(jacfwd(jacrev(lambda x: (x**3).sum()))(x).numpy(), np.diag([6, 12]))
    inner = grad(lambda x: grad(lambda y: (y**3).sum())(x).sum())(x)
    np.testing.assert_allclose(inner.numpy(), [6, 12])
    assert grad(lambda x: (x**2).sum())(x).numpy().tolist() == [2.0, 4.0]  # not left nested


def _flat(tree) -> list:
    """A result's Tensors in order: tuples, lists and dicts of them, nested as torch's."""
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _flat(tree[key])]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _flat(item)]
    return [tree]


def test_jacobians_of_several_outputs_and_hessians_of_several_arguments_as_torch_s():
    torch = pytest.importorskip("torch")
    a, b = RNG.normal(size=3), RNG.normal(size=(2, 3))

    def f(a, b):  # one scalar of both arguments
        return (a * a * b).sum() + (b.exp() * a).sum()

    def g(b):  # a dict of a Tensor and a tuple of Tensors
        return {"s": (b * b).sum(0), "t": (b.sin(), b * 2.0)}

    cases = [(hessian(f, argnums=n), torch.func.hessian(f, argnums=n), (a, b))
             for n in (0, 1, (0, 1), (1,))]  # fmt: skip
    cases += [(ours(g), theirs(g), (b,)) for ours, theirs in
              ((jacrev, torch.func.jacrev), (jacfwd, torch.func.jacfwd))]  # fmt: skip
    for ours, theirs, args in cases:
        got = ours(*(tricycle.tensor(x) for x in args))
        expected = theirs(*(torch.tensor(x) for x in args))
        assert type(got) is type(expected) or isinstance(got, Tensor)
        assert len(_flat(got)) == len(_flat(expected))
        for mine, torch_s in zip(_flat(got), _flat(expected)):
            assert mine.shape == tuple(torch_s.shape)
            np.testing.assert_allclose(mine.numpy(), torch_s.numpy(), rtol=1e-12, atol=1e-14)
    with pytest.raises(TypeError, match="jacrev: func's output must be a Tensor, or a tuple"):
        jacrev(lambda x: 3.0)(tricycle.tensor(a))
