"""PyTorch's padding options and unbatched inputs for the convolution and pooling layers: the
pad op (``F.pad``) against torch and against finite differences in every mode; ``padding=
"same"``/``"valid"`` and every ``padding_mode`` of Conv1d/Conv2d against torch.nn with copied
weights (forward and the gradients of the input, weights and bias); the unbatched (C, *size)
forms of each layer against torch's; and the errors torch raises too."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads, same_on_host_and
from tricycle import backend
from tricycle.nn.conv import conv
from tricycle.nn.padding import pad
from tricycle.tensor import Tensor, to_tensor

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's, for even kernels
MODES = ["constant", "reflect", "replicate", "circular"]
PADDING_MODES = ["zeros", "reflect", "replicate", "circular"]


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def compare(ours, theirs, x, rtol, atol, params=()):
    """The same input and output gradient through ``ours`` (a callable of a Tensor) and
    ``theirs`` (of a torch tensor): outputs, input gradients and each (ours, theirs)
    parameter gradient agree. Returns our output."""
    torch = pytest.importorskip("torch")
    X, tx = Tensor(x), torch.tensor(x, requires_grad=True)
    out, expected = ours(X), theirs(tx)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=atol)
    dout = randn(*out.shape, seed=9, dtype=x.dtype)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=rtol, atol=atol)
    for mine, their in params:
        np.testing.assert_allclose(mine.grad.array, their.grad.numpy(), rtol=rtol, atol=atol)
    return out


def torch_twin(ours, torch_class, *args, **kwargs):
    """torch.nn's layer built with the same arguments, holding a copy of our weights."""
    torch = pytest.importorskip("torch")
    theirs = torch_class(*args, **kwargs)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weights.numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.bias.numpy()))
    return theirs


# ====================================================================== the pad op


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "x_shape, pads",
    [
        ((2, 3, 5), (2, 3)),
        ((3, 5), (4, 1)),  # unbatched; reflect up to size - 1
        ((2, 3, 4, 5), (1, 0, 3, 2)),  # (left, right, top, bottom)
        ((3, 4, 4), (0, 0, 3, 3)),  # the second-last axis only
        ((1, 2, 1, 6), (2, 2, 0, 0)),  # a size-1 axis left alone
        ((2, 3, 5), (-1, -2)),  # negative pads crop
        ((2, 3, 4, 5), (-1, 2, 1, -2)),  # cropped, then padded
        ((2, 6, 6), (-2, -2, -2, -2)),  # ZeroPad2d(-2), as course22p2's autoencoder
    ],
)
def test_pad_matches_torch(mode, x_shape, pads):
    torch = pytest.importorskip("torch")
    value = 1.5 if mode == "constant" else 0.0
    compare(
        lambda t: F.pad(t, pads, mode, value),
        lambda t: torch.nn.functional.pad(t, pads, mode, value),
        randn(*x_shape),
        rtol=0,
        atol=1e-15,
    )


@st.composite
def pad_geometry(draw):
    """(x shape, pads, mode): 1-3 axes of size 1-4, 1 or 2 of them padded as far as the mode
    allows (reflect: below the size; circular: up to it)."""
    mode = draw(st.sampled_from(MODES), label="mode")
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    padded = draw(st.integers(1, min(2, len(shape))), label="padded axes")
    pads = []
    for n in reversed(shape[-padded:]):  # the last axis first
        most = {"reflect": n - 1, "circular": n}.get(mode, 3)
        pads += [draw(st.integers(0, most)), draw(st.integers(0, most))]
    return shape, tuple(pads), mode


@given(geometry=pad_geometry())
def test_pad_gradient_matches_finite_differences(geometry):
    shape, pads, mode = geometry
    out = check_grads(lambda x: pad(x, pads, mode), randn(*shape))
    widths = [pads[i] + pads[i + 1] for i in range(0, len(pads), 2)][::-1]
    assert out.shape == shape[: len(shape) - len(widths)] + tuple(
        n + w for n, w in zip(shape[-len(widths) :], widths)
    )


@pytest.mark.parametrize("mode", MODES)
def test_pad_in_a_diamond_graph(mode):
    """x is padded and multiplies its own padded copy: both paths' gradients add up."""
    check_grads(lambda x: pad(x, (2, 1, 1, 2), mode) * pad(x * 2.0, (2, 1, 1, 2), mode),
                randn(2, 3, 4))  # fmt: skip


def test_pad_errors():
    x = to_tensor(randn(1, 2, 4))
    with pytest.raises(ValueError, match=r"pad: reflect padding must be smaller than the axis "
                       r"it pads, got \(4, 0\) for axis 2 of size 4"):  # fmt: skip
        pad(x, (4, 0), "reflect")
    with pytest.raises(ValueError, match=r"pad: circular padding must be at most the axis"):
        pad(x, (0, 5), "circular")
    with pytest.raises(ValueError, match=r"pad: mode must be one of 'constant', 'reflect', "
                       r"'replicate', 'circular', got 'wrap'"):  # fmt: skip
        pad(x, (1, 1), "wrap")
    with pytest.raises(ValueError, match=r"pad: pads must be an even number, at most 6"):
        pad(x, (1,))
    with pytest.raises(TypeError, match=r"pad: pads must be .* got \(1.5, 1\)"):
        pad(x, (1.5, 1))
    with pytest.raises(ValueError, match=r"pad: negative padding crops more than the axis holds, "
                       r"got \(-3, -2\) for axis 2 of size 4"):  # fmt: skip
        pad(x, (-3, -2))
    with pytest.raises(ValueError, match=r"pad: mode 'reflect' takes no value, got value=2.0"):
        pad(x, (1, 1), "reflect", 2.0)


# ====================================================================== "same" and padding_mode

SAME = [  # (n, kernel, dilation, groups, size): odd and even kernels, dilation, groups
    (1, 3, 1, 1, 9),
    (1, 4, 1, 1, 9),  # overhang 3: one more on the right
    (1, 2, 3, 2, 10),  # overhang 3 with dilation
    (1, 4, 2, 1, 8),  # overhang 6: even again
    (2, (2, 3), (1, 2), 1, (7, 8)),
    (2, 4, 1, 2, (6, 5)),
    (2, (3, 2), (3, 1), 1, (9, 6)),
]


@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize("n, kernel, dilation, groups, size", SAME)
def test_same_padding_matches_torch_in_every_mode(padding_mode, n, kernel, dilation, groups, size):
    torch = pytest.importorskip("torch")
    np.random.seed(0)
    layer = {1: nn.Conv1d, 2: nn.Conv2d}[n]
    arguments = dict(padding="same", dilation=dilation, groups=groups, padding_mode=padding_mode)
    ours = layer(4, 6, kernel, **arguments)
    theirs = torch_twin(ours, getattr(torch.nn, layer.__name__), 4, 6, kernel, **arguments)
    x = randn(2, 4, *np.atleast_1d(size), dtype=np.float32)
    params = [(ours.weights, theirs.weight), (ours.bias, theirs.bias)]
    out = compare(ours, theirs, x, rtol=1e-4, atol=1e-5, params=params)
    assert out.shape == (2, 6) + x.shape[2:]  # "same": the input's size


@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize(
    "n, kernel, stride, padding, dilation",
    [(1, 3, 2, 2, 1), (1, 3, 1, "valid", 2), (2, (3, 2), (2, 1), (2, 1), (1, 2))],
)
def test_padding_modes_match_torch(padding_mode, n, kernel, stride, padding, dilation):
    torch = pytest.importorskip("torch")
    np.random.seed(1)
    layer = {1: nn.Conv1d, 2: nn.Conv2d}[n]
    arguments = dict(stride=stride, padding=padding, dilation=dilation, padding_mode=padding_mode)
    ours = layer(3, 4, kernel, **arguments)
    theirs = torch_twin(ours, getattr(torch.nn, layer.__name__), 3, 4, kernel, **arguments)
    x = randn(2, 3, *(7,) * n, dtype=np.float32)
    params = [(ours.weights, theirs.weight), (ours.bias, theirs.bias)]
    compare(ours, theirs, x, rtol=1e-4, atol=1e-5, params=params)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_functional_conv_takes_padding_words_as_torch(padding):
    torch = pytest.importorskip("torch")
    x, w, b = randn(2, 4, 6, 7), randn(6, 2, 2, 3, seed=1), randn(6, seed=2)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    W, B = Tensor(w), Tensor(b)
    compare(
        lambda t: F.conv2d(t, W, B, 1, padding, (2, 1), 2),
        lambda t: torch.nn.functional.conv2d(t, tw, tb, 1, padding, (2, 1), 2),
        x,
        rtol=1e-10,
        atol=1e-10,
        params=[(W, tw), (B, tb)],
    )


def test_same_padding_gradients_match_finite_differences():
    """The odd overhang's extra zero is a pad op before the convolution: the gradients of
    input and weights through both, against finite differences."""
    check_grads(lambda x, w: conv(x, w, padding="same", dilation=(1, 3)),
                randn(1, 2, 5, 6), randn(3, 2, 2, 2, seed=1))  # fmt: skip


def test_padding_errors_as_torch():
    with pytest.raises(ValueError, match="Conv1d: padding='same' is not supported for strided"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="conv2d: padding='same' is not supported for strided"):
        conv(to_tensor(randn(1, 2, 5, 5)), to_tensor(randn(2, 2, 3, 3)), stride=(1, 2),
             padding="same")  # fmt: skip
    with pytest.raises(ValueError, match=r"Conv2d: padding_mode must be one of 'zeros', "
                       r"'reflect', 'replicate', 'circular', got 'zero'"):  # fmt: skip
        nn.Conv2d(2, 2, 3, padding_mode="zero")
    with pytest.raises(TypeError, match=r"Conv1d: padding must be .* or 'valid', got 'full'"):
        nn.Conv1d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match=r"Conv1d\(2 -> 2\) with padding_mode='reflect': pad: "
                       r"reflect padding must be smaller than the axis"):  # fmt: skip
        nn.Conv1d(2, 2, 3, padding=4, padding_mode="reflect")(to_tensor(randn(1, 2, 4)))
    with pytest.raises(ValueError, match="ConvTranspose2d: only padding_mode='zeros'"):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


def test_repr_names_the_padding():
    layer = nn.Conv2d(2, 3, 4, padding="same", padding_mode="circular")
    assert "padding=same" in repr(layer) and "padding_mode=circular" in repr(layer)
    assert "padding_mode" not in repr(nn.Conv2d(2, 3, 4))


@pytest.mark.parametrize(
    "settings",
    [{}, {"padding": 1}, {"padding": "same"}, {"stride": 2, "padding": (1, 2), "dilation": 2,
     "groups": 2, "bias": False, "padding_mode": "reflect"}],
)  # fmt: skip
def test_repr_shows_what_torchs_does(settings):
    torch = pytest.importorskip("torch")
    theirs = repr(torch.nn.Conv2d(4, 6, 3, **settings))  # the settings that are not defaults
    assert repr(nn.Conv2d(4, 6, 3, **settings)).split("  # ")[0] == theirs
    assert repr(nn.Conv1d(4, 6, 3)).split("  # ")[0] == repr(torch.nn.Conv1d(4, 6, 3))


# ====================================================================== unbatched inputs

UNBATCHED = [  # (layer, its arguments, unbatched input shape)
    ("Conv1d", (3, 4, 3), dict(stride=2, padding=1), (3, 9)),
    ("Conv2d", (3, 4, 3), dict(padding="same", padding_mode="reflect"), (3, 6, 5)),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, padding=1, output_padding=1), (3, 5)),
    ("ConvTranspose2d", (4, 2, (3, 2)), dict(stride=(2, 1), groups=2), (4, 4, 5)),
    ("MaxPool1d", (3,), dict(stride=2, padding=1), (3, 9)),
    ("MaxPool2d", (2,), {}, (3, 6, 7)),
    ("AvgPool1d", (3,), dict(stride=2), (3, 9)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False), (3, 7, 6)),
    ("AdaptiveAvgPool1d", (4,), {}, (3, 9)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (3, 7, 6)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", UNBATCHED, ids=[u[0] for u in UNBATCHED])
def test_unbatched_inputs_match_torch(name, args, kwargs, shape):
    torch = pytest.importorskip("torch")
    np.random.seed(2)
    ours = getattr(nn, name)(*args, **kwargs)
    if hasattr(ours, "weights"):
        theirs = torch_twin(ours, getattr(torch.nn, name), *args, **kwargs)
        params = [(ours.weights, theirs.weight), (ours.bias, theirs.bias)]
    else:
        theirs, params = getattr(torch.nn, name)(*args, **kwargs), []
    x = randn(*shape, dtype=np.float32)
    out = compare(ours, theirs, x, rtol=1e-4, atol=1e-5, params=params)
    batched = ours(to_tensor(x[None]))  # the same as a batch of one
    assert out.ndim == len(shape)
    np.testing.assert_allclose(out.array, batched.array[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "layer, shape, message",
    [
        (nn.Conv1d(2, 3, 3), (5,), r"Conv1d\(2 -> 3\): expected input \(batch, 2, length\), got "
         r"shape \(5,\) \(an unbatched input is \(2, length\)\)"),
        (nn.Conv2d(2, 3, 3), (1, 1, 2, 5, 5), r"Conv2d\(2 -> 3\): expected input"),
        (nn.Conv2d(2, 3, 3), (3, 5, 5), r"expected input \(batch, 2, height, width\)"),
        (nn.ConvTranspose2d(2, 3, 3), (5, 5), r"ConvTranspose2d\(2 -> 3\): expected input"),
        (nn.MaxPool1d(2), (5,), r"MaxPool1d: expected input \(batch, channels, \*1 spatial "
         r"axes\) or unbatched \(channels, \*1 spatial axes\), got shape \(5,\)"),
        (nn.AvgPool2d(2), (1, 1, 1, 4, 4), r"AvgPool2d: expected input .* got shape"),
        (nn.AdaptiveAvgPool2d(2), (4,), r"adaptive_avg_pool2d: expected .* or \(channels, "),
    ],
)  # fmt: skip
def test_other_ranks_are_refused_naming_the_accepted_ones(layer, shape, message):
    with pytest.raises(ValueError, match=message):
        layer(to_tensor(randn(*shape)))


def test_functional_conv_refuses_other_ranks():
    with pytest.raises(ValueError, match=r"conv1d: expected input \(batch, channels, \*1 spatial "
                       r"axes\) or unbatched \(channels, \*1 spatial axes\) for weights of shape "
                       r"\(3, 2, 3\), got shape \(5,\)"):  # fmt: skip
        conv(to_tensor(randn(5)), to_tensor(randn(3, 2, 3)))


# ====================================================================== on a GPU


@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("padding_mode", PADDING_MODES)
def test_same_padding_and_unbatched_inputs_on_the_gpu(cp, padding_mode):
    np.random.seed(3)
    layer = nn.Conv2d(3, 4, (2, 3), padding="same", dilation=(3, 1), padding_mode=padding_mode)
    for shape in [(2, 3, 7, 6), (3, 7, 6)]:

        def run(xp, shape=shape):
            out = layer(to_tensor(xp.asarray(randn(*shape, dtype=np.float32))))
            (out * out).sum().backward()
            return out

        same_on_host_and(cp, layer, run, rtol=1e-4, atol=1e-5)
        layer.from_gpu()


@pytest.mark.parametrize("name", ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"])
@pytest.mark.parametrize("batched", [True, False])
def test_functional_pooling_counts_its_own_spatial_axes_as_torch(name, batched):
    """F.max_pool2d of an unbatched (C, H, W) pools H and W, not a batch of 1-D rows."""
    torch = pytest.importorskip("torch")
    n = int(name[-2])
    shape = (2,) * batched + (3,) + (6,) * n
    x = np.random.default_rng(n + batched).standard_normal(shape).astype(np.float32)
    ours, theirs = to_tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = getattr(F, name)(ours, 2, 1, 1)
    expected = getattr(torch.nn.functional, name)(theirs, 2, 1, 1)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-6, atol=1e-6)
    weights = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    (out * to_tensor(weights)).sum().backward()
    expected.backward(torch.tensor(weights))
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=rf"{name}: expected input .* got shape \(6,\)"):
        getattr(F, name)(to_tensor(np.zeros(6)), 2)
