"""tricycle.stft / istft (tricycle.spectral) against torch's: values and gradients (of the
signal, the window and the spectrum) for 1-D and batched signals, hop and window lengths,
centring and its pad modes, normalisation, one- and two-sided spectra, ``length``,
``return_complex`` (required for a real signal; False deprecated, as torch 2.13), torch's
errors; istft(stft(x)) == x; a log-magnitude spectrogram loss of a Conv1d's output with the
same weights as torch's; and the GPU against the host (skipped without one)."""

import warnings

import numpy as np
import pytest

import tricycle
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rng = np.random.default_rng(5)

CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3, win_length=6, window=True),
    dict(n_fft=9, hop_length=2, center=False, normalized=True),
    dict(n_fft=8, pad_mode="constant", onesided=False, window=True),
    dict(n_fft=7, hop_length=2, win_length=5, window=True, normalized=True),
]


def _window(length):
    return np.hanning(length + 2)[1:-1] + 0.1  # no zeros: every sample is covered


def _close(ours, theirs):
    theirs = theirs.detach().resolve_conj().numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(backend.to_host_array(ours.array), theirs, rtol=1e-9, atol=1e-11)


def _pair(values):
    return Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("shape", [(40,), (3, 37)])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_stft_and_istft_equal_torchs_with_gradients(shape, case):
    kwargs = dict(CASES[case])
    win = _window(kwargs.get("win_length", kwargs["n_fft"])) if kwargs.pop("window", 0) else None
    (x, x_t), (w, w_t) = _pair(rng.standard_normal(shape)), _pair(win) if win is not None else (
        (None, None))  # fmt: skip
    z = _quiet(tricycle.stft, x, window=w, return_complex=True, **kwargs)
    z_t = _quiet(torch.stft, x_t, window=w_t, return_complex=True, **kwargs)
    _close(z, z_t)
    weights = rng.standard_normal(z.shape)
    (z.abs() ** 2 * Tensor(weights)).sum().backward()
    (z_t.abs() ** 2 * torch.tensor(weights)).sum().backward()
    _close(x.grad, x_t.grad)
    if win is not None:
        _close(w.grad, w_t.grad)

    kwargs.pop("pad_mode", None)
    (s, s_t), (w, w_t) = _pair(z_t.detach().numpy()), _pair(win) if win is not None else (
        (None, None))  # fmt: skip
    y, y_t = _quiet(s.istft, **kwargs, window=w), _quiet(torch.istft, s_t, window=w_t, **kwargs)
    _close(y, y_t)
    weights = rng.standard_normal(y.shape)
    (y * Tensor(weights)).sum().backward()
    (y_t * torch.tensor(weights)).sum().backward()
    _close(s.grad, s_t.grad)
    if win is not None:
        _close(w.grad, w_t.grad)


@pytest.mark.parametrize(
    "options",
    [
        dict(length=30),  # cut
        dict(length=50),  # zero-padded past the frames (torch warns)
        dict(onesided=False),  # a two-sided spectrum, not Hermitian: its half is read
        dict(onesided=False, return_complex=True),
        dict(onesided=False, return_complex=True, center=False, normalized=True),
    ],
)
def test_istft_of_any_spectrum_equals_torchs(options):
    bins = 8 if options.get("onesided") is False else 5
    values = rng.standard_normal((2, bins, 9)) + 1j * rng.standard_normal((2, bins, 9))
    (s, s_t), (w, w_t) = _pair(values), _pair(_window(8))
    y = _quiet(s.istft, 8, 4, window=w, **options)
    y_t = _quiet(torch.istft, s_t, 8, 4, window=w_t, **options)
    _close(y, y_t)
    weights = rng.standard_normal(y.shape)
    loss = (y.abs() if y.dtype.kind == "c" else y) * Tensor(weights)
    loss_t = (y_t.abs() if y_t.is_complex() else y_t) * torch.tensor(weights)
    loss.sum().backward()
    loss_t.sum().backward()
    _close(s.grad, s_t.grad)
    _close(w.grad, w_t.grad)


def test_stft_of_a_complex_signal_is_two_sided_as_torchs():
    values = rng.standard_normal((2, 30)) + 1j * rng.standard_normal((2, 30))
    (x, x_t), (w, w_t) = _pair(values), _pair(_window(8))
    z, z_t = tricycle.stft(x, 8, 3, window=w), torch.stft(x_t, 8, 3, window=w_t)
    _close(z, z_t)
    (z.abs() * 2).sum().backward()
    (z_t.abs() * 2).sum().backward()
    _close(x.grad, x_t.grad)
    _close(w.grad, w_t.grad)


def test_istft_inverts_stft():
    x = tricycle.tensor(rng.standard_normal((3, 64)))
    for center, length in ((True, None), (False, None), (True, 64)):
        window = tricycle.hann_window(16, dtype=tricycle.float64)
        if not center:  # a first sample seen by no window's nonzero part: torch refuses it too
            window = tricycle.tensor(_window(16))
        z = x.stft(16, 4, window=window, center=center, return_complex=True)
        y = z.istft(16, 4, window=window, center=center, length=length)
        np.testing.assert_allclose(y.array, x.array[:, : y.shape[-1]], rtol=1e-10, atol=1e-12)
    assert y.shape == x.shape


def test_return_complex_as_torch_2_13():
    x, x_t = _pair(rng.standard_normal(40))
    with pytest.raises(RuntimeError, match="return_complex"):
        tricycle.stft(x, 8, window=tricycle.ones(8, dtype=tricycle.float64))
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        pairs = tricycle.stft(x, 8, window=tricycle.ones(8, dtype=tricycle.float64),
                              return_complex=False)  # fmt: skip
    pairs_t = _quiet(torch.stft, x_t, 8, window=torch.ones(8, dtype=torch.float64),
                     return_complex=False)  # fmt: skip
    _close(pairs, pairs_t)
    (pairs**2).sum().backward()
    (pairs_t**2).sum().backward()
    _close(x.grad, x_t.grad)
    with pytest.warns(UserWarning, match="window was not provided"):
        tricycle.stft(x, 8, return_complex=True)


def test_errors_are_torchs():
    x = tricycle.tensor(rng.standard_normal(40))
    ones = tricycle.ones(8, dtype=tricycle.float64)
    z = tricycle.stft(x, 8, window=ones, return_complex=True)
    cases = [
        (lambda: tricycle.istft(x, 8), "complex-valued input"),
        (lambda: tricycle.istft(z, 8, window=tricycle.zeros(8)), "window overlap add min"),
        (lambda: tricycle.istft(z, 8, window=ones, return_complex=True), "onesided output"),
        (lambda: tricycle.istft(z, 10, window=tricycle.ones(10)), "n_fft / 2 \\+ 1"),
        (lambda: tricycle.stft(x, 8, window=tricycle.ones(5), return_complex=True), "window"),
        (lambda: tricycle.stft(x, 8, 0, window=ones, return_complex=True), "hop_length > 0"),
        (lambda: tricycle.stft(x, 80, center=False, return_complex=True), "n_fft"),
        (lambda: tricycle.stft(x.reshape(2, 2, 10), 4, return_complex=True), "1D or 2D"),
        (
            lambda: tricycle.stft(x, 8, window=ones, align_to_window=True, return_complex=True),
            "center = false",
        ),  # fmt: skip
    ]
    for call, words in cases:
        with pytest.raises(RuntimeError, match=words):
            _quiet(call)
    x_t = torch.tensor(x.array)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        _quiet(torch.istft, torch.stft(x_t, 8, return_complex=True), 8, window=torch.zeros(8))
    with pytest.raises(NotImplementedError, match="align_to_window"):
        tricycle.stft(x, 8, window=ones, center=False, align_to_window=True, return_complex=True)


def test_log_spectrogram_loss_of_a_conv1d_equals_torchs():
    """A Conv1d (2 -> 3 channels) of a batch of signals, its log-magnitude spectrogram
    against a target's, with torch's weights: the loss and every gradient equal torch's."""
    torch.manual_seed(0)
    conv_t = torch.nn.Conv1d(2, 3, 5, padding=2).double()
    conv = tricycle.nn.Conv1d(2, 3, 5, padding=2)
    tricycle.nn.from_torch(conv, conv_t.state_dict())
    conv.weights.array = conv.weights.array.astype(np.float64)
    conv.bias.array = conv.bias.array.astype(np.float64)
    signal, target = rng.standard_normal((4, 2, 48)), rng.standard_normal((4 * 3, 9, 13))
    x, x_t = _pair(signal)

    def loss_of(conv, x, module, window):
        out = conv(x).reshape(-1, 48)  # (batch * channels, time)
        spectrum = module.stft(out, 16, 4, window=window, return_complex=True)
        log_power = module.log(spectrum.abs() ** 2 + 1e-6)
        return ((log_power - module.tensor(target)) ** 2).mean()

    loss = loss_of(conv, x, tricycle, tricycle.hann_window(16, dtype=tricycle.float64))
    loss_t = loss_of(conv_t, x_t, torch, torch.hann_window(16, dtype=torch.float64))
    np.testing.assert_allclose(loss.array, loss_t.item(), rtol=1e-10)
    loss.backward()
    loss_t.backward()
    _close(x.grad, x_t.grad)
    _close(conv.weights.grad, conv_t.weight.grad)
    _close(conv.bias.grad, conv_t.bias.grad)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_stft_and_istft_on_a_gpu_are_the_hosts():
    signal, win = rng.standard_normal((2, 50)), _window(12)
    results = []
    for device in ("cpu", "cuda"):
        x = tricycle.tensor(signal, device=device, requires_grad=True)
        w = tricycle.tensor(win, device=device, requires_grad=True)
        z = tricycle.stft(x, 16, 3, 12, window=w, normalized=True, return_complex=True)
        two = tricycle.stft(x, 16, 5, 12, window=w, pad_mode="constant", onesided=False,
                            return_complex=True)  # fmt: skip
        y = tricycle.istft(z * 1.5, 16, 3, 12, window=w, normalized=True, length=46)
        loss = (z.abs() ** 2).sum() + two.abs().sum() + (y * y).sum()
        loss.backward()
        results.append([backend.to_host_array(a) for a in (loss.array, x.grad.array,
                                                           w.grad.array, y.array)])  # fmt: skip
    for host, gpu in zip(*results):
        np.testing.assert_allclose(gpu, host, rtol=1e-9, atol=1e-9)
