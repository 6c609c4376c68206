"""GroupNorm and nearest-neighbour upsampling: gradients against finite differences over
random shapes (odd sizes, size-1 axes), forward and gradients against torch with copied
weights."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle.nn.group_norm import GroupNorm, group_norm
from tricycle.nn.upsample import Upsample, upsample_nearest
from tricycle.tensor import Tensor, to_tensor


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


@st.composite
def grouped_shape(draw):
    """(x shape, num_groups): 1-3 groups of 1-3 channels, 0-2 spatial axes of size 1-4."""
    groups = draw(st.integers(1, 3), label="groups")
    per_group = draw(st.integers(1, 3), label="channels per group")
    spatial = tuple(draw(st.lists(st.integers(1, 4), max_size=2), label="spatial"))
    batch = draw(st.integers(1, 3), label="batch")
    return (batch, groups * per_group) + spatial, groups


# ====================================================================== GroupNorm


@given(shape=grouped_shape(), affine=st.sampled_from(["both", "gamma", "none"]))
def test_group_norm_gradients_match_finite_differences(shape, affine):
    x_shape, groups = shape
    C = x_shape[1]
    arrays = [randn(*x_shape, seed=1)]
    arrays += [randn(C, seed=2)] if affine != "none" else []
    arrays += [randn(C, seed=3)] if affine == "both" else []

    def f(x, *affine_parameters):
        return group_norm(x, groups, *affine_parameters)

    check_grads(f, *arrays, rtol=1e-4, atol=1e-6)


def test_group_norm_in_a_diamond_graph():
    """x feeds the norm and multiplies its output: both paths' gradients add up."""
    check_grads(lambda x, g: group_norm(x, 2, g) * x, randn(2, 4, 3, 1), randn(4, seed=1))


@pytest.mark.parametrize(
    "shape, groups",
    [
        ((4, 6, 5, 3), 3),
        ((2, 8, 7), 4),
        ((3, 5), 5),
        ((1, 4, 1, 1), 2),
        ((2, 6, 3, 3), 1),
        ((5, 9, 2, 1), 9),
    ],  # fmt: skip
)
def test_group_norm_matches_pytorch(shape, groups):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.GroupNorm(groups, shape[1], eps=1e-5).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(randn(shape[1], seed=1)))
        theirs.bias.copy_(torch.tensor(randn(shape[1], seed=2)))
    ours = GroupNorm(groups, shape[1])
    ours.gamma = Tensor(theirs.weight.detach().numpy().copy(), requires_grad=True)
    ours.beta = Tensor(theirs.bias.detach().numpy().copy(), requires_grad=True)
    x = randn(*shape, seed=3)
    tx = torch.tensor(x, requires_grad=True)
    expected = theirs(tx)
    dout = randn(*shape, seed=4)
    expected.backward(torch.tensor(dout))

    X = Tensor(x)
    out = ours(X)
    out.backward(dout)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-10)
    pairs = [(X, tx), (ours.gamma, theirs.weight), (ours.beta, theirs.bias)]
    for mine, reference in pairs:
        np.testing.assert_allclose(mine.grad.array, reference.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_group_norm_layer_float32_and_modes():
    """Parameters as PyTorch's (ones, zeros), float32 out, the same in training and
    evaluation (per-sample statistics), none without ``affine``."""
    layer = GroupNorm(2, 4)
    assert layer.gamma.array.tolist() == [1, 1, 1, 1] and layer.beta.array.tolist() == [0] * 4
    x = to_tensor(randn(3, 4, 5, 5, dtype=np.float32))
    y_train = layer(x).array
    y_eval = layer.eval()(x).array
    assert y_train.dtype == np.float32
    np.testing.assert_array_equal(y_train, y_eval)
    assert GroupNorm(2, 4, affine=False).parameters() == []
    assert "GroupNorm(2, 4, eps=1e-05, affine=True)" in repr(layer)


def test_group_norm_of_a_non_contiguous_input():
    x = randn(3, 4, 6, 5)
    view = Tensor(x.transpose(0, 1, 3, 2))  # (3, 4, 5, 6), not contiguous
    copy = Tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)))
    dout = randn(3, 4, 5, 6, seed=1)
    results = []
    for t in (view, copy):
        out = group_norm(t, 2)
        out.backward(dout)
        results.append((out.array, t.grad.array))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_group_norm_errors_name_the_shapes():
    with pytest.raises(ValueError, match="num_channels=6 must be divisible by num_groups=4"):
        GroupNorm(4, 6)
    with pytest.raises(ValueError, match=r"expected input \(batch, 4, ...\), got shape \(2, 3\)"):
        GroupNorm(2, 4)(to_tensor(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="do not split into num_groups=4"):
        group_norm(to_tensor(np.zeros((2, 6, 3))), 4)
    with pytest.raises(ValueError, match=r"gamma and beta must have shape \(6,\)"):
        group_norm(to_tensor(np.zeros((2, 6, 3))), 3, to_tensor(np.ones(3)))


# ====================================================================== upsample


@given(
    spatial=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    scale=st.integers(1, 3),
    channels=st.integers(1, 2),
)
def test_upsample_gradients_match_finite_differences(spatial, scale, channels):
    x = randn(2, channels, *spatial)
    out = check_grads(lambda t: upsample_nearest(t, scale), x)
    assert out.shape == (2, channels) + tuple(n * scale for n in spatial)


@pytest.mark.parametrize(
    "shape, scale", [((2, 3, 4, 5), 2), ((1, 2, 3, 1), (3, 2)), ((2, 1, 7), 3), ((1, 1, 1, 1), 1)]
)
def test_upsample_matches_pytorch(shape, scale):
    torch = pytest.importorskip("torch")
    x = randn(*shape)
    tx = torch.tensor(x, requires_grad=True)
    factor = tuple(map(float, scale)) if isinstance(scale, tuple) else float(scale)
    expected = torch.nn.functional.interpolate(tx, scale_factor=factor, mode="nearest")
    dout = randn(*expected.shape, seed=1)
    expected.backward(torch.tensor(dout))
    X = Tensor(x)
    out = Upsample(scale_factor=scale)(X)
    out.backward(dout)
    np.testing.assert_array_equal(out.array, expected.detach().numpy())
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-12)


def test_upsample_errors():
    with pytest.raises(ValueError, match="expected input"):
        upsample_nearest(to_tensor(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="scale_factor"):
        Upsample(scale_factor=0)
    with pytest.raises(ValueError, match="mode"):
        Upsample(scale_factor=2, mode="lanczos")
