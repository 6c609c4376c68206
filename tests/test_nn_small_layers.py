"""torch's small layers and functions: the padding layers (``nn.ZeroPad2d``, ...,
``nn.CircularPad3d``), ``nn.Unflatten``, ``nn.PixelShuffle``/``nn.PixelUnshuffle`` and their
functions, ``nn.ParameterList``/``nn.ParameterDict``, ``nn.Bilinear``/``F.bilinear``,
``F.unfold``/``F.fold`` (and ``nn.Unfold``/``nn.Fold``), ``F.logsigmoid`` and
``F.adaptive_avg_pool1d/2d``. Each against torch in float64 (forward, and the gradients of the
inputs and the parameters), the new differentiable ones against finite differences, the
containers through everything that walks a model (an optimiser's step, ``state_dict``), and
the errors for bad input."""

import pickle

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import as_float64, check_grads, randn
from tricycle import backend, optim
from tricycle.optimisers import StochasticGradientDescent
from tricycle.tensor import Tensor


def compare(ours, theirs, *arrays, params=(), rtol=1e-12, atol=1e-12):
    """The same inputs and output gradient through ``ours`` (a callable of Tensors) and
    ``theirs`` (of torch tensors): the outputs, every input's gradient and each (ours,
    theirs) parameter's gradient agree. Returns our output."""
    torch = pytest.importorskip("torch")
    xs = [Tensor(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=atol)
    dout = randn(*out.shape, seed=9)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.array, t.grad.numpy(), rtol=rtol, atol=atol)
    for mine, their in params:
        np.testing.assert_allclose(mine.grad.array, their.grad.numpy(), rtol=rtol, atol=atol)
    return out


# ====================================================================== padding layers
PADS = {1: (2, 1), 2: (1, 0, 2, 1), 3: (1, 1, 0, 2, 1, 0)}
SHAPES = {1: (2, 3, 5), 2: (2, 3, 4, 5), 3: (1, 2, 3, 4, 5)}
FAMILIES = [("ZeroPad", ()), ("ConstantPad", (1.5,)), ("ReflectionPad", ()),
            ("ReplicationPad", ()), ("CircularPad", ())]  # fmt: skip


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("family, args", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_padding_layers_match_torch(family, args, n, batched):
    torch = pytest.importorskip("torch")
    name = f"{family}{n}d"
    ours, theirs = getattr(nn, name)(PADS[n], *args), getattr(torch.nn, name)(PADS[n], *args)
    shape = SHAPES[n] if batched else SHAPES[n][1:]
    compare(ours, theirs, randn(*shape))
    assert repr(ours) == repr(theirs)
    assert ours.parameters() == [] and ours.state_dict() == {}


def test_padding_layers_take_an_int_and_constant_ones_any_rank():
    torch = pytest.importorskip("torch")
    compare(nn.ReflectionPad2d(2), torch.nn.ReflectionPad2d(2), randn(2, 3, 4))
    compare(nn.ConstantPad1d(3, -2.0), torch.nn.ConstantPad1d(3, -2.0), randn(2, 1, 2, 4))
    compare(nn.ZeroPad2d((1, 2, 0, 3)), torch.nn.ZeroPad2d((1, 2, 0, 3)), randn(4, 5))
    compare(nn.ZeroPad2d(-2), torch.nn.ZeroPad2d(-2), randn(2, 1, 6, 7))  # negative: crops
    assert repr(nn.ZeroPad2d(-2)) == repr(torch.nn.ZeroPad2d(-2))
    compare(nn.ConstantPad1d((-1, 2), 0.5), torch.nn.ConstantPad1d((-1, 2), 0.5), randn(2, 4))


@pytest.mark.parametrize("name", ["ConstantPad2d", "ReflectionPad2d", "ReplicationPad2d",
                                  "CircularPad2d"])  # fmt: skip
def test_padding_layers_gradient_matches_finite_differences(name):
    layer = getattr(nn, name)((2, 1, 1, 3))
    out = check_grads(layer, randn(2, 4, 4))
    assert out.shape == (2, 8, 7)


def test_padding_layer_errors():
    x = Tensor(randn(2, 3))
    with pytest.raises(ValueError, match=r"ReflectionPad1d\(\(3, 3\)\): pad: reflect padding "
                       r"must be smaller than the axis it pads"):  # fmt: skip
        nn.ReflectionPad1d(3)(x)
    with pytest.raises(ValueError, match=r"CircularPad2d: expected input \(batch, channels, "
                       r"\*2 axes to pad\) or unbatched .*got shape \(2, 3\)"):  # fmt: skip
        nn.CircularPad2d(1)(x)
    with pytest.raises(ValueError, match=r"ZeroPad3d: expected an input with at least 3 axes"):
        nn.ZeroPad3d(1)(x)
    with pytest.raises(ValueError, match=r"ZeroPad2d: padding must be an integer or 4 of them"):
        nn.ZeroPad2d((1, 2, 3))
    with pytest.raises(TypeError, match=r"ConstantPad1d: padding must be an integer or 2 of"):
        nn.ConstantPad1d(1.5, 0.0)
    with pytest.raises(TypeError, match=r"ConstantPad1d: value must be a finite number"):
        nn.ConstantPad1d(1, "zero")


# ====================================================================== Unflatten


@pytest.mark.parametrize(
    "dim, sizes, shape",
    [(1, (2, 3, 2), (4, 12, 5)), (-1, (-1, 5), (3, 10)), (0, [1, 3], (3,)), (2, (1,), (2, 2, 1))],
)
def test_unflatten_matches_torch(dim, sizes, shape):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes)
    compare(ours, theirs, randn(*shape))
    assert repr(ours) == repr(theirs).replace("[1, 3]", "(1, 3)")  # sizes kept as a tuple
    x = Tensor(randn(*shape))
    np.testing.assert_array_equal(nn.Flatten(dim % len(shape), dim % len(shape) + len(sizes) - 1)(
        ours(x)).array, x.array)  # fmt: skip


def test_unflatten_errors():
    x = Tensor(randn(4, 6))
    with pytest.raises(ValueError, match=r"Unflatten: sizes \(4, 2\) do not multiply up to the "
                       r"size of dim 1 \(6\) of input \(4, 6\)"):  # fmt: skip
        nn.Unflatten(1, (4, 2))(x)
    with pytest.raises(ValueError, match=r"Unflatten: sizes \(4, -1\) do not multiply up"):
        nn.Unflatten(1, (4, -1))(x)
    with pytest.raises(ValueError, match=r"Unflatten: dim must be an integer in \[-2, 2\)"):
        nn.Unflatten(2, (2, 3))(x)
    for bad in [(2, -1, -1), (0, 6), ()]:
        with pytest.raises(ValueError, match=r"Unflatten: unflattened_size must be a tuple"):
            nn.Unflatten(1, bad)
    with pytest.raises(TypeError, match=r"Unflatten: unflattened_size must be a tuple"):
        nn.Unflatten(1, 6)


# ====================================================================== pixel shuffles


@pytest.mark.parametrize("shape, r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 1, 4, 3, 2), 2),
                                      ((1, 3, 2, 2), 1)])  # fmt: skip
def test_pixel_shuffle_and_unshuffle_match_torch(shape, r):
    torch = pytest.importorskip("torch")
    out = compare(nn.PixelShuffle(r), torch.nn.PixelShuffle(r), randn(*shape))
    compare(lambda x: F.pixel_shuffle(x, r), lambda t: torch.nn.functional.pixel_shuffle(t, r),
            randn(*shape))  # fmt: skip
    back = compare(nn.PixelUnshuffle(r), torch.nn.PixelUnshuffle(r), out.array)
    np.testing.assert_array_equal(back.array, randn(*shape))  # the inverse
    assert repr(nn.PixelShuffle(r)) == repr(torch.nn.PixelShuffle(r))
    assert repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))


@st.composite
def shuffle_geometry(draw):
    """(shape, r): 0-2 batch axes, C r^2 channels, H, W of 1-3."""
    r = draw(st.integers(1, 3), label="r")
    batch = draw(st.lists(st.integers(1, 2), max_size=2), label="batch")
    C, H, W = (draw(st.integers(1, 3)) for _ in range(3))
    return (*batch, C * r * r, H, W), r


@given(geometry=shuffle_geometry())
def test_pixel_shuffles_gradients_match_finite_differences(geometry):
    shape, r = geometry
    out = check_grads(lambda x: F.pixel_shuffle(x, r), randn(*shape))
    check_grads(lambda x: F.pixel_unshuffle(x, r), out.array)


def test_pixel_shuffle_errors():
    with pytest.raises(ValueError, match=r"pixel_shuffle: the channels of input \(2, 6, 3, 3\) "
                       r"\(6\) must be divisible by upscale_factor \*\* 2 = 4"):  # fmt: skip
        nn.PixelShuffle(2)(Tensor(randn(2, 6, 3, 3)))
    with pytest.raises(
        ValueError,
        match=r"pixel_unshuffle: the height and width of input "
        r"\(1, 3, 4, 5\) \(4, 5\) must be divisible by downscale_factor = 2",
    ):
        F.pixel_unshuffle(Tensor(randn(1, 3, 4, 5)), 2)
    with pytest.raises(
        ValueError,
        match=r"pixel_shuffle: expected an input \(\*, channels, "
        r"height, width\) with at least 3 axes, got shape \(4, 4\)",
    ):
        F.pixel_shuffle(Tensor(randn(4, 4)), 2)
    with pytest.raises(ValueError, match=r"PixelShuffle: upscale_factor must be an integer >= 1"):
        nn.PixelShuffle(0)


# ====================================================================== parameter containers


def build_scaled(model, nn, rng):
    """A layer whose parameters live in a ParameterList and a ParameterDict, as a torch model
    writes them; ``nn`` is ``tricycle.nn`` or ``torch.nn``, ``rng`` makes the values."""
    nn.Module.__init__(model)
    model.scales = nn.ParameterList([nn.Parameter(rng(3)), nn.Parameter(rng(3))])
    model.table = nn.ParameterDict({"shift": nn.Parameter(rng(3)), "gate": nn.Parameter(rng(1))})


def scaled_forward(model, x):
    for scale in model.scales:
        x = (x * scale).tanh()
    return x * model.table["gate"] + model.table.shift


class Scaled(nn.Module):
    def __init__(self, seed=0):
        values = np.random.default_rng(seed)
        build_scaled(self, nn, lambda *shape: Tensor(values.normal(size=shape)))

    forward = scaled_forward


def torch_scaled(torch, ours):
    """The torch twin of ``ours`` (a Scaled), holding copies of its values."""

    class TorchScaled(torch.nn.Module):
        def __init__(self):
            build_scaled(self, torch.nn, lambda *shape: torch.zeros(shape, dtype=torch.float64))

        forward = scaled_forward

    theirs = TorchScaled()
    theirs.load_state_dict({n: torch.from_numpy(v) for n, v in ours.state_dict().items()})
    return theirs


def test_a_precision_policy_casts_the_parameters_in_containers():
    """Precision("fp16") runs the forward with every parameter cast, those in a ParameterList
    or ParameterDict too, and puts the float64 ones back after it."""
    from tricycle.precision import Precision

    model, seen = Scaled(), []
    model.forward = lambda x: (seen.append([p.dtype for p in (*model.scales, model.table.gate)]),
                               scaled_forward(model, x))[1]  # fmt: skip
    out = Precision("fp16").forward(model, randn(4, 3))
    assert seen == [[np.float16] * 3] and out.dtype == np.float32
    assert {p.dtype for p in model.parameters()} == {np.dtype(np.float64)}


def test_parameter_containers_in_a_model_match_torch():
    torch = pytest.importorskip("torch")
    ours = Scaled()
    theirs = torch_scaled(torch, ours)
    names = ["scales.0", "scales.1", "table.gate", "table.shift"]  # a dict's keys sorted
    assert [n for n, _ in ours.named_parameters()] == names == list(theirs.state_dict())
    assert list(ours.state_dict()) == names and ours.num_parameters() == 10
    pairs = [(p, dict(theirs.named_parameters())[n]) for n, p in ours.named_parameters()]
    compare(ours, theirs, randn(4, 3), params=pairs)
    assert ours.get_parameter("table.gate") is ours.table["gate"]
    with pytest.raises(TypeError, match=r"ParameterList is a container of parameters and has "
                       r"no forward"):  # fmt: skip
        ours.scales(Tensor(randn(3)))


def test_an_optimiser_steps_the_parameters_in_containers():
    for step in ("torch", "tricycle"):
        model = Scaled()
        before = {n: p.numpy().copy() for n, p in model.named_parameters()}
        model(Tensor(randn(4, 3), requires_grad=False)).sum().backward()
        grads = {n: p.grad.array.copy() for n, p in model.named_parameters()}
        if step == "torch":
            optim.SGD(model.parameters(), lr=0.1).step()
        else:
            model.update(StochasticGradientDescent(learning_rate=0.1))
        for name, p in model.named_parameters():
            np.testing.assert_allclose(p.numpy(), before[name] - 0.1 * grads[name], rtol=1e-6,
                                       err_msg=f"{step} {name}")  # fmt: skip


def test_parameter_containers_state_dict_round_trip():
    source, target = Scaled(seed=0), Scaled(seed=1)
    held = target.scales[1]
    target.load_state_dict(source.state_dict())
    for (name, a), (_, b) in zip(source.named_parameters(), target.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert target.scales[1] is held  # loaded in place
    copy = pickle.loads(pickle.dumps(target))
    assert copy.state_dict().keys() == target.state_dict().keys()
    np.testing.assert_array_equal(copy.table.shift.numpy(), target.table.shift.numpy())
    target.float()  # a cast reaches them too (they were float64)
    assert {p.dtype for p in target.parameters()} == {np.dtype(np.float32)}
    target.requires_grad_(False)
    assert not any(p.requires_grad for p in target.parameters())  # listed, frozen (torch's)
    assert len(target.parameters()) == len(target.state_dict()) == 4
    target.requires_grad_(True)
    assert len(target.parameters()) == 4


def test_parameter_list_behaves_as_a_list():
    a, b, c = (Tensor(randn(2, seed=s)) for s in range(3))
    params = nn.ParameterList([a, np.ones(3)])
    assert isinstance(params[0], nn.Parameter) and params[0].array is a.array  # shared
    assert params[1].requires_grad and params[1].shape == (3,)
    params.append(b).extend([c])
    params += nn.ParameterList([nn.Parameter(np.zeros(1))])
    assert len(params) == 5 and [p.shape for p in params] == [(2,), (3,), (2,), (2,), (1,)]
    assert params[-1] is params[4] and len(params[1:3]) == 2 and params[1:3][0] is params[1]
    params[0] = np.full(4, 2.0)
    assert params.named_parameters()[0][1].shape == (4,)
    shared = nn.ParameterList([params[2], params[2]])  # the same parameter twice counts once
    assert len(shared.parameters()) == 1
    with pytest.raises(TypeError, match=r"ParameterList: \[5\] must be a Parameter, a Tensor"):
        params.append(1.5)
    with pytest.raises(TypeError, match=r"ParameterList.extend: values must be an iterable"):
        params.extend(Tensor(randn(2)))
    with pytest.raises(IndexError, match=r"ParameterList: index 5 is out of range for 5"):
        params[5]
    with pytest.raises(TypeError, match=r"ParameterList: index must be an integer or a slice"):
        params["0"]
    assert len(params) == 5  # nothing added by the failures


def test_parameter_dict_behaves_as_a_dict():
    table = nn.ParameterDict([("w", Tensor(randn(2))), ("b", np.zeros(2))])
    table["v"] = Tensor(randn(3))
    table.u = Tensor(randn(1))  # an attribute set as torch registers it
    assert list(table) == ["w", "b", "v", "u"] and "u" in table and len(table) == 4
    assert table.w is table["w"] and isinstance(table.b, nn.Parameter)
    assert table.get("missing") is None and table.setdefault("z", np.ones(1)) is table["z"]
    assert table.pop("z").shape == (1,) and table.popitem()[0] == "u"
    copy = table.copy()
    assert copy["w"] is table["w"] and list(copy.keys()) == ["w", "b", "v"]
    del table["v"], table.b
    assert list(table.items()) == [("w", table.w)] and list(copy.state_dict()) == ["w", "b", "v"]
    table.update({"x": np.ones(2)})
    assert [n for n, _ in table.named_parameters()] == ["w", "x"]
    table.clear()
    assert len(table) == 0 and table.parameters() == []
    with pytest.raises(KeyError, match=r"ParameterDict: no parameter named 'q'; the keys"):
        table["q"]
    with pytest.raises(AttributeError, match=r"ParameterDict has no attribute or parameter 'q'"):
        _ = table.q
    with pytest.raises(ValueError, match=r"ParameterDict: key must be a non-empty name without"):
        table["a.b"] = np.ones(1)
    with pytest.raises(TypeError, match=r"ParameterDict: key must be a str"):
        table[3] = np.ones(1)
    with pytest.raises(TypeError, match=r"ParameterDict: \['a'\] must be a Parameter"):
        table.update({"a": "text"})
    with pytest.raises(TypeError, match=r"ParameterDict.update: parameters\[0\] must be a"):
        table.update(["a"])
    with pytest.raises(KeyError, match=r"ParameterDict.popitem: the dictionary is empty"):
        table.popitem()
    assert len(table) == 0  # nothing added by the failures


# ====================================================================== Bilinear


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [(5,), (2, 3), ()])
def test_bilinear_matches_torch(batch, bias):
    torch = pytest.importorskip("torch")
    ours = as_float64(nn.Bilinear(3, 4, 2, bias=bias))
    theirs = torch.nn.Bilinear(3, 4, 2, bias=bias).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in nn.to_torch(ours).items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    pairs = [(p, dict(theirs.named_parameters())[n]) for n, p in ours.named_parameters()]
    compare(ours, theirs, randn(*batch, 3), randn(*batch, 4, seed=1), params=pairs)
    assert repr(ours).startswith(repr(theirs))


def test_bilinear_function_and_init_as_torch():
    torch = pytest.importorskip("torch")
    w, b = randn(2, 3, 4, seed=2), randn(2, seed=3)
    compare(F.bilinear, torch.nn.functional.bilinear, randn(5, 3), randn(5, 4, seed=1), w, b)
    layer = nn.Bilinear(16, 3, 500)
    weight, bias = layer.weight.numpy(), layer.bias.numpy()
    assert weight.shape == (500, 16, 3) and bias.shape == (500,)
    for values in (weight, bias):  # U(-1/sqrt(in1), 1/sqrt(in1)), as torch's
        assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.24


def test_bilinear_gradients_match_finite_differences():
    check_grads(F.bilinear, randn(2, 3, 2), randn(2, 3, 3, seed=1), randn(4, 2, 3, seed=2),
                randn(4, seed=3))  # fmt: skip
    check_grads(lambda x: F.bilinear(x, x * 2.0, Tensor(randn(2, 3, 3, seed=4))),
                randn(4, 3))  # a diamond: x reaches the output twice  # fmt: skip


def test_bilinear_errors():
    layer = nn.Bilinear(3, 4, 2)
    with pytest.raises(ValueError, match=r"Bilinear\(3, 4 -> 2\): expected input1 \(\*, 3\) "
                       r"and input2 \(\*, 4\), got \(5, 4\) and \(5, 4\)"):  # fmt: skip
        layer(Tensor(randn(5, 4)), Tensor(randn(5, 4)))
    with pytest.raises(ValueError, match=r"bilinear: expected input1 \(\*, in1\), input2 "
                       r"\(\*, in2\) with the same leading axes"):  # fmt: skip
        layer(Tensor(randn(2, 3)), Tensor(randn(3, 4)))
    with pytest.raises(ValueError, match=r"bilinear: bias must have shape \(2,\)"):
        F.bilinear(Tensor(randn(3)), Tensor(randn(4)), layer.weight, Tensor(randn(3)))
    with pytest.raises(ValueError, match=r"Bilinear: in1_features must be an integer >= 1"):
        nn.Bilinear(0, 4, 2)


# ====================================================================== unfold and fold
GEOMETRIES = [
    dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
    dict(kernel_size=3),
    dict(kernel_size=(1, 2), stride=2, padding=(0, 1)),
]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_unfold_and_fold_match_torch(geometry, batched):
    torch = pytest.importorskip("torch")
    shape = (2, 3, 5, 6) if batched else (3, 5, 6)
    cols = compare(lambda x: F.unfold(x, **geometry),
                   lambda t: torch.nn.functional.unfold(t, **geometry), randn(*shape))  # fmt: skip
    compare(nn.Unfold(**geometry), torch.nn.Unfold(**geometry), randn(*shape))
    compare(lambda c: F.fold(c, (5, 6), **geometry),
            lambda t: torch.nn.functional.fold(t, (5, 6), **geometry), cols.array)  # fmt: skip
    compare(nn.Fold((5, 6), **geometry), torch.nn.Fold((5, 6), **geometry), cols.array)
    assert repr(nn.Unfold(**geometry)) == repr(torch.nn.Unfold(**geometry))
    assert repr(nn.Fold((5, 6), **geometry)) == repr(torch.nn.Fold((5, 6), **geometry))


@st.composite
def fold_geometry(draw):
    """(image shape, geometry): 1-2 channels, sizes 2-5, kernels, dilations, strides 1-2,
    padding 0-1, with at least one block."""
    size = (draw(st.integers(2, 5)), draw(st.integers(2, 5)))
    kernel = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    geometry = dict(kernel_size=kernel, dilation=draw(st.integers(1, 2)),
                    padding=draw(st.integers(0, 1)), stride=draw(st.integers(1, 2)))  # fmt: skip
    room = [n + 2 * geometry["padding"] - geometry["dilation"] * (k - 1) - 1 for n, k in
            zip(size, kernel)]  # what the padded axis has beyond one dilated kernel  # fmt: skip
    assume(min(room) >= 0)
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *size), geometry


@given(geometry=fold_geometry())
def test_unfold_and_fold_gradients_match_finite_differences(geometry):
    shape, geometry = geometry
    cols = check_grads(lambda x: F.unfold(x, **geometry), randn(*shape))
    x = randn(*shape)  # the output is a fresh array, never a view of the input
    assert not np.shares_memory(F.unfold(Tensor(x), **geometry).array, x)
    check_grads(lambda c: F.fold(c, shape[2:], **geometry), cols.array)
    # fold is unfold's adjoint: <unfold(x), c> = <x, fold(c)>
    c = randn(*cols.shape, seed=2)
    inner = (F.unfold(Tensor(x), **geometry).array * c).sum()
    np.testing.assert_allclose(inner, (x * F.fold(Tensor(c), shape[2:], **geometry).array).sum())


def test_unfold_and_fold_errors():
    with pytest.raises(ValueError, match=r"unfold: expected input \(batch, channels, height, "
                       r"width\) or unbatched .*got shape \(4, 4\)"):  # fmt: skip
        F.unfold(Tensor(randn(4, 4)), 2)
    with pytest.raises(
        ValueError,
        match=r"unfold: an input of spatial size \(2, 2\) with "
        r"padding \(0, 0\) is smaller than the \(dilated\) kernel \(3, 3\)",
    ):
        F.unfold(Tensor(randn(1, 1, 2, 2)), 3)
    with pytest.raises(
        ValueError,
        match=r"fold: input \(1, 4, 8\) does not fit "
        r"output_size=\(4, 4\), kernel_size=\(2, 2\).*3 \* 3 = 9 blocks",
    ):
        F.fold(Tensor(randn(1, 4, 8)), 4, 2, stride=1)
    with pytest.raises(ValueError, match=r"fold: input \(1, 5, 9\) does not fit"):
        F.fold(Tensor(randn(1, 5, 9)), 4, 2)
    with pytest.raises(ValueError, match=r"Unfold: stride must be an integer >= 1 or 2 of them"):
        nn.Unfold(2, stride=0)
    with pytest.raises(TypeError, match=r"Fold: output_size must be an integer >= 1 or 2 of"):
        nn.Fold("4", 2)


# ====================================================================== functions of layers


def test_logsigmoid_and_adaptive_avg_pools_match_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    compare(F.logsigmoid, TF.logsigmoid, randn(3, 4, scale=10.0))
    compare(lambda x: F.adaptive_avg_pool1d(x, 3), lambda t: TF.adaptive_avg_pool1d(t, 3),
            randn(2, 3, 7))  # fmt: skip
    compare(lambda x: F.adaptive_avg_pool1d(x, 2), lambda t: TF.adaptive_avg_pool1d(t, 2),
            randn(3, 5))  # unbatched  # fmt: skip
    for size in [(2, None), 3]:
        compare(lambda x: F.adaptive_avg_pool2d(x, size), lambda t: TF.adaptive_avg_pool2d(t, size),
                randn(2, 3, 5, 7))  # fmt: skip
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: expected a non-empty input"):
        F.adaptive_avg_pool2d(randn(4), 2)


# ====================================================================== devices


def test_the_layers_on_a_device_agree_with_the_host(xp):
    """Forward and backward on ``xp``'s arrays (cupy when a GPU is present) equal the host's."""
    bilinear = as_float64(nn.Bilinear(3, 4, 2))
    layers = [
        (lambda x: nn.ReflectionPad2d((1, 2, 2, 1))(x), (2, 3, 4, 5)),
        (lambda x: F.pixel_unshuffle(nn.PixelShuffle(2)(x), 2), (2, 8, 3, 3)),
        (lambda x: F.fold(F.unfold(x, 2, padding=1), (4, 5), 2, padding=1), (2, 3, 4, 5)),
        (lambda x: nn.Unflatten(1, (2, 2))(x), (3, 4)),
        (lambda x: bilinear(x[..., :3], x[..., 1:]), (2, 5, 5)),
    ]
    for run, shape in layers:
        results = []
        for module in (np, xp):
            bilinear.to_gpu() if module is not np else bilinear.from_gpu()
            x = Tensor(module.asarray(randn(*shape)))
            out = run(x)
            out.backward(module.asarray(randn(*out.shape, seed=9)))
            results.append([backend.to_host_array(a) for a in (out.array, x.grad.array)])
        for host, device in zip(*results):
            np.testing.assert_allclose(device, host, rtol=1e-12, atol=1e-12)
