"""torch.signal.windows: the window functions of signal processing, as 1-d leaf tensors.

Each takes the window length ``M`` and, by keyword only, its parameters and ``sym``,
``dtype`` (float32 by default; float32 or float64), ``layout`` (``strided``), ``device`` and
``requires_grad``, as torch's. A window is a formula of the sample index n = 0 .. M-1 and of
N, the span it is laid over: ``sym=True`` (the default: a filter's window, symmetric about its
middle) has N = M - 1, and ``sym=False`` (periodic, for spectral analysis) has N = M, so it is
the symmetric window of M + 1 points without its last. No points give an empty window and one
point ``[1.]``, whatever the formula. The cosine sums (``hann``, ``hamming``, ``blackman``,
``nuttall``) and ``kaiser`` share their formulas with ``tricycle.hann_window`` and its
neighbours (``tricycle.torch_windows``), where x = n / N.
"""

import math
from collections.abc import Iterable

import numpy as np

from tricycle import backend, checks
from tricycle.factories import _dtype, _make
from tricycle.torch_misc import strided
from tricycle.torch_windows import _cosines, _kaiser

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]  # fmt: skip

BLACKMAN = (0.42, 0.5, 0.08)
NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)  # Nuttall's 4-term coefficients


def _window(op: str, M, sym, dtype, layout, device, requires_grad, formula):  # noqa: N803
    """The window ``formula(n, N)`` at n = 0 .. M-1 (N = M - 1 if ``sym`` else M) as a leaf
    tensor, after torch's checks of the common arguments."""
    checks.integer(op, "M", M)
    if M < 0:
        raise ValueError(f"{op}: M must be a non-negative window length, got M={M}")
    checks.boolean(op, "sym", sym)
    if layout is not None and layout is not strided:
        raise ValueError(f"{op}: layout must be tricycle.strided (dense tensors), got {layout!r}")
    dtype = _dtype(op, dtype, backend.DEFAULT_FLOAT)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"{op}: dtype must be float32 or float64, got {dtype}")
    if M <= 1:
        values = np.ones(M)
    else:
        values = formula(np.arange(M, dtype=np.float64), M - 1 if sym else M)
    return _make(op, values.astype(dtype), requires_grad, device)


def _positive(op: str, name: str, value) -> float:
    """A parameter that must be > 0 (ValueError otherwise, as torch's)."""
    value = checks.number_of(value)
    checks.real(op, name, value)
    if value <= 0:
        raise ValueError(f"{op}: {name} must be positive, got {value!r}")
    return float(value)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
             requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.bartlett: the triangle ``1 - |2n / N - 1|``, 0 at both ends."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / N - 1))  # fmt: skip


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
           requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.cosine (the sine window): ``sin(pi (n + 1/2) / (N + 1))``."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.sin(math.pi * (n + 0.5) / (N + 1)))  # fmt: skip


def exponential(M: int, *, center=None, tau: float = 1.0, sym: bool = True, dtype=None,  # noqa: N803
                layout=strided, device=None, requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.exponential: ``exp(-|n - center| / tau)``; ``center`` is the
    middle, N / 2, unless given, which only a periodic window (``sym=False``) may be."""
    tau = _positive("exponential", "tau", tau)
    if center is not None:
        if sym:
            raise ValueError("exponential: center must be None for a symmetric window (sym=True)")
        center = checks.number_of(center)
        checks.real("exponential", "center", center)

    def formula(n, N):  # noqa: N803
        middle = N / 2 if center is None else center
        return np.exp(-np.abs(n - middle) / tau)

    return _window("exponential", M, sym, dtype, layout, device, requires_grad, formula)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided,  # noqa: N803
             device=None, requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.gaussian: ``exp(-((n - N / 2) / std)^2 / 2)``."""
    std = _positive("gaussian", "std", std)
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.exp(-(((n - N / 2) / std) ** 2) / 2))  # fmt: skip


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=strided,  # noqa: N803
                   device=None, requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.general_cosine: ``sum_k (-1)^k a[k] cos(2 pi k n / N)`` of the
    coefficients ``a`` (a list or tuple of numbers, not empty)."""
    return _cosine_sum("general_cosine", M, a, sym, dtype, layout, device, requires_grad)


def _cosine_sum(op: str, M, a, sym, dtype, layout, device, requires_grad):  # noqa: N803
    """``general_cosine`` for the window ``op``, which names it in errors."""
    if isinstance(a, str) or not isinstance(a, Iterable):
        checks.fail(op, "a", "a list or tuple of coefficients", a, TypeError)
    weights = [checks.number_of(w) for w in a]
    if not weights:
        raise ValueError(f"{op}: a (the coefficients) cannot be empty")
    for w in weights:
        checks.real(op, "a", w)
    return _window(op, M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: _cosines(*weights)(n / N))  # fmt: skip


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None,  # noqa: N803
                    layout=strided, device=None, requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.general_hamming: ``alpha - (1 - alpha) cos(2 pi n / N)``."""
    return _hamming("general_hamming", M, alpha, sym, dtype, layout, device, requires_grad)


def _hamming(op: str, M, alpha, sym, dtype, layout, device, requires_grad):  # noqa: N803
    """``general_hamming`` for the window ``op``, which names it in errors."""
    alpha = checks.number_of(alpha)
    checks.real(op, "alpha", alpha)
    return _cosine_sum(op, M, [alpha, 1.0 - alpha], sym, dtype, layout, device, requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
            requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.hamming: ``general_hamming`` with alpha = 0.54."""
    return _hamming("hamming", M, 0.54, sym, dtype, layout, device, requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
         requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.hann: ``general_hamming`` with alpha = 0.5, ``sin^2(pi n / N)``."""
    return _hamming("hann", M, 0.5, sym, dtype, layout, device, requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
             requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.blackman: ``general_cosine`` with a = (0.42, 0.5, 0.08)."""
    return _cosine_sum("blackman", M, BLACKMAN, sym, dtype, layout, device, requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,  # noqa: N803
            requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.nuttall: ``general_cosine`` with Nuttall's four coefficients."""
    return _cosine_sum("nuttall", M, NUTTALL, sym, dtype, layout, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided,  # noqa: N803
           device=None, requires_grad: bool = False):  # fmt: skip
    """torch.signal.windows.kaiser: ``I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta)``, I0 the
    modified Bessel function of order 0; ``beta`` >= 0."""
    beta = checks.number_of(beta)
    checks.real("kaiser", "beta", beta)
    if beta < 0:
        raise ValueError(f"kaiser: beta must be non-negative, got {beta!r}")
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: _kaiser(n / N, float(beta)))  # fmt: skip
