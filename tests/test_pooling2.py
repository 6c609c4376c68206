"""Max pooling's ``dilation`` and both poolings' ``ceil_mode`` (``tricycle.nn.pooling``), and
torch's lazy convolutions and batch norms (``tricycle.nn.lazy_conv``).

Pooling against torch in float64 over random geometries (hypothesis): outputs, indices and
input gradients, and the same refusal where torch refuses a geometry; gradients against
finite differences; the edge cases torch documents (ceil_mode's last window dropped where it
would start in the right padding, the divisors of a ragged last window, windows of -inf, a
dilated window with no element in the input); the settings the kernels lack go to the
reference. The lazy layers against torch's: parameters before the first call, values and
every gradient after it, the layer become its concrete class in place."""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
import tricycle.optim as optim
from tricycle import dispatch
from tricycle.nn.lazy import UninitializedBuffer, UninitializedParameter
from tricycle.nn.pooling import avg_pool, max_pool
from tricycle.tensor import Tensor

RTOL, ATOL = 1e-12, 1e-12


def _rng(seed=0):
    return np.random.default_rng(seed)


def _distinct(shape, seed=0):
    """Values at least 0.1 apart: no ties, so the argmax survives finite differences."""
    n = int(np.prod(shape))
    return _rng(seed).permutation(n).reshape(shape) * 0.1 - n * 0.05


@st.composite
def geometries(draw, dilated: bool):
    """(x shape, kernel, stride, padding, dilation, ceil_mode): any torch accepts or refuses
    for its output size (the padding at most half the kernel, which both check alike)."""
    n = draw(st.sampled_from([1, 2]), label="spatial axes")
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    dilation = tuple(draw(st.integers(1, 3 if dilated else 1)) for _ in range(n))
    size = tuple(draw(st.integers(1, 9)) for _ in range(n))
    x_shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + size
    return x_shape, kernel, stride, padding, dilation, draw(st.booleans(), label="ceil_mode")


def _torch_or_error(call):
    """call() and None, or None and the error torch raised (a geometry torch refuses)."""
    try:
        return call(), None
    except RuntimeError as error:
        return None, error


def _against_torch(torch, ours, theirs, x, x_shape):
    """ours(Tensor) and theirs(torch tensor) of x: both refuse, or the same output (and
    indices, when a pair) and input gradient for one random output gradient."""
    tx = torch.tensor(x, requires_grad=True)
    expected, error = _torch_or_error(lambda: theirs(tx))
    if error is not None:
        with pytest.raises(ValueError, match=r"pool\dd: an input of spatial size"):
            ours(Tensor(x))
        return
    X = Tensor(x, requires_grad=True)
    out = ours(X)
    if isinstance(expected, tuple):
        (out, indices), (expected, their_indices) = out, expected
        np.testing.assert_array_equal(indices.array, their_indices.numpy())
        assert indices.dtype == np.int64
    assert out.shape == tuple(expected.shape), x_shape
    # a dilated window may hold no element of the input (its maximum -inf, as torch's): no
    # gradient there (torch's backward writes at its index, past the plane)
    dout = _rng(1).normal(size=out.shape) * np.isfinite(out.array)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=RTOL, atol=ATOL)


@given(geometry=geometries(dilated=True), return_indices=st.booleans())
def test_max_pool_with_dilation_and_ceil_mode_matches_torch(geometry, return_indices):
    torch = pytest.importorskip("torch")
    x_shape, kernel, stride, padding, dilation, ceil_mode = geometry
    n = len(kernel)
    x = _rng().normal(size=x_shape)
    settings = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                    ceil_mode=ceil_mode, return_indices=return_indices)  # fmt: skip
    _against_torch(
        torch,
        lambda t: getattr(F, f"max_pool{n}d")(t, **settings),
        lambda t: getattr(torch.nn.functional, f"max_pool{n}d")(t, **settings),
        x,
        x_shape,
    )


@given(geometry=geometries(dilated=False), count_include_pad=st.booleans())
def test_avg_pool_with_ceil_mode_matches_torch(geometry, count_include_pad):
    torch = pytest.importorskip("torch")
    x_shape, kernel, stride, padding, _, ceil_mode = geometry
    n = len(kernel)
    x = _rng().normal(size=x_shape)
    settings = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                    count_include_pad=count_include_pad)  # fmt: skip
    _against_torch(
        torch,
        lambda t: getattr(F, f"avg_pool{n}d")(t, **settings),
        lambda t: getattr(torch.nn.functional, f"avg_pool{n}d")(t, **settings),
        x,
        x_shape,
    )


@given(geometry=geometries(dilated=True), count_include_pad=st.booleans())
def test_pooling_gradients_match_finite_differences(geometry, count_include_pad):
    x_shape, kernel, stride, padding, dilation, _ = geometry
    size = x_shape[2:]
    # a geometry with an output (ceil_mode: at least as many windows as without)
    if any(n + 2 * p - d * (k - 1) - 1 < 0 for n, k, p, d in zip(size, kernel, padding, dilation)):
        return
    x = _distinct(x_shape)
    pool = lambda t: max_pool(t, kernel, stride, padding, dilation, ceil_mode=True)  # noqa: E731
    if np.isfinite(pool(Tensor(x)).array).all():  # (a dilated window may miss the input: -inf)
        check_grads(pool, x)
    check_grads(lambda t: avg_pool(t, kernel, stride, padding, True, count_include_pad), x)


EDGE_CASES = [
    # (x shape, pooling arguments): torch's rules at the ragged edge
    ((1, 1, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),  # last window dropped
    ((1, 1, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),  # runs past the padding
    ((1, 1, 2), dict(kernel_size=4, stride=3, ceil_mode=True)),  # one window, past the input
    ((1, 1, 2, 2), dict(kernel_size=4, stride=3, ceil_mode=True)),
    ((2, 1, 7, 5), dict(kernel_size=(3, 2), stride=2, padding=(1, 1), ceil_mode=True)),
    ((1, 2, 8, 8), dict(kernel_size=2, stride=2, ceil_mode=True)),  # exact: nothing changes
    ((1, 1, 1), dict(kernel_size=1, ceil_mode=True)),
]  # fmt: skip


@pytest.mark.parametrize(("x_shape", "settings"), EDGE_CASES, ids=str)
def test_ceil_mode_edge_cases_match_torch(x_shape, settings):
    torch = pytest.importorskip("torch")
    n, x = len(x_shape) - 2, _rng(2).normal(size=x_shape)
    for pool in ("max", "avg"):
        for extra in ([{}, dict(return_indices=True), dict(dilation=2)] if pool == "max" else
                      [dict(count_include_pad=True), dict(count_include_pad=False)]):  # fmt: skip
            name = f"{pool}_pool{n}d"
            _against_torch(
                torch,
                lambda t: getattr(F, name)(t, **settings, **extra),
                lambda t: getattr(torch.nn.functional, name)(t, **settings, **extra),
                x,
                (x_shape, pool, extra),
            )


@pytest.mark.parametrize(
    ("x", "settings"),
    [
        (np.full((1, 1, 4, 4), -np.inf), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                              ceil_mode=True)),  # every window -inf
        (np.full((1, 1, 5), -np.inf), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        (np.array([[[1.0]]]), dict(kernel_size=2, stride=1, padding=1, dilation=2)),  # a window
        (np.array([[[1.0, 2.0, 3.0]]]), dict(kernel_size=2, stride=1, padding=1, dilation=3)),
    ],  # with no element in the input: -inf, and torch's index (past the plane)
    ids=range(4),
)  # fmt: skip
def test_max_pool_windows_of_minus_infinity_as_torch(x, settings):
    torch = pytest.importorskip("torch")
    n = x.ndim - 2
    ours = getattr(F, f"max_pool{n}d")(Tensor(x), return_indices=True, **settings)
    theirs = getattr(torch.nn.functional, f"max_pool{n}d")(
        torch.tensor(x), return_indices=True, **settings
    )
    np.testing.assert_array_equal(ours[0].array, theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].array, theirs[1].numpy())


@pytest.mark.parametrize("unbatched", [False, True])
def test_pooling_layers_take_dilation_and_ceil_mode_as_torch(unbatched):
    torch = pytest.importorskip("torch")
    x2, x1 = _rng(3).normal(size=(2, 3, 9, 8)), _rng(3).normal(size=(2, 3, 11))
    if unbatched:
        x2, x1 = x2[0], x1[0]
    layers = [
        (nn.MaxPool2d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True),
         torch.nn.MaxPool2d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True), x2),
        (nn.MaxPool2d((2, 3), (2, 1), (1, 0), (2, 1), False, True),  # torch's positional order
         torch.nn.MaxPool2d((2, 3), (2, 1), (1, 0), (2, 1), False, True), x2),
        (nn.AvgPool2d(3, 2, 1, True, False), torch.nn.AvgPool2d(3, 2, 1, True, False), x2),
        (nn.MaxPool1d(3, 2, 1, 2, ceil_mode=True), torch.nn.MaxPool1d(3, 2, 1, 2, ceil_mode=True),
         x1),
        (nn.AvgPool1d(2, 3, 1, ceil_mode=True), torch.nn.AvgPool1d(2, 3, 1, ceil_mode=True), x1),
    ]  # fmt: skip
    for ours, theirs, x in layers:
        _against_torch(torch, ours, theirs, x, repr(theirs))
        assert repr(ours) == repr(theirs)  # torch's, which shows no return_indices


def test_only_the_default_settings_go_to_the_kernels(monkeypatch):
    """The backends' kernels know neither dilation nor ceil_mode: those run the reference."""
    asked = []
    choose = dispatch.choose

    def spy(op, reference, *arrays):
        if op in ("max_pool", "avg_pool"):
            asked.append(op)
        return choose(op, reference, *arrays)

    monkeypatch.setattr(dispatch, "choose", spy)
    x = Tensor(_rng().normal(size=(1, 2, 7, 7)).astype(np.float32))
    for call in (lambda: F.max_pool2d(x, 3, 2, 1, dilation=2), lambda: F.max_pool2d(x, 2, 2, 0,
                 ceil_mode=True), lambda: F.avg_pool2d(x, 2, 2, 0, ceil_mode=True)):  # fmt: skip
        call().sum().backward()
    assert asked == []
    F.max_pool2d(x, 2, 2, 0, dilation=1, ceil_mode=False)
    F.avg_pool2d(x, 2, 2, 0, ceil_mode=False)
    assert asked == ["max_pool", "avg_pool"]


POOLING_ERRORS = [
    (lambda: F.max_pool1d(Tensor(np.zeros((1, 1, 4))), 2, dilation=0), ValueError,
     r"max_pool1d: dilation must be an integer >= 1"),
    (lambda: nn.MaxPool2d(2, dilation=(1, 2, 3)), ValueError, "MaxPool2d: dilation"),
    (lambda: F.max_pool1d(Tensor(np.zeros((1, 1, 2))), 3, 1, 0, ceil_mode=True), ValueError,
     r"max_pool1d: an input of spatial size \(2,\).*even with ceil_mode"),
    (lambda: F.max_pool1d(Tensor(np.zeros((1, 1, 3))), 2, 1, 0, dilation=3), ValueError,
     r"max_pool1d: an input of spatial size \(3,\).*dilation \(3,\)"),
    (lambda: F.avg_pool2d(Tensor(np.zeros((1, 1, 4, 4))), 2, ceil_mode="yes"), TypeError,
     "avg_pool2d: ceil_mode"),
    (lambda: nn.AvgPool1d(2, ceil_mode=1), TypeError, "AvgPool1d: ceil_mode"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), POOLING_ERRORS, ids=range(6))
def test_pooling_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------- lazy layers
LAZY = [
    # (ours, torch's, input shape): the channels come from the input
    (lambda: nn.LazyConv1d(4, 3, stride=2, padding=1), lambda t: t.nn.LazyConv1d(4, 3, 2, 1),
     (2, 3, 7)),
    (lambda: nn.LazyConv2d(4, (3, 2), padding="same", groups=2, padding_mode="reflect"),
     lambda t: t.nn.LazyConv2d(4, (3, 2), padding="same", groups=2, padding_mode="reflect"),
     (2, 6, 5, 4)),
    (lambda: nn.LazyConv2d(3, 2, bias=False, dilation=2), lambda t: t.nn.LazyConv2d(
        3, 2, bias=False, dilation=2), (2, 5, 6)),  # unbatched: channels from axis 0
    (lambda: nn.LazyConvTranspose1d(2, 3, stride=2, output_padding=1),
     lambda t: t.nn.LazyConvTranspose1d(2, 3, stride=2, output_padding=1), (2, 3, 5)),
    (lambda: nn.LazyConvTranspose2d(4, 3, 2, 1, 1, groups=2, dilation=1),
     lambda t: t.nn.LazyConvTranspose2d(4, 3, 2, 1, 1, groups=2, dilation=1), (2, 4, 3, 4)),
    (lambda: nn.LazyBatchNorm1d(), lambda t: t.nn.LazyBatchNorm1d(), (5, 3)),
    (lambda: nn.LazyBatchNorm1d(momentum=0.3, affine=False), lambda t: t.nn.LazyBatchNorm1d(
        momentum=0.3, affine=False), (4, 3, 6)),
    (lambda: nn.LazyBatchNorm2d(eps=1e-3), lambda t: t.nn.LazyBatchNorm2d(eps=1e-3), (3, 2, 4, 3)),
]  # fmt: skip
TORCH_NAMES = {"weights": "weight", "gamma": "weight", "beta": "bias"}


@pytest.mark.parametrize(("make", "make_theirs", "x_shape"), LAZY, ids=range(len(LAZY)))
def test_lazy_layers_read_their_channels_as_torch(make, make_theirs, x_shape):
    torch = pytest.importorskip("torch")
    ours, theirs = make(), make_theirs(torch).double()
    concrete = type(ours).cls_to_become
    before = ours.parameters()
    assert [type(p).__name__ for p in before] == [type(p).__name__ for p in theirs.parameters()]
    assert all(type(p) is UninitializedParameter for p in before)
    assert repr(ours).startswith(type(ours).__name__ + "(0, ")
    ours.double()  # before the first call: the dtype its tensors will be made in
    # an optimizer built before the first call, as torch's may be
    optimizer = optim.SGD(before, lr=0.1) if before else None
    x = _rng(4).normal(size=x_shape)
    theirs(torch.tensor(x))  # torch's first call makes its parameters: now take ours
    X = Tensor(x, requires_grad=True)
    out = ours(X)  # the first call
    assert type(ours) is concrete and type(theirs).__name__ == concrete.__name__
    after = ours.parameters()
    assert all(a is b for a, b in zip(before, after)) and len(after) == len(before)
    assert all(type(p) is nn.Parameter and p.dtype == np.float64 for p in after)
    with torch.no_grad():  # torch's first call moved its running statistics: start again
        for name, value in theirs.named_buffers():
            value.copy_(torch.zeros_like(value) if "mean" in name else torch.ones_like(value))
        for name, p in ours.named_parameters():
            dict(theirs.named_parameters())[TORCH_NAMES.get(name, name)].copy_(
                torch.tensor(p.array)
            )
        tx = torch.tensor(x, requires_grad=True)
    expected = theirs(tx)
    dout = _rng(5).normal(size=out.shape)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    grads = {name: p.grad.numpy() for name, p in theirs.named_parameters()}
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.array, grads[TORCH_NAMES.get(name, name)], rtol=1e-10,
                                   atol=1e-12, err_msg=name)  # fmt: skip
    if hasattr(ours, "running_mean"):  # buffers made in place too, in the dtype chosen
        assert type(ours.running_mean) is Tensor and ours.running_mean.dtype == np.float64
        np.testing.assert_allclose(ours.running_var.array, theirs.running_var.numpy(), rtol=1e-10)
        ours.eval(), theirs.eval()
        np.testing.assert_allclose(ours(Tensor(x)).array, theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)  # fmt: skip
    if optimizer is not None:
        values = after[0].array.copy()
        optimizer.step()  # the optimizer built before the first call updates the parameters
        np.testing.assert_allclose(after[0].array, values - 0.1 * after[0].grad.array)


def test_lazy_batch_norm_statistics_wait_as_buffers():
    norm = nn.LazyBatchNorm2d()
    assert [type(t) for _, t in norm.named_tensors()] == [UninitializedParameter] * 2 + [
        UninitializedBuffer
    ] * 2
    assert len(norm.parameters()) == 2 and "UninitializedBuffer" in repr(norm.running_mean)
    assert nn.LazyBatchNorm1d(track_running_stats=False).named_tensors()[-1][0] == "beta"


def test_a_lazy_model_loads_a_state_dict_before_its_first_call_as_torchs():
    """A lazily built model takes a trained one's ``state_dict`` before its first call (d2l's
    read-write: ``clone = MLP(); clone.load_state_dict(...)``): its tensors take the
    checkpoint's shapes, as torch's lazy modules do, and the first call keeps them; an input
    they do not fit is refused."""
    torch = pytest.importorskip("torch")

    def model(lib):
        return lib.nn.Sequential(lib.nn.LazyConv2d(4, 3), lib.nn.LazyBatchNorm2d(),
                                 lib.nn.Flatten(), lib.nn.LazyLinear(2))  # fmt: skip

    x = np.random.default_rng(0).normal(size=(2, 3, 6, 6)).astype(np.float32)
    trained = model(__import__("tricycle"))
    trained(Tensor(x))  # built, its batch norm's statistics moved
    theirs = model(torch)
    theirs(torch.tensor(x))
    for lib, made in ((None, trained), (torch, theirs)):
        clone = model(torch if lib else __import__("tricycle"))
        clone.load_state_dict(made.state_dict())
        clone.eval(), made.eval()
        got = clone(torch.tensor(x) if lib else Tensor(x))
        want = made(torch.tensor(x) if lib else Tensor(x))
        np.testing.assert_array_equal(np.asarray(got.detach() if lib else got.array),
                                      np.asarray(want.detach() if lib else want.array))  # fmt: skip
    clone = nn.Sequential(nn.LazyLinear(4))
    clone.load_state_dict(nn.Sequential(nn.Linear(3, 4)).state_dict())
    with pytest.raises(ValueError, match=r"LazyLinear\(-> 4\): loaded weights \(3, 4\) do not"):
        clone(Tensor(np.zeros((2, 5))))


LAZY_ERRORS = [
    (lambda: nn.LazyConv2d(4, 3)(Tensor(np.zeros((3, 5)))), ValueError,
     r"LazyConv2d: expected input \(batch, channels, height, width\)"),
    (lambda: nn.LazyConv2d(4, 3)(Tensor(np.zeros((1, 3, 5, 5, 5)))), ValueError,
     "whose channels give in_channels, got shape"),
    (lambda: nn.LazyConv1d(4, 3, groups=2)(Tensor(np.zeros((1, 3, 5)))), ValueError,
     r"LazyConv1d: the input's channels \(axis 1 of shape \(1, 3, 5\)\) must be at least 1 "
     r"and divisible by groups=2, got 3"),
    (lambda: nn.LazyConv1d(3, 3, groups=2), ValueError,
     "LazyConv1d: out_channels=3 must be divisible by groups=2"),
    (lambda: nn.LazyConv1d(4, 3, groups=0), ValueError, "LazyConv1d: groups"),
    (lambda: nn.LazyConv2d(4, 0), ValueError, "LazyConv2d: kernel_size"),
    (lambda: nn.LazyConv2d(4, 3, padding_mode="wrap"), ValueError, "LazyConv2d: padding_mode"),
    (lambda: nn.LazyConvTranspose2d(4, 3, output_padding=1), ValueError,
     "LazyConvTranspose2d: output_padding"),
    (lambda: nn.LazyConvTranspose1d(0, 3), ValueError, "LazyConvTranspose1d: out_channels"),
    (lambda: nn.LazyBatchNorm2d()(Tensor(np.zeros((2, 3, 4)))), ValueError,
     "LazyBatchNorm2d: expected input .* with 4 dimensions"),
    (lambda: nn.LazyBatchNorm1d(momentum=2.0), ValueError, "LazyBatchNorm1d: momentum"),
    (lambda: nn.LazyConv2d(4, 3).parameters()[0] * 2.0, ValueError, "uninitialized parameter"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), LAZY_ERRORS, ids=range(len(LAZY_ERRORS)))
def test_lazy_layer_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
