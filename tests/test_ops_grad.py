"""Every differentiable op: gradients against central finite differences, in float64.

Each op gets a hypothesis property test over random shapes (broadcasting and size-1 axes
included) and a diamond-shaped graph (its input used twice, its output used twice). Inputs are
drawn away from points where the op is not differentiable (log and sqrt see positive numbers,
max/min/abs/clip see values on a grid that keeps ties and kinks out); ties get their own tests.
The last section runs a representative set of ops on every backend of the ``xp`` fixture.
"""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tricycle import binary, ops, reduce, unary
from tricycle.einsum import Einsum
from tricycle.tensor import Tensor

# ------------------------------------------------------------------ strategies
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4)
NONSCALAR_SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)
BROADCAST_PAIRS = hnp.mutually_broadcastable_shapes(
    num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=4
)


def floats(low: float, high: float):
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)


SMOOTH = floats(-2, 2)
POSITIVE = floats(0.5, 3)
NONZERO = st.one_of(floats(0.5, 2), floats(-2, -0.5))
GRID = st.integers(-300, 300).map(lambda k: k / 100)  # distinct values are >= 0.01 apart
HALF_GRID = st.integers(-300, 299).map(lambda k: (k + 0.5) / 100)  # never 0, never on GRID


def arrays(shape, elements=SMOOTH, unique=False):
    return hnp.arrays(np.float64, shape, elements=elements, unique=unique)


def diamond(fn):
    """x feeds fn twice, and one output of fn is used twice: fn(x) * fn(x) + fn(x)."""

    def f(*tensors):
        y = fn(*tensors)
        return y * y + fn(*tensors)

    return f


# ------------------------------------------------------------------ elementwise, one tensor
UNARY = {
    "neg": (lambda x: -x, SMOOTH),
    "exp": (unary.exp, SMOOTH),
    "exp method": (lambda x: x.exp(), SMOOTH),
    "log": (unary.log, POSITIVE),
    "log method": (lambda x: x.log(), POSITIVE),
    "sqrt": (unary.sqrt, POSITIVE),
    "abs": (abs, HALF_GRID),
    "abs method": (lambda x: x.abs(), HALF_GRID),
    "sin": (unary.sin, floats(-4, 4)),
    "cos": (unary.cos, floats(-4, 4)),
    "tanh": (unary.tanh, floats(-3, 3)),
    "sigmoid": (unary.sigmoid, floats(-6, 6)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_grad_and_diamond(name, data):
    fn, elements = UNARY[name]
    check_grads(fn, data.draw(arrays(SHAPES, elements), label="x"))
    check_grads(diamond(fn), data.draw(arrays(NONSCALAR_SHAPES, elements), label="diamond x"))


# ------------------------------------------------------------------ a tensor and a scalar
SCALAR = {
    "x + c": (lambda x, c: x + c, SMOOTH, SMOOTH),
    "c + x": (lambda x, c: c + x, SMOOTH, SMOOTH),
    "x + int": (lambda x, c: x + c, SMOOTH, st.integers(-3, 3)),
    "x - c": (lambda x, c: x - c, SMOOTH, SMOOTH),
    "c - x": (lambda x, c: c - x, SMOOTH, SMOOTH),
    "x * c": (lambda x, c: x * c, SMOOTH, SMOOTH),
    "c * x": (lambda x, c: c * x, SMOOTH, SMOOTH),
    "x / c": (lambda x, c: x / c, SMOOTH, NONZERO),
    "c / x": (lambda x, c: c / x, NONZERO, SMOOTH),
    "x ** c": (lambda x, c: x**c, POSITIVE, floats(-2, 3)),
    "x ** int": (lambda x, c: x**c, SMOOTH, st.integers(0, 4)),
    "c ** x": (lambda x, c: c**x, SMOOTH, POSITIVE),
    "x + np.float32": (lambda x, c: x + np.float32(c), SMOOTH, SMOOTH),
    "x * 0-d array": (lambda x, c: x * np.array(c), SMOOTH, SMOOTH),
    "maximum(x, c)": (unary.maximum_scalar, HALF_GRID, GRID),
    "minimum(x, c)": (unary.minimum_scalar, HALF_GRID, GRID),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
@given(data=st.data())
def test_scalar_grad_and_diamond(name, data):
    fn, x_elements, c_strategy = SCALAR[name]
    x = data.draw(arrays(SHAPES, x_elements), label="x")
    c = data.draw(c_strategy, label="c")
    out = check_grads(lambda t: fn(t, c), x)
    assert out.dtype == np.float64
    x = data.draw(arrays(NONSCALAR_SHAPES, x_elements), label="diamond x")
    check_grads(diamond(lambda t: fn(t, c)), x)


@given(data=st.data())
def test_clip_grad(data):
    x = data.draw(arrays(SHAPES, HALF_GRID), label="x")
    low = data.draw(st.none() | GRID, label="low")
    high = data.draw(st.none() | GRID, label="high")
    assume(low is None or high is None or low <= high)
    check_grads(lambda t: t.clip(low, high), x)
    check_grads(diamond(lambda t: unary.clip(t, low, high)), x)


def test_pow_zero_exponent_at_zero_has_zero_gradient():
    # d/dx x**0 = 0 everywhere, also at x = 0 (0 * 0**-1 would be nan)
    x = Tensor(np.array([0.0, 1.0, -2.0]))
    (x**0).backward()
    np.testing.assert_array_equal(x.grad.array, [0.0, 0.0, 0.0])


# ------------------------------------------------------------------ two tensors, broadcasting
BINARY = {
    "add": (lambda a, b: a + b, SMOOTH, SMOOTH),
    "sub": (lambda a, b: a - b, SMOOTH, SMOOTH),
    "mul": (lambda a, b: a * b, SMOOTH, SMOOTH),
    "div": (lambda a, b: a / b, SMOOTH, NONZERO),
    "pow": (lambda a, b: a**b, POSITIVE, SMOOTH),
    "maximum": (binary.maximum, GRID, HALF_GRID),
    "minimum": (binary.minimum, GRID, HALF_GRID),
    "add function": (binary.add, SMOOTH, SMOOTH),
    "mul function": (binary.mul, SMOOTH, SMOOTH),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_grad_and_diamond(name, data):
    fn, a_elements, b_elements = BINARY[name]
    shape_a, shape_b = data.draw(BROADCAST_PAIRS, label="shapes").input_shapes
    a = data.draw(arrays(shape_a, a_elements), label="a")
    b = data.draw(arrays(shape_b, b_elements), label="b")
    out = check_grads(fn, a, b)
    assert out.shape == np.broadcast_shapes(shape_a, shape_b)
    check_grads(diamond(fn), a, b)
    if name not in ("maximum", "minimum", "div"):  # (a, a) would tie or divide by 0
        check_grads(lambda t: fn(t, t), a)


@given(data=st.data())
def test_binary_with_constant_operand(data):
    """Only the tensor that requires grad gets one; lists and arrays work as operands."""
    shape_a, shape_b = data.draw(BROADCAST_PAIRS, label="shapes").input_shapes
    a = data.draw(arrays(shape_a), label="a")
    b = data.draw(arrays(shape_b, NONZERO), label="b")
    check_grads(lambda x, y: x * y - x / y, a, b, wrt=[0])
    check_grads(lambda x, y: x * y - x / y, a, b, wrt=[1])
    check_grads(lambda x: x * b + b.tolist() - b / x, b)


@pytest.mark.parametrize("fn", [binary.maximum, binary.minimum], ids=["maximum", "minimum"])
def test_maximum_minimum_split_ties(fn):
    a = Tensor(np.array([1.0, 2.0, 3.0]))
    b = Tensor(np.array([3.0, 2.0, 1.0]))
    fn(a, b).backward()
    wins = [0.0, 0.5, 1.0] if fn is binary.maximum else [1.0, 0.5, 0.0]
    np.testing.assert_array_equal(a.grad.array, wins)
    np.testing.assert_array_equal(b.grad.array, 1 - np.array(wins))

    x = Tensor(np.array([-1.0, 0.0, 2.0]))
    fn(x, x).backward()  # 0.5 + 0.5: the gradient is never doubled
    np.testing.assert_array_equal(x.grad.array, [1.0, 1.0, 1.0])


# ------------------------------------------------------------------ reductions
@st.composite
def reduction_inputs(draw, elements=SMOOTH, unique=False):
    x = draw(arrays(SHAPES, elements, unique=unique), label="x")
    if x.ndim == 0:
        axis = draw(st.sampled_from([None, ()]), label="axis")
    else:
        axis = draw(
            st.none() | hnp.valid_tuple_axes(x.ndim, min_size=1) | st.integers(-x.ndim, x.ndim - 1),
            label="axis",
        )
    keepdims = draw(st.booleans(), label="keepdims")
    return x, axis, keepdims


REDUCTIONS = {
    "sum": (reduce.sum, SMOOTH, False),
    "sum method": (lambda x, axis, keepdims: x.sum(axis, keepdims), SMOOTH, False),
    "mean": (reduce.mean, SMOOTH, False),
    "mean method": (lambda x, axis, keepdims: x.mean(axis=axis, keepdims=keepdims), SMOOTH, False),
    "var": (reduce.var, SMOOTH, False),
    "var ddof=1": (lambda x, axis, keepdims: reduce.var(x, axis, keepdims, ddof=1), SMOOTH, False),
    "max": (reduce.max, GRID, True),
    "max method": (lambda x, axis, keepdims: x.max(axis, keepdims), GRID, True),
    "min": (reduce.min, GRID, True),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction_grad(name, data):
    fn, elements, unique = REDUCTIONS[name]
    x, axis, keepdims = data.draw(reduction_inputs(elements, unique))
    if name == "var ddof=1":
        axes = range(x.ndim) if axis is None else np.atleast_1d(axis)
        assume(np.prod([x.shape[a] for a in axes]) > 1)
    out = check_grads(lambda t: fn(t, axis, keepdims), x)
    numpy_fns = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}
    expected = numpy_fns.get(name.split()[0])
    if expected is not None:
        np.testing.assert_allclose(out.array, expected(x, axis=axis, keepdims=keepdims))
    check_grads(diamond(lambda t: fn(t, axis, keepdims)), x)


def test_reduction_variance_matches_numpy():
    x = np.random.default_rng(1).normal(size=(3, 4, 5))
    for axis in (None, 0, (1, 2), -1):
        for ddof in (0, 1):
            out = reduce.var(Tensor(x), axis=axis, keepdims=True, ddof=ddof)
            np.testing.assert_allclose(out.array, np.var(x, axis=axis, keepdims=True, ddof=ddof))


@pytest.mark.parametrize("fn", [reduce.max, reduce.min], ids=["max", "min"])
def test_max_min_reductions_split_ties(fn):
    values = [1.0, 3.0, 3.0] if fn is reduce.max else [3.0, 1.0, 1.0]
    x = Tensor(np.array(values))
    fn(x).backward()
    expected = [0.0, 0.5, 0.5] if fn is reduce.max else [0.0, 0.5, 0.5]
    np.testing.assert_array_equal(x.grad.array, expected)

    # per row along an axis: a 3-way tie, no tie, a 2-way tie
    x = Tensor(np.array([[2.0, 2.0, 2.0], [1.0, 5.0, 0.0], [4.0, 0.0, 4.0]]))
    fn(x, axis=1).backward()
    if fn is reduce.max:
        expected = [[1 / 3, 1 / 3, 1 / 3], [0, 1, 0], [0.5, 0, 0.5]]
    else:
        expected = [[1 / 3, 1 / 3, 1 / 3], [0, 0, 1], [0, 1, 0]]
    np.testing.assert_allclose(x.grad.array, expected)
    np.testing.assert_allclose(x.grad.array.sum(axis=1), [1, 1, 1])


# ------------------------------------------------------------------ shape ops
@given(data=st.data())
def test_reshape_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    shape = list(data.draw(st.permutations(x.shape), label="shape"))
    ones = data.draw(st.integers(0, 2), label="ones")
    shape = [1] * ones + shape
    if shape and data.draw(st.booleans(), label="use -1"):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    out = check_grads(lambda t: ops.reshape(t, shape), x)
    assert out.shape == x.reshape(shape).shape
    check_grads(lambda t: t.reshape(-1), x)
    check_grads(diamond(lambda t: t.reshape(*x.shape[::-1])), x)


@given(data=st.data())
def test_transpose_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    axes = data.draw(st.permutations(range(x.ndim)), label="axes")
    out = check_grads(lambda t: ops.transpose(t, axes), x)
    np.testing.assert_array_equal(out.array, np.transpose(x, axes))
    check_grads(lambda t: t.transpose(), x)
    check_grads(lambda t: t.T, x)
    check_grads(diamond(lambda t: t.transpose(*axes)), x)


@given(data=st.data())
def test_swapaxes_grad(data):
    x = data.draw(arrays(NONSCALAR_SHAPES), label="x")
    a = data.draw(st.integers(-x.ndim, x.ndim - 1), label="a")
    b = data.draw(st.integers(-x.ndim, x.ndim - 1), label="b")
    out = check_grads(lambda t: t.swapaxes(a, b), x)
    np.testing.assert_array_equal(out.array, np.swapaxes(x, a, b))
    check_grads(diamond(lambda t: ops.swapaxes(t, a, b)), x)


@given(data=st.data())
def test_expand_dims_and_squeeze_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim), label="axis")
    out = check_grads(lambda t: t.expand_dims(axis), x)
    assert out.shape == np.expand_dims(x, axis).shape
    check_grads(lambda t: ops.squeeze(ops.expand_dims(t, axis), axis), x)
    check_grads(lambda t: t.squeeze(), x)
    ones = [i for i, n in enumerate(x.shape) if n == 1]
    if ones:
        axis = data.draw(st.sampled_from(ones), label="squeeze axis")
        out = check_grads(diamond(lambda t: ops.squeeze(t, axis)), x)
        assert out.shape == np.squeeze(x, axis).shape


@given(data=st.data())
def test_split_grad(data):
    x = data.draw(arrays(NONSCALAR_SHAPES), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = x.shape[axis]
    sections = data.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
    pieces = ops.split(Tensor(x), sections, axis=axis)
    for piece, expected in zip(pieces, np.split(x, sections, axis=axis), strict=True):
        np.testing.assert_array_equal(piece.array, expected)

    def weighted(t):  # every piece with its own weight, so misrouted gradients show
        return ops.concatenate([p * (i + 1) for i, p in enumerate(t.split(sections, axis))], axis)

    check_grads(weighted, x)
    check_grads(diamond(lambda t: ops.split(t, sections, axis)[-1]), x)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3), label="indices"))
    check_grads(lambda t: ops.split(t, cuts, axis)[0] * 2, x)


@given(data=st.data())
def test_concatenate_grad(data):
    base = data.draw(NONSCALAR_SHAPES, label="base")
    axis = data.draw(st.integers(-len(base), len(base) - 1), label="axis")
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3), label="sizes")
    shapes = [tuple(s if i != axis % len(base) else k for i, s in enumerate(base)) for k in sizes]
    xs = [data.draw(arrays(shape), label=f"x{i}") for i, shape in enumerate(shapes)]
    out = check_grads(lambda *ts: ops.concatenate(ts, axis=axis), *xs)
    np.testing.assert_array_equal(out.array, np.concatenate(xs, axis=axis))
    check_grads(diamond(lambda *ts: ops.concatenate([ts[0], *ts], axis=axis)), *xs)


@given(data=st.data())
def test_stack_grad(data):
    shape = data.draw(SHAPES, label="shape")
    count = data.draw(st.integers(1, 3), label="count")
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    xs = [data.draw(arrays(shape), label=f"x{i}") for i in range(count)]
    out = check_grads(lambda *ts: ops.stack(ts, axis=axis), *xs)
    np.testing.assert_array_equal(out.array, np.stack(xs, axis=axis))
    check_grads(diamond(lambda *ts: ops.stack([*ts, ts[0]], axis=axis)), *xs)


@given(data=st.data())
def test_repeat_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    repeats = data.draw(st.integers(0, 3), label="repeats")
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1) if x.ndim else st.none())
    out = check_grads(lambda t: t.repeat(repeats, axis), x)
    np.testing.assert_array_equal(out.array, np.repeat(x, repeats, axis=axis))
    check_grads(diamond(lambda t: ops.repeat(t, repeats, axis=axis)), x)


# ------------------------------------------------------------------ indexing
@given(data=st.data())
def test_getitem_basic_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    index = data.draw(hnp.basic_indices(x.shape, allow_newaxis=True), label="index")
    out = check_grads(lambda t: t[index], x)
    np.testing.assert_array_equal(out.array, x[index])
    check_grads(diamond(lambda t: ops.getitem(t, index)), x)


@given(data=st.data())
def test_getitem_integer_array_grad(data):
    """Repeated indices must add up their gradients, not overwrite each other."""
    x = data.draw(arrays(NONSCALAR_SHAPES), label="x")
    n = x.shape[0]
    index = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5), label="index")
    index = np.array(index + [index[0]])  # at least one repeat
    out = check_grads(lambda t: t[index], x)
    np.testing.assert_array_equal(out.array, x[index])
    check_grads(lambda t: t[list(index)], x)
    check_grads(lambda t: t[Tensor(index, requires_grad=False)], x)
    check_grads(diamond(lambda t: t[index]), x)
    if x.ndim >= 2:  # integer arrays on two axes, and mixed with a slice
        m = x.shape[1]
        cols = data.draw(hnp.arrays(np.int64, index.shape, elements=st.integers(0, m - 1)))
        check_grads(lambda t: t[index, cols], x)
        check_grads(lambda t: t[:, cols], x)


@given(data=st.data())
def test_getitem_boolean_mask_grad(data):
    x = data.draw(arrays(NONSCALAR_SHAPES), label="x")
    mask = data.draw(hnp.arrays(bool, x.shape), label="mask")
    out = check_grads(lambda t: t[mask], x)
    np.testing.assert_array_equal(out.array, x[mask])
    check_grads(lambda t: t[Tensor(mask)], x)
    rows = data.draw(hnp.arrays(bool, x.shape[:1]), label="rows")
    check_grads(lambda t: t[rows], x)
    check_grads(lambda t: t[rows.tolist()], x)  # a list of bools is a mask, not indices
    check_grads(diamond(lambda t: t[mask]), x)


def test_getitem_repeated_index_accumulates():
    x = Tensor(np.array([10.0, 20.0, 30.0]))
    x[np.array([0, 2, 0, 0])].backward()
    np.testing.assert_array_equal(x.grad.array, [3.0, 0.0, 1.0])


# ------------------------------------------------------------------ where, masked_fill
@given(data=st.data())
def test_where_grad(data):
    shapes = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4), label="shapes"
    )
    shape_c, shape_a, shape_b = shapes.input_shapes
    condition = data.draw(hnp.arrays(bool, shape_c), label="condition")
    a = data.draw(arrays(shape_a), label="a")
    b = data.draw(arrays(shape_b), label="b")
    out = check_grads(lambda x, y: ops.where(condition, x, y), a, b)
    np.testing.assert_array_equal(out.array, np.where(condition, a, b))
    check_grads(lambda x, y: ops.where(Tensor(condition), x, y), a, b)
    check_grads(diamond(lambda x, y: ops.where(condition, x, y)), a, b)
    check_grads(lambda x: ops.where(condition, x, x * 3), a)


@given(data=st.data())
def test_masked_fill_grad(data):
    x = data.draw(arrays(SHAPES), label="x")
    mask_shape = data.draw(hnp.broadcastable_shapes(x.shape, max_dims=max(x.ndim, 1)))
    mask = data.draw(hnp.arrays(bool, mask_shape), label="mask")
    value = data.draw(SMOOTH, label="value")
    out = check_grads(lambda t: t.masked_fill(mask, value), x)
    np.testing.assert_array_equal(out.array, np.where(mask, value, x))
    check_grads(diamond(lambda t: ops.masked_fill(t, Tensor(mask), value)), x)


# ------------------------------------------------------------------ every backend
def _rng_array(shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


# (name, fn, input arrays, numpy reference of the forward)
BACKEND_CASES = [
    ("add", lambda a, b: a + b, [(3, 4), (4,)], lambda a, b: a + b),
    ("mul", lambda a, b: a * b, [(2, 1, 4), (3, 1)], lambda a, b: a * b),
    ("div", lambda a, b: a / (b * b + 1), [(3, 4), (3, 4)], lambda a, b: a / (b * b + 1)),
    ("pow", lambda a, b: (a * a + 1) ** b, [(3, 4), (4,)], lambda a, b: (a * a + 1) ** b),
    ("maximum", binary.maximum, [(3, 4), (3, 1)], np.maximum),
    ("scalars", lambda a: (2.0 - a) * 3 / 4 + 1, [(5,)], lambda a: (2.0 - a) * 3 / 4 + 1),
    ("exp", unary.exp, [(3, 4)], np.exp),
    ("log", lambda a: unary.log(a * a + 1), [(3, 4)], lambda a: np.log(a * a + 1)),
    ("tanh", unary.tanh, [(3, 4)], np.tanh),
    ("sigmoid", unary.sigmoid, [(3, 4)], lambda a: 1 / (1 + np.exp(-a))),
    ("sum", lambda a: a.sum(axis=1), [(3, 4, 2)], lambda a: a.sum(axis=1)),
    ("mean", lambda a: a.mean(axis=(0, 2), keepdims=True), [(3, 4, 2)], None),
    ("max", lambda a: a.max(axis=-1), [(3, 4)], lambda a: a.max(axis=-1)),
    ("var", lambda a: a.var(axis=0), [(5, 3)], lambda a: a.var(axis=0)),
    ("reshape", lambda a: a.reshape(4, 3).T, [(3, 4)], lambda a: a.reshape(4, 3).T),
    ("getitem", lambda a: a[np.array([0, 2, 0]), 1:], [(3, 4)], None),
    ("mask", lambda a: a[a.array > 0], [(3, 4)], lambda a: a[a > 0]),
    ("where", lambda a, b: ops.where(a.array > b.array, a, b), [(3, 4), (4,)], np.maximum),
    ("concatenate", lambda a, b: ops.concatenate([a, b], axis=1), [(2, 3), (2, 2)], None),
    ("stack", lambda a, b: ops.stack([a, b], axis=-1), [(2, 3), (2, 3)], None),
    ("matmul", lambda a, b: a @ b, [(2, 3, 4), (4, 5)], lambda a, b: a @ b),
    ("matmul dot", lambda a, b: a @ b, [(4,), (4,)], lambda a, b: a @ b),
    ("dense", lambda a, b: Einsum("...i,ij->...j")(a, b), [(2, 3, 4), (4, 5)], None),
    ("einsum sum", lambda a: Einsum("ij->j")(a), [(3, 4)], lambda a: a.sum(0)),
    ("einsum size-1", lambda a, b: Einsum("ij,jk->ik")(a, b), [(2, 1), (3, 4)], None),
    ("einsum 3", lambda a, b, c: Einsum("ij,jk,kl->il")(a, b, c), [(2, 3), (3, 4), (4, 2)], None),
    ("split", lambda a: ops.split(a, 2, axis=1)[1] * 2, [(3, 4)], lambda a: a[:, 2:] * 2),
    ("repeat", lambda a: a.repeat(2, axis=0), [(3, 4)], lambda a: a.repeat(2, axis=0)),
    ("masked_fill", lambda a: a.masked_fill(a.array > 0, 0.5), [(3, 4)], None),
    ("clip", lambda a: a.clip(-1, 1), [(3, 4)], lambda a: a.clip(-1, 1)),
]


@pytest.mark.parametrize("case", BACKEND_CASES, ids=[case[0] for case in BACKEND_CASES])
def test_forward_and_backward_on_every_backend(xp, case):
    """The op gives the same forward and gradients on this backend as on numpy."""
    name, fn, shapes, reference = case
    host = [_rng_array(shape, seed=i) for i, shape in enumerate(shapes)]

    def run(module):
        tensors = [Tensor(module.asarray(a)) for a in host]
        out = fn(*tensors)
        weights = module.asarray(_rng_array(out.shape, seed=99))
        out.backward(weights)
        assert out.xp is module
        assert all(t.grad.xp is module for t in tensors)
        return _host(out.array), [_host(t.grad.array) for t in tensors]

    out, grads = run(xp)
    expected_out, expected_grads = run(np)
    np.testing.assert_allclose(out, expected_out, rtol=1e-10, atol=1e-12, err_msg=name)
    for grad, expected in zip(grads, expected_grads):
        np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12, err_msg=name)
    if reference is not None:
        np.testing.assert_allclose(out, reference(*host), rtol=1e-12, err_msg=name)
    check_grads(fn, *host)  # and the gradient itself is right


def _host(array):
    return array.get() if hasattr(array, "get") else np.asarray(array)
