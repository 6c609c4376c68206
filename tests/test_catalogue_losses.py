"""BCEWithLogits, NLL, L1, SmoothL1, Huber, KLDiv and CosineEmbedding: gradients against finite
differences over random shapes (size-1 axes) and every reduction, forward values and
gradients of both inputs against PyTorch's functions, and errors for bad inputs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend
from tricycle.functions import LogSoftmax
from tricycle.loss import (
    L1,
    NLL,
    BCEWithLogits,
    CosineEmbedding,
    CrossEntropy,
    Huber,
    KLDiv,
    SmoothL1,
)
from tricycle.tensor import Tensor

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
reductions = st.sampled_from(["mean", "sum", "none"])


def log_softmax(z, axis=-1):
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def elementwise_cases():
    """(name, our loss, torch's function of (input, target), targets, predictions)."""
    F = pytest.importorskip("torch").nn.functional
    rng = np.random.default_rng(0)
    normal = rng.normal(size=(3, 5, 2))
    shifted = normal + rng.normal(size=normal.shape) * 1.5
    probs = np.exp(log_softmax(rng.normal(size=(4, 6))))
    logq = log_softmax(rng.normal(size=(4, 6)))
    pos_weight = rng.uniform(0.5, 3.0, size=2)
    return [
        ("L1", L1, lambda r: lambda x, t: F.l1_loss(x, t, reduction=r), normal, shifted),
        ("SmoothL1 beta=0.7", lambda reduction: SmoothL1(0.7, reduction),
         lambda r: lambda x, t: F.smooth_l1_loss(x, t, reduction=r, beta=0.7), normal, shifted),
        ("SmoothL1 beta=0", lambda reduction: SmoothL1(0.0, reduction),
         lambda r: lambda x, t: F.smooth_l1_loss(x, t, reduction=r, beta=0.0), normal, shifted),
        ("Huber delta=0.6", lambda reduction: Huber(0.6, reduction),
         lambda r: lambda x, t: F.huber_loss(x, t, reduction=r, delta=0.6), normal, shifted),
        ("BCEWithLogits", BCEWithLogits,
         lambda r: lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=r),
         rng.uniform(size=normal.shape), 3 * normal),
        ("BCEWithLogits pos_weight", lambda reduction: BCEWithLogits(pos_weight, reduction),
         lambda r: lambda x, t: F.binary_cross_entropy_with_logits(
             x, t, reduction=r, pos_weight=torch_tensor(pos_weight)),
         rng.uniform(size=normal.shape), 3 * normal),
        ("KLDiv", KLDiv, lambda r: lambda x, t: F.kl_div(x, t, reduction=r), probs, logq),
        ("KLDiv log_target", lambda reduction: KLDiv(reduction, log_target=True),
         lambda r: lambda x, t: F.kl_div(x, t, reduction=r, log_target=True),
         log_softmax(rng.normal(size=(4, 6))), logq),
    ]  # fmt: skip


def torch_tensor(array, grad=False):
    torch = pytest.importorskip("torch")
    return torch.tensor(array, requires_grad=grad)


def assert_close(ours, theirs, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def compare(ours_fn, theirs_fn, inputs, rng_seed=1):
    """Run both on the same float64 inputs, back-propagate the same output gradient and
    compare outputs and every input's gradient."""
    ours_in = [Tensor(a, requires_grad=True) for a in inputs]
    theirs_in = [torch_tensor(a, grad=True) for a in inputs]
    out, expected = ours_fn(*ours_in), theirs_fn(*theirs_in)
    assert_close(out.array, expected)
    dout = np.random.default_rng(rng_seed).normal(size=out.shape)
    out.backward(dout)
    expected.backward(torch_tensor(dout))
    for ours_x, theirs_x in zip(ours_in, theirs_in):
        assert_close(ours_x.grad.array, theirs_x.grad)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # torch's note on KLDiv
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", range(8), ids=lambda i: f"case{i}")
def test_elementwise_losses_match_torch(case, reduction):
    name, make, torch_fn, targets, predictions = elementwise_cases()[case]
    loss_fn = make(reduction=reduction)
    compare(
        lambda t, p: loss_fn(t, p),
        lambda t, p: torch_fn(reduction)(p, t),  # PyTorch's order: (input, target)
        [targets, predictions],
    )


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_batchmean_matches_torch(log_target):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    target = log_softmax(rng.normal(size=(3, 2, 5)))
    target = target if log_target else np.exp(target)
    loss_fn = KLDiv("batchmean", log_target=log_target)
    compare(
        lambda t, p: loss_fn(t, p),
        lambda t, p: torch.nn.functional.kl_div(p, t, reduction="batchmean", log_target=log_target),
        [target, log_softmax(rng.normal(size=(3, 2, 5)))],
    )


def test_kl_div_with_zero_targets_counts_them_as_nothing():
    torch = pytest.importorskip("torch")
    target = np.array([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]])
    log_q = log_softmax(np.random.default_rng(3).normal(size=(2, 3)))
    t, q = Tensor(target, requires_grad=True), Tensor(log_q, requires_grad=True)
    loss = KLDiv("sum")(t, q)
    loss.backward()
    theirs_q = torch_tensor(log_q, grad=True)
    expected = torch.nn.functional.kl_div(theirs_q, torch_tensor(target), reduction="sum")
    expected.backward()
    assert_close(loss.array, expected)
    assert_close(q.grad.array, theirs_q.grad)
    assert np.all(t.grad.array[target == 0] == 0)


@given(shape=shapes, reduction=reductions, case=st.integers(0, 7))
def test_elementwise_loss_gradients_match_finite_differences(shape, reduction, case):
    rng = np.random.default_rng(4)
    name, make, _, _, _ = elementwise_cases()[case]
    loss_fn = make(reduction=reduction)
    predictions = rng.normal(size=shape) * 2
    if name.startswith("KLDiv"):
        predictions = log_softmax(predictions)
        targets = log_softmax(rng.normal(size=shape))
        targets = targets if "log_target" in name else np.exp(targets)
    elif name.startswith("BCE"):
        targets = rng.uniform(size=shape)
        if "pos_weight" in name:
            loss_fn = BCEWithLogits(rng.uniform(0.5, 3, size=shape[-1]), reduction)
    else:
        targets = predictions + rng.uniform(0.2, 1.5, size=shape) * rng.choice([-1, 1], shape)
    check_grads(lambda t, p: loss_fn(t, p), targets, predictions)


# ====================================================================== NLL


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [None, 2])
def test_nll_matches_torch(reduction, ignore_index):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    log_probs = log_softmax(rng.normal(size=(4, 3, 5)))
    labels = rng.integers(0, 5, size=(4, 3))
    labels[0, 0] = 2
    loss_fn = NLL(ignore_index=ignore_index, reduction=reduction)

    def theirs(lp):
        out = torch.nn.functional.nll_loss(
            lp.reshape(-1, 5),
            torch.tensor(labels).reshape(-1),
            ignore_index=-100 if ignore_index is None else ignore_index,
            reduction=reduction,
        )
        return out.reshape(4, 3) if reduction == "none" else out

    compare(lambda lp: loss_fn(Tensor(labels), lp), theirs, [log_probs])


@given(lead=st.lists(st.integers(1, 3), max_size=2).map(tuple), n_classes=st.integers(1, 4),
       reduction=reductions, ignore=st.booleans())  # fmt: skip
def test_nll_gradients_match_finite_differences(lead, n_classes, reduction, ignore):
    rng = np.random.default_rng(6)
    labels = rng.integers(0, n_classes, size=lead)
    if ignore and labels.size:
        labels.reshape(-1)[0] = -1
    loss_fn = NLL(ignore_index=-1 if ignore else None, reduction=reduction)
    log_probs = log_softmax(rng.normal(size=lead + (n_classes,)))
    check_grads(lambda lp: loss_fn(Tensor(labels), lp), log_probs)


def test_nll_of_log_softmax_is_cross_entropy_and_all_ignored_is_zero():
    rng = np.random.default_rng(7)
    logits, labels = rng.normal(size=(6, 4)), Tensor(rng.integers(0, 4, size=6))
    z = Tensor(logits, requires_grad=True)
    NLL()(labels, LogSoftmax()(z)).backward()
    z_ce = Tensor(logits, requires_grad=True)
    CrossEntropy()(labels, z_ce).backward()
    np.testing.assert_allclose(z.grad.array, z_ce.grad.array, atol=1e-12)
    lp = Tensor(log_softmax(logits), requires_grad=True)
    loss = NLL(ignore_index=9)(Tensor(np.full(6, 9)), lp)
    loss.backward()
    assert loss.item() == 0 and not lp.grad.array.any()


@pytest.mark.parametrize("name", ["CrossEntropyLoss", "NLLLoss"])
def test_torch_named_losses_ignore_minus_100_by_default_as_torch(name):
    """nn.CrossEntropyLoss and nn.NLLLoss take torch's ignore_index=-100 by default (a
    training script pads its targets with -100); the seed's criteria ignore nothing."""
    torch = pytest.importorskip("torch")
    import tricycle.nn as nn

    rng = np.random.default_rng(8)
    scores = rng.normal(size=(6, 5))
    if name == "NLLLoss":
        scores = log_softmax(scores)
    labels = rng.integers(0, 5, size=6)
    labels[[1, 4]] = -100
    ours, theirs = getattr(nn, name)(), getattr(torch.nn, name)()
    compare(lambda s: ours(s, Tensor(labels)), lambda s: theirs(s, torch.tensor(labels)), [scores])
    assert ours.fn.ignore_index == -100 and getattr(nn, name)(ignore_index=2).fn.ignore_index == 2
    seed = CrossEntropy() if name == "CrossEntropyLoss" else NLL()
    with pytest.raises(IndexError, match="-100"):  # the seed's meaning: a label out of range
        seed(Tensor(labels), Tensor(scores))
    with pytest.raises(IndexError, match="-1"):  # -1 is no class and not ignored
        ours(Tensor(scores), Tensor(np.where(labels == -100, -1, labels)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"reduction": "none"},
        {"reduction": "sum"},
        {"label_smoothing": 0.1, "ignore_index": 2},
        {"weight": "w", "reduction": "none"},
        {"weight": "w"},
    ],  # fmt: skip
    ids=["none", "sum", "smoothing", "weight-none", "weight"],
)
def test_cross_entropy_loss_takes_torchs_arguments(kwargs):
    """nn.CrossEntropyLoss takes torch's weight, reduction and label_smoothing (d2l's
    ``nn.CrossEntropyLoss(reduction='none')``): torch's losses and logits' gradients; a bad
    reduction names the layer."""
    torch = pytest.importorskip("torch")
    import tricycle.nn as nn

    rng = np.random.default_rng(9)
    scores, labels = rng.normal(size=(6, 5)), rng.integers(0, 5, size=6)
    w = rng.uniform(0.5, 2, size=5)
    ours_kw = {k: Tensor(w) if v == "w" else v for k, v in kwargs.items()}
    theirs_kw = {k: torch_tensor(w) if v == "w" else v for k, v in kwargs.items()}
    ours, theirs = nn.CrossEntropyLoss(**ours_kw), torch.nn.CrossEntropyLoss(**theirs_kw)
    compare(lambda s: ours(s, Tensor(labels)), lambda s: theirs(s, torch.tensor(labels)), [scores])
    assert repr(ours) == repr(theirs) == "CrossEntropyLoss()"
    with pytest.raises(ValueError, match="CrossEntropyLoss"):
        nn.CrossEntropyLoss(reduction="average")


# ====================================================================== CosineEmbedding


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.2])
def test_cosine_embedding_matches_torch(margin, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x1, x2 = rng.normal(size=(7, 4)), rng.normal(size=(7, 4))
    labels = np.array([1, -1, 1, -1, -1, -1, 1])
    loss_fn = CosineEmbedding(margin, reduction)
    compare(
        lambda a, b: loss_fn(Tensor(labels), a, b),
        lambda a, b: torch.nn.functional.cosine_embedding_loss(
            a, b, torch.tensor(labels), margin=margin, reduction=reduction
        ),
        [x1, x2],
    )


def test_cosine_embedding_of_one_pair_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    compare(
        lambda a, b: CosineEmbedding()(Tensor(np.array(-1)), a, b),
        lambda a, b: torch.nn.functional.cosine_embedding_loss(a, b, torch.tensor(-1)),
        [rng.normal(size=5), rng.normal(size=5)],
    )


@given(n=st.integers(1, 4), d=st.integers(1, 4), reduction=reductions)
def test_cosine_embedding_gradients_match_finite_differences(n, d, reduction):
    rng = np.random.default_rng(10)
    labels = Tensor(rng.choice([1, -1], size=n))
    loss_fn = CosineEmbedding(margin=-0.5, reduction=reduction)  # every pair away from the kink
    x1, x2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    check_grads(lambda a, b: loss_fn(labels, a, b), x1, x2)


# ====================================================================== errors


def test_bad_inputs_raise_errors_that_name_the_loss():
    a, b = Tensor(np.zeros((2, 3))), Tensor(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"L1: y_true \(2, 3\) and y_pred \(3, 2\) must have"):
        L1()(a, b)
    with pytest.raises(ValueError, match=r"SmoothL1: reduction must be one of 'mean', 'sum', "
                       r"'none', got 'batchmean'"):  # fmt: skip
        SmoothL1(reduction="batchmean")
    with pytest.raises(ValueError, match="Huber: delta must be a finite number > 0, got 0"):
        Huber(delta=0)
    with pytest.raises(TypeError, match="NLL: labels .* must be integer class ids, got dtype"):
        NLL()(Tensor(np.zeros(2)), a)
    with pytest.raises(ValueError, match=r"NLL: labels of shape \(3,\) need log-probabilities "
                       r"of shape \(3, 'C'\), got \(2, 3\)"):  # fmt: skip
        NLL()(Tensor(np.zeros(3, dtype=int)), a)
    with pytest.raises(IndexError, match=r"NLL: labels must lie in \[0, 3\)"):
        NLL()(Tensor(np.array([0, 3])), a)
    with pytest.raises(ValueError, match=r"BCEWithLogits: pos_weight of shape \(2,\) must "
                       r"broadcast to the input.s shape \(2, 3\)"):  # fmt: skip
        BCEWithLogits(pos_weight=[1.0, 2.0])(a, a)
    with pytest.raises(TypeError, match="BCEWithLogits: pos_weight must be None, a number"):
        BCEWithLogits(pos_weight="heavy")
    with pytest.raises(ValueError, match=r"CosineEmbedding: labels must be 1 or -1, got \[0\]"):
        CosineEmbedding()(Tensor(np.array([1, 0])), a, a)
    with pytest.raises(ValueError, match=r"CosineEmbedding: expected labels \(N,\) .* got "
                       r"labels \(3,\), x1 \(2, 3\)"):  # fmt: skip
        CosineEmbedding()(Tensor(np.ones(3)), a, a)
    with pytest.raises(ValueError, match="KLDiv: empty input"):
        KLDiv()(np.zeros((0, 2)), Tensor(np.zeros((0, 2))))


# ====================================================================== backends


def test_losses_on_every_backend(xp):
    """Every loss on the array module of ``xp`` (cupy on a GPU) gives the host's value and
    gradients, in float32; on the host, those of torch's functions."""
    rng = np.random.default_rng(12)
    pred, target = rng.normal(size=(4, 3)), rng.uniform(size=(4, 3))
    labels, signs = rng.integers(0, 3, size=4), np.array([1, -1, -1, 1])
    weight = np.array([1.0, 2.0, 0.5])
    F = pytest.importorskip("torch").nn.functional if xp is np else None
    cases = [  # (ours, target, prediction, torch's of (target, prediction))
        (L1(), target, pred, lambda t, p: F.l1_loss(p, t)),
        (SmoothL1(0.5), target, pred, lambda t, p: F.smooth_l1_loss(p, t, beta=0.5)),
        (Huber(0.5, "sum"), target, pred,
         lambda t, p: F.huber_loss(p, t, delta=0.5, reduction="sum")),
        (BCEWithLogits(weight), target, pred, lambda t, p: F.binary_cross_entropy_with_logits(
            p, t, pos_weight=torch_tensor(weight.astype(np.float32)))),
        (NLL(ignore_index=1), labels, log_softmax(pred),
         lambda t, p: F.nll_loss(p, t, ignore_index=1)),
        (KLDiv("batchmean"), target / target.sum(-1, keepdims=True), log_softmax(pred),
         lambda t, p: F.kl_div(p, t, reduction="batchmean")),
        (lambda y, a: CosineEmbedding(0.1)(y, a, a[::-1] + 0.5), signs, pred,
         lambda t, a: F.cosine_embedding_loss(a, a.flip(0) + 0.5, t, margin=0.1)),
    ]  # fmt: skip
    for loss_fn, y, p, torch_fn in cases:
        y = y if y.dtype.kind == "i" else y.astype(np.float32)
        results = []
        for module in (np, xp) if xp is not np else (np,):
            y_t = Tensor(module.asarray(y))
            p_t = Tensor(module.asarray(p.astype(np.float32)), requires_grad=True)
            loss = loss_fn(y_t, p_t)
            loss.backward()
            results.append([backend.to_host_array(a) for a in (loss.array, p_t.grad.array)])
        if xp is np:  # the host against itself would compare nothing: torch's numbers instead
            p_t = torch_tensor(p.astype(np.float32), grad=True)
            loss = torch_fn(torch_tensor(y), p_t)
            loss.backward()
            results.insert(0, [loss.detach().numpy(), p_t.grad.numpy()])
        for ours, expected in zip(*results):
            np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
