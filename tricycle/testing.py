"""torch.testing for tricycle: ``assert_close`` and ``make_tensor``.

``assert_close(actual, expected)`` compares Tensors (or numpy arrays, or Python numbers, or
sequences and mappings of them, item by item) as torch's: the shapes, dtypes and devices must
match (``check_dtype=False``: both are cast to their promoted dtype first), then every element
must satisfy |actual - expected| <= atol + rtol |expected|, NaNs equal only with
``equal_nan``. The tolerances default by dtype, the larger of the two inputs' (float16 1e-3
and 1e-5, bfloat16 1.6e-2 and 1e-5, float32 1.3e-6 and 1e-5, float64 and Python floats 1e-7
and 1e-7, integers and bools exact). The AssertionError is torch's: the count of mismatched
elements, and the greatest absolute and relative differences with their indices.

``make_tensor(*shape, dtype=, device=)`` draws a tensor for a test from tricycle's generator:
floats uniform in [low, high) (default [-9, 9)), integers in [low, high) (default [-9, 10),
[0, 10) for unsigned), bools either way.

``assert_allclose`` is torch's deprecated form (a FutureWarning): non-Tensors made Tensors
(``expected`` in ``actual``'s dtype), dtypes not compared, NaNs equal by default, and its own
default tolerances (float16 1e-3 and 1e-3, float32 1e-4 and 1e-5, float64 1e-5 and 1e-8,
others exact).
"""

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from tricycle import backend, checks, random
from tricycle.tensor import Tensor
from tricycle.torch_dtypes import finfo, promote_types
from tricycle.torch_functions import tensor as as_tensor

# (rtol, atol) by dtype name, torch's
TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
              "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5),
              "complex128": (1e-7, 1e-7)}  # fmt: skip


class _Mismatch(AssertionError):
    """An AssertionError raised inside a nested comparison, before its item is named."""


def _tolerances(*dtypes) -> tuple[float, float]:
    pairs = [TOLERANCES.get(str(np.dtype(dtype)), (0.0, 0.0)) for dtype in dtypes]
    return max(rtol for rtol, _ in pairs), max(atol for _, atol in pairs)


def _attribute(name: str, actual, expected) -> None:
    if actual != expected:
        raise _Mismatch(f"The values for attribute '{name}' do not match: {actual} != {expected}.")


def _message(identifier: str, rtol, atol, abs_diff, rel_diff, extra, idx=(None, None)) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, at, tol in (
        ("absolute", abs_diff, idx[0], atol),
        ("relative", rel_diff, idx[1], rtol),
    ):
        line = f"{kind.title()} difference: {diff}" if at is None else (
            f"Greatest {kind} difference: {diff} at index {at}")  # fmt: skip
        lines.append(line + ("" if equality else f" (up to {tol} allowed)"))
    return "\n".join(lines)


def _compare_arrays(actual, expected, rtol, atol, equal_nan, check_dtype) -> None:
    """Two host arrays of one shape: torch's TensorLikePair."""
    _attribute(
        "shape", f"tricycle.Size({list(actual.shape)})", f"tricycle.Size({list(expected.shape)})"
    )
    if check_dtype:
        _attribute("dtype", f"tricycle.{actual.dtype}", f"tricycle.{expected.dtype}")
    if rtol is None:
        rtol, atol = _tolerances(actual.dtype, expected.dtype)
    if actual.dtype != expected.dtype:  # check_dtype=False: compared in the promoted dtype
        common = promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.astype(common), expected.astype(common)
    integral = not backend.is_float(actual.dtype) and actual.dtype.kind != "c"
    items = (actual.item, expected.item)
    if integral:  # integers and bools: differences in int64
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_diff = np.abs(actual - expected)
        matches = abs_diff <= atol + rtol * np.abs(expected)
        if not integral:
            matches |= actual == expected  # infinities of one sign
            if equal_nan:
                matches |= np.isnan(actual) & np.isnan(expected)
        if matches.all():
            return
        if actual.ndim == 0:
            a, e = (item() for item in items)  # of the dtype compared in (bools, not ints)
            rel = float("inf") if e == 0 else abs(a - e) / abs(e)
            raise _Mismatch(
                _message("Scalars", rtol, atol, abs(a - e), rel, f"Expected {e} but got {a}.")
            )
        abs_diff = np.where(matches, 0, abs_diff).ravel()
        rel_diff = abs_diff / np.abs(expected.ravel())
        if integral:  # torch divides integers into its default float
            rel_diff = rel_diff.astype(np.float32)
        rel_diff = np.where(matches.ravel(), 0, rel_diff)
    mismatches, total = int(matches.size - matches.sum()), matches.size
    at_abs, at_rel = (
        np.unravel_index(int(np.argmax(d)), actual.shape) for d in (abs_diff, rel_diff)
    )
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    at = (tuple(map(int, at_abs)), tuple(map(int, at_rel)))
    greatest = abs_diff.max().item(), rel_diff.max().item()
    raise _Mismatch(_message("Tensor-likes", rtol, atol, *greatest, extra, at))


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype) -> None:
    if check_dtype and type(actual) is not type(expected):
        _attribute("type", type(actual), type(expected))
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(f"Booleans mismatch: {actual} is not {expected}")
        return
    exact = isinstance(actual, numbers.Integral) and isinstance(expected, numbers.Integral)
    if rtol is None:
        rtol, atol = (0.0, 0.0) if exact else TOLERANCES["float64"]
    if actual == expected or (equal_nan and math.isnan(actual) and math.isnan(expected)):
        return
    abs_diff = abs(actual - expected)
    if abs_diff <= atol + rtol * abs(expected):
        return
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    raise _Mismatch(_message("Scalars", rtol, atol, abs_diff, rel_diff, extra))


def _compare(actual, expected, where, options) -> None:
    """Compare one pair, or each item of two sequences or mappings (``where`` is the item's
    path, which the message names)."""
    tensors = isinstance(actual, Tensor) and isinstance(expected, Tensor)
    arrays = isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
    try:
        if tensors:
            if options["check_device"]:
                _attribute("device", actual.device, expected.device)
            _compare_arrays(actual.numpy(), expected.numpy(), **options["values"])
        elif arrays:
            _compare_arrays(actual, expected, **options["values"])
        elif checks.is_real(actual) and checks.is_real(expected) or (
            isinstance(actual, bool) and isinstance(expected, bool)):  # fmt: skip
            _compare_numbers(actual, expected, **options["values"])
        elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
            if set(actual) != set(expected):
                missing, extra = (
                    sorted(set(expected) - set(actual)),
                    sorted(set(actual) - set(expected)),
                )
                raise _Mismatch(
                    "The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                    f"{missing}\nAdditional keys in the actual mapping: {extra}"
                )
            for key in expected:
                _compare(actual[key], expected[key], [*where, key], options)
        elif _sequence(actual) and _sequence(expected):
            if len(actual) != len(expected):
                raise _Mismatch(
                    f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                )
            for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
                _compare(a, e, [*where, i], options)
        else:
            raise TypeError(f"assert_close: no comparison handles inputs of type {type(actual)} "
                            f"and {type(expected)} (both Tensors, numpy arrays, numbers, or "
                            "sequences or mappings of them)")  # fmt: skip
    except _Mismatch as error:
        if where and not getattr(error, "named", False):
            error = _Mismatch(
                f"{error}\n\nThe failure occurred for item {''.join(f'[{k!r}]' for k in where)}"
            )
            error.named = True
            raise error from None
        raise


def _sequence(value) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg=None,
) -> None:
    """torch.testing.assert_close: an AssertionError unless ``actual`` and ``expected`` are close
    (see the module's doc); ``msg``, a string or a function of the generated message, replaces
    it. tricycle's tensors are dense with their own strides, so ``check_layout`` and
    ``check_stride`` check nothing more."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    for name, value in (
        ("equal_nan", equal_nan),
        ("check_device", check_device),
        ("check_dtype", check_dtype),
    ):
        checks.boolean("assert_close", name, value)
    values = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_dtype": check_dtype}
    try:
        _compare(actual, expected, [], {"check_device": check_device, "values": values})
    except _Mismatch as error:
        text = str(error)
        text = msg if isinstance(msg, str) else (msg(text) if callable(msg) else text)
        raise AssertionError(text) from None


def make_tensor(
    *shape,
    dtype,
    device=None,
    low=None,
    high=None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
) -> Tensor:
    """torch.testing.make_tensor: a tensor of ``shape`` (ints, or one sequence of them) and
    ``dtype`` drawn from tricycle's generator: floats uniform in [low, high) (default -9 and
    9), integers in [low, high) (default -9 and 10; 0 for unsigned), bools either way; zeros
    replaced by the smallest positive value (floats) or 1 with ``exclude_zero``."""
    op = "make_tensor"
    sizes = tuple(shape[0]) if len(shape) == 1 and _sequence(shape[0]) else shape
    for size in sizes:
        checks.non_negative_int(op, "shape", size)
    dtype = backend.numeric_dtype(dtype, op)
    generator = random.generator()
    if dtype.kind == "b":
        array = generator.integers(0, 2, size=sizes).astype(np.bool_)
    else:
        floating = backend.is_float(dtype)
        unsigned = dtype.kind == "u"
        low = (0 if unsigned else -9) if low is None else low
        high = (9 if floating else 10) if high is None else high
        if low > high:
            raise ValueError(
                f"{op}: low must be less than or equal to high, got low={low}, high={high}"
            )
        if floating:
            array = generator.uniform(low, high, size=sizes).astype(dtype)
        else:
            array = generator.integers(
                math.ceil(low), max(math.ceil(high), math.ceil(low) + 1), size=sizes
            )
            array = array.astype(dtype)
        if exclude_zero:
            array[array == 0] = finfo(dtype).tiny if floating else 1
    result = Tensor(array, requires_grad=requires_grad, dtype=dtype)
    return result if device is None else result.to(device)


# (rtol, atol) by dtype name of the deprecated assert_allclose, torch's
ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:  # fmt: skip
    """torch.testing.assert_allclose, deprecated since torch 1.12 for ``assert_close`` (a
    FutureWarning says so): ``assert_close`` of the two as Tensors, without comparing dtypes,
    with this function's own default tolerances (see the module's doc)."""
    warnings.warn(
        "`tricycle.testing.assert_allclose()` is deprecated (as torch's since 1.12) and will be "
        "removed in a future release. Please use `tricycle.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [ALLCLOSE_TOLERANCES.get(str(np.dtype(x.dtype)), (0.0, 0.0))
                 for x in (actual, expected)]  # fmt: skip
        rtol, atol = max(r for r, _ in pairs), max(a for _, a in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)  # fmt: skip


__all__ = ["assert_allclose", "assert_close", "make_tensor"]
