"""``nn.Conv3d`` and ``nn.BatchNorm3d``: forward and backward as torch's with torch's weights
(``nn.from_torch``); the weights and running statistics back (``nn.to_torch``); a clear error
for a 4-D input."""

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn


def test_conv3d_and_batch_norm3d_as_torchs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Conv3d(
            2, 4, kernel_size=(2, 3, 3), stride=(1, 2, 1), padding=1, dilation=(1, 1, 2)
        ),
        torch.nn.BatchNorm3d(4),
        torch.nn.Conv3d(4, 3, 2, groups=1, bias=False, padding_mode="reflect", padding=1),
    ).double()
    ours = nn.Sequential(
        nn.Conv3d(2, 4, kernel_size=(2, 3, 3), stride=(1, 2, 1), padding=1, dilation=(1, 1, 2)),
        nn.BatchNorm3d(4),
        nn.Conv3d(4, 3, 2, groups=1, bias=False, padding_mode="reflect", padding=1),
    )
    nn.from_torch(ours, theirs.state_dict())
    ours.double()
    x = np.random.default_rng(0).normal(size=(2, 2, 4, 5, 6))
    xt = torch.tensor(x, requires_grad=True)
    xo = tricycle.tensor(x, requires_grad=True)
    want, got = theirs(xt), ours(xo)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    weights = torch.tensor(np.random.default_rng(1).normal(size=want.shape))
    (want * weights).sum().backward()
    (got * tricycle.tensor(weights.numpy())).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)
    back = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(back[name], value.numpy(), err_msg=name)
    grads = [p.grad.numpy() for p in theirs.parameters()]
    ours_grads = [np.asarray(p.grad.numpy()) for p in ours.parameters()]
    for g, w in zip(ours_grads, grads):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
    assert repr(ours[0]).split("  #")[0] == repr(theirs[0])  # (tricycle adds a count)


def test_conv3d_refuses_a_4d_input_naming_its_axes():
    with pytest.raises(ValueError, match=r"Conv3d\(2 -> 4\): expected input \(batch, 2, depth"):
        nn.Conv3d(2, 4, 3)(tricycle.zeros(1, 2, 5, 5))
