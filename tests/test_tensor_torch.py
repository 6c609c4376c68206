"""torch.Tensor's methods on tricycle's Tensor (``tricycle.tensor_torch``, and the casts of
``tricycle.tensor_inplace``): values and gradients against PyTorch in float64 (one table, most
cases the very same expression run on both libraries), random shapes with hypothesis, finite
differences on a diamond graph, the methods without a gradient and the errors. The in-place
methods, ``.data``, ``to`` and ``new_*`` are tests/test_tensor_inplace.py's."""

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import torch_functions
from tricycle.tensor import Tensor, to_tensor

torch = pytest.importorskip("torch")


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape)


def rounded(*shape):
    """Small integers as floats: ties (amax, amin) and exact zeros (relu, norm)."""
    return lambda rng: np.round(rng.normal(size=shape))


IDS = np.array([2, 0, 2, 1])
MASK = np.random.default_rng(2).random((3, 4)) > 0.5
GATHER = np.random.default_rng(1).integers(0, 3, size=(2, 3, 4))


def same(expression):
    """A case whose expression reads the same in both libraries."""
    return expression, expression


# (name, ours, theirs, inputs)
CASES = [
    ("view", *same(lambda t: t.view(3, -1)), [normal(3, 4, 2)]),
    ("view a tuple", *same(lambda t: t.view((4, 6))), [normal(3, 4, 2)]),
    ("contiguous", *same(lambda t: t.permute(2, 0, 1).contiguous()), [normal(3, 4, 2)]),
    ("clone in a diamond", *same(lambda t: t.clone() * t), [normal(3, 4)]),
    ("unsqueeze", *same(lambda t: t.unsqueeze(-1) * t.unsqueeze(1)), [normal(3, 4)]),
    ("flatten", *same(lambda t: t.flatten()), [normal(2, 3, 4)]),
    ("flatten from 1", *same(lambda t: t.flatten(1)), [normal(2, 3, 4)]),
    ("flatten 0 to 1", *same(lambda t: t.flatten(0, 1)), [normal(2, 3, 4)]),
    ("flatten a number", *same(lambda t: t.sum().flatten()), [normal(2, 3)]),
    ("expand", *same(lambda t: t.expand(2, 3, 4)), [normal(3, 1)]),
    ("expand -1", *same(lambda t: t.expand(2, -1, 4)), [normal(3, 1)]),
    ("flip", *same(lambda t: t.flip(0)), [normal(3, 4)]),
    ("flip two axes", *same(lambda t: t.flip((0, 2))), [normal(2, 3, 4)]),
    ("flip varargs", *same(lambda t: t.flip(0, 1)), [normal(3, 4)]),
    ("flip dims by name", *same(lambda t: t.flip(dims=(1, 2))), [normal(2, 3, 4)]),
    ("roll", *same(lambda t: t.roll(1, 0)), [normal(3, 4)]),
    ("roll back", *same(lambda t: t.roll(-2, 2)), [normal(2, 3, 4)]),
    ("roll past the size", *same(lambda t: t.roll(7, -1)), [normal(3, 4)]),
    ("roll flattened", *same(lambda t: t.roll(5)), [normal(3, 4)]),
    ("roll two dims", *same(lambda t: t.roll((1, -2), (0, 2))), [normal(2, 3, 4)]),
    ("roll a list of one", *same(lambda t: t.roll([2], [-1])), [normal(3, 4)]),
    ("tile", *same(lambda t: t.tile((2, 1, 3))), [normal(2, 3, 4)]),
    ("tile more dims", *same(lambda t: t.tile(2, 1, 3) * 1), [normal(3, 4)]),
    ("tile fewer dims", *same(lambda t: t.tile((2,))), [normal(2, 3, 4)]),
    ("repeat_interleave", *same(lambda t: t.repeat_interleave(2, dim=1)), [normal(2, 3, 4)]),
    ("repeat_interleave flat", *same(lambda t: t.repeat_interleave(3)), [normal(2, 3)]),
    (
        "repeat_interleave counts",
        lambda t: t.repeat_interleave(to_tensor([2, 0, 3], dtype=int), 1),
        lambda t: t.repeat_interleave(torch.tensor([2, 0, 3]), 1),
        [normal(2, 3, 4)],
    ),
    ("t", *same(lambda t: t.t() * 2), [normal(3, 4)]),
    ("t of a vector", *same(lambda t: t.t() * t), [normal(4)]),
    ("mT", *same(lambda t: t.mT @ t), [normal(2, 3, 4)]),
    ("unbind", *same(lambda t: t.unbind(1)[0] * t.unbind(1)[2]), [normal(2, 3, 4)]),
    ("unbind last", *same(lambda t: t.unbind(-1)[1] + t.unbind(0)[0]), [normal(3, 3)]),
    (
        "expand_as",
        lambda t: t.expand_as(Tensor(np.zeros((2, 3, 4)))),
        lambda t: t.expand_as(torch.zeros(2, 3, 4)),
        [normal(3, 1)],
    ),
    (
        "view_as",
        lambda t: t.view_as(Tensor(np.zeros((4, 6)))),
        lambda t: t.view_as(torch.zeros(4, 6)),
        [normal(2, 3, 4)],
    ),
    ("narrow", *same(lambda t: t.narrow(1, 1, 2)), [normal(3, 4)]),
    ("narrow from the end", *same(lambda t: t.narrow(2, -3, 2)), [normal(2, 3, 4)]),
    (
        "index_select repeated",
        lambda t: t.index_select(1, IDS % 3),
        lambda t: t.index_select(1, torch.from_numpy(IDS % 3)),
        [normal(2, 3, 4)],
    ),
    (
        "gather",
        lambda t: t.gather(1, to_tensor(GATHER, dtype=int)),
        lambda t: t.gather(1, torch.from_numpy(GATHER)),
        [normal(2, 3, 4)],
    ),
    (
        "gather a shorter index",
        lambda t: t.gather(0, GATHER[:, :2, :3]),
        lambda t: t.gather(0, torch.from_numpy(GATHER[:, :2, :3])),
        [normal(3, 4, 5)],
    ),
    ("topk", *same(lambda t: t.topk(2, dim=1).values), [normal(3, 5)]),
    ("topk smallest", *same(lambda t: t.topk(3, 0, largest=False)[0]), [normal(4, 3)]),
    ("pow", *same(lambda t: t.pow(3)), [normal(3, 4)]),
    ("pow tensor", *same(lambda t, u: t.pow(u)), [positive(3, 4), normal(4)]),
    ("clamp", *same(lambda t: t.clamp(min=-0.5, max=0.5)), [normal(3, 4)]),
    ("clamp max", *same(lambda t: t.clamp(max=0.1)), [normal(3, 4)]),
    ("clamp min positional", *same(lambda t: t.clamp(-0.2)), [normal(3, 4)]),
    ("relu with zeros", *same(lambda t: t.relu()), [rounded(4, 5)]),
    ("neg square", *same(lambda t: t.neg() * t.square()), [normal(3, 4)]),
    ("reciprocal rsqrt", *same(lambda t: t.reciprocal() + t.rsqrt()), [positive(3, 4)]),
    (
        "step functions",
        *same(lambda t: t.sign() + t.floor() + t.ceil() + t.trunc() + t.round() + t),
        [normal(3, 4)],
    ),  # fmt: skip
    ("round to decimals", *same(lambda t: t.round(decimals=1) + t), [normal(3, 4)]),
    ("lerp", *same(lambda t, u: t.lerp(u, 0.3)), [normal(3, 4), normal(4)]),
    (
        "lerp tensor weight",
        *same(lambda t, u, w: t.lerp(u, w)),
        [normal(3, 4), normal(3, 4), normal(4)],
    ),  # fmt: skip
    (
        "where",
        lambda t, u: t.where(MASK, u),
        lambda t, u: t.where(torch.from_numpy(MASK), u),
        [normal(3, 4), normal(3, 4)],
    ),  # fmt: skip
    (
        "masked_select",
        lambda t: t.masked_select(MASK[0]) * 2,
        lambda t: t.masked_select(torch.from_numpy(MASK[0])) * 2,
        [normal(3, 4)],
    ),  # fmt: skip
    ("softmax", *same(lambda t: t.softmax(-1)), [normal(3, 4)]),
    ("softmax dim 0", *same(lambda t: t.softmax(dim=0)), [normal(3, 4, 2)]),
    ("softmax middle", *same(lambda t: t.softmax(1) * t), [normal(3, 4, 2)]),
    ("log_softmax", *same(lambda t: t.log_softmax(-1)), [normal(3, 4)]),
    ("log_softmax dim 0", *same(lambda t: t.log_softmax(dim=0)), [normal(3, 4, 2)]),
    ("softmax large", *same(lambda t: (t * 300).softmax(1)), [normal(3, 4)]),
    ("amax ties", *same(lambda t: t.amax()), [rounded(3, 4)]),
    ("amax dim", *same(lambda t: t.amax(1)), [rounded(3, 4)]),
    ("amax dims keepdim", *same(lambda t: t.amax((0, 2), keepdim=True)), [rounded(2, 3, 4)]),
    ("amin dim", *same(lambda t: t.amin(dim=-1)), [rounded(3, 4)]),
    ("std", *same(lambda t: t.std()), [normal(3, 4)]),
    ("std dim", *same(lambda t: t.std(1)), [normal(3, 4)]),
    ("std dims keepdim", *same(lambda t: t.std(dim=(0, 2), keepdim=True)), [normal(2, 3, 4)]),
    ("std correction 0", *same(lambda t: t.std(1, correction=0)), [normal(3, 4)]),
    ("std biased", *same(lambda t: t.std(unbiased=False)), [normal(3, 4)]),
    ("norm", *same(lambda t: t.norm()), [normal(3, 4)]),
    ("norm dim", *same(lambda t: t.norm(dim=1)), [normal(3, 4)]),
    ("norm zero rows", *same(lambda t: (t * (t > 0)).norm(2, -1, True)), [rounded(6, 2)]),
    ("norm fro", *same(lambda t: t.norm(p="fro", dim=(0, 1))), [normal(3, 4, 2)]),
    ("norm 1", *same(lambda t: t.norm(1)), [normal(3, 4)]),
    ("norm 1 dim with zeros", *same(lambda t: t.norm(1, dim=0, keepdim=True)), [rounded(5, 3)]),
    ("norm inf", *same(lambda t: t.norm(float("inf"), 1)), [normal(3, 4)]),
    ("norm inf ties", *same(lambda t: t.norm(float("inf"))), [rounded(3, 4)]),
    ("norm -inf", *same(lambda t: t.norm(-float("inf"), dim=(0, 2))), [normal(2, 3, 4)]),
    ("norm 3", *same(lambda t: t.norm(3, dim=-1)), [normal(3, 4)]),
    ("norm 1.5 zero rows", *same(lambda t: (t * (t > 0)).norm(1.5, 1)), [rounded(6, 2)]),
    ("tril", *same(lambda t: t.tril()), [normal(2, 3, 4)]),
    ("triu above", *same(lambda t: t.triu(1)), [normal(4, 3)]),
    ("tril below", *same(lambda t: t.tril(-1)), [normal(3, 5)]),
    ("float", *same(lambda t: t.float() * 2), [normal(3, 4)]),
    ("half", *same(lambda t: t.half()), [normal(3, 4)]),
    ("double of a float", *same(lambda t: t.float().double() * t), [normal(3, 4)]),
    ("type_as", *same(lambda t, u: t.type_as(u.float()) + u.float()), [normal(3), normal(3)]),
    ("to(dtype)", lambda t: t.to(np.float32), lambda t: t.to(torch.float32), [normal(3, 4)]),
    (
        "to(device, dtype)",
        lambda t: t.to("cpu", np.float32) * t.to(dtype=np.float32),
        lambda t: t.to("cpu", torch.float32) * t.to(dtype=torch.float32),
        [normal(3, 4)],
    ),
    ("to(float)", *same(lambda t: t.float().to(float) * t), [normal(3, 4)]),
    ("to(other)", *same(lambda t, u: u.to(t.float()) * t.float()), [normal(3), normal(3)]),
    ("matmul", *same(lambda t, u: t.matmul(u)), [normal(2, 3, 4), normal(4, 5)]),
    ("mm", *same(lambda t, u: t.mm(u)), [normal(3, 4), normal(4, 5)]),
    ("bmm", *same(lambda t, u: t.bmm(u)), [normal(2, 3, 4), normal(2, 4, 5)]),
]


def run_both(ours, theirs, arrays, rng):
    """Both expressions on the same float64 inputs, back-propagating the same random
    gradient; asserts equal values and input gradients (which stay float64)."""
    tensors = [Tensor(a.copy()) for a in arrays]
    torch_tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*tensors), theirs(*torch_tensors)
    tolerance = {"rtol": 1e-12, "atol": 1e-12}
    if out.dtype != np.float64:  # a cast to float32 or float16
        tolerance = {"rtol": 1e-3, "atol": 1e-3}
        assert str(expected.dtype) == f"torch.{out.dtype}"
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), **tolerance)
    weights = rng.normal(size=out.shape)
    out.backward(weights.astype(out.dtype))
    (expected * torch.from_numpy(weights).to(expected.dtype)).sum().backward()
    for i, (tensor, torch_tensor) in enumerate(zip(tensors, torch_tensors)):
        assert tensor.grad.dtype == np.float64
        np.testing.assert_allclose(
            tensor.grad.array, torch_tensor.grad.numpy(), err_msg=f"input {i}", **tolerance
        )


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_values_and_gradients_match_torch(case):
    name, ours, theirs, generators = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    run_both(ours, theirs, [generator(rng) for generator in generators], rng)


# ====================================================================== random shapes
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@given(shape=shapes, data=st.data())
def test_softmax_and_log_softmax_over_any_axis_match_torch(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    rng = np.random.default_rng(len(shape))
    for name in ("softmax", "log_softmax"):

        def expression(t, name=name):
            return getattr(t, name)(dim) * t

        run_both(expression, expression, [rng.normal(size=shape) * 3], rng)


@given(shape=shapes, data=st.data())
def test_shapes_match_torch(shape, data):
    ndim = len(shape)
    start = data.draw(st.integers(-ndim, ndim - 1), label="start")
    end = data.draw(st.integers(start % ndim, ndim - 1), label="end")
    dim = data.draw(st.integers(-ndim, ndim - 1), label="dim")
    shift = data.draw(st.integers(-6, 6), label="shift")
    lead = data.draw(st.integers(1, 3), label="lead")
    rng = np.random.default_rng(ndim)
    for expression in (
        lambda t: t.flatten(start, end),
        lambda t: t.roll(shift, dim),
        lambda t: t.flip(dim),
        lambda t: t.unsqueeze(dim).expand(lead, *t.unsqueeze(dim).shape),
        lambda t: t.narrow(dim, 0, 1),
    ):
        run_both(expression, expression, [rng.normal(size=shape)], rng)


@given(shape=shapes, data=st.data())
def test_tile_repeat_interleave_unbind_and_norms_match_torch(shape, data):
    ndim = len(shape)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4), label="reps"))
    dims = data.draw(st.lists(st.integers(0, ndim - 1), min_size=1, unique=True), label="dims")
    dims = [d - ndim if d % 2 else d for d in dims]  # some counted from the end
    shifts = [data.draw(st.integers(-5, 5), label="shift") for _ in dims]
    counts = data.draw(st.integers(0, 3), label="counts")
    p = data.draw(st.sampled_from([1, 1.5, 2, 3, float("inf"), -float("inf")]), label="p")
    keepdim = data.draw(st.booleans(), label="keepdim")
    rng = np.random.default_rng(ndim)
    for expression in (
        lambda t: t.tile(reps),
        lambda t: t.roll(tuple(shifts), tuple(dims)),
        lambda t: t.repeat_interleave(counts, dims[0]),
        lambda t: t.unbind(dims[0])[-1] * 3,
        lambda t: t.norm(p, tuple(dims), keepdim),
    ):
        run_both(expression, expression, [np.round(rng.normal(size=shape) * 2) / 2], rng)


@pytest.mark.parametrize("reps", [(2, 1, 1, 1), (1, 1, 1), (3,)])
def test_tile_makes_a_new_array_that_takes_writes_as_torchs_repeat(reps):
    """fast_neural_style's ``style.repeat(batch, 1, 1, 1)`` then ``batch.div_(255.0)``: each
    copy is written on its own (not a read-only broadcast view of one)."""
    image = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    ours, theirs = to_tensor(image, requires_grad=False).tile(reps), torch.tensor(image).tile(reps)
    ours.div_(255.0)
    theirs.div_(255.0)
    ours[0] = 1.0
    theirs[0] = 1.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@given(shape=shapes, data=st.data())
def test_gather_scatters_its_gradient_back_as_torch(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1), label="dim")
    rows = data.draw(st.integers(1, 5), label="rows")  # repeats: the gradients add up
    index_shape = shape[:dim] + (rows,) + shape[dim + 1 :]
    index = np.random.default_rng(rows).integers(0, shape[dim], size=index_shape)
    rng = np.random.default_rng(len(shape))
    run_both(
        lambda t: t.gather(dim, index),
        lambda t: t.gather(dim, torch.from_numpy(index)),
        [rng.normal(size=shape)],
        rng,
    )


def test_composites_match_finite_differences_in_a_diamond():
    x = np.random.default_rng(0).normal(size=(3, 4))
    check_grads(lambda t: t.softmax(0) * t.norm(dim=1, keepdim=True) + t.log_softmax(1), x)
    check_grads(lambda t: t.std(1, keepdim=True) * t.roll(1, 1) + t.expand(2, 3, 4).sum(0), x)
    check_grads(lambda t: t.gather(1, GATHER[0] % 4) * t.clone(), x)
    check_grads(lambda t: (t.tile(2, 1) * t.repeat_interleave(2, 0)).sum(0) + t.norm(3, 0) * t, x)


# ====================================================================== no gradient
def test_sizes_as_torch_and_as_numpy():
    x = Tensor(np.zeros((2, 3, 4)))
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.size == 24 and isinstance(x.size, int) and x.size + 1 == 25  # numpy's count
    assert x.numel() == 24 and x.dim() == 3
    batch, length, channels = x.size()  # nanoGPT's B, T, C = x.size()
    assert (batch, length, channels) == (2, 3, 4)
    assert Tensor(np.arange(6.0).reshape(2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="Tensor.size: dim"):
        x.size(3)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_and_argmin_match_torch_without_gradient(name):
    values = np.round(np.random.default_rng(0).normal(size=(3, 4, 5)))  # ties: the first
    x, tx = Tensor(values, requires_grad=True), torch.tensor(values)
    cases = [((), {}), ((1,), {}), ((-1,), {"keepdim": True}), ((0,), {}), ((), {"axis": 1})]
    for args, kwargs in cases:  # axis: torch's alias of dim (d2l's argmax(Y_hat, axis=1))
        out = getattr(x, name)(*args, **kwargs)
        expected = getattr(tx, name)(*args, **kwargs).numpy()
        assert out.dtype == np.int64 and not out.requires_grad
        np.testing.assert_array_equal(out.array, expected)
        function = getattr(torch_functions, name)(x, *args, **kwargs)  # tricycle.argmax(x, ...)
        np.testing.assert_array_equal(function.array, expected)


def test_any_all_and_topk_indices_match_torch():
    values = np.random.default_rng(0).integers(0, 2, size=(3, 4)).astype(np.float64)
    x, tx = Tensor(values), torch.tensor(values)
    for name in ("any", "all"):
        for kwargs in [{}, {"dim": 1}, {"dim": 0, "keepdim": True}]:
            out = getattr(x, name)(**kwargs)
            assert out.dtype == bool
            np.testing.assert_array_equal(out.array, getattr(tx, name)(**kwargs).numpy())
    values = np.random.default_rng(1).normal(size=(4, 6))
    ours, theirs = Tensor(values).topk(3, dim=1), torch.tensor(values).topk(3, dim=1)
    np.testing.assert_array_equal(ours.indices.array, theirs.indices.numpy())
    assert ours.indices.dtype == np.int64 and not ours.indices.requires_grad


def test_casts_and_contiguous():
    x = Tensor(np.array([[1.7, -2.2]]))
    assert x.long().tolist() == [[1, -2]] and not x.long().requires_grad
    assert x.double() is x  # already float64: itself, as torch
    assert x.contiguous() is x
    transposed = Tensor(np.ones((2, 3))).T
    assert not transposed.array.flags.c_contiguous
    assert transposed.contiguous().array.flags.c_contiguous
    expanded = Tensor(np.ones((3, 1))).expand(3, 4)
    assert expanded.array.strides[1] == 0  # a broadcast view, as torch's expand
    with pytest.raises(ValueError, match="NaN"):
        Tensor(np.array([np.nan])).long()


# ====================================================================== errors
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda t: t.view(2.5, 3), TypeError, "Tensor.view"),
        (lambda t: t.flatten(2, 1), ValueError, "Tensor.flatten: end_dim"),
        (lambda t: t.flatten(0, 5), ValueError, "Tensor.flatten: end_dim"),
        (lambda t: t.unsqueeze(4), ValueError, "expand_dims"),
        (lambda t: t.expand(3, 4, 4), ValueError, "Tensor.expand"),
        (lambda t: t.expand(4), ValueError, "Tensor.expand"),
        (lambda t: t.expand(-1, 2, 3, 4), ValueError, "Tensor.expand"),
        (lambda t: t.flip(3), ValueError, "Tensor.flip: dims"),
        (lambda t: t.flip(0, dims=1), TypeError, "Tensor.flip: arguments"),
        (lambda t: t.flip(axis=1), TypeError, "Tensor.flip: arguments"),
        (lambda t: t.roll(1, 3), ValueError, "Tensor.roll: dims"),
        (lambda t: t.roll(1.5, 0), TypeError, "Tensor.roll: shifts"),
        (lambda t: t.narrow(1, 2, 2), ValueError, "Tensor.narrow: length"),
        (lambda t: t.narrow(1, -4, 1), ValueError, "Tensor.narrow: start"),
        (lambda t: t.index_select(0, [[0]]), ValueError, "Tensor.index_select: index"),
        (lambda t: t.index_select(0, [0.5]), TypeError, "Tensor.index_select: index"),
        (lambda t: t.gather(0, np.zeros((2, 3), int)), ValueError, "Tensor.gather"),
        (lambda t: t.gather(0, np.zeros((2, 4, 4), int)), ValueError, "Tensor.gather"),
        (lambda t: t.topk(5, 1), ValueError, "Tensor.topk: k"),
        (lambda t: t.clamp(), ValueError, "Tensor.clamp"),
        (lambda t: t.softmax(3), ValueError, "Tensor.softmax: dim"),
        (lambda t: t.log_softmax(-4), ValueError, "Tensor.log_softmax: dim"),
        (lambda t: t[:, :0].softmax(1), ValueError, "Tensor.softmax: dim"),
        (lambda t: t.argmax(3), ValueError, "Tensor.argmax: dim"),
        (lambda t: t.argmin(1, axis=0), TypeError, r"Tensor.argmin: got dim=1 and axis=0"),
        (lambda t: t.amax(3), ValueError, "axis"),
        (lambda t: t.any(5), ValueError, "Tensor.any: dim"),
        (lambda t: t.norm(0.5), ValueError, "Tensor.norm: p"),
        (lambda t: t.norm("nuc"), ValueError, "Tensor.norm: p"),
        (lambda t: t.norm(True), ValueError, "Tensor.norm: p"),
        (lambda t: t.roll((1, 2), 0), ValueError, "Tensor.roll: dims"),
        (lambda t: t.roll((1, 2)), ValueError, "Tensor.roll: dims"),
        (lambda t: t.roll((1, 2), (0, 5)), ValueError, "Tensor.roll: dims"),
        (lambda t: t.tile(2, -1), ValueError, "Tensor.tile: dims"),
        (lambda t: t.tile(2.0), TypeError, "Tensor.tile"),
        (lambda t: t.repeat_interleave(2, 3), ValueError, "Tensor.repeat_interleave: dim"),
        (lambda t: t.repeat_interleave([1, 2], 1), ValueError, "repeat_interleave: repeats"),
        (lambda t: t.repeat_interleave([1, -1, 1], 1), ValueError, "interleave: repeats"),
        (lambda t: t.repeat_interleave([0.5], 1), TypeError, "Tensor.repeat_interleave"),
        (lambda t: t.repeat_interleave(-1), ValueError, "repeats"),
        (lambda t: t.t(), ValueError, "Tensor.t: shape"),
        (lambda t: t[0, 0].mT, ValueError, "Tensor.mT"),
        (lambda t: t.unbind(3), ValueError, "Tensor.unbind: dim"),
        (lambda t: t.expand_as(t[:, :1]), ValueError, "Tensor.expand"),
        (lambda t: t.view_as(t[:1]), ValueError, "reshape"),
        (lambda t: t.std(unbiased=1), TypeError, "Tensor.std: unbiased"),
        (lambda t: t[0, 0].tril(), ValueError, "Tensor.tril"),
        (lambda t: t.mm(t), ValueError, "Tensor.mm"),
        (lambda t: t.bmm(t[:1].swapaxes(1, 2)), ValueError, "Tensor.bmm"),
    ],
)
def test_bad_arguments_name_the_method(call, error, match):
    x = Tensor(np.zeros((2, 3, 4)))
    with pytest.raises(error, match=match):
        call(x)


def test_two_axes_are_swapped_as_torch_s_transpose():
    """``x.transpose(0, 1)`` of a matrix is its transpose (numpy's permutation (0, 1) would
    leave it); on more axes, two swap and a permutation permutes."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for axes in [(0, 1), (-2, -1), (2, 0)]:
        ours = to_tensor(x, requires_grad=True)
        out = ours.transpose(*axes)
        np.testing.assert_array_equal(out.array, torch.tensor(x).transpose(*axes).numpy())
        out.sum().backward()
        assert ours.grad.shape == x.shape
    matrix = to_tensor(x[0])
    np.testing.assert_array_equal(matrix.transpose(0, 1).array, x[0].T)
    np.testing.assert_array_equal(to_tensor(x).transpose(1, 0, 2).array, x.transpose(1, 0, 2))


def test_the_small_torch_methods_without_a_gradient():
    x = np.array([[1.0, np.nan, -np.inf], [0.0, 2.0, np.inf]])
    ours, theirs = Tensor(x), torch.tensor(x)
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(ours, name)().array, getattr(theirs, name)().numpy())
    y = np.array([[1.0, 0.0, 2.0], [0.0, 2.0, 3.0]])
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        np.testing.assert_array_equal(getattr(ours, name)(Tensor(y)).array,
                                      getattr(theirs, name)(torch.tensor(y)).numpy())  # fmt: skip
    leaf = Tensor(y, requires_grad=True)
    assert leaf.is_leaf and not (leaf * 2).is_leaf and Tensor(y).is_leaf
    assert not leaf.is_cuda and leaf.element_size() == 8 and leaf.nelement() == 6
