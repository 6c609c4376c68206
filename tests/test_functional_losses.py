"""``tricycle.nn.functional``'s losses with torch's signatures (``tricycle.nn.functional_losses``):
values and gradients of every float input against PyTorch's functions in float64 (random
layouts, reductions, weights, ignored targets, label smoothing, class-probability targets),
the composed paths against finite differences, and errors for bad arguments."""

import warnings

import numpy as np
import pytest
from helpers import check_grads, randn
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn.functional as F
from tricycle.tensor import Tensor


def against_torch(ours, theirs, floats, consts=(), rtol=1e-9, atol=1e-12):
    """``ours(*Tensors, *consts)`` and ``theirs`` of torch's tensors of the same arrays: the
    outputs and the gradient of every array of ``floats``."""
    torch = pytest.importorskip("torch")
    inputs = [Tensor(a, requires_grad=True) for a in floats]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in floats]
    out = ours(*inputs, *consts)
    expected = theirs(*torch_inputs, *(torch.as_tensor(c) for c in consts))
    dout = np.asarray(randn(*out.shape, seed=9))
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=atol)
    for ours_in, theirs_in in zip(inputs, torch_inputs):
        np.testing.assert_allclose(ours_in.grad.array, theirs_in.grad.numpy(), rtol, atol)


def classification_case(layout: str, n: int, c: int, d: int, seed: int, ignore: bool):
    """(logits of torch's layout, integer targets with some -100 if ``ignore``, class
    probabilities of the logits' shape)."""
    d = c + 1 if d == c else d  # a shape of torch's layout alone (see the ambiguity test)
    shape = {"C": (c,), "NC": (n, c), "NCd": (n, c, d), "NCdd": (n, c, d, 2)}[layout]
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=shape) * 2
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    labels = rng.integers(0, c, size=target_shape)
    if ignore and labels.size > 1:
        labels.reshape(-1)[1::2] = -100  # one in two ignored; the first counts
    probs = rng.random(size=shape)
    return logits, labels, probs / probs.sum(axis=min(1, len(shape) - 1), keepdims=True)


layouts = st.sampled_from(["C", "NC", "NCd", "NCdd"])
reductions = st.sampled_from(["mean", "sum", "none"])


@given(
    layout=layouts,
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3)),
    reduction=reductions,
    weighted=st.booleans(),
    ignore=st.booleans(),
    smoothing=st.sampled_from([0.0, 0.25, 1.0]),
    probabilities=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_cross_entropy_matches_torch(
    layout, sizes, reduction, weighted, ignore, smoothing, probabilities, seed
):
    torch = pytest.importorskip("torch")
    n, c, d = sizes
    logits, labels, probs = classification_case(layout, n, c, d, seed, ignore)
    weight = np.random.default_rng(seed + 1).random(c) + 0.5 if weighted else None
    settings = {"reduction": reduction, "label_smoothing": smoothing}
    if probabilities:
        floats, consts = [logits, probs], ()  # the probabilities get gradients too
    else:
        floats, consts = [logits], (labels,)

    def ours(*args):
        return F.cross_entropy(*args, weight=weight, **settings)

    def theirs(*args):
        w = None if weight is None else torch.tensor(weight)
        return torch.nn.functional.cross_entropy(*args, weight=w, **settings)

    against_torch(ours, theirs, floats, consts)


@given(
    layout=layouts,
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3)),
    reduction=reductions,
    weighted=st.booleans(),
    ignore=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_nll_loss_matches_torch(layout, sizes, reduction, weighted, ignore, seed):
    torch = pytest.importorskip("torch")
    n, c, d = sizes
    log_probs, labels, _ = classification_case(layout, n, c, d, seed, ignore)
    weight = np.random.default_rng(seed + 1).random(c) + 0.5 if weighted else None
    w = None if weight is None else torch.tensor(weight)
    against_torch(
        lambda x, y: F.nll_loss(x, y, weight, reduction=reduction),
        lambda x, y: torch.nn.functional.nll_loss(x, y, w, reduction=reduction),
        [log_probs],
        (labels,),
    )


def test_cross_entropy_keeps_the_fused_op_for_the_plain_call():
    logits = Tensor(randn(4, 3), requires_grad=True)
    assert F.cross_entropy(logits, np.array([0, 2, 1, 0])).name == "cross_entropy"
    assert F.cross_entropy(logits, np.array([0, 2, 1, -100])).name == "cross_entropy"


@given(
    layout=layouts,
    smoothing=st.sampled_from([0.0, 0.3]),
    weighted=st.booleans(),
    probabilities=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_composed_cross_entropy_matches_finite_differences(
    layout, smoothing, weighted, probabilities, seed
):
    logits, labels, probs = classification_case(layout, 2, 3, 2, seed, ignore=True)
    weight = np.array([0.5, 2.0, 1.0]) if weighted else None
    settings = {"weight": weight, "label_smoothing": smoothing}
    if probabilities:
        check_grads(lambda x, t: F.cross_entropy(x, t, **settings), logits, probs)
    else:
        check_grads(lambda x: F.cross_entropy(x, labels, **settings), logits)


# ---------------------------------------------------------------------- elementwise losses
def _cases():
    """(our call, torch's call, the arrays: input and target, both given gradients)."""
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)) * 1.5
    w, row = rng.random((3, 4)) + 0.5, rng.random(4) + 0.5
    probs = rng.random((3, 4)) * 0.9 + 0.05
    log_q = np.log(probs / probs.sum(-1, keepdims=True))
    target_p = rng.random((3, 4)) + 0.1
    target_p /= target_p.sum(-1, keepdims=True)
    cases = []
    for r in ("mean", "sum", "none"):
        cases += [
            ("mse_loss", {"reduction": r}, x, t),
            ("mse_loss", {"reduction": r, "weight": w}, x, t),
            ("l1_loss", {"reduction": r}, x, t),
            ("l1_loss", {"reduction": r, "weight": w}, x, t),
            ("smooth_l1_loss", {"reduction": r, "beta": 0.7}, x, t),
            ("huber_loss", {"reduction": r, "delta": 0.6}, x, t),
            ("huber_loss", {"reduction": r, "delta": 0.6, "weight": w}, x, t),
            ("binary_cross_entropy_with_logits", {"reduction": r}, x, probs),
            ("binary_cross_entropy_with_logits", {"reduction": r, "weight": row}, x, probs),
            ("binary_cross_entropy_with_logits", {"reduction": r, "pos_weight": row}, x, probs),
            ("binary_cross_entropy", {"reduction": r, "weight": w}, probs, target_p),
            ("kl_div", {"reduction": r}, log_q, target_p),
            ("kl_div", {"reduction": r, "log_target": True}, log_q, np.log(target_p)),
        ]
    return cases + [("kl_div", {"reduction": "batchmean"}, log_q, target_p)]


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # torch's, of kl_div
@pytest.mark.parametrize(("name", "settings", "x", "t"), _cases())
def test_elementwise_losses_match_torch(name, settings, x, t):
    torch = pytest.importorskip("torch")
    theirs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in settings.items()}
    against_torch(
        lambda a, b: getattr(F, name)(a, b, **settings),
        lambda a, b: getattr(torch.nn.functional, name)(a, b, **theirs),
        [x, t],
    )


@pytest.mark.filterwarnings("ignore:size_average and reduce")  # torch's deprecation warning
@pytest.mark.parametrize("size_average", [None, True, False])
@pytest.mark.parametrize("reduce", [None, True, False])
@pytest.mark.parametrize(
    "name", ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
             "binary_cross_entropy_with_logits"]
)  # fmt: skip
def test_deprecated_size_average_and_reduce_by_name_as_torchs(name, size_average, reduce):
    """Old code's ``F.nll_loss(output, target, size_average=False)`` (the spatial transformer
    tutorial's): the reduction they stand for, forward and backward, with a warning."""
    torch = pytest.importorskip("torch")
    x, t = randn(4, 3), randn(4, 3, seed=1)
    probs = 1 / (1 + np.exp(-t))
    labels = np.array([0, 2, 1, 2])
    floats, consts = {
        "cross_entropy": ([x], [labels]),
        "nll_loss": ([x], [labels]),
        "binary_cross_entropy": ([probs], [1 / (1 + np.exp(-x))]),
        "binary_cross_entropy_with_logits": ([x], [probs]),
    }.get(name, ([x, t], []))
    legacy = {
        k: v for k, v in (("size_average", size_average), ("reduce", reduce)) if v is not None
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        against_torch(
            lambda *a: getattr(F, name)(*a, **legacy),
            lambda *a: getattr(torch.nn.functional, name)(*a, **legacy),
            floats,
            consts,
        )
    assert any(f"F.{name}: size_average and reduce" in str(w.message) for w in caught) == bool(
        legacy
    )


def test_huber_loss_takes_torchs_positional_reduction_and_delta():
    torch = pytest.importorskip("torch")
    x, t = randn(5), randn(5, seed=1)
    against_torch(
        lambda a, b: F.huber_loss(a, b, "sum", 0.4),
        lambda a, b: torch.nn.functional.huber_loss(a, b, "sum", 0.4),
        [x, t],
    )


@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
    reduction=reductions,
    seed=st.integers(0, 2**16),
)
def test_weighted_elementwise_losses_match_finite_differences(shape, reduction, seed):
    x, t, w = randn(*shape, seed=seed), randn(*shape, seed=seed + 1), 0.5 + randn(*shape) ** 2
    for loss in (F.mse_loss, F.l1_loss, F.huber_loss):
        check_grads(lambda a, b: loss(a, b, reduction=reduction, weight=w), x, t)


# ---------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda x: F.cross_entropy(x, np.zeros(2, int)),
            ValueError,
            r"target class ids of shape \(2, 4\)",
        ),
        (lambda x: F.cross_entropy(x, np.zeros((2, 4)), None), TypeError, "integer class ids"),
        (
            lambda x: F.cross_entropy(x, np.zeros((2, 4), int), np.ones(4)),
            ValueError,
            r"one weight per class, \(3,\)",
        ),
        (
            lambda x: F.cross_entropy(x, np.zeros((2, 4), int), label_smoothing=1.5),
            ValueError,
            "F.cross_entropy: label_smoothing",
        ),
        (
            lambda x: F.cross_entropy(x, np.zeros((2, 4), int), reduction="avg"),
            ValueError,
            "F.cross_entropy: reduction",
        ),
        (
            lambda x: F.cross_entropy(x, np.zeros((2, 4), int), None, None, -100),
            TypeError,
            "positional",
        ),
        (lambda x: F.cross_entropy(x, np.full((2, 4), 3)), IndexError, "3 classes"),
        (
            lambda x: F.nll_loss(x, np.ones((2, 3, 4))),
            TypeError,
            "F.nll_loss: target must be integer",
        ),
        (lambda x: F.mse_loss(x, np.ones((2, 3))), ValueError, "F.mse_loss: input .* same shape"),
        (
            lambda x: F.mse_loss(x, np.ones((2, 3, 4)), weight=np.ones(4)),
            ValueError,
            r"F.mse_loss: weight \(4,\)",
        ),
        (
            lambda x: F.binary_cross_entropy_with_logits(x, np.ones((2, 3, 4)), np.ones(5)),
            ValueError,
            "F.binary_cross_entropy_with_logits: weight",
        ),
    ],
)
def test_bad_arguments_name_the_function(call, error, match):
    with pytest.raises(error, match=match):
        call(Tensor(np.ones((2, 3, 4))))


def test_cross_entropy_keeps_tricycle_s_classes_last_and_refuses_a_shape_of_both_layouts():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((2, 3, 5))  # (B, T, V): tricycle's layout, as before
    labels = rng.integers(0, 5, (2, 3))
    ours = F.cross_entropy(Tensor(logits), labels)
    theirs = torch.nn.functional.cross_entropy(
        torch.tensor(logits).reshape(-1, 5), torch.tensor(labels).reshape(-1)
    )
    np.testing.assert_allclose(float(ours.array), theirs.item(), rtol=1e-12)
    square = rng.standard_normal((2, 4, 4))  # classes on axis 1 or 2: no guess
    with pytest.raises(ValueError, match="could hold the classes on axis 1"):
        F.cross_entropy(Tensor(square), rng.integers(0, 4, (2, 4)))
