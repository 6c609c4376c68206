"""Three things of torch's that the course ports found missing, against torch in float64:

- ``nn.LSTM(..., proj_size=P)`` (``tricycle.nn.lstm_projection``): outputs, final states and the
  gradients of the input, both initial states and every parameter (``weight_hr_l{k}`` too),
  one and two layers, both directions, batch-first, unbatched and packed; torch's names,
  order and shapes through ``from_torch``/``to_torch``; finite differences; torch's errors.
- ``nn.LPPool1d``/``2d``/``3d`` and ``F.lp_pool1d``/``2d``/``3d`` (``tricycle.nn.lp_pooling``):
  random geometries and norms (hypothesis), p = +-inf, the windows of zeros (gradient 0) and
  of negative sums (NaN) as torch's, the layers' repr, finite differences.
- ``divisor_override`` of ``nn.AvgPool2d`` and ``F.avg_pool2d``, and the 3-D poolings
  (``tricycle.nn.pooling3d``: ``AvgPool3d``, ``MaxPool3d``, ``F.avg_pool3d``, ``F.max_pool3d``):
  random geometries (hypothesis) with padding and ``ceil_mode``, torch's repr and errors.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import (
    as_float64,
    assert_grads_as_torch,
    check_grads,
    one_thread,
    randn,
    same_on_host_and,
)
from tricycle.nn.lp_pooling import LPPool1d, LPPool2d, LPPool3d, lp_pool, lp_pool3d
from tricycle.nn.pooling3d import AvgPool3d, MaxPool3d
from tricycle.nn.recurrent import LSTM
from tricycle.nn.utils.rnn import pack_padded_sequence
from tricycle.tensor import Tensor


@pytest.fixture(autouse=True)
def _torch_on_one_thread():
    """torch's small pooling calls spend their time starting threads on a shared machine."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        yield
        return
    with one_thread(torch):
        yield


# ====================================================================== LSTM with projections


def _lstms(torch, width, H, P, L, **kwargs):
    """torch's projected LSTM in float64 and ours with its weights (torch's names, in order)."""
    theirs = torch.nn.LSTM(width, H, L, proj_size=P, **kwargs).double()
    ours = LSTM(width, H, L, proj_size=P, **kwargs)
    state = {k: v.numpy() for k, v in theirs.state_dict().items()}
    assert list(state) == [name for name, _ in ours.named_parameters()]
    as_float64(ours).load_state_dict(state)
    return theirs, ours


@pytest.mark.parametrize(
    ("num_layers", "bidirectional", "batch_first", "batched", "bias"),
    [(1, False, False, True, True), (2, True, True, True, True), (2, True, False, False, True),
     (2, False, False, True, False)],
)  # fmt: skip
def test_projected_lstm_matches_torch(num_layers, bidirectional, batch_first, batched, bias):
    torch = pytest.importorskip("torch")
    T, N, width, H, P, L, D = 4, 2, 3, 5, 2, num_layers, 1 + bidirectional
    theirs, ours = _lstms(
        torch, width, H, P, L, bidirectional=bidirectional, batch_first=batch_first, bias=bias
    )
    assert ours.weight_hh_l0.shape == (4 * H, P) and ours.weight_hr_l0.shape == (P, H)
    if L == 2:
        assert ours.weight_ih_l1.shape == (4 * H, D * P)
    x_shape = (N, T, width) if batch_first else (T, N, width)
    x = randn(*(x_shape if batched else (T, width)), seed=1)
    lead = (L * D, N) if batched else (L * D,)
    states = [randn(*lead, P, seed=2), randn(*lead, H, seed=3)]  # h0 (.., P), c0 (.., H)

    t_x = torch.tensor(x, requires_grad=True)
    t_states = [torch.tensor(s, requires_grad=True) for s in states]
    t_out, t_finals = theirs(t_x, tuple(t_states))
    X, S = Tensor(x), [Tensor(s) for s in states]
    out, finals = ours(X, tuple(S))
    assert out.shape == tuple(t_out.shape) == x.shape[:-1] + (D * P,)
    for ours_, theirs_ in zip((out, *finals), (t_out, *t_finals)):
        assert ours_.shape == tuple(theirs_.shape)
        np.testing.assert_allclose(ours_.array, theirs_.detach().numpy(), rtol=1e-10, atol=1e-12)

    weights = [randn(*t.shape, seed=6 + i) for i, t in enumerate((out, *finals))]
    sum((t * torch.tensor(w)).sum() for t, w in zip((t_out, *t_finals), weights)).backward()
    sum((t * Tensor(w)).sum() for t, w in zip((out, *finals), weights)).backward()
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for s, t in zip(S, t_states):
        np.testing.assert_allclose(s.grad.array, t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_grads_as_torch(ours, theirs)


def test_projected_lstm_packed_and_zero_state_match_torch():
    torch = pytest.importorskip("torch")
    theirs, ours = _lstms(torch, 3, 4, 3, 2, bidirectional=True)
    x, lengths = randn(5, 3, 3, seed=1), [5, 2, 4]  # unsorted: enforce_sorted=False
    t_x = torch.tensor(x, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(t_x, lengths, enforce_sorted=False)
    t_out, (t_h, t_c) = theirs(packed)
    X = Tensor(x)
    out, (h, c) = ours(pack_padded_sequence(X, lengths, enforce_sorted=False))
    for ours_, theirs_ in zip((out.data, h, c), (t_out.data, t_h, t_c)):
        np.testing.assert_allclose(ours_.array, theirs_.detach().numpy(), rtol=1e-10, atol=1e-12)
    (t_out.data.sum() + (t_h * t_h).sum() + t_c.sum()).backward()
    (out.data.sum() + (h * h).sum() + c.sum()).backward()
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_grads_as_torch(ours, theirs)


def test_projected_lstm_weights_go_both_ways_with_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(3, 6, 2, proj_size=2, bidirectional=True)
    ours = nn.LSTM(3, 6, 2, proj_size=2, bidirectional=True)
    nn.from_torch(ours, theirs.state_dict())
    mine = nn.to_torch(ours)
    assert list(mine) == list(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(np.asarray(mine[name]), value.numpy(), err_msg=name)
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    assert repr(ours).startswith(repr(theirs))  # LSTM(3, 6, proj_size=2, num_layers=2, ...)


def test_projected_lstm_gradients_match_finite_differences():
    np.random.seed(0)
    layer = as_float64(LSTM(2, 3, num_layers=2, proj_size=2, bidirectional=True))

    def f(x, h0, c0):
        outputs, (h_n, c_n) = layer(x, (h0, c0))
        return (outputs[:, :2] * x).sum() + (h_n * h_n).sum() + (c_n * c_n).sum()

    check_grads(f, randn(3, 2, seed=1), randn(4, 2, seed=2), randn(4, 3, seed=3))


def test_projected_lstm_errors_as_torch():
    with pytest.raises(ValueError, match="LSTM: proj_size must be an integer >= 0, got -1"):
        LSTM(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="LSTM: proj_size has to be smaller than hidden_size"):
        LSTM(3, 4, proj_size=4)
    with pytest.raises(TypeError, match="LSTM: proj_size must be an integer >= 0, got 2.0"):
        LSTM(3, 4, proj_size=2.0)
    lstm, x = LSTM(3, 4, proj_size=2), Tensor(randn(5, 2, 3))
    h, c = Tensor(randn(1, 2, 2)), Tensor(randn(1, 2, 4))
    with pytest.raises(ValueError, match=r"proj_size\) = \(1, 2, 2\), got \(1, 2, 4\) \(h0\)"):
        lstm(x, (c, c))
    with pytest.raises(ValueError, match=r"batch, hidden\) = \(1, 2, 4\), got \(1, 2, 2\) \(c0\)"):
        lstm(x, (h, h))
    assert "proj_size" not in repr(LSTM(3, 4))


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_projected_lstm_on_every_backend(xp, batched):
    np.random.seed(0)
    layer = LSTM(3, 4, num_layers=2, proj_size=2, batch_first=True, bidirectional=True)
    x = randn(*((2, 5, 3) if batched else (5, 3))).astype(np.float32)

    def run(array_module):
        outputs, (h_n, c_n) = layer(Tensor(array_module.asarray(x)))
        ((outputs * outputs).sum() + h_n.sum() + c_n.sum()).backward()
        return outputs

    same_on_host_and(xp, layer, run, rtol=1e-4, atol=1e-5)


# ====================================================================== LP pooling

NORMS = [1, 2, 3, 1.5, -1.0, float("inf"), float("-inf")]


@st.composite
def lp_geometries(draw):
    """(x shape, p, kernel, stride or None, ceil_mode) with at least one window."""
    n = draw(st.integers(1, 3), label="spatial axes")
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = draw(st.none() | st.tuples(*(st.integers(1, 3) for _ in range(n))))
    size = tuple(draw(st.integers(k, k + 3)) for k in kernel)
    x_shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + size
    return x_shape, draw(st.sampled_from(NORMS)), kernel, stride, draw(st.booleans())


def torch_lp_pool(torch, n, x, p, kernel, stride, ceil_mode):
    """torch's ``lp_pool{n}d``. An infinite p is max pooling of |x| (the min for -inf) since
    torch 2.13; before it (2.11) torch took x**inf and its 0th root, 1 everywhere: there the
    rule is spelled out with torch's max pooling."""
    version = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
    if math.isinf(p) and version < (2, 13):
        sign = 1.0 if p > 0 else -1.0
        pool = getattr(torch.nn.functional, f"max_pool{n}d")
        return sign * pool(sign * x.abs(), kernel, stride, ceil_mode=ceil_mode)
    return getattr(torch.nn.functional, f"lp_pool{n}d")(x, p, kernel, stride, ceil_mode)


@settings(max_examples=25)  # the test-time budget: the averaging itself is test_pooling2's
@given(geometry=lp_geometries())
def test_lp_pool_matches_torch(geometry):
    torch = pytest.importorskip("torch")
    x_shape, p, kernel, stride, ceil_mode = geometry
    n = len(kernel)
    if n == 1:  # torch's lp_pool1d takes ints only (it multiplies by the kernel_size)
        kernel, stride = kernel[0], stride and stride[0]
    x = np.random.default_rng(0).uniform(0.2, 2.0, size=x_shape)  # positive: a real root
    if p == float("-inf"):
        x = x * np.random.default_rng(1).choice([-1.0, 1.0], size=x_shape)
    t_x = torch.tensor(x, requires_grad=True)
    expected = torch_lp_pool(torch, n, t_x, p, kernel, stride, ceil_mode)
    X = Tensor(x)
    out = getattr(F, f"lp_pool{n}d")(X, p, kernel, stride, ceil_mode)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    dout = randn(*out.shape, seed=2)
    expected.backward(torch.tensor(dout))
    out.backward(dout)
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("unbatched", [False, True])
def test_lp_pool_layers_match_torch(unbatched):
    torch = pytest.importorskip("torch")
    cases = [
        (LPPool1d(2, 3, stride=2), torch.nn.LPPool1d(2, 3, stride=2), (2, 3, 7)),
        (LPPool2d(1.5, (2, 3), (1, 2), True), torch.nn.LPPool2d(1.5, (2, 3), (1, 2), True),
         (2, 3, 5, 6)),
        (LPPool3d(3, 2), torch.nn.LPPool3d(3, 2), (1, 2, 4, 4, 5)),
    ]  # fmt: skip
    for ours, theirs, shape in cases:
        x = np.random.default_rng(0).uniform(0.1, 1.0, size=shape[unbatched:])
        expected = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours(Tensor(x)).array, expected, rtol=1e-10, atol=1e-12)
        assert repr(ours) == repr(theirs)


@pytest.mark.filterwarnings("ignore:invalid value encountered in power")
def test_lp_pool_edges_as_torch():
    """A window of zeros: output 0 and gradient 0 (not the root's infinite slope); a
    negative sum under an odd p: NaN, as torch's."""
    torch = pytest.importorskip("torch")
    x = np.array([[[0.0, 0.0, 1.0, -2.0, -1.0, -3.0]]])
    for p in (2, 3, 1):
        t_x = torch.tensor(x, requires_grad=True)
        expected = torch.nn.functional.lp_pool1d(t_x, p, 2)
        X = Tensor(x)
        out = F.lp_pool1d(X, p, 2)
        np.testing.assert_allclose(out.array, expected.detach().numpy(), equal_nan=True)
        expected.sum().backward()
        out.sum().backward()
        np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), equal_nan=True)
    np.testing.assert_array_equal(out.array, [[[0.0, -1.0, -4.0]]])  # p = 1: the sums
    assert np.isnan(F.lp_pool1d(Tensor(x), 3, 2).array[..., 1:]).all()


def test_lp_pool_gradients_match_finite_differences():
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(1, 2, 5, 4))
    check_grads(lambda t: lp_pool(t, 2.5, (2, 3), (1, 1), ceil_mode=True), x)
    check_grads(lambda t: lp_pool3d(t, 3, 2, 1), x[:, None])


def test_lp_pool_errors():
    with pytest.raises(ValueError, match="LPPool2d: norm_type must be a real number other than 0"):
        LPPool2d(0, 2)
    with pytest.raises(TypeError, match="lp_pool1d: norm_type must be a real number"):
        F.lp_pool1d(Tensor(np.ones((1, 1, 4))), "2", 2)
    with pytest.raises(ValueError, match="LPPool1d: kernel_size must be an integer >= 1"):
        LPPool1d(2, 0)
    with pytest.raises(ValueError, match=r"LPPool3d: expected input \(batch, channels, \*3"):
        LPPool3d(2, 2)(Tensor(np.ones((1, 4, 4))))
    with pytest.raises(ValueError, match=r"lp_pool3d: avg_pool3d: an input of spatial size"):
        LPPool3d(2, 2)(Tensor(np.ones((1, 1, 4, 4))))  # unbatched (C, D, H, W), too thin


# ====================================================================== divisor_override


@st.composite
def avg_geometries(draw):
    """(x shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor) in 2-D or
    3-D, with at least one window."""
    n = draw(st.integers(2, 3), label="spatial axes")
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(draw(st.integers(k, k + 3)) for k in kernel)
    x_shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + size
    divisor = draw(st.integers(-4, 9).filter(bool))
    return x_shape, kernel, stride, padding, draw(st.booleans()), draw(st.booleans()), divisor


@settings(max_examples=25)
@given(geometry=avg_geometries())
def test_avg_pool_divisor_override_matches_torch(geometry):
    torch = pytest.importorskip("torch")
    x_shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor = geometry
    n = len(kernel)
    settings = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                    count_include_pad=count_include_pad, divisor_override=divisor)  # fmt: skip
    x = randn(*x_shape, seed=0)
    t_x = torch.tensor(x, requires_grad=True)
    expected = getattr(torch.nn.functional, f"avg_pool{n}d")(t_x, **settings)
    X = Tensor(x)
    out = getattr(F, f"avg_pool{n}d")(X, **settings)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    dout = randn(*out.shape, seed=1)
    expected.backward(torch.tensor(dout))
    out.backward(dout)
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_avg_pool_layer_divisor_override_as_torch():
    torch = pytest.importorskip("torch")
    ours = nn.AvgPool2d(3, 2, 1, True, False, 4)  # torch's positional order
    theirs = torch.nn.AvgPool2d(3, 2, 1, True, False, 4)
    x = randn(2, 5, 6, seed=0)  # unbatched
    np.testing.assert_allclose(ours(Tensor(x)).array, theirs(torch.tensor(x)).numpy(), rtol=1e-12)
    assert repr(ours) == repr(theirs)  # torch's repr does not show the divisor
    check_grads(ours, x)
    with pytest.raises(ValueError, match="AvgPool2d: divisor_override must be None or a nonzero"):
        nn.AvgPool2d(2, divisor_override=0)
    with pytest.raises(TypeError, match="avg_pool2d: divisor_override must be None or a nonzero"):
        F.avg_pool2d(Tensor(x), 2, divisor_override=1.5)
    with pytest.raises(TypeError):  # torch's AvgPool1d has no divisor_override either
        nn.AvgPool1d(2, divisor_override=2)


@pytest.mark.parametrize("unbatched", [False, True])
def test_3d_pooling_layers_match_torch(unbatched):
    torch = pytest.importorskip("torch")
    x = randn(*(2, 2, 5, 4, 6)[unbatched:], seed=0)
    cases = [
        (AvgPool3d(3, 2, 1, True, False, 5), torch.nn.AvgPool3d(3, 2, 1, True, False, 5)),
        (AvgPool3d((2, 3, 2)), torch.nn.AvgPool3d((2, 3, 2))),
        (MaxPool3d(3, 2, 1, 2, True, True), torch.nn.MaxPool3d(3, 2, 1, 2, True, True)),
    ]  # torch's positional order
    for ours, theirs in cases:
        X, t_x = Tensor(x), torch.tensor(x, requires_grad=True)
        out, expected = ours(X), theirs(t_x)
        if isinstance(expected, tuple):  # torch's indices, flat into each volume
            np.testing.assert_array_equal(out[1].array, expected[1].numpy())
            out, expected = out[0], expected[0]
        np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
        dout = randn(*out.shape, seed=1)
        out.backward(dout)
        expected.backward(torch.tensor(dout))
        np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-12, atol=1e-12)
        assert repr(ours) == repr(theirs)
