"""Batch norm's keyword ``bias`` (torch's ``BatchNorm2d(C, bias=False)``: a scale and no
shift) and the repr that shows it, as torch's: outputs, gradients and running statistics
against torch given torch's weights, in training and evaluation."""

import numpy as np
import pytest

import tricycle
from tricycle import nn


@pytest.mark.parametrize("bias", [True, False])
def test_batch_norm_bias_as_torchs(bias):
    torch = pytest.importorskip("torch")
    if "bias" not in torch.nn.BatchNorm2d.__init__.__code__.co_varnames:
        pytest.skip("this torch's batch norm has no bias keyword")
    theirs, ours = torch.nn.BatchNorm2d(3, bias=bias), nn.BatchNorm2d(3, bias=bias)
    assert repr(theirs) == repr(ours).split("  #")[0]
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        if bias:
            theirs.bias.uniform_(-1, 1)
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    assert len(list(ours.parameters())) == (2 if bias else 1)
    x = np.random.default_rng(0).normal(size=(4, 3, 5, 5)).astype(np.float32)
    weights = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
    for train in True, False:
        theirs.train(train), ours.train(train)
        a, b = torch.tensor(x, requires_grad=True), tricycle.tensor(x, requires_grad=True)
        theirs.zero_grad(), ours.zero_grad()
        want, got = theirs(a), ours(b)
        (want * torch.tensor(weights)).sum().backward()
        (got * tricycle.tensor(weights)).sum().backward()
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=1e-5)
        for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5)
    with pytest.raises(TypeError, match="BatchNorm2d: bias"):
        nn.BatchNorm2d(3, bias="no")
