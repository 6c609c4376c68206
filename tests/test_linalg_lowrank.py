"""torch's randomised and iterative eigen- and singular solvers on tricycle:
``tricycle.svd_lowrank``, ``pca_lowrank`` and ``lobpcg``. Each draws its random start from
its own library's generator, so the checks are on what does not depend on it: singular
values and eigenvalues equal to torch's, the subspaces of U, V and X equal to torch's (|U^T
U_torch| the identity: signs aside), reconstructions, seeded repeatability, gradients
against torch's (the values and sign-free functions of the vectors) and finite
differences, and torch's argument checks."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def low_rank(m, n, rank, seed=0, batch=()):
    return normal(*batch, m, rank, seed=seed) @ normal(*batch, rank, n, seed=seed + 1)


def same_subspace(ours, theirs, atol=1e-8):
    """Columns equal up to sign: |ours^T theirs| is the identity."""
    overlap = np.abs(np.swapaxes(ours, -1, -2) @ theirs)
    np.testing.assert_allclose(
        overlap, np.broadcast_to(np.eye(overlap.shape[-1]), overlap.shape), atol=atol
    )


@pytest.mark.parametrize("shape", [(9, 5), (5, 9), (2, 8, 6)])
def test_svd_lowrank_of_a_low_rank_matrix_is_torchs_svd(shape):
    A = low_rank(*shape[-2:], rank=3, seed=1, batch=shape[:-2])
    tc.manual_seed(0)
    U, S, V = tc.svd_lowrank(tc.tensor(A), q=3)
    tU, tS, tV = torch.svd_lowrank(torch.tensor(A), q=3)
    np.testing.assert_allclose(S.array, tS.numpy(), rtol=1e-10)
    same_subspace(U.array, tU.numpy())
    same_subspace(V.array, tV.numpy())
    np.testing.assert_allclose(
        U.array * S.array[..., None, :] @ np.swapaxes(V.array, -1, -2), A, atol=1e-10
    )
    assert U.shape == tuple(tU.shape) and V.shape == tuple(tV.shape)


def test_svd_lowrank_with_m_and_its_repeatability():
    A = low_rank(7, 5, rank=2, seed=2) + 3.0
    M = np.full((1, 5), 3.0)  # broadcast to A, as torch's
    tc.manual_seed(1)
    first = tc.svd_lowrank(tc.tensor(A), q=2, niter=1, M=tc.tensor(M))
    tc.manual_seed(1)
    again = tc.svd_lowrank(tc.tensor(A), q=2, niter=1, M=tc.tensor(M))
    theirs = torch.svd_lowrank(torch.tensor(A), q=2, niter=1, M=torch.tensor(M))
    np.testing.assert_array_equal(first[0].array, again[0].array)
    np.testing.assert_allclose(first[1].array, theirs[1].numpy(), rtol=1e-10)
    same_subspace(first[2].array, theirs[2].numpy())


def test_pca_lowrank_as_torch_and_the_covariance():
    A = low_rank(10, 4, rank=2, seed=3) + normal(1, 4, seed=5)  # a mean to take away
    tc.manual_seed(2)
    U, S, V = tc.pca_lowrank(tc.tensor(A))
    tU, tS, tV = torch.pca_lowrank(torch.tensor(A))
    assert S.shape == (4,)
    np.testing.assert_allclose(S.array, tS.numpy(), atol=1e-10)
    same_subspace(V.array[:, :2], tV.numpy()[:, :2])
    variances = np.linalg.eigvalsh(np.cov(A, rowvar=False))[::-1]
    np.testing.assert_allclose(S.array**2 / 9, variances, atol=1e-10)
    _, S, _ = tc.pca_lowrank(tc.tensor(A), q=3, center=False)  # rank 3: exact
    np.testing.assert_allclose(S.array, torch.pca_lowrank(torch.tensor(A), 3, False)[1].numpy())


def test_lowrank_gradients_as_torch_and_finite_differences():
    A = low_rank(6, 4, rank=2, seed=4)
    ours = tc.tensor(A, requires_grad=True)
    theirs = torch.tensor(A, requires_grad=True)
    tc.manual_seed(3)
    U, S, V = tc.svd_lowrank(ours, q=2)
    tU, tS, tV = torch.svd_lowrank(theirs, q=2)
    weights = normal(6, 2, seed=6)
    (S.sum() + (U * U * tc.tensor(weights)).sum()).backward()
    (tS.sum() + (tU * tU * torch.tensor(weights)).sum()).backward()
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), atol=1e-8)

    def singular_values(x):
        tc.manual_seed(3)
        return (tc.svd_lowrank(x, q=2)[1] * tc.tensor([1.0, 2.0])).sum()

    check_grads(singular_values, A)


def test_lowrank_checks():
    A = tc.tensor(normal(5, 3))
    with pytest.raises(ValueError, match=r"pca_lowrank: q\(=4\) must be non-negative integer"):
        tc.pca_lowrank(A, q=4)
    with pytest.raises(ValueError, match=r"pca_lowrank: niter"):
        tc.pca_lowrank(A, niter=-1)
    with pytest.raises(TypeError, match=r"svd_lowrank: A must be a float32 or float64"):
        tc.svd_lowrank(tc.tensor([[1, 2]]))
    assert (
        tc.svd_lowrank(A, q=4)[1].shape
        == (3,)
        == tuple(torch.svd_lowrank(torch.tensor(A.array), q=4)[1].shape)
    )


def spd(m, seed=0):
    a = normal(m, m, seed=seed)
    return a @ a.T + np.diag(np.arange(m, dtype=float))


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_eigenpairs_as_torch(largest):
    A = spd(12, seed=1)
    tc.manual_seed(0)
    E, X = tc.lobpcg(tc.tensor(A), k=2, largest=largest)
    tE, tX = torch.lobpcg(torch.tensor(A), k=2, largest=largest)
    np.testing.assert_allclose(E.array, tE.numpy(), rtol=1e-9)
    same_subspace(X.array, tX.numpy(), atol=1e-6)
    exact = np.linalg.eigvalsh(A)
    np.testing.assert_allclose(E.array, exact[::-1][:2] if largest else exact[:2], rtol=1e-9)


def test_lobpcg_generalised_batched_and_with_a_start():
    A = np.stack([spd(9, seed=2), spd(9, seed=3)])
    B = np.stack([spd(9, seed=4) + 9 * np.eye(9)] * 2)
    X0 = normal(2, 9, 2, seed=5)
    E, X = tc.lobpcg(tc.tensor(A), B=tc.tensor(B), X=tc.tensor(X0))
    tE, tX = torch.lobpcg(torch.tensor(A), B=torch.tensor(B), X=torch.tensor(X0))
    assert E.shape == (2, 2) and X.shape == (2, 9, 2)
    np.testing.assert_allclose(E.array, tE.numpy(), rtol=1e-8)
    np.testing.assert_allclose(
        np.swapaxes(X.array, -1, -2) @ B @ X.array, np.broadcast_to(np.eye(2), (2, 2, 2)), atol=1e-8
    )
    np.testing.assert_allclose(A @ X.array, B @ X.array * E.array[:, None, :], atol=1e-5)


def test_lobpcg_gradient_as_torch():
    A = spd(12, seed=6)
    weights = normal(12, 2, seed=7)
    ours = tc.tensor(A, requires_grad=True)
    theirs = torch.tensor(A, requires_grad=True)
    E, X = tc.lobpcg(ours, k=2, tol=1e-12)
    tE, tX = torch.lobpcg(theirs, k=2, tol=1e-12)
    (E.sum() * 0.7 + (X * X * tc.tensor(weights)).sum()).backward()
    (tE.sum() * 0.7 + (tX * tX * torch.tensor(weights)).sum()).backward()
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), atol=1e-8)
    np.testing.assert_allclose(ours.grad.array, ours.grad.array.T)
    with pytest.raises(ValueError, match="does not support backward with B != I"):
        B = tc.tensor(np.eye(12))
        tc.lobpcg(tc.tensor(A, requires_grad=True), k=1, B=B)[0].sum().backward()


def test_lobpcg_checks_as_torch():
    A = tc.tensor(spd(8))
    with pytest.raises(ValueError, match=r"not applicable when the number of A rows \(=8\)"):
        tc.lobpcg(A, k=3)
    with pytest.raises(ValueError, match="not applicable"):
        torch.lobpcg(torch.tensor(A.array), k=3)
    with pytest.raises(ValueError, match=r"lobpcg: A's shape"):
        tc.lobpcg(tc.tensor(normal(4, 5)))
    with pytest.raises(ValueError, match=r"lobpcg: method"):
        tc.lobpcg(A, method="fast")
