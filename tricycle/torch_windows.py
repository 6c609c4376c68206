"""torch's factories of this module: ``logspace``, the signal windows (``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``),
``scalar_tensor``, ``asarray`` and ``frombuffer``.

Each makes a leaf, float32 by default as torch's, on the host unless given ``device=``. The
windows follow torch's formulas: the symmetric window of N points has ``n / (N - 1)`` for
n = 0 .. N-1; ``periodic=True`` (the default, for spectral analysis) is the symmetric window
of N + 1 points without its last; one point is ``[1.]``. ``asarray`` shares memory with
what it is given where it can (a numpy array of the dtype, a Tensor), as torch's, and copies
where asked or needed; ``frombuffer`` reads a Python buffer (bytes, bytearray, an array)
without a copy: a bytearray's tensor writes into it.
"""

import math

import numpy as np

from tricycle import backend, checks
from tricycle.factories import _dtype, _make
from tricycle.graph import Node
from tricycle.torch_functions import tensor

FLOAT = backend.DEFAULT_FLOAT


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, layout=None,
             device=None, requires_grad: bool = False, out=None):  # fmt: skip
    """torch.logspace: ``base ** linspace(start, end, steps)``, both ends included."""
    if out is not None:
        checks.fail("logspace", "out", "None (tricycle returns a new tensor)", out, TypeError)
    start, end = checks.number_of(start), checks.number_of(end)
    checks.real("logspace", "start", start)
    checks.real("logspace", "end", end)
    checks.non_negative_int("logspace", "steps", steps)
    dtype = _dtype("logspace", dtype, FLOAT)
    exponents = np.linspace(start, end, steps, dtype=np.float64)
    return _make("logspace", (float(base) ** exponents).astype(dtype), requires_grad, device)


def _window(name: str, formula, what: str):
    """torch.<name>(window_length, periodic=True, ...): ``formula(x, **kw)`` of the points x =
    n / (N - 1) of the symmetric window (see the module's doc)."""

    def window(window_length: int, periodic: bool = True, *args, dtype=None, layout=None,
               device=None, requires_grad: bool = False, **parameters):  # fmt: skip
        n = checks.non_negative_int(name, "window_length", window_length)
        checks.boolean(name, "periodic", periodic)
        dtype = _dtype(name, dtype, FLOAT)
        if not backend.is_float(dtype):
            checks.fail(name, "dtype", "a float dtype", dtype, TypeError)
        points = n + 1 if periodic else n
        if n <= 1:
            values = np.ones(n)
        else:
            values = formula(np.arange(points) / (points - 1), *args, **parameters)[:n]
        return _make(name, values.astype(dtype), requires_grad, device)

    window.__name__ = window.__qualname__ = name
    window.__doc__ = f"torch.{name}: {what} (see the module's doc)."
    return window


def _cosines(*weights):
    """The window sum of ``weights[k] * (-1)^k cos(2 pi k x)``."""
    return lambda x: sum((-1) ** k * w * np.cos(2 * math.pi * k * x) for k, w in enumerate(weights))


def _hamming(x, alpha: float = 0.54, beta: float = 0.46):
    return alpha - beta * np.cos(2 * math.pi * x)


def _kaiser(x, beta: float = 12.0):
    return np.i0(beta * np.sqrt(np.clip(1 - (2 * x - 1) ** 2, 0, None))) / np.i0(beta)


hann_window = _window("hann_window", _cosines(0.5, 0.5), "0.5 - 0.5 cos(2 pi x)")
hamming_window = _window(
    "hamming_window", _hamming, "alpha - beta cos(2 pi x) (alpha=0.54, beta=0.46 after periodic)"
)
blackman_window = _window(
    "blackman_window", _cosines(0.42, 0.5, 0.08), "0.42 - 0.5 cos(2 pi x) + 0.08 cos(4 pi x)"
)
bartlett_window = _window("bartlett_window", lambda x: 1 - np.abs(2 * x - 1), "1 - |2x - 1|")
kaiser_window = _window(
    "kaiser_window", _kaiser, "I0(beta sqrt(1 - (2x - 1)^2)) / I0(beta) (beta=12.0 after periodic)"
)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False):  # fmt: skip
    """torch.scalar_tensor: a 0-d tensor of the number ``s``, float32 by default."""
    value = checks.number_of(s)
    checks.real("scalar_tensor", "s", value)
    array = np.asarray(value, dtype=_dtype("scalar_tensor", dtype, FLOAT))
    return _make("scalar_tensor", array, requires_grad, device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False):
    """torch.asarray: ``obj`` (a Tensor, an array, a buffer, nested sequences or a number) as a
    tensor, sharing its memory where no copy is needed and ``copy`` is not True; ``copy=False``
    refuses to copy (a ValueError where one is needed). A Tensor keeps its dtype, another
    float array too; Python floats become float32, as torch's."""
    if isinstance(obj, Node):
        array = obj.array
    elif isinstance(obj, np.ndarray) or backend.is_cupy_array(obj):
        array = obj
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        array = np.frombuffer(obj, dtype=np.uint8)
    else:
        made = tensor(obj, dtype=dtype)  # torch's dtypes: ints int64, floats float32
        return _make("asarray", made.array, requires_grad, device)
    wanted = array.dtype if dtype is None else backend.numeric_dtype(dtype, "asarray")
    index = None if device is None else backend.parse_device(device, "asarray")
    on_gpu = backend.is_cupy_array(array)
    moved = device is not None and (index is not None) != on_gpu
    needs_copy = wanted != array.dtype or moved
    if copy is False and needs_copy:
        raise ValueError(f"asarray: copy=False but a copy is needed (dtype {array.dtype} to "
                         f"{wanted}, or another device)")  # fmt: skip
    if needs_copy or copy:
        array = array.astype(wanted, copy=True)
        array = backend.move(array, index) if moved else array
    if isinstance(obj, Node) and array is obj.array and not requires_grad:
        return obj
    return _make("asarray", array, requires_grad, "cpu")  # already on its device


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False):
    """torch.frombuffer: a 1-d tensor of ``count`` elements of ``dtype`` (all by default) read
    from ``buffer`` (an object of Python's buffer protocol) from byte ``offset``, without a
    copy: writing a bytearray writes the tensor, as torch's."""
    dtype = backend.numeric_dtype(dtype, "frombuffer")
    checks.non_negative_int("frombuffer", "offset", offset)
    try:
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    except (TypeError, ValueError) as error:
        raise ValueError(f"frombuffer: cannot read {count} elements of {dtype} from byte "
                         f"{offset} of a {type(buffer).__name__}: {error}") from None  # fmt: skip
    return _make("frombuffer", array, requires_grad, "cpu")
