"""Double backward of the decompositions (``tricycle/second_order_linalg.py``): ``eigh``,
``eigvalsh``, ``svd``, ``svdvals``, ``qr`` (tall, square, wide), ``pinv``, ``lstsq`` and
``matrix_exp``, each a loss that does not depend on the vectors' signs, first derivatives
(create_graph=True) and the gradient of their weighted sum against torch's in float64, two
orders through ``autograd.grad``; every rule met; the GPU."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    drawn,
    exercise,
    lib_of,
    rules_met,
)
from tricycle import backend, second_order_linalg

torch = pytest.importorskip("torch")


def weights(x, seed):
    """Fixed weights of x's shape, as x's library's tensor."""
    w = np.random.default_rng(seed).uniform(-1, 1, x.shape)
    return lib_of(x).tensor(w, device=x.device)


def symmetric(a):
    return a + a.transpose(-1, -2)


def eigh(a):
    lam, q = lib_of(a).linalg.eigh(symmetric(a))
    return (lam * weights(lam, 1)).sum() + (q * q * weights(q, 2)).sum() + (lam**3).sum()


def eigvalsh(a):
    lam = lib_of(a).linalg.eigvalsh(symmetric(a))
    return (lam * lam * weights(lam, 3)).sum()


def svd(a):
    u, s, vh = lib_of(a).linalg.svd(a, full_matrices=False)
    loss = (s * s * weights(s, 4)).sum() + (u * u * weights(u, 5)).sum()
    return loss + (vh * vh * weights(vh, 6)).sum()


def svdvals(a):
    s = lib_of(a).linalg.svdvals(a)
    return (s * weights(s, 7)).sum() + (s**3).sum()


def qr(a):
    q, r = lib_of(a).linalg.qr(a)
    return (q * weights(q, 8)).sum() + (r * r * weights(r, 9)).sum()


def pinv(a):
    x = lib_of(a).linalg.pinv(a)
    return (x * x * weights(x, 10)).sum()


def matrix_exp(a):
    e = lib_of(a).linalg.matrix_exp(a)
    return (e * e * weights(e, 11)).sum()


def lstsq(a, b):
    x, r, *_ = lib_of(a).linalg.lstsq(a, b, driver="gelsd")
    return (x * x * weights(x, 12)).sum() + (r * weights(r, 13)).sum()


CASES = {
    "eigh": (eigh, [(2, 3, 3)], (-1, 1)),
    "eigvalsh": (eigvalsh, [(3, 3)], (-1, 1)),
    "svd tall": (svd, [(2, 4, 3)], (-1, 1)),
    "svd wide": (svd, [(3, 4)], (-1, 1)),
    "svdvals": (svdvals, [(4, 3)], (-1, 1)),
    "qr tall": (qr, [(2, 4, 3)], (-1, 1)),
    "qr square": (qr, [(3, 3)], (-1, 1)),
    "qr wide": (qr, [(2, 4)], (-1, 1)),
    "pinv": (pinv, [(4, 3)], (-1, 1)),
    "pinv wide": (pinv, [(2, 3)], (-1, 1)),
    "lstsq": (lstsq, [(2, 4, 3), (2, 4, 2)], (-1, 1)),
    "matrix_exp": (matrix_exp, [(2, 3, 3)], (-0.5, 0.5)),
}


@pytest.mark.parametrize("name, fn, values, weights", list(drawn(CASES)), ids=sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name, fn, values, weights):
    assert_first_and_second_as_torchs(fn, values, weights)


def third(lib, fn, values):
    """fn's gradient g (create_graph), the gradient h of |g|^2 (create_graph), and the
    gradient of |h|^2: a third order, through the factor nodes' rules."""
    a = lib.tensor(values).requires_grad_(True)
    (g,) = lib.autograd.grad(fn(a), a, create_graph=True)
    (h,) = lib.autograd.grad((g * g).sum(), a, create_graph=True)
    (h * h).sum().backward()
    return [h.detach().numpy(), a.grad.numpy()]


def lstsq_of_a(a):
    return lstsq(a, lib_of(a).tensor(np.linspace(-1, 1, 8).reshape(4, 2), device=a.device))


THIRD = {
    "eigh": (eigh, (3, 3)),
    "svd": (svd, (4, 3)),
    "qr": (qr, (3, 4)),
    "lstsq": (lstsq_of_a, (4, 3)),
}


@pytest.mark.parametrize("name", sorted(THIRD))
def test_third_derivatives_as_torchs(name):
    """The factor nodes' back_fns have the same rules: a third order goes through them."""
    fn, shape = THIRD[name]
    values = np.random.default_rng(0).uniform(-1, 1, shape)
    for ours, theirs in zip(third(tricycle, fn, values), third(torch, fn, values)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_every_rule_here_is_exercised(monkeypatch):
    """Each key of ``second_order_linalg`` is met by one of the cases above."""
    used = rules_met(monkeypatch)
    exercise(CASES)
    for fn, shape in THIRD.values():
        third(tricycle, fn, np.random.default_rng(0).uniform(-1, 1, shape))
    assert {n for n, key in second_order_linalg.KEYS.items() if key not in used} == set()


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """Every case above with cupy arrays (the rules compute with the arrays' module)."""
    assert_on_a_gpu_as_on_the_host(drawn(CASES))
