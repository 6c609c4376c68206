"""torch's remaining common losses (tricycle/nn/margin_losses.py, likelihood_losses.py, ctc.py):
TripletMarginLoss, HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss,
MultiMarginLoss, MultiLabelMarginLoss, PoissonNLLLoss, GaussianNLLLoss and CTCLoss, as layers
and as ``F.`` functions. Forward and every input's gradient against PyTorch in float64 (every
reduction, weights, kinks, variance shapes; CTC through a log-softmax, where PyTorch's
gradient and the true one agree), against finite differences over random shapes (CTC: random
lengths, repeated labels, empty targets), in float32 on every backend, and the errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads
from tests.test_nn_more_losses import compare, torch_tensor  # (NaN equals NaN there)
from tricycle import backend
from tricycle.functions import LogSoftmax
from tricycle.gradcheck import gradcheck
from tricycle.tensor import Tensor

REDUCTIONS = ["mean", "sum", "none"]




# ====================================================================== margin losses
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("p", [2.0, 1.0])
@pytest.mark.parametrize("shape", [(5, 3), (3,)])
def test_triplet_margin_loss_matches_torch(reduction, swap, p, shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    anchor, positive, negative = rng.normal(size=(3, *shape))
    kw = dict(margin=0.8, p=p, swap=swap, reduction=reduction)
    for ours in (nn.TripletMarginLoss(0.8, p, 1e-6, swap, reduction=reduction),
                 lambda a, b, c: F.triplet_margin_loss(a, b, c, **kw)):  # fmt: skip
        compare(ours, lambda a, b, c: torch.nn.functional.triplet_margin_loss(a, b, c, **kw),
                [anchor, positive, negative])  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss_matches_torch_at_its_kink_too(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 3))
    x[0, 0] = 0.5  # margin - x = 0 for y = -1: the gradient passes, as PyTorch's clamp
    y = rng.choice([-1.0, 1.0], size=(4, 3))
    y[0, 0], y[1, 1] = -1.0, 0.0  # another label adds both terms, as PyTorch's
    for ours in (lambda a: nn.HingeEmbeddingLoss(0.5, reduction=reduction)(a, y),
                 lambda a: F.hinge_embedding_loss(a, y, 0.5, reduction=reduction)):  # fmt: skip
        compare(ours, lambda a: torch.nn.functional.hinge_embedding_loss(
            a, torch_tensor(y), 0.5, reduction=reduction), [x])  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss_matches_torch_far_from_zero_too(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4)) * 3
    x[0, :2] = [40.0, -40.0]  # e^-40 and e^40: the stable form
    y = rng.choice([-1.0, 1.0], size=(3, 4))
    for ours in (lambda a: nn.SoftMarginLoss(reduction=reduction)(a, y),
                 lambda a: F.soft_margin_loss(a, y, reduction=reduction)):  # fmt: skip
        compare(ours, lambda a: torch.nn.functional.soft_margin_loss(
            a, torch_tensor(y), reduction=reduction), [x])  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, "per class", 2.5])
@pytest.mark.parametrize("shape", [(3, 4), (4,)])
def test_multilabel_soft_margin_loss_matches_torch(reduction, weight, shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w = np.array([0.5, 2.0, 1.0, 3.0]) if weight == "per class" else weight
    theirs_w = None if w is None else torch_tensor(np.broadcast_to(w, (4,)).copy())
    ours_fns = [
        nn.MultiLabelSoftMarginLoss(w, reduction=reduction),
        lambda a, t: F.multilabel_soft_margin_loss(a, t, w, reduction=reduction),
    ]
    for ours in ours_fns:
        compare(ours, lambda a, t: torch.nn.functional.multilabel_soft_margin_loss(
            a, t, theirs_w, reduction=reduction), [rng.normal(size=shape),
                                                   rng.uniform(size=shape)])  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("batched", [True, False])
def test_multi_margin_loss_matches_torch(reduction, p, weighted, batched):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 5) if batched else 5)
    y = rng.integers(0, 5, size=6) if batched else np.array(2)
    w = rng.uniform(0.5, 2, size=5) if weighted else None
    theirs_w = None if w is None else torch_tensor(w)
    for ours in (lambda a: nn.MultiMarginLoss(p, 0.7, w, reduction=reduction)(a, y),
                 lambda a: F.multi_margin_loss(a, y, p, 0.7, w, reduction=reduction)):  # fmt: skip
        compare(ours, lambda a: torch.nn.functional.multi_margin_loss(
            a, torch.tensor(y), p, 0.7, theirs_w, reduction=reduction), [x])  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).normal(size=(5, 4))
    targets = np.array([
        [3, 0, -1, 1],  # targets 3 and 0; what follows the -1 is ignored
        [1, 1, 2, -1],  # a repeated target counts twice
        [0, 1, 2, 3],  # every class a target: no pairs, loss 0
        [-1, 2, 2, 2],  # no target
        [2, -1, 0, 0],
    ])  # fmt: skip
    for ours in (lambda a: nn.MultiLabelMarginLoss(reduction=reduction)(a, targets),
                 lambda a: F.multilabel_margin_loss(a, targets, reduction=reduction)):  # fmt: skip
        compare(ours, lambda a: torch.nn.functional.multilabel_margin_loss(
            a, torch.tensor(targets), reduction=reduction), [x])  # fmt: skip
    compare(lambda a: F.multilabel_margin_loss(a, targets[0], reduction=reduction),  # unbatched
            lambda a: torch.nn.functional.multilabel_margin_loss(
                a, torch.tensor(targets[0]), reduction=reduction), [x[0]])  # fmt: skip


# ====================================================================== likelihoods
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss_matches_torch(reduction, log_input, full):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = rng.normal(size=(3, 4)) if log_input else rng.uniform(0.1, 3, size=(3, 4))
    counts = rng.poisson(2.0, size=(3, 4)) + np.array([0.5, 1.0, 0.0, 0.0])  # 1: Stirling's edge
    counts[counts == 0] = 0.25
    kw = dict(log_input=log_input, full=full, reduction=reduction)
    for ours in (nn.PoissonNLLLoss(log_input, full, reduction=reduction),
                 lambda a, t: F.poisson_nll_loss(a, t, **kw)):  # fmt: skip
        compare(ours, lambda a, t: torch.nn.functional.poisson_nll_loss(a, t, **kw),
                [x, counts], rtol=1e-11)  # fmt: skip


def test_poisson_nll_loss_of_zero_counts_has_a_finite_target_gradient():
    """At y = 0 with ``full`` PyTorch's target gradient is NaN (0 log 0 differentiated);
    here it is that of the rest of the loss, -x; the loss and input gradient are PyTorch's."""
    torch = pytest.importorskip("torch")
    x, counts = np.array([0.3, -1.2, 2.0]), np.zeros(3)
    ours = compare(
        lambda a, t: F.poisson_nll_loss(a, t, full=True, reduction="sum"),
        lambda a, t: torch.nn.functional.poisson_nll_loss(a, t, full=True, reduction="sum"),
        [x, counts],
        grads=[0],
    )
    dout = np.random.default_rng(99).normal(size=())
    np.testing.assert_allclose(ours[1].grad.array, -x * dout, rtol=1e-12)


VARIANCES = {"per value": (4, 3), "per row": (4,), "shared by a row": (4, 1),
             "shared by a column": (1, 3), "number": None}  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("variance", list(VARIANCES), ids=list(VARIANCES))
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss_matches_torch(reduction, variance, full):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    shape = VARIANCES[variance]
    if shape is None:  # a float, as torch's: a constant
        loss = F.gaussian_nll_loss(Tensor(x), y, 0.7, full, reduction=reduction)
        expected = torch.nn.functional.gaussian_nll_loss(
            torch_tensor(x), torch_tensor(y), 0.7, full, reduction=reduction
        )
        np.testing.assert_allclose(loss.array, expected.numpy(), rtol=1e-12)
        return
    var = rng.uniform(0.2, 2, size=shape)
    var.reshape(-1)[:2] = [0.0, 1e-9]  # below eps: floored, the gradient passing through
    kw = dict(full=full, reduction=reduction)
    for ours in (lambda a, t, v: nn.GaussianNLLLoss(**kw)(a, t, v),
                 lambda a, t, v: F.gaussian_nll_loss(a, t, v, **kw)):  # fmt: skip
        compare(ours, lambda a, t, v: torch.nn.functional.gaussian_nll_loss(a, t, v, **kw),
                [x, y, var], rtol=1e-10, atol=1e-12)  # fmt: skip
    compare(lambda a, t, v: F.gaussian_nll_loss(a, t, v, **kw),  # a target broadcast to x
            lambda a, t, v: torch.nn.functional.gaussian_nll_loss(a, t, v, **kw),
            [x, y[0], var], rtol=1e-10, atol=1e-12)  # fmt: skip


# ====================================================================== CTC
def ctc_case(rng, layout: str = "padded"):
    """log-probabilities' logits (T, N, C) = (7, 5, 5) and targets with repeated labels, an
    empty target, a sequence shorter than T and one too short for its labels (loss inf)."""
    logits = rng.normal(size=(7, 5, 5))
    padded = np.array([[1, 1, 3, 0], [2, 3, 1, 4], [3, 3, 3, 3], [4, 2, 2, 1], [1, 2, 3, 4]])
    target_lengths = np.array([3, 4, 0, 3, 4])
    input_lengths = np.array([7, 5, 4, 6, 3])  # the last: 3 frames for 4 labels
    targets = padded if layout == "padded" else np.concatenate(
        [row[:n] for row, n in zip(padded, target_lengths)])  # fmt: skip
    return logits, targets, input_lengths, target_lengths


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_ctc_loss_matches_torch_through_log_softmax(reduction, zero_infinity, layout):
    """Through a log-softmax the gradients of the logits agree, NaN where PyTorch's is (an
    impossible alignment, unless zero_infinity)."""
    torch = pytest.importorskip("torch")
    logits, targets, input_lengths, target_lengths = ctc_case(np.random.default_rng(8), layout)
    args = (input_lengths, target_lengths)
    kw = dict(reduction=reduction, zero_infinity=zero_infinity)
    for ours in (lambda z: nn.CTCLoss(0, **kw)(LogSoftmax()(z), targets, *args),
                 lambda z: F.ctc_loss(LogSoftmax()(z), targets, *args, **kw)):  # fmt: skip
        compare(ours, lambda z: torch.nn.functional.ctc_loss(
            z.log_softmax(-1), torch.tensor(targets), torch.tensor(input_lengths),
            torch.tensor(target_lengths), **kw), [logits], rtol=1e-10, atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("blank", [0, 4])
def test_ctc_loss_takes_another_blank_and_unbatched_input(blank):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    logits = rng.normal(size=(6, 5))
    labels = np.array([1, 1, 3]) if blank == 4 else np.array([4, 2, 2])
    tF = torch.nn.functional
    compare(lambda z: F.ctc_loss(LogSoftmax()(z), labels, 6, 3, blank, "none"),
            lambda z: tF.ctc_loss(z.log_softmax(-1), torch.tensor(labels), torch.tensor(6),
                                  torch.tensor(3), blank, "none"),
            [logits], rtol=1e-10, atol=1e-12)  # fmt: skip
    assert F.ctc_loss(Tensor(logits), labels, 6, 3, blank, "none").shape == ()


def test_ctc_loss_zero_infinity_and_no_frames():
    """An impossible alignment: loss inf, NaN gradients on its frames (PyTorch's), 0 and 0
    with zero_infinity; no frames: loss 0 for the empty target, inf for any other."""
    rng = np.random.default_rng(10)
    log_probs = Tensor(rng.normal(size=(4, 3, 3)), requires_grad=True)
    targets, input_lengths, target_lengths = [1, 1, 2], [2, 0, 0], [2, 0, 1]
    loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none")
    assert loss.array[0] == math.inf and loss.array[1] == 0 and loss.array[2] == math.inf
    loss.sum().backward()
    grad = log_probs.grad.array
    assert np.isnan(grad[:2, 0]).all() and (grad[2:, 0] == 0).all() and (grad[:, 1:] == 0).all()
    log_probs.grad = None
    loss = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="sum",
                      zero_infinity=True)  # fmt: skip
    assert loss.array == 0
    loss.backward()
    assert (log_probs.grad.array == 0).all()


@st.composite
def ctc_problems(draw):
    """(log_probs (T, N, C) unnormalised, targets, input_lengths, target_lengths, blank,
    reduction): every alignment possible (enough frames for the labels and the blanks
    between repeats), targets of length 0 to 3 drawn from two or three labels (repeats)."""
    n_classes, batch = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    blank = draw(st.integers(0, n_classes - 1))
    labels = [c for c in range(n_classes) if c != blank]
    rows = [draw(st.lists(st.sampled_from(labels), max_size=3)) for _ in range(batch)]
    needed = [len(r) + sum(a == b for a, b in zip(r, r[1:])) for r in rows]
    frames = max(needed + [1]) + draw(st.integers(0, 2))
    input_lengths = [draw(st.integers(n, frames)) for n in needed]
    log_probs = np.random.default_rng(draw(st.integers(0, 99))).normal(size=(frames, batch,
                                                                            n_classes))  # fmt: skip
    targets = np.array([c for r in rows for c in r], dtype=np.int64)
    if draw(st.booleans()):  # padded with a label past each row's end
        targets = np.array([r + [labels[0]] * (3 - len(r)) for r in rows], dtype=np.int64)
    reduction = draw(st.sampled_from(REDUCTIONS))
    return log_probs, targets, input_lengths, [len(r) for r in rows], blank, reduction


@given(problem=ctc_problems())
def test_ctc_gradient_matches_finite_differences(problem):
    """The derivative with respect to the log-probabilities themselves (unnormalised here,
    where PyTorch's gradient would differ by exp(log_probs))."""
    log_probs, targets, input_lengths, target_lengths, blank, reduction = problem
    gradcheck(
        lambda lp: F.ctc_loss(lp, targets, input_lengths, target_lengths, blank, reduction),
        log_probs,
    )


# ====================================================================== finite differences
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=2).map(tuple),
       reduction=st.sampled_from(REDUCTIONS), case=st.integers(0, 8))  # fmt: skip
def test_fused_losses_match_finite_differences(shape, reduction, case):
    rng = np.random.default_rng(11)
    x = rng.normal(size=shape) + 0.05  # away from the kinks at 0
    signs = rng.choice([-1.0, 1.0], size=shape)
    ids = rng.integers(0, shape[-1], size=shape[:-1])
    listed = np.where(rng.uniform(size=shape) < 0.7, rng.integers(0, shape[-1], size=shape), -1)
    cases = [
        (lambda a: F.hinge_embedding_loss(a, signs, 0.3, reduction=reduction), [x]),
        (lambda a: F.soft_margin_loss(a, signs, reduction=reduction), [x]),
        (lambda a, t: F.multilabel_soft_margin_loss(a, t, reduction=reduction),
         [x, rng.uniform(size=shape)]),
        (lambda a: F.multi_margin_loss(a, ids, 1, 0.6, reduction=reduction), [x]),
        (lambda a: F.multi_margin_loss(a, ids, 2, 0.6, reduction=reduction), [x]),
        (lambda a: F.multilabel_margin_loss(a, listed, reduction=reduction), [x]),
        (lambda a, t: F.poisson_nll_loss(a, t, full=True, reduction=reduction),
         [x, rng.uniform(0.1, 3, size=shape)]),
        (lambda a, t: F.poisson_nll_loss(a, t, False, True, reduction=reduction),
         [np.abs(x) + 0.1, rng.uniform(0.1, 3, size=shape)]),
        (lambda a, t, v: F.gaussian_nll_loss(a, t, v, reduction=reduction),
         [x, rng.normal(size=shape), rng.uniform(0.2, 2, size=shape)]),
    ]  # fmt: skip
    function, inputs = cases[case]
    check_grads(function, *inputs)


# ====================================================================== backends
def test_losses_in_float32_on_every_backend(xp):
    """Values and input gradients in float32 on ``xp``'s device (cupy on a GPU) are the
    host's in float64, to float32's precision."""
    rng = np.random.default_rng(12)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    signs, ids = np.sign(y), np.array([0, 2, 1, 2])
    logits = rng.normal(size=(5, 2, 3))
    cases = [
        (lambda a, b, c: F.triplet_margin_loss(a, b, c, swap=True), [x, y, x[::-1]]),
        (lambda a: F.hinge_embedding_loss(a, signs), [x]),
        (lambda a: F.soft_margin_loss(a, signs), [x]),
        (lambda a: F.multilabel_soft_margin_loss(a, np.abs(signs), [1.0, 2.0, 0.5]), [x]),
        (lambda a: F.multi_margin_loss(a, ids, 2, weight=[1.0, 2.0, 0.5]), [x]),
        (lambda a: F.multilabel_margin_loss(a, np.array([[2, -1, 0]] * 4)), [x]),
        (lambda a: F.poisson_nll_loss(a, np.abs(y) * 3, full=True), [x]),
        (lambda a, v: F.gaussian_nll_loss(a, y, v), [x, np.abs(y[:, 0]) + 0.1]),
        (lambda z: F.ctc_loss(LogSoftmax()(z), [[1, 1], [2, 0]], [5, 4], [2, 1]), [logits]),
    ]  # fmt: skip
    host = backend.to_host_array
    for function, arrays in cases:
        results = []
        for module, dtype in ((np, np.float64), (xp, np.float32)):
            tensors = [Tensor(module.asarray(a.astype(dtype)), requires_grad=True) for a in arrays]
            out = function(*tensors)
            out.backward()
            assert out.dtype == tensors[0].grad.dtype == dtype
            results.append([host(out.array)] + [host(t.grad.array) for t in tensors])
        for ours_device, ours_host in zip(*results[::-1]):
            np.testing.assert_allclose(ours_device, ours_host, rtol=1e-4, atol=1e-5)


# ====================================================================== errors
def test_margin_losses_refuse_bad_input_by_name():
    x = Tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"^TripletMarginLoss: anchor, positive and negative "
                       r"must have the same number of axes .* got anchor \(2, 3\), positive "
                       r"\(3,\) and negative \(2, 3\)$"):  # fmt: skip
        F.triplet_margin_loss(x, np.zeros(3), x)
    with pytest.raises(ValueError, match=r"^TripletMarginLoss: p must be a finite number >= 1"):
        nn.TripletMarginLoss(p=0.5)
    with pytest.raises(ValueError, match=r"^HingeEmbeddingLoss: input \(2, 3\), target \(3,\) "
                       r"must have the same shape$"):  # fmt: skip
        F.hinge_embedding_loss(x, np.ones(3))
    with pytest.raises(ValueError, match=r"^MultiMarginLoss: p must be one of 1, 2, got 3$"):
        nn.MultiMarginLoss(3)
    with pytest.raises(TypeError, match=r"^MultiMarginLoss: target must be integer class ids, "
                       r"got dtype float64$"):  # fmt: skip
        F.multi_margin_loss(x, np.zeros(2))
    with pytest.raises(ValueError, match=r"^MultiMarginLoss: input \(2, 3\) needs target class "
                       r"ids of shape \(2,\), got \(3,\)$"):  # fmt: skip
        F.multi_margin_loss(x, np.zeros(3, dtype=int))
    with pytest.raises(IndexError, match=r"^MultiMarginLoss: target class ids must lie in "
                       r"\[0, 3\) for an input of 3 classes, got target class ids in "
                       r"\[0, 3\]$"):  # fmt: skip
        F.multi_margin_loss(x, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"^MultiMarginLoss: weight must be one weight per "
                       r"class, \(3,\), got \(2,\)$"):  # fmt: skip
        F.multi_margin_loss(x, np.array([0, 1]), weight=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"^MultiMarginLoss: expected a non-empty input "
                       r"\(N, C\) or \(C,\), got \(2, 3, 1\)$"):  # fmt: skip
        F.multi_margin_loss(Tensor(np.zeros((2, 3, 1))), np.zeros((2, 3), dtype=int))
    with pytest.raises(IndexError, match=r"^MultiLabelMarginLoss: target class ids must lie in "
                       r"\[0, 3\) or -1 \(ignored\)"):  # fmt: skip
        F.multilabel_margin_loss(x, np.array([[0, -2, 1], [1, -1, 0]]))
    with pytest.raises(ValueError, match=r"^MultiLabelSoftMarginLoss: weight of shape \(2,\) "
                       r"must broadcast to the input's shape \(2, 3\)$"):  # fmt: skip
        F.multilabel_soft_margin_loss(x, x.array, weight=[1.0, 2.0])
    with pytest.raises(TypeError):  # PyTorch's second place is the deprecated size_average
        nn.SoftMarginLoss(None)


def test_likelihood_losses_refuse_bad_input_by_name():
    x = Tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"^PoissonNLLLoss: input \(2, 3\), target \(2,\) "
                       r"must have the same shape$"):  # fmt: skip
        F.poisson_nll_loss(x, np.ones(2))
    with pytest.raises(TypeError):  # eps after the deprecated size_average: by name only
        nn.PoissonNLLLoss(True, False, None, 1e-8)
    with pytest.raises(ValueError, match=r"^PoissonNLLLoss: eps must be a finite number > 0"):
        F.poisson_nll_loss(x, x.array, eps=0)
    with pytest.raises(ValueError, match=r"^GaussianNLLLoss: var \(2, 2\) must be a number or "
                       r"have the input's shape \(2, 3\)"):  # fmt: skip
        F.gaussian_nll_loss(x, x.array, np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^GaussianNLLLoss: var has negative entries, "
                       r"min -1.0"):  # fmt: skip
        F.gaussian_nll_loss(x, x.array, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"^GaussianNLLLoss: target \(2, 4\) must have the "
                       r"input's shape \(2, 3\) or broadcast to it$"):  # fmt: skip
        F.gaussian_nll_loss(x, np.ones((2, 4)), 1.0)
    with pytest.raises(TypeError):  # torch's GaussianNLLLoss takes its settings by name
        nn.GaussianNLLLoss(True)


def test_ctc_loss_refuses_bad_input_by_name():
    lp = Tensor(np.zeros((4, 2, 3)))
    targets, lengths = np.array([[1, 2], [2, 2]]), [4, 3]
    with pytest.raises(ValueError, match=r"^CTCLoss: expected non-empty log_probs \(T, N, C\) "
                       r"or \(T, C\), got \(4,\)$"):  # fmt: skip
        F.ctc_loss(Tensor(np.zeros(4)), targets, lengths, [2, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: input_lengths must be >= 0 and <= 4 \(the "
                       r"frames of log_probs\), got \[5, 3\]$"):  # fmt: skip
        F.ctc_loss(lp, targets, [5, 3], [2, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: target_lengths must have one length per "
                       r"sequence, \(2,\), got shape \(3,\)$"):  # fmt: skip
        F.ctc_loss(lp, targets, lengths, [2, 2, 1])
    with pytest.raises(TypeError, match=r"^CTCLoss: input_lengths must be integers, got dtype "
                       r"float64$"):  # fmt: skip
        F.ctc_loss(lp, targets, [4.0, 3.0], [2, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: padded targets must be \(2, S\) with S >= "
                       r"the longest target length 3, got \(2, 2\)$"):  # fmt: skip
        F.ctc_loss(lp, targets, lengths, [3, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: targets must be padded \(2, S\) or "
                       r"concatenated \(sum\(target_lengths\),\) = \(4,\), "
                       r"got \(3,\)$"):  # fmt: skip
        F.ctc_loss(lp, np.array([1, 2, 2]), lengths, [2, 2])
    with pytest.raises(IndexError, match=r"^CTCLoss: targets must lie in \[0, 3\) for log_probs "
                       r"of 3 classes, got targets in \[1, 3\]$"):  # fmt: skip
        F.ctc_loss(lp, np.array([[1, 3], [2, 9]]), lengths, [2, 1])  # 9: padding, unread
    with pytest.raises(ValueError, match=r"^CTCLoss: targets must not contain the blank label 0"):
        F.ctc_loss(lp, np.array([[1, 0], [2, 2]]), lengths, [2, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: blank must be a class of log_probs "
                       r"\(4, 2, 3\), in \[0, 3\), got 3$"):  # fmt: skip
        F.ctc_loss(lp, targets, lengths, [2, 2], blank=3)
    with pytest.raises(TypeError, match=r"^CTCLoss \(log_probs\): needs a floating tensor"):
        F.ctc_loss(Tensor(np.zeros((4, 2, 3), dtype=int)), targets, lengths, [2, 2])
    with pytest.raises(ValueError, match=r"^CTCLoss: reduction must be one of 'mean', 'sum', "
                       r"'none', got 'batchmean'$"):  # fmt: skip
        nn.CTCLoss(reduction="batchmean")


def test_every_new_name_is_exported():
    names = ["CTCLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss",
             "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss",
             "TripletMarginLoss"]  # fmt: skip
    functions = ["ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "multi_margin_loss",
                 "multilabel_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
                 "soft_margin_loss", "triplet_margin_loss"]  # fmt: skip
    assert set(names) <= set(nn.__all__) and all(hasattr(nn, name) for name in names)
    assert set(functions) <= set(F.__all__) and all(callable(getattr(F, f)) for f in functions)
    assert repr(nn.CTCLoss(blank=2)) == "CTCLoss(blank=2, reduction='mean', zero_infinity=False)"
