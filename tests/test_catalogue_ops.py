"""sort, argsort, cumsum, chunk and permute: gradients against finite differences over random
shapes (odd sizes, size-1 axes), forward values and gradients against PyTorch, and errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend, ops, reduce
from tricycle.tensor import Tensor, to_tensor

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)


def distinct(shape, seed=0):
    """Values at least 0.1 apart: finite differences never reorder them."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape) * 0.1 - n * 0.05


def weighted(out: Tensor) -> Tensor:
    """out times fixed distinct weights: a gradient that tells positions apart."""
    return out * to_tensor(np.arange(1, out.size + 1, dtype=np.float64).reshape(out.shape))


def torch_pair(array):
    torch = pytest.importorskip("torch")
    ours, theirs = Tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    return ours, theirs


def assert_same(ours: Tensor, theirs, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=rtol, atol=atol)


# ====================================================================== sort and argsort


@given(shape=shapes, data=st.data(), descending=st.booleans())
def test_sort_gradient_matches_finite_differences(shape, data, descending):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    check_grads(lambda x: ops.sort(x, axis, descending), distinct(shape))


def test_sort_in_a_diamond_graph():
    check_grads(lambda x: ops.sort(x, 0) * x + ops.sort(x, 1, descending=True), distinct((3, 4)))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_and_argsort_match_torch_with_ties(axis, descending):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    array = rng.integers(0, 4, size=(5, 6, 3)).astype(np.float64)  # many ties
    ours, theirs = torch_pair(array)
    values = ops.sort(ours, axis, descending)
    expected, expected_ids = torch.sort(theirs, dim=axis, descending=descending, stable=True)
    assert_same(values, expected)
    ids = ops.argsort(ours, axis, descending)
    assert ids.dtype == np.int64 and not ids.requires_grad
    np.testing.assert_array_equal(ids.array, expected_ids.numpy())
    dout = rng.normal(size=array.shape)
    values.backward(dout)
    expected.backward(torch.tensor(dout))
    assert_same(ours.grad, theirs.grad)


def test_argsort_ids_gather_the_sorted_values():
    x = Tensor(distinct((4, 7), seed=3))
    ids = ops.argsort(x, axis=1, descending=True)
    np.testing.assert_array_equal(
        np.take_along_axis(x.array, ids.array, axis=1), ops.sort(x, 1, True).array
    )
    assert ops.argsort(to_tensor([3.0, 1.0, 2.0])).array.tolist() == [1, 2, 0]
    with pytest.raises(TypeError, match="argsort: x must be a Tensor"):
        ops.argsort(np.array([3.0, 1.0, 2.0]))


def test_sort_puts_nan_where_torch_does():
    torch = pytest.importorskip("torch")
    array = np.array([1.0, np.nan, -2.0, 3.0])
    for descending in (False, True):
        ours = ops.sort(Tensor(array), descending=descending).array
        theirs = torch.sort(torch.tensor(array), descending=descending, stable=True).values
        np.testing.assert_array_equal(ours, theirs.numpy())


def test_sort_of_integers_and_of_a_scalar():
    assert ops.sort(to_tensor([3, 1, 2], dtype=int), descending=True).array.tolist() == [3, 2, 1]
    x = Tensor(np.array(2.5))
    out = ops.sort(x)
    out.backward()
    assert out.shape == () and x.grad.array == 1.0


# ====================================================================== cumsum


@given(shape=shapes, data=st.data())
def test_cumsum_gradient_matches_finite_differences(shape, data):
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="axis")
    x = np.random.default_rng(0).normal(size=shape)
    out = check_grads(lambda t: reduce.cumsum(t, axis), x)
    np.testing.assert_allclose(out.array, np.cumsum(x, axis=axis))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_cumsum_matches_torch(axis):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    ours, theirs = torch_pair(rng.normal(size=(3, 1, 5)))
    out, expected = reduce.cumsum(ours, axis), torch.cumsum(theirs, dim=axis)
    assert_same(out, expected)
    dout = rng.normal(size=out.shape)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    assert_same(ours.grad, theirs.grad)


# ====================================================================== chunk


@pytest.mark.parametrize(("n", "chunks"), [(5, 4), (6, 4), (7, 3), (1, 3), (4, 4), (3, 1), (0, 2)])
def test_chunk_sizes_and_gradients_match_torch(n, chunks):
    torch = pytest.importorskip("torch")
    ours, theirs = torch_pair(np.random.default_rng(3).normal(size=(2, n, 3)))
    pieces = ops.chunk(ours, chunks, axis=1)
    expected = torch.chunk(theirs, chunks, dim=1)
    assert [p.shape for p in pieces] == [tuple(t.shape) for t in expected]
    for piece, theirs_piece in zip(pieces, expected):
        assert_same(piece, theirs_piece)
    if n:
        (sum((k + 1) * p.sum() for k, p in enumerate(pieces))).backward()
        sum((k + 1) * t.sum() for k, t in enumerate(expected)).backward()
        assert_same(ours.grad, theirs.grad)


def test_chunk_takes_torchs_dim_as_the_method_and_the_function():
    torch = pytest.importorskip("torch")
    ours, theirs = torch_pair(np.random.default_rng(4).normal(size=(2, 9)))
    import tricycle  # noqa: PLC0415

    pairs = [(ours.chunk(3, dim=-1), theirs.chunk(3, dim=-1)),
             (tricycle.chunk(ours, 2, dim=0), torch.chunk(theirs, 2, dim=0))]  # fmt: skip
    for mine, torchs in pairs:
        assert [p.shape for p in mine] == [tuple(t.shape) for t in torchs]
        for piece, theirs_piece in zip(mine, torchs):
            assert_same(piece, theirs_piece)
    with pytest.raises(TypeError, match="chunk: got axis=1 and dim=1"):
        ours.chunk(3, 1, dim=1)


@given(shape=shapes, data=st.data())
def test_chunk_gradient_matches_finite_differences(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    chunks = data.draw(st.integers(1, 6), label="chunks")

    def f(x):
        pieces = ops.chunk(x, chunks, axis)
        return ops.concatenate([p * (k + 1) for k, p in enumerate(pieces)], axis)

    check_grads(f, np.random.default_rng(4).normal(size=shape))


# ====================================================================== permute


@given(shape=shapes, data=st.data())
def test_permute_gradient_matches_finite_differences(shape, data):
    axes = data.draw(st.permutations(range(len(shape))), label="axes")
    out = check_grads(lambda x: ops.permute(x, axes), distinct(shape))
    assert out.shape == tuple(shape[a] for a in axes)


def test_permute_matches_torch_in_both_call_styles():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    ours, theirs = torch_pair(rng.normal(size=(2, 3, 1, 4)))
    out, expected = ops.permute(ours, 3, 0, -2, 1), theirs.permute(3, 0, -2, 1)
    np.testing.assert_array_equal(ops.permute(ours, (3, 0, -2, 1)).array, out.array)
    assert_same(out, expected)
    weighted(out).sum().backward()
    (expected * torch.arange(1, expected.numel() + 1).reshape(expected.shape)).sum().backward()
    assert_same(ours.grad, theirs.grad)


# ====================================================================== errors


def test_bad_arguments_name_the_op_and_what_was_expected():
    x = to_tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"permute: axes must be a permutation of the axes of "
                       r"shape \(2, 3\).*got \(0, 0\)"):  # fmt: skip
        ops.permute(x, 0, 0)
    with pytest.raises(ValueError, match=r"permute: axes .* got \(0,\)"):
        ops.permute(x, (0,))
    with pytest.raises(TypeError, match=r"permute: axes .* got \(0, 1.5\)"):
        ops.permute(x, 0, 1.5)
    with pytest.raises(ValueError, match=r"transpose: axes must be None or a permutation"):
        ops.transpose(x, (1, 1))
    with pytest.raises(ValueError, match=r"sort: axis must be an integer in \[-2, 2\) "
                       r"\(the input's shape is \(2, 3\)\), got 2"):  # fmt: skip
        ops.sort(x, axis=2)
    with pytest.raises(TypeError, match="argsort: descending must be True or False, got 1"):
        ops.argsort(x, descending=1)
    with pytest.raises(ValueError, match="chunk: chunks must be an integer >= 1, got 0"):
        ops.chunk(x, 0)
    with pytest.raises(ValueError, match=r"cumsum: axis must be an integer in \[-2, 2\)"):
        reduce.cumsum(x, axis=-3)


# ====================================================================== backends


def test_ops_on_every_backend(xp):
    """sort, argsort, cumsum, chunk and permute on the array module of ``xp`` (cupy on a GPU)
    give the host's values and gradients, in float32; on the host, torch's."""
    x0 = distinct((3, 4, 5)).astype(np.float32)
    dout = np.linspace(-1, 1, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    results = []
    for module in (np, xp) if xp is not np else (np,):
        x = Tensor(module.asarray(x0), requires_grad=True)
        first, second = ops.chunk(ops.permute(x, 2, 0, 1), 2)  # (3, 3, 4) and (2, 3, 4)
        out = ops.sort(first, axis=1, descending=True).sum(axis=0) * reduce.cumsum(second, 2)
        out.backward(module.asarray(dout))  # out: (2, 3, 4)
        ids = ops.argsort(x, axis=0, descending=True).array
        results.append([backend.to_host_array(a) for a in (out.array, x.grad.array, ids)])
    if xp is np:  # the host against itself would compare nothing: torch's numbers instead
        torch = pytest.importorskip("torch")
        x = torch.tensor(x0, requires_grad=True)
        first, second = torch.chunk(x.permute(2, 0, 1), 2)
        out = torch.sort(first, dim=1, descending=True).values.sum(0) * torch.cumsum(second, 2)
        out.backward(torch.tensor(dout))
        ids = torch.argsort(x, dim=0, descending=True, stable=True)
        results.insert(0, [a.detach().numpy() for a in (out, x.grad, ids)])
    for ours, expected in zip(*results):
        np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)
