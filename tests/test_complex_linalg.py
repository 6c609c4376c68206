"""Complex ``linalg.det``, ``slogdet``, ``logdet`` and ``svdvals``, against torch: values
(batched, complex64 and complex128) and gradients with torch's convention for complex
tensors (z.grad = dL/dre + i dL/dim), for real losses of the complex results (det:
g conj(det A A^-T); slogdet's sign and logabsdet: (g_logabsdet - i im(conj(g_sign) sign))
A^-H; svdvals: U diag(dS) V^H)."""

import numpy as np
import pytest

import tricycle
from tricycle import backend

torch = pytest.importorskip("torch")


def complex_matrices(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _value_and_grad(lib, loss, values, device="cpu"):
    x = lib.tensor(
        values, requires_grad=True, device=device
    )  # (tricycle's requires_grad_ refuses complex)
    out = loss(lib, x)
    out.backward()
    return out.detach().cpu().numpy(), x.grad.cpu().numpy()


def _assert_as_torchs(loss, values, **tolerances):
    ours, theirs = (_value_and_grad(lib, loss, values) for lib in (tricycle, torch))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, **(tolerances or {"rtol": 1e-10, "atol": 1e-12}))


SQUARE = complex_matrices(2, 3, 3)
WIDE = complex_matrices(2, 3, 4, seed=1)
LOSSES = {
    "det": (
        lambda L, X: (L.linalg.det(X) * (0.3 + 0.7j)).real.sum() + L.det(X).abs().sum(),
        SQUARE,
    ),
    "det method": (lambda L, X: (X.det() ** 2).imag.sum(), SQUARE),
    "slogdet sign": (lambda L, X: (L.linalg.slogdet(X)[0] * (0.5 - 1j)).real.sum(), SQUARE),
    "slogdet both": (
        lambda L, X: L.linalg.slogdet(X)[0].imag.sum() + (L.linalg.slogdet(X)[1] ** 2).sum(),
        SQUARE,
    ),
    "slogdet method": (lambda L, X: X.slogdet()[1].sum(), SQUARE),
    "logdet": (lambda L, X: (L.logdet(X) * (0.2 + 1j)).real.sum(), SQUARE),
    "svdvals wide": (lambda L, X: (L.linalg.svdvals(X) ** 3).sum(), WIDE),
    "svdvals tall": (lambda L, X: (L.linalg.svdvals(X.mT) ** 2).sum(), WIDE),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_values_and_gradients_as_torchs(name):
    loss, values = LOSSES[name]
    _assert_as_torchs(loss, values)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_results_and_their_dtypes_as_torchs(dtype):
    a = complex_matrices(4, 3, 3, seed=2).astype(dtype)
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    ours = tricycle.tensor(a)
    theirs = torch.tensor(a)
    pairs = [
        (tricycle.linalg.det(ours), torch.linalg.det(theirs)),
        *zip(tricycle.linalg.slogdet(ours), torch.linalg.slogdet(theirs)),
        (tricycle.logdet(ours), torch.logdet(theirs)),
        (tricycle.linalg.svdvals(ours), torch.linalg.svdvals(theirs)),
    ]
    for mine, torchs in pairs:
        assert mine.dtype == np.dtype(str(torchs.dtype).removeprefix("torch."))
        np.testing.assert_allclose(mine.array, torchs.numpy(), rtol=rtol, atol=rtol)


def test_slogdet_sign_needs_a_gradient_only_of_a_complex_matrix():
    z = tricycle.tensor(SQUARE, requires_grad=True)
    sign, logabsdet = tricycle.linalg.slogdet(z)
    assert sign.requires_grad and logabsdet.requires_grad
    assert sign.dtype == np.complex128 and logabsdet.dtype == np.float64
    np.testing.assert_allclose((sign * logabsdet.exp()).array, np.linalg.det(SQUARE))


def test_svdvals_without_a_gradient_and_the_refused_dtypes():
    z = tricycle.tensor(WIDE)
    np.testing.assert_allclose(
        tricycle.linalg.svdvals(z).array, np.linalg.svd(WIDE, compute_uv=False), rtol=1e-12
    )
    with pytest.raises(TypeError, match="det: A must be a float32, float64, complex64"):
        tricycle.linalg.det(tricycle.tensor(np.eye(2, dtype=np.int64)))
    with pytest.raises(ValueError, match="svdvals: A's shape"):
        tricycle.linalg.svdvals(tricycle.tensor(WIDE[0, 0]))


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_as_on_the_host():
    for name, (loss, values) in sorted(LOSSES.items()):
        gpu = _value_and_grad(tricycle, loss, values, device="cuda")
        host = _value_and_grad(tricycle, loss, values)
        for a, b in zip(gpu, host):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=name)
