"""Convolution, pooling, Flatten and batch norm: gradients against finite differences over
random geometries (odd sizes, stride, padding, dilation, groups, size-1 axes), forward and
gradients against torch.nn with copied weights, running statistics and checkpoints."""

import pickle

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend
from tricycle.layers import Dense, Sequential
from tricycle.nn.conv import (
    AvgPool1d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    Flatten,
    MaxPool1d,
    MaxPool2d,
    avg_pool,
    batch_norm,
    conv,
    max_pool,
)
from tricycle.optimisers import AdamW
from tricycle.tensor import Tensor, to_tensor


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def distinct(*shape, seed=0):
    """Values at least 0.1 apart (no ties: max pooling's argmax is stable under the finite
    differences' nudges)."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(n).reshape(shape) * 0.1 - n * 0.05


@st.composite
def conv_geometry(draw):
    """(x shape, weights shape, stride, padding, dilation, groups) with an output >= 1."""
    n = draw(st.sampled_from([1, 2]), label="spatial axes")
    groups = draw(st.sampled_from([1, 1, 2]), label="groups")
    in_per_group = draw(st.integers(1, 2), label="in per group")
    out_per_group = draw(st.integers(1, 2), label="out per group")
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(n))
    size = tuple(
        max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, 3))
        for k, p, d in zip(kernel, padding, dilation)
    )
    batch = draw(st.integers(1, 2), label="batch")
    x_shape = (batch, groups * in_per_group) + size
    w_shape = (groups * out_per_group, in_per_group) + kernel
    return x_shape, w_shape, stride, padding, dilation, groups


# ====================================================================== convolution


@given(geometry=conv_geometry(), with_bias=st.booleans())
def test_conv_gradients_match_finite_differences(geometry, with_bias):
    x_shape, w_shape, stride, padding, dilation, groups = geometry

    def f(x, w, *b):
        return conv(x, w, b[0] if b else None, stride, padding, dilation, groups)

    arrays = [randn(*x_shape, seed=1), randn(*w_shape, seed=2)]
    arrays += [randn(w_shape[0], seed=3)] if with_bias else []
    check_grads(f, *arrays, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "x_shape, w_shape",
    [
        ((300, 3, 7, 7), (4, 3, 3, 3)),
        ((4, 8, 40, 40), (8, 8, 3, 3)),
        ((8, 32, 24, 24), (32, 32, 3, 3)),
    ],
    ids=["many samples", "few large samples", "winograd"],
)
def test_conv_results_do_not_depend_on_the_thread_count(x_shape, w_shape):
    """The output and every gradient are bit for bit the same with the CPU kernels on one
    thread and on two (each task writes its own elements)."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(x_shape).astype(np.float32)
    w0 = rng.standard_normal(w_shape).astype(np.float32)
    b0 = rng.standard_normal(w_shape[0]).astype(np.float32)
    g0 = rng.standard_normal((x_shape[0], w_shape[0]) + x_shape[2:]).astype(np.float32)
    results = []
    previous = numba.get_num_threads()
    for n in (1, 2):
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        try:
            x, w, b = to_tensor(x0), to_tensor(w0), to_tensor(b0)
            out = conv(x, w, b, padding=1)
            out.backward(g0)
        finally:
            numba.set_num_threads(previous)
        results.append([out.array, x.grad.array, w.grad.array, b.grad.array])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def test_conv_in_a_diamond_graph():
    """x feeds the convolution and multiplies its output: both paths' gradients add up."""
    check_grads(
        lambda x, w: conv(x, w, padding=1) * x, randn(2, 3, 5, 4), randn(3, 3, 3, 3, seed=1)
    )


@pytest.mark.parametrize(
    "x_shape, w_shape, stride, padding, dilation, groups",
    [
        ((2, 3, 11), (4, 3, 3), 1, 1, 1, 1),
        ((2, 4, 12), (6, 2, 4), 3, 2, 2, 2),
        ((3, 2, 1), (5, 2, 1), 1, 0, 1, 1),
        ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1, 1),
        ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
        ((1, 3, 8, 8), (3, 1, 3, 3), 2, 1, 1, 3),  # depthwise
        ((2, 3, 7, 9), (2, 3, 1, 1), 1, 0, 1, 1),  # 1x1
        ((2, 2, 6, 6), (3, 2, 5, 5), 1, 4, 1, 1),  # padding wider than the kernel reaches
        ((2, 2, 10, 10), (2, 2, 3, 3), 3, 0, 2, 1),
    ],
)
def test_conv_op_matches_pytorch(x_shape, w_shape, stride, padding, dilation, groups):
    torch = pytest.importorskip("torch")
    functional = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d}[len(x_shape)]
    x, w, b = randn(*x_shape), randn(*w_shape, seed=1), randn(w_shape[0], seed=2)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    expected = functional(tx, tw, tb, stride, padding, dilation, groups)
    dout = randn(*expected.shape, seed=3)
    expected.backward(torch.tensor(dout))

    X, W, B = Tensor(x), Tensor(w), Tensor(b)
    out = conv(X, W, B, stride, padding, dilation, groups)
    out.backward(dout)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-10)
    for ours, theirs in [(X, tx), (W, tw), (B, tb)]:
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layer_class", [Conv1d, Conv2d])
def test_conv_layers_match_torch_layers_with_copied_weights(layer_class):
    torch = pytest.importorskip("torch")
    n = layer_class.n_dims
    np.random.seed(0)
    ours = layer_class(4, 6, kernel_size=3, stride=2, padding=1, dilation=1, groups=2)
    theirs = getattr(torch.nn, layer_class.__name__)(4, 6, 3, stride=2, padding=1, groups=2)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weights.numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.bias.numpy()))
    x = randn(*(3, 4) + (9,) * n, dtype=np.float32)
    tx = torch.tensor(x, requires_grad=True)
    expected = theirs(tx)
    expected.sum().backward()
    X = to_tensor(x)
    out = ours(X)
    out.sum().backward()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.weights.grad.array, theirs.weight.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(ours.bias.grad.array, theirs.bias.grad.numpy(), rtol=1e-5)


def test_conv_initialisation_is_pytorchs_uniform():
    np.random.seed(0)
    layer = Conv2d(8, 16, kernel_size=(3, 5), groups=2)
    bound = 1 / np.sqrt(4 * 15)  # fan_in = in_channels / groups * kernel area
    assert layer.weights.shape == (16, 4, 3, 5) and layer.bias.shape == (16,)
    for t in (layer.weights, layer.bias):
        assert np.abs(t.array).max() <= bound
        assert np.abs(t.array).max() > 0.8 * bound
    assert Conv1d(2, 3, 4, bias=False).bias is None


def test_conv_reports_bad_shapes():
    layer = Conv2d(3, 4, kernel_size=3)
    with pytest.raises(ValueError, match=r"expected input \(batch, 3, height, width\)"):
        layer(to_tensor(randn(2, 4, 5, 5)))
    with pytest.raises(ValueError, match="smaller than the"):
        layer(to_tensor(randn(2, 3, 2, 5)))
    with pytest.raises(ValueError, match="divisible by groups"):
        Conv2d(3, 4, kernel_size=3, groups=2)
    with pytest.raises(ValueError, match="stride must be an integer >= 1 or 2 of them"):
        Conv2d(3, 4, kernel_size=3, stride=(1, 2, 3))
    with pytest.raises(ValueError, match="groups=2"):
        conv(to_tensor(randn(1, 3, 5)), to_tensor(randn(4, 2, 3)), groups=2)


# ====================================================================== pooling


@st.composite
def pool_geometry(draw):
    n = draw(st.sampled_from([1, 2]), label="spatial axes")
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(max(1, k - 2 * p) + draw(st.integers(0, 3)) for k, p in zip(kernel, padding))
    x_shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + size
    return x_shape, kernel, stride, padding


@given(geometry=pool_geometry())
def test_max_pool_gradient_matches_finite_differences(geometry):
    x_shape, kernel, stride, padding = geometry
    check_grads(lambda x: max_pool(x, kernel, stride, padding), distinct(*x_shape))


@given(geometry=pool_geometry(), count_include_pad=st.booleans())
def test_avg_pool_gradient_matches_finite_differences(geometry, count_include_pad):
    x_shape, kernel, stride, padding = geometry
    check_grads(lambda x: avg_pool(x, kernel, stride, padding, count_include_pad=count_include_pad),
                randn(*x_shape))  # fmt: skip


@pytest.mark.parametrize(
    "x_shape, kernel, stride, padding",
    [
        ((2, 3, 8, 8), 2, None, 0),
        ((2, 3, 7, 9), 3, 2, 1),  # overlapping windows, padding
        ((1, 2, 5, 6), (3, 2), (1, 2), (1, 0)),
        ((2, 3, 9), 3, 2, 1),
        ((2, 2, 1, 5), (1, 3), 1, (0, 1)),  # a size-1 axis
    ],
)
def test_pooling_matches_pytorch(x_shape, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    n = len(x_shape) - 2
    x = randn(*x_shape)
    cases = [
        ("max", lambda t: max_pool(t, kernel, stride, padding),
         lambda t: getattr(functional, f"max_pool{n}d")(t, kernel, stride, padding)),
        ("avg", lambda t: avg_pool(t, kernel, stride, padding),
         lambda t: getattr(functional, f"avg_pool{n}d")(t, kernel, stride, padding)),
        ("avg without pad", lambda t: avg_pool(t, kernel, stride, padding, count_include_pad=False),
         lambda t: getattr(functional, f"avg_pool{n}d")(t, kernel, stride, padding,
                                                         count_include_pad=False)),
    ]  # fmt: skip
    for name, ours_fn, torch_fn in cases:
        tx = torch.tensor(x, requires_grad=True)
        expected = torch_fn(tx)
        dout = randn(*expected.shape, seed=1)
        expected.backward(torch.tensor(dout))
        X = Tensor(x)
        out = ours_fn(X)
        out.backward(dout)
        np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-12, err_msg=name)


def test_max_pool_sends_ties_to_the_first_maximum_as_pytorch():
    torch = pytest.importorskip("torch")
    x = np.array([[[[1.0, 3.0, 3.0], [3.0, 0.0, 3.0], [2.0, 3.0, 1.0]]]])
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, 2, 1).sum().backward()
    X = Tensor(x)
    max_pool(X, 2, 1).sum().backward()
    np.testing.assert_array_equal(X.grad.array, tx.grad.numpy())


def test_pooling_layers_and_their_errors():
    x = to_tensor(randn(2, 3, 6, 6))
    assert MaxPool2d(2)(x).shape == (2, 3, 3, 3)
    assert AvgPool2d(3, stride=1, padding=1)(x).shape == (2, 3, 6, 6)
    assert MaxPool1d(2)(to_tensor(randn(2, 3, 7))).shape == (2, 3, 3)
    assert AvgPool1d(3, 2)(to_tensor(randn(2, 3, 7))).shape == (2, 3, 3)
    with pytest.raises(ValueError, match="MaxPool2d: padding must be at most half the kernel"):
        MaxPool2d(2, padding=2)
    with pytest.raises(ValueError, match=r"expected input \(batch, channels, \*2 spatial"):
        MaxPool2d(2)(to_tensor(randn(6, 6)))
    assert MaxPool2d(2)(to_tensor(randn(3, 6, 6))).shape == (3, 3, 3)  # unbatched, as torch


# ====================================================================== Flatten


def test_flatten_merges_axes_and_routes_gradients():
    x = to_tensor(randn(2, 3, 4, 5))
    out = Flatten()(x)
    assert out.shape == (2, 60)
    np.testing.assert_array_equal(out.array, x.array.reshape(2, 60))
    assert Flatten(1, 2)(x).shape == (2, 12, 5)
    assert Flatten(0)(x).shape == (120,)
    (out * to_tensor(np.arange(120.0).reshape(2, 60))).sum().backward()
    np.testing.assert_array_equal(x.grad.array, np.arange(120.0).reshape(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Flatten"):
        Flatten(2, 1)(x)


# ====================================================================== batch norm


@given(
    shape=st.sampled_from([(3, 2), (2, 3, 1), (2, 2, 3), (1, 2, 2, 3), (3, 1, 1, 2)]),
    affine=st.booleans(),
    fixed_statistics=st.booleans(),
)
def test_batch_norm_gradients_match_finite_differences(shape, affine, fixed_statistics):
    C = shape[1]
    stats = (randn(C, seed=4), randn(C, seed=5) ** 2 + 0.5) if fixed_statistics else (None, None)

    def f(x, *affine_params):
        gamma, beta = affine_params or (None, None)
        return batch_norm(x, gamma, beta, 1e-5, *stats)[0]

    params = [randn(C, seed=2) + 1, randn(C, seed=3)] if affine else []
    check_grads(f, randn(*shape, seed=1) * 3 + 1, *params, rtol=1e-5, atol=1e-6)


def test_batch_norm_in_a_diamond_graph():
    check_grads(lambda x, g: batch_norm(x, g)[0] * x, randn(4, 3, 2), randn(3, seed=1))


@pytest.mark.parametrize(
    "layer_class, shape",
    [(BatchNorm1d, (6, 3)), (BatchNorm1d, (4, 3, 5)), (BatchNorm2d, (4, 3, 5, 2))],
)
@pytest.mark.parametrize("track_running_stats", [True, False])
def test_batch_norm_matches_torch_in_training_and_evaluation(
    layer_class, shape, track_running_stats
):
    torch = pytest.importorskip("torch")
    ours = layer_class(3, momentum=0.2, track_running_stats=track_running_stats)
    theirs = getattr(torch.nn, layer_class.__name__)(
        3, momentum=0.2, track_running_stats=track_running_stats
    )
    ours.gamma.array[...] = randn(3, seed=9) + 1
    ours.beta.array[...] = randn(3, seed=8)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.gamma.numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.beta.numpy()))
    for step, mode in enumerate(["train", "train", "train", "eval"]):
        ours.train() if mode == "train" else ours.eval()
        theirs.train() if mode == "train" else theirs.eval()
        x = randn(*shape, seed=step, dtype=np.float32) * 2 + 1
        dout = randn(*shape, seed=7, dtype=np.float32)
        tx = torch.tensor(x, requires_grad=True)
        expected = theirs(tx)
        expected.backward(torch.tensor(dout))
        X = to_tensor(x)
        out = ours(X)
        out.backward(dout)
        np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ours.gamma.grad.array, theirs.weight.grad.numpy(), rtol=1e-4)
        np.testing.assert_allclose(ours.beta.grad.array, theirs.bias.grad.numpy(), rtol=1e-4)
        ours.zero_grad()
        theirs.zero_grad()
        if track_running_stats:  # updated in training, unbiased variance, as torch
            for name in ("running_mean", "running_var"):
                expected_stat = getattr(theirs, name).numpy()
                np.testing.assert_allclose(getattr(ours, name).array, expected_stat, rtol=1e-5)


def test_batch_norm_running_statistics_are_buffers_kept_in_the_state_dict():
    np.random.seed(0)
    model = Sequential(Conv2d(2, 3, 3, padding=1), BatchNorm2d(3), Flatten(), Dense(48, 2))
    names = [name for name, _ in model.named_parameters()]
    assert "sequence.1.running_mean" not in names and "sequence.1.gamma" in names
    state = model.state_dict()
    assert {"sequence.1.running_mean", "sequence.1.running_var"} <= set(state)

    x = to_tensor(randn(4, 2, 4, 4, dtype=np.float32))
    optimiser = AdamW(learning_rate=0.1)
    model(x).sum().backward()
    running_var = model[1].running_var
    before = running_var.array.copy()
    model.update(optimiser)  # the optimiser never sees a buffer
    assert running_var.grad is None
    assert not np.array_equal(running_var.array, np.ones(3))  # the forward updated it
    np.testing.assert_array_equal(running_var.array, before)

    model.eval()
    expected = model(x).array
    np.random.seed(1)
    fresh = Sequential(Conv2d(2, 3, 3, padding=1), BatchNorm2d(3), Flatten(), Dense(48, 2))
    fresh.load_state_dict(model.state_dict())
    fresh.eval()
    np.testing.assert_array_equal(fresh(x).array, expected)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored(x).array, expected)
    with pytest.raises(ValueError, match="missing keys"):
        fresh.load_state_dict({k: v for k, v in state.items() if "running" not in k})


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        BatchNorm1d(3)(to_tensor(randn(1, 3)))
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3\): expected input with 3 channels"):
        BatchNorm2d(3)(to_tensor(randn(2, 3, 4)))
    with pytest.raises(
        TypeError, match=r"BatchNorm2d: momentum must be a finite number in \[0, 1\]"
    ):
        BatchNorm2d(3, momentum="0.1")
    assert BatchNorm2d(3, momentum=None).momentum is None  # torch's cumulative average
    layer = BatchNorm1d(3).eval()  # one sample is fine with running statistics
    assert layer(to_tensor(randn(1, 3))).shape == (1, 3)


# ====================================================================== the digits CNN


def test_digits_cnn_reaches_98_percent_test_accuracy():
    """The README's example (examples/digits_cnn.py): a few seconds on a quiet 2-core CPU."""
    pytest.importorskip("sklearn")
    digits_cnn = pytest.importorskip("examples.digits_cnn")
    model, accuracy = digits_cnn.train(epochs=10, seed=0)
    assert accuracy >= 0.98
    assert all(layer.training for layer in model.layers())  # back in training mode


# ====================================================================== backends


def _outputs_and_grads(model, x, xp):
    """Logits and parameter gradients of ``model`` on the backend of ``xp``, on the host."""
    if xp is not np:
        model.to_gpu()
    out = model(Tensor(xp.asarray(x)))
    (out * out).sum().backward()
    grads = {name: backend.to_host_array(p.grad.array) for name, p in model.named_parameters()}
    result = backend.to_host_array(out.array), grads
    model.zero_grad()
    if xp is not np:
        model.from_gpu()
    return result


def _matches_the_torch_twin(model, x):
    """``model`` (the test below's) on the host gives the outputs, gradients and running
    statistics of torch.nn's layers with the same weights, training then evaluating."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    theirs = nn.Sequential(
        nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.BatchNorm2d(4), nn.MaxPool2d(2, stride=1),
        nn.Conv2d(4, 4, 2, dilation=2, groups=2), nn.AvgPool2d(2, padding=1), nn.Flatten(),
        nn.Linear(16, 3),
    )  # fmt: skip
    their_params = list(theirs.parameters())
    with torch.no_grad():
        for p, t in zip(model.parameters(), their_params, strict=True):
            t.copy_(torch.from_numpy(p.numpy().T if p.ndim == 2 else p.numpy()))  # Dense: (in, out)
    for mode in ("train", "eval"):
        getattr(model, mode)(), getattr(theirs, mode)()
        expected = theirs(torch.tensor(x))  # (2, 3)
        (expected * expected).sum().backward()
        out, grads = _outputs_and_grads(model, x, np)
        np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-4, atol=1e-5)
        for (name, grad), t in zip(grads.items(), their_params):
            t_grad = t.grad.numpy().T if t.ndim == 2 else t.grad.numpy()
            np.testing.assert_allclose(grad, t_grad, rtol=1e-3, atol=1e-5, err_msg=name)
        theirs.zero_grad()
        norm = model.sequence[1]
        for stat in ("running_mean", "running_var"):
            their_stat = getattr(theirs[1], stat).numpy()
            np.testing.assert_allclose(getattr(norm, stat).numpy(), their_stat, rtol=1e-5)


def test_conv_pool_and_batch_norm_on_every_backend(xp):
    np.random.seed(0)
    model = Sequential(
        Conv2d(3, 4, 3, stride=2, padding=1), BatchNorm2d(4), MaxPool2d(2, stride=1),
        Conv2d(4, 4, 2, dilation=2, groups=2), AvgPool2d(2, padding=1), Flatten(), Dense(16, 3),
    )  # fmt: skip
    x = randn(2, 3, 9, 9, dtype=np.float32)
    if xp is np:  # the host against itself would compare nothing: torch.nn's twin instead
        _matches_the_torch_twin(model, x)
        return
    for mode in ("train", "eval"):
        getattr(model, mode)()
        expected, expected_grads = _outputs_and_grads(model, x, np)
        out, grads = _outputs_and_grads(model, x, xp)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5, err_msg=mode)
        for name, grad in grads.items():
            np.testing.assert_allclose(grad, expected_grads[name], rtol=1e-3, atol=1e-5)
