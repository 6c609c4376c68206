"""Double backward (``create_graph=True``) of the complex ops (``second_order_complex``) and
complex ``linalg.solve_triangular``, against torch in complex128 and finite differences.

Each case is a real loss of complex inputs; its first derivatives (torch's convention:
dL/da + i dL/db) are taken with ``create_graph=True``, then a penalty of them (their squared
sizes and a random weighting: a gradient penalty and a Hessian-vector product at once) is
differentiated again. Also: an HVP (torch's with complex ``grad_outputs`` w, ours the gradient
of re <w, g>), a third derivative, a
complex critic's gradient penalty reaching its weights, a gradgradcheck of our own by central
differences, the casts, the refusals (svd and pinv of complex matrices), every rule met, and
the GPU as the host.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
from tests.second_order_checks import rules_met
from tricycle import backend, second_order_complex

torch = pytest.importorskip("torch")


def complex_values(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _weights(values, seed):
    """A random weight of each input's kind and shape, for the penalty."""
    rng = np.random.default_rng(seed)
    drawn = [rng.standard_normal(np.shape(v)) for v in values]
    return [w + 1j * rng.standard_normal(w.shape) if np.iscomplexobj(v) else w
            for w, v in zip(drawn, values)]  # fmt: skip


def first_and_second(lib, fn, values, device="cpu"):
    """``fn``'s gradients (create_graph=True) and the gradients of the penalty
    sum |g|^2 + re(conj(w) g) of them, as host arrays."""
    xs = [lib.tensor(v, requires_grad=True, device=device) for v in values]
    grads = lib.autograd.grad(fn(lib, *xs), xs, create_graph=True)
    penalty = 0
    for g, w in zip(grads, _weights(values, seed=7)):
        w = lib.tensor(w, device=device)
        penalty = penalty + (g.abs() ** 2).sum() + (g * w.conj()).real.sum()
    seconds = lib.autograd.grad(penalty, xs)
    return [_host(g) for g in grads], [_host(s) for s in seconds]


def _host(t):
    """A tensor's values as a host array (torch's lazy conjugate resolved)."""
    return t.detach().cpu().resolve_conj().numpy()


def assert_as_torchs(fn, values, rtol=1e-9):
    ours, theirs = (first_and_second(lib, fn, values) for lib in (tricycle, torch))
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10)


Z, W = complex_values(3, 4), complex_values(3, 4, seed=1)
SQUARE = complex_values(2, 3, 3, seed=2) + 3 * np.eye(3)  # well conditioned
RHS = complex_values(3, 2, seed=3)
REAL = np.random.default_rng(4).uniform(0.5, 1.5, (3, 4))
CASES = {  # name: (a real loss of the inputs, their values)
    "add sub neg": (lambda L, z, w: ((z + w) * (z - w) + -z).abs().sum(), (Z, W)),
    "mul div": (
        lambda L, z, w: (z * w / (w + 3) * 2j).real.sum() + ((z / w) ** 2).imag.sum(),
        (Z, W),
    ),  # fmt: skip
    "abs squared": (lambda L, z: ((z * z + z).abs() ** 2).sum(), (Z,)),
    "abs at zero": (
        lambda L, z: (z.abs() ** 3).sum() + (z * z.abs()).real.sum(),
        (np.array([0j, 1 + 2j, -0.5j]),),
    ),  # fmt: skip
    "conj real imag": (lambda L, z, w: (z.conj() * w).real.sum() + (z.real * w.imag).sum(), (Z, W)),
    "angle": (lambda L, z: (z.angle() * z.abs()).sum() + (L.angle(z * z) ** 2).sum(), (Z,)),
    "exp log": (lambda L, z: (z.exp() * z).real.sum() + (L.log(z) ** 2).abs().sum(), (Z,)),
    "sqrt pow": (
        lambda L, z: (z.sqrt() * z.conj()).real.sum() + (z**1.5).imag.sum() + (z**-2).real.sum(),
        (Z,),
    ),  # fmt: skip
    "sin cos": (lambda L, z: (z.sin() * L.cos(z)).abs().sum(), (Z,)),
    "matmul": (lambda L, z, w: ((z @ w.mT) ** 2).real.sum() + (z.mT @ w).abs().sum(), (Z, W)),
    "einsum": (lambda L, z, w: L.einsum("ij,kj->ik", z, w.conj()).abs().sum(), (Z, W)),
    "sum mean": (lambda L, z: (z.sum(0) * z.mean(1, keepdim=True)).abs().sum(), (Z,)),
    "reshape transpose index": (
        lambda L, z: (z.reshape(2, 6).transpose(0, 1)[1:4].sum(0) * z[0, :2].mean()).abs().sum(),
        (Z,),
    ),
    "view_as_real view_as_complex": (
        lambda L, z: (
            (L.view_as_real(z) ** 3).sum()
            + (L.view_as_complex(L.view_as_real(z) * 2) * z).imag.sum()
        ),
        (Z,),
    ),
    "polar": (
        lambda L, r, t: (L.polar(r, t) ** 2).real.sum() + L.polar(r * t, r).abs().sum(),
        (REAL, REAL[::-1] * 2),
    ),  # fmt: skip
    "complex of reals, broadcast": (
        lambda L, x, y: (L.complex(x**2, y * x[0]) * L.complex(y, x)).abs().sum(),
        (REAL, REAL[::-1].copy()),
    ),
    "mixed real and complex": (lambda L, z, x: ((z * x + x) / (x + z)).abs().sum(), (Z, REAL)),
    "inv": (lambda L, a, b: (L.linalg.inv(a) @ b).abs().sum(), (SQUARE, RHS)),
    "solve": (lambda L, a, b: (L.linalg.solve(a, b) ** 2).real.sum(), (SQUARE, RHS)),
    "solve vectors": (lambda L, a, b: L.linalg.solve(a, b[:, 0]).abs().sum(), (SQUARE, RHS)),
    "det": (
        lambda L, a, b: (
            (L.linalg.det(a + b @ b.mH) * (0.3 + 1j)).real.sum() + L.linalg.det(a).abs().sum()
        ),
        (SQUARE, RHS),
    ),  # fmt: skip
    "slogdet": (
        lambda L, a, b: (
            (L.linalg.slogdet(a + b @ b.mH)[0] * (0.5 - 1j)).real.sum()
            + (L.linalg.slogdet(a)[1] ** 2).sum()
        ),
        (SQUARE, RHS),
    ),  # fmt: skip
}


def _triangular(upper, left, unit):
    def loss(L, a, b):
        b = b if left else b.mT
        X = L.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
        return (X**2).imag.sum() + X.abs().sum()

    return loss


for _options in itertools.product((True, False), repeat=3):
    _words = " ".join(f"{k}={v}" for k, v in zip(("upper", "left", "unit"), _options))
    CASES[f"solve_triangular {_words}"] = (_triangular(*_options), (SQUARE, RHS))


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name):
    fn, values = CASES[name]
    assert_as_torchs(fn, values)


@settings(max_examples=8, deadline=None)
@given(
    shapes=st.sampled_from([((3, 1), (1, 4)), ((2, 3), (3,)), ((4,), (2, 1, 4)), ((1,), (3, 2))]),
    seed=st.integers(0, 2**16),
)
def test_broadcast_products_and_quotients_of_random_shapes_as_torchs(shapes, seed):
    values = [complex_values(*shape, seed=seed + i) for i, shape in enumerate(shapes)]
    loss = lambda L, z, w: ((z * w).abs() ** 2).sum() + (z / (w + 2)).imag.sum()  # noqa: E731
    assert_as_torchs(loss, values)


def _hvp_and_third(lib):
    z = lib.tensor(Z, requires_grad=True)
    (g,) = lib.autograd.grad(((z * z).abs() ** 2).sum() + (z.exp() * z).real.sum(), z,
                             create_graph=True)  # fmt: skip
    w = lib.tensor(W)
    if lib is torch:  # the product with complex grad_outputs w
        (hvp,) = lib.autograd.grad(g, z, grad_outputs=w, create_graph=True)
    else:  # the same as the gradient of re <w, g> (tricycle's roots are real)
        (hvp,) = lib.autograd.grad((g * w.conj()).real.sum(), z, create_graph=True)
    (third,) = lib.autograd.grad((hvp.abs() ** 2).sum(), z)
    return g, hvp, third


def test_a_hessian_vector_product_and_a_third_derivative():
    for a, b in zip(_hvp_and_third(tricycle), _hvp_and_third(torch)):
        np.testing.assert_allclose(_host(a), _host(b), rtol=1e-9)


def test_a_complex_critics_gradient_penalty_reaches_its_weights_as_torchs():
    """score = sum |W2 sin(W1 z + b)|^2 over a batch of z; the penalty mean((|g| - 1)^2) on
    its gradient g with respect to z, backpropagated to W1, b, W2 and z."""
    weights = [complex_values(5, 4, seed=5), complex_values(5, seed=6)]
    weights.append(complex_values(2, 5, seed=7))

    def penalty(lib):
        w1, b, w2 = (lib.tensor(w, requires_grad=True) for w in weights)
        z = lib.tensor(Z, requires_grad=True)
        score = ((w2 @ (z @ w1.mT + b).sin().mT).abs() ** 2).sum()
        (g,) = lib.autograd.grad(score, z, create_graph=True)
        value = ((g.abs() ** 2).sum(1).sqrt() - 1) ** 2
        value.mean().backward()
        return [g, w1.grad, b.grad, w2.grad, z.grad]

    for a, b in zip(penalty(tricycle), penalty(torch)):
        np.testing.assert_allclose(_host(a), _host(b), rtol=1e-9)


def _gradient(fn, values):
    xs = [tricycle.tensor(v, requires_grad=True) for v in values]
    return [g.array for g in tricycle.autograd.grad(fn(tricycle, *xs), xs)]


def _directional(grads, weights) -> float:
    """re <w, g> summed over the inputs: the pairing of a gradient with a weight."""
    return sum(float(np.sum((np.conj(w) * g).real)) for g, w in zip(grads, weights))


CHECKED_BY_DIFFERENCES = [
    "abs at zero", "angle", "mul div", "polar", "slogdet",
    "solve_triangular upper=False left=False unit=True",
]  # fmt: skip


@pytest.mark.parametrize("name", CHECKED_BY_DIFFERENCES)
def test_second_derivatives_against_central_differences(name):
    """gradgradcheck's check: the gradient of s = re <w, grad L> taken through the graph
    equals the central differences of s along every real and imaginary coordinate."""
    fn, values = CASES[name]
    if name == "abs at zero":  # a difference step across 0 sees the kink of |z|
        values = (np.array([0.3 - 0.1j, 1 + 2j, -0.5j]),)
    weights = _weights(values, seed=11)
    xs = [tricycle.tensor(v, requires_grad=True) for v in values]
    grads = tricycle.autograd.grad(fn(tricycle, *xs), xs, create_graph=True)
    s = sum(((g * tricycle.tensor(w).conj()).real if np.iscomplexobj(w) else g * tricycle.tensor(w))
            .sum() for g, w in zip(grads, weights))  # fmt: skip
    ours = [g.array for g in tricycle.autograd.grad(s, xs)]
    eps = 1e-6
    for i, v in enumerate(values):
        units = (1, 1j) if np.iscomplexobj(v) else (1,)
        numeric = np.zeros(np.shape(v), dtype=np.result_type(v, np.float64))
        for index in np.ndindex(np.shape(v)):
            for unit in units:
                ends = []
                for sign in (1, -1):
                    moved = [np.array(x, dtype=np.result_type(x, np.float64)) for x in values]
                    moved[i][index] += sign * eps * unit
                    ends.append(_directional(_gradient(fn, moved), weights))
                numeric[index] += unit * (ends[0] - ends[1]) / (2 * eps)
        np.testing.assert_allclose(ours[i], numeric, rtol=1e-5, atol=1e-6, err_msg=name)


def test_casts_between_complex_dtypes_and_from_real():
    def loss(L, z, x):
        wide = z.to(L.complex64).to(L.complex128)
        return (wide * x.to(L.complex128) ** 2).abs().sum()

    assert_as_torchs(loss, (Z, REAL), rtol=1e-6)  # complex64 on the way


def test_solve_triangular_of_complex_matrices_first_order_as_torchs():
    for upper, unit in itertools.product((True, False), repeat=2):
        results = []
        for lib in (tricycle, torch):
            a, b = (lib.tensor(v.astype(np.complex64), requires_grad=True) for v in (SQUARE, RHS))
            X = lib.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit)
            (X * lib.tensor(complex_values(2, 3, 2, seed=8))).real.sum().backward()
            results.append([X.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
        assert results[0][0].dtype == np.complex64
        for ours, theirs in zip(*results):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="solve_triangular: A and B must have one dtype"):
        tricycle.linalg.solve_triangular(tricycle.tensor(SQUARE), tricycle.tensor(RHS.real),
                                         upper=True)  # fmt: skip
    with pytest.raises(TypeError, match="solve_triangular: A must be a float32, float64, complex"):
        tricycle.linalg.solve_triangular(tricycle.tensor(np.eye(2, dtype=np.int64)),
                                         tricycle.tensor(RHS.real), upper=True)  # fmt: skip


@pytest.mark.parametrize("op", ["svd U", "svd S", "svd Vh", "pinv"])
def test_svd_and_pinv_of_complex_matrices_refuse_a_second_derivative(op):
    A = tricycle.tensor(complex_values(3, 2, seed=9), requires_grad=True)
    if op == "pinv":
        out = tricycle.linalg.pinv(A)
    else:
        out = getattr(tricycle.linalg.svd(A, full_matrices=False), op.split()[1])
    with pytest.raises(NotImplementedError, match=f"{op} of complex matrices"):
        tricycle.autograd.grad((out.abs() ** 2).sum(), A, create_graph=True)
    # a real matrix still reaches the real op's rule: its second derivative is torch's
    ours, theirs = (
        lib.autograd.grad(lib.autograd.grad((lib.linalg.pinv(x) ** 3).sum(), x,
                                            create_graph=True)[0].sum(), x)[0]
        for lib, x in ((module, module.tensor(A.array.real, requires_grad=True))
                       for module in (tricycle, torch))
    )  # fmt: skip
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-9)


def test_every_rule_is_met(monkeypatch):
    """Each rule of ``second_order_complex.KEYS`` is met by the cases above."""
    used = rules_met(monkeypatch)
    for fn, values in CASES.values():
        first_and_second(tricycle, fn, values)
    test_casts_between_complex_dtypes_and_from_real()
    for op in ("svd U", "svd S", "svd Vh", "pinv"):
        test_svd_and_pinv_of_complex_matrices_refuse_a_second_derivative(op)
    missing = {n for n, key in second_order_complex.KEYS.items() if key not in used}
    assert not missing


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_as_on_the_host():
    for name, (fn, values) in sorted(CASES.items()):
        gpu = first_and_second(tricycle, fn, values, device="cuda")
        host = first_and_second(tricycle, fn, values)
        for a, b in zip(gpu[0] + gpu[1], host[0] + host[1]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10, err_msg=name)


def test_a_complex_output_differentiates_given_its_gradient_as_torchs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    z0, w0 = (rng.normal(size=3) + 1j * rng.normal(size=3) for _ in range(2))

    def f(z):
        return (z * z).exp() / (z + 3)  # complex in, complex out

    theirs = torch.tensor(z0, requires_grad=True)
    expected = torch.autograd.grad(f(theirs), theirs, torch.tensor(w0), create_graph=True)[0]
    (expected.abs() ** 2).sum().backward()
    z = tricycle.tensor(z0, requires_grad=True)
    first = tricycle.autograd.grad(f(z), z, tricycle.tensor(w0), create_graph=True)[0]
    np.testing.assert_allclose(first.numpy(), expected.detach().numpy(), rtol=1e-12)
    (first.abs() ** 2).sum().backward()  # a second derivative through the seeded first
    np.testing.assert_allclose(z.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)
    again = tricycle.tensor(z0, requires_grad=True)
    f(again).backward(tricycle.tensor(w0))  # Tensor.backward takes the seed too
    np.testing.assert_allclose(again.grad.numpy(), expected.detach().numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="complex: give the gradient"):
        f(tricycle.tensor(z0, requires_grad=True)).backward()  # torch: only real scalars
    with pytest.raises(TypeError, match="complex one given its gradient"):
        tricycle.autograd.grad(f(tricycle.tensor(z0, requires_grad=True)).sum(), z)
