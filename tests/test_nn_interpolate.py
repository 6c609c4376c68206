"""``F.interpolate`` in every mode and the upsampling layers (``tricycle.nn.interpolate``,
``tricycle.nn.upsample``): against PyTorch forward and backward in float64 (every mode x
align_corners x scale_factor or size, up and down, non-integer, per axis, recomputed), against
finite differences (random shapes and factors), the nearest mode's repeat by whole factors
unchanged, and the errors for settings that do not fit."""

import numpy as np
import pytest
from helpers import check_grads, randn
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle.tensor import Tensor

SHAPES = {1: (2, 3, 5), 2: (2, 2, 4, 5), 3: (1, 2, 3, 4, 5)}
MODES = [  # (mode, spatial axes, antialias)
    ("nearest", 1, False), ("nearest", 2, False), ("nearest", 3, False),
    ("nearest-exact", 1, False), ("nearest-exact", 2, False), ("nearest-exact", 3, False),
    ("area", 1, False), ("area", 2, False), ("area", 3, False),
    ("linear", 1, False), ("bilinear", 2, False), ("bicubic", 2, False), ("trilinear", 3, False),
    ("bilinear", 2, True), ("bicubic", 2, True),
]  # fmt: skip
SETTINGS = [  # no axis keeps its size under a factor != 1 (see test_*_where_torch_disagrees)
    {"scale_factor": 2},  # up, a whole factor
    {"scale_factor": 0.5},  # down
    {"scale_factor": 1.7},  # up, not whole: torch maps with 1 / 1.7, not the sizes' ratio
    {"scale_factor": 0.6},  # down, not whole
    {"scale_factor": 1.7, "recompute_scale_factor": True},  # mapped by the sizes' ratio
    {"scale_factor": 0.6, "recompute_scale_factor": True},
    {"scale_factor": (2.5, 0.7, 1.3)},  # one per axis (as many as the input has)
    {"size": (7, 3, 6)},
    {"size": 3},
]


def _per_axis(settings: dict, n: int) -> dict:
    """The settings with their per-axis tuples cut to ``n`` spatial axes."""
    return {k: v[:n] if isinstance(v, tuple) else v for k, v in settings.items()}


def _against_torch(torch, ours, theirs, x, rtol=1e-10):
    """Our output and input gradient against torch's, for the same x and output gradient."""
    X, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(X), theirs(tx)
    assert out.shape == tuple(expected.shape)
    dout = randn(*out.shape, seed=7).astype(x.dtype)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=rtol / 10)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=rtol, atol=rtol / 10)
    return out


def _weighing(mode: str) -> bool:
    """Whether ``mode`` takes align_corners (the others refuse it: tested below)."""
    return mode in ("linear", "bilinear", "bicubic", "trilinear")


@pytest.mark.parametrize("settings", SETTINGS, ids=str)
@pytest.mark.parametrize(
    ("mode", "n", "antialias", "align_corners"),
    [(*m, a) for m in MODES for a in ([None, False, True] if _weighing(m[0]) else [None])],
    ids=str,
)
def test_interpolate_matches_torch(mode, n, antialias, align_corners, settings):
    torch = pytest.importorskip("torch")
    kwargs = dict(_per_axis(settings, n), mode=mode, align_corners=align_corners)
    kwargs.update({"antialias": True} if antialias else {})
    _against_torch(
        torch,
        lambda t: F.interpolate(t, **kwargs),
        lambda t: torch.nn.functional.interpolate(t, **kwargs),
        randn(*SHAPES[n]),
    )


def test_float32_matches_torch():
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 9, 7).astype(np.float32)
    for kwargs in [{"scale_factor": 2.3, "mode": "bilinear"}, {"size": 4, "mode": "bicubic"}]:
        out = _against_torch(
            torch,
            lambda t: F.interpolate(t, **kwargs),
            lambda t: torch.nn.functional.interpolate(t, **kwargs),
            x,
            rtol=1e-5,
        )
        assert out.dtype == np.float32


# ---------------------------------------------------------------------- finite differences
@given(
    mode=st.sampled_from(MODES),
    sizes=st.lists(st.integers(1, 5), min_size=3, max_size=3),
    factors=st.lists(st.sampled_from([0.5, 0.8, 1.2, 1.5, 2.0, 2.6]), min_size=3, max_size=3),
    align_corners=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_interpolate_matches_finite_differences(mode, sizes, factors, align_corners, seed):
    mode, n, antialias = mode
    sizes, factors = sizes[:n], factors[:n]
    factors = [max(f, 1 / s) for f, s in zip(factors, sizes)]  # at least one output per axis
    kwargs = {"scale_factor": tuple(factors), "mode": mode, "antialias": antialias}
    kwargs.update({"align_corners": align_corners} if _weighing(mode) else {})
    x = randn(2, 1, *sizes, seed=seed)
    out = check_grads(lambda t: F.interpolate(t, **kwargs), x)
    assert out.shape[2:] == tuple(int(s * f) for s, f in zip(sizes, factors))


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((1, 2, 3, 4), {"mode": "bicubic"}),
        ((1, 2, 3, 4), {"mode": "bilinear", "antialias": True}),
        ((1, 2, 3, 4), {"mode": "bicubic", "antialias": True}),
        ((1, 2, 3), {"mode": "nearest"}),
        ((1, 1, 2, 3, 4), {"mode": "nearest"}),
    ],
    ids=str,
)
def test_same_sized_axes_where_torch_disagrees_with_itself(shape, kwargs):
    """A factor that leaves an axis's size unchanged (1.2 on sizes 2 to 4): torch's backward
    kernels copy the gradient there while its forward kernels map by the factor (or the other
    way round), so its gradient is not its forward's. Ours is the forward's own derivative:
    the forward as torch's, the gradient as finite differences."""
    torch = pytest.importorskip("torch")
    kwargs = {"scale_factor": 1.2, **kwargs}
    x = randn(*shape)
    out = check_grads(lambda t: F.interpolate(t, **kwargs), x)
    expected = torch.nn.functional.interpolate(torch.tensor(x), **kwargs)
    np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- nearest, as before
def test_nearest_by_whole_factors_is_still_the_repeat():
    x = Tensor(randn(2, 3, 4, 5))
    for kwargs in [{"scale_factor": 2}, {"scale_factor": (3.0, 1.0)}, {"size": (8, 15)}]:
        out = F.interpolate(x, **kwargs)
        assert out.name == "upsample_nearest"
        factors = (out.shape[2] // 4, out.shape[3] // 5)
        expected = x.array.repeat(factors[0], axis=2).repeat(factors[1], axis=3)
        np.testing.assert_array_equal(out.array, expected)
    same = F.interpolate(x, size=(4, 5), mode="bilinear")  # nothing to do: still a new tensor
    assert same is not x
    np.testing.assert_array_equal(same.array, x.array)


def test_nearest_keeps_integer_inputs():
    ids = Tensor(np.arange(6).reshape(1, 1, 2, 3), requires_grad=False)
    out = F.interpolate(ids, size=(3, 2))
    assert out.dtype == ids.dtype
    np.testing.assert_array_equal(out.array, [[[[0, 1], [0, 1], [3, 4]]]])


# ---------------------------------------------------------------------- layers
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("Upsample", (), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": False}),
        ("Upsample", ((6, 3),), {"mode": "bicubic", "align_corners": True}),
        ("Upsample", (3,), {"mode": "area"}),
        ("Upsample", (), {"scale_factor": 2, "recompute_scale_factor": True}),
        ("UpsamplingNearest2d", (), {"scale_factor": 2}),
        ("UpsamplingNearest2d", ((7, 9),), {}),
        ("UpsamplingBilinear2d", (), {"scale_factor": 2}),
        ("UpsamplingBilinear2d", ((3, 8),), {}),
    ],
    ids=str,
)
def test_layers_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert not list(ours.parameters())
    _against_torch(torch, ours, theirs, randn(2, 3, 4, 5))


def test_layer_reprs():
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2, mode='nearest')"
    assert repr(nn.UpsamplingBilinear2d(4)) == (
        "UpsamplingBilinear2d(size=4, mode='bilinear', align_corners=True)"
    )


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("shape", "kwargs", "error", "match"),
    [
        ((1, 1, 4), {"scale_factor": 2, "mode": "cubic"}, ValueError, "mode must be one of"),
        ((1, 1, 4), {"scale_factor": 2, "mode": "bilinear"}, ValueError,
         r"F.interpolate: mode 'bilinear' needs a non-empty input \(N, C, H, W\), got shape "
         r"\(1, 1, 4\)"),
        ((1, 1, 4, 4), {"scale_factor": 2, "mode": "linear"}, ValueError, r"\(N, C, L\)"),
        ((1, 1, 4, 4), {"scale_factor": 2, "mode": "trilinear"}, ValueError, r"\(N, C, D, H, W\)"),
        ((1, 1, 2, 2, 2), {"scale_factor": 2, "mode": "bicubic"}, ValueError, "'bicubic' needs"),
        ((1, 4), {"scale_factor": 2}, ValueError, r"\(N, C, \*spatial\)"),
        ((1, 1, 0, 3), {"scale_factor": 2}, ValueError, "non-empty"),
        ((1, 1, 4), {}, ValueError, "give either size or scale_factor, not neither"),
        ((1, 1, 4), {"size": 8, "scale_factor": 2}, ValueError, "not both"),
        ((1, 1, 4), {"size": 8, "align_corners": True}, ValueError, "align_corners is only for"),
        ((1, 1, 4), {"size": 8, "mode": "area", "align_corners": False}, ValueError,
         "align_corners is only for"),
        ((1, 1, 4), {"size": 8, "mode": "linear", "antialias": True}, ValueError,
         "antialias=True is only for 'bilinear' and 'bicubic', not 'linear'"),
        ((1, 1, 4), {"size": 8, "recompute_scale_factor": True}, ValueError,
         "recompute_scale_factor=True needs scale_factor"),
        ((1, 1, 4, 4), {"scale_factor": (2, 2, 2)}, ValueError, "one factor per spatial axis"),
        ((1, 1, 4, 4), {"size": (2, 2, 2)}, ValueError, "F.interpolate: size must be"),
        ((1, 1, 4, 4), {"size": (2.0, 2)}, TypeError, "F.interpolate: size must be"),
        ((1, 1, 4, 4), {"size": 0}, ValueError, "F.interpolate: size must be an integer >= 1"),
        ((1, 1, 4, 4), {"scale_factor": 0.2}, ValueError, r"shrinks spatial size \(4, 4\)"),
        ((1, 1, 4, 4), {"scale_factor": -2}, ValueError, "scale_factor must be a finite number"),
        ((1, 1, 4, 4), {"scale_factor": True}, TypeError, "scale_factor must be"),
        ((1, 1, 4, 4), {"scale_factor": 2, "align_corners": 1, "mode": "bilinear"}, TypeError,
         "align_corners must be"),
    ],
)  # fmt: skip
def test_interpolate_refuses_settings_that_do_not_fit(shape, kwargs, error, match):
    with pytest.raises(error, match=match):
        F.interpolate(Tensor(np.ones(shape)), **kwargs)


def test_weighing_modes_refuse_integer_inputs():
    ids = Tensor(np.ones((1, 1, 4, 4), dtype=np.int64), requires_grad=False)
    with pytest.raises(TypeError, match="F.interpolate \\(mode 'bilinear'\\): needs a floating"):
        F.interpolate(ids, scale_factor=2, mode="bilinear")


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: nn.Upsample(), ValueError, "Upsample: give either size or scale_factor"),
        (lambda: nn.Upsample(4, 2), ValueError, "not both"),
        (lambda: nn.Upsample(scale_factor=2, mode="lanczos"), ValueError, "Upsample: mode"),
        (lambda: nn.Upsample(scale_factor=0), ValueError, "Upsample: scale_factor"),
        (lambda: nn.Upsample(4, align_corners=True), ValueError, "align_corners is only for"),
        (lambda: nn.Upsample(4, recompute_scale_factor=1), TypeError, "recompute_scale_factor"),
        (lambda: nn.UpsamplingBilinear2d(), ValueError, "UpsamplingBilinear2d: give either"),
    ],
)
def test_layers_refuse_settings_that_do_not_fit(make, error, match):
    with pytest.raises(error, match=match):
        make()
