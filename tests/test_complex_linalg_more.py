"""Complex ``linalg.svd``, ``inv``/``inverse``, ``solve`` (left and ``left=False``), ``pinv``
and ``matrix_norm`` (2, -2, "nuc"), against torch: values (batched, complex64 and
complex128) and gradients with torch's convention for complex tensors (z.grad = dL/dre +
i dL/dim), for real losses of the results; the SVD's losses read no phase of the singular
vectors (or, one test, do: torch's RuntimeError)."""

import numpy as np
import pytest

import tricycle
from tricycle import backend

torch = pytest.importorskip("torch")


def complex_matrices(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _value_and_grads(lib, loss, values, device="cpu"):
    inputs = [lib.tensor(v, requires_grad=True, device=device) for v in values]
    out = loss(lib, *inputs)
    out.backward()
    return [out.detach().cpu().numpy()] + [x.grad.cpu().numpy() for x in inputs]


def _assert_as_torchs(loss, values):
    ours, theirs = (_value_and_grads(lib, loss, values) for lib in (tricycle, torch))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


WIDE, TALL = complex_matrices(2, 3, 4, seed=1), complex_matrices(2, 4, 3, seed=2)
SQUARE, RHS = complex_matrices(2, 3, 3, seed=3), complex_matrices(2, 3, 2, seed=4)
WEIGHTS = complex_matrices(2, 3, 3, seed=5)


def _rebuilt(L, A):  # U diag(S) Vh: reads no phase
    U, S, Vh = L.linalg.svd(A, full_matrices=False)
    return ((U * S[..., None, :]) @ Vh * (0.3 + 1j)).real.sum()


def _paired(L, A):  # U_00 conj(V_00): the phases cancel between U and Vh
    U, _, Vh = L.linalg.svd(A, full_matrices=False)
    return (U[..., 0, 0] * Vh[..., 0, 0] * (1 + 2j)).real.sum()


LOSSES = {
    "svd S": (lambda L, A: (L.linalg.svd(A)[1] ** 2).sum(), [WIDE]),
    "svd |U|": (lambda L, A: L.linalg.svd(A, full_matrices=False)[0].abs().sum(), [WIDE]),
    "svd |Vh| tall": (
        lambda L, A: (L.linalg.svd(A, full_matrices=False)[2].abs() ** 3).sum(),
        [TALL],
    ),
    "svd |U| |Vh| full": (
        lambda L, A: (
            L.linalg.svd(A)[0][..., :3].abs().sum() + L.linalg.svd(A)[2][..., :3, :].abs().sum()
        ),
        [WIDE],
    ),
    "svd rebuilt wide": (_rebuilt, [WIDE]),
    "svd rebuilt tall": (_rebuilt, [TALL]),
    "svd phases cancel": (_paired, [WIDE]),
    "inv": (
        lambda L, A: (L.linalg.inv(A) * L.tensor(WEIGHTS)).real.sum() + L.linalg.inv(A).abs().sum(),
        [SQUARE],
    ),
    "inverse method": (lambda L, A: (A.inverse() ** 2).imag.sum(), [SQUARE]),
    "solve": (lambda L, A, B: (L.linalg.solve(A, B) * (0.3 + 1j)).real.sum(), [SQUARE, RHS]),
    "solve vectors": (lambda L, A, b: L.linalg.solve(A, b).abs().sum(), [SQUARE, RHS[..., 0]]),
    "solve left=False": (
        lambda L, A, B: (L.linalg.solve(A, B.mT, left=False) * (0.3 + 1j)).imag.sum(),
        [SQUARE, RHS],
    ),
    "solve broadcast": (lambda L, A, B: L.linalg.solve(A, B).abs().sum(), [SQUARE[0], RHS]),
    "pinv wide": (
        lambda L, A: (L.linalg.pinv(A) * L.tensor(WIDE.swapaxes(-1, -2))).real.sum(),
        [WIDE],
    ),
    "pinv tall": (lambda L, A: L.linalg.pinv(A).abs().sum(), [TALL]),
    "pinv hermitian": (
        lambda L, A: (L.linalg.pinv(A, hermitian=True) * (1 + 1j)).real.sum(),
        [SQUARE],
    ),
    "matrix_norm nuc": (lambda L, A: L.linalg.matrix_norm(A, "nuc").sum(), [WIDE]),
    "matrix_norm 2": (lambda L, A: L.linalg.matrix_norm(A, 2).sum(), [TALL]),
    "matrix_norm -2 dims": (
        lambda L, A: L.linalg.matrix_norm(A, -2, dim=(0, 2), keepdim=True).sum(),
        [WIDE],
    ),
    "norm nuc": (lambda L, A: L.linalg.norm(A, "nuc"), [WIDE[0]]),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_values_and_gradients_as_torchs(name):
    loss, values = LOSSES[name]
    _assert_as_torchs(loss, values)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_results_and_their_dtypes_as_torchs(dtype):
    a, b = SQUARE.astype(dtype), RHS.astype(dtype)
    rtol = 1e-4 if dtype == np.complex64 else 1e-10
    ours, theirs = (tricycle.tensor(a), tricycle.tensor(b)), (torch.tensor(a), torch.tensor(b))
    U, S, Vh = tricycle.linalg.svd(ours[0])
    rebuilt = (U.array * S.array[..., None, :]) @ Vh.array
    np.testing.assert_allclose(rebuilt, a, rtol=rtol, atol=rtol)
    pairs = [
        (S, torch.linalg.svd(theirs[0])[1]),
        (tricycle.linalg.inv(ours[0]), torch.linalg.inv(theirs[0])),
        (tricycle.linalg.solve(*ours), torch.linalg.solve(*theirs)),
        (tricycle.linalg.pinv(ours[0]), torch.linalg.pinv(theirs[0])),
        (tricycle.linalg.matrix_norm(ours[0], 2), torch.linalg.matrix_norm(theirs[0], 2)),
    ]
    for mine, torchs in pairs:
        assert mine.dtype == np.dtype(str(torchs.dtype).removeprefix("torch."))
        np.testing.assert_allclose(mine.array, torchs.numpy(), rtol=rtol, atol=rtol)


def test_a_loss_that_reads_the_phases_raises_as_torchs():
    for lib in (torch, tricycle):
        A = lib.tensor(WIDE, requires_grad=True)
        loss = lib.linalg.svd(A, full_matrices=False)[0].real.sum()
        with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
            loss.backward()


def test_solve_and_solve_triangular_refuse_mixed_dtypes():
    A = tricycle.tensor(SQUARE)
    with pytest.raises(TypeError, match="solve: A and B must have one dtype"):
        tricycle.linalg.solve(A, tricycle.tensor(RHS.real))
    with pytest.raises(TypeError, match="solve_triangular: A and B must have one dtype"):
        tricycle.linalg.solve_triangular(A, tricycle.tensor(RHS.real), upper=True)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_as_on_the_host():
    for name in ("svd rebuilt wide", "svd phases cancel", "inverse method", "solve", "pinv tall",
                 "matrix_norm nuc"):  # fmt: skip
        loss, values = LOSSES[name]
        host = _value_and_grads(tricycle, loss, values)
        device = _value_and_grads(tricycle, loss, values, device="cuda")
        for a, b in zip(host, device):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
