"""torch.fft: discrete Fourier transforms of real and complex tensors, differentiable.

Three transforms are written by hand, each a linear map A whose gradient (torch's convention
for complex tensors, ``tricycle.complex_tensor``) is its adjoint A^H applied to the output's
gradient: ``fftn``/``ifftn`` (complex to complex; A^H is the other direction with the dual
norm, "backward" <-> "forward", and the zero padding or cropping of ``s`` undone), ``rfft``
(real to half spectrum: A^H is the inverse of the spectrum padded with zeros, real part) and
``irfft`` (half spectrum to real: A^H is ``rfft`` of the gradient with every bin but the
first and the Nyquist one counted twice, as both it and its mirror image made the output).
The rest are formulas of those: ``fft = fftn`` on one dim, ``rfftn`` is ``rfft`` on the last
dim then ``fftn`` on the others, ``irfftn`` the reverse, ``hfft``/``ihfft`` are ``irfft``/
``rfft`` of the conjugate with the dual norm; ``fftshift`` is a roll (an indexing).
"""

import numpy as np

from tricycle import backend, checks
from tricycle.complex_tensor import conj, linear, result
from tricycle.tensor import Tensor, to_tensor

_NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm(op: str, norm):
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise ValueError(f"{op}: Invalid normalization mode: {norm!r}; expected one of {_NORMS}")
    return norm


def _floating(op: str, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.dtype.kind in "biu":  # integers become float32, as torch's
        x = x.new(x.array.astype(np.float32), requires_grad=False)
    if x.dtype.kind not in "fc" or x.dtype.itemsize < 4 + 4 * (x.dtype.kind == "c"):
        raise TypeError(f"{op}: needs a float32/64 or complex64/128 tensor, got {x.dtype}")
    return x


def _fit(xp, array, axes, sizes):
    """``array`` cropped or zero-padded along ``axes`` to ``sizes``."""
    for axis, n in zip(axes, sizes):
        have = array.shape[axis]
        if have > n:
            array = xp.take(array, xp.arange(n), axis=axis)
        elif have < n:
            pad = [(0, 0)] * array.ndim
            pad[axis] = (0, n - have)
            array = xp.pad(array, pad)
    return array


def _dims_and_sizes(op: str, x, s, dim):
    """torch's ``s`` and ``dim`` of the n-dimensional transforms: every dim by default, the
    last len(s) dims when only ``s`` is given."""
    if dim is None:
        dims = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    else:
        dims = (dim,) if checks.is_integer(dim) else tuple(dim)
        dims = tuple(checks.axis(op, "dim", d, x.ndim, x.shape) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: dims must be unique, got {dim}")
    if s is None:
        sizes = tuple(x.shape[d] for d in dims)
    else:
        sizes = (s,) if checks.is_integer(s) else tuple(s)
        if len(sizes) != len(dims):
            raise RuntimeError(f"{op}: s ({s}) and dim ({dim}) must have the same length")
        sizes = tuple(x.shape[d] if n == -1 else n for d, n in zip(dims, sizes))
    if any(n < 1 for n in sizes):
        raise RuntimeError(f"{op}: Invalid number of data points ({sizes}) specified")
    return dims, sizes


def _c2c(op: str, x, s, dim, norm, inverse: bool):
    x, norm = _floating(op, x), _norm(op, norm)
    dims, sizes = _dims_and_sizes(op, x, s, dim)
    xp, shape, real_input = x.xp, x.shape, x.dtype.kind == "f"
    complex_dtype = np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128
    forward, backward = (xp.fft.ifftn, xp.fft.fftn) if inverse else (xp.fft.fftn, xp.fft.ifftn)
    out = forward(x.array, sizes, dims, norm).astype(complex_dtype, copy=False)

    def back(g):  # the adjoint: the other direction, the dual norm, the crop or pad undone
        grad = _fit(xp, backward(g, axes=dims, norm=_DUAL[norm]), dims, [shape[d] for d in dims])
        return (grad.real if real_input else grad).astype(x.dtype, copy=False)

    return result(out, (x,), (back,), op)


def fftn(input, s=None, dim=None, norm=None):  # noqa: A002 - torch's names
    """torch.fft.fftn: the n-dimensional DFT over ``dim`` (all by default), of sizes ``s``."""
    return _c2c("fftn", input, s, dim, norm, False)


def ifftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """torch.fft.ifftn: the inverse of ``fftn``."""
    return _c2c("ifftn", input, s, dim, norm, True)


def fft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.fft: the one-dimensional DFT along ``dim``, of ``n`` points."""
    return _c2c("fft", input, n, dim, norm, False)


def ifft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.ifft: the inverse of ``fft``."""
    return _c2c("ifft", input, n, dim, norm, True)


def fft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """torch.fft.fft2: ``fftn`` over the last two dims."""
    return _c2c("fft2", input, s, dim, norm, False)


def ifft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """torch.fft.ifft2: ``ifftn`` over the last two dims."""
    return _c2c("ifft2", input, s, dim, norm, True)


def rfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.rfft: the DFT of a real tensor along ``dim``, its n // 2 + 1 first bins."""
    x, norm = _floating("rfft", input), _norm("rfft", norm)
    if x.dtype.kind == "c":
        raise RuntimeError("rfft: expects a real input tensor, but got a complex one")
    (axis,), (size,) = _dims_and_sizes("rfft", x, n, dim)
    xp, length = x.xp, x.shape[axis]
    out = xp.fft.rfft(x.array, size, axis, norm)
    out = out.astype(np.complex64 if x.dtype == np.float32 else np.complex128, copy=False)

    def back(g):  # the half spectrum padded with zeros to the full one, the adjoint inverse
        full = _fit(xp, g, (axis,), (size,))
        grad = xp.fft.ifft(full, axis=axis, norm=_DUAL[norm]).real
        return _fit(xp, grad, (axis,), (length,)).astype(x.dtype, copy=False)

    return result(out, (x,), (back,), "rfft")


def irfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.irfft: the real signal of ``n`` points (2 (m - 1) by default, m the input's
    length along ``dim``) whose half spectrum is the input."""
    z, norm = _floating("irfft", input), _norm("irfft", norm)
    axis = checks.axis("irfft", "dim", dim, z.ndim, z.shape)
    length = z.shape[axis]
    size = 2 * (length - 1) if n is None else n
    if size < 1:
        raise RuntimeError(f"irfft: Invalid number of data points ({size}) specified")
    xp, bins = z.xp, size // 2 + 1
    out = xp.fft.irfft(z.array, size, axis, norm)
    out = out.astype(np.float32 if z.dtype in (np.float32, np.complex64) else np.float64)

    def back(g):  # every bin but the first (and the Nyquist one) made two of the output's
        grad = xp.fft.rfft(g, size, axis, _DUAL[norm])
        twice = xp.full(bins, 2.0)
        twice[0] = 1.0
        if size % 2 == 0:
            twice[-1] = 1.0
        grad = grad * twice.reshape((-1,) + (1,) * (g.ndim - 1 - axis))
        return _fit(xp, grad, (axis,), (length,)).astype(z.dtype, copy=False)

    return result(out, (z,), (back,), "irfft")


def rfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """torch.fft.rfftn: ``rfft`` over the last of ``dim``, then ``fftn`` over the others."""
    x = _floating("rfftn", input)
    dims, sizes = _dims_and_sizes("rfftn", x, s, dim)
    out = rfft(x, sizes[-1], dims[-1], norm)
    return fftn(out, sizes[:-1], dims[:-1], norm) if len(dims) > 1 else out


def irfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """torch.fft.irfftn: ``ifftn`` over all of ``dim`` but the last, then ``irfft`` (the last
    size 2 (m - 1) by default)."""
    z = _floating("irfftn", input)
    if s is None:
        dims, _ = _dims_and_sizes("irfftn", z, None, dim)
        sizes = [z.shape[d] for d in dims[:-1]] + [2 * (z.shape[dims[-1]] - 1)]
    else:
        dims, sizes = _dims_and_sizes("irfftn", z, [1] * len(s) if dim is None else s, dim)
        sizes = (s,) if checks.is_integer(s) else tuple(s)
    if len(dims) > 1:
        z = ifftn(z, sizes[:-1], dims[:-1], norm)
    return irfft(z, sizes[-1], dims[-1], norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """torch.fft.rfft2: ``rfftn`` over the last two dims."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """torch.fft.irfft2: ``irfftn`` over the last two dims."""
    return irfftn(input, s, dim, norm)


def hfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.hfft: the real spectrum of a signal with Hermitian symmetry given by its
    first half: ``irfft`` of the conjugate, with the dual norm."""
    return irfft(conj(_floating("hfft", input)), n, dim, _DUAL[_norm("hfft", norm)])


def ihfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """torch.fft.ihfft: the inverse of ``hfft``: the conjugate of ``rfft`` with the dual norm."""
    return conj(rfft(input, n, dim, _DUAL[_norm("ihfft", norm)]))


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """torch.fft.fftfreq: the sample frequencies of an ``n``-point DFT, spacing ``d``."""
    checks.positive_int("fftfreq", "n", n)
    values = np.fft.fftfreq(n, d)
    return _frequencies(values, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """torch.fft.rfftfreq: the sample frequencies of ``rfft`` of ``n`` points."""
    checks.positive_int("rfftfreq", "n", n)
    return _frequencies(np.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _frequencies(values, dtype, device, requires_grad):
    out = to_tensor(values, dtype=dtype or backend.DEFAULT_FLOAT, requires_grad=requires_grad)
    return out if device is None else out.to(device)


def _shifted(op: str, x, dim, sign: int):
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if checks.is_integer(dim) else dim
    for d in dims:
        d = checks.axis(op, "dim", d, x.ndim, x.shape)
        n = x.shape[d]
        order = np.roll(np.arange(n), sign * (n // 2))  # output i takes input order[i]
        index = (slice(None),) * d + (order,)
        x = linear(x, lambda part, index=index: part[index])
    return x


def fftshift(input, dim=None):  # noqa: A002
    """torch.fft.fftshift: the zero frequency moved to the middle (a roll by n // 2)."""
    return _shifted("fftshift", input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """torch.fft.ifftshift: the inverse of ``fftshift``."""
    return _shifted("ifftshift", input, dim, -1)
