"""torch.autograd.functional's jacobian, vjp and jvp (tricycle/autograd_functional.py) and
scatter of a 1-d tensor at a 0-d index (tricycle/indexing.py), against torch."""

import numpy as np
import pytest


def host(x) -> np.ndarray:
    """A torch or tricycle tensor's values as a numpy array."""
    if hasattr(x, "detach") and not hasattr(x, "array"):
        return x.detach().numpy()
    return np.asarray(x.numpy())


def test_autograd_functional_as_torchs():
    """``autograd.functional``'s jacobian, vjp and jvp give torch's values and nesting: one
    input and output, several of each, an output of one element with v left out, an input an
    output does not depend on (zeros; refused with ``strict=True``)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(2, 3)), rng.normal(size=3)
    v_out, v_in = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))

    def cases(lib):
        F = lib.autograd.functional
        X, W = lib.tensor(x), lib.tensor(w)
        both_out = lambda a, b: (a.tanh() * b, (a**2).sum())  # noqa: E731
        one = lambda a, b: a.exp() * b  # noqa: E731
        return [
            F.jacobian(lambda a: a.sin() * 2, X),
            F.jacobian(both_out, (X, W)),
            F.jacobian(lambda a, b: a * 3, (X, W)),  # b unused: zeros
            F.vjp(one, (X, W), v=lib.tensor(v_out)),
            F.vjp(lambda a: (a**3).sum(), X),  # one element: v left out
            F.jvp(lambda a: a.cos() * 2, X, v=lib.tensor(v_in)),
            F.jvp(both_out, (X, W), v=(lib.tensor(v_in), lib.tensor(w))),
        ]

    def flat(result):
        if isinstance(result, tuple | list):
            return [array for item in result for array in flat(item)]
        return [host(result)]

    theirs, ours = cases(torch), cases(tricycle)
    for k, (t, o) in enumerate(zip(theirs, ours)):
        t, o = flat(t), flat(o)
        assert len(t) == len(o), k
        for a, b in zip(o, t):
            assert a.shape == b.shape, k
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=str(k))
    for lib in torch, tricycle:
        with pytest.raises(RuntimeError):
            inputs = (lib.tensor(x), lib.tensor(w))
            lib.autograd.functional.jacobian(lambda a, b: a * 3, inputs, strict=True)
        with pytest.raises(RuntimeError):  # v left out for an output of several elements
            lib.autograd.functional.vjp(lambda a: a * 2, lib.tensor(x))
    ours = tricycle.tensor(x, requires_grad=True)  # create_graph=True: a Jacobian in the graph
    jac = tricycle.autograd.functional.jacobian(lambda a: a**3, ours, create_graph=True)
    theirs = torch.tensor(x, requires_grad=True)
    jac_t = torch.autograd.functional.jacobian(lambda a: a**3, theirs, create_graph=True)
    np.testing.assert_allclose(host(jac), host(jac_t), rtol=1e-10)
    jac.sum().backward()
    jac_t.sum().backward()
    np.testing.assert_allclose(host(ours.grad), host(theirs.grad), rtol=1e-10)


def test_scatter_a_0d_index_as_torchs():
    """``scatter``/``scatter_``/``scatter_add`` of a 1-d tensor take a 0-d index (and a 0-d
    ``src``) as one entry, as torch's (transforms_tutorial's one-hot label); the gradients
    reach the input and the source as torch's."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:
        assert (
            host(lib.zeros(10).scatter_(0, lib.tensor(3), value=1)).tolist()
            == np.eye(10)[3].tolist()
        )
        assert host(lib.zeros(10).scatter(dim=0, index=lib.tensor(7), value=2.5))[7] == 2.5
        assert host(lib.zeros(4).scatter_add(0, lib.tensor(1), lib.tensor(5.0)))[1] == 5.0
    grads = []
    for lib in torch, tricycle:
        x = lib.zeros(10, requires_grad=True)
        s = lib.tensor(5.0, requires_grad=True)
        (x.scatter(0, lib.tensor(3), s) * lib.arange(10.0)).sum().backward()
        grads.append((host(x.grad), host(s.grad)))
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(
        (ValueError, RuntimeError)
    ):  # a 0-d index with a matrix: refused, as torch's
        tricycle.zeros(2, 3).scatter(0, tricycle.tensor(1), value=1)
    with pytest.raises((ValueError, IndexError)):  # out of range, as torch's
        tricycle.zeros(10).scatter(0, tricycle.tensor(30), value=1)
