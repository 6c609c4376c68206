"""tricycle.linalg against torch.linalg in float64: every function's values and the gradients
of its inputs (batched, broadcast, random well-conditioned matrices, symmetric
positive-definite ones for cholesky and eigh), each backward against finite differences
over random shapes, torch's Tensor methods, and the errors for bad input (not square,
singular, not positive-definite on either device, wrong dtypes and arguments).

Eigenvectors and singular vectors have arbitrary signs: they are compared through products
that do not depend on them (the outer products of each vector with itself, or of u_i with
v_i), as a loss must be written."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
import tricycle.linalg as LA
from tests.helpers import randn
from tricycle import backend
from tricycle.gradcheck import gradcheck
from tricycle.linalg.matrices import LinAlgError, lapack
from tricycle.tensor import Tensor


# ====================================================================== inputs
def general(*batch, n=3, seed=0) -> np.ndarray:
    """Well-conditioned (*batch, n, n) matrices: random, plus n on the diagonal."""
    return randn(*batch, n, n, seed=seed) + n * np.eye(n)


def spd(*batch, n=3, seed=0) -> np.ndarray:
    """Symmetric positive-definite (*batch, n, n) matrices."""
    a = randn(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def symmetric(*batch, n=3, seed=0) -> np.ndarray:
    """Symmetric (*batch, n, n) matrices (distinct eigenvalues: random)."""
    a = randn(*batch, n, n, seed=seed)
    return a + np.swapaxes(a, -1, -2)


def pairs(V, W):
    """v_i w_i^T for the columns of V (..., m, k) and W (..., n, k): (..., m, n, k), the same
    whatever the signs of the pairs (v_i, w_i) (torch's tensors or ours)."""
    return V[..., :, None, :] * W[..., None, :, :]


# ====================================================================== against torch
def run_both(ours, theirs, arrays, seed=7, rtol=1e-9, atol=1e-11):
    """Values of ``ours(*tensors)`` and ``theirs(*torch tensors)`` (a tensor or a tuple of
    them), and the gradients of every input for a random weighting of every output."""
    torch = pytest.importorskip("torch")
    mine = [Tensor(a, requires_grad=True) for a in arrays]
    them = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = ours(*mine), theirs(*them)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    rng = np.random.default_rng(seed)
    loss_ours, loss_theirs = 0, 0
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape), (g.shape, tuple(w.shape))
        np.testing.assert_allclose(g.array, w.detach().numpy(), rtol=rtol, atol=atol)
        if w.requires_grad:
            weights = rng.normal(size=g.shape)
            loss_ours = loss_ours + (g * Tensor(weights, requires_grad=False)).sum()
            loss_theirs = loss_theirs + (w * torch.tensor(weights)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for i, (m, t) in enumerate(zip(mine, them)):
        want_grad = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got_grad = np.zeros(m.shape) if m.grad is None else m.grad.array
        np.testing.assert_allclose(got_grad, want_grad, rtol=rtol, atol=atol, err_msg=f"d{i}")


def _torch_linalg():
    return pytest.importorskip("torch").linalg


INF = math.inf
CASES = {  # name -> (ours, theirs (of torch.linalg), inputs)
    "inv": (LA.inv, lambda L: L.inv, [general(2)]),
    "solve": (LA.solve, lambda L: L.solve, [general(2), randn(3, 2, seed=1)]),
    "solve vector": (LA.solve, lambda L: L.solve, [general(2), randn(3, seed=1)]),
    "solve vectors": (LA.solve, lambda L: L.solve, [general(2), randn(2, 3, seed=1)]),
    "solve left=False": (lambda a, b: LA.solve(a, b, left=False),
                         lambda L: lambda a, b: L.solve(a, b, left=False),
                         [general(), randn(4, 2, 3, seed=1)]),
    "det": (LA.det, lambda L: L.det, [general(2)]),
    "slogdet": (LA.slogdet, lambda L: L.slogdet, [randn(2, 4, 4)]),
    "cholesky": (LA.cholesky, lambda L: L.cholesky, [spd(2, n=4)]),
    "cholesky upper": (lambda a: LA.cholesky(a, upper=True),
                       lambda L: lambda a: L.cholesky(a, upper=True), [spd(2, n=4)]),
    "qr tall": (LA.qr, lambda L: L.qr, [randn(2, 5, 3)]),
    "qr square": (LA.qr, lambda L: L.qr, [randn(3, 3)]),
    "qr wide": (LA.qr, lambda L: L.qr, [randn(2, 3, 5)]),
    "qr complete wide": (lambda a: LA.qr(a, "complete"),
                         lambda L: lambda a: L.qr(a, "complete"), [randn(3, 5)]),
    "eigvalsh": (LA.eigvalsh, lambda L: L.eigvalsh, [symmetric(2, n=4)]),
    "eigvalsh U": (lambda a: LA.eigvalsh(a, "U"), lambda L: lambda a: L.eigvalsh(a, "U"),
                   [randn(2, 4, 4)]),  # the other triangle is never read
    "svdvals": (LA.svdvals, lambda L: L.svdvals, [randn(2, 4, 3)]),
    "matrix_power 3": (lambda a: LA.matrix_power(a, 3),
                       lambda L: lambda a: L.matrix_power(a, 3), [general(2)]),
    "matrix_power 1": (lambda a: LA.matrix_power(a, 1),
                       lambda L: lambda a: L.matrix_power(a, 1), [general()]),
    "matrix_power 0": (lambda a: LA.matrix_power(a, 0),
                       lambda L: lambda a: L.matrix_power(a, 0), [general(2)]),
    "matrix_power -2": (lambda a: LA.matrix_power(a, -2),
                        lambda L: lambda a: L.matrix_power(a, -2), [general(2)]),
    "pinv tall": (LA.pinv, lambda L: L.pinv, [randn(2, 5, 3)]),
    "pinv wide": (LA.pinv, lambda L: L.pinv, [randn(3, 4)]),
    "pinv hermitian": (lambda a: LA.pinv(a, hermitian=True),
                       lambda L: lambda a: L.pinv(a, hermitian=True), [spd(2, n=3)]),
    "pinv hermitian, upper ignored": (lambda a: LA.pinv(a, hermitian=True),
                                      lambda L: lambda a: L.pinv(a, hermitian=True),
                                      [general(2)]),
    "pinv atol": (lambda a: LA.pinv(a, atol=0.5), lambda L: lambda a: L.pinv(a, atol=0.5),
                  [randn(2, 4, 3)]),
}  # fmt: skip
for _upper in (False, True):
    for _left in (True, False):
        for _unit in (False, True):
            _words = dict(upper=_upper, left=_left, unitriangular=_unit)
            CASES[f"solve_triangular {_words}"] = (
                lambda a, b, w=_words: LA.solve_triangular(a, b, **w),
                lambda L, w=_words: lambda a, b: L.solve_triangular(a, b, **w),
                [general(2), randn(3, 3, seed=1)],  # A's other triangle is never read
            )


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    ours, theirs, arrays = CASES[name]
    run_both(ours, theirs(_torch_linalg()), arrays)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(uplo):
    def invariants(eigenvalues, Q):
        return eigenvalues, pairs(Q, Q)

    A = symmetric(2, n=4)
    run_both(lambda a: invariants(*LA.eigh(a, uplo)),
             lambda a: invariants(*_torch_linalg().eigh(a, uplo)), [A])  # fmt: skip


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4), (4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_matches_torch(shape, full_matrices):
    def invariants(U, S, Vh):
        k = S.shape[-1]
        return S, pairs(U[..., :k], Vh.mT[..., :k]), pairs(U[..., :k], U[..., :k])

    torch_svd = _torch_linalg().svd
    run_both(lambda a: invariants(*LA.svd(a, full_matrices)),
             lambda a: invariants(*torch_svd(a, full_matrices)), [randn(*shape)])  # fmt: skip
    U, S, Vh = LA.svd(Tensor(randn(*shape)), full_matrices)
    k, (m, n) = S.shape[-1], shape[-2:]
    assert U.shape[-2:] == ((m, m) if full_matrices else (m, k))
    assert Vh.shape[-2:] == ((n, n) if full_matrices else (k, n))


VECTOR_ORDS = [2, 1, INF, -INF, 0, 0.5, 3, -1, 1.5]


@pytest.mark.parametrize("order", VECTOR_ORDS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (-1, False), ((0, 2), True)])
def test_vector_norm_matches_torch(order, dim, keepdim):
    x = randn(2, 3, 4)
    x[0, 1, 2] = 0.0  # a zero, where some ords' gradients are masked
    run_both(lambda a: LA.vector_norm(a, order, dim, keepdim),
             lambda a: _torch_linalg().vector_norm(a, order, dim, keepdim), [x])  # fmt: skip


@pytest.mark.parametrize("order", ["fro", "nuc", 1, -1, 2, -2, INF, -INF])
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((2, 0), True)])
def test_matrix_norm_matches_torch(order, dim, keepdim):
    run_both(lambda a: LA.matrix_norm(a, order, dim, keepdim),
             lambda a: _torch_linalg().matrix_norm(a, order, dim, keepdim),
             [randn(3, 2, 4)])  # fmt: skip


@pytest.mark.parametrize(
    "shape, order, dim",
    [((2, 3, 4), None, None), ((3, 4), None, None), ((3, 4), "nuc", None), ((3, 4), INF, None),
     ((5,), 3, None), ((2, 3, 4), 1, 1), ((2, 3, 4), 2, (0, 2)), ((2, 3, 4), None, (1,))],
)  # fmt: skip
def test_norm_chooses_as_torch(shape, order, dim):
    run_both(lambda a: LA.norm(a, order, dim),
             lambda a: _torch_linalg().norm(a, order, dim), [randn(*shape)])  # fmt: skip


def test_logdet_and_the_tensor_methods_match_torch():
    torch = pytest.importorskip("torch")
    A = general(2)
    A[1] = -A[1]  # a negative determinant: logdet is NaN there, as torch's
    B = spd(2, n=3)
    run_both(lambda a: a.logdet(), lambda a: torch.logdet(a), [B])
    mine, theirs = Tensor(A).logdet().array, torch.logdet(torch.tensor(A)).numpy()
    np.testing.assert_allclose(mine, theirs, rtol=1e-12)
    assert np.isnan(mine[1])
    for name, args in [("inverse", ()), ("det", ()), ("slogdet", ()), ("matrix_power", (2,)),
                       ("pinverse", ()), ("pinverse", (0.5,))]:  # fmt: skip
        run_both(lambda a: getattr(a, name)(*args), lambda a: getattr(a, name)(*args), [A])
    assert "linalg" in dir(tricycle) and tricycle.linalg is LA


# ====================================================================== finite differences
def batches():
    return st.lists(st.integers(1, 2), max_size=2).map(tuple)


def check(fn, *arrays):
    assert gradcheck(fn, *arrays, rtol=1e-4, atol=1e-6)


@settings(max_examples=10)
@given(batches(), st.integers(1, 4), st.integers(1, 3), st.integers(0, 10**6))
def test_inv_solve_and_det_against_finite_differences(batch, n, k, seed):
    A, B = general(*batch, n=n, seed=seed), randn(n, k, seed=seed + 1)  # B broadcast
    check(LA.inv, A)
    check(LA.solve, A, B)
    X = randn(n + 2, n, seed=seed + 1)  # n + 2 rows: never read as vectors (batches are <= 2)
    check(lambda a, b: LA.solve(a, b, left=False), A, X)
    check(LA.det, A)
    check(lambda a: LA.slogdet(a).logabsdet, A)
    check(lambda a: LA.matrix_power(a, -3), A)


@settings(max_examples=10)
@given(batches(), st.integers(1, 4), st.booleans(), st.booleans(), st.booleans(),
       st.integers(0, 10**6))  # fmt: skip
def test_solve_triangular_against_finite_differences(batch, n, upper, left, unit, seed):
    A, B = general(*batch, n=n, seed=seed), randn(n, 2, seed=seed + 1)
    B = B if left else B.T
    check(lambda a, b: LA.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit),
          A, B)  # fmt: skip


@settings(max_examples=10)
@given(batches(), st.integers(1, 4), st.integers(0, 10**6))
def test_cholesky_and_eigh_against_finite_differences(batch, n, seed):
    # the ops read one triangle, their gradients are symmetric (torch's): a symmetric input
    def sym(a):
        return (a + a.mT) * 0.5

    check(lambda a: LA.cholesky(sym(a)), spd(*batch, n=n, seed=seed))
    A = symmetric(*batch, n=n, seed=seed)
    check(lambda a: LA.eigh(sym(a)).eigenvalues, A)
    check(lambda a: pairs(*[LA.eigh(sym(a)).eigenvectors] * 2), A)


@settings(max_examples=10)
@given(batches(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 10**6))
def test_qr_svd_and_pinv_against_finite_differences(batch, m, n, seed):
    A = randn(*batch, m, n, seed=seed)
    check(lambda a: LA.qr(a).Q, A)
    check(lambda a: LA.qr(a).R, A)
    check(LA.svdvals, A)

    def singular_vectors(a):
        U, S, Vh = LA.svd(a, full_matrices=False)
        return pairs(U, Vh.mT)

    check(singular_vectors, A)
    check(LA.pinv, A)


@settings(max_examples=10)
@given(batches(), st.integers(1, 4), st.sampled_from(VECTOR_ORDS[:3] + VECTOR_ORDS[5:]),
       st.integers(0, 10**6))  # fmt: skip
def test_norms_against_finite_differences(batch, n, order, seed):
    x = randn(*batch, n, 3, seed=seed)
    check(lambda a: LA.vector_norm(a, order, -1), x)
    check(lambda a: LA.matrix_norm(a, "nuc"), x)


def test_the_outputs_of_a_decomposition_add_their_gradients_at_its_input():
    """Q R, U diag(S) Vh, L L^T and Q diag(lambda) Q^T rebuild A: each output sends its own
    part of the gradient back, and the parts must add up to the identity map (symmetrised
    for the factorisations of symmetric matrices, whose gradients are symmetric)."""
    W = randn(2, 4, 3, seed=3)
    rebuilt = {
        "qr": lambda a: (lambda Q, R: Q @ R)(*LA.qr(a)),
        "svd": lambda a: (lambda U, S, Vh: (U * S[..., None, :]) @ Vh)(*LA.svd(a, False)),
    }
    for name, fn in rebuilt.items():
        A = Tensor(randn(2, 4, 3), requires_grad=True)
        (fn(A) * Tensor(W, requires_grad=False)).sum().backward()
        np.testing.assert_allclose(A.grad.array, W, rtol=1e-10, atol=1e-12, err_msg=name)
    W = W[..., :3, :]
    symmetric_rebuilt = {
        "cholesky": lambda a: (lambda L: L @ L.mT)(LA.cholesky(a)),
        "eigh": lambda a: (lambda w, Q: (Q * w[..., None, :]) @ Q.mT)(*LA.eigh(a)),
    }
    for name, fn in symmetric_rebuilt.items():
        A = Tensor(spd(2), requires_grad=True)
        (fn(A) * Tensor(W, requires_grad=False)).sum().backward()
        expected = (W + np.swapaxes(W, -1, -2)) / 2
        np.testing.assert_allclose(A.grad.array, expected, rtol=1e-9, atol=1e-11, err_msg=name)


def test_norms_compute_in_the_dtype_given():
    torch = pytest.importorskip("torch")
    x = randn(3, 4).astype(np.float32)
    for fn in ("vector_norm", "matrix_norm", "norm"):
        got = getattr(LA, fn)(Tensor(x), dtype=np.float64)
        want = getattr(torch.linalg, fn)(torch.tensor(x), dtype=torch.float64)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got.array, want.numpy(), rtol=1e-12)


# ====================================================================== errors
THREE = Tensor(general())
SINGULAR = Tensor(np.array([[1.0, 2.0], [2.0, 4.0]]))
ERRORS = [
    (lambda: LA.inv(Tensor(np.ones((2, 3)))), ValueError, r"inv: A's shape must be \(\.\.\., n"),
    (lambda: LA.det(Tensor(np.ones(3))), ValueError, "det: A's shape must be"),
    (lambda: LA.inv(SINGULAR), LinAlgError, r"inv: the matrices A \(shape \(2, 2\)\) are singular"),
    (lambda: LA.solve(SINGULAR, Tensor(np.ones(2))), LinAlgError, "solve: .* singular"),
    (lambda: LA.cholesky(Tensor(np.array([[1.0, 2.0], [2.0, 1.0]]))), LinAlgError,
     "cholesky: .* symmetric positive-definite"),
    (lambda: LA.inv(Tensor(np.eye(3, dtype=np.int64))), TypeError, "float32, float64.*int64"),
    (lambda: LA.inv(np.eye(3)), TypeError, "inv: A must be a Tensor"),
    (lambda: LA.solve(THREE, Tensor(np.ones((4, 2)))), ValueError, "incompatible shapes"),
    (lambda: LA.solve(Tensor(general(2)), Tensor(np.ones((3, 3, 1)))), ValueError,
     "do not broadcast"),
    (lambda: LA.solve(THREE, Tensor(np.ones(3)), left=False), ValueError, "left=False"),
    (lambda: LA.solve_triangular(THREE, Tensor(np.ones(3)), upper=True), ValueError, "B's shape"),
    (lambda: LA.qr(THREE, "full"), ValueError, "qr: mode must be"),
    (lambda: LA.eigh(THREE, "X"), ValueError, "eigh: UPLO must be 'L' or 'U'"),
    (lambda: LA.matrix_power(THREE, 1.5), TypeError, "matrix_power: n must be an integer"),
    (lambda: LA.vector_norm(THREE, "fro"), TypeError, "vector_norm: ord must be a real"),
    (lambda: LA.vector_norm(Tensor(np.ones(0)), INF), ValueError, "empty"),
    (lambda: LA.matrix_norm(THREE, 3), ValueError, "matrix_norm: ord must be one of"),
    (lambda: LA.matrix_norm(THREE, dim=(1, 1)), ValueError, "two distinct axes"),
    (lambda: LA.norm(Tensor(np.ones((2, 3, 4))), 2), ValueError, "must be 1-D or 2-D"),
    (lambda: LA.norm(THREE, "nuc", dim=0), ValueError, "norm: ord must be a number"),
]  # fmt: skip


@pytest.mark.parametrize("make, error, message", ERRORS)
def test_bad_input_is_a_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_singular_and_indefinite_are_caught_when_the_library_returns_nan(monkeypatch):
    """cupy's solvers return NaN or a factor that stopped (a non-positive diagonal) instead of
    raising: the ops check the result, as numpy's raising is checked."""
    a = np.eye(2)
    with pytest.raises(LinAlgError, match="op: what"):
        lapack("op", "what", lambda x: x * np.nan, a)
    assert np.isnan(lapack("op", "what", lambda x: x * np.nan, a * np.nan)).all()  # NaN in

    def stopped(x):  # cuSOLVER's potrf when the leading minor of order 2 is not positive
        return np.array([[1.0, 0.0], [2.0, -3.0]])

    monkeypatch.setattr(np.linalg, "cholesky", stopped)
    with pytest.raises(LinAlgError, match="cholesky"):
        LA.cholesky(Tensor(np.array([[1.0, 2.0], [2.0, 1.0]])))


@pytest.mark.parametrize("mode, A", [("r", randn(3, 2)), ("complete", randn(4, 2))])
def test_qr_backward_raises_where_torchs_does(mode, A):
    A = Tensor(A, requires_grad=True)
    Q, R = LA.qr(A, mode)
    with pytest.raises(ValueError, match="qr"):
        R.sum().backward()
    if mode == "r":
        assert Q.shape == (0,)


def test_repeated_eigenvalues_give_torchs_gradients():
    """Eigenvalues' gradient stays finite; eigenvectors' is not defined (NaN), as torch's."""
    A = Tensor(np.diag([1.0, 1.0, 2.0]), requires_grad=True)
    LA.eigh(A).eigenvalues.sum().backward()
    np.testing.assert_allclose(A.grad.array, np.eye(3))
    A.grad = None
    LA.eigh(A).eigenvectors.sum().backward()
    assert not np.isfinite(A.grad.array).all()


# ====================================================================== on a GPU
def _outputs_and_gradients(fn, arrays, move):
    """``fn``'s outputs and its inputs' gradients (for fixed random output weights), as host
    arrays, with the inputs put where ``move`` puts them."""
    leaves = [Tensor(move(a), requires_grad=True) for a in arrays]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng, loss = np.random.default_rng(7), 0
    for out in outs:
        if out.requires_grad:
            weights = Tensor(move(rng.normal(size=out.shape)), requires_grad=False)
            loss = loss + (out * weights).sum()
    loss.backward()
    host = backend.to_host_array
    grads = [t.grad for t in leaves if t.grad is not None]
    return [host(o.array) for o in outs] + [host(g.array) for g in grads]


def _sign_free(name, fn):
    """``fn`` with its decompositions' outputs read through products free of their signs."""
    if name.startswith("qr") and "complete" not in name:
        return lambda a: pairs(*(lambda Q, R: (Q, R.mT))(*fn(a)))
    return fn


GPU_CASES = {name: (_sign_free(name, fn), arrays) for name, (fn, _, arrays) in CASES.items()}
GPU_CASES["eigh"] = (lambda a: (lambda w, Q: (w, pairs(Q, Q)))(*LA.eigh(a)), [symmetric(2, n=4)])
GPU_CASES["svd"] = (
    lambda a: (lambda U, S, Vh: (S, pairs(U, Vh.mT)))(*LA.svd(a, False)),
    [randn(2, 5, 3)],
)
del GPU_CASES["qr complete wide"]  # Q's extra columns: not unique


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_a_gpu_computes_what_the_host_computes(name):
    cp = backend.cupy()
    fn, arrays = GPU_CASES[name]
    on_host = _outputs_and_gradients(fn, arrays, lambda a: a)
    on_gpu = _outputs_and_gradients(fn, arrays, cp.asarray)
    assert len(on_host) == len(on_gpu)
    for i, (h, g) in enumerate(zip(on_host, on_gpu)):
        np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-10, err_msg=f"{name}: {i}")


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_a_gpu_raises_for_singular_and_indefinite_matrices():
    """cuSOLVER returns NaN or a factor that stopped, in silence: the ops check and raise."""
    cp = backend.cupy()
    singular = Tensor(cp.asarray(np.array([[[1.0, 2.0], [2.0, 4.0]]] * 2)))
    indefinite = Tensor(cp.asarray(np.array([[[1.0, 2.0], [2.0, 1.0]]] * 2)))
    with pytest.raises(LinAlgError, match="singular"):
        LA.inv(singular)
    with pytest.raises(LinAlgError, match="singular"):
        LA.solve(singular, Tensor(cp.ones((2, 2, 1))))
    with pytest.raises(LinAlgError, match="positive-definite"):
        LA.cholesky(indefinite)
    with pytest.raises(LinAlgError, match="positive-definite"):
        LA.cholesky(indefinite[0])
