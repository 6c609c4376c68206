"""The rest of tricycle.linalg against torch.linalg in float64: lstsq, the LU factorisation
(lu_factor, lu_factor_ex, lu, lu_solve), matrix_exp, cross, vecdot, multi_dot, vander,
diagonal, matrix_rank, cond, the _ex variants and tensorinv/tensorsolve: values and the
gradients of every input (batched, broadcast, random well-conditioned matrices), each
backward against finite differences over random shapes, and the errors for bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle.linalg as LA
from tests.helpers import randn
from tests.test_linalg import _outputs_and_gradients, batches, check, general, run_both, spd
from tricycle import backend
from tricycle.linalg.matrices import LinAlgError
from tricycle.tensor import Tensor


def _torch():
    return pytest.importorskip("torch")


def _lu_of(a):
    """Our (LU, pivots) arrays of ``a`` (torch's, as the LU tests check)."""
    LU, pivots = LA.lu_factor(Tensor(a))
    return LU.array, pivots.array


SQUARE = general(2, n=4, seed=3)
LU_SQUARE, PIVOTS = _lu_of(SQUARE)
SINGULAR = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])  # the first singular
INF = math.inf


def _lu_solve(left, adjoint):
    def ours(LU, B):
        return LA.lu_solve(LU, Tensor(PIVOTS), B, left=left, adjoint=adjoint)

    def theirs(LU, B):
        pivots = _torch().tensor(PIVOTS)
        return _torch().linalg.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)

    B = randn(3, 1, 4, 2, seed=4) if left else randn(3, 1, 2, 4, seed=4)  # broadcast
    return ours, theirs, [LU_SQUARE, B]


def _same(name, **words):
    """(ours, theirs, ...) of the function ``name`` in both libraries, with ``words``."""
    return (lambda *a: getattr(LA, name)(*a, **words),
            lambda *a: getattr(_torch().linalg, name)(*a, **words))  # fmt: skip


CASES = {  # name -> (ours, theirs, inputs)
    "lstsq tall": (*_same("lstsq"), [randn(2, 5, 3), randn(5, 2, seed=1)[None]]),
    "lstsq wide": (*_same("lstsq"), [randn(2, 3, 5), randn(2, 3, 2, seed=1)]),
    "lstsq vectors": (*_same("lstsq"), [randn(2, 5, 3), randn(2, 5, seed=1)]),
    "lstsq gels": (*_same("lstsq", driver="gels"), [randn(2, 5, 3), randn(2, 5, 2, seed=1)]),
    "lstsq gelsd": (*_same("lstsq", driver="gelsd"), [randn(5, 3), randn(5, 2, seed=1)]),
    "lstsq gelss wide": (*_same("lstsq", driver="gelss"), [randn(3, 5), randn(3, 2, seed=1)]),
    "lu_factor square": (*_same("lu_factor"), [randn(2, 4, 4)]),
    "lu_factor tall": (*_same("lu_factor"), [randn(2, 5, 3)]),
    "lu_factor wide": (*_same("lu_factor"), [randn(3, 6)]),
    "lu_factor blocks": (*_same("lu_factor"), [randn(2, 70, 40)]),  # past one block of columns
    "lu_factor_ex": (*_same("lu_factor_ex"), [randn(2, 4, 4)]),
    "lu square": (*_same("lu"), [randn(2, 4, 4)]),
    "lu tall": (*_same("lu"), [randn(2, 5, 3)]),
    "lu wide": (*_same("lu"), [randn(3, 6)]),
    "lu_solve": _lu_solve(True, False),
    "lu_solve adjoint": _lu_solve(True, True),
    "lu_solve right": _lu_solve(False, False),
    "lu_solve right adjoint": _lu_solve(False, True),
    "matrix_exp": (*_same("matrix_exp"), [randn(2, 4, 4) * [[[0.1]], [[3.0]]]]),
    "cross": (*_same("cross"), [randn(2, 1, 3), randn(4, 3, seed=1)[None]]),
    "cross dim 0": (*_same("cross", dim=0), [randn(3, 4), randn(3, 1, seed=1)]),
    "vecdot": (*_same("vecdot"), [randn(2, 1, 3), randn(4, 3, seed=1)]),
    "vecdot dim 0": (*_same("vecdot", dim=0), [randn(3, 4), randn(3, 1, seed=1)]),
    "vander": (*_same("vander"), [randn(2, 4)]),
    "vander N": (*_same("vander", N=6), [randn(3)]),
    "diagonal": (*_same("diagonal", offset=1, dim1=0, dim2=2), [randn(3, 2, 4)]),
    "cholesky_ex": (*_same("cholesky_ex"), [spd(2, n=4)]),
    "cholesky_ex upper": (*_same("cholesky_ex", upper=True), [spd(2, n=4)]),
    "inv_ex": (*_same("inv_ex"), [general(2)]),
    "solve_ex": (*_same("solve_ex"), [general(2), randn(3, 2, seed=1)]),
    "solve_ex vector, left=False": (*_same("solve_ex", left=False), [general(), randn(2, 3)]),
    "tensorinv": (*_same("tensorinv"), [general(n=6).reshape(2, 3, 6)]),
    "tensorinv ind=1": (*_same("tensorinv", ind=1), [general(n=4)]),
    "tensorsolve": (*_same("tensorsolve"), [general(n=6).reshape(6, 2, 3), randn(6)]),
    "tensorsolve dims": (*_same("tensorsolve", dims=(0,)), [general(n=6).reshape(6, 2, 3),
                                                            randn(2, 3)]),
}  # fmt: skip
for _p in (None, 2, -2):
    CASES[f"cond {_p}"] = (*_same("cond", p=_p), [general(2)])
for _p in ("fro", "nuc", INF, -INF, 1, -1):  # torch's backward of these fails (an in-place
    # write into inv_ex's output): its definition, ||A|| ||A^-1||, is the reference
    CASES[f"cond {_p}"] = (
        lambda a, p=_p: LA.cond(a, p),
        lambda a, p=_p: (lambda L: L.matrix_norm(a, p) * L.matrix_norm(L.inv(a), p))(
            _torch().linalg
        ),
        [general(2)],
    )
CASES["cond wide"] = (*_same("cond"), [randn(3, 5)])
for _shapes in [((3,), (3, 4), (4,)), ((2, 3), (3, 5), (5, 4), (4, 2)), ((3,), (3, 2))]:
    CASES[f"multi_dot {_shapes}"] = (
        lambda *t: LA.multi_dot(t),
        lambda *t: _torch().linalg.multi_dot(t),
        [randn(*s, seed=i) for i, s in enumerate(_shapes)],
    )


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    ours, theirs, arrays = CASES[name]
    run_both(ours, theirs, arrays, rtol=1e-8, atol=1e-10)


def test_matrix_rank_and_the_lstsq_outputs_without_gradients_match_torch():
    torch = _torch()
    A = randn(3, 5, 4)
    A[1, :, 3] = A[1, :, 0] + A[1, :, 1]  # rank 3
    A[2] = 0.0  # rank 0
    S = spd(2, n=4)
    S[0, :, 3] = S[0, 3, :] = 0.0  # symmetric of rank 3
    ranks = [(A, {}), (A, dict(atol=1.0)), (A, dict(rtol=0.5)), (A, dict(atol=0.5, rtol=0.1)),
             (S, dict(hermitian=True)), (S, dict(hermitian=True, atol=4.0))]  # fmt: skip
    for a, words in ranks:
        got = LA.matrix_rank(Tensor(a), **words)
        want = torch.linalg.matrix_rank(torch.tensor(a), **words)
        assert got.dtype == np.int64 and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.array, want.numpy(), err_msg=str(words))
    B = randn(3, 5, 2, seed=1)
    for driver in LA.least_squares.DRIVERS:
        got = LA.lstsq(Tensor(A), Tensor(B), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
        assert got.rank.dtype == np.int64 and got.rank.shape == tuple(want.rank.shape)
        np.testing.assert_array_equal(got.rank.array, want.rank.numpy())
        assert got.residuals.shape == tuple(want.residuals.shape)  # empty but for gels
        if driver != "gels":  # gels assumes full rank (its solution is garbage here)
            assert got.residuals.shape == (0,)
            X = got.solution.array
            np.testing.assert_allclose(np.abs(X).sum(), want.solution.abs().sum().item())


def test_the_ex_variants_give_torchs_info_and_results_where_they_succeed():
    torch = _torch()
    indefinite = np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]])
    B = randn(2, 2, 1)
    for ours, theirs, arrays in [
        (LA.inv_ex, torch.linalg.inv_ex, [SINGULAR]),
        (LA.solve_ex, torch.linalg.solve_ex, [SINGULAR, B]),
        (LA.cholesky_ex, torch.linalg.cholesky_ex, [indefinite]),
        (LA.lu_factor_ex, torch.linalg.lu_factor_ex, [SINGULAR]),
    ]:
        got, want = ours(*map(Tensor, arrays)), theirs(*map(torch.tensor, arrays))
        assert got.info.dtype == np.int32
        np.testing.assert_array_equal(got.info.array, want.info.numpy())
        np.testing.assert_allclose(got[0].array[1], want[0].numpy()[1], rtol=1e-12)
        assert ours is LA.lu_factor_ex or np.isnan(got[0].array[0]).all()
    A = Tensor(SINGULAR, requires_grad=True)  # the failed matrix sends no gradient back
    LA.inv_ex(A).inverse[1].sum().backward()
    assert (A.grad.array[0] == 0).all() and (A.grad.array[1] != 0).any()
    for p in ("fro", "nuc", INF, -INF, 1, -1, 2, -2, None):
        got = LA.cond(Tensor(SINGULAR), p).array
        np.testing.assert_allclose(got, torch.linalg.cond(torch.tensor(SINGULAR), p).numpy())
        assert (p in (2, -2, None, "nuc") or got[0] == INF) and np.isfinite(got[1])


def test_the_ex_variants_read_cupys_silent_failures(monkeypatch):
    """cupy's inv and cholesky return NaN for a matrix they cannot take instead of raising:
    the info is computed all the same."""

    def nan_where_singular(a):
        return np.where(np.abs(np.linalg.det(a))[..., None, None] < 1e-12, np.nan, 1.0)

    monkeypatch.setattr(np.linalg, "inv", nan_where_singular)
    np.testing.assert_array_equal(LA.inv_ex(Tensor(SINGULAR)).info.array, [2, 0])
    monkeypatch.setattr(np.linalg, "cholesky", lambda a: np.full(a.shape, np.nan))
    np.testing.assert_array_equal(LA.cholesky_ex(Tensor(-spd(2))).info.array, [1, 1])


def test_lu_without_pivoting_is_torchs_where_no_row_swap_is_needed():
    """torch has pivot=False on a GPU only: on a diagonally dominant matrix, where partial
    pivoting swaps no row, it is the pivoted factorisation with P = I."""
    torch = _torch()
    a = randn(2, 4, 4) + 10 * np.eye(4)
    P, L, U = LA.lu(Tensor(a), pivot=False)
    _, L_torch, U_torch = torch.linalg.lu(torch.tensor(a))
    assert P.shape == (0,)
    np.testing.assert_allclose(L.array, L_torch.numpy(), rtol=1e-12)
    np.testing.assert_allclose(U.array, U_torch.numpy(), rtol=1e-12)
    LU, pivots = LA.lu_factor(Tensor(a), pivot=False)
    np.testing.assert_array_equal(pivots.array, np.broadcast_to(np.arange(1, 5), (2, 4)))
    check(lambda x: LA.lu(x, pivot=False).L, a)
    zero_minor = np.array([[0.0, 1.0], [1.0, 0.0]])  # no LU without row swaps: inf, as torch's
    assert not np.isfinite(LA.lu(Tensor(zero_minor), pivot=False).L.array).all()


# ====================================================================== finite differences
@settings(max_examples=8, deadline=None)
@given(batches(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 10**6))
def test_lu_and_lstsq_against_finite_differences(batch, m, n, seed):
    A = randn(*batch, m, n, seed=seed) + 2 * np.eye(m, n)  # full rank, pivots well apart
    check(lambda a: LA.lu(a).L, A)
    check(lambda a: LA.lu(a).U, A)
    check(lambda a: LA.lu_factor(a).LU, A)
    B = randn(*[1] * len(batch), m, 2, seed=seed + 1)  # broadcast (torch's B has A's axes)
    check(lambda a, b: LA.lstsq(a, b).solution, A, B)
    if m > n:
        check(lambda a, b: LA.lstsq(a, b, driver="gelsd").residuals, A, B)


@settings(max_examples=8, deadline=None)
@given(batches(), st.integers(1, 4), st.booleans(), st.booleans(), st.integers(0, 10**6))
def test_lu_solve_against_finite_differences(batch, n, left, adjoint, seed):
    LU, pivots = _lu_of(general(*batch, n=n, seed=seed))
    B = randn(n, 2, seed=seed + 1)
    B = B if left else B.T
    check(lambda lu, b: LA.lu_solve(lu, Tensor(pivots), b, left=left, adjoint=adjoint), LU, B)


@settings(max_examples=8, deadline=None)
@given(batches(), st.integers(1, 4), st.floats(0.01, 4.0), st.integers(0, 10**6))
def test_matrix_exp_and_the_products_against_finite_differences(batch, n, scale, seed):
    check(LA.matrix_exp, randn(*batch, n, n, seed=seed) * scale)
    check(LA.cross, randn(2, *batch, 3, seed=seed), randn(1, *batch, 3, seed=seed + 1))
    check(lambda x: LA.vander(x, N=n + 1), randn(*batch, n, seed=seed))
    check(lambda a: LA.cholesky_ex(a @ a.mT).L, spd(*batch, n=n, seed=seed))
    check(lambda a: LA.cond(a, "nuc"), general(*batch, n=n, seed=seed))


# ====================================================================== errors
THREE = Tensor(general())
PIV = Tensor(PIVOTS[0])
ERRORS = [
    (lambda: LA.lstsq(THREE, Tensor(np.ones((4, 2)))), ValueError, "lstsq: B must have A's m = 3"),
    (lambda: LA.lstsq(THREE, Tensor(np.ones((2, 3, 3, 1)))), ValueError,
     r"lstsq: B must be \(\.\.\., m, k\) or"),
    (lambda: LA.lstsq(THREE, Tensor(np.ones(3)), driver="gelsx"), ValueError,
     "lstsq: driver must be None or one of"),
    (lambda: LA.lstsq(THREE, Tensor(np.ones(3), dtype=np.float32)), TypeError, "one dtype"),
    (lambda: LA.lu_factor(Tensor(SINGULAR)), LinAlgError,
     r"lu_factor: U\[2,2\] is zero for the matrix A\[0\] of A \(shape \(2, 2, 2\)\)"),
    (lambda: LA.lu_factor(Tensor(np.ones(3))), ValueError, "lu_factor: A's shape must be"),
    (lambda: LA.lu(THREE, pivot=1), TypeError, "lu: pivot must be True or False"),
    (lambda: LA.lu_solve(Tensor(LU_SQUARE[0]), PIV, Tensor(np.ones((3, 1)))), ValueError,
     r"lu_solve: incompatible shapes .* B must be \(\.\.\., 4, k\)"),
    (lambda: LA.lu_solve(Tensor(LU_SQUARE[0]), Tensor(PIVOTS[0, :3]), Tensor(np.ones((4, 1)))),
     ValueError, r"lu_solve: pivots must be integers of shape \(4,\)"),
    (lambda: LA.lu_solve(Tensor(LU_SQUARE[0]), Tensor(PIVOTS[0] + 4), Tensor(np.ones((4, 1)))),
     ValueError, r"lu_solve: pivots must lie in \[1, 4\]"),
    (lambda: LA.lu_solve(Tensor(LU_SQUARE[0]), PIVOTS[0], Tensor(np.ones((4, 1)))), TypeError,
     "lu_solve: pivots must be a Tensor"),
    (lambda: LA.matrix_exp(Tensor(np.ones((2, 3)))), ValueError, "matrix_exp: A's shape must be"),
    (lambda: LA.cross(Tensor(np.ones((4, 2))), Tensor(np.ones((4, 2)))), ValueError,
     "cross: the axis dim=-1 .* must have length 3"),
    (lambda: LA.cross(Tensor(np.ones(3)), Tensor(np.ones((4, 3)))), ValueError,
     "cross: a .* and b .* must have as many axes"),
    (lambda: LA.vecdot(Tensor(np.ones(3)), Tensor(np.ones(4))), ValueError, "do not broadcast"),
    (lambda: LA.multi_dot([THREE]), TypeError, "multi_dot: tensors must be a list or tuple of two"),
    (lambda: LA.multi_dot([THREE, Tensor(np.ones((2, 2)))]), ValueError, "cannot be multiplied"),
    (lambda: LA.multi_dot([THREE, Tensor(np.ones((3, 3, 3))), THREE]), ValueError,
     r"multi_dot: tensors\[1\]'s shape must be 2-D"),
    (lambda: LA.vander(Tensor(np.ones(3)), N=1), ValueError, "vander: N must be greater than 1"),
    (lambda: LA.vander(Tensor(np.array(2.0))), ValueError, "vander: x's shape must be"),
    (lambda: LA.matrix_rank(THREE, atol=-1.0), ValueError, "matrix_rank: atol must be"),
    (lambda: LA.cond(THREE, 3), ValueError, "cond: p must be None or one of"),
    (lambda: LA.cond(Tensor(np.ones((3, 4))), "fro"), ValueError, r"cond \(p='fro'\): A's shape"),
    (lambda: LA.cholesky_ex(Tensor(np.array([[1.0, 2.0], [2.0, 1.0]])), check_errors=True),
     LinAlgError, "cholesky_ex: A .* is not positive-definite: its leading minor of order 2"),
    (lambda: LA.inv_ex(Tensor(SINGULAR), check_errors=True), LinAlgError,
     r"inv_ex: the matrix A\[0\] of A .* is singular: U\[2,2\]"),
    (lambda: LA.solve_ex(Tensor(SINGULAR), Tensor(np.ones(2)), check_errors=True), LinAlgError,
     "solve_ex: .* singular"),
    (lambda: LA.tensorinv(Tensor(np.ones((2, 3, 4)))), ValueError,
     r"tensorinv: A of shape \(2, 3, 4\) must read as a square matrix"),
    (lambda: LA.tensorinv(THREE, ind=0), ValueError, "tensorinv: ind must be"),
    (lambda: LA.tensorsolve(Tensor(np.ones((6, 2, 3))), Tensor(np.ones(5))), ValueError,
     "tensorsolve: B's shape"),
    (lambda: LA.diagonal(np.ones((2, 2))), TypeError, "diagonal: A must be a Tensor"),
]  # fmt: skip


@pytest.mark.parametrize("make, error, message", ERRORS)
def test_bad_input_is_a_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        make()


# ====================================================================== on a GPU
GPU_CASES = [name for name in CASES if not name.startswith("lu_solve")]  # host pivots


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", GPU_CASES)
def test_a_gpu_computes_what_the_host_computes(name):
    cp = backend.cupy()
    fn, _, arrays = CASES[name]
    on_host = _outputs_and_gradients(fn, arrays, lambda a: a)
    on_gpu = _outputs_and_gradients(fn, arrays, cp.asarray)
    assert len(on_host) == len(on_gpu)
    for i, (h, g) in enumerate(zip(on_host, on_gpu)):
        np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-10, err_msg=f"{name}: {i}")


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_a_gpu_gives_the_info_of_the_matrices_it_cannot_take():
    cp = backend.cupy()
    singular = Tensor(cp.asarray(SINGULAR))
    indefinite = Tensor(cp.asarray(np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]])))
    for info in (LA.inv_ex(singular).info, LA.cholesky_ex(indefinite).info,
                 LA.lu_factor_ex(singular).info):  # fmt: skip
        np.testing.assert_array_equal(backend.to_host_array(info.array), [2, 0])
    LU, pivots = LA.lu_factor(Tensor(cp.asarray(SQUARE)))
    X = LA.lu_solve(LU, pivots, Tensor(cp.asarray(randn(2, 4, 1))))
    np.testing.assert_allclose(backend.to_host_array(X.array),
                               np.linalg.solve(SQUARE, randn(2, 4, 1)), rtol=1e-10)  # fmt: skip
