"""An integer or bool tensor meeting a float tensor in arithmetic gives the float's dtype, as
torch's (numpy would give float64 for int32/int64 with float32): the backprop-ninja lecture's
``dlogits += F.one_hot(ids, num_classes=27) * dlogit_maxes`` stays float32, so its manual
gradients are bit for bit autograd's. Two floats or two integers keep numpy's promotion (which
is torch's for them), and an integer numpy array meeting a float tensor keeps numpy's
(tests/test_library_inputs.py)."""

import numpy as np
import pytest

import tricycle
from tricycle import binary

OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
}


KINDS = [("int64", "float32"), ("int32", "float32"), ("bool", "float32"), ("int64", "float64"),
         ("int16", "float16")]  # fmt: skip


@pytest.mark.parametrize("op", [*OPS, "maximum", "minimum"])
@pytest.mark.parametrize("ints, floats", KINDS)
@pytest.mark.parametrize("float_first", [True, False])
def test_an_integer_tensor_meets_a_float_tensor_as_torch(op, ints, floats, float_first):
    torch = pytest.importorskip("torch")
    if op in ("sub", "pow") and ints == "bool":
        pytest.skip("torch refuses - with a bool tensor (pow's backward too)")
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (4, 3)).astype(floats)
    k = rng.integers(0, 3, (3,)).astype(ints)  # broadcast along the rows
    ours_x = tricycle.tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_k, theirs_k = tricycle.tensor(k), torch.tensor(k)
    if op in OPS:
        fn, tfn = OPS[op], OPS[op]
    else:
        fn, tfn = getattr(binary, op), getattr(torch, op)
    ours = fn(ours_x, ours_k) if float_first else fn(ours_k, ours_x)
    theirs = tfn(theirs_x, theirs_k) if float_first else tfn(theirs_k, theirs_x)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    tol = 2e-3 if floats == "float16" else 1e-6
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    ours.sum().backward()
    theirs.sum().backward()
    assert ours_x.grad.dtype == ours_x.dtype
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=tol, atol=tol)


def test_the_lectures_one_hot_line_stays_float32_and_exact():
    torch = pytest.importorskip("torch")
    import tricycle.nn.functional as F  # noqa: PLC0415

    rng = np.random.default_rng(1)
    logits = rng.normal(size=(5, 7)).astype(np.float32)
    maxes = rng.normal(size=(5, 1)).astype(np.float32)
    ids = logits.argmax(1)
    ours = F.one_hot(tricycle.tensor(ids), num_classes=7) * tricycle.tensor(maxes)
    theirs = torch.nn.functional.one_hot(torch.tensor(ids), num_classes=7) * torch.tensor(maxes)
    assert ours.dtype == np.float32 and theirs.dtype == torch.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_arrays_and_like_kinds_keep_numpys_promotion():
    x = tricycle.tensor(np.ones(3, np.float32))
    assert (x + np.ones(3, np.int64)).dtype == np.float64  # an array: numpy's, as before
    assert (x + np.ones(3, np.int16)).dtype == np.float32
    assert (x + tricycle.tensor(np.ones(3, np.float64))).dtype == np.float64
    ids = tricycle.tensor(np.ones(3, np.int32))
    assert (ids + tricycle.tensor(np.ones(3, np.int64))).dtype == np.int64
    assert (ids < x).dtype == np.bool_


FLOAT_PAIRS = [
    ("float32", "float64"), ("float64", "float32"), ("float16", "float32"),
    ("bfloat16", "float32"), ("bfloat16", "float64"), ("float32", "float16"),
]  # fmt: skip


@pytest.mark.parametrize("op", [*OPS, "maximum", "minimum"])
@pytest.mark.parametrize("dims, scalars", FLOAT_PAIRS)
@pytest.mark.parametrize("scalar_first", [True, False])
def test_a_0d_float_tensor_takes_the_dtype_of_one_with_axes_as_torch(op, dims, scalars,
                                                                     scalar_first):  # fmt: skip
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 2.0, (4, 3)).astype(np.float32)
    s = np.float32(1.25)
    ours_x = tricycle.tensor(x, requires_grad=True).to(dtype=tricycle_dtype(dims)).detach()
    ours_x.requires_grad_()
    ours_s = tricycle.tensor(s, requires_grad=True).to(dtype=tricycle_dtype(scalars)).detach()
    ours_s.requires_grad_()
    theirs_x = torch.tensor(x).to(getattr(torch, dims)).requires_grad_()
    theirs_s = torch.tensor(s).to(getattr(torch, scalars)).requires_grad_()
    fn = OPS[op] if op in OPS else getattr(binary, op)
    tfn = OPS[op] if op in OPS else getattr(torch, op)
    ours = fn(ours_s, ours_x) if scalar_first else fn(ours_x, ours_s)
    theirs = tfn(theirs_s, theirs_x) if scalar_first else tfn(theirs_x, theirs_s)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.") == dims
    tol = 2e-2 if "16" in dims + scalars else 1e-6
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               theirs.detach().double().numpy(), rtol=tol, atol=tol)  # fmt: skip
    ours.sum().backward()
    theirs.sum().backward()
    for mine, torchs in ((ours_x, theirs_x), (ours_s, theirs_s)):
        assert str(mine.grad.dtype) == str(torchs.grad.dtype).removeprefix("torch.")
        expected = torchs.grad.double().numpy()
        np.testing.assert_allclose(mine.grad.numpy().astype(np.float64), expected, rtol=tol,
                                   atol=tol * 12)  # fmt: skip


def tricycle_dtype(name: str):
    return tricycle.backend.bfloat16("test") if name == "bfloat16" else np.dtype(name)


def test_two_0d_or_two_with_axes_keep_numpys_promotion():
    one = tricycle.tensor(np.float32(1.0))
    wide = tricycle.tensor(np.float64(2.0))
    assert (one * wide).dtype == np.float64  # both 0-d: the wider, as torch's
    narrow, wider = tricycle.tensor(np.ones(2, np.float32)), tricycle.tensor(np.ones(2))
    assert (narrow * wider).dtype == np.float64  # both with axes: the wider


NUMBER_CASES = [
    "x + 0.5", "0.5 + x", "x - 1.5", "2.5 - x", "x * 0.5", "x / 2", "3 / x", "x / x",
    "x ** 0.5", "x ** 2", "2 ** x", "x // 2", "7 // x", "x % 3", "7 % x", "x * 2", "x + True",
    "(x > 2) * 0.5", "(x > 2) / 2", "x * np.float64(0.5)", "x / np.int64(2)",
]  # fmt: skip


@pytest.mark.parametrize("expression", NUMBER_CASES)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_an_integer_tensor_meets_a_python_number_as_torch(expression, dtype):
    """torch's rule: a float (or a true division) makes an integer or bool tensor float32,
    where numpy gives float64; integers with integers stay integers (``//`` and ``%`` too)."""
    torch = pytest.importorskip("torch")
    data = np.array([1, 2, 3, 4, 7], dtype=dtype)
    ours = eval(expression, {"x": tricycle.tensor(data), "np": np})
    theirs = eval(expression, {"x": torch.tensor(data), "np": np})
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("expression", ["x // 0.75", "2.0 // x", "x % 0.75", "5.5 % x"])
def test_floor_division_and_remainder_of_floats_as_torch(expression):
    """``//`` rounds down with gradient 0 (as floor's); ``%``'s gradient is 1 for x."""
    torch = pytest.importorskip("torch")
    data = np.array([-2.5, -1.0, 0.3, 1.7, 4.0], dtype=np.float32)
    ours, theirs = tricycle.tensor(data, requires_grad=True), torch.tensor(data)
    got, expected = eval(expression, {"x": ours}), eval(expression, {"x": theirs})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    if "%" in expression and expression.startswith("x"):
        got.sum().backward()
        np.testing.assert_array_equal(ours.grad.numpy(), np.ones(5, np.float32))
