"""Activations given ``inplace=True`` write their result into their input, as torch's do
(``tricycle.activation.InPlaceActivation``): a reference kept to the input sees the result
(VGG's features appended before ``ReLU(inplace=True)``), values and gradients are torch's, and
under ``no_grad()`` the input's own array is written. Where tricycle cannot write (an op
already uses the input) the result is computed out of place."""

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
import tricycle.nn.functional as F

LAYERS = {  # name -> (arguments): each takes inplace= in both libraries
    "ReLU": (), "LeakyReLU": (0.2,), "SiLU": (), "ELU": (0.7,), "SELU": (), "CELU": (1.3,),
    "Mish": (), "Hardtanh": (-0.5, 0.8), "ReLU6": (), "Hardsigmoid": (), "Hardswish": (),
    "Threshold": (0.1, -2.0),
}  # fmt: skip


def data() -> np.ndarray:
    return np.random.default_rng(0).normal(scale=2.0, size=(3, 4)).astype(np.float32)


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_kept_input_sees_the_result_and_gradients_are_torchs(name):
    torch = pytest.importorskip("torch")
    results = []
    for lib, module in (torch, torch.nn), (tricycle, nn):
        a = lib.tensor(data(), requires_grad=True)
        h = a * 1.5  # an op's output, used by no op yet
        kept = [h]  # a reference, as a feature list keeps one
        out = getattr(module, name)(*LAYERS[name], inplace=True)(h)
        assert out is h
        ((kept[0] * a).sum() + out.sum()).backward()
        results.append([kept[0].detach().numpy(), a.grad.numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_the_functional_forms_as_torchs():
    torch = pytest.importorskip("torch")
    calls = [
        lambda lib, f, x: f.relu(x, inplace=True),
        lambda lib, f, x: f.relu_(x),
        lambda lib, f, x: lib.relu_(x),
        lambda lib, f, x: x.relu_(),
        lambda lib, f, x: f.leaky_relu(x, 0.2, True),
        lambda lib, f, x: f.leaky_relu_(x, 0.3),
        lambda lib, f, x: f.silu(x, inplace=True),
        lambda lib, f, x: f.elu_(x),
        lambda lib, f, x: f.hardtanh_(x, -1.0, 1.0),
        lambda lib, f, x: f.threshold_(x, 0.5, 0.0),
    ]
    for call in calls:
        results = []
        for lib, f in (torch, torch.nn.functional), (tricycle, F):
            a = lib.tensor(data(), requires_grad=True)
            h = a - 0.25
            out = call(lib, f, h)
            assert out is h
            (out * a).sum().backward()
            results.append([h.detach().numpy(), a.grad.numpy()])
        for ours, theirs in zip(results[1], results[0]):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_vgg_features_kept_before_an_in_place_relu_are_its_output():
    """The pattern of a perceptual or style loss: keep each convolution's output, then run the
    ReLU(inplace=True) that follows it; torch's kept features are after the ReLU."""
    torch = pytest.importorskip("torch")
    def vgg(module):
        conv, relu = module.Conv2d, module.ReLU
        return module.Sequential(conv(3, 4, 3, padding=1), relu(inplace=True),
                                 conv(4, 2, 3, padding=1), relu(inplace=True))  # fmt: skip

    theirs, ours = vgg(torch.nn), vgg(nn)
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    image = np.random.default_rng(1).normal(size=(1, 3, 6, 6)).astype(np.float32)
    grads = []
    for lib, net in (torch, theirs), (tricycle, ours):
        x = lib.tensor(image, requires_grad=True)
        features, h = [], x
        for layer in net:
            h = layer(h)
            if isinstance(layer, (torch.nn.Conv2d, nn.Conv2d)):
                features.append(h)
        assert all(float(f.detach().min()) >= 0 for f in features)  # written by the ReLUs
        sum((f * f).sum() for f in features).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_under_no_grad_the_inputs_array_is_written():
    x = tricycle.tensor(data())
    array = x.array
    with tricycle.no_grad():
        out = nn.ReLU(inplace=True)(x * 1.0)
        y = nn.ReLU(inplace=True)(x)
    assert y is x and x.array is array and (array >= 0).all()
    np.testing.assert_array_equal(out.array, array)


def test_where_tricycle_cannot_write_it_computes_out_of_place():
    a = tricycle.tensor(data(), requires_grad=True)
    h = a * 1.5
    used = h * 2.0  # an op already uses h: its graph would change under it
    out = nn.ReLU(inplace=True)(h)
    assert out is not h and float(h.min()) < 0  # h as it was
    np.testing.assert_array_equal(out.array, np.maximum(h.array, 0))
    (out.sum() + used.sum()).backward()
    np.testing.assert_allclose(a.grad.array, 1.5 * (h.array > 0) + 3.0)
    leaf = tricycle.tensor(data(), requires_grad=True)  # a leaf that requires grad: not written
    assert nn.ReLU(inplace=True)(leaf) is not leaf and float(leaf.min()) < 0


def test_the_repr_and_the_default_are_torchs():
    torch = pytest.importorskip("torch")
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    x = tricycle.tensor(data())
    h = x * 1.0
    out = nn.ReLU()(h)
    assert out is not h and float(h.min()) < 0  # without inplace: out of place
