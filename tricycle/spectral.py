"""torch.stft and torch.istft: short-time Fourier transforms, differentiable, on ``tricycle.fft``.

``stft`` pads the signal (``center``: n_fft // 2 each side, ``F.pad``'s ``pad_mode``), cuts
it into frames of n_fft samples ``hop_length`` apart (``Tensor.unfold``), multiplies each by
the window (zero-padded to n_fft, centred) and transforms them (``fft.rfft`` one-sided, else
``fft.fft``; ``normalized`` is the "ortho" norm: times n_fft^-1/2). ``istft`` undoes it: the
inverse transform of each frame (``fft.irfft`` of the half spectrum, or ``fft.ifft``), times
the window, summed back where frames overlap (``F.fold``, col2im: the adjoint of the framing)
and divided by the overlap-added squared window, then the padding cut off (or the signal
zero-padded to ``length``). Every step is a differentiable op of tricycle (complex ones
through ``tricycle.complex_tensor``), so gradients reach the signal and the window as
torch's do; nothing here is a transform of its own.
"""

import warnings

from tricycle import checks
from tricycle import fft as spectra
from tricycle.complex_tensor import ComplexTensor, linear, view_as_real
from tricycle.tensor import Tensor


def _is_complex(x) -> bool:
    return isinstance(x, ComplexTensor)


def _product(a, b):
    """a * b, with the complex operand's method answering (a real tensor's would refuse)."""
    return b * a if _is_complex(b) and not _is_complex(a) else a * b


def _geometry(op: str, n_fft, hop_length, win_length):
    if not checks.is_integer(n_fft) or n_fft < 1:
        raise RuntimeError(f"{op}: expected n_fft > 0, but got n_fft={n_fft}")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not checks.is_integer(hop) or hop < 1:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not checks.is_integer(win) or not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return int(hop), int(win)


def _window(op: str, window, n_fft: int, win_length: int, like, why: str):
    """The window padded with zeros to n_fft on both sides (ones when None, as torch's, with
    its warning)."""
    if window is None:
        warnings.warn(f"{op}: a window was not provided; a rectangular window is applied{why}. "
                      f"To suppress this warning, pass window=tricycle.ones({n_fft})",
                      UserWarning, stacklevel=3)  # fmt: skip
        return like.new(like.xp.ones(n_fft, dtype=like.array.real.dtype), requires_grad=False)
    if not isinstance(window, Tensor) or window.shape != (win_length,):
        shape = getattr(window, "shape", type(window).__name__)
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {shape}")  # fmt: skip
    left = (n_fft - win_length) // 2
    if left == 0 and win_length == n_fft:
        return window
    from tricycle.nn.padding import pad  # noqa: PLC0415 - the nn catalogue, on the call

    return linear(window, lambda w: pad(w.reshape(1, 1, -1), (left, n_fft - win_length - left))
                  .reshape(-1))  # fmt: skip


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002, PLR0913 - torch's names
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):  # fmt: skip
    """torch.stft: (B?, L) -> (B?, N, T) complex, N = n_fft // 2 + 1 when ``onesided`` (the
    default for a real signal and window), else n_fft; T = 1 + (L' - n_fft) // hop_length of
    the (padded) length L'. ``return_complex`` must be given for a real signal (torch's
    rule); False gives ``view_as_real``'s (B?, N, T, 2), deprecated, with torch's warning."""
    op = "stft"
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        shape = getattr(input, "shape", type(input).__name__)
        raise RuntimeError(f"{op}: expected a 1D or 2D tensor, got {shape}")
    complex_in = _is_complex(input) or _is_complex(window)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError(f"{op} requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")  # fmt: skip
        return_complex = True
    if align_to_window is not None:
        if center:
            raise RuntimeError(f"{op} align_to_window should only be set when center = false")
        if align_to_window:
            raise NotImplementedError(f"{op}: align_to_window=True is not supported here")
    hop, win = _geometry(op, n_fft, hop_length, win_length)
    x = input
    if center:
        from tricycle.nn.padding import pad  # noqa: PLC0415 - the nn catalogue, on the call

        half, lead = n_fft // 2, (1,) * (3 - x.ndim)
        x = linear(x, lambda s: pad(s.reshape(*lead, *s.shape), (half, half), pad_mode)
                   .reshape(*s.shape[:-1], -1))  # fmt: skip
    length = x.shape[-1]
    if not n_fft <= length:
        raise RuntimeError(f"{op}: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    window = _window(op, window, n_fft, win, x, "")
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError(f"{op}: Cannot have onesided output if window or input is complex")
    frames = linear(x, lambda s: s.unfold(-1, n_fft, hop))  # (B?, T, n_fft)
    frames = _product(frames, window)
    norm = "ortho" if normalized else "backward"
    spectrum = (spectra.rfft if onesided else spectra.fft)(frames, dim=-1, norm=norm)
    out = linear(spectrum, lambda s: s.transpose(-1, -2))  # (B?, N, T)
    if return_complex:
        return out
    warnings.warn(f"{op} with return_complex=False is deprecated: call view_as_real on the "
                  "complex output instead", UserWarning, stacklevel=2)  # fmt: skip
    return view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,  # noqa: A002, PLR0913 - torch's names
          normalized=False, onesided=None, length=None, return_complex=False):  # fmt: skip
    """torch.istft: the signal (B?, L) whose ``stft`` (the same arguments) is ``input``
    (B?, N, T), complex; frames overlap-added and divided by the summed squared window, which
    must not vanish anywhere (torch's error). L is ``length`` if given (cut or zero-padded),
    else n_fft + hop_length (T - 1) less the centring pads."""
    op = "istft"
    if not _is_complex(input):
        raise RuntimeError(f"{op} requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")  # fmt: skip
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected a tensor with 2 or 3 dimensions of complex, got "
                           f"{input.shape}")  # fmt: skip
    hop, win = _geometry(op, n_fft, hop_length, win_length)
    bins, count = input.shape[-2:]
    onesided = bins != n_fft if onesided is None else onesided
    if onesided and bins != n_fft // 2 + 1:
        raise RuntimeError(f"{op}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 = {n_fft // 2 + 1} when "
                           f"onesided=True, but got {bins}")  # fmt: skip
    if not onesided and bins != n_fft:
        raise RuntimeError(f"{op}: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft = {n_fft} when onesided=False, but "
                           f"got {bins}")  # fmt: skip
    if return_complex and onesided:
        raise RuntimeError(f"{op}: Cannot have onesided output if window or input is complex")
    if not return_complex and _is_complex(window):
        raise RuntimeError(f"{op}: Complex windows are incompatible with return_complex=False")
    lossless = ". Provide the window used by stft to make the inversion lossless"
    window = _window(op, window, n_fft, win, input, lossless)
    norm = "ortho" if normalized else "backward"
    spectrum = linear(input, lambda s: s.transpose(-1, -2))  # (B?, T, N)
    if return_complex:
        frames = spectra.ifft(spectrum, n_fft, -1, norm)
    else:
        if not onesided:  # torch's: the half spectrum of a two-sided input
            spectrum = linear(spectrum, lambda s: s[..., : n_fft // 2 + 1])
        frames = spectra.irfft(spectrum, n_fft, -1, norm)
    frames = _product(frames, window)
    expected = n_fft + hop * (count - 1)
    from tricycle.nn.fold import fold  # noqa: PLC0415 - the nn catalogue, on the call

    def overlap_add(part):  # (B?, T, n_fft) -> (B?, expected)
        cols = part.transpose(-1, -2).reshape(-1, n_fft, count)
        summed = fold(cols, (1, expected), (1, n_fft), stride=(1, hop))
        return summed.reshape(*part.shape[:-2], expected)

    signal = linear(frames, overlap_add)
    squares = linear(window, lambda w: w * w) if not _is_complex(window) else window * window
    squares = linear(squares, lambda w: w.reshape(1, n_fft, 1).expand(1, n_fft, count))
    envelope = linear(squares, lambda s: fold(s, (1, expected), (1, n_fft), stride=(1, hop))
                      .reshape(expected))  # fmt: skip
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else expected - start if center else expected
    stop = min(end, expected)
    signal = linear(signal, lambda s: s[..., start:stop])
    envelope = envelope[start:stop]
    smallest = envelope.xp.abs(envelope.array).min() if envelope.shape[0] else 1.0
    if smallest < 1e-11:
        raise RuntimeError(f"{op}: window overlap add min: {float(smallest):.3g} < 1e-11 (the "
                           f"window, n_fft={n_fft}, hop_length={hop} leave samples "
                           "uncovered)")  # fmt: skip
    signal = signal / envelope
    if end > expected:
        warnings.warn(f"{op}: the signal ({expected - start} samples) is shorter than length="
                      f"{length}: zeros are padded at its end", UserWarning,
                      stacklevel=2)  # fmt: skip
        from tricycle.nn.padding import pad  # noqa: PLC0415 - the nn catalogue, on the call

        signal = linear(signal, lambda s: pad(s, (0, end - expected)))
    return signal


__all__ = ["istft", "stft"]
