"""Fractional max pooling (``tricycle.nn.fractional_pooling``): ``F.fractional_max_pool2d/3d``
and ``nn.FractionalMaxPool2d/3d`` against torch's with the same ``_random_samples`` (outputs,
indices and input gradients, batched and not, by ``output_size`` and ``output_ratio``, ties,
NaN and overlapping windows), against finite differences, the draws from tricycle's
generator, and bad arguments refused as torch refuses them."""

import numpy as np
import pytest
from helpers import check_grads

import tricycle as tc
from tricycle.nn.fractional_pooling import (
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)

torch = pytest.importorskip("torch")

CASES = [  # (spatial dims, input shape, kernel_size, output_size, output_ratio)
    (2, (2, 3, 9, 11), (2, 3), (5, 4), None),
    (2, (3, 7, 7), 2, (3, 6), None),  # unbatched; windows overlap along W
    (2, (2, 2, 10, 8), 3, None, (0.5, 0.75)),
    (2, (1, 2, 6, 5), (2, 5), (5, 1), None),  # one window along W, the last start alone
    (3, (2, 2, 6, 7, 8), (2, 2, 3), (3, 4, 5), None),
    (3, (2, 6, 5, 5), (1, 2, 3), 2, None),  # unbatched
    (3, (1, 2, 8, 6, 7), 2, None, 0.5),
]


def samples(shape, n, seed=1):
    N = shape[0] if len(shape) == n + 2 else 1
    return np.random.default_rng(seed).random((N, shape[-n - 1], n)).astype(np.float32)


@pytest.mark.parametrize("n, shape, kernel, out, ratio", CASES)
def test_values_indices_and_gradients_are_torch_s(n, shape, kernel, out, ratio):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    u = samples(shape, n)
    ours = {2: fractional_max_pool2d, 3: fractional_max_pool3d}[n]
    theirs = getattr(torch.nn.functional, f"fractional_max_pool{n}d")
    xt = torch.tensor(x, requires_grad=True)
    yt, it = theirs(xt, kernel, out, ratio, return_indices=True, _random_samples=torch.tensor(u))
    dy = rng.normal(size=tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(dy))
    xx = tc.Tensor(x)
    y, i = ours(xx, kernel, out, ratio, return_indices=True, _random_samples=tc.Tensor(u))
    y.backward(tc.Tensor(dy))
    np.testing.assert_array_equal(y.array, yt.detach().numpy())
    np.testing.assert_array_equal(i.array, it.numpy())
    assert i.dtype == np.int64 and not i.requires_grad
    np.testing.assert_allclose(xx.grad.array, xt.grad.numpy(), rtol=1e-6, atol=1e-7)
    alone = ours(tc.Tensor(x), kernel, out, ratio, _random_samples=u)  # a plain array too
    np.testing.assert_array_equal(alone.array, y.array)


def test_ties_and_nan_pick_torch_s_element():
    x = np.round(np.random.default_rng(2).normal(size=(2, 2, 8, 9))).astype(np.float32)
    x[0, 0, 1, 1] = x[0, 0, 3, 5] = np.nan
    x[1, 1, :4, :4] = -np.inf
    u = samples(x.shape, 2)
    yt, it = torch.nn.functional.fractional_max_pool2d(
        torch.tensor(x), 3, output_size=(4, 4), return_indices=True, _random_samples=torch.tensor(u)
    )
    y, i = fractional_max_pool2d_with_indices(tc.Tensor(x), 3, (4, 4), _random_samples=u)
    np.testing.assert_array_equal(y.array, yt.numpy())  # NaN where torch's is
    np.testing.assert_array_equal(i.array, it.numpy())


def test_the_gradient_is_finite_differences():
    u = samples((2, 2, 7, 6), 2).astype(np.float64)
    check_grads(lambda x: fractional_max_pool2d(x, 2, (4, 3), _random_samples=u),
                np.random.default_rng(3).normal(size=(2, 2, 7, 6)))  # fmt: skip
    u = samples((1, 2, 5, 6, 5), 3).astype(np.float64)
    check_grads(lambda x: fractional_max_pool3d(x, 2, (3, 4, 2), _random_samples=u),
                np.random.default_rng(4).normal(size=(1, 2, 5, 6, 5)))  # fmt: skip


@pytest.mark.parametrize("n", [2, 3])
def test_layers_are_torch_s_with_their_samples_as_a_buffer(n):
    shape = (2, 3) + (9,) * n
    x = np.random.default_rng(5).normal(size=shape).astype(np.float32)
    u = samples(shape, n)
    ours = {2: FractionalMaxPool2d, 3: FractionalMaxPool3d}[n]
    theirs = getattr(torch.nn, f"FractionalMaxPool{n}d")
    layer = ours(3, output_ratio=0.5, return_indices=True, _random_samples=tc.Tensor(u))
    yt, it = theirs(3, output_ratio=0.5, return_indices=True, _random_samples=torch.tensor(u))(
        torch.tensor(x)
    )
    y, i = layer(tc.Tensor(x))
    np.testing.assert_array_equal(y.array, yt.numpy())
    np.testing.assert_array_equal(i.array, it.numpy())
    assert layer.kernel_size == (3,) * n and layer.output_ratio == (0.5,) * n
    np.testing.assert_array_equal(layer.state_dict()["_random_samples"], u)
    drawn = ours((2,) * n, output_size=4)  # no samples: drawn from tricycle's generator
    tc.manual_seed(7)
    first = drawn(tc.Tensor(x))
    tc.manual_seed(7)
    np.testing.assert_array_equal(drawn(tc.Tensor(x)).array, first.array)
    assert first.shape == shape[:2] + (4,) * n


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x: fractional_max_pool2d(x, 2), ValueError, "either an output_size or an output"),
        (lambda x: fractional_max_pool2d(x, 2, (8, 3)), ValueError, "axis 0 has 8"),
        (lambda x: fractional_max_pool2d(x[0, 0], 2, 3), ValueError, "non-empty input"),
        (lambda x: fractional_max_pool2d(x, 2.5, 3), TypeError, "kernel_size must be an integer"),
        (lambda x: fractional_max_pool2d(x, 2, 3, _random_samples=np.zeros((2, 3, 2))),
         ValueError, r"_random_samples must have shape \(2, 2, 2\)"),
        (lambda x: fractional_max_pool3d(x[None], 2, 4), ValueError, "axis 0 has 2"),
        (lambda x: FractionalMaxPool2d(2), ValueError, "either an output size, or a pooling"),
        (lambda x: FractionalMaxPool2d(2, 3, 0.5), ValueError, "only one of output_size and"),
        (lambda x: FractionalMaxPool3d(2, output_ratio=1.5), ValueError, "between 0 and 1"),
        (lambda x: FractionalMaxPool2d(2, 3, return_indices=1), TypeError, "return_indices"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call(tc.Tensor(np.zeros((2, 2, 8, 8), dtype=np.float32)))


def test_a_3d_window_needs_one_more_element_as_torch_s():
    x = np.zeros((1, 1, 5, 5, 5), dtype=np.float32)
    with pytest.raises(RuntimeError, match="too large"):
        torch.nn.functional.fractional_max_pool3d(torch.tensor(x), 2, (4, 4, 4))
    with pytest.raises(ValueError, match="fractional_max_pool3d: .* < the input's size"):
        fractional_max_pool3d(tc.Tensor(x), 2, (4, 4, 4))
    assert fractional_max_pool2d(tc.Tensor(x[0, 0]), 2, (4, 4)).shape == (5, 4, 4)  # 2-D: <=
    assert fractional_max_pool3d_with_indices(tc.Tensor(x), 2, 3)[1].shape == (1, 1, 3, 3, 3)
