"""torch's vision ops and the layers around them: ``F.affine_grid`` and ``F.grid_sample``
(every mode x padding mode x align_corners, 4-D and 5-D), max pooling's indices with
``MaxUnpool``, adaptive max pooling, ``EmbeddingBag`` and ``LazyLinear``. Each against torch
in float64, forward and every gradient (the grid's at its kinks too, where torch's convention
decides); grid_sample's backward against finite differences away from the kinks; the
Spatial Transformer tutorial's network trained a few steps in both (its loss falls in both,
and off the pixel centres every step is torch's); the errors for what does not fit."""

import itertools

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
import tricycle.optim as optim
from tricycle.nn.lazy import UninitializedParameter
from tricycle.tensor import Tensor

RTOL, ATOL = 1e-10, 1e-12


def _rng(seed=0):
    return np.random.default_rng(seed)


def _both(torch, ours, theirs, *arrays, grads=None):
    """ours(*Tensors) against theirs(*torch tensors) for the same float64 inputs and output
    gradient: outputs, and the gradients of the inputs at positions ``grads`` (all)."""
    grads = range(len(arrays)) if grads is None else grads
    mine = [Tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    yours = [torch.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    out, expected = ours(*mine), theirs(*yours)
    assert out.shape == tuple(expected.shape)
    dout = _rng(7).normal(size=out.shape)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=RTOL, atol=ATOL)
    for i in grads:
        np.testing.assert_allclose(mine[i].grad.array, yours[i].grad.numpy(), rtol=RTOL,
                                   atol=ATOL, err_msg=f"input {i}")  # fmt: skip
    return out


# ---------------------------------------------------------------------- grid_sample, affine_grid
PADDING_MODES = ("zeros", "border", "reflection")
SAMPLING = list(itertools.product((2, 3), ("bilinear", "nearest"), PADDING_MODES, (False, True)))


@pytest.mark.parametrize(("n", "mode", "padding_mode", "align_corners"), SAMPLING, ids=str)
def test_grid_sample_matches_torch(n, mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    rng = _rng(n)
    x = rng.normal(size=(2, 3, 5, 6) if n == 2 else (2, 2, 3, 4, 5))
    grid = rng.uniform(-1.7, 1.7, size=(2, 4, 7, 2) if n == 2 else (2, 3, 2, 4, 3))  # out too
    kwargs = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _both(torch, lambda a, g: F.grid_sample(a, g, **kwargs),
          lambda a, g: torch.nn.functional.grid_sample(a, g, **kwargs), x, grid)  # fmt: skip


@pytest.mark.parametrize("padding_mode", PADDING_MODES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_of_the_identity_grid_gives_torch_gradients_at_the_kinks(
    padding_mode, align_corners
):
    """The identity affine grid reads every pixel at an integer coordinate, where the
    bilinear weights' derivative jumps, and the outer ones on the border: the grid's
    gradient is torch's there (the right-hand derivative; zero where clamped)."""
    torch = pytest.importorskip("torch")
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    size = (2, 3, 6, 5)
    grid = torch.nn.functional.affine_grid(torch.tensor(theta), size, align_corners).numpy()
    ours = F.affine_grid(Tensor(theta), size, align_corners)
    np.testing.assert_allclose(ours.array, grid, rtol=0, atol=1e-15)
    kwargs = dict(padding_mode=padding_mode, align_corners=align_corners)
    out = _both(torch, lambda a, g: F.grid_sample(a, g, **kwargs),
                lambda a, g: torch.nn.functional.grid_sample(a, g, **kwargs),
                _rng().normal(size=size), grid)  # fmt: skip
    assert np.abs(out.array).max() > 0.1  # the image itself comes back


@pytest.mark.filterwarnings("ignore:Since version 1.3.0")  # torch's, for a 1-pixel axis
@pytest.mark.parametrize("size", [(2, 3, 5, 7), (3, 1, 1, 4), (2, 3, 4, 5, 6)], ids=str)
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(size, align_corners):
    torch = pytest.importorskip("torch")
    n = len(size) - 2
    theta = _rng(len(size)).normal(size=(size[0], n, n + 1))
    _both(torch, lambda t: F.affine_grid(t, size, align_corners),
          lambda t: torch.nn.functional.affine_grid(t, size, align_corners), theta)  # fmt: skip


def _grid_away_from_kinks(rng, shape, sizes, align_corners):
    """A grid (N, *points, n) whose source coordinates (in pixels, before padding) lie at
    least 0.1 from every integer and every half-integer, inside and outside the input: there
    no mode or padding mode has a kink (the borders and mirrors are integers or
    half-integers, and flat around the half-integers they mirror at)."""
    n = len(sizes)
    whole = rng.integers(-3, max(sizes) + 3, size=shape + (n,))
    fraction = rng.uniform(0.1, 0.4, size=shape + (n,)) + 0.5 * rng.integers(0, 2, shape + (n,))
    s = whole + fraction  # (..., n), listed (x, y[, z]) as the grid lists them
    size = np.array(sizes[::-1], dtype=np.float64)
    return 2 * s / (size - 1) - 1 if align_corners else (s + 0.5) * 2 / size - 1


@settings(max_examples=12)
@given(
    n=st.sampled_from([2, 3]),
    mode=st.sampled_from(["bilinear", "nearest"]),
    padding_mode=st.sampled_from(PADDING_MODES),
    align_corners=st.booleans(),
    sizes=st.lists(st.integers(2, 4), min_size=3, max_size=3),
    points=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    batch=st.integers(1, 2),
    channels=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_grid_sample_gradients_match_finite_differences(
    n, mode, padding_mode, align_corners, sizes, points, batch, channels, seed
):
    rng = _rng(seed)
    sizes, points = tuple(sizes[:n]), tuple(points[:n])
    x = rng.normal(size=(batch, channels) + sizes)
    grid = _grid_away_from_kinks(rng, (batch,) + points, sizes, align_corners)
    out = check_grads(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners),
                      x, grid)  # fmt: skip
    assert out.shape == (batch, channels) + points


def test_grid_sample_and_affine_grid_in_float32_stay_float32():
    theta = Tensor(np.array([[[0.8, 0.1, 0.05], [-0.1, 0.9, 0.0]]], dtype=np.float32))
    grid = F.affine_grid(theta, (1, 2, 5, 4))
    out = F.grid_sample(Tensor(_rng().normal(size=(1, 2, 6, 6)).astype(np.float32)), grid)
    assert grid.dtype == out.dtype == np.float32 and out.shape == (1, 2, 5, 4)


def _stn(nn, F):  # noqa: N803 - the tutorial's names, torch's or tricycle's modules
    """The Spatial Transformer Networks tutorial's network (its localisation net, affine
    regressor, affine_grid and grid_sample), with a smaller classifier and no dropout."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(
                nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
                nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            )  # fmt: skip
            self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True),
                                        nn.Linear(32, 3 * 2))  # fmt: skip
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.fc = nn.Linear(10 * 12 * 12, 4)

        def stn(self, x):
            xs = self.localization(x).reshape(-1, 10 * 3 * 3)
            theta = self.fc_loc(xs).reshape(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            return F.grid_sample(x, grid, align_corners=False)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(self.stn(x)), 2))
            return F.log_softmax(self.fc(x.reshape(x.shape[0], -1)), dim=1)

    return Net()


def _squares(n: int = 12):
    """Images (n, 1, 28, 28): a bright square in the corner its label (0-3) names, jittered."""
    rng = _rng(3)
    labels = np.arange(n) % 4
    images = rng.normal(scale=0.1, size=(n, 1, 28, 28))
    for image, label in zip(images, labels):
        top, left = 4 + 12 * (label // 2) + rng.integers(-2, 3), 4 + 12 * (label % 2)
        image[0, top : top + 8, left : left + 8] += 1.0
    return images, labels


@pytest.mark.parametrize("shift", [0.0, 0.03])
def test_the_spatial_transformer_tutorial_trains_as_in_torch(shift):
    """The tutorial starts from the identity transform (shift 0): every sampling point is
    then a pixel centre, where the grid's gradient is the one-sided derivative that the last
    bit of each coordinate picks, and torch rounds its affine grid's linspace otherwise than
    numpy (differently on different CPUs, too): there the losses start equal and fall in
    both. From a transform shifted off the pixel centres, training is torch's step for step."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = _stn(torch.nn, torch.nn.functional).double()
    theirs.fc_loc[2].weight.data.zero_()  # the tutorial's identity transform at first
    identity = torch.tensor([1, 0, shift, 0, 1, shift / 2], dtype=torch.float64)
    theirs.fc_loc[2].bias.data.copy_(identity)
    ours = _stn(nn, F).to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    images, labels = _squares()
    ours_opt = optim.SGD(ours.parameters(), lr=0.05)
    theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.05)
    losses, expected_losses = [], []
    for _ in range(4):
        loss = F.nll_loss(ours(Tensor(images)), labels)
        expected = torch.nn.functional.nll_loss(theirs(torch.tensor(images)), torch.tensor(labels))
        for opt, value in ((ours_opt, loss), (theirs_opt, expected)):
            opt.zero_grad()
            value.backward()
            opt.step()
        losses.append(float(loss.array))
        expected_losses.append(expected.item())
    theta = ours.fc_loc(ours.localization(Tensor(images)).reshape(-1, 90)).array
    assert not np.allclose(theta, identity.numpy())  # the transform learns
    assert losses[-1] < losses[0] and expected_losses[-1] < expected_losses[0]
    np.testing.assert_allclose(losses[0], expected_losses[0], rtol=1e-12)
    if shift:
        np.testing.assert_allclose(losses, expected_losses, rtol=1e-9)
        expected = theirs.state_dict()
        for name, value in nn.to_torch(ours).items():  # every weight trained as torch's
            np.testing.assert_allclose(value, expected[name].numpy(), rtol=1e-8, atol=1e-12,
                                       err_msg=name)  # fmt: skip


# ---------------------------------------------------------------------- indices and unpooling
@pytest.mark.parametrize(
    ("n", "shape", "kernel", "stride", "padding"),
    [(2, (2, 3, 7, 6), 3, 2, 1), (2, (2, 2, 8, 8), 2, None, 0), (1, (2, 3, 9), 3, 2, 1),
     (2, (3, 7, 5), 2, 1, 1)],  # the last: unbatched
    ids=str,
)  # fmt: skip
def test_max_pool_indices_match_torch(n, shape, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    x = _rng().normal(size=shape)
    pool, their_pool = getattr(F, f"max_pool{n}d"), getattr(torch.nn.functional, f"max_pool{n}d")
    ours = pool(Tensor(x), kernel, stride, padding, return_indices=True)
    theirs = their_pool(torch.tensor(x), kernel, stride, padding, return_indices=True)
    np.testing.assert_array_equal(ours[1].array, theirs[1].numpy())
    assert ours[1].dtype == np.int64 and not ours[1].requires_grad
    layer = (nn.MaxPool1d if n == 1 else nn.MaxPool2d)(kernel, stride, padding, return_indices=True)
    out, indices = layer(Tensor(x))
    np.testing.assert_array_equal(indices.array, theirs[1].numpy())
    np.testing.assert_allclose(out.array, theirs[0].numpy(), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("n", "shape", "kernel", "stride", "padding", "output_size"),
    [(2, (2, 3, 7, 6), 2, 2, 0, (7, 6)), (2, (2, 3, 7, 6), 3, 2, 1, (2, 3, 7, 6)),
     (1, (2, 2, 9), 3, 2, 0, None), (2, (3, 6, 5), 2, None, 0, [6, 5])],  # the last: unbatched
    ids=str,
)  # fmt: skip
def test_max_unpool_undoes_max_pool_as_torch(n, shape, kernel, stride, padding, output_size):
    torch = pytest.importorskip("torch")
    x = _rng(1).normal(size=shape)
    pooled, indices = getattr(torch.nn.functional, f"max_pool{n}d")(
        torch.tensor(x), kernel, stride, padding, return_indices=True
    )
    _, ours = getattr(F, f"max_pool{n}d")(Tensor(x), kernel, stride, padding, return_indices=True)
    unpool, their_unpool = F.max_unpool2d, torch.nn.functional.max_unpool2d
    if n == 1:
        unpool, their_unpool = F.max_unpool1d, torch.nn.functional.max_unpool1d
    out = _both(torch, lambda p: unpool(p, ours, kernel, stride, padding, output_size),
                lambda p: their_unpool(p, indices, kernel, stride, padding, output_size),
                pooled.numpy())  # fmt: skip
    layer = (nn.MaxUnpool1d if n == 1 else nn.MaxUnpool2d)(kernel, stride, padding)
    again = layer(Tensor(pooled.numpy()), ours, output_size=output_size)
    np.testing.assert_array_equal(again.array, out.array)


def test_max_pool_then_unpool_round_trips_the_maxima():
    x = _rng(2).normal(size=(2, 3, 8, 6))
    pooled, indices = nn.MaxPool2d(2, return_indices=True)(Tensor(x))
    back = nn.MaxUnpool2d(2)(pooled, indices)
    kept = back.array != 0
    assert kept.sum() == pooled.size and np.array_equal(back.array[kept], x[kept])


# ---------------------------------------------------------------------- adaptive max pooling
@pytest.mark.parametrize(
    ("n", "shape", "output_size"),
    [(2, (2, 3, 7, 6), (3, 4)), (2, (2, 3, 4, 4), (7, 3)), (2, (3, 5, 9), (4, None)),
     (2, (2, 3, 5, 5), 1), (1, (2, 3, 11), 4), (1, (3, 10), 3)],  # (3, 5, 9), (3, 10): unbatched
    ids=str,
)  # fmt: skip
def test_adaptive_max_pool_matches_torch(n, shape, output_size):
    torch = pytest.importorskip("torch")
    ours_fn, theirs_fn = (getattr(F, f"adaptive_max_pool{n}d"),
                          getattr(torch.nn.functional, f"adaptive_max_pool{n}d"))  # fmt: skip
    x = _rng(4).normal(size=shape)
    _both(torch, lambda t: ours_fn(t, output_size), lambda t: theirs_fn(t, output_size), x)
    out, indices = (nn.AdaptiveMaxPool1d if n == 1 else nn.AdaptiveMaxPool2d)(
        output_size, return_indices=True
    )(Tensor(x))
    expected, expected_indices = theirs_fn(torch.tensor(x), output_size, return_indices=True)
    np.testing.assert_array_equal(indices.array, expected_indices.numpy())
    np.testing.assert_array_equal(out.array, expected.numpy())


# ---------------------------------------------------------------------- EmbeddingBag
BAGS = [  # (input, offsets, settings)
    (np.array([1, 2, 4, 5, 4, 3, 2, 6]), np.array([0, 3, 3, 5]), {}),  # an empty bag
    (np.array([1, 2, 4, 5, 4, 3, 2, 6]), np.array([0, 3, 3, 5, 8]), {"include_last_offset": True}),
    (np.array([[1, 2, 4], [5, 4, 3]]), None, {}),  # (bags, ids)
    (np.array([[1, 2, 2], [5, 0, 3]]), None, {"padding_idx": 2}),
    (np.array([1, 2, 2, 5, 2, 3]), np.array([0, 1, 3]), {"padding_idx": -5}),  # a bag of padding
]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "weighted"), [("sum", False), ("sum", True), ("mean", False), ("max", False)]
)
@pytest.mark.parametrize(("ids", "offsets", "settings"), BAGS, ids=str)
def test_embedding_bag_matches_torch(mode, weighted, ids, offsets, settings):
    torch = pytest.importorskip("torch")
    table, weights = _rng(5).normal(size=(7, 4)), _rng(6).normal(size=ids.shape)
    t_ids, t_offsets = torch.tensor(ids), None if offsets is None else torch.tensor(offsets)
    kwargs = dict(settings, mode=mode)
    if weighted:
        _both(torch, lambda w, p: F.embedding_bag(ids, w, offsets, per_sample_weights=p, **kwargs),
              lambda w, p: torch.nn.functional.embedding_bag(t_ids, w, t_offsets,
                                                             per_sample_weights=p, **kwargs),
              table, weights)  # fmt: skip
    else:
        _both(torch, lambda w: F.embedding_bag(ids, w, offsets, **kwargs),
              lambda w: torch.nn.functional.embedding_bag(t_ids, w, t_offsets, **kwargs),
              table)  # fmt: skip


def test_embedding_bag_layer_as_torch_max_ties_to_the_first():
    """nn.EmbeddingBag with torch's weights: the same bags and gradient; with a table of
    zeros every row ties, and the max sends each gradient to its bag's first id, as torch."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for weight in (None, torch.zeros(6, 3, dtype=torch.float64)):
        theirs = torch.nn.EmbeddingBag(6, 3, mode="max", padding_idx=0, _weight=weight).double()
        ours = nn.EmbeddingBag(6, 3, mode="max", padding_idx=0)
        assert ours.weight.array[0].tolist() == [0, 0, 0] and ours.weight.shape == (6, 3)
        ours.to(dtype=np.float64).load_state_dict({"weight": theirs.weight.detach().numpy()})
        ids, offsets = np.array([3, 1, 0, 4, 4, 2, 5]), np.array([0, 3, 5])
        out = ours(ids, offsets)
        expected = theirs(torch.tensor(ids), torch.tensor(offsets))
        dout = _rng().normal(size=out.shape)
        out.backward(dout)
        expected.backward(torch.tensor(dout))
        np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(ours.weight.grad.array, theirs.weight.grad.numpy(), rtol=RTOL,
                                   atol=ATOL)  # fmt: skip
    assert "mode='max'" in repr(ours) and "padding_idx=0" in repr(ours)


# ---------------------------------------------------------------------- LazyLinear
def test_lazy_linear_reads_in_features_from_its_first_input_as_torch():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.LazyLinear(2, bias=False))
    before = model.parameters()
    assert [type(p) for p in before] == [UninitializedParameter] * 3  # torch's: the same class
    assert [type(p).__name__ for p in torch.nn.LazyLinear(5).parameters()] == [
        "UninitializedParameter"
    ] * 2
    assert "in_features=0" in repr(model)
    with pytest.raises(ValueError, match="uninitialized parameter.*call the layer"):
        before[0] * 2.0
    model.double()  # before the first call: the dtype the parameters will be made in
    optimizer = optim.SGD(model.parameters(), lr=0.1)  # built before the first call, as torch
    x = _rng().normal(size=(3, 4))
    out = model(Tensor(x))
    after = model.parameters()
    assert all(a is b for a, b in zip(before, after))  # made in place: the optimizer holds them
    assert [p.shape for p in after] == [(4, 5), (5,), (5, 2)] and out.dtype == np.float64
    assert [type(p) for p in after] == [nn.Parameter] * 3
    assert all(type(layer) is nn.Linear for layer in model.layers()[1::2])  # now Dense layers
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(),
                                 torch.nn.Linear(5, 2, bias=False)).double()  # fmt: skip
    theirs.load_state_dict({k: torch.tensor(v) for k, v in nn.to_torch(model).items()})
    out = model(Tensor(x))
    expected = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=RTOL, atol=ATOL)
    out.sum().backward()
    expected.sum().backward()
    weights = after[0].array.copy()
    optimizer.step()  # the optimizer built before the first call updates the parameters
    np.testing.assert_allclose(after[0].array, weights - 0.1 * theirs[0].weight.grad.numpy().T,
                               rtol=RTOL, atol=ATOL)  # fmt: skip


def test_lazy_linear_data_before_the_first_call_is_torchs_empty_tensor():
    """``layer.weight.data.normal_(0, 0.01)`` before the first call ("Dive into Deep
    Learning"'s ``LinearRegression``) runs, as in torch, on an empty tensor: it changes
    nothing, and the first call initialises the layer (Glorot's here, torch's its own)."""
    torch = pytest.importorskip("torch")
    ours, theirs = nn.LazyLinear(3), torch.nn.LazyLinear(3)
    for weight, bias in (ours.weights, ours.bias), (theirs.weight, theirs.bias):
        assert tuple(weight.data.shape) == (0,) and not weight.data.requires_grad
        weight.data.normal_(0, 0.01)
        bias.data.fill_(0)
    ours.bias.data = Tensor(np.zeros(0, np.float32))  # assigning keeps torch's setter
    assert type(ours.weights) is UninitializedParameter
    x = _rng().normal(size=(2, 4)).astype(np.float32)
    out = ours(Tensor(x))
    theirs(torch.tensor(x))
    assert ours.weights.shape == (4, 3) and ours.weights.data.shape == (4, 3)
    assert np.abs(ours.weights.array).max() > 0.05  # initialised at the first call, not 0.01's
    np.testing.assert_allclose(
        out.array, x @ ours.weights.array + ours.bias.array, rtol=RTOL, atol=ATOL
    )


# ---------------------------------------------------------------------- errors
ERRORS = [
    (lambda: F.grid_sample(Tensor(np.zeros((1, 1, 4, 4))), Tensor(np.zeros((1, 2, 2, 3)))),
     ValueError, r"grid_sample: expected grid \(1, Ho, Wo, 2\)"),
    (lambda: F.grid_sample(Tensor(np.zeros((1, 1, 4))), Tensor(np.zeros((1, 2, 1)))),
     ValueError, r"grid_sample: expected a non-empty input \(N, C, H, W\)"),
    (lambda: F.grid_sample(Tensor(np.zeros((1, 1, 4, 4))), Tensor(np.zeros((1, 2, 2, 2)),
                                                                  dtype=np.float32)),
     TypeError, "input .float64. and grid .float32. must have one dtype"),
    (lambda: F.grid_sample(Tensor(np.zeros((1, 1, 4, 4))), Tensor(np.zeros((1, 2, 2, 2))),
                           mode="bicubic"), ValueError, "'bicubic' is not supported"),
    (lambda: F.grid_sample(Tensor(np.zeros((1, 1, 4, 4))), Tensor(np.zeros((1, 2, 2, 2))),
                           padding_mode="wrap"), ValueError, "padding_mode"),
    (lambda: F.affine_grid(Tensor(np.zeros((2, 2, 3))), (3, 1, 4, 4)),
     ValueError, r"affine_grid: expected theta \(3, 2, 3\)"),
    (lambda: F.affine_grid(Tensor(np.zeros((1, 2, 3))), (1, 4, 4)), ValueError, "size"),
    (lambda: F.affine_grid(Tensor(np.zeros((1, 2, 3), dtype=np.int64)), (1, 1, 4, 4)),
     TypeError, "affine_grid: needs a floating tensor"),
    (lambda: F.max_pool2d(Tensor(np.zeros((1, 1, 4, 4))), 2, dilation=0),
     ValueError, "dilation"),
    (lambda: nn.MaxPool2d(2, ceil_mode="yes"), TypeError, "ceil_mode"),
    (lambda: F.max_unpool2d(Tensor(np.zeros((1, 1, 2, 2))), np.full((1, 1, 2, 2), 99), 2),
     IndexError, r"max_unpool2d: indices must lie in \[0, 16\)"),
    (lambda: F.max_unpool2d(Tensor(np.zeros((1, 1, 2, 2))), np.zeros((1, 1, 2, 2)), 2),
     TypeError, "indices must be integers"),
    (lambda: F.max_unpool2d(Tensor(np.zeros((1, 1, 2, 2))), np.zeros((1, 1, 4), dtype=int), 2),
     ValueError, "must have the input's shape"),
    (lambda: F.max_unpool2d(Tensor(np.zeros((1, 1, 2, 2))), np.zeros((1, 1, 2, 2), dtype=int),
                            2, output_size=(7, 4)), ValueError, "axis 0 must lie strictly"),
    (lambda: F.adaptive_max_pool2d(Tensor(np.zeros((1, 1, 4, 4))), 0), ValueError, "output_size"),
    (lambda: F.adaptive_max_pool1d(Tensor(np.zeros((1, 1, 1, 4))), 2),
     ValueError, "adaptive_max_pool1d: expected a non-empty input"),
    (lambda: F.embedding_bag(np.array([1, 2]), Tensor(np.zeros((4, 2))), np.array([1])),
     ValueError, "offsets must start at 0"),
    (lambda: F.embedding_bag(np.array([[1, 2]]), Tensor(np.zeros((4, 2))), np.array([0])),
     ValueError, "takes no offsets"),
    (lambda: F.embedding_bag(np.array([1, 2]), Tensor(np.zeros((4, 2)))),
     ValueError, "a 1-D input needs offsets"),
    (lambda: F.embedding_bag(np.array([[1, 2]]), Tensor(np.zeros((4, 2))),
                             per_sample_weights=Tensor(np.ones((1, 2)))),
     ValueError, "per_sample_weights is only for mode 'sum'"),
    (lambda: F.embedding_bag(np.array([[1, 7]]), Tensor(np.zeros((4, 2)))),
     IndexError, r"ids must lie in \[0, 4\)"),
    (lambda: F.embedding_bag(np.array([[1.0, 2]]), Tensor(np.zeros((4, 2)))),
     TypeError, "input must be integers"),
    (lambda: nn.EmbeddingBag(4, 2, mode="median"), ValueError, "mode"),
    (lambda: nn.EmbeddingBag(4, 2, max_norm=1.0), ValueError, "max_norm is not supported"),
    (lambda: nn.EmbeddingBag(4, 2, padding_idx=4), ValueError, "padding_idx"),
    (lambda: nn.LazyLinear(3)(Tensor(np.zeros((2, 0)))), ValueError, "LazyLinear"),
    (lambda: nn.LazyLinear(0), ValueError, "out_features"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), ERRORS, ids=range(len(ERRORS)))
def test_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
