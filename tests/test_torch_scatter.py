"""torch's functions that select, scatter and test values (``tricycle.torch_scatter``) and
their Tensor methods: values and the gradients of every input against torch in float64
(``scatter_reduce``'s five reductions with and without the input's own values, with zeros
and ties, on random ids too, and against finite differences), the integer results, the ids
and booleans with no gradient, the names at the top level, and bad arguments refused, naming
the function."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
from tests.helpers import check_grads
from tests.test_torch_shapes import assert_as_torch, normal
from tricycle import torch_scatter

torch = pytest.importorskip("torch")

A, M = normal(2, 3, 4), normal(3, 4, seed=1)
IDS = np.array([[0, 1, 0, 2], [0, 0, 2, 2]])  # (2, 4) into (3, 4) along dim 0: repeats
TAKE = np.array([[[0], [3], [1]], [[3], [3], [0]]])  # (2, 3, 1) along dim 2 of (2, 3, 4)


def ids(values):
    return tc.tensor(values), torch.tensor(values)


CASES = [
    ("take_along_dim", lambda x: tc.take_along_dim(x, tc.tensor(TAKE), 2),
     lambda x: torch.take_along_dim(x, torch.tensor(TAKE), 2), [A]),
    ("take_along_dim broadcast", lambda x: tc.take_along_dim(x, tc.tensor(TAKE[:1]), -1),
     lambda x: torch.take_along_dim(x, torch.tensor(TAKE[:1]), -1), [A]),
    ("take_along_dim flat", lambda x: tc.take_along_dim(x, tc.tensor([0, 5, 5, 23])),
     lambda x: torch.take_along_dim(x, torch.tensor([0, 5, 5, 23])), [A]),
    ("masked_select broadcast", lambda x: tc.masked_select(x, tc.tensor([[True, False]] * 3)),
     lambda x: torch.masked_select(x, torch.tensor([[True, False]] * 3)), [normal(3, 1)]),
    ("select_scatter", lambda x, s: tc.select_scatter(x, s, 1, -1),
     lambda x, s: torch.select_scatter(x, s, 1, -1), [A, normal(2, 4)]),
    ("slice_scatter", lambda x, s: tc.slice_scatter(x, s, 2, 1, None, 2),
     lambda x, s: torch.slice_scatter(x, s, 2, 1, None, 2), [A, normal(2, 3, 2)]),
    ("slice_scatter defaults", lambda x, s: tc.slice_scatter(x, s),
     lambda x, s: torch.slice_scatter(x, s), [M, normal(3, 4)]),
    ("slice_scatter end", lambda x, s: tc.slice_scatter(x, s, 0, end=-1),
     lambda x, s: torch.slice_scatter(x, s, 0, end=-1), [M, normal(2, 4)]),
    ("diagonal_scatter", lambda x, s: tc.diagonal_scatter(x, s, 1, 0, 2),
     lambda x, s: torch.diagonal_scatter(x, s, 1, 0, 2), [A, normal(3, 2)]),
    ("diagonal_scatter below", lambda x, s: tc.diagonal_scatter(x, s, -1),
     lambda x, s: torch.diagonal_scatter(x, s, -1), [M, normal(2)]),
]  # fmt: skip


@pytest.mark.parametrize("name, ours, theirs, arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, ours, theirs, arrays):
    assert_as_torch(ours, theirs, *arrays)


def reduce_inputs(reduce: str, seed: int = 3):
    """The input and src of IDS with zeros (prod's hard cases) and ties (amax's, amin's)."""
    x, src = normal(3, 4, seed=seed), normal(2, 4, seed=seed + 1)
    x[0, 1], src[0, 0], src[1, 3] = 0.0, 0.0, 0.0
    if reduce in ("amax", "amin"):  # three equal values meet at (0, 0)
        x[0, 0] = src[0, 0] = src[1, 0] = 0.7 if reduce == "amax" else -0.7
    return x, src


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_values_and_gradients_match_torch(reduce, include_self):
    index = ids(IDS)
    assert_as_torch(
        lambda x, s: tc.scatter_reduce(x, 0, index[0], s, reduce, include_self=include_self),
        lambda x, s: torch.scatter_reduce(x, 0, index[1], s, reduce, include_self=include_self),
        *reduce_inputs(reduce),
    )
    # along dim 1, a src larger than the index (its extra entries unused), as a method
    x, src = normal(3, 4, seed=5), normal(4, 3, seed=6)
    got = tc.tensor(x).scatter_reduce(1, tc.tensor(IDS.T[:3, :2]), tc.tensor(src), reduce)
    want = torch.tensor(x).scatter_reduce(1, torch.tensor(IDS.T[:3, :2]), torch.tensor(src), reduce)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    # integers: "mean" divides with floor, as torch's
    xi, si = (np.random.default_rng(7).integers(-5, 5, shape) for shape in ((3, 4), (2, 4)))
    got = tc.scatter_reduce(tc.tensor(xi), 0, index[0], tc.tensor(si), reduce,
                            include_self=include_self)  # fmt: skip
    want = torch.scatter_reduce(torch.tensor(xi), 0, index[1], torch.tensor(si), reduce,
                                include_self=include_self)  # fmt: skip
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_scatter_reduce_prod_with_two_zeros_in_a_group_is_torchs():
    x, src = normal(3, 4), normal(2, 4, seed=1)
    x[0, 0], src[0, 0], src[0, 1] = 0.0, 0.0, 0.0  # (0, 0) has two zeros, (0, 1) one
    index = ids(IDS)
    assert_as_torch(
        lambda x, s: tc.scatter_reduce(x, 0, index[0], s, "prod"),
        lambda x, s: torch.scatter_reduce(x, 0, index[1], s, "prod"),
        x,
        src,
    )


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_scatter_reduce_on_random_ids_matches_torch_and_finite_differences(rows, cols, data):
    seed = data.draw(st.integers(0, 99))
    rng = np.random.default_rng(seed)
    reduce = data.draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
    include_self = data.draw(st.booleans())
    dim = data.draw(st.integers(0, 1))
    index = rng.integers(0, (rows, cols)[dim], (rows + 1, cols) if dim == 0 else (rows, cols + 1))
    x, src = normal(rows, cols, seed=seed), normal(*index.shape, seed=seed + 1)
    ours, theirs = ids(index)
    options = {"include_self": include_self}
    assert_as_torch(
        lambda a, s: tc.scatter_reduce(a, dim, ours, s, reduce, **options),
        lambda a, s: torch.scatter_reduce(a, dim, theirs, s, reduce, **options),
        x,
        src,
    )
    check_grads(lambda a, s: tc.scatter_reduce(a, dim, ours, s, reduce, **options), x, src)


def test_scatter_reduce_in_place_is_torchs():
    (i, j), s = ids(IDS), normal(2, 4, seed=4)
    x, t = tc.tensor(M), torch.tensor(M)  # a constant: written in place
    assert x.scatter_reduce_(0, i, tc.tensor(s), "prod") is x
    t.scatter_reduce_(0, j, torch.tensor(s), "prod")
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)
    w = tc.Tensor(
        M, requires_grad=True, dtype=np.float64
    )  # an op's output: it becomes the new op's
    v = torch.tensor(M, requires_grad=True)
    y, z = w * 2, v * 2
    y.scatter_reduce_(0, i, tc.tensor(s), "amax", include_self=False)
    z.scatter_reduce_(0, j, torch.tensor(s), "amax", include_self=False)
    y.sum().backward()
    z.sum().backward()
    np.testing.assert_allclose(y.numpy(), z.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), v.grad.numpy(), rtol=1e-12)


def test_ids_and_booleans_are_torchs_with_no_gradient():
    x = tc.tensor([[1, 1], [1, 1], [2, 3]])
    t = torch.tensor([[1, 1], [1, 1], [2, 3]])
    both, by_dim = (
        {"return_inverse": True, "return_counts": True},
        {"return_counts": True, "dim": 1},
    )
    for options in [{}, both, {"return_inverse": True, "dim": 0}, by_dim]:
        got, want = tc.unique_consecutive(x, **options), torch.unique_consecutive(t, **options)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
            assert g.dtype == w.numpy().dtype and not g.requires_grad
    for args, options in [((3, 4, 1), {}), ((4, 3, -1), {}), ((3, 3), {"dtype": tc.int32}),
                          ((0, 2), {})]:  # fmt: skip
        torch_options = {"dtype": torch.int32} if options else {}
        for name in ("tril_indices", "triu_indices"):
            got = getattr(tc, name)(*args, **options)
            want = getattr(torch, name)(*args, **torch_options)
            assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    values = [1.0, np.inf, -np.inf, np.nan, 0.0]
    for name in ("isposinf", "isneginf", "isreal"):
        for data in (values, [1, 2]):
            got, want = getattr(tc, name)(tc.tensor(data)), getattr(torch, name)(torch.tensor(data))
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
    isin_cases = [
        (lambda m: m.tensor([1, 2, 3]), lambda m: 2, {}),
        (lambda m: 2, lambda m: m.tensor([1, 2]), {}),
        (lambda m: m.tensor([[1, 4], [3, 2]]), lambda m: m.tensor([3, 1]), {"invert": True}),
        (lambda m: m.tensor([1.5, 2.0]), lambda m: m.tensor([2.0]), {"assume_unique": True}),
    ]
    for elements, tests, options in isin_cases:
        got = tc.isin(elements(tc), tests(tc), **options)
        want = torch.isin(elements(torch), tests(torch), **options)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = tc.argwhere(tc.tensor([[0, 1], [2, 0]]))
    want = torch.argwhere(torch.tensor([[0, 1], [2, 0]]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.dtype == np.int64


def test_the_questions_are_torchs():
    assert tc.is_nonzero(tc.tensor([0.5])) and not tc.is_nonzero(tc.tensor(0))
    assert tc.tensor([[True]]).is_nonzero() is True
    assert tc.is_floating_point(tc.ones(2)) and not tc.is_floating_point(tc.tensor([1]))
    assert tc.is_complex(tc.ones(2)) is False and tc.ones(2).is_complex() is False
    for values, message in (([1, 2], "more than one value"), ([], "no values")):
        with pytest.raises(RuntimeError, match=f"is_nonzero: Boolean value .* with {message}"):
            tc.is_nonzero(tc.tensor(values))
        with pytest.raises(RuntimeError, match=message):
            torch.is_nonzero(torch.tensor(values))


def test_the_methods_are_torchs_and_the_names_are_the_modules():
    x, t = tc.Tensor(M, requires_grad=True, dtype=np.float64), torch.tensor(M)
    i, j = ids(IDS)
    s = normal(2, 4, seed=4)
    for call in ("take_along_dim(i[:1, :3], 1)", "scatter_reduce(0, i, s, 'amax')",
                 "select_scatter(s[0], 0, 1)", "slice_scatter(s, 0, 1)",
                 "diagonal_scatter(s[1, :3])", "argwhere()", "isposinf()", "isneginf()",
                 "isreal()", "unique_consecutive()"):  # fmt: skip
        got = eval(f"x.{call}", {"x": x, "i": i, "s": tc.Tensor(s, dtype=np.float64)})
        want = eval(f"x.{call}", {"x": t, "i": j, "s": torch.tensor(s)})
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=call)
    names = ("take_along_dim masked_select argwhere scatter_reduce select_scatter slice_scatter "
             "diagonal_scatter isin unique_consecutive tril_indices triu_indices isposinf "
             "isneginf isreal is_floating_point is_complex is_nonzero")  # fmt: skip
    for name in names.split():
        function = getattr(tc, name)  # or complex_functions' route of complex tensors around it
        assert getattr(function, "__wrapped__", function) is getattr(torch_scatter, name), name
        assert name in tc.__all__, name


X3, I3, ONES = tc.ones(3, 4), tc.tensor([[0, 1, 0, 2]]), tc.ones(1, 4)
ERRORS = [
    (lambda: tc.take_along_dim(X3, tc.tensor([[0.5]]), 1), TypeError, "take_along_dim: index"),
    (lambda: tc.take_along_dim(X3, tc.tensor([0]), 1), ValueError, "take_along_dim: indices'"),
    (lambda: tc.take_along_dim(X3, tc.tensor([[0], [1]]), 1), ValueError, "take_along_dim"),
    (lambda: tc.masked_select(X3, tc.tensor([1, 0, 1, 0])), TypeError, "masked_select: mask's"),
    (lambda: tc.scatter_reduce(X3, 0, I3, ONES, "max"), ValueError, "scatter_reduce: reduce"),
    (lambda: tc.scatter_reduce(X3, 0, I3, ONES[:, :3], "sum"), ValueError,
     "scatter_reduce: index shape"),
    (lambda: tc.scatter_reduce(X3, 0, I3 + 3, ONES, "sum"), IndexError,
     r"scatter_reduce: index must lie in \[0, 3\)"),
    (lambda: tc.scatter_reduce(X3, 0, I3, ONES.double(), "sum"), TypeError,
     "scatter_reduce: src's dtype"),
    (lambda: tc.scatter_reduce(X3, 0, I3, 1.0, "sum"), TypeError, "scatter_reduce: src must be"),
    (lambda: tc.select_scatter(X3, tc.ones(3), 1, 4), ValueError, "select_scatter: index"),
    (lambda: tc.select_scatter(X3, tc.ones(4), 1, 0), ValueError,
     r"select_scatter: src's shape must be \(3,\)"),
    (lambda: tc.slice_scatter(X3, tc.ones(3, 2), 1, 0, 3), ValueError, "slice_scatter: src's"),
    (lambda: tc.slice_scatter(X3, tc.ones(3, 2), 1, step=0), ValueError, "slice_scatter: step"),
    (lambda: tc.diagonal_scatter(X3, tc.ones(4)), ValueError, "diagonal_scatter: src's shape"),
    (lambda: tc.diagonal_scatter(X3, tc.ones(3), 0, 1, 1), ValueError, "diagonal_scatter: dim2"),
    (lambda: tc.isin(1, 2), TypeError, "isin: elements or test_elements must be a Tensor"),
    (lambda: tc.tril_indices(-1, 2), ValueError, "tril_indices: row"),
    (lambda: tc.isposinf(X3, out=X3), TypeError, "isposinf: out="),
    (lambda: tc.is_nonzero(1.0), TypeError, "is_nonzero: input must be a Tensor"),
]  # fmt: skip


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call()
