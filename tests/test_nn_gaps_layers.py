"""torch's layers tricycle lacked (``tricycle.nn.layers3d``: ConvTranspose3d, InstanceNorm3d,
MaxUnpool3d, the 3-D adaptive pools, the lazy 3-D layers and instance norms; ``nn.Buffer``)
with torch's weights, outputs and gradients compared in float64, and torch's top-level aliases
of functional ops (``tricycle.nn.top_level``: ATen's signatures, int reductions) against
torch's."""

import pickle

import numpy as np
import pytest
from helpers import check_grads

import tricycle as tc
import tricycle.nn as nn
import tricycle.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def close(ours, theirs, atol=1e-10):
    rtol = 1e-9 if atol <= 1e-10 else 1e-6
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def run_both(ours, theirs, x, *extra):
    """(our output, torch's) of the layers on x, and the input gradients of sum(out * w)."""
    t, p = tc.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = ours(t, *(tc.Tensor(e) for e in extra))
    expected = theirs(p, *(torch.tensor(e) for e in extra))
    w = normal(*expected.shape, seed=9)
    (out * tc.Tensor(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    close(out, expected)
    close(t.grad, p.grad)


# ---------------------------------------------------------------------- 3-D layers
def test_conv_transpose3d_with_torchs_weights():
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 2), padding=1,
                                      output_padding=(1, 0, 0), groups=2).double()  # fmt: skip
    ours = nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 2), padding=1,
                              output_padding=(1, 0, 0), groups=2)  # fmt: skip
    assert ours.weights.shape == tuple(theirs.weight.shape)
    ours.weights = tc.Tensor(theirs.weight.detach().numpy(), requires_grad=True)
    ours.bias = tc.Tensor(theirs.bias.detach().numpy(), requires_grad=True)
    run_both(ours, theirs, normal(2, 4, 3, 4, 3))
    close(ours.weights.grad, theirs.weight.grad)
    close(ours.bias.grad, theirs.bias.grad)
    out = ours(tc.Tensor(normal(4, 3, 4, 3)))  # unbatched
    close(out, theirs(torch.tensor(normal(4, 3, 4, 3))))


@pytest.mark.parametrize("affine, track", [(False, False), (True, True)])
def test_instance_norm3d_as_torch(affine, track):
    ours, theirs = nn.InstanceNorm3d(3, affine=affine, track_running_stats=track), None
    theirs = torch.nn.InstanceNorm3d(3, affine=affine, track_running_stats=track).double()
    run_both(ours, theirs, normal(2, 3, 2, 3, 4))
    if track:
        close(ours.running_mean, theirs.running_mean, atol=1e-7)  # float32 statistics
        close(ours.running_var, theirs.running_var, atol=1e-7)
        ours.running_mean.array = theirs.running_mean.numpy()  # float64 statistics for eval
        ours.running_var.array = theirs.running_var.numpy()
        ours.eval(), theirs.eval()
        run_both(ours, theirs, normal(2, 3, 2, 3, 4, seed=1))


def test_max_unpool3d_as_torch():
    x = normal(2, 3, 4, 6, 4)
    pooled, indices = TF.max_pool3d(torch.tensor(x), 2, return_indices=True)
    ids = indices.numpy()
    run_both(lambda t: nn.MaxUnpool3d(2)(t, tc.Tensor(ids)),
             lambda p: torch.nn.MaxUnpool3d(2)(p, indices), pooled.numpy())  # fmt: skip
    run_both(lambda t: F.max_unpool3d(t, tc.Tensor(ids), 2, output_size=(5, 7, 5)),
             lambda p: TF.max_unpool3d(p, indices, 2, output_size=(5, 7, 5)),
             pooled.numpy())  # fmt: skip


@pytest.mark.parametrize("size", [2, (3, None, 2), (1, 4, 3)])
def test_adaptive_pools3d_as_torch(size):
    x = normal(2, 3, 5, 4, 6)
    run_both(nn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), x)
    run_both(nn.AdaptiveMaxPool3d(size), torch.nn.AdaptiveMaxPool3d(size), x)
    run_both(lambda t: F.adaptive_avg_pool3d(t, size),
             lambda p: TF.adaptive_avg_pool3d(p, size), x[0])  # fmt: skip
    out, indices = F.adaptive_max_pool3d(tc.Tensor(x), size, return_indices=True)
    expected, their_indices = TF.adaptive_max_pool3d(torch.tensor(x), size, True)
    close(out, expected)
    np.testing.assert_array_equal(indices.numpy(), their_indices.numpy())
    check_grads(lambda t: F.adaptive_avg_pool3d(t, size).sum(), normal(1, 1, 5, 4, 6))
    with pytest.raises(ValueError, match="adaptive_avg_pool3d: expected a non-empty input"):
        F.adaptive_avg_pool3d(tc.Tensor(normal(3, 4, 5)), 2)


# ---------------------------------------------------------------------- lazy layers
@pytest.mark.parametrize(
    "ours, concrete, shape, read",
    [
        (lambda: nn.LazyConv3d(4, 2, padding=1), nn.Conv3d, (2, 3, 3, 4, 3), "in_channels"),
        (lambda: nn.LazyConvTranspose3d(4, 2, stride=2), nn.ConvTranspose3d, (2, 3, 2, 3, 2),
         "in_channels"),
        (lambda: nn.LazyBatchNorm3d(), nn.BatchNorm3d, (2, 3, 2, 3, 2), "num_features"),
        (lambda: nn.LazyInstanceNorm1d(), nn.InstanceNorm1d, (2, 3, 5), "num_features"),
        (lambda: nn.LazyInstanceNorm2d(affine=True), nn.InstanceNorm2d, (3, 4, 5),
         "num_features"),
        (lambda: nn.LazyInstanceNorm3d(track_running_stats=True), nn.InstanceNorm3d,
         (2, 3, 2, 3, 2), "num_features"),
    ],
)  # fmt: skip
def test_lazy_layers_become_their_concrete_layer(ours, concrete, shape, read):
    layer = ours()
    out = layer(tc.Tensor(normal(*shape)))
    assert type(layer) is concrete and getattr(layer, read) == 3  # the channels, 3 in each
    assert out.shape == layer(tc.Tensor(normal(*shape))).shape


def test_lazy_instance_norm_reads_the_channels_and_matches_torch():
    theirs = torch.nn.LazyInstanceNorm3d(affine=True).double()
    ours = nn.LazyInstanceNorm3d(affine=True)
    assert len(ours.parameters()) == 2
    run_both(ours, theirs, normal(2, 3, 2, 3, 4))
    assert ours.num_features == 3 and ours.gamma.shape == (3,)
    with pytest.raises(ValueError, match="LazyInstanceNorm3d: expected input"):
        nn.LazyInstanceNorm3d()(tc.Tensor(normal(2, 3)))


# ---------------------------------------------------------------------- nn.Buffer
class Holder(nn.Module):
    def __init__(self):
        self.scale = nn.Buffer(tc.ones(3) * 2)
        self.cache = nn.Buffer(tc.zeros(2), persistent=False)
        self.weight = nn.Parameter(tc.ones(3))

    def forward(self, x):
        return x * self.scale * self.weight


def test_buffer_is_a_buffer_of_its_layer_as_torchs():
    class TorchHolder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Buffer(torch.ones(3) * 2)
            self.cache = torch.nn.Buffer(torch.zeros(2), persistent=False)
            self.weight = torch.nn.Parameter(torch.ones(3))

    ours, theirs = Holder(), TorchHolder()
    assert list(ours.state_dict()) == ["scale", "weight"] == sorted(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == ["weight"]
    assert not ours.scale.requires_grad and isinstance(ours.scale, nn.Buffer)
    out = ours(tc.Tensor(normal(3)))
    assert type(out) is tc.Tensor
    copy = pickle.loads(pickle.dumps(ours))
    assert list(copy.state_dict()) == ["scale", "weight"] and copy.cache.persistent is False
    ours.load_state_dict({"scale": np.full(3, 5.0, np.float32), "weight": np.ones(3, np.float32)})
    np.testing.assert_array_equal(ours.scale.numpy(), 5.0)
    assert nn.Buffer().shape == (0,)
    with pytest.raises(TypeError, match="Buffer.*persistent"):
        nn.Buffer(tc.ones(2), persistent="no")


# ---------------------------------------------------------------------- torch.<op> aliases
def test_top_level_aliases_take_atens_signatures():
    x, w = normal(2, 4, 5, 6), normal(4, seed=1)
    same = [
        (lambda m, t: m.layer_norm(t, (6,), None, None, 1e-5, True), x),
        (lambda m, t: m.group_norm(t, 2), x),
        (lambda m, t: m.batch_norm(t, None, None, None, None, True, 0.1, 1e-5, False), x),
        (lambda m, t: m.instance_norm(t, None, None, None, None, True, 0.1, 1e-5, False), x),
        (lambda m, t: m.dropout(t, 0.5, False), x),
        (lambda m, t: m.alpha_dropout(t, 0.5, False), x),
        (lambda m, t: m.feature_alpha_dropout(t, 0.2, False), x),
        (lambda m, t: m.selu(t), x),
        (lambda m, t: m.celu(t, 0.5), x),
        (lambda m, t: m.threshold(t, 0.1, -1.0), x),
        (lambda m, t: m.rrelu(t, 0.2, 0.4), x),
        (lambda m, t: m.hardshrink(t, 0.3), x),
        (lambda m, t: m.max_pool2d(t, 2), x),
        (lambda m, t: m.max_pool1d(t[0], 2, [], 0, 1, True), x),
        (lambda m, t: m.max_pool3d(t, 2, 1), x),
        (lambda m, t: m.avg_pool1d(t[0], 3, 2, 1, False, False), x),
        (lambda m, t: m.adaptive_avg_pool1d(t[0], 4), x),
        (lambda m, t: m.adaptive_max_pool1d(t[0], 4)[0], x),
        (lambda m, t: m.pixel_shuffle(t, 2), x),
        (lambda m, t: m.pixel_unshuffle(t, 1), x),
        (lambda m, t: m.channel_shuffle(t, 2), x),
        (lambda m, t: m.conv2d(t, t[:3, :2, :2, :2], None, 1, 0, 1, 2), x),
        (lambda m, t: m.conv1d(t[0], t[1, :2, :, :2], stride=2), x),
        (lambda m, t: m.bilinear(t[0, 0, :, :5], t[1, 0, :, :5], t[0, :2, :, :5], None), x),
    ]
    for f, a in same:
        run_both(lambda t, f=f: f(tc, t), lambda p, f=f: f(torch, p), a)
    run_both(lambda t, g: tc.prelu(t, g), lambda p, g: torch.prelu(p, g), x, w)
    ids = np.array([[0, 3, 2], [3, 1, 0]])
    table = normal(4, 5)
    for pad, freq in ((-1, False), (3, False), (3, True)):
        run_both(lambda t, pad=pad, freq=freq: tc.embedding(t, tc.Tensor(ids), pad, freq),
                 lambda p, pad=pad, freq=freq: torch.embedding(p, torch.tensor(ids), pad, freq),
                 table)  # fmt: skip


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_top_level_losses_take_atens_int_reductions(reduction):
    a, b = normal(4, 3), normal(4, 3, seed=1)
    signs = np.sign(normal(4, seed=2))
    log_p = torch.log_softmax(torch.tensor(a), -1).numpy()
    cases = [
        (lambda m, t, u: m.kl_div(t, u.exp() / 4, reduction), log_p, b),
        (lambda m, t, u: m.kl_div(t, u, reduction, log_target=True), log_p, b),
        (lambda m, t, u: m.binary_cross_entropy_with_logits(t, u.sigmoid(), None, None,
                                                           reduction), a, b),
        (lambda m, t, u: m.hinge_embedding_loss(t, u.sign(), 0.5, reduction), a, b),
        (lambda m, t, u: m.triplet_margin_loss(t, u, u * 2, 1.0, 2.0, 1e-6, True, reduction),
         a, b),
        (lambda m, t, u: m.poisson_nll_loss(t, u.abs(), True, True, 1e-8, reduction), a, b),
    ]  # fmt: skip
    for f, x, y in cases:
        t, u = tc.Tensor(x, requires_grad=True), tc.Tensor(y)
        p, q = torch.tensor(x, requires_grad=True), torch.tensor(y)
        out, expected = f(tc, t, u), f(torch, p, q)
        close(out, expected)
        out.sum().backward(), expected.sum().backward()
        close(t.grad, p.grad)
    y = tc.Tensor(signs)
    for name in ("margin_ranking_loss", "cosine_embedding_loss"):
        args = (a[:, 0], b[:, 0]) if name == "margin_ranking_loss" else (a, b)
        out = getattr(tc, name)(*map(tc.Tensor, args), y, 0.1, reduction)
        close(out, getattr(torch, name)(*map(torch.tensor, args), torch.tensor(signs), 0.1,
                                        reduction))  # fmt: skip
    log_probs = torch.log_softmax(torch.tensor(normal(6, 2, 4)), -1)
    targets, lengths, target_lengths = np.array([[1, 2], [3, 3]]), [6, 5], [2, 2]
    out = tc.ctc_loss(tc.Tensor(log_probs.numpy()), tc.Tensor(targets), lengths, target_lengths,
                      0, reduction)  # fmt: skip
    close(out, torch.ctc_loss(log_probs, torch.tensor(targets), lengths, target_lengths, 0,
                              reduction))  # fmt: skip
    with pytest.raises(ValueError, match="torch.kl_div.*reduction"):
        tc.kl_div(tc.Tensor(a), tc.Tensor(b), "mean")
