"""torch's last top-level in-place and feature dropouts on tricycle (``tricycle.dropout_``,
``alpha_dropout_``, ``feature_dropout``, ``feature_dropout_``, ``feature_alpha_dropout_``,
``celu_``, ``selu_``, ``threshold_``, ``rrelu_``, ATen's signatures): evaluation's values
against torch's, the tensor written and returned, and training's masks by their statistics
(whole channels for the feature dropouts, survivors scaled by 1 / (1 - p))."""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def pair(*shape, seed=0):
    a = np.random.default_rng(seed).normal(size=shape)
    return tc.Tensor(a, requires_grad=False), torch.tensor(a)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.celu_(x, 0.7),
        lambda lib, x: lib.selu_(x),
        lambda lib, x: lib.threshold_(x, 0.1, -2.0),
        lambda lib, x: lib.rrelu_(x, 0.1, 0.3),
        lambda lib, x: lib.dropout_(x, 0.4, False),
        lambda lib, x: lib.alpha_dropout_(x, 0.4, False),
        lambda lib, x: lib.feature_dropout_(x, 0.4, False),
        lambda lib, x: lib.feature_alpha_dropout_(x, 0.4, False),
        lambda lib, x: lib.feature_dropout(x, 0.4, False),
    ],
)
def test_values_as_torch_written_in_place(call):
    ours, theirs = pair(3, 4, 5)
    y, ty = call(tc, ours), call(torch, theirs)
    np.testing.assert_allclose(y.array, ty.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12, atol=1e-12)
    assert (y is ours) == (ty is theirs)


@pytest.mark.parametrize("name", ["feature_dropout", "feature_dropout_"])
def test_feature_dropout_drops_whole_channels(name):
    x = tc.ones(400, 6, 3, 2)
    y = getattr(tc, name)(x, 0.25, True)
    per_channel = y.array.reshape(400, 6, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 1 / 0.75).all(-1))
    assert abs((per_channel[..., 0] == 0).mean() - 0.25) < 0.03
    assert (y is x) == (name == "feature_dropout_")


def test_dropout_in_place_while_training():
    x = tc.ones(20000)
    assert tc.dropout_(x, 0.3, True) is x
    assert abs((x.array == 0).mean() - 0.3) < 0.02
    np.testing.assert_allclose(x.array[x.array != 0], 1 / 0.7)
    generator = tc.Generator().manual_seed(3)
    y = tc.Tensor(-np.ones(1000), requires_grad=False)
    slopes = -tc.rrelu_(y, 0.1, 0.3, True, generator).array
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
