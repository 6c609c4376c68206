"""Channel-wise dropout (``tricycle.nn.channel_dropout``) against torch's: which values share a
mask entry (the whole channel of a sample, for every rank each function takes, batched or
not, warnings included), the scaling, the gradient (upstream times the same mask, also
against finite differences), the identity in eval mode and at p = 0, zeros at p = 1, the
layers' names and arguments, and bad input refused naming the function."""

import warnings

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

CASES = [  # (function, input shape, the axes along which one mask entry holds)
    ("dropout1d", (6, 5, 7), (2,)),
    ("dropout1d", (40, 7), (1,)),  # unbatched (C, L)
    ("dropout2d", (6, 5, 3, 4), (2, 3)),
    ("dropout2d", (40, 3, 4), (2,)),  # read as (N, C, L), as torch does (with a warning)
    ("dropout2d", (20, 16), ()),  # (N, C): each value its own channel (mnist_rnn's input)
    ("dropout3d", (4, 5, 2, 3, 2), (2, 3, 4)),
    ("dropout3d", (30, 2, 3, 2), (1, 2, 3)),  # unbatched (C, D, H, W)
]


def run(library, name: str, x: np.ndarray, upstream: np.ndarray, p: float):
    """(output, input gradient) of ``library``'s F.<name> on x, backward from ``upstream``."""
    t = library.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated ranks warn: test_warnings checks that
        y = getattr(library.nn.functional, name)(t, p, training=True)
    (y * library.tensor(upstream)).sum().backward()
    as_numpy = (lambda a: a.detach().numpy()) if library is torch else (lambda a: a.numpy())
    return as_numpy(y), as_numpy(t.grad)


@pytest.mark.parametrize("name, shape, shared", CASES)
def test_a_channel_is_dropped_whole_as_torchs(name, shape, shared):
    p = 0.4
    x = np.random.default_rng(0).uniform(1, 2, size=shape)  # no zeros: y / x is the mask
    upstream = np.random.default_rng(1).normal(size=shape)
    tricycle.manual_seed(0)
    torch.manual_seed(0)
    for library in (torch, tricycle):
        y, dx = run(library, name, x, upstream, p)
        mask = y / x
        assert set(np.unique(np.round(mask, 12))) <= {0.0, round(1 / (1 - p), 12)}, library
        if shared:  # one entry per channel: constant along the channel's own axes
            np.testing.assert_allclose(mask, np.broadcast_to(mask.max(shared, keepdims=True),
                                                             shape))  # fmt: skip
        dropped = np.mean(mask == 0)
        assert 0.2 < dropped < 0.6, (library, dropped)  # p = 0.4 over >= 80 channels
        np.testing.assert_allclose(dx, upstream * mask, rtol=1e-12)  # the same mask


def test_gradient_matches_finite_differences():
    x = np.random.default_rng(2).normal(size=(3, 4, 2, 2))
    shapes = {"dropout1d": (3, 4, 4), "dropout2d": (3, 4, 2, 2), "dropout3d": (6, 2, 2, 2)}
    for name, shape in shapes.items():  # dropout3d's unbatched (C, D, H, W) too
        function = getattr(F, name)
        check_grads(
            lambda t, f=function: f(t, 0.5, rng=np.random.default_rng(0)) * t,  # one mask
            x.reshape(shape),
        )


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
def test_identity_in_eval_and_at_p_0_and_zeros_at_p_1(name):
    x = np.random.default_rng(3).normal(size=(2, 3, 4, 5, 6)[: 3 if name == "dropout1d" else 5])
    x = x[..., 0] if name == "dropout2d" else x  # (N, C, H, W)
    function = getattr(F, name)
    ours = Tensor(x, requires_grad=True)
    assert function(ours, 0.5, training=False) is ours and function(ours, 0.0) is ours
    zeros = function(ours, 1.0)
    zeros.sum().backward()
    theirs = getattr(torch.nn.functional, name)(torch.tensor(x), 1.0)
    np.testing.assert_array_equal(zeros.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), np.zeros_like(x))


def test_the_layers_take_torchs_arguments_and_follow_train_and_eval():
    tricycle.manual_seed(0)
    x = np.ones((16, 8, 3, 3), dtype=np.float32)
    layer = nn.Dropout2d(p=0.25)
    assert layer.probability == 0.25 and nn.Dropout2d().probability == 0.5
    assert repr(nn.Dropout1d(0.1)).startswith("Dropout1d(") and nn.Dropout3d(inplace=True)
    mask = layer(x).numpy()
    assert set(np.unique(mask)) == {0.0, np.float32(1 / 0.75)}
    np.testing.assert_array_equal(mask, np.broadcast_to(mask[:, :, :1, :1], mask.shape))
    tricycle.manual_seed(0)
    np.testing.assert_array_equal(nn.Dropout2d(p=0.25)(x).numpy(), mask)  # seeded: repeats
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x)
    assert isinstance(layer, nn.Dropout)  # a dropout: a Transformer's clones reseed it


def test_warnings_and_errors_name_the_function():
    two_d = tricycle.ones(4, 8)
    for library, x in ((torch, torch.ones(4, 8)), (tricycle, two_d)):
        with pytest.warns(UserWarning, match="dropout2d"):  # both warn for (N, C) and (N, C, L)
            library.nn.functional.dropout2d(x)
        with pytest.warns(UserWarning, match="dropout2d"):
            library.nn.functional.dropout2d(x.unsqueeze(-1))
    with pytest.raises(ValueError, match=r"F.dropout1d: input's rank must be 2 \(C, L\) or 3"):
        F.dropout1d(tricycle.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"F.dropout2d: p must be"):
        F.dropout2d(tricycle.ones(2, 3, 4, 5), p=1.5)
    with pytest.raises(ValueError, match=r"F.dropout3d: input's shape must be \(N, C, \.\.\.\)"):
        with pytest.warns(UserWarning):
            F.dropout3d(tricycle.ones(5))
    with pytest.raises(TypeError, match="F.dropout2d: training must be"):
        F.dropout2d(tricycle.ones(2, 3, 4, 5), 0.5, "yes")


@pytest.mark.parametrize(
    ("name", "kwargs", "shape"),
    [("dropout", {}, (4, 6)), ("alpha_dropout", {"training": True}, (4, 6)),
     ("feature_alpha_dropout", {"training": True}, (4, 3, 5)), ("dropout1d", {}, (4, 3, 5)),
     ("dropout2d", {}, (2, 3, 4, 4)), ("dropout3d", {}, (2, 3, 2, 2, 2))],
)  # fmt: skip
def test_inplace_writes_the_input_and_returns_it_as_torchs(name, kwargs, shape):
    """``inplace=True`` writes the dropped values into the input and returns it, as torch's;
    written into an op's output, values and gradients are those of the same draw out of
    place; a leaf that requires grad (torch refuses to write it) is computed out of place,
    as an activation's ``inplace=True``."""
    values = np.random.default_rng(0).normal(size=shape)
    x, t = tricycle.tensor(values.copy()), torch.tensor(values.copy())
    assert getattr(F, name)(x, 0.5, inplace=True, **kwargs) is x
    assert getattr(torch.nn.functional, name)(t, 0.5, inplace=True, **kwargs) is t
    assert not np.allclose(x.numpy(), values) and not np.allclose(t.numpy(), values)

    def run(inplace):
        tricycle.manual_seed(3)
        leaf = tricycle.tensor(values.copy(), requires_grad=True)
        h = leaf * 1.0
        out = getattr(F, name)(h, 0.5, inplace=inplace, **kwargs)
        assert (out is h) == inplace
        (out * out).sum().backward()
        return out.numpy(), leaf.grad.numpy()

    for ours, expected in zip(run(True), run(False)):
        np.testing.assert_array_equal(ours, expected)
    leaf = tricycle.tensor(values.copy(), requires_grad=True)
    out = getattr(F, name)(leaf, 0.5, inplace=True, **kwargs)
    assert out is not leaf and np.array_equal(leaf.numpy(), values)
