"""torch.testing on tricycle (``tricycle.testing``): ``assert_close`` passes and fails where
torch's does, with torch's message (the mismatch counts, the greatest differences and their
indices, the default tolerances per dtype), over tensors of every float and integer dtype,
0-d tensors, Python numbers, sequences and mappings; ``make_tensor`` draws in torch's ranges."""

import re

import numpy as np
import pytest

import tricycle as tc
from tricycle import testing

torch = pytest.importorskip("torch")

DTYPES = ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8", "bool"]


def both(values, dtype):
    ours = tc.tensor(values, dtype=getattr(tc, dtype))
    return ours, torch.tensor(ours.array.astype(np.float64).tolist(), dtype=getattr(torch, dtype))


def outcome(function, *args, **kwargs) -> str | None:
    """The AssertionError's message (``torch`` written as ``tricycle``), or None if it passed."""
    try:
        function(*args, **kwargs)
    except AssertionError as error:
        return str(error).replace("torch", "tricycle")
    return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5,), (2, 3), ()])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_assert_close_as_torchs(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2, size=shape) if dtype == "bool" else rng.integers(1, 20, size=shape)
    nudged = base.astype(np.float64).copy()
    if dtype == "bool":
        nudged = np.where(rng.random(shape) < 0.3, 1 - nudged, nudged)
    elif dtype.startswith(("int", "uint")):
        nudged = nudged + (rng.random(shape) < 0.3)
    else:  # some within the default tolerance, some past it
        scale = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-7}[dtype]
        nudged = nudged * (1 + scale * rng.choice([0.1, 3.0], size=shape))
    (a, ta), (b, tb) = both(base.tolist(), dtype), both(nudged.tolist(), dtype)
    theirs = outcome(torch.testing.assert_close, ta, tb)
    assert outcome(tc.testing.assert_close, a, b) == theirs
    theirs = outcome(torch.testing.assert_close, ta, tb, rtol=0.05, atol=0.0)
    assert outcome(tc.testing.assert_close, a, b, rtol=0.05, atol=0.0) == theirs


@pytest.mark.parametrize(
    ("actual", "expected", "options"),
    [
        ([1.0, float("nan")], [1.0, float("nan")], {}),
        ([1.0, float("nan")], [1.0, float("nan")], {"equal_nan": True}),
        ([1.0, float("inf")], [1.0, float("inf")], {}),
        ([0.0, 1.0], [0.0, 0.0], {}),
        ([1.0, 2.0], [1.0, 2.0, 3.0], {}),
        ([1.0, 2.0], [1.0, 2.5], {"msg": "custom"}),
        ([1.0, 2.0], [1.0, 2.5], {"msg": lambda text: text.upper()}),
    ],
)
def test_special_values_and_messages(actual, expected, options):
    (a, ta), (b, tb) = both(actual, "float32"), both(expected, "float32")
    theirs = outcome(torch.testing.assert_close, ta, tb, **options)
    assert outcome(tc.testing.assert_close, a, b, **options) == theirs


def test_dtypes_must_match_unless_told():
    (a, ta), (b, tb) = both([1.0, 2.0], "float32"), both([1.0, 2.0], "float64")
    theirs = outcome(torch.testing.assert_close, ta, tb)
    assert (
        theirs
        == "The values for attribute 'dtype' do not match: tricycle.float32 != tricycle.float64."
    )
    assert outcome(tc.testing.assert_close, a, b) == theirs
    assert outcome(tc.testing.assert_close, a, b, check_dtype=False) is None
    (c, tc_) = both([1.0, 2.1], "float64")
    theirs = outcome(torch.testing.assert_close, ta, tc_, check_dtype=False)
    assert outcome(tc.testing.assert_close, a, c, check_dtype=False) == theirs


@pytest.mark.parametrize(
    ("actual", "expected"),
    [(1.0, 1.5), (1, 2), (3, 3), (1.0, 1.0 + 1e-9), (True, False), (0.0, 1.0)],
)
def test_python_numbers(actual, expected):
    theirs = outcome(torch.testing.assert_close, actual, expected)
    assert outcome(tc.testing.assert_close, actual, expected) == theirs


def test_sequences_and_mappings_name_the_item():
    ours = [tc.tensor(1.0), {"w": tc.tensor([2.0, 3.0])}]
    theirs = [torch.tensor(1.0), {"w": torch.tensor([2.0, 3.0])}]
    ours_b = [tc.tensor(1.0), {"w": tc.tensor([2.0, 4.0])}]
    theirs_b = [torch.tensor(1.0), {"w": torch.tensor([2.0, 4.0])}]
    expected = outcome(torch.testing.assert_close, theirs, theirs_b)
    assert expected.endswith("The failure occurred for item [1]['w']")
    assert outcome(tc.testing.assert_close, ours, ours_b) == expected
    assert outcome(tc.testing.assert_close, ours, ours) is None
    for a, b in (([1.0, 2.0], [1.0]), ({"a": 1.0}, {"b": 1.0})):
        assert outcome(tc.testing.assert_close, a, b) == outcome(torch.testing.assert_close, a, b)


def test_numpy_arrays_compare_as_tensor_likes():
    a, b = np.array([1.0]), np.array([1.1])
    theirs = outcome(torch.testing.assert_close, a, b)
    assert outcome(tc.testing.assert_close, a, b) == theirs


def test_bad_arguments():
    x = tc.ones(2)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                       "omitted, but got no atol."):  # fmt: skip
        tc.testing.assert_close(x, x, rtol=1e-3)
    with pytest.raises(TypeError, match="assert_close: no comparison handles"):
        tc.testing.assert_close(x, [1.0, 1.0])
    with pytest.raises(TypeError, match="assert_close: equal_nan must be"):
        tc.testing.assert_close(x, x, equal_nan=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "bfloat16"])
def test_make_tensor_draws_in_torchs_ranges(dtype):
    tc.manual_seed(0)
    ours = testing.make_tensor(200, dtype=getattr(tc, dtype))
    theirs = torch.testing.make_tensor(200, dtype=getattr(torch, dtype), device="cpu")
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == re.sub(
        "torch.", "", str(theirs.dtype)
    )
    values, reference = ours.array.astype(np.float64), theirs.double().numpy()
    assert values.min() >= reference.min() - 2 and values.max() <= reference.max() + 2
    if dtype != "bool":
        assert values.min() >= -9 and values.max() < 10 and len(np.unique(values)) > 2
    tc.manual_seed(0)
    np.testing.assert_array_equal(
        testing.make_tensor((200,), dtype=getattr(tc, dtype)).array, ours.array
    )
    small = testing.make_tensor(3, 4, dtype=tc.float32, low=0.5, high=1.0, requires_grad=True)
    assert small.requires_grad and small.shape == (3, 4) and 0.5 <= small.array.min()
    assert (
        testing.make_tensor(500, dtype=tc.int32, low=-1, high=2, exclude_zero=True).array != 0
    ).all()
    with pytest.raises(ValueError, match="make_tensor: low must be less than or equal to high"):
        testing.make_tensor(2, dtype=tc.float32, low=2, high=1)
