"""torch's ``*_copy`` functions and ``unsafe_*`` splits (``tricycle.torch_copies``): values and
the gradients of the input against torch in float64, the results sharing no memory with the
input, ``detach_copy`` without a gradient, a few gradients against finite differences, the
names at the top level and as Tensor methods, and bad arguments refused as torch refuses
them."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads
from tricycle import torch_copies

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


A, M = normal(2, 3, 4), normal(3, 1, seed=1)


def assert_as_torch(name, args, kwargs, array):
    """tricycle.<name> and torch.<name> of ``array`` (float64): equal values (a tensor or a
    tuple of them), new arrays, and equal gradients for one random output gradient."""
    x = tc.Tensor(array, requires_grad=True, dtype=np.float64)
    t = torch.tensor(array, requires_grad=True)
    out, expected = getattr(tc, name)(x, *args, **kwargs), getattr(torch, name)(t, *args, **kwargs)
    if isinstance(expected, tuple | list):
        assert isinstance(out, tuple) and len(out) == len(expected)
    else:
        out, expected = (out,), (expected,)
    for o, e in zip(out, expected):
        assert o.shape == tuple(e.shape)
        np.testing.assert_array_equal(o.numpy(), e.detach().numpy())
        if name.endswith("_copy"):  # the unsafe splits' pieces are views, as torch's
            assert not np.shares_memory(o.array, x.array)
    weights = [normal(*e.shape, seed=k) for k, e in enumerate(expected)]
    sum(o.mul(tc.Tensor(w)).sum() for o, w in zip(out, weights)).backward()
    try:
        sum((e * torch.tensor(w)).sum() for e, w in zip(expected, weights)).backward()
    except RuntimeError as error:  # torch before 2.13 has no derivative of narrow_copy
        assert "is not implemented" in str(error), error
        check_grads(lambda y: getattr(tc, name)(y, *args, **kwargs).sum(), array)
        return
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


CASES = [
    ("view_copy", ((6, -1),), {}, A),
    ("permute_copy", ((2, 0, 1),), {}, A),
    ("transpose_copy", (0, 2), {}, A),
    ("t_copy", (), {}, A[0]),
    ("squeeze_copy", (), {}, M),
    ("squeeze_copy", (1,), {}, M),
    ("unsqueeze_copy", (-1,), {}, A),
    ("expand_copy", ((2, 3, 4),), {}, M),
    ("diagonal_copy", (1, 1, 2), {}, A),
    ("select_copy", (1, -1), {}, A),
    ("slice_copy", (2, 0, 3, 2), {}, A),
    ("slice_copy", (), {}, A),
    ("slice_copy", (1, None, -1), {}, A),
    ("split_copy", (3, 2), {}, A),
    ("split_copy", (2,), {"dim": 1}, A),
    ("split_with_sizes", ([1, 3], 2), {}, A),
    ("split_with_sizes_copy", ([2, 1], 1), {}, A),
    ("unbind_copy", (1,), {}, A),
    ("unfold_copy", (2, 2, 1), {}, A),
    ("alias_copy", (), {}, A),
    ("narrow_copy", (1, 1, 2), {}, A),
    ("unsafe_chunk", (3, 2), {}, A),
    ("unsafe_split", (2,), {"dim": 1}, A),
    ("unsafe_split_with_sizes", ([1, 3], 2), {}, A),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "array"), CASES,
                         ids=[f"{c[0]}{c[1]}" for c in CASES])  # fmt: skip
def test_as_torch(name, args, kwargs, array):
    assert_as_torch(name, args, kwargs, array)


def test_view_copy_to_a_dtype_reads_the_bytes_as_torchs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = tc.view_copy(tc.Tensor(x), np.int32)
    np.testing.assert_array_equal(out.numpy(), torch.view_copy(torch.tensor(x), torch.int32))


def test_detach_copy_is_a_new_tensor_without_a_gradient():
    x = tc.Tensor(A, requires_grad=True)
    out = tc.detach_copy(x)
    assert not out.requires_grad and not np.shares_memory(out.array, x.array)
    np.testing.assert_array_equal(out.numpy(), A)


def test_tensor_methods_as_torchs():
    x, t = tc.Tensor(A), torch.tensor(A)
    np.testing.assert_array_equal(x.narrow_copy(2, 1, 2).numpy(), t.narrow_copy(2, 1, 2))
    for name, args in [("unsafe_chunk", (2, 2)), ("unsafe_split", (2, 1)),
                       ("unsafe_split_with_sizes", ([3, 1], 2))]:  # fmt: skip
        ours, theirs = getattr(x, name)(*args), getattr(t, name)(*args)
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, e in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), e.numpy())


def test_gradients_against_finite_differences():
    check_grads(lambda x: tc.permute_copy(x, (1, 2, 0)).sin().sum(), A)
    check_grads(lambda x: sum(p.exp().sum() for p in tc.split_copy(x, 2, 2)), A)
    check_grads(lambda x: tc.slice_copy(x, 1, 1, None, 1).square().sum(), A)


def test_every_name_is_torchs_and_at_the_top_level():
    names = {name for name, *_ in CASES} | {"detach_copy"}
    assert names <= set(dir(torch))
    for name in names:
        assert getattr(tc, name) is getattr(torch_copies, name)


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "error", "match"),
    [
        ("narrow_copy", (1, 2, 2), {}, ValueError, "narrow"),
        ("slice_copy", (1, 0, 3, 0), {}, RuntimeError, "step"),
        ("split_with_sizes", ([1, 2], 2), {}, RuntimeError, "split_with_sizes"),
        ("split_copy", ([1, 3], 2), {}, TypeError, "split_copy"),
        ("view_copy", ((5, -1),), {}, ValueError, "reshape"),
    ],
)
def test_bad_arguments_are_refused_as_torch_refuses_them(name, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        getattr(tc, name)(tc.Tensor(A), *args, **kwargs)
    with pytest.raises(RuntimeError if error is ValueError else error):  # torch's kind
        getattr(torch, name)(torch.tensor(A), *args, **kwargs)


def test_a_non_tensor_and_out_are_refused_naming_the_function():
    with pytest.raises(TypeError, match="view_copy"):
        tc.view_copy(np.ones(3), (3,))
    with pytest.raises(TypeError, match="out="):
        tc.permute_copy(tc.Tensor(A), (0, 1, 2), out=tc.Tensor(A))
