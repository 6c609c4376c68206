"""Losses: the README's value, finite-difference gradients, torch agreement on every backend,
stability, ignore_index, and clear errors for bad labels."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend
from tricycle.loss import (
    BinaryCrossEntropy,
    CrossEntropy,
    MeanSquaredError,
    cross_entropy_backward,
    cross_entropy_forward,
)
from tricycle.tensor import Tensor, to_tensor

lead_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
host = backend.to_host_array


def test_readme_cross_entropy():
    label = to_tensor([0, 1, 2], dtype=int)
    predicted = to_tensor([[0, 0, 1], [0, 0, 1], [0, 0, 1]])
    loss = CrossEntropy()(label, predicted)
    assert repr(loss) == "Tensor(1.2181114, name=cross_entropy)"
    # mean over rows of log(2 + e) - logit of the label
    assert loss.item() == pytest.approx(np.log(2 + np.e) - 1 / 3, rel=1e-6)


@given(lead_shapes, st.integers(1, 5), st.booleans())
def test_cross_entropy_gradients(lead, n_classes, ignore):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, n_classes, size=lead or (1,))
    if ignore:
        labels.reshape(-1)[0] = -100
    loss_fn = CrossEntropy(ignore_index=-100 if ignore else None)
    logits = rng.normal(size=labels.shape + (n_classes,)) * 2
    check_grads(lambda z: loss_fn(Tensor(labels), z), logits)


@pytest.mark.parametrize("ignore_index", [None, 1])
def test_cross_entropy_matches_torch(xp, ignore_index):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = (rng.normal(size=(3, 4, 7)) * 3).astype(np.float32)
    labels = rng.integers(0, 7, size=(3, 4))
    ours = Tensor(xp.asarray(logits))
    loss = CrossEntropy(ignore_index=ignore_index)(Tensor(xp.asarray(labels)), ours)
    loss.backward()
    zt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(
        zt.reshape(-1, 7),
        torch.tensor(labels).reshape(-1),
        ignore_index=-100 if ignore_index is None else ignore_index,
    )
    ref.backward()
    assert loss.dtype == np.float32 and ours.grad.dtype == np.float32
    assert loss.item() == pytest.approx(ref.item(), rel=1e-6)
    np.testing.assert_allclose(host(ours.grad.array), zt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = to_tensor([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4]])
    loss = CrossEntropy()(to_tensor([1, 0], dtype=int), logits)
    loss.backward()
    assert loss.item() == pytest.approx((2e4 + 2e4 + np.log(2)) / 2)
    np.testing.assert_allclose(logits.grad.array, [[0.5, -0.5, 0], [-0.5, 0.25, 0.25]])


def test_cross_entropy_all_ignored_is_zero_with_zero_gradient():
    logits = to_tensor(np.ones((2, 3)))
    loss = CrossEntropy(ignore_index=-1)(to_tensor([-1, -1], dtype=int), logits)
    loss.backward()
    assert loss.item() == 0.0
    np.testing.assert_array_equal(logits.grad.array, 0.0)


def test_cross_entropy_array_functions_save_only_row_statistics():
    logits = np.random.default_rng(2).normal(size=(5, 4)).astype(np.float32)
    labels = np.array([0, 1, 2, 3, 0])
    loss, saved = cross_entropy_forward(np, logits, labels)
    peak, log_sum, count = saved
    assert peak.shape == log_sum.shape == (5,) and count == 5
    np.testing.assert_allclose(peak + log_sum, np.log(np.exp(logits).sum(-1)), rtol=1e-6)
    dlogits = cross_entropy_backward(np, np.float32(1.0), logits, labels, saved)
    softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(dlogits, (softmax - np.eye(4)[labels]) / 5, atol=1e-7)


def test_cross_entropy_rejects_bad_labels():
    logits = to_tensor(np.zeros((3, 4)))
    with pytest.raises(TypeError, match="integer class ids.*float32"):
        CrossEntropy()(to_tensor([0.0, 1.0, 2.0]), logits)
    with pytest.raises(IndexError, match=r"\[0, 4\).*4 classes.*\[0, 4\]"):
        CrossEntropy()(to_tensor([0, 1, 4], dtype=int), logits)
    with pytest.raises(IndexError, match=r"\[-1, 1\]"):
        CrossEntropy()(to_tensor([0, 1, -1], dtype=int), logits)
    with pytest.raises(IndexError, match=r"or -100 \(ignored\)"):
        CrossEntropy(ignore_index=-100)(to_tensor([0, 9, -100], dtype=int), logits)
    with pytest.raises(ValueError, match=r"labels of shape \(2,\).*got \(3, 4\)"):
        CrossEntropy()(to_tensor([0, 1], dtype=int), logits)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
def test_mean_squared_error_gradients(shape):
    rng = np.random.default_rng(3)
    check_grads(MeanSquaredError(), rng.normal(size=shape), rng.normal(size=shape))


@given(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
def test_binary_cross_entropy_gradients(shape):
    rng = np.random.default_rng(4)
    check_grads(BinaryCrossEntropy(), rng.uniform(size=shape), rng.normal(size=shape) * 3)


def test_regression_losses_match_torch(xp):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    target = rng.uniform(size=(4, 3)).astype(np.float32)
    logits = (rng.normal(size=(4, 3)) * 5).astype(np.float32)
    logits[0] = [60.0, -60.0, 0.0]  # saturated logits stay finite
    for ours_fn, reference in (
        (MeanSquaredError(), torch.nn.functional.mse_loss),
        (BinaryCrossEntropy(), torch.nn.functional.binary_cross_entropy_with_logits),
    ):
        z = Tensor(xp.asarray(logits))
        loss = ours_fn(Tensor(xp.asarray(target), requires_grad=False), z)
        loss.backward()
        zt = torch.tensor(logits, requires_grad=True)
        ref = reference(zt, torch.tensor(target))
        ref.backward()
        assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
        np.testing.assert_allclose(host(z.grad.array), zt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_regression_losses_reject_mismatched_shapes():
    with pytest.raises(ValueError, match=r"MeanSquaredError.*\(3,\).*\(2,\)"):
        MeanSquaredError()(np.ones(3), to_tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"BinaryCrossEntropy.*\(1,\).*\(2,\)"):
        BinaryCrossEntropy()(np.ones(1), to_tensor([1.0, 2.0]))
