"""``tricycle.linalg.eig`` and ``eigvals`` against torch's: the complex eigenvalues and unit
eigenvectors of real and complex, batched matrices (the eigenvectors equal up to the phase of
each, which LAPACK builds leave free: torch's MKL and numpy's OpenBLAS may differ by a sign),
the gradients of real losses of them (phase-invariant ones; a loss that reads a phase raises
as torch's), eigvals of a symmetric matrix as eigvalsh's, torch's errors, and on a GPU the
host's results."""

import numpy as np
import pytest

import tricycle
import tricycle.linalg as LA
from tricycle import backend

torch = pytest.importorskip("torch")

COMPLEX = {np.float32: np.complex64, np.float64: np.complex128}


def matrices(shape, dtype=np.float64, is_complex=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(COMPLEX[dtype] if is_complex else dtype)


def aligned(V, reference):
    """V's columns turned by the phase that takes each onto ``reference``'s."""
    turn = (V.conj() * reference).sum(-2, keepdims=True)
    return V * turn / np.abs(turn)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 4, 4), (1, 1), (0, 3, 3)])
def test_values_are_torchs(shape, dtype, is_complex):
    a = matrices(shape, dtype, is_complex)
    L, V = LA.eig(tricycle.tensor(a))
    Lt, Vt = (t.numpy() for t in torch.linalg.eig(torch.tensor(a)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert L.dtype == V.dtype == Lt.dtype and L.shape == Lt.shape and V.shape == Vt.shape
    assert L.is_complex() and not L.requires_grad
    np.testing.assert_allclose(L.numpy(), Lt, rtol=tol, atol=tol)
    np.testing.assert_allclose(aligned(V.numpy(), Vt), Vt, atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(V.numpy(), axis=-2), 1, rtol=tol)
    np.testing.assert_allclose(a @ V.numpy(), V.numpy() * L.numpy()[..., None, :], atol=tol * 10)
    ours = LA.eigvals(tricycle.tensor(a))
    assert ours.dtype == Lt.dtype and not ours.requires_grad
    np.testing.assert_allclose(ours.numpy(), torch.linalg.eigvals(torch.tensor(a)).numpy(),
                               rtol=tol, atol=tol)  # fmt: skip


def _losses(lib, L, V, w):
    """Real losses of the eigenpairs that no eigenvector's phase changes."""
    ratio = V[..., 0, :] / V[..., 1, :]  # two components of one eigenvector
    return {
        "eigenvalues": (L.abs() * w[0]).sum() + (L.real * w[1]).sum(),
        "eigenvectors": (V.abs() ** 2 * w).sum() + (ratio.real * w[2]).sum(),
        "both": (lib.view_as_real(L * L)[..., 1] * w[3]).sum() + (V.abs() * w).sum(),
    }


@pytest.mark.parametrize("is_complex", [False, True])
@pytest.mark.parametrize("loss", ["eigenvalues", "eigenvectors", "both"])
def test_gradients_are_torchs(loss, is_complex):
    a = matrices((2, 4, 4), is_complex=is_complex, seed=3)
    w = np.random.default_rng(4).standard_normal((4, 4))
    grads = []
    for lib in tricycle, torch:
        A = lib.tensor(a, requires_grad=True)
        L, V = lib.linalg.eig(A)
        _losses(lib, L, V, lib.tensor(w))[loss].backward()
        assert A.grad.dtype == A.dtype
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("is_complex", [False, True])
def test_eigvals_gradient_is_torchs(is_complex):
    a = matrices((3, 3), np.float32, is_complex, seed=5)
    grads = []
    for lib in tricycle, torch:
        A = lib.tensor(a, requires_grad=True)
        L = lib.linalg.eigvals(A)
        assert L.requires_grad
        (L.abs() ** 2).sum().backward()
        grads.append(A.grad.numpy())
    assert grads[0].dtype == grads[1].dtype
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)


def test_a_loss_that_reads_a_phase_raises_as_torchs():
    a = matrices((4, 4), is_complex=True, seed=6)
    for lib in torch, tricycle:
        A = lib.tensor(a, requires_grad=True)
        V = lib.linalg.eig(A).eigenvectors
        with pytest.raises(RuntimeError, match=r"specified up to multiplication by e\^\{i phi\}"):
            V.real.sum().backward()


def test_repeated_eigenvalues_give_torchs_gradients():
    a = np.diag([2.0, 2.0, -1.0])  # the eigenvalues' gradient is finite, the vectors' is not
    for loss in (lambda L, V: L.real.sum(), lambda L, V: (V.abs() ** 2 * V.abs()).sum()):
        grads = []
        for lib in tricycle, torch:
            A = lib.tensor(a, requires_grad=True)
            loss(*lib.linalg.eig(A)).backward()
            grads.append(A.grad.numpy())
        np.testing.assert_array_equal(np.isfinite(grads[0]), np.isfinite(grads[1]))
        finite = np.isfinite(grads[1])
        np.testing.assert_allclose(grads[0][finite], grads[1][finite], atol=1e-12)


def test_eigvals_of_a_symmetric_matrix_are_eigvalshs():
    b = matrices((3, 5, 5), seed=7)
    s = tricycle.tensor(b + b.swapaxes(-1, -2))
    ours = np.sort(LA.eigvals(s).numpy(), -1)
    np.testing.assert_allclose(ours.real, LA.eigvalsh(s).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.imag, 0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("op", ["eig", "eigvals"])
def test_bad_matrices_are_refused_as_torchs(op):
    cases = [
        (np.ones((3, 4)), RuntimeError, "square matrices, but they are 3 by 4"),
        (np.ones(3), RuntimeError, "at least 2 dimensions"),
        (np.ones((3, 3), np.int64), RuntimeError, "float32, float64, complex64 or complex128"),
        (np.ones((3, 3), np.float16), NotImplementedError, "got dtype float16"),
        (np.full((3, 3), np.nan), RuntimeError, "should not contain infs or NaNs"),
    ]
    for a, error, words in cases:
        if op == "eig" or np.isfinite(a).all():  # torch's eigvals reads NaN into MKL (no check)
            with pytest.raises(error):
                getattr(torch.linalg, op)(torch.tensor(a))
        with pytest.raises(error, match=f"linalg.{op}: .*{words}"):
            getattr(LA, op)(tricycle.tensor(a))
    with pytest.raises(TypeError, match=f"linalg.{op}: A must be a Tensor"):
        getattr(LA, op)(np.eye(2))


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("is_complex", [False, True])
def test_on_a_gpu_equals_the_host(is_complex):
    a = matrices((2, 4, 4), is_complex=is_complex, seed=8)
    w = np.random.default_rng(9).standard_normal((4, 4))
    results = []
    for to_gpu in (False, True):
        A = tricycle.tensor(a, requires_grad=True)
        A_used = A.to_gpu() if to_gpu else A
        L, V = LA.eig(A_used)
        assert backend.is_cupy_array(L.array) == to_gpu == backend.is_cupy_array(V.array)
        weights = tricycle.tensor(w).to_gpu() if to_gpu else tricycle.tensor(w)
        (L.abs().sum() + (V.abs() ** 2 * weights).sum()).backward()
        eigenvalues = LA.eigvals(A_used.detach())
        arrays = (L.array, V.array, eigenvalues.array, A.grad.array)  # A moved: its grad too
        results.append([backend.to_host_array(x) for x in arrays])
    for ours, host in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, host, rtol=1e-10, atol=1e-12)


def test_second_derivatives_are_refused():
    A = tricycle.tensor(matrices((3, 3), seed=10), requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        tricycle.autograd.grad(LA.eigvals(A).real.sum(), A, create_graph=True)
