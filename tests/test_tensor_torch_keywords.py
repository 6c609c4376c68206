"""Tensor's numpy-named methods (``sum``, ``mean``, ``max``, ``min``, ``var``, ``split``) take
torch's keywords (``tricycle.tensor``): a call naming ``dim``, ``keepdim``, ``unbiased`` or
``correction`` has torch's meaning (values and gradients against PyTorch in float64, max/min's
(values, indices), split's sizes, and the function ``tricycle.split``'s named by torch's
``split_size_or_sections`` or ``dim``), a call with positional arguments or numpy's keywords
gives exactly what ``reduce``/``ops`` give, and naming both kinds is a TypeError."""

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import ops, reduce
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def rounded(*shape):
    """0, 1 or 2 as floats: ties, where torch's max sends the gradient to one index."""
    return lambda rng: rng.integers(0, 3, size=shape).astype(np.float64)


def nanogpt(qkv, E=4):
    """The lines of nanoGPT's attention and layer norm that name torch's keywords."""
    B, T, _ = qkv.shape
    q, k, v = qkv.split(E, dim=2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / np.sqrt(E))
    y = att.softmax(-1) @ v  # (B, T, E)
    mean, var = y.mean(-1, keepdim=True), y.var(-1, keepdim=True, unbiased=False)
    return (y - mean) / (var + 1e-5).sqrt()


def lib(t):
    """The library of tensor ``t``: torch's, or tricycle's (its functions as torch's)."""
    import tricycle  # noqa: PLC0415

    return torch if isinstance(t, torch.Tensor) else tricycle


# (name, expression in the words of both libraries, inputs)
CASES = [
    ("sum dim", lambda t: t.sum(dim=1), [normal(2, 3, 4)]),
    ("sum negative dim keepdim", lambda t: t.sum(dim=-1, keepdim=True), [normal(2, 3, 4)]),
    ("sum tuple dim", lambda t: t.sum(dim=(0, 2)), [normal(2, 3, 4)]),
    ("sum positional dim keepdim", lambda t: t.sum(1, keepdim=True), [normal(2, 3, 4)]),
    ("sum empty dim is all", lambda t: t.sum(dim=()), [normal(2, 3)]),
    ("mean keepdim", lambda t: t.mean(-1, keepdim=True), [normal(2, 3, 4)]),
    ("mean tuple dim", lambda t: t.mean(dim=(-1, -3)), [normal(2, 3, 4)]),
    ("mean list dim keepdim", lambda t: t.mean(dim=[0, 1], keepdim=True), [normal(2, 3, 4)]),
    ("var dim is unbiased", lambda t: t.var(dim=1), [normal(3, 5)]),
    ("var biased", lambda t: t.var(-1, keepdim=True, unbiased=False), [normal(2, 3, 4)]),
    ("var unbiased positional", lambda t: t.var(1, True, keepdim=True), [normal(3, 5)]),
    ("var correction 0", lambda t: t.var(dim=(0, 1), correction=0), [normal(2, 3, 4)]),
    ("var correction 2", lambda t: t.var(dim=-1, correction=2), [normal(3, 5)]),
    ("var unbiased of all", lambda t: t.var(unbiased=True), [normal(3, 4)]),
    ("max dim", lambda t: t.max(dim=1).values, [normal(3, 5)]),
    ("max ties", lambda t: t.max(dim=1).values, [rounded(4, 6)]),
    ("max keepdim ties", lambda t: t.max(-1, keepdim=True).values, [rounded(2, 3, 6)]),
    ("min dim 0 ties", lambda t: t.min(dim=0).values, [rounded(6, 4)]),
    ("min negative dim keepdim", lambda t: t.min(dim=-2, keepdim=True)[0], [normal(2, 3, 4)]),
    ("split smaller last", lambda t: t.split(2, dim=1), [normal(3, 5)]),
    ("split larger than dim", lambda t: t.split(4, dim=0), [normal(3, 2)]),
    ("split sizes", lambda t: t.split([1, 3, 0, 1], dim=-1), [normal(2, 5)]),
    ("split negative dim", lambda t: t.split(3, dim=-2), [normal(2, 7, 3)]),
    ("split size keyword", lambda t: t.split(split_size=2, dim=1), [normal(3, 5)]),
    ("split function sizes", lambda t: lib(t).split(t, split_size_or_sections=[3, 2]), [normal(5)]),
    ("split function dim", lambda t: lib(t).split(t, 2, dim=1), [normal(3, 5)]),
    ("split both", lambda t: lib(t).split(t, split_size_or_sections=3, dim=0), [normal(7)]),
    ("nanoGPT attention and norm", nanogpt, [normal(2, 3, 12)]),
]


def as_list(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def run_both(expression, arrays, rng):
    """The expression on both libraries' float64 tensors, back-propagating the same random
    gradient through every output; asserts equal values and input gradients."""
    tensors = [Tensor(a.copy()) for a in arrays]
    torch_tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs, expected = as_list(expression(*tensors)), as_list(expression(*torch_tensors))
    assert len(outs) == len(expected)
    total, torch_total = 0, 0
    for out, theirs in zip(outs, expected):
        assert out.shape == tuple(theirs.shape)
        np.testing.assert_allclose(out.array, theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
        weights = rng.normal(size=out.shape)
        total = total + (out * weights).sum()
        torch_total = torch_total + (theirs * torch.from_numpy(weights)).sum()
    total.backward()
    torch_total.backward()
    for i, (tensor, torch_tensor) in enumerate(zip(tensors, torch_tensors)):
        np.testing.assert_allclose(
            tensor.grad.array, torch_tensor.grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=f"{i}"
        )


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_torch_keywords_match_torch(case):
    name, expression, generators = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    run_both(expression, [generator(rng) for generator in generators], rng)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@given(shape=shapes, data=st.data())
def test_reductions_over_any_dim_match_torch(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    rng = np.random.default_rng(len(shape))
    array = np.round(rng.normal(size=shape) * 2) / 2  # ties for max and min

    def expression(t):
        extrema = [t.max(dim=dim, keepdim=keepdim).values, t.min(dim, keepdim=keepdim).values]
        biased = t.var(dim, keepdim=keepdim, unbiased=False)
        return [t.sum(dim=dim, keepdim=keepdim), t.mean(dim, keepdim=keepdim), biased, *extrema]

    run_both(expression, [array], rng)


# ====================================================================== max and min's pair
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_and_min_return_values_and_indices_as_torch(op, keepdim):
    array = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 0.0], [-1.0, -1.0, -1.0, 5.0]])
    ours = getattr(Tensor(array), op)(dim=1, keepdim=keepdim)
    theirs = getattr(torch.tensor(array), op)(dim=1, keepdim=keepdim)
    assert ours._fields == ("values", "indices")  # torch's fields, as namedtuple
    assert type(ours).__name__ == op.capitalize()
    values, indices = ours  # unpacks as torch's
    assert values is ours.values and indices is ours.indices
    assert indices.dtype == np.int64 and not indices.requires_grad
    np.testing.assert_array_equal(indices.array, theirs.indices.numpy())  # the first on ties
    np.testing.assert_array_equal(values.array, theirs.values.numpy())


def test_split_returns_a_tuple_of_pieces_as_torch():
    x = Tensor(np.arange(10.0).reshape(2, 5))
    pieces = x.split(2, dim=1)
    assert isinstance(pieces, tuple) and [p.shape for p in pieces] == [(2, 2), (2, 2), (2, 1)]
    assert [p.shape for p in Tensor(np.zeros((0, 3))).split(2, dim=0)] == [(0, 3)]


# ====================================================================== numpy's forms
NUMPY_FORMS = [
    ("sum", reduce.sum, (), {}),
    ("sum", reduce.sum, (1,), {}),
    ("sum", reduce.sum, (1, True), {}),
    ("sum", reduce.sum, (), {"axis": (0, -1), "keepdims": True}),
    ("mean", reduce.mean, (-1,), {"keepdims": True}),
    ("mean", reduce.mean, (), {"axis": 0}),
    ("max", reduce.max, (1,), {}),  # numpy's positional axis: a Tensor, not (values, indices)
    ("max", reduce.max, (), {"axis": -1, "keepdims": True}),
    ("min", reduce.min, (0, True), {}),
    ("min", reduce.min, (), {}),
    ("var", reduce.var, (1,), {}),  # ddof 0
    ("var", reduce.var, (1, True), {}),
    ("var", reduce.var, (), {"axis": (0, 1), "ddof": 1}),
    ("var", reduce.var, (-1, False, 2), {}),
    ("split", ops.split, (2, 1), {}),  # numpy's 2 sections, not pieces of size 2
    ("split", ops.split, (3,), {"axis": -1}),
    ("split", ops.split, ([1, 2],), {"axis": 2}),
]


@pytest.mark.parametrize("form", NUMPY_FORMS, ids=[f"{f[0]}{f[2]}{f[3]}" for f in NUMPY_FORMS])
def test_numpy_forms_are_the_ops_called_directly(form):
    name, op, args, kwargs = form
    array = np.round(np.random.default_rng(3).normal(size=(2, 4, 6)))  # ties for max and min
    results = []
    for run in (lambda t: getattr(t, name)(*args, **kwargs), lambda t: op(t, *args, **kwargs)):
        x = Tensor(array.copy())
        outs = as_list(run(x))
        assert all(isinstance(out, Tensor) for out in outs)
        sum(((out * (i + 1)).sum() for i, out in enumerate(outs)), start=0).backward()
        results.append(([out.array for out in outs], [out.name for out in outs], x.grad.array))
    (ours, our_names, our_grad), (theirs, their_names, their_grad) = results
    assert our_names == their_names and len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(our_grad, their_grad)


def test_the_methods_keep_numpy_names_and_docs():
    assert Tensor.sum.__wrapped__ is reduce.sum and Tensor.split.__wrapped__ is ops.split
    assert Tensor.var.__name__ == "var" and "unbiased" in Tensor.var.__doc__
    assert "ddof" in Tensor.var.__doc__ and "index" in Tensor.max.__doc__


# ====================================================================== errors
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize(
    "kwargs",
    [dict(dim=1, keepdims=True), dict(axis=1, keepdim=True), dict(axis=(0, 1), keepdims=False),
     dict(dim=-1), dict(axis=0, keepdims=True)],
)  # fmt: skip
def test_sum_and_mean_take_numpys_names_beside_torchs_as_torch(name, kwargs):
    """Their two meanings agree, and torch takes axis/keepdims as aliases: no call is refused."""
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).normal(size=(3, 4))
    ours, theirs = Tensor(data), torch.tensor(data, requires_grad=True)
    got, expected = getattr(ours, name)(**kwargs), getattr(theirs, name)(**kwargs)
    np.testing.assert_allclose(got.array, expected.detach().numpy())
    got.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy())


def test_sum_given_one_name_twice_is_a_type_error():
    for call in (lambda x: x.sum(dim=1, axis=1), lambda x: x.mean(keepdim=True, keepdims=True)):
        with pytest.raises(TypeError, match="both dim and axis, or keepdim and keepdims"):
            call(Tensor(np.ones((4, 4))))


@pytest.mark.parametrize(
    "call, numpy_word, torch_word",
    [
        (lambda x: x.max(dim=0, axis=0), "axis", "dim"),
        (lambda x: x.min(dim=0, keepdims=True), "keepdims", "dim"),
        (lambda x: x.var(ddof=1, unbiased=False), "ddof", "unbiased"),
        (lambda x: x.var(axis=0, correction=1), "axis", "correction"),
        (lambda x: x.split(2, axis=0, dim=1), "axis", "dim"),
    ],
)
def test_numpy_and_torch_keywords_in_one_call_are_a_type_error(call, numpy_word, torch_word):
    with pytest.raises(TypeError, match="numpy's.*torch's") as error:
        call(Tensor(np.ones((4, 4))))
    assert numpy_word in str(error.value) and torch_word in str(error.value)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda x: x.max(keepdim=True), TypeError, "Tensor.max: dim"),
        (lambda x: x.min(dim=(0, 1)), TypeError, "Tensor.min: dim"),
        (lambda x: x.max(dim=2), ValueError, r"\[-2, 2\)"),
        (lambda x: x.min(dim=0, keepdim=1), TypeError, "keepdim"),
        (lambda x: x.sum(dim=0, keepdim="yes"), TypeError, "Tensor.sum: keepdim"),
        (lambda x: x.var(0, unbiased=True, correction=0), TypeError, "not both"),
        (lambda x: x.var(dim=0, correction=-1), ValueError, "correction"),
        (lambda x: x.var(dim=0, unbiased=1), TypeError, "unbiased"),
        (lambda x: x.split([1, 2], dim=0), ValueError, "add up to 4"),
        (lambda x: x.split(0, dim=0), ValueError, "split_size must"),
        (lambda x: x.split(1.5, dim=0), TypeError, "split_size must"),
        (lambda x: x.split(2, dim=3), ValueError, "Tensor.split: dim"),
    ],
)
def test_bad_torch_arguments_name_the_method(call, error, words):
    with pytest.raises(error, match=words):
        call(Tensor(np.ones((4, 3))))


def test_max_of_an_empty_dim_is_an_error():
    with pytest.raises(ValueError, match=r"Tensor.max: .*empty dim 1 of shape \(2, 0\)"):
        Tensor(np.ones((2, 0))).max(dim=1)
