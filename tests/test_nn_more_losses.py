"""tricycle.nn's further losses, similarities and distances (tricycle/nn/more_losses.py):
BCELoss, MarginRankingLoss, CosineEmbeddingLoss, cosine_similarity, normalize,
pairwise_distance and their layers. Forward and every input's gradient against PyTorch in
float64 (every reduction, weights, the clamped logs, kinks, broadcasting, zero vectors) and
in float32 on every backend, against finite differences over random shapes, and the errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads
from tricycle import backend
from tricycle.nn.more_losses import vector_norm
from tricycle.tensor import Tensor

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
reductions = st.sampled_from(["mean", "sum", "none"])


def torch_tensor(array, grad=False):
    torch = pytest.importorskip("torch")
    return torch.tensor(array, requires_grad=grad)


def compare(ours_fn, theirs_fn, inputs, rtol=1e-12, atol=1e-14, grads=None):
    """Both functions on the same float64 inputs, one output gradient back through each:
    outputs and the gradients of the inputs ``grads`` (every one by default) agree."""
    ours_in = [Tensor(a, requires_grad=True) for a in inputs]
    theirs_in = [torch_tensor(a, grad=True) for a in inputs]
    out, expected = ours_fn(*ours_in), theirs_fn(*theirs_in)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=atol)
    dout = np.random.default_rng(99).normal(size=out.shape)
    out.backward(dout)
    expected.backward(torch_tensor(dout))
    for i in range(len(inputs)) if grads is None else grads:
        np.testing.assert_allclose(
            ours_in[i].grad.array, theirs_in[i].grad.numpy(), rtol=rtol, atol=atol
        )
    return ours_in


# ====================================================================== BCELoss
WEIGHTS = {
    "none": None,
    "per class": np.array([0.5, 2.0, 1.0, 3.0]),
    "full": np.random.default_rng(0).uniform(0.1, 2, size=(3, 4)),
    "number": 2.5,
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", list(WEIGHTS), ids=list(WEIGHTS))
def test_bce_matches_torch(reduction, weight):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    probs, targets = rng.uniform(0.01, 0.99, size=(3, 4)), rng.uniform(size=(3, 4))
    targets[0, :2] = [0.0, 1.0]
    w = WEIGHTS[weight]
    theirs_w = None if w is None else torch_tensor(np.broadcast_to(w, (3, 4)).copy())
    for ours in (nn.BCELoss(w, reduction=reduction),
                 lambda x, t: F.binary_cross_entropy(x, t, w, reduction=reduction)):  # fmt: skip
        compare(
            ours,
            lambda x, t: torch.nn.functional.binary_cross_entropy(
                x, t, weight=theirs_w, reduction=reduction
            ),
            [probs, targets],
        )


def test_bce_clamps_its_logs_at_minus_100_as_torch():
    """At 0, 1 and below e^-100 the loss and the input's gradient are PyTorch's (its floor of
    x (1 - x) is 1e-12 rounded to float32, hence the tolerance there); the target's gradient
    is that of the clamped logs, finite where PyTorch's unclamped logit is not."""
    torch = pytest.importorskip("torch")
    probs = np.array([0.0, 1.0, 1e-50, 1.0 - 1e-16, 0.3, 0.0, 1.0])
    targets = np.array([0.2, 0.7, 0.9, 0.5, 1.0, 0.0, 1.0])
    ours_in = compare(
        nn.BCELoss(reduction="none"),
        lambda x, t: torch.nn.functional.binary_cross_entropy(x, t, reduction="none"),
        [probs, targets],
        rtol=1e-8,
        grads=[0],
    )
    loss = nn.BCELoss(reduction="none")(Tensor(probs), targets).array
    np.testing.assert_allclose(loss[:3], [20.0, 30.0, 90.0], rtol=1e-12)  # 100 times the miss
    assert loss[5] == loss[6] == 0  # sure and right
    dout = np.random.default_rng(99).normal(size=7)
    d_target = ours_in[1].grad.array / dout
    np.testing.assert_allclose(d_target[:3], [100.0, -100.0, 100.0], rtol=1e-12)
    assert np.isfinite(ours_in[1].grad.array).all()


@given(shape=shapes, reduction=reductions, weighted=st.booleans())
def test_bce_gradients_match_finite_differences(shape, reduction, weighted):
    rng = np.random.default_rng(2)
    weight = rng.uniform(0.5, 2, size=shape[-1]) if weighted else None
    loss_fn = nn.BCELoss(weight, reduction=reduction)
    check_grads(loss_fn, rng.uniform(0.05, 0.95, size=shape), rng.uniform(size=shape))


# ====================================================================== ranking, embeddings
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("margin", [0.0, 0.5, -0.3])
def test_margin_ranking_matches_torch_at_its_kink_too(margin, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x1, x2 = rng.normal(size=8), rng.normal(size=8)
    x2[:2] = x1[:2] - margin  # hinge exactly 0 for y = 1: the gradient passes, as PyTorch's
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 2.0])
    ours_fns = [
        nn.MarginRankingLoss(margin, reduction=reduction),
        lambda a, b, t: F.margin_ranking_loss(a, b, t, margin, reduction=reduction),
    ]
    for ours in ours_fns:
        compare(
            ours,
            lambda a, b, t: torch.nn.functional.margin_ranking_loss(
                a, b, t, margin=margin, reduction=reduction
            ),
            [x1, x2, y],
        )


@given(shape=shapes, reduction=reductions)
def test_margin_ranking_gradients_match_finite_differences(shape, reduction):
    rng = np.random.default_rng(4)
    x1 = rng.normal(size=shape)
    x2 = x1 + rng.uniform(0.2, 1, size=shape) * rng.choice([-1, 1], size=shape)  # off the kink
    y = rng.choice([-1.0, 1.0], size=shape)
    check_grads(nn.MarginRankingLoss(0.1, reduction=reduction), x1, x2, y)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cosine_embedding_loss_takes_torchs_order(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    labels = np.array([1, -1, -1, 1, -1])
    ours_fns = [
        lambda a, b: nn.CosineEmbeddingLoss(0.2, reduction=reduction)(a, b, labels),
        lambda a, b: F.cosine_embedding_loss(a, b, labels, 0.2, reduction=reduction),
    ]
    for ours in ours_fns:
        compare(
            ours,
            lambda a, b: torch.nn.functional.cosine_embedding_loss(
                a, b, torch.tensor(labels), margin=0.2, reduction=reduction
            ),
            [rng.normal(size=(5, 3)), rng.normal(size=(5, 3))],
        )


# ====================================================================== similarities, distances
@pytest.mark.parametrize("shapes_dim", [((4, 3), (4, 3), 1), ((4, 1, 3), (5, 3), -1),
                                        ((4, 1, 3), (5, 3), 1), ((3,), (3,), 0),
                                        ((2, 3, 4), (2, 3, 4), 1)])  # fmt: skip
def test_cosine_similarity_matches_torch(shapes_dim):
    torch = pytest.importorskip("torch")
    (shape1, shape2, dim), rng = shapes_dim, np.random.default_rng(6)
    x1, x2 = rng.normal(size=shape1), rng.normal(size=shape2)
    x1.reshape(-1)[: shape1[-1]] = 0.0  # a zero vector where dim is the last axis: cosine 0
    for ours in (nn.CosineSimilarity(dim), lambda a, b: F.cosine_similarity(a, b, dim)):
        compare(ours, lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim), [x1, x2])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5])
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_normalize_matches_torch(p, dim):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).normal(size=(3, 4))
    x[1] = 0.0  # a zero row: its norm is floored at eps
    x[2, 0] = 0.0
    compare(
        lambda a: F.normalize(a, p, dim),
        lambda a: torch.nn.functional.normalize(a, p, dim),
        [x],
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("eps", [1e-6, 0.0])
def test_pairwise_distance_matches_torch(p, keepdim, eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x1, x2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    x2[0] = x1[0]  # equal rows: distance eps * sqrt(3), or 0 with a zero gradient
    for ours in (nn.PairwiseDistance(p, eps, keepdim),
                 lambda a, b: F.pairwise_distance(a, b, p, eps, keepdim)):  # fmt: skip
        compare(
            ours,
            lambda a, b: torch.nn.functional.pairwise_distance(a, b, p, eps, keepdim),
            [x1, x2],
        )
    compare(  # broadcast: every row against one vector
        lambda a, b: F.pairwise_distance(a, b, p),
        lambda a, b: torch.nn.functional.pairwise_distance(a, b, p),
        [x1, x2[0]],
    )


@given(shape=shapes, p=st.sampled_from([1.0, 2.0, 3.0]), case=st.integers(0, 3))
def test_similarities_and_distances_match_finite_differences(shape, p, case):
    rng = np.random.default_rng(9)
    x1 = rng.normal(size=shape)
    x2 = x1 + rng.uniform(0.3, 1, size=shape) * rng.choice([-1, 1], size=shape)  # no zero term
    dim = len(shape) - 1
    functions = [
        lambda a, b: F.cosine_similarity(a, b, dim),
        lambda a, b: F.pairwise_distance(a, b, p, keepdim=True),
        lambda a, b: F.normalize(a - b, p, dim),
        lambda a, b: vector_norm(a - b, p, dim),
    ]
    check_grads(functions[case], x1, x2)


def test_losses_and_distances_in_float32_on_every_backend(xp):
    """The host's values and gradients on ``xp``'s device (cupy on a GPU), in float32; on the
    host, torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    a, b = rng.uniform(0.1, 0.9, size=(4, 3)), rng.uniform(size=(4, 3))
    weight = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    signs = np.sign(b - 0.5).astype(np.float32)
    tF = torch.nn.functional
    cases = [  # (ours, torch's), each of (a, b): the gradient of a is compared
        (nn.BCELoss(weight, reduction="sum"), lambda x, t: tF.binary_cross_entropy(
            x, t, torch.tensor(weight), reduction="sum")),
        (lambda x, y: nn.MarginRankingLoss(0.1)(x, y, signs),
         lambda x, y: tF.margin_ranking_loss(x, y, torch.tensor(signs), 0.1)),
        (nn.CosineSimilarity(), tF.cosine_similarity),
        (nn.PairwiseDistance(1.0), lambda x, y: tF.pairwise_distance(x, y, 1.0)),
        (lambda x, y: F.normalize(x - y), lambda x, y: tF.normalize(x - y)),
    ]  # fmt: skip
    host = backend.to_host_array
    for ours, theirs in cases:
        results = []
        for module in (np, xp):
            x = Tensor(module.asarray(a.astype(np.float32)), requires_grad=True)
            out = ours(x, Tensor(module.asarray(b.astype(np.float32))))
            out.sum().backward()
            assert out.dtype == x.grad.dtype == np.float32
            results.append([host(out.array), host(x.grad.array)])
        x = torch_tensor(a.astype(np.float32), grad=True)
        expected = theirs(x, torch_tensor(b.astype(np.float32)))
        expected.sum().backward()
        results.append([expected.detach().numpy(), x.grad.numpy()])
        for ours_host, ours_device, theirs_host in zip(*results):
            np.testing.assert_allclose(ours_device, ours_host, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(ours_host, theirs_host, rtol=1e-5, atol=1e-6)


# ====================================================================== errors
def test_bce_refuses_what_is_not_a_probability():
    target = np.full(3, 0.5)
    for bad, shown in [(1.5, r"\[1.5\]"), (-0.1, r"\[-0.1\]"), (math.nan, r"\[nan\]")]:
        with pytest.raises(ValueError, match=rf"^BCELoss: input must be probabilities in "
                           rf"\[0, 1\], got {shown}; apply a sigmoid first"):  # fmt: skip
            nn.BCELoss()(Tensor(np.array([0.5, bad, 0.2])), target)
    with pytest.raises(ValueError, match=r"^BCELoss: input must be probabilities"):
        F.binary_cross_entropy(Tensor(np.array([2.0, 3.0, 2.0])), target)


def test_losses_refuse_bad_shapes_and_arguments_by_name():
    x = Tensor(np.full((2, 3), 0.5))
    with pytest.raises(ValueError, match=r"^BCELoss: input \(2, 3\), target \(3,\) must have "
                       r"the same shape$"):  # fmt: skip
        nn.BCELoss()(x, np.full(3, 0.5))
    with pytest.raises(ValueError, match=r"^BCELoss: weight of shape \(4,\) must broadcast to "
                       r"the input's shape \(2, 3\)$"):  # fmt: skip
        nn.BCELoss(np.ones(4))(x, x.array)
    with pytest.raises(TypeError, match=r"^BCELoss: weight must be None, a number or an array"):
        nn.BCELoss("heavy")
    with pytest.raises(ValueError, match=r"^BCELoss: reduction must be one of 'mean', 'sum', "
                       r"'none', got 'batchmean'$"):  # fmt: skip
        nn.BCELoss(reduction="batchmean")
    with pytest.raises(TypeError):  # PyTorch's second place is the deprecated size_average
        nn.BCELoss(None, "sum")
    with pytest.raises(TypeError, match=r"^BCELoss \(input\): needs a floating tensor"):
        nn.BCELoss()(Tensor(np.zeros(3, dtype=int)), np.zeros(3))
    with pytest.raises(ValueError, match=r"^BCELoss: empty input$"):
        nn.BCELoss()(Tensor(np.zeros((0, 2))), np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"^MarginRankingLoss: input \(3,\), input2 \(3,\), "
                       r"target \(2,\) must have the same shape$"):  # fmt: skip
        nn.MarginRankingLoss()(Tensor(np.zeros(3)), np.zeros(3), np.ones(2))
    with pytest.raises(TypeError, match=r"^MarginRankingLoss: margin must be a finite number"):
        nn.MarginRankingLoss("1")
    with pytest.raises(ValueError, match=r"^CosineEmbeddingLoss: margin must be a finite number "
                       r"in \[-1, 1\], got 2$"):  # fmt: skip
        nn.CosineEmbeddingLoss(2)


def test_distances_refuse_bad_arguments_by_name():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^cosine_similarity: dim must be an integer in "
                       r"\[-2, 2\) \(the input's shape is \(2, 3\)\), got 2$"):  # fmt: skip
        F.cosine_similarity(x, x, dim=2)
    with pytest.raises(ValueError, match=r"^cosine_similarity: x1 \(2, 3\) and x2 \(4,\) must "
                       r"broadcast together$"):  # fmt: skip
        F.cosine_similarity(x, np.ones(4))
    with pytest.raises(ValueError, match=r"^CosineSimilarity: eps must be a finite number > 0"):
        nn.CosineSimilarity(eps=0)
    with pytest.raises(TypeError, match=r"^CosineSimilarity: dim must be an integer, got 1.0$"):
        nn.CosineSimilarity(dim=1.0)
    with pytest.raises(ValueError, match=r"^PairwiseDistance: p must be a finite number >= 1, "
                       r"got inf$"):  # fmt: skip
        nn.PairwiseDistance(p=math.inf)
    with pytest.raises(ValueError, match=r"^pairwise_distance: p must be a finite number >= 1, "
                       r"got 0.5$"):  # fmt: skip
        F.pairwise_distance(x, x, p=0.5)
    with pytest.raises(TypeError, match=r"^PairwiseDistance: keepdim must be True or False"):
        nn.PairwiseDistance(keepdim=1)
    with pytest.raises(ValueError, match=r"^pairwise_distance: x1 and x2 need an axis"):
        F.pairwise_distance(Tensor(np.array(1.0)), np.array(2.0))
    with pytest.raises(ValueError, match=r"^normalize: dim must be an integer in \[-2, 2\)"):
        F.normalize(x, dim=3)
    with pytest.raises(ValueError, match=r"^normalize: eps must be a finite number > 0"):
        F.normalize(x, eps=-1.0)


def test_every_new_name_is_exported():
    names = ["BCELoss", "CosineEmbeddingLoss", "CosineSimilarity", "MarginRankingLoss",
             "PairwiseDistance"]  # fmt: skip
    functions = ["binary_cross_entropy", "cosine_embedding_loss", "cosine_similarity",
                 "margin_ranking_loss", "normalize", "pairwise_distance"]  # fmt: skip
    assert set(names) <= set(nn.__all__) and all(hasattr(nn, name) for name in names)
    assert set(functions) <= set(F.__all__) and all(callable(getattr(F, f)) for f in functions)
