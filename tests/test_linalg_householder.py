"""QR in LAPACK's compact form and the LDL^T factorisation against torch's:
``tricycle.geqrf`` (+ Tensor method), ``linalg.householder_product``/``orgqr`` and
``ormqr`` (values to rounding, batched, both dtypes; gradients in every input against
torch's and finite differences; geqrf's backward refused as torch's), ``linalg.ldl_factor``,
``ldl_factor_ex`` and ``ldl_solve`` (LD and pivots equal to LAPACK's, torch's, for random
symmetric matrices whose choice of 1 x 1 and 2 x 2 pivots is clear; the reconstruction
P A P^T = L D L^T from the compact form; singular D; no gradient, as torch's),
``linalg.matmul``, and the Tensor methods torch removed (``lstsq``, ``solve``, ``symeig``,
``eig``) raising its RuntimeError."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def symmetric(*shape, seed=0):
    a = normal(*shape, seed=seed)
    return a + np.swapaxes(a, -1, -2)


def assert_as_torch(ours, theirs, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=rtol, atol=atol)


SHAPES = [(5, 3), (3, 5), (4, 4), (2, 4, 2), (1, 1), (3, 1, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_geqrf_is_lapacks(shape, dtype):
    A = normal(*shape, seed=len(shape)).astype(dtype)
    a, tau = tc.geqrf(tc.tensor(A))
    ta, ttau = torch.geqrf(torch.tensor(A))
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert a.dtype == np.dtype(dtype) and tau.shape == tuple(ttau.shape)
    assert_as_torch(a, ta, rtol=tol, atol=tol)
    assert_as_torch(tau, ttau, rtol=tol, atol=tol)
    assert_as_torch(tc.tensor(A).geqrf().tau, ttau, rtol=tol, atol=tol)


def test_geqrf_of_a_column_already_reduced_has_tau_zero():
    A = np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 4.0]])
    a, tau = tc.geqrf(tc.tensor(A))
    ta, ttau = torch.geqrf(torch.tensor(A))
    assert float(tau.array[0]) == 0.0 == float(ttau[0])
    assert_as_torch(a, ta)
    assert_as_torch(tau, ttau)


def test_geqrf_has_no_gradient_as_torch():
    A = tc.tensor(normal(3, 2), requires_grad=True)
    a, _ = tc.geqrf(A)
    tA = torch.tensor(normal(3, 2), requires_grad=True)
    with pytest.raises(NotImplementedError, match="geqrf"):
        torch.geqrf(tA)[0].sum().backward()
    with pytest.raises(NotImplementedError, match="geqrf"):
        a.sum().backward()


def compact(shape, seed=0):
    """geqrf's (a, tau) of a random matrix, as numpy arrays."""
    a, tau = torch.geqrf(torch.tensor(normal(*shape, seed=seed)))
    return a.numpy(), tau.numpy()


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 4, 2), (3, 1)])
def test_householder_product_values_and_gradients_as_torch(shape):
    a, tau = compact(shape)
    tau = tau[..., : max(1, tau.shape[-1] - 1)] if shape == (5, 3) else tau  # k < n too
    ours = [tc.tensor(x, requires_grad=True) for x in (a, tau)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, tau)]
    Q = tc.linalg.householder_product(*ours)
    tQ = torch.linalg.householder_product(*theirs)
    assert_as_torch(Q, tQ)
    weights = normal(*Q.shape, seed=9)
    (Q * tc.tensor(weights)).sum().backward()
    (tQ * torch.tensor(weights)).sum().backward()
    for x, tx in zip(ours, theirs):
        assert_as_torch(x.grad, tx.grad)
    assert_as_torch(tc.orgqr(*ours), tQ)
    assert_as_torch(ours[0].orgqr(ours[1]), tQ)
    check_grads(lambda x, t: (tc.linalg.householder_product(x, t) * weights).sum(), a, tau)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_values_and_gradients_as_torch(left, transpose):
    a, tau = compact((2, 4, 3), seed=1)
    other = normal(2, 4, 2, seed=2) if left else normal(2, 3, 4, seed=2)
    ours = [tc.tensor(x, requires_grad=True) for x in (a, tau, other)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, tau, other)]
    out = tc.ormqr(*ours, left, transpose)
    tout = torch.ormqr(*theirs, left, transpose)
    assert_as_torch(out, tout)
    assert_as_torch(ours[0].ormqr(ours[1], ours[2], left=left, transpose=transpose), tout)
    weights = normal(*out.shape, seed=3)
    (out * tc.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    for x, tx in zip(ours, theirs):
        assert_as_torch(x.grad, tx.grad)
    check_grads(lambda x, t, c: (tc.ormqr(x, t, c, left, transpose) * weights).sum(), a, tau, other)


def test_ormqr_with_q_from_geqrf_is_q_times_other():
    A = normal(5, 3, seed=4)
    a, tau = tc.geqrf(tc.tensor(A))
    Q = tc.linalg.householder_product(a, tau)  # the reduced Q: A = Q R
    R = np.triu(a.array[:3])
    np.testing.assert_allclose(Q.array @ R, A, atol=1e-12)
    C = tc.tensor(normal(5, 2, seed=5))
    QtC = tc.ormqr(a, tau, C, transpose=True)
    np.testing.assert_allclose(QtC.array[:3], Q.array.T @ C.array, atol=1e-12)


def test_householder_errors():
    a, tau = (tc.tensor(x) for x in compact((4, 3)))
    with pytest.raises(ValueError, match=r"householder_product: input's shape"):
        tc.linalg.householder_product(a.mT, tau)
    with pytest.raises(ValueError, match=r"tau's length 4 must be at most"):
        tc.linalg.householder_product(a, tc.zeros(4, dtype=tc.float64))
    with pytest.raises(ValueError, match=r"batch axes"):
        tc.linalg.householder_product(a, tau[None])
    with pytest.raises(TypeError, match=r"tau must have the dtype"):
        tc.linalg.householder_product(a, tau.float())
    with pytest.raises(ValueError, match=r"ormqr: input .* must have 2 rows"):
        tc.ormqr(a, tau, tc.zeros(2, 4, dtype=tc.float64))
    with pytest.raises(TypeError, match=r"geqrf: input must be a float32 or float64"):
        tc.geqrf(tc.tensor([[1, 2]]))


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 6, 6), (12, 12)])
def test_ldl_factor_and_solve_are_lapacks(shape):
    A = symmetric(*shape, seed=shape[-1])
    B = normal(*shape[:-1], 3, seed=7)
    LD, pivots = tc.linalg.ldl_factor(tc.tensor(A))
    tLD, tpivots = torch.linalg.ldl_factor(torch.tensor(A))
    assert_as_torch(LD, tLD, atol=1e-12)
    assert pivots.dtype == np.int32
    np.testing.assert_array_equal(pivots.array, tpivots.numpy())
    X = tc.linalg.ldl_solve(LD, pivots, tc.tensor(B))
    assert_as_torch(X, torch.linalg.ldl_solve(tLD, tpivots, torch.tensor(B)), atol=1e-11)
    np.testing.assert_allclose(A @ X.array, B, atol=1e-10)


def reconstruct(LD, pivots):
    """P^T L D L^T P of one compact (LD, pivots), as LAPACK's dsytrf documents it: A = U D U^T
    with U = P(1) L(1) P(2) L(2) ..., each L(k) unit lower with one or two columns."""
    n = LD.shape[0]
    U, D, k = np.eye(n), np.zeros((n, n)), 0
    while k < n:
        step = 1 if pivots[k] > 0 else 2
        kp = abs(pivots[k]) - 1
        P = np.eye(n)
        P[[k + step - 1, kp]] = P[[kp, k + step - 1]]
        Lk = np.eye(n)
        Lk[k + step :, k : k + step] = LD[k + step :, k : k + step]
        D[k : k + step, k : k + step] = np.tril(LD[k : k + step, k : k + step])
        D[k, k + step - 1] = D[k + step - 1, k]
        U = U @ P @ Lk
        k += step
    return U @ D @ U.T


def test_ldl_reconstructs_a_with_two_by_two_pivots():
    A = np.array([[0.0, 1, 2, 3], [1, 0, 3, 1], [2, 3, 0, 1], [3, 1, 1, 0.5]])  # zero diagonal
    LD, pivots = tc.linalg.ldl_factor(tc.tensor(A))
    assert (pivots.array < 0).any()
    np.testing.assert_allclose(reconstruct(LD.array, pivots.array), A, atol=1e-12)
    tLD, tpivots = torch.linalg.ldl_factor(torch.tensor(A))
    np.testing.assert_array_equal(pivots.array, tpivots.numpy())
    assert_as_torch(LD, tLD)
    np.testing.assert_allclose(np.triu(LD.array, 1), 0)


def test_ldl_reads_the_lower_triangle_and_takes_hermitian():
    A = symmetric(4, 4, seed=3)
    junk = A + np.triu(normal(4, 4, seed=4), 1)
    same = tc.linalg.ldl_factor(tc.tensor(junk), hermitian=True)
    assert_as_torch(same.LD, torch.linalg.ldl_factor(torch.tensor(A)).LD)


def test_ldl_singular_d_and_errors():
    zero = tc.zeros(2, 3, 3, dtype=tc.float64)
    LD, pivots, info = tc.linalg.ldl_factor_ex(zero)
    tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(torch.zeros(2, 3, 3, dtype=torch.float64))
    np.testing.assert_array_equal(info.array, tinfo.numpy())
    np.testing.assert_array_equal(pivots.array, tpivots.numpy())
    with pytest.raises(tc.linalg.LinAlgError, match=r"D\[0, 0\] of the batch element \(0,\)"):
        tc.linalg.ldl_factor(zero)
    with pytest.raises(tc.linalg.LinAlgError, match="ldl_factor_ex"):
        tc.linalg.ldl_factor_ex(zero, check_errors=True)
    with pytest.raises(ValueError, match=r"ldl_factor_ex: A's shape"):
        tc.linalg.ldl_factor(tc.zeros(2, 3, dtype=tc.float64))
    LD, pivots = tc.linalg.ldl_factor(tc.tensor(symmetric(3, 3)))
    with pytest.raises(ValueError, match=r"ldl_solve: pivots must be integers of shape \(3,\)"):
        tc.linalg.ldl_solve(LD, pivots.double(), tc.zeros(3, 1, dtype=tc.float64))
    with pytest.raises(ValueError, match=r"ldl_solve: B \(2, 1\) must be"):
        tc.linalg.ldl_solve(LD, pivots, tc.zeros(2, 1, dtype=tc.float64))


def test_ldl_has_no_gradient_as_torch():
    A = tc.tensor(symmetric(3, 3), requires_grad=True)
    LD, pivots = tc.linalg.ldl_factor(A)
    with pytest.raises(RuntimeError, match="linalg_ldl_factor_ex is not implemented"):
        LD.sum().backward()
    B = tc.tensor(normal(3, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg_ldl_solve is not implemented"):
        tc.linalg.ldl_solve(LD.detach(), pivots, B).sum().backward()


def test_linalg_matmul_is_matmul():
    a, b = normal(2, 3, 4), normal(4, 5, seed=1)
    assert_as_torch(tc.linalg.matmul(tc.tensor(a), tc.tensor(b)), torch.tensor(a) @ torch.tensor(b))


@pytest.mark.parametrize("name", ["lstsq", "solve", "symeig", "eig"])
def test_removed_tensor_methods_raise_torchs_error(name):
    x = np.eye(2)
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        getattr(torch.tensor(x), name)(torch.tensor(x))
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        getattr(tc.tensor(x), name)(tc.tensor(x))
