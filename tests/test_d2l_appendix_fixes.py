"""What "Dive into Deep Learning"'s appendix on mathematics (tests/test_d2l_appendix_math.py)
found missing or different from torch, each against torch (forward and backward):
``distributions.Poisson``; ``torch.det`` (and ``logdet``, ``slogdet``, ``inverse``,
``matrix_power``, ``pinverse``) as functions; ``arange``/``linspace`` bounds given as
one-element tensors (``torch.arange(torch.min(xs), torch.max(xs), 0.01)``); iteration over a
0-d tensor refused at once, so that ``np.iterable`` is False for it and matplotlib takes it as
a number (``plt.hlines(0.5, a - 4 * torch.sqrt(2 * p), ...)``); ``log2``/``log10``/``log1p``
at and below their zero with no numpy warning (an entropy's ``nansum``).
"""

import warnings

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def host(x):
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.numpy(), dtype=float)


# ---------------------------------------------------------------------- Poisson
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_poisson_log_prob_and_its_gradient_are_torch(shape):
    rng = np.random.default_rng(len(shape))
    rate = rng.uniform(0.5, 6, size=shape).astype(np.float32)
    value = rng.integers(0, 9, size=(4, *shape)).astype(np.float32)
    value[0] = 0  # k = 0: k log(rate) is 0
    results = []
    for lib in torch, tc:
        r = lib.tensor(rate, requires_grad=True)
        d = lib.distributions.Poisson(r)
        log_p = d.log_prob(lib.tensor(value))
        weights = np.linspace(-1, 1, log_p.numel(), dtype=np.float32).reshape(log_p.shape)
        (log_p * lib.tensor(weights)).sum().backward()
        results.append([host(log_p), host(r.grad), host(d.mean), host(d.variance), host(d.mode)])
        assert d.batch_shape == shape and d.event_shape == ()
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_poisson_at_rate_zero_is_torch():
    results = []
    for lib in torch, tc:
        r = lib.tensor([0.0, 0.0, 2.0], requires_grad=True)
        log_p = lib.distributions.poisson.Poisson(r).log_prob(lib.tensor([0.0, 3.0, 0.0]))
        log_p[0::2].sum().backward()
        results.append([host(log_p), host(r.grad)])
    np.testing.assert_array_equal(results[1][0], results[0][0])  # 0, -inf, -2
    np.testing.assert_allclose(results[1][1][1:], results[0][1][1:])
    # d/d(rate) of 0 log(rate) - rate at rate 0 is -1; torch's xlogy gives 0 / 0 there (NaN)
    assert results[1][1][0] == -1 and np.isnan(results[0][1][0])


def test_poisson_draws_counts_of_its_rate():
    tc.manual_seed(0)
    d = tc.distributions.poisson.Poisson(tc.tensor([1.0, 5.0, 20.0]))
    draws = d.sample((4000,))
    assert draws.shape == (4000, 3) and draws.dtype == np.float32 and not draws.requires_grad
    x = draws.numpy()
    assert (x >= 0).all() and (x % 1 == 0).all()
    np.testing.assert_allclose(x.mean(0), [1, 5, 20], rtol=0.05)
    np.testing.assert_allclose(x.var(0), [1, 5, 20], rtol=0.1)
    assert tc.distributions.Poisson(5.0).sample((10, 10)).shape == (10, 10)  # d2l's


def test_poisson_refuses_what_torch_refuses():
    for lib in torch, tc:
        with pytest.raises(ValueError, match="rate"):
            lib.distributions.Poisson(lib.tensor([-1.0, 2.0]))
        with pytest.raises(ValueError):
            lib.distributions.Poisson(2.0).log_prob(lib.tensor(1.5))  # not a count


# ---------------------------------------------------------------------- torch.det & co.
@pytest.mark.parametrize("name", ["det", "logdet", "inverse", "pinverse"])
def test_linear_algebra_functions_outside_linalg_are_torch(name):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)).astype(np.float64)
    results = []
    for lib in torch, tc:
        x = lib.tensor(a, requires_grad=True)
        out = getattr(lib, name)(x)
        (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape))).sum().backward()
        results.append([host(out), host(x.grad)])
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_slogdet_and_matrix_power_as_functions_are_torch():
    a = np.array([[1.0, -1.0], [2.0, 3.0]])
    for lib in torch, tc:
        assert float(lib.det(lib.tensor(a))) == pytest.approx(5)  # d2l's torch.det
    sign, logabs = tc.slogdet(tc.tensor(-a))
    their_sign, their_logabs = torch.slogdet(torch.tensor(-a))
    assert float(sign) == float(their_sign) and float(logabs) == pytest.approx(float(their_logabs))
    cube = tc.matrix_power(tc.tensor(a), 3)
    np.testing.assert_allclose(host(cube), host(torch.matrix_power(torch.tensor(a), 3)))


# ---------------------------------------------------------------------- arange, linspace
@pytest.mark.parametrize(
    "args",
    [
        ("f0", "f1", 0.01),  # d2l statistics' torch.arange(torch.min(xs), torch.max(xs), 0.01)
        ("i3",),
        (0, "i3"),
        (0.5, "f1", "s"),
    ],
)
def test_arange_takes_zero_d_tensors_as_numbers(args):
    numbers = {"f0": np.float32(-2.3015158), "f1": np.float32(2.4), "i3": 3, "s": np.float32(0.25)}
    results = []
    for lib in torch, tc:
        given = [lib.tensor(numbers[a]) if isinstance(a, str) else a for a in args]
        results.append(lib.arange(*given))
    theirs, ours = results
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
    np.testing.assert_allclose(host(ours), host(theirs), rtol=1e-6, atol=1e-7)


def test_linspace_takes_zero_d_tensors_as_numbers():
    theirs = torch.linspace(torch.tensor(-1.5), torch.tensor(2.0), 8)
    ours = tc.linspace(tc.tensor(-1.5), tc.tensor(2.0), 8)
    np.testing.assert_allclose(host(ours), host(theirs))
    with pytest.raises(TypeError, match="arange: start"):
        tc.arange(tc.tensor([1.0, 2.0]), 4)  # two numbers are no bound


# ---------------------------------------------------------------------- iteration
def test_iterating_a_zero_d_tensor_is_refused_as_torch():
    for lib in torch, tc:
        with pytest.raises(TypeError, match="0-d tensor"):
            iter(lib.tensor(2.0))
        assert not np.iterable(lib.tensor(2.0)) and np.iterable(lib.tensor([2.0]))


def test_iterating_rows_gives_torch_values_and_gradients():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    results = []
    for lib in torch, tc:
        x = lib.tensor(a, requires_grad=True)
        rows = list(x)
        assert len(rows) == 3 and rows[0].shape == (2,)
        sum(row * (i + 1) for i, row in enumerate(rows)).sum().backward()
        results.append([np.stack([host(r) for r in rows]), host(x.grad)])
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_matplotlib_takes_a_zero_d_tensor_as_a_number():
    plt = pytest.importorskip("matplotlib.pyplot")
    p = tc.tensor(0.2)
    try:  # d2l random-variables' Chebyshev interval
        lines = plt.hlines(0.5, 0 - 4 * tc.sqrt(2 * p), 0 + 4 * tc.sqrt(2 * p), "black", lw=4)
        np.testing.assert_allclose(lines.get_segments()[0][:, 0], [-2.529822, 2.529822], rtol=1e-6)
    finally:
        plt.close("all")


# ---------------------------------------------------------------------- logarithms
@pytest.mark.parametrize("name", ["log2", "log10", "log1p"])
def test_logarithms_at_and_below_zero_are_torch_without_warnings(name):
    a = np.array([-2.0, -1.0, 0.0, 0.5, 3.0], dtype=np.float32)
    results = []
    for lib in torch, tc:
        x = lib.tensor(a, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = getattr(lib, name)(x)
            out.sum().backward()
        results.append([host(out), host(x.grad)])
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)  # NaN and inf where torch's are


def test_d2l_eigendecomposition_is_torchs():
    a = [[2.0, 1.0], [2.0, 3.0]]  # d2l eigendecomposition's torch.linalg.eig(A)
    ours, ours_v = tc.linalg.eig(tc.tensor(a))
    theirs, theirs_v = torch.linalg.eig(torch.tensor(a))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(abs(ours_v.numpy()), abs(theirs_v.numpy()), rtol=1e-6)
    assert ours.dtype == tc.complex64 and not hasattr(tc.linalg, "no_such_function")
