"""tricycle.fft against torch.fft: values and gradients (torch's convention for complex
tensors) of every transform with its n/s, dim and norm options, and a Fourier neural
operator's spectral layer (rfft -> the low modes times complex weights -> irfft) trained a
few steps from torch's weights."""

import numpy as np
import pytest

from tricycle import fft
from tricycle.complex_tensor import abs as cabs
from tricycle.complex_tensor import complex as ccomplex
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _pair(shape, is_complex):
    values = rng.standard_normal(shape)
    if is_complex:
        values = values + 1j * rng.standard_normal(shape)
    return Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


def _loss(out, weights):
    """A real loss that reads every part of ``out`` (real or complex)."""
    if out.dtype.kind == "c" if isinstance(out, Tensor) else out.is_complex():
        return (
            (cabs(out) * weights).sum() if isinstance(out, Tensor) else (out.abs() * weights).sum()
        )
    return (out * out * weights).sum()


CASES = [
    ("fft", (7,), True, {}),
    ("fft", (3, 6), False, {"n": 8, "dim": 0, "norm": "ortho"}),
    ("ifft", (3, 6), True, {"n": 4, "norm": "forward"}),
    ("fft2", (2, 4, 5), True, {"s": (3, 6)}),
    ("ifft2", (4, 5), True, {"norm": "ortho"}),
    ("fftn", (2, 3, 4), True, {}),
    ("ifftn", (2, 3, 4), False, {"dim": (0, 2), "norm": "forward"}),
    ("rfft", (3, 8), False, {}),
    ("rfft", (3, 7), False, {"n": 10, "dim": 1, "norm": "ortho"}),
    ("irfft", (3, 5), True, {}),
    ("irfft", (3, 5), True, {"n": 7, "norm": "forward"}),
    ("irfft", (4, 3), True, {"n": 6, "dim": 0, "norm": "ortho"}),
    ("rfft2", (2, 4, 6), False, {}),
    ("irfft2", (2, 4, 4), True, {"s": (4, 6)}),
    ("rfftn", (3, 4, 6), False, {"norm": "ortho"}),
    ("irfftn", (3, 4, 5), True, {}),
    ("hfft", (2, 5), True, {}),
    ("hfft", (2, 5), True, {"n": 9, "norm": "ortho"}),
    ("ihfft", (2, 8), False, {"norm": "forward"}),
    ("fftshift", (5, 4), True, {}),
    ("ifftshift", (5, 4), False, {"dim": 0}),
]


@pytest.mark.parametrize(("name", "shape", "is_complex", "kwargs"), CASES)
def test_each_transform_and_its_gradient_are_torchs(name, shape, is_complex, kwargs):
    x, xt = _pair(shape, is_complex)
    out, expected = getattr(fft, name)(x, **kwargs), getattr(torch.fft, name)(xt, **kwargs)
    np.testing.assert_allclose(
        out.array, expected.detach().resolve_conj().numpy(), rtol=1e-10, atol=1e-10
    )
    weights = rng.standard_normal(expected.shape)
    _loss(out, Tensor(weights, requires_grad=False)).backward()
    _loss(expected, torch.tensor(weights)).backward()
    np.testing.assert_allclose(x.grad.array, xt.grad.resolve_conj().numpy(), rtol=1e-9, atol=1e-10)


def test_frequencies_are_torchs():
    for n, d in ((8, 1.0), (7, 0.1)):
        np.testing.assert_allclose(fft.fftfreq(n, d).array, torch.fft.fftfreq(n, d).numpy())
        np.testing.assert_allclose(fft.rfftfreq(n, d).array, torch.fft.rfftfreq(n, d).numpy())
    assert fft.fftfreq(4).dtype == np.float32


def test_bad_arguments_are_refused_as_torchs():
    x = Tensor(np.ones((2, 4)))
    with pytest.raises(ValueError, match="normalization"):
        fft.fft(x, norm="both")
    with pytest.raises(RuntimeError, match="real input"):
        fft.rfft(fft.fft(x))
    with pytest.raises(RuntimeError, match="unique"):
        fft.fftn(x, dim=(1, 1))


def _spectral_layer(fft_module, complex_of, modes):
    """A Fourier neural operator's layer: the low ``modes`` of each channel's spectrum
    mixed by complex weights (in, out, modes), the rest dropped, back to the signal."""

    def layer(x, weights):  # x: (batch, in, n)
        spectrum = fft_module.rfft(x)  # (batch, in, n // 2 + 1)
        low = spectrum[:, :, :modes]
        mixed = einsum("bim,iom->bom", low, weights)
        return fft_module.irfft(mixed, n=x.shape[-1])

    einsum = complex_of
    return layer


def test_a_fourier_neural_operator_layer_trains_as_torchs():
    from tricycle.complex_tensor import einsum

    batch, channels, n, modes = 4, 3, 16, 5
    grid = np.linspace(0, 1, n)
    x = np.stack([np.sin(2 * np.pi * k * grid) for k in range(1, channels * batch + 1)])
    x = x.reshape(batch, channels, n)
    target = np.roll(x, 2, axis=-1)  # learn a shift: a multiplier per mode
    w = 0.3 * (rng.standard_normal((channels, channels, modes))
               + 1j * rng.standard_normal((channels, channels, modes)))  # fmt: skip
    ours = Tensor(w, requires_grad=True)
    theirs = torch.tensor(w, requires_grad=True)
    ours_layer = _spectral_layer(fft, einsum, modes)
    theirs_layer = _spectral_layer(torch.fft, torch.einsum, modes)
    losses = []
    for _ in range(5):
        out = ours_layer(Tensor(x, requires_grad=False), ours)
        loss = ((out - Tensor(target, requires_grad=False)) ** 2).mean()
        out_t = theirs_layer(torch.tensor(x), theirs)
        loss_t = ((out_t - torch.tensor(target)) ** 2).mean()
        loss.backward()
        loss_t.backward()
        np.testing.assert_allclose(loss.array, loss_t.item(), rtol=1e-10)
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-8, atol=1e-12)
        ours = Tensor(ours.array - 0.5 * ours.grad.array, requires_grad=True)  # plain SGD
        with torch.no_grad():
            theirs -= 0.5 * theirs.grad
            theirs.grad = None
        losses.append(loss.array.item())
    assert losses[-1] < losses[0]
    assert ccomplex  # the module's composite builder is importable beside the transforms
