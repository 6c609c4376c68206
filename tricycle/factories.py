"""Tensor factories, named and behaving as PyTorch's: zeros, ones, full, arange, linspace, eye,
tril, triu, rand, randn, randint, multinomial (ids drawn from a tensor's weights) and the
``*_like`` forms.

Every factory takes ``dtype`` (a numpy dtype or its name; float32 by default, int64 for
integer ``arange`` and ``randint``), ``requires_grad`` (False by default, as in PyTorch) and
``device`` ("cpu", "gpu"/"cuda", "cuda:N" or a GPU index N). Sizes are given as separate
integers or one sequence: ``zeros(2, 3)`` and ``zeros((2, 3))`` are the same.

Random factories draw from tricycle's generator (``tricycle.manual_seed`` seeds it; see
``tricycle/random.py``) or from a numpy ``generator`` passed in, on the host, so a seed gives
the same numbers on every device.
"""

import math
import numbers
from collections.abc import Sequence

import numpy as np

from tricycle import backend, checks, memory_formats
from tricycle import random as tricycle_random
from tricycle.backend import is_float, numeric_dtype, parse_device
from tricycle.tensor import Tensor, as_tensor
from tricycle.unary import unary_op

Size = int | Sequence[int]


# ---------------------------------------------------------------------- shared checks
def _shape(op: str, size: tuple, keyword=None) -> tuple[int, ...]:
    """``size`` as given to a factory (ints, or one sequence of ints), or the ``size=``
    ``keyword`` (torch's ``rand(size=(2, 3))``), as a shape."""
    if keyword is not None:
        if size:
            raise TypeError(f"{op}: got the sizes {size} and size={keyword!r}; give one of them")
        size = (keyword,)
    if len(size) == 1 and not isinstance(size[0], numbers.Number):
        size = size[0]
    return as_shape(op, size)


def as_shape(op: str, size) -> tuple[int, ...]:
    """``size`` (an int or a sequence of ints) as a shape tuple; negative or non-integer
    sizes raise, naming ``op``."""
    if checks.is_integer(size):
        size = (size,)
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence | np.ndarray):
        raise TypeError(f"{op}: size must be integers or a sequence of integers, got {size!r}")
    shape = []
    for n in size:
        if not checks.is_integer(n):
            raise TypeError(
                f"{op}: size must be integers, got {tuple(size)!r} "
                f"({type(n).__name__} {n!r} is not an integer)"
            )
        if n < 0:
            raise ValueError(f"{op}: sizes must be non-negative, got {tuple(size)!r}")
        shape.append(int(n))
    return tuple(shape)


def _dtype(op: str, dtype, default) -> np.dtype:
    """``dtype`` (or ``default``) as a numeric numpy dtype."""
    return np.dtype(default) if dtype is None else numeric_dtype(dtype, op)


def _make(op: str, array: np.ndarray, requires_grad: bool, device) -> Tensor:
    """A leaf Tensor of a host ``array`` placed on ``device``."""
    checks.boolean(op, "requires_grad", requires_grad)
    if requires_grad and not is_float(array.dtype) and array.dtype.kind != "c":
        raise TypeError(
            f"{op}: only floating tensors can require gradients, got dtype {array.dtype}"
        )
    index = parse_device("cpu" if device is None else device, op)
    if index is not None:
        array = backend.to_device_array(array, index)
    return Tensor(array, requires_grad=bool(requires_grad))


# ---------------------------------------------------------------------- constant tensors
def zeros(
    *sizes: Size, size: Size | None = None, dtype=None, requires_grad: bool = False, device="cpu"
) -> Tensor:
    """A tensor of zeros of shape ``size`` (given as ``sizes`` or by keyword)."""
    return _full("zeros", _shape("zeros", sizes, size), 0, dtype, requires_grad, device)


def ones(
    *sizes: Size, size: Size | None = None, dtype=None, requires_grad: bool = False, device="cpu"
) -> Tensor:
    """A tensor of ones of shape ``size`` (given as ``sizes`` or by keyword)."""
    return _full("ones", _shape("ones", sizes, size), 1, dtype, requires_grad, device)


def full(size: Size, fill_value, dtype=None, requires_grad: bool = False, device="cpu") -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``; without ``dtype``, the value's
    kind as torch.full infers it: bool for a bool, int64 for an integer, else float32."""
    if dtype is None and isinstance(fill_value, bool | np.bool_):
        dtype = np.bool_
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = np.int64
    return _full("full", _shape("full", (size,)), fill_value, dtype, requires_grad, device)


def _full(op: str, shape, fill_value, dtype, requires_grad, device) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if not isinstance(fill_value, numbers.Real):
        raise TypeError(f"{op}: fill_value must be a real number, got {fill_value!r}")
    dtype = _dtype(op, dtype, backend.DEFAULT_FLOAT)
    if dtype.kind in "iub" and not (math.isfinite(fill_value) and float(fill_value).is_integer()):
        raise ValueError(f"{op}: fill_value {fill_value!r} is not an integer, but dtype is {dtype}")
    if fill_value == 0 and math.copysign(1, fill_value) > 0:  # calloc'd pages: zeroed lazily
        return _make(op, np.zeros(shape, dtype=dtype), requires_grad, device)
    return _make(op, np.full(shape, fill_value, dtype=dtype), requires_grad, device)


def arange(
    start, end=None, step=1, dtype=None, requires_grad: bool = False, device="cpu"
) -> Tensor:
    """Numbers from ``start`` up to (not including) ``end`` in steps of ``step``;
    ``arange(n)`` is 0, 1, ..., n - 1. int64 if every argument is an integer, else float32.
    A one-element tensor stands for its number, as torch's (``arange(x.min(), x.max(), 0.01)``)."""
    start, end, step = map(checks.number_of, (start, end, step))
    if end is None:
        start, end = 0, start
    for name, value in (("start", start), ("end", end), ("step", step)):
        checks.real("arange", name, value)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dtype = _dtype("arange", dtype, np.int64 if integral else backend.DEFAULT_FLOAT)
    # computed in float64 (or exactly, for integers), then converted, as torch does
    array = np.arange(start, end, step, dtype=None if integral else np.float64).astype(dtype)
    return _make("arange", array, requires_grad, device)


def linspace(
    start, end, steps: int, dtype=None, requires_grad: bool = False, device="cpu"
) -> Tensor:
    """``steps`` evenly spaced numbers from ``start`` to ``end``, both included (a
    one-element tensor stands for its number, as torch's)."""
    start, end = checks.number_of(start), checks.number_of(end)
    checks.real("linspace", "start", start)
    checks.real("linspace", "end", end)
    checks.non_negative_int("linspace", "steps", steps)
    dtype = _dtype("linspace", dtype, backend.DEFAULT_FLOAT)
    array = np.linspace(start, end, steps, dtype=np.float64).astype(dtype)
    return _make("linspace", array, requires_grad, device)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False, device="cpu"):
    """The (n, m) identity matrix (m = n by default): ones on the diagonal, zeros elsewhere."""
    checks.non_negative_int("eye", "n", n)
    m = n if m is None else checks.non_negative_int("eye", "m", m)
    dtype = _dtype("eye", dtype, backend.DEFAULT_FLOAT)
    return _make("eye", np.eye(n, m, dtype=dtype), requires_grad, device)


# ---------------------------------------------------------------------- triangles
def tril(x, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes of ``x`` (below and on ``diagonal``), the rest
    zero. Differentiable: the gradient is masked the same way."""
    return _triangle("tril", x, diagonal)


def triu(x, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two axes of ``x`` (above and on ``diagonal``), the rest
    zero. Differentiable: the gradient is masked the same way."""
    return _triangle("triu", x, diagonal)


def _triangle(op: str, x, diagonal: int) -> Tensor:
    checks.integer(op, "diagonal", diagonal)
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"{op}: needs a tensor with at least 2 dimensions, got shape {x.shape}")
    xp = x.xp
    keep = getattr(xp, op)
    return unary_op(x, keep(x.array, diagonal), lambda dout: keep(dout, diagonal), op)


# ---------------------------------------------------------------------- random tensors
def rand(
    *sizes: Size, size: Size | None = None, dtype=None, requires_grad: bool = False,
    device="cpu", generator=None,
) -> Tensor:  # fmt: skip
    """Uniform random numbers in [0, 1) of shape ``size`` (given as ``sizes`` or by keyword)."""
    shape = _shape("rand", sizes, size)
    return _random_floats("rand", "random", shape, dtype, requires_grad, device, generator)


def randn(
    *sizes: Size, size: Size | None = None, dtype=None, requires_grad: bool = False,
    device="cpu", generator=None,
) -> Tensor:  # fmt: skip
    """Standard normal random numbers (mean 0, variance 1) of shape ``size`` (given as
    ``sizes`` or by keyword)."""
    shape = _shape("randn", sizes, size)
    return _random_floats(
        "randn", "standard_normal", shape, dtype, requires_grad, device, generator
    )


def _random_floats(op: str, method: str, shape, dtype, requires_grad, device, generator) -> Tensor:
    """Floats drawn by the generator's ``method`` (``random``, ``standard_normal``), which
    makes float32 or float64: other float dtypes are drawn in float32 and converted. A complex
    dtype (``randn`` only) draws its two parts, each of variance 1/2, as torch's."""
    if method == "standard_normal" and dtype is not None and np.dtype(dtype).kind == "c":
        part = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
        pairs = _random_floats(op, method, (*shape, 2), part, False, "cpu", generator).array
        array = (pairs * np.sqrt(0.5, dtype=part)).view(dtype)[..., 0]
        return _make(op, array, requires_grad, device)
    dtype = _float_dtype(op, dtype)
    draw = dtype if dtype in (np.float32, np.float64) else np.float32
    rng = tricycle_random.given_or_ours(op, generator)
    array = getattr(rng, method)(shape, dtype=draw).astype(dtype, copy=False)
    return _make(op, array, requires_grad, device)


def randint(
    low, high=None, size: Size | None = None, dtype=None, requires_grad: bool = False,
    device="cpu", generator=None,
) -> Tensor:  # fmt: skip
    """Random integers in [low, high) of shape ``size``, as ``torch.randint``:
    ``randint(10, (3,))`` and ``randint(10, size=(3,))`` draw from [0, 10),
    ``randint(5, 10, (3,))`` from [5, 10)."""
    if size is None:  # randint(high, size): the torch form without ``low``
        if high is None:
            raise TypeError("randint: missing size, e.g. randint(10, (3,)) or randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...): the same form, size by keyword
        low, high = 0, low
    checks.integer("randint", "low", low)
    checks.integer("randint", "high", high)
    if not low < high:
        raise ValueError(f"randint: needs low < high, got low={low}, high={high}")
    shape = _shape("randint", (size,))
    dtype = _dtype("randint", dtype, np.int64)
    rng = tricycle_random.given_or_ours("randint", generator)
    array = rng.integers(low, high, size=shape).astype(dtype)
    return _make("randint", array, requires_grad, device)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):  # noqa: A002
    """torch.multinomial: ``input.multinomial(num_samples, replacement, generator=...)`` as a
    function, int64 ids (..., num_samples) drawn from each row of the weights ``input``."""
    if not isinstance(input, Tensor):
        checks.fail("multinomial", "input", "a Tensor of weights", input, TypeError)
    return input.multinomial(num_samples, replacement, generator=generator)


def _float_dtype(op: str, dtype) -> np.dtype:
    dtype = _dtype(op, dtype, backend.DEFAULT_FLOAT)
    if not is_float(dtype):
        raise TypeError(f"{op}: draws floats; dtype must be a float dtype, got {dtype}")
    return dtype


# ---------------------------------------------------------------------- *_like
def _like(op: str, x, dtype, device):
    """(shape, dtype, device) for a tensor like ``x``: its own unless given."""
    if not isinstance(x, Tensor):
        x = Tensor(x, requires_grad=False)
    dtype = x.dtype if dtype is None else _dtype(op, dtype, None)
    return x.shape, dtype, x.device if device is None else device


def _laid_like(op: str, out: Tensor, x, memory_format) -> Tensor:
    """``out`` laid out in ``memory_format``: by default (``preserve_format``) in the order of
    ``x``'s strides, as torch's ``*_like`` factories make it."""
    like = x.array if isinstance(x, Tensor) else np.asarray(x)
    out.array = memory_formats.laid_out(op, out.array, memory_format, like=like)
    return out


def zeros_like(x, dtype=None, requires_grad: bool = False, device=None, *,
               memory_format=None) -> Tensor:  # fmt: skip
    """Zeros with the shape, dtype, device and memory format of ``x`` (unless given)."""
    shape, dtype, device = _like("zeros_like", x, dtype, device)
    out = zeros(shape, dtype=dtype, requires_grad=requires_grad, device=device)
    return _laid_like("zeros_like", out, x, memory_format)


def empty_like(x, dtype=None, requires_grad: bool = False, device=None, *,
               memory_format=None) -> Tensor:  # fmt: skip
    """torch.empty_like: a tensor with the shape, dtype, device and memory format of ``x``
    (unless given), of zeros here, as ``tricycle.empty``'s (uninitialised memory would only
    hide a missing write)."""
    shape, dtype, device = _like("empty_like", x, dtype, device)
    out = zeros(shape, dtype=dtype, requires_grad=requires_grad, device=device)
    return _laid_like("empty_like", out, x, memory_format)


def ones_like(x, dtype=None, requires_grad: bool = False, device=None, *,
              memory_format=None) -> Tensor:  # fmt: skip
    """Ones with the shape, dtype, device and memory format of ``x`` (unless given)."""
    shape, dtype, device = _like("ones_like", x, dtype, device)
    out = ones(shape, dtype=dtype, requires_grad=requires_grad, device=device)
    return _laid_like("ones_like", out, x, memory_format)


def full_like(x, fill_value, dtype=None, requires_grad: bool = False, device=None, *,
              memory_format=None) -> Tensor:  # fmt: skip
    """``fill_value`` everywhere, with the shape, dtype, device and memory format of ``x``
    (unless given)."""
    shape, dtype, device = _like("full_like", x, dtype, device)
    out = full(shape, fill_value, dtype=dtype, requires_grad=requires_grad, device=device)
    return _laid_like("full_like", out, x, memory_format)


def rand_like(x, dtype=None, requires_grad: bool = False, device=None, generator=None):
    """``rand`` with the shape, dtype and device of ``x`` (unless given)."""
    shape, dtype, device = _like("rand_like", x, dtype, device)
    return rand(shape, dtype=dtype, requires_grad=requires_grad, device=device, generator=generator)


def randn_like(x, dtype=None, requires_grad: bool = False, device=None, generator=None):
    """``randn`` with the shape, dtype and device of ``x`` (unless given)."""
    shape, dtype, device = _like("randn_like", x, dtype, device)
    return randn(
        shape, dtype=dtype, requires_grad=requires_grad, device=device, generator=generator
    )


__all__ = [
    "arange",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "linspace",
    "multinomial",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]
