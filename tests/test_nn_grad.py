"""``tricycle.nn.grad`` (torch.nn.grad): the gradients of ``F.conv1d``/``2d``/``3d`` wrt input
and weight from a gradient of the output, against torch's on the same float64 arrays (strides,
padding, dilation, groups, an input size that needs output padding), the input's gradient
differentiable through the weight, and the errors."""

import numpy as np
import pytest

import tricycle as tc
from tricycle.nn import grad as nn_grad

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


CASES = [
    (1, (2, 4, 10), (6, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    (1, (1, 3, 9), (2, 3, 2), dict(stride=3, padding=0, dilation=2, groups=1)),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=1, groups=1)),
    (3, (1, 2, 5, 4, 5), (2, 1, 2, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
]


@pytest.mark.parametrize("n, x_shape, w_shape, kwargs", CASES)
def test_conv_input_and_weight_gradients_as_torchs(n, x_shape, w_shape, kwargs):
    x, w = normal(*x_shape), normal(*w_shape, seed=1)
    y = getattr(torch.nn.functional, f"conv{n}d")(torch.tensor(x), torch.tensor(w), **kwargs)
    dy = normal(*y.shape, seed=2)
    t_input, t_weight = (getattr(torch.nn.grad, f"conv{n}d_{wrt}") for wrt in ("input", "weight"))
    theirs_input = t_input(x_shape, torch.tensor(w), torch.tensor(dy), **kwargs)
    theirs_weight = t_weight(torch.tensor(x), w_shape, torch.tensor(dy), **kwargs)
    wt = tc.Tensor(w, requires_grad=True)
    ours_input = getattr(tc.nn.grad, f"conv{n}d_input")(x_shape, wt, tc.Tensor(dy), **kwargs)
    ours_weight = getattr(nn_grad, f"conv{n}d_weight")(tc.Tensor(x), w_shape, tc.Tensor(dy),
                                                        **kwargs)  # fmt: skip
    np.testing.assert_allclose(ours_input.numpy(), theirs_input.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ours_weight.numpy(), theirs_weight.numpy(), rtol=1e-9, atol=1e-11)
    # the input's gradient is differentiable through the weight, as torch's
    tw = torch.tensor(w, requires_grad=True)
    v = normal(*x_shape, seed=3)
    (getattr(torch.nn.grad, f"conv{n}d_input")(x_shape, tw, torch.tensor(dy), **kwargs)
     * torch.tensor(v)).sum().backward()  # fmt: skip
    (ours_input * tc.Tensor(v)).sum().backward()
    np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_errors():
    w, dy = tc.Tensor(normal(2, 3, 3)), tc.Tensor(normal(1, 2, 4))
    with pytest.raises(ValueError, match="does not fit"):
        nn_grad.conv1d_input((1, 3, 20), w, dy)
    with pytest.raises(ValueError, match="3 dims"):
        nn_grad.conv1d_input((3, 6), w, dy)
    with pytest.raises(ValueError, match="grad_output"):
        nn_grad.conv1d_weight(tc.Tensor(normal(1, 3, 7)), (2, 3, 3), dy)
