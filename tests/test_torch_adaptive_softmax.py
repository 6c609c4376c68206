"""``nn.AdaptiveLogSoftmaxWithLoss`` (``tricycle.nn.adaptive_softmax``) against torch's with
torch's weights loaded by ``nn.from_torch``: (output, loss) of ``forward``, batched and not,
with the gradients of the input and of every weight, ``log_prob`` and ``predict`` (rows
whose best class is in the shortlist and rows whose is in a cluster), a few SGD steps, the
layers' shapes and names, and bad arguments refused with torch's messages."""

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
from tricycle.nn.adaptive_softmax import AdaptiveLogSoftmaxWithLoss

torch = pytest.importorskip("torch")

SIZES = [  # in_features, n_classes, cutoffs, div_value, head_bias
    (16, 20, [4, 9, 15], 2.0, True),
    (12, 10, [3], 4.0, False),
    (8, 30, [10, 20], 1.5, False),
]


def pair(in_features, n_classes, cutoffs, div_value, head_bias, seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value,
                                                  head_bias).double()  # fmt: skip
    ours = AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value, head_bias,
                                      dtype=np.float64)  # fmt: skip
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def data(in_features, n_classes, cutoffs=(), rows=9, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, in_features))
    y = rng.integers(0, n_classes, size=rows)
    y[: len(cutoffs) + 2] = [0, *cutoffs, n_classes - 1]  # each cluster's first, the last class
    return x, y


@pytest.mark.parametrize("sizes", SIZES)
def test_forward_and_its_gradients_are_torch_s(sizes):
    ours, theirs = pair(*sizes)
    x, y = data(*sizes[:3])
    xt = torch.tensor(x, requires_grad=True)
    out_t, loss_t = theirs(xt, torch.tensor(y))
    loss_t.backward()
    xx = tc.Tensor(x)
    result = ours(xx, tc.Tensor(y, requires_grad=False))
    out, loss = result
    assert result.output is out and result.loss is loss and type(result).__name__ == "_ASMoutput"
    np.testing.assert_allclose(out.array, out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(float(loss.array), loss_t.item(), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(xx.grad.array, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    theirs_grads = {n: p.grad.numpy() for n, p in theirs.named_parameters()}
    ours_grads = {n.replace("sequence.", "").replace("weights", "weight"): p.grad.array
                  for n, p in ours.named_parameters()}  # fmt: skip
    assert set(ours_grads) == set(theirs_grads)
    for name, expected in theirs_grads.items():
        got = ours_grads[name].T if expected.ndim == 2 else ours_grads[name]  # Linear's (in, out)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=name)


def test_an_unbatched_row_and_a_few_sgd_steps_are_torch_s():
    ours, theirs = pair(*SIZES[0])
    x, y = data(16, 20, rows=12, seed=1)
    out_t, loss_t = theirs(torch.tensor(x[0]), torch.tensor(y[0]))
    out, loss = ours(tc.Tensor(x[0]), tc.Tensor(np.array(y[0]), requires_grad=False))
    assert out.shape == () and tuple(out_t.shape) == ()
    np.testing.assert_allclose(float(out.array), out_t.item(), rtol=1e-12)
    np.testing.assert_allclose(float(loss.array), loss_t.item(), rtol=1e-12)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.5)
    opt = tc.optim.SGD(ours.parameters(), lr=0.5)
    losses, losses_t = [], []
    for _ in range(4):
        opt_t.zero_grad()
        loss_t = theirs(torch.tensor(x), torch.tensor(y)).loss
        loss_t.backward()
        opt_t.step()
        opt.zero_grad()
        loss = ours(tc.Tensor(x), tc.Tensor(y, requires_grad=False)).loss
        loss.backward()
        opt.step()
        losses_t.append(loss_t.item())
        losses.append(float(loss.array))
    np.testing.assert_allclose(losses, losses_t, rtol=1e-10)
    assert losses[-1] < losses[0]  # it learns


@pytest.mark.parametrize("sizes", SIZES)
def test_log_prob_and_predict_are_torch_s(sizes):
    ours, theirs = pair(*sizes)
    x, _ = data(sizes[0], sizes[1], rows=12, seed=2)
    log_prob = ours.log_prob(tc.Tensor(x))
    np.testing.assert_allclose(log_prob.array, theirs.log_prob(torch.tensor(x)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(np.exp(log_prob.array).sum(axis=1), 1.0, rtol=1e-12)
    for bias in (0.0, 4.0, 40.0):  # the clusters win the head in none, some, then all rows
        with torch.no_grad():
            theirs.head.weight[sizes[2][0] :] += bias / 10
        nn.from_torch(ours, theirs.state_dict())
        predicted = ours.predict(tc.Tensor(x))
        expected = theirs.predict(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(predicted.array, expected)
        assert predicted.dtype == np.int64
        np.testing.assert_array_equal(predicted.array, ours.log_prob(tc.Tensor(x)).array.argmax(1))


def test_the_layers_are_torch_s():
    ours, theirs = pair(*SIZES[0])
    assert set(nn.to_torch(ours)) == set(theirs.state_dict())
    assert ours.cutoffs == theirs.cutoffs == [4, 9, 15, 20]
    assert (ours.shortlist_size, ours.n_clusters, ours.head_size) == (4, 3, 7)
    assert [(t[0].out_features, t[1].out_features) for t in ours.tail] == [(8, 5), (4, 6), (2, 5)]


@pytest.mark.parametrize(
    "args, match",
    [
        ((8, 10, []), "length larger than 0"),
        ((8, 10, [5, 3]), "unique, positive integers sorted"),
        ((8, 10, [0, 3]), "unique, positive integers sorted"),
        ((8, 10, [3, 10]), "between 1 and n_classes-1"),
        ((8, 10, [3, 3]), "unique, positive integers sorted"),
        ((8, 10, [2.5]), "unique, positive integers sorted"),
        ((8, 10, [2, 4, 6], 4.0), "the width of cluster 1 must be"),  # 8 // 16 is no width
    ],
)
def test_bad_cutoffs_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        AdaptiveLogSoftmaxWithLoss(*args)


def test_bad_inputs_and_targets_are_refused():
    ours, _ = pair(*SIZES[1])
    x, y = data(12, 10)
    ids = tc.Tensor(y, requires_grad=False)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in "
                                           r"range \[0, 10\] were found"):  # fmt: skip
        ours(tc.Tensor(x), tc.Tensor(np.where(y == 9, 10, y), requires_grad=False))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        ours(tc.Tensor(x[:3]), ids)
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        ours(tc.Tensor(x[None]), ids)
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input"):
        ours(tc.Tensor(x), tc.Tensor(np.array(3), requires_grad=False))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        ours(tc.Tensor(x), tc.Tensor(y[:, None], requires_grad=False))
    with pytest.raises(TypeError, match="integer class ids"):
        ours(tc.Tensor(x), tc.Tensor(y.astype(np.float64)))
    with pytest.raises(ValueError, match=r"expected a non-empty input \(N, 12\)"):
        ours.log_prob(tc.Tensor(x[:, :5]))
