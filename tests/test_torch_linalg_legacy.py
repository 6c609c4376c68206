"""torch's older top-level linear algebra on tricycle (``tricycle.linalg.legacy``):
``cholesky``, ``qr``, ``lu``, ``lu_unpack``, ``lu_solve``, ``triangular_solve``,
``cholesky_solve``, ``cholesky_inverse`` and ``matrix_exp`` with torch's argument orders:
values and the gradients of every input against torch in float64 (batched, broadcast, both
triangles), against finite differences, and the functions torch removed raising its
RuntimeError."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def spd(*shape, seed=0):
    """Symmetric positive-definite matrices (..., n, n)."""
    a = normal(*shape, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def triangular(*shape, upper=False, seed=0):
    """Well-conditioned triangular matrices: the diagonal away from zero."""
    a = normal(*shape, seed=seed) * 0.3 + 2 * np.eye(shape[-1])
    return np.triu(a) if upper else np.tril(a)


def leaves(*arrays):
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


def assert_as_torch(ours, theirs, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=rtol, atol=atol)


def assert_grads_as_torch(ours_out, theirs_out, ours_in, theirs_in, seed=1):
    """Backward of sum(out * W) for random W, through both; the inputs' gradients equal."""
    ours_out = ours_out if isinstance(ours_out, tuple | list) else (ours_out,)
    theirs_out = theirs_out if isinstance(theirs_out, tuple | list) else (theirs_out,)
    ours_loss, theirs_loss = 0, 0
    for i, (o, t) in enumerate(zip(ours_out, theirs_out, strict=True)):
        w = normal(*t.shape, seed=seed + i)
        ours_loss = ours_loss + (o * tc.Tensor(w)).sum()
        theirs_loss = theirs_loss + (t * torch.tensor(w)).sum()
    ours_loss.backward()
    theirs_loss.backward()
    for o, t in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(o.grad.array, t.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_takes_upper_by_position(upper):
    (a,), (t,) = leaves(spd(2, 4, 4))
    ours, theirs = tc.cholesky(a, upper), torch.cholesky(t, upper)
    assert_as_torch(ours, theirs)
    assert_grads_as_torch(ours, theirs, [a], [t])


@pytest.mark.parametrize(("shape", "some"), [((5, 3), True), ((5, 3), False), ((2, 3, 3), True)])
def test_qr_reduced_or_complete(shape, some):
    (a,), (t,) = leaves(normal(*shape))
    ours, theirs = tc.qr(a, some), torch.qr(t, some)
    assert ours._fields == ("Q", "R")
    for o, th in zip(ours, theirs, strict=True):
        assert o.shape == tuple(th.shape)
        assert_as_torch(o, th, atol=1e-9)
    if some:
        assert_grads_as_torch(tuple(ours), tuple(theirs), [a], [t])


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 4)])
def test_lu_and_lu_unpack_as_torchs(shape):
    (a,), (t,) = leaves(normal(*shape))
    LU, pivots = tc.lu(a)
    LU_t, pivots_t = torch.lu(t)
    assert_as_torch(LU, LU_t)
    np.testing.assert_array_equal(pivots.array, pivots_t.numpy())
    assert pivots.dtype == np.int32
    P, L, U = tc.lu_unpack(LU, pivots)
    P_t, L_t, U_t = torch.lu_unpack(LU_t, pivots_t)
    for o, th in ((P, P_t), (L, L_t), (U, U_t)):
        assert_as_torch(o, th)
    np.testing.assert_allclose((P @ L @ U).array, a.array, atol=1e-12)
    assert_grads_as_torch((L, U), (L_t, U_t), [a], [t])


def test_lu_gives_infos_and_factors_a_singular_matrix():
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    LU, pivots, infos = tc.lu(tc.tensor(a), get_infos=True)
    _, _, infos_t = torch.lu(torch.tensor(a), get_infos=True)
    np.testing.assert_array_equal(infos.array, infos_t.numpy())
    assert infos.array.tolist() == [2, 0]


def test_lu_unpack_leaves_out_what_is_not_asked_for():
    a = normal(3, 3)
    LU, pivots = tc.lu(tc.tensor(a))
    LU_t, pivots_t = torch.lu(torch.tensor(a))
    for data, piv in ((False, True), (True, False), (False, False)):
        ours = tc.lu_unpack(LU, pivots, unpack_data=data, unpack_pivots=piv)
        theirs = torch.lu_unpack(LU_t, pivots_t, unpack_data=data, unpack_pivots=piv)
        for o, th in zip(ours, theirs, strict=True):
            assert o.shape == tuple(th.shape)
            assert_as_torch(o, th)


def test_lu_solve_takes_b_first():
    (a, b), (t, tb) = leaves(normal(2, 4, 4), normal(2, 4, 3, seed=1))
    LU, pivots = tc.lu(a)
    LU_t, pivots_t = torch.lu(t)
    ours, theirs = tc.lu_solve(b, LU, pivots), torch.lu_solve(tb, LU_t, pivots_t)
    assert_as_torch(ours, theirs)
    assert_grads_as_torch(ours, theirs, [a, b], [t, tb])


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_triangular_solve(upper, transpose, unitriangular):
    A = triangular(2, 4, 4, upper=upper)
    (b, a), (tb, t) = leaves(normal(4, 2, seed=1), A)  # b broadcasts over A's batch
    ours = tc.triangular_solve(b, a, upper, transpose, unitriangular)
    theirs = torch.triangular_solve(tb, t, upper, transpose, unitriangular)
    assert ours._fields == ("solution", "cloned_coefficient")
    assert_as_torch(ours.solution, theirs.solution)
    assert_as_torch(ours.cloned_coefficient, theirs.cloned_coefficient)
    assert_grads_as_torch(tuple(ours), tuple(theirs), [b, a], [tb, t])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    factor = np.linalg.cholesky(spd(2, 3, 3))
    factor = np.swapaxes(factor, -1, -2) if upper else factor
    (B, L), (tB, tL) = leaves(normal(2, 3, 2, seed=1), factor)
    ours, theirs = tc.cholesky_solve(B, L, upper), torch.cholesky_solve(tB, tL, upper)
    assert_as_torch(ours, theirs)
    assert_grads_as_torch(ours, theirs, [B, L], [tB, tL])
    (L,), (tL,) = leaves(factor)
    ours, theirs = tc.cholesky_inverse(L, upper), torch.cholesky_inverse(tL, upper)
    assert_as_torch(ours, theirs)
    assert_grads_as_torch(ours, theirs, [L], [tL])


def test_the_gradients_against_finite_differences():
    L = triangular(3, 3, upper=False)
    check_grads(lambda b, f: tc.cholesky_solve(b, tc.tril(f)), normal(3, 2, seed=2), L)
    check_grads(lambda f: tc.cholesky_inverse(tc.triu(f), upper=True), L.T)
    check_grads(lambda b, a: tc.triangular_solve(b, a, False, True)[0], normal(3, 2), L)
    check_grads(lambda lu: tc.lu_unpack(lu, tc.tensor([2, 3, 3], dtype=np.int32))[1], L)


def test_matrix_exp_is_linalgs():
    (a,), (t,) = leaves(normal(3, 3) * 0.5)
    ours, theirs = tc.matrix_exp(a), torch.matrix_exp(t)
    assert_as_torch(ours, theirs)
    assert_grads_as_torch(ours, theirs, [a], [t])


@pytest.mark.parametrize("name", ["solve", "lstsq", "symeig", "eig", "matrix_rank"])
def test_the_removed_functions_raise_torchs_message(name):
    a = np.eye(2)
    args = (a, a) if name in ("solve", "lstsq") else (a,)
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch, name)(*map(torch.tensor, args))
    with pytest.raises(RuntimeError) as ours:
        getattr(tc, name)(*map(tc.tensor, args))
    assert str(ours.value) == str(theirs.value).replace("torch", "tricycle")


def test_eig_points_to_linalg_eig():
    with pytest.raises(RuntimeError, match=r"(?s)removed.*tricycle\.linalg\.eig\(A\)"):
        tc.eig(tc.eye(2), eigenvectors=True)


def test_bad_arguments_are_refused_naming_the_function():
    a = tc.tensor(spd(3, 3))
    with pytest.raises(TypeError, match="cholesky.*upper"):
        tc.cholesky(a, "yes")
    with pytest.raises(TypeError, match="qr.*some"):
        tc.qr(a, 1)
    LU, pivots = tc.lu(a)
    with pytest.raises(ValueError, match=r"lu_unpack: LU_pivots must be integers of shape \(3,\)"):
        tc.lu_unpack(LU, pivots[:2])
    with pytest.raises(ValueError, match=r"lu_unpack: LU_pivots must lie in \[1, 3\]"):
        tc.lu_unpack(LU, pivots * 0)
    with pytest.raises(ValueError, match="cholesky_inverse"):
        tc.cholesky_inverse(tc.ones(2, 3))
    with pytest.raises(ValueError, match="solve_triangular"):
        tc.triangular_solve(tc.ones(2, 1), tc.ones(3, 3))


def test_the_tensor_methods_are_the_functions():
    """``x.cholesky()``, ``b.lu_solve(LU, pivots)`` and the rest: the function, tensor first."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 4))
    spd = tc.tensor(a @ a.T + 4 * np.eye(4))
    b = tc.tensor(rng.normal(size=(4, 2)))
    L = tc.cholesky(spd)
    LU, pivots = tc.lu(spd)
    pairs = [
        (spd.cholesky(upper=True), tc.cholesky(spd, True)),
        (spd.qr()[1], tc.qr(spd)[1]),
        (spd.lu()[0], LU),
        (b.lu_solve(LU, pivots), tc.lu_solve(b, LU, pivots)),
        (b.triangular_solve(L, upper=False)[0], tc.triangular_solve(b, L, upper=False)[0]),
        (b.cholesky_solve(L), tc.cholesky_solve(b, L)),
        (L.cholesky_inverse(), tc.cholesky_inverse(L)),
        (spd.matrix_exp(), tc.matrix_exp(spd)),
    ]
    for method, function in pairs:
        np.testing.assert_array_equal(method.numpy(), function.numpy())
    np.testing.assert_allclose(
        (b.cholesky_solve(L)).numpy(), np.linalg.solve(spd.numpy(), b.numpy())
    )
