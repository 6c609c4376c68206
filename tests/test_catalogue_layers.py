"""ConvTranspose1d/2d, AdaptiveAvgPool1d/2d, InstanceNorm1d/2d and the 1-D pooling layers:
gradients against finite differences over random geometries (odd sizes, size-1 axes), forward
values and gradients against torch.nn with copied weights, and errors for bad inputs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads, same_on_host_and
from tricycle.layers import Sequential
from tricycle.nn.adaptive_pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, adaptive_avg_pool
from tricycle.nn.conv import AvgPool1d, MaxPool1d, conv
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d, conv_transpose
from tricycle.nn.instance_norm import InstanceNorm1d, InstanceNorm2d, instance_norm
from tricycle.tensor import Tensor, to_tensor


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def assert_close(ours, theirs, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def copy_into(theirs, ours, pairs):
    """Copy our parameters into torch's: pairs of (our attribute, their attribute)."""
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        for mine, their_name in pairs:
            getattr(theirs, their_name).copy_(torch.from_numpy(np.array(getattr(ours, mine).array)))


def compare_layer(ours, theirs, x, rtol, atol, params=()):
    """Forward and backward of the same input and output gradient through both layers: the
    outputs, the input gradients and each (ours, theirs) parameter gradient agree."""
    torch = pytest.importorskip("torch")
    X, tx = to_tensor(x) if x.dtype == np.float32 else Tensor(x), torch.tensor(x)
    tx.requires_grad_(True)
    out, expected = ours(X), theirs(tx)
    assert out.dtype == x.dtype
    assert_close(out.array, expected, rtol, atol)
    dout = randn(*out.shape, seed=9, dtype=x.dtype)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    assert_close(X.grad.array, tx.grad, rtol, atol)
    for mine, their_name in params:
        assert_close(getattr(ours, mine).grad.array, getattr(theirs, their_name).grad, rtol, atol)


# ====================================================================== ConvTranspose


@st.composite
def transpose_geometry(draw):
    """(x shape, weights shape, stride, padding, output_padding, groups, dilation)."""
    n = draw(st.sampled_from([1, 2]), label="spatial axes")
    groups = draw(st.sampled_from([1, 1, 2]), label="groups")
    in_per_group, out_per_group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    size = tuple(draw(st.integers(1, 4)) for _ in range(n))
    full = [(m - 1) * s + d * (k - 1) + 1 for m, k, s, d in zip(size, kernel, stride, dilation)]
    padding = tuple(
        draw(st.integers(0, max(0, (f + o - 1) // 2))) for f, o in zip(full, output_padding)
    )
    x_shape = (draw(st.integers(1, 2)), groups * in_per_group) + size
    w_shape = (groups * in_per_group, out_per_group) + kernel
    return x_shape, w_shape, stride, padding, output_padding, groups, dilation


@given(geometry=transpose_geometry(), with_bias=st.booleans())
def test_conv_transpose_gradients_match_finite_differences(geometry, with_bias):
    x_shape, w_shape, stride, padding, output_padding, groups, dilation = geometry

    def f(x, w, *b):
        bias = b[0] if b else None
        return conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation)

    arrays = [randn(*x_shape, seed=1), randn(*w_shape, seed=2)]
    arrays += [randn(w_shape[1] * groups, seed=3)] if with_bias else []
    check_grads(f, *arrays)


@pytest.mark.parametrize(
    "x_shape, w_shape, stride, padding, output_padding, groups, dilation",
    [
        ((2, 3, 7), (3, 4, 3), 1, 0, 0, 1, 1),
        ((2, 4, 5), (4, 3, 3), 2, 1, 1, 2, 1),
        ((1, 2, 3), (2, 1, 2), 1, 2, 2, 1, 3),  # output_padding past the reach of the input
        ((2, 3, 4, 5), (3, 2, 4, 4), 2, 1, 0, 1, 1),  # the DCGAN upsampling
        ((2, 4, 3, 5), (4, 1, 3, 2), (2, 1), (1, 0), (1, 0), 2, (1, 2)),
        ((1, 3, 1, 1), (3, 5, 1, 1), 1, 0, 0, 1, 1),  # size-1 axes, a 1x1 kernel
        ((2, 2, 3, 3), (2, 2, 3, 3), 3, 2, 2, 1, 1),
    ],
)
def test_conv_transpose_matches_pytorch(
    x_shape, w_shape, stride, padding, output_padding, groups, dilation
):
    torch = pytest.importorskip("torch")
    functional = {3: torch.nn.functional.conv_transpose1d, 4: torch.nn.functional.conv_transpose2d}
    x, w, b = randn(*x_shape), randn(*w_shape, seed=1), randn(w_shape[1] * groups, seed=2)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    geometry = (stride, padding, output_padding, groups, dilation)
    expected = functional[len(x_shape)](tx, tw, tb, *geometry)
    dout = randn(*expected.shape, seed=3)
    expected.backward(torch.tensor(dout))
    X, W, B = Tensor(x), Tensor(w), Tensor(b)
    out = conv_transpose(X, W, B, *geometry)
    out.backward(dout)
    assert_close(out.array, expected)
    for ours, theirs in [(X, tx), (W, tw), (B, tb)]:
        assert_close(ours.grad.array, theirs.grad)


def test_conv_transpose_is_the_adjoint_of_conv():
    """<conv(y, W), x> = <y, conv_transpose(x, W)> for the same stride, padding, dilation."""
    rng = np.random.default_rng(4)
    W = Tensor(rng.normal(size=(4, 3, 3, 2)))  # conv: 3 -> 4 channels; transposed: 4 -> 3
    y = Tensor(rng.normal(size=(2, 3, 9, 9)))
    x = Tensor(rng.normal(size=conv(y, W, stride=2, padding=1, dilation=(1, 2)).shape))
    back = conv_transpose(x, W, stride=2, padding=1, dilation=(1, 2))
    assert back.shape == y.shape
    forward = conv(y, W, stride=2, padding=1, dilation=(1, 2))
    np.testing.assert_allclose((forward.array * x.array).sum(), (y.array * back.array).sum())


@pytest.mark.parametrize("layer_class", [ConvTranspose1d, ConvTranspose2d])
def test_conv_transpose_layers_match_torch_layers_with_copied_weights(layer_class):
    torch = pytest.importorskip("torch")
    n = layer_class.n_dims
    arguments = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    ours = layer_class(4, 6, 3, **arguments)
    theirs = getattr(torch.nn, layer_class.__name__)(4, 6, 3, **arguments)
    copy_into(theirs, ours, [("weights", "weight"), ("bias", "bias")])
    x = randn(*(3, 4) + (5,) * n, dtype=np.float32)
    params = [("weights", "weight"), ("bias", "bias")]
    compare_layer(ours, theirs, x, rtol=1e-4, atol=1e-5, params=params)


def test_conv_transpose_initialisation_is_pytorchs_uniform():
    layer = ConvTranspose2d(4, 6, kernel_size=(3, 2), groups=2)
    bound = 1 / np.sqrt(3 * 6)  # fan_in = out_channels / groups * kernel area, as PyTorch
    assert layer.weights.shape == (4, 3, 3, 2) and layer.bias.shape == (6,)
    for t in (layer.weights, layer.bias):
        assert 0.7 * bound < np.abs(t.array).max() <= bound
    assert ConvTranspose1d(2, 3, 4, bias=False).bias is None
    upsample = ConvTranspose2d(3, 8, 4, stride=2, padding=1)  # doubles the height and width
    assert upsample(to_tensor(randn(1, 3, 5, 7))).shape == (1, 8, 10, 14)


def test_conv_transpose_reports_bad_arguments():
    x, w = to_tensor(randn(1, 3, 5)), to_tensor(randn(3, 2, 3))
    with pytest.raises(ValueError, match=r"ConvTranspose2d\(3 -> 4\): expected input \(batch, 3, "
                       r"height, width\), got shape \(2, 4, 5, 5\)"):  # fmt: skip
        ConvTranspose2d(3, 4, 3)(to_tensor(randn(2, 4, 5, 5)))
    with pytest.raises(ValueError, match=r"ConvTranspose1d: output_padding \(2,\) must be "
                       r"smaller than the stride \(2,\) or the dilation \(1,\)"):  # fmt: skip
        ConvTranspose1d(3, 4, 3, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="conv_transpose1d: input of shape .* does not fit "
                       r"weights of shape \(3, 2, 3\)"):  # fmt: skip
        conv_transpose(to_tensor(randn(1, 2, 5)), w)
    with pytest.raises(ValueError, match=r"conv_transpose1d: bias must have shape \(2,\)"):
        conv_transpose(x, w, to_tensor(randn(3)))
    with pytest.raises(ValueError, match="conv_transpose1d: padding .* leaves no output"):
        conv_transpose(x, w, padding=4)


# ====================================================================== AdaptiveAvgPool


@st.composite
def adaptive_geometry(draw):
    n = draw(st.sampled_from([1, 2]), label="spatial axes")
    lead = (draw(st.integers(1, 2)),) if draw(st.booleans(), label="batched") else ()
    size = tuple(draw(st.integers(1, 7)) for _ in range(n))
    out = tuple(draw(st.none() | st.integers(1, 8)) for _ in range(n))
    return lead + (draw(st.integers(1, 2)),) + size, out, n


@given(geometry=adaptive_geometry())
def test_adaptive_avg_pool_gradient_matches_finite_differences(geometry):
    x_shape, out, n = geometry
    pooled = check_grads(lambda x: adaptive_avg_pool(x, out, n), randn(*x_shape))
    expected = tuple(s if o is None else o for s, o in zip(x_shape[-n:], out))
    assert pooled.shape == x_shape[:-n] + expected


@pytest.mark.parametrize(
    "layer_class, x_shape, output_size",
    [
        (AdaptiveAvgPool2d, (2, 3, 7, 5), (3, 2)),
        (AdaptiveAvgPool2d, (2, 3, 7, 5), (None, 4)),
        (AdaptiveAvgPool2d, (2, 3, 4, 4), (6, 5)),  # larger than the input: bins share inputs
        (AdaptiveAvgPool2d, (3, 8, 6), 1),  # unbatched, global pooling
        (AdaptiveAvgPool2d, (2, 3, 1, 9), 4),
        (AdaptiveAvgPool1d, (2, 3, 7), 4),
        (AdaptiveAvgPool1d, (3, 5), 3),
    ],
)
def test_adaptive_avg_pool_layers_match_torch(layer_class, x_shape, output_size):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, layer_class.__name__)(output_size)
    compare_layer(layer_class(output_size), theirs, randn(*x_shape), rtol=1e-12, atol=1e-12)


def test_adaptive_avg_pool_errors():
    with pytest.raises(ValueError, match=r"AdaptiveAvgPool2d: output_size must be an integer "
                       r">= 1 or 2 of them \(or None\), got 0"):  # fmt: skip
        AdaptiveAvgPool2d(0)
    with pytest.raises(TypeError, match="AdaptiveAvgPool1d: output_size must be an integer"):
        AdaptiveAvgPool1d((2, 3))
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: expected a non-empty input "
                       r"\(batch, channels, \*2 spatial axes\) .* got shape \(5,\)"):  # fmt: skip
        AdaptiveAvgPool2d(2)(to_tensor(randn(5)))


# ====================================================================== InstanceNorm


@given(
    shape=st.lists(st.integers(1, 3), min_size=3, max_size=4).map(tuple),
    affine=st.booleans(),
    fixed_statistics=st.booleans(),
)
def test_instance_norm_gradients_match_finite_differences(shape, affine, fixed_statistics):
    if not fixed_statistics and np.prod(shape[2:]) == 1:
        shape = shape[:2] + (2,) + shape[3:]  # its own statistics need 2 positions
    C = shape[1]
    x = randn(*shape) * 2 + 1
    mean, var = randn(C, seed=5), np.random.default_rng(6).uniform(0.5, 2, size=C)
    stats = (mean, var) if fixed_statistics else ()

    def f(x, *affine_params):
        gamma, beta = affine_params or (None, None)
        return instance_norm(x, gamma, beta, 1e-5, *stats)[0]

    params = [randn(C, seed=7), randn(C, seed=8)] if affine else []
    check_grads(f, x, *params, rtol=1e-4, atol=1e-6)


def test_instance_norm_in_a_diamond_graph():
    check_grads(lambda x: instance_norm(x)[0] * x, randn(2, 3, 5))


@pytest.mark.parametrize("layer_class", [InstanceNorm1d, InstanceNorm2d])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("track_running_stats", [False, True])
def test_instance_norm_matches_torch_in_training_and_evaluation(
    layer_class, affine, track_running_stats
):
    torch = pytest.importorskip("torch")
    options = dict(momentum=0.3, affine=affine, track_running_stats=track_running_stats)
    ours = layer_class(4, **options)
    theirs = getattr(torch.nn, layer_class.__name__)(4, **options).double()
    params = [("gamma", "weight"), ("beta", "bias")] if affine else []
    if affine:  # not the ones and zeros they start from
        ours.gamma.array, ours.beta.array = randn(4, seed=1), randn(4, seed=2)
        copy_into(theirs, ours, params)
    shape = (3, 4, 5) if layer_class is InstanceNorm1d else (3, 4, 3, 5)
    for step in range(3):
        if step == 2:
            ours.eval(), theirs.eval()
        x = randn(*shape, seed=10 + step) * 2 + 1
        compare_layer(ours, theirs, x, rtol=1e-6, atol=1e-6, params=params)
        ours.zero_grad(), theirs.zero_grad()
        if track_running_stats:
            assert_close(ours.running_mean.array, theirs.running_mean, 1e-6, 1e-7)
            assert_close(ours.running_var.array, theirs.running_var, 1e-6, 1e-7)


def test_instance_norm_of_an_unbatched_input_and_errors():
    torch = pytest.importorskip("torch")
    x = randn(4, 6)
    compare_layer(InstanceNorm1d(4), torch.nn.InstanceNorm1d(4), x, rtol=1e-10, atol=1e-10)
    expected = (
        r"\(batch, 4, \*2 spatial axes\) or \(4, \*2 spatial axes\), got shape \(2, 3, 5, 5\)"
    )
    with pytest.raises(ValueError, match=r"InstanceNorm2d\(4\): expected input " + expected):
        InstanceNorm2d(4)(to_tensor(randn(2, 3, 5, 5)))
    with pytest.raises(ValueError, match=r"instance_norm: expected more than 1 spatial element "
                       r"per channel, got input shape \(2, 4, 1\)"):  # fmt: skip
        InstanceNorm1d(4)(to_tensor(randn(2, 4, 1)))
    with pytest.raises(ValueError, match="InstanceNorm1d: momentum must be a finite number"):
        InstanceNorm1d(4, momentum=2.0)


# ====================================================================== 1-D pooling layers


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: MaxPool1d(3, 2, 1), lambda t: t.nn.MaxPool1d(3, 2, 1)),
        (lambda: MaxPool1d(2), lambda t: t.nn.MaxPool1d(2)),
        (lambda: AvgPool1d(3, 2, 1), lambda t: t.nn.AvgPool1d(3, 2, 1)),
        (lambda: AvgPool1d(3, 1, 1, False, False), lambda t: t.nn.AvgPool1d(3, 1, 1, False, False)),
    ],
)
def test_1d_pooling_layers_match_torch(ours, theirs):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(11).permutation(2 * 3 * 9).reshape(2, 3, 9) * 0.1  # no ties
    compare_layer(ours(), theirs(torch), x, rtol=1e-12, atol=1e-12)


# ====================================================================== backends


def test_layers_on_every_backend(xp):
    """ConvTranspose2d, InstanceNorm2d (running statistics) and AdaptiveAvgPool2d on the
    array module of ``xp`` (cupy on a GPU) give the host's outputs and gradients; on the
    host, those of torch.nn's layers with the same weights."""
    model = Sequential(
        ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1, groups=1),
        InstanceNorm2d(4, affine=True, track_running_stats=True),
        AdaptiveAvgPool2d((3, 2)),
    )
    x = randn(2, 3, 5, 4, dtype=np.float32)

    def run(module):
        out = model(Tensor(module.asarray(x)))
        (out * out).sum().backward()
        return out

    if xp is np:  # the host against itself would compare nothing: torch's numbers instead
        torch = pytest.importorskip("torch")
        theirs = torch.nn.Sequential(
            torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
            torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
            torch.nn.AdaptiveAvgPool2d((3, 2)),
        )
        copy_into(theirs[0], model.sequence[0], [("weights", "weight"), ("bias", "bias")])
        copy_into(theirs[1], model.sequence[1], [("gamma", "weight"), ("beta", "bias")])
        for mode in ("train", "eval"):
            getattr(model, mode)(), getattr(theirs, mode)()
            out, expected = run(np), theirs(torch.tensor(x))  # (2, 4, 3, 2)
            (expected * expected).sum().backward()
            assert_close(out.array, expected, rtol=1e-4, atol=1e-5)
            for p, t in zip(model.parameters(), theirs.parameters(), strict=True):
                assert_close(p.grad.array, t.grad, rtol=1e-4, atol=1e-5)
            model.zero_grad(), theirs.zero_grad()
            norm, their_norm = model.sequence[1], theirs[1]
            assert_close(norm.running_mean.array, their_norm.running_mean, 1e-5, 1e-6)
            assert_close(norm.running_var.array, their_norm.running_var, 1e-5, 1e-6)
        return
    for mode in ("train", "eval"):
        getattr(model, mode)()
        same_on_host_and(xp, model, run, rtol=1e-4, atol=1e-5)
        model.from_gpu()
