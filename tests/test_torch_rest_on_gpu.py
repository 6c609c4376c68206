"""torch's remaining names (round 36: strided views, bit ops, special functions, linear algebra,
distributions, nn) on a GPU: each result on cupy equals the same call's on the host, and the
gradients too where the function has one. The host's own results are tested against torch in
their own files (``test_tensor_rest``, ``test_special_more``, ``test_linalg_householder``, ...);
this file holds what only a GPU can check: the ``xp`` paths and the host fallbacks."""

import numpy as np
import pytest

import tricycle
import tricycle.nn.functional as F
from tests.helpers import assert_same_on_gpu as _same
from tests.helpers import on_host_and_gpu as _pair
from tricycle import backend, nn
from tricycle.distributions import LKJCholesky, Wishart
from tricycle.distributions.utils import vec_to_tril_matrix

pytestmark = pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")


rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
SYMMETRIC = (lambda a: a + a.T)(rng.standard_normal((6, 6)))

DIFFERENTIABLE = {
    "as_strided": (lambda x: x.as_strided((3, 3), (2, 1), 1), X),
    "householder_product": (lambda x: tricycle.linalg.householder_product(x, x[0, :3] * 0.5), X.T),
    "ormqr": (
        lambda x: tricycle.ormqr(x, x[0, :3] * 0.5, x[:, :2], left=True, transpose=True),
        X.T,
    ),
    "gradient": (lambda x: tricycle.gradient(x, spacing=0.5, edge_order=2)[1], X),
    "hardshrink": (lambda x: x.hardshrink(0.3), X),
    "conv_tbc": (
        lambda x: F.conv_tbc(x.reshape(5, 2, 2), x.reshape(-1)[:12].reshape(2, 2, 3), x[0, :3]),
        X,
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_a_differentiable_function_gives_the_hosts_values_and_gradients(name):
    fn, values = DIFFERENTIABLE[name]
    host, gpu = _pair(values, requires_grad=True)
    out_host, out_gpu = fn(host), fn(gpu)
    _same(out_host, out_gpu)
    out_host.sum().backward()
    out_gpu.sum().backward()
    _same(host.grad, gpu.grad)


POINTWISE = {
    "chebyshev_polynomial_t": lambda x: tricycle.special.chebyshev_polynomial_t(x, 7),
    "legendre_polynomial_p": lambda x: tricycle.special.legendre_polynomial_p(x, 12),
    "hermite_polynomial_h": lambda x: tricycle.special.hermite_polynomial_h(x, 5),
    "airy_ai": tricycle.special.airy_ai,
    "scaled_modified_bessel_k0": lambda x: tricycle.special.scaled_modified_bessel_k0(x.abs()),
    "scaled_modified_bessel_k1": lambda x: tricycle.special.scaled_modified_bessel_k1(x.abs()),
    "spherical_bessel_j0": tricycle.special.spherical_bessel_j0,
    "igamma": lambda x: tricycle.igamma(x.abs() + 0.5, x.abs()),
    "igammac": lambda x: tricycle.igammac(x.abs() + 0.5, x.abs()),
    "nextafter": lambda x: tricycle.nextafter(x, x * 0 + 10.0),
    "geqrf": lambda x: tuple(tricycle.geqrf(x)),
    "hash_tensor": lambda x: tricycle.hash_tensor(x, 1),
    "shift": lambda x: tricycle.bitwise_left_shift((x * 10).int(), 2),
    "vec_to_tril_matrix": lambda x: vec_to_tril_matrix(x.reshape(-1)[:10]),
    "cross_map_lrn": lambda x: nn.CrossMapLRN2d(3)(x.reshape(1, 4, 5, 1)),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_a_function_gives_the_hosts_values(name):
    host, gpu = _pair(X)
    _same(POINTWISE[name](host), POINTWISE[name](gpu), rtol=1e-9)


def test_ldl_factor_and_solve_give_the_hosts_results():
    host, gpu = _pair(SYMMETRIC)
    (ld_h, piv_h), (ld_g, piv_g) = tricycle.linalg.ldl_factor(host), tricycle.linalg.ldl_factor(gpu)
    _same((ld_h, piv_h), (ld_g, piv_g))
    b_host, b_gpu = _pair(X[:, :1].repeat(2, 0)[:6])
    _same(
        tricycle.linalg.ldl_solve(ld_h, piv_h, b_host),
        tricycle.linalg.ldl_solve(ld_g, piv_g, b_gpu),
    )


def test_lobpcg_finds_the_hosts_eigenvalues():
    a = SYMMETRIC @ SYMMETRIC.T + np.eye(6)
    host, gpu = _pair(np.pad(a, ((0, 6), (0, 6))) + np.eye(12) * 0.1)
    values_host, _ = tricycle.lobpcg(host, k=2)
    values_gpu, _ = tricycle.lobpcg(gpu, k=2)
    _same(values_host, values_gpu, rtol=1e-6)


def test_multi_head_attention_forward_without_bias_runs_on_the_gpu():
    E, heads = 4, 2
    q_host, q_gpu = _pair(rng.standard_normal((3, 1, E)))
    w_host, w_gpu = _pair(rng.standard_normal((3 * E, E)) / 2)
    o_host, o_gpu = _pair(rng.standard_normal((E, E)) / 2)

    def attend(q, w, o):
        return F.multi_head_attention_forward(q, q, q, E, heads, w, None, None, None, False, 0.0,
                                              o, None, training=False)  # fmt: skip

    _same(attend(q_host, w_host, o_host), attend(q_gpu, w_gpu, o_gpu))


def test_linear_cross_entropy_gives_the_hosts_loss():
    x_host, x_gpu = _pair(X)
    w_host, w_gpu = _pair(rng.standard_normal((3, 5)))
    target = np.array([0, 2, 1, 1])
    loss_host = F.linear_cross_entropy(x_host, w_host, tricycle.tensor(target))
    loss_gpu = F.linear_cross_entropy(x_gpu, w_gpu, tricycle.tensor(target).to_gpu())
    _same(loss_host, loss_gpu)


def test_the_random_fills_and_samplers_draw_on_the_gpu():
    """Their numbers are tricycle's generator's: checked on the host; here each lands on the
    GPU with the right shape and support."""
    x = tricycle.zeros(1000, dtype=np.float64).to_gpu()
    for fill, low in ((x.clone().cauchy_, -np.inf), (x.clone().log_normal_, 0.0)):
        drawn = fill()
        assert backend.is_cupy_array(drawn.array) and bool((drawn.array > low).all())
    counts = x.clone().geometric_(0.5)
    assert bool((counts.array >= 1).all())
    rates = tricycle.full((1000,), 3.0, dtype=np.float64).to_gpu()
    drawn = tricycle.poisson(rates)
    assert backend.is_cupy_array(drawn.array) and abs(float(drawn.mean()) - 3.0) < 0.3
    drawn = tricycle.binomial(rates * 0 + 10, rates * 0 + 0.5)
    assert backend.is_cupy_array(drawn.array) and abs(float(drawn.mean()) - 5.0) < 0.4


def test_the_matrix_distributions_sample_on_the_gpu():
    concentration = tricycle.tensor(np.array(2.0)).to_gpu()
    L = LKJCholesky(3, concentration).sample((50,))
    assert backend.is_cupy_array(L.array) and L.shape == (50, 3, 3)
    diagonal = (L @ L.transpose(-1, -2)).array.diagonal(axis1=-2, axis2=-1)
    np.testing.assert_allclose(backend.to_host_array(diagonal), 1.0, rtol=1e-6)
    scale = tricycle.tensor(np.eye(3)).to_gpu()
    W = Wishart(tricycle.tensor(np.array(5.0)).to_gpu(), covariance_matrix=scale).rsample((200,))
    assert backend.is_cupy_array(W.array)
    np.testing.assert_allclose(backend.to_host_array(W.mean(0).array), 5 * np.eye(3), atol=1.0)


def test_dlpack_shares_a_gpu_array():
    cp = backend.cupy()
    array = cp.arange(6.0)
    shared = tricycle.from_dlpack(array)
    array[0] = 42.0
    assert backend.is_cupy_array(shared.array) and float(shared[0]) == 42.0
    back = cp.from_dlpack(tricycle.to_dlpack(shared))
    assert float(back[0]) == 42.0
