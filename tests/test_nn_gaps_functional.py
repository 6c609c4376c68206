"""torch's ``nn.functional`` ops tricycle lacked (``tricycle.nn.shrinks``, ``alpha_dropout``,
``norms_more``, ``functional_more``, ``distance_loss``): values and gradients against torch in
float64 (and against finite differences), the random ops (``rrelu`` and the alpha dropouts in
training, ``gumbel_softmax``) by the formulas their draws must satisfy and their moments, and
bad arguments refused, naming the op."""

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


def as_torch(a):
    return torch.tensor(a, requires_grad=a.dtype.kind == "f")


def compare(ours, theirs, *arrays, grads=True, atol=1e-10):
    """ours(*Tensors) equals theirs(*torch tensors) in float64; so do the gradients of
    sum(out * w) for a fixed random w with respect to every float input."""
    ts = [tc.Tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ps = [as_torch(a) for a in arrays]
    out, expected = ours(*ts), theirs(*ps)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-9, atol=atol)
    if not grads:
        return
    w = normal(*expected.shape, seed=7)
    (out * tc.Tensor(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    for t, p in zip(ts, ps):
        if p.grad is not None:
            np.testing.assert_allclose(t.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=atol)


# ---------------------------------------------------------------------- shrinks, rrelu
@pytest.mark.parametrize("lambd", [0.0, 0.3, 0.5, 1.2])
def test_shrinks_as_torch(lambd):
    x = normal(4, 5)
    compare(lambda t: F.hardshrink(t, lambd), lambda t: TF.hardshrink(t, lambd), x)
    compare(lambda t: F.softshrink(t, lambd), lambda t: TF.softshrink(t, lambd), x)
    compare(lambda t: nn.Hardshrink(lambd)(t), lambda t: torch.nn.Hardshrink(lambd)(t), x)
    compare(lambda t: nn.Softshrink(lambd)(t), lambda t: torch.nn.Softshrink(lambd)(t), x)
    compare(lambda t: tc.hardshrink(t, lambd), lambda t: torch.hardshrink(t, lambd), x)
    x = normal(3, 4, seed=1) * 2
    x = x[np.abs(np.abs(x) - lambd) > 1e-3]  # away from the kinks
    check_grads(lambda t: F.softshrink(t, lambd).sum(), x)
    check_grads(lambda t: F.hardshrink(t, lambd).sum(), x)


def test_shrinks_refuse_a_negative_lambda():
    with pytest.raises(ValueError, match="F.softshrink.*lambd"):
        F.softshrink(tc.Tensor(normal(3)), -0.5)
    with pytest.raises(ValueError, match="Hardshrink.*lambd"):
        nn.Hardshrink(-1.0)


def test_rrelu_in_evaluation_is_torchs():
    x = normal(4, 6)
    compare(lambda t: F.rrelu(t, 0.1, 0.3), lambda t: TF.rrelu(t, 0.1, 0.3), x)
    compare(lambda t: tc.rrelu(t), lambda t: torch.rrelu(t), x)
    compare(lambda t: nn.RReLU().eval()(t), lambda t: torch.nn.RReLU().eval()(t), x)


def test_rrelu_in_training_draws_a_slope_per_element():
    x = normal(200, 50)
    t = tc.Tensor(x, requires_grad=True)
    y = F.rrelu(t, 0.1, 0.3, training=True, rng=np.random.default_rng(0))
    y.sum().backward()
    slopes = y.numpy()[x < 0] / x[x < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.005
    np.testing.assert_array_equal(y.numpy()[x >= 0], x[x >= 0])
    np.testing.assert_allclose(t.grad.numpy(), np.where(x >= 0, 1, y.numpy() / x))
    torch.manual_seed(0)
    theirs = TF.rrelu(torch.tensor(x), 0.1, 0.3, training=True).numpy()[x < 0] / x[x < 0]
    assert abs(theirs.mean() - slopes.mean()) < 0.005 and abs(theirs.std() - slopes.std()) < 0.005
    layer = nn.RReLU(seed=3)
    assert not np.allclose(layer(tc.Tensor(x)).numpy(), layer(tc.Tensor(x)).numpy())
    with pytest.raises(ValueError, match="F.rrelu: lower"):
        F.rrelu(tc.Tensor(x), 0.5, 0.2)


# ---------------------------------------------------------------------- gumbel softmax
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_is_softmax_of_logits_plus_gumbel_noise(dim):
    logits = normal(5, 4)
    soft = F.gumbel_softmax(tc.Tensor(logits), tau=0.7, dim=dim, rng=np.random.default_rng(1))
    g = -np.log(np.random.default_rng(1).standard_exponential((5, 4)))
    expected = TF.softmax(torch.tensor((logits + g) / 0.7), dim=dim).numpy()
    np.testing.assert_allclose(soft.numpy(), expected, rtol=1e-12)
    t = tc.Tensor(logits, requires_grad=True)
    hard = F.gumbel_softmax(t, tau=0.7, hard=True, dim=dim, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(hard.numpy(), expected == expected.max(dim, keepdims=True))
    w = normal(5, 4, seed=2)
    (hard * tc.Tensor(w)).sum().backward()
    p = torch.tensor(logits, requires_grad=True)
    y = TF.softmax((p + torch.tensor(g)) / 0.7, dim=dim)
    (y * torch.tensor(w)).sum().backward()  # the straight-through gradient is the soft one's
    np.testing.assert_allclose(t.grad.numpy(), p.grad.numpy(), rtol=1e-10)


def test_gumbel_softmax_samples_the_categorical_distribution():
    logits = np.log(np.array([0.2, 0.5, 0.3]))
    draws = F.gumbel_softmax(tc.Tensor(np.tile(logits, (20000, 1))), hard=True).numpy()
    np.testing.assert_allclose(draws.mean(0), [0.2, 0.5, 0.3], atol=0.015)
    with pytest.raises(ValueError, match="F.gumbel_softmax.*tau"):
        F.gumbel_softmax(tc.Tensor(logits), tau=0)


# ---------------------------------------------------------------------- alpha dropout
ALPHA = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_or_saturates_each_value_as_torch(feature):
    p, x = 0.3, normal(400, 8, 5)
    a = ((1 - p) * (1 + p * ALPHA**2)) ** -0.5
    ours_f = F.feature_alpha_dropout if feature else F.alpha_dropout
    theirs_f = TF.feature_alpha_dropout if feature else TF.alpha_dropout
    t = tc.Tensor(x, requires_grad=True)
    y = ours_f(t, p, training=True)
    y.sum().backward()
    torch.manual_seed(0)
    z = theirs_f(torch.tensor(x), p, training=True).numpy()
    for out in (y.numpy(), z):  # each value is kept (affinely) or set to the saturation
        kept = np.isclose(out, a * x + ALPHA * a * p)
        assert (kept | np.isclose(out, ALPHA * a * (p - 1))).all()
        assert abs(kept.mean() - (1 - p)) < 0.03
        if feature:  # whole channels together
            assert (kept.all(-1) | ~kept.any(-1)).all()
    kept = np.isclose(y.numpy(), a * x + ALPHA * a * p)
    np.testing.assert_allclose(t.grad.numpy(), a * kept)
    assert abs(y.numpy().mean()) < 0.05 and abs(y.numpy().std() - 1) < 0.05  # moments kept


def test_alpha_dropout_edges_and_layers_as_torch():
    x = normal(3, 4, 2)
    for ours, theirs in ((F.alpha_dropout, TF.alpha_dropout),
                         (F.feature_alpha_dropout, TF.feature_alpha_dropout)):  # fmt: skip
        np.testing.assert_array_equal(ours(tc.Tensor(x), 0.5).numpy(), x)  # training=False
        np.testing.assert_array_equal(ours(tc.Tensor(x), 1.0, True).numpy(),
                                      theirs(torch.tensor(x), 1.0, True).numpy())  # fmt: skip
        np.testing.assert_array_equal(ours(tc.Tensor(x), 0.0, True).numpy(), x)
    for layer in (nn.AlphaDropout(0.2), nn.FeatureAlphaDropout(0.2)):
        assert not np.allclose(layer(tc.Tensor(x)).numpy(), x)
        np.testing.assert_array_equal(layer.eval()(tc.Tensor(x)).numpy(), x)
    assert repr(nn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))
    with pytest.raises(ValueError, match="F.alpha_dropout.*p"):
        F.alpha_dropout(tc.Tensor(x), 1.5, True)
    with pytest.raises(ValueError, match="F.feature_alpha_dropout.*2 dimensions"):
        F.feature_alpha_dropout(tc.Tensor(normal(4)), 0.5, True)


# ---------------------------------------------------------------------- norms, shuffle
@pytest.mark.parametrize(
    "shape, normalized, weight, eps",
    [((3, 5), (5,), True, None), ((2, 3, 4), (3, 4), False, 1e-3), ((4, 6), (6,), True, 1e-5)],
)
def test_rms_norm_as_torch(shape, normalized, weight, eps):
    x = normal(*shape)
    w = normal(*((normalized,) if isinstance(normalized, int) else normalized), seed=1)
    if weight:
        compare(lambda t, g: F.rms_norm(t, normalized, g, eps),
                lambda t, g: TF.rms_norm(t, normalized, g, eps), x, w)  # fmt: skip
    else:
        compare(lambda t: F.rms_norm(t, normalized, None, eps),
                lambda t: TF.rms_norm(t, normalized, None, eps), x)  # fmt: skip
    with pytest.raises(ValueError, match="F.rms_norm: normalized_shape"):
        F.rms_norm(tc.Tensor(x), (7,))


@pytest.mark.parametrize("shape, size", [((2, 6, 5), 3), ((2, 5, 3, 4), 2), ((1, 4, 2, 2, 3), 5)])
def test_local_response_norm_as_torch(shape, size):
    x = normal(*shape)
    compare(lambda t: F.local_response_norm(t, size, 0.01, 0.6, 1.5),
            lambda t: TF.local_response_norm(t, size, 0.01, 0.6, 1.5), x)  # fmt: skip
    compare(lambda t: nn.LocalResponseNorm(size)(t),
            lambda t: torch.nn.LocalResponseNorm(size)(t), x)  # fmt: skip
    check_grads(lambda t: F.local_response_norm(t, size, 0.5, 0.75, 1.0).sum(), normal(1, 4, 3))
    with pytest.raises(ValueError, match="F.local_response_norm: expected 3D"):
        F.local_response_norm(tc.Tensor(normal(3, 4)), 2)


def test_channel_shuffle_as_torch():
    x = normal(2, 6, 3, 2)
    compare(lambda t: F.channel_shuffle(t, 3), lambda t: TF.channel_shuffle(t, 3), x)
    compare(lambda t: nn.ChannelShuffle(2)(t), lambda t: torch.nn.ChannelShuffle(2)(t), x)
    compare(lambda t: tc.channel_shuffle(t, 2), lambda t: torch.channel_shuffle(t, 2), x)
    with pytest.raises(ValueError, match="channel_shuffle: the 6 channels.*groups=4"):
        F.channel_shuffle(tc.Tensor(x), 4)


# ---------------------------------------------------------------------- convolutions
@pytest.mark.parametrize("n", [1, 2, 3])
def test_functional_convolutions_take_torchs_names_and_layouts(n):
    x, w, b = normal(2, 4, *(5,) * n), normal(6, 2, *(2,) * n, seed=1), normal(6, seed=2)
    ours, theirs = getattr(F, f"conv{n}d"), getattr(TF, f"conv{n}d")
    compare(lambda t, k, c: ours(t, weight=k, bias=c, stride=2, padding=1, groups=2),
            lambda t, k, c: theirs(t, weight=k, bias=c, stride=2, padding=1, groups=2),
            x, w, b)  # fmt: skip
    w = normal(4, 3, *(3,) * n, seed=3)  # (in, out / groups, *k)
    ours, theirs = getattr(F, f"conv_transpose{n}d"), getattr(TF, f"conv_transpose{n}d")
    compare(lambda t, k, c: ours(t, k, c, 2, 1, 1, 2, 1),
            lambda t, k, c: theirs(t, k, c, 2, 1, 1, 2, 1), x, w, b)  # fmt: skip
    top, torch_top = getattr(tc, f"conv_transpose{n}d"), getattr(torch, f"conv_transpose{n}d")
    compare(lambda t, k: top(t, k), lambda t, k: torch_top(t, k), x, w)
    with pytest.raises(ValueError, match=f"conv{n}d: expected weight with {n + 2} dimensions"):
        getattr(F, f"conv{n}d")(tc.Tensor(x), tc.Tensor(normal(6, 4)))


# ---------------------------------------------------------------------- pooling with indices
@pytest.mark.parametrize("n", [1, 2, 3])
def test_pools_with_indices_as_torch(n):
    x = normal(2, 3, *(6,) * n)
    ours, indices = getattr(F, f"max_pool{n}d_with_indices")(tc.Tensor(x), 3, 2, 1)
    theirs, expected = getattr(TF, f"max_pool{n}d_with_indices")(torch.tensor(x), 3, 2, 1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.numpy())
    f = getattr(F, f"adaptive_max_pool{n}d_with_indices")
    ours, indices = f(tc.Tensor(x), 4)
    theirs, expected = getattr(TF, f"adaptive_max_pool{n}d_with_indices")(torch.tensor(x), 4)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.numpy())


# ---------------------------------------------------------------------- pdist, upsample
def test_pdist_and_the_deprecated_upsamples_as_torch():
    compare(lambda t: F.pdist(t, 1.5), lambda t: TF.pdist(t, 1.5), normal(5, 3))
    x = normal(1, 2, 3, 4)
    for ours, theirs in (
        (lambda t: F.upsample(t, scale_factor=2), lambda t: TF.upsample(t, scale_factor=2)),
        (lambda t: F.upsample(t, (5, 7), mode="bilinear", align_corners=False),
         lambda t: TF.upsample(t, (5, 7), mode="bilinear", align_corners=False)),
        (lambda t: F.upsample_nearest(t, (6, 5)), lambda t: TF.upsample_nearest(t, (6, 5))),
        (lambda t: F.upsample_bilinear(t, scale_factor=2),
         lambda t: TF.upsample_bilinear(t, scale_factor=2)),
    ):  # fmt: skip
        with pytest.warns(UserWarning, match="deprecated"):
            compare(ours, theirs, x)


# ---------------------------------------------------------------------- triplet loss
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_triplet_margin_with_distance_loss_as_torch(swap, reduction):
    a, p, n = normal(6, 4), normal(6, 4, seed=1), normal(6, 4, seed=2)
    compare(lambda *t: F.triplet_margin_with_distance_loss(*t, margin=0.5, swap=swap,
                                                          reduction=reduction),
            lambda *t: TF.triplet_margin_with_distance_loss(*t, margin=0.5, swap=swap,
                                                           reduction=reduction),
            a, p, n)  # fmt: skip

    def cosine(u, v):
        return 1 - F.cosine_similarity(u, v)

    def torch_cosine(u, v):
        return 1 - TF.cosine_similarity(u, v)

    compare(lambda *t: nn.TripletMarginWithDistanceLoss(distance_function=cosine, swap=swap,
                                                        reduction=reduction)(*t),
            lambda *t: torch.nn.TripletMarginWithDistanceLoss(
                distance_function=torch_cosine, swap=swap, reduction=reduction)(*t),
            a, p, n)  # fmt: skip


def test_triplet_margin_with_distance_loss_refuses_bad_arguments():
    a = tc.Tensor(normal(3, 2))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(TypeError, match="distance_function"):
        nn.TripletMarginWithDistanceLoss(distance_function=3)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_with_distance_loss(a, a, tc.Tensor(normal(2)))
