"""The ``tricycle.nn.functional`` functions a PyTorch port calls with torch's arguments:
``F.linear`` (torch's (out, in) weight), ``F.layer_norm`` (over the last axes, weight and bias
optional), ``F.softmax``/``F.log_softmax`` along any ``dim``, ``F.dropout`` (p, training,
inplace), ``F.gelu`` (torch's strings), ``F.glu``, ``F.one_hot``, ``F.interpolate`` and
``F.group_norm``/``F.batch_norm``/``F.instance_norm`` (with their running statistics): against
finite differences (random shapes) and against PyTorch, forward and backward, in float64, and
their errors for bad arguments. The losses are ``test_functional_losses.py``'s."""

import numpy as np
import pytest
from helpers import check_grads, randn
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn.functional as F
from tricycle.tensor import Tensor


@given(
    lead=st.lists(st.integers(1, 3), max_size=2),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_linear_matches_finite_differences(lead, sizes, bias, seed):
    n_in, n_out = sizes
    arrays = [randn(*lead, n_in, seed=seed), randn(n_out, n_in, seed=seed + 1)]
    arrays += [randn(n_out, seed=seed + 2)] if bias else []
    check_grads(lambda *t: F.linear(*t), *arrays)


@given(
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    normalized=st.lists(st.integers(2, 4), min_size=1, max_size=2),
    affine=st.sampled_from(["both", "weight", "none"]),
    seed=st.integers(0, 2**16),
)
def test_layer_norm_matches_finite_differences(lead, normalized, affine, seed):
    shape = tuple(normalized)
    arrays = [randn(*lead, *shape, seed=seed)]
    arrays += [] if affine == "none" else [1 + randn(*shape, seed=seed + 1, scale=0.1)]
    arrays += [randn(*shape, seed=seed + 2)] if affine == "both" else []
    check_grads(lambda *t: F.layer_norm(t[0], shape, *t[1:]), *arrays, rtol=1e-4, atol=1e-6)


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    dim=st.integers(-3, 2),
    log=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_softmax_along_any_dim_matches_finite_differences(shape, dim, log, seed):
    dim = dim % len(shape)
    f = F.log_softmax if log else F.softmax
    check_grads(lambda x: f(x, dim=dim) * Tensor(randn(*shape, seed=seed + 1)), randn(*shape))


# ---------------------------------------------------------------------- PyTorch
def _against_torch(torch, ours, theirs, *arrays):
    """``ours`` and ``theirs`` of the same arrays: outputs and every input's gradient."""
    inputs = [Tensor(a, requires_grad=True) for a in arrays]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*inputs), theirs(*torch_inputs)
    dout = randn(*out.shape, seed=9)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours_in, theirs_in in zip(inputs, torch_inputs):
        np.testing.assert_allclose(
            ours_in.grad.array, theirs_in.grad.numpy(), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(bias):
    torch = pytest.importorskip("torch")
    arrays = [randn(2, 3, 5), randn(4, 5, seed=1)] + ([randn(4, seed=2)] if bias else [])
    _against_torch(torch, F.linear, torch.nn.functional.linear, *arrays)


@pytest.mark.parametrize(("normalized", "affine"), [((6,), 2), ((3, 6), 2), ((6,), 1), ((6,), 0)])
def test_layer_norm_matches_torch(normalized, affine):
    torch = pytest.importorskip("torch")
    arrays = [randn(2, 3, 6, scale=3) + 1] + [randn(*normalized, seed=i) for i in range(affine)]

    def ours(x, *affine):
        return F.layer_norm(x, normalized, *affine, eps=1e-5)

    def theirs(x, *affine):
        return torch.nn.functional.layer_norm(x, normalized, *affine, eps=1e-5)

    _against_torch(torch, ours, theirs, *arrays)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_along_dim_matches_torch(name, dim):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    _against_torch(torch, lambda x: ours(x, dim=dim), lambda x: theirs(x, dim=dim), randn(3, 4, 5))
    half = F.softmax(Tensor(randn(2, 3)), dim=0, dtype=np.float32)  # computed in dtype
    assert half.dtype == np.float32


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: F.linear(x, np.ones((3, 4))), r"F.linear: expected weight \(out, in\)"),
        (lambda x: F.linear(x, np.ones(5)), r"F.linear: .*weight \(5,\)"),
        (lambda x: F.layer_norm(x, (4,)), r"F.layer_norm: normalized_shape \(4,\)"),
        (lambda x: F.layer_norm(x, (2, 3, 5, 7)), "F.layer_norm: normalized_shape"),
        (lambda x: F.layer_norm(x, 5, np.ones(4)), r"F.layer_norm: weight's shape"),
        (lambda x: F.softmax(x, dim=3), "F.softmax: dim"),
    ],
)
def test_bad_arguments_name_the_function(call, match):
    with pytest.raises(ValueError, match=match):
        call(Tensor(np.ones((2, 3, 5))))


# ---------------------------------------------------------------------- dropout
def test_dropout_takes_torchs_arguments_and_tricycles():
    x = Tensor(randn(200, 5) + 3.0, requires_grad=True)
    assert F.dropout(x, 0.3, False) is x and F.dropout(x, training=False) is x
    assert F.dropout(x, 0.0) is x
    zeros = F.dropout(x, p=1.0)
    zeros.backward(np.ones(x.shape))
    assert not zeros.array.any() and not x.grad.array.any()
    x.grad = None
    out = F.dropout(x, 0.25, True, True)  # inplace: accepted, computed out of place
    kept = out.array != 0
    np.testing.assert_allclose(out.array[kept], x.array[kept] / 0.75)
    assert 0.6 < kept.mean() < 0.9 and (x.array != 0).all()
    out.backward(np.ones(x.shape))
    np.testing.assert_allclose(x.grad.array, kept / 0.75)
    # tricycle's probability= and rng= (by keyword, as the callers pass them)
    a = F.dropout(x, probability=0.5, rng=np.random.default_rng(3))
    b = F.dropout(x, 0.5, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.array, b.array)


def test_dropout_reproduces_under_manual_seed():
    import tricycle

    x = Tensor(randn(8, 8))
    tricycle.manual_seed(1)
    first = F.dropout(x).array
    tricycle.manual_seed(1)
    np.testing.assert_array_equal(F.dropout(x).array, first)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x: F.dropout(x, 1.5), ValueError, "F.dropout: p must be"),
        (lambda x: F.dropout(x, 0.5, 1), TypeError, "F.dropout: training must be True or False"),
        (lambda x: F.dropout(x, 0.2, probability=0.3), TypeError, "give one"),
        (lambda x: F.gelu(x, approximate="exact"), ValueError, "F.gelu: approximate"),
    ],
)
def test_dropout_and_gelu_refuse_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(Tensor(np.ones((2, 3))))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_takes_torchs_strings(approximate):
    torch = pytest.importorskip("torch")
    _against_torch(
        torch,
        lambda x: F.gelu(x, approximate=approximate),
        lambda x: torch.nn.functional.gelu(x, approximate=approximate),
        randn(3, 5, scale=3),
    )
    x = Tensor(randn(4))
    expected = F.gelu(x, approximate=approximate == "tanh").array  # tricycle's booleans
    np.testing.assert_array_equal(F.gelu(x, approximate).array, expected)


# ---------------------------------------------------------------------- glu, one_hot
@pytest.mark.parametrize(("shape", "dim"), [((4,), -1), ((3, 6), -1), ((2, 4, 3), 1), ((2, 2), 0)])
def test_glu_matches_torch(shape, dim):
    torch = pytest.importorskip("torch")
    _against_torch(
        torch, lambda x: F.glu(x, dim), lambda x: torch.nn.functional.glu(x, dim), randn(*shape)
    )


@given(
    shape=st.lists(st.integers(0, 3), max_size=3),
    extra=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_one_hot_matches_torch(shape, extra, seed):
    torch = pytest.importorskip("torch")
    ids = np.random.default_rng(seed).integers(0, 4, size=shape)
    for num_classes in [4 + extra] + ([-1] if ids.size else []):
        ours = F.one_hot(Tensor(ids), num_classes)
        theirs = torch.nn.functional.one_hot(torch.tensor(ids), num_classes).numpy()
        assert ours.dtype == np.int64 and not ours.requires_grad
        np.testing.assert_array_equal(ours.array, theirs)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: F.one_hot(np.array([0.0, 1.0])), TypeError, "F.one_hot: expected integer"),
        (lambda: F.one_hot(np.array([0, 3]), 3), IndexError, "F.one_hot: class ids must lie"),
        (lambda: F.one_hot(np.array([0, -1]), 3), IndexError, "F.one_hot"),
        (lambda: F.one_hot(np.zeros(0, int)), ValueError, "cannot infer num_classes"),
        (lambda: F.one_hot(np.array([0]), -2), ValueError, "F.one_hot: num_classes"),
        (lambda: F.glu(Tensor(np.ones((2, 3)))), ValueError, r"F.glu: dim -1 of input \(2, 3\)"),
    ],
)
def test_one_hot_and_glu_refuse_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------- interpolate
@pytest.mark.parametrize(
    ("shape", "settings"),
    [
        ((2, 3, 4), {"scale_factor": 2}),
        ((1, 2, 3, 2), {"scale_factor": 3.0}),
        ((1, 2, 3, 2), {"scale_factor": (2, 1)}),
        ((1, 2, 3, 2), {"size": (6, 4), "mode": "nearest-exact"}),
        ((1, 1, 2, 2, 3), {"size": 6}),
    ],
)
def test_interpolate_matches_torch(shape, settings):
    torch = pytest.importorskip("torch")
    _against_torch(
        torch,
        lambda x: F.interpolate(x, **settings),
        lambda x: torch.nn.functional.interpolate(x, **settings),
        randn(*shape),
    )


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"scale_factor": 2, "mode": "lanczos"}, "F.interpolate: mode must be one of"),
        ({"scale_factor": 2, "mode": "linear"}, r"mode 'linear' needs .*\(N, C, L\)"),
        ({"scale_factor": 2, "align_corners": False}, "align_corners is only for"),
        ({"scale_factor": 0.2}, r"F.interpolate: scale_factor 0.2 shrinks spatial size"),
        ({"scale_factor": (2, 2, 2)}, "F.interpolate: scale_factor"),
        ({"size": (5, 4, 3)}, r"F.interpolate: size must be"),
        ({}, "give either size or scale_factor, not neither"),
        ({"size": 4, "scale_factor": 2}, "not both"),
    ],
)
def test_interpolate_refuses_what_it_does_not_compute(settings, match):
    with pytest.raises(ValueError, match=match):
        F.interpolate(Tensor(np.ones((1, 1, 2, 2))), **settings)


# ---------------------------------------------------------------------- normalisations
def _norm_arrays(shape, affine: bool):
    c = shape[1]
    arrays = [randn(*shape, scale=2) + 1]
    return arrays + ([1 + randn(c, seed=1, scale=0.3), randn(c, seed=2)] if affine else [])


@pytest.mark.parametrize(("shape", "groups"), [((2, 6, 3), 3), ((3, 4, 2, 2), 1), ((2, 4), 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(shape, groups, affine):
    torch = pytest.importorskip("torch")
    _against_torch(
        torch,
        lambda x, *wb: F.group_norm(x, groups, *wb, eps=1e-4),
        lambda x, *wb: torch.nn.functional.group_norm(x, groups, *wb, eps=1e-4),
        *_norm_arrays(shape, affine),
    )


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_matches_torch_and_updates_running_statistics(shape, training, affine):
    torch = pytest.importorskip("torch")
    c = shape[1]
    stats = [randn(c, seed=5), 0.5 + randn(c, seed=6) ** 2]
    ours_stats = [Tensor(stats[0].copy()), stats[1].copy()]  # a Tensor and an array: both updated
    theirs_stats = [torch.tensor(s) for s in stats]
    _against_torch(
        torch,
        lambda x, *wb: F.batch_norm(x, *ours_stats, *wb, training=training, momentum=0.2),
        lambda x, *wb: torch.nn.functional.batch_norm(
            x, *theirs_stats, *wb, training=training, momentum=0.2
        ),
        *_norm_arrays(shape, affine),
    )
    np.testing.assert_allclose(ours_stats[0].array, theirs_stats[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_stats[1], theirs_stats[1].numpy(), rtol=1e-12)
    if training:  # without running statistics: the batch's alone
        x = randn(*shape)
        expected = torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True)
        np.testing.assert_allclose(F.batch_norm(x, None, None, training=True).array, expected)


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 3, 2)])
@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_matches_torch_and_updates_running_statistics(shape, use_input_stats, affine):
    torch = pytest.importorskip("torch")
    c = shape[1]
    stats = [randn(c, seed=5), 0.5 + randn(c, seed=6) ** 2]
    ours_stats = [Tensor(s.copy()) for s in stats]
    theirs_stats = [torch.tensor(s) for s in stats]
    settings = {"use_input_stats": use_input_stats, "momentum": 0.3}
    _against_torch(
        torch,
        lambda x, w=None, b=None: F.instance_norm(x, *ours_stats, w, b, **settings),
        lambda x, w=None, b=None: torch.nn.functional.instance_norm(
            x, *theirs_stats, w, b, **settings
        ),
        *_norm_arrays(shape, affine),
    )
    for ours, theirs in zip(ours_stats, theirs_stats):
        np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda x: F.batch_norm(x, None, None),
            ValueError,
            "running_mean and running_var are needed",
        ),
        (
            lambda x: F.batch_norm(x, np.zeros(2), np.ones(3)),
            ValueError,
            r"running_mean must have one value per channel, \(3,\)",
        ),
        (lambda x: F.batch_norm(x, None, None, training=1), TypeError, "F.batch_norm: training"),
        (
            lambda x: F.batch_norm(x, None, None, None, None, True, None),
            ValueError,
            "momentum=None",
        ),
        (
            lambda x: F.instance_norm(x, use_input_stats=False),
            ValueError,
            "F.instance_norm: running_mean",
        ),
        (lambda x: F.group_norm(x, 2), ValueError, "num_groups=2"),
        (
            lambda x: F.group_norm(x, 3, np.ones(2)),
            ValueError,
            r"gamma and beta must have shape \(3,\)",
        ),
    ],
)
def test_normalisations_refuse_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(Tensor(np.ones((2, 3, 4))))
