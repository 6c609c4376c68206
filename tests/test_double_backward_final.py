"""Double backward (``create_graph=True``) of the last ops that refused it, against torch in
float64: first and second derivatives of the recurrent layers and cells (``torch.lstm``,
``gru``, ``rnn_tanh`` both ways, the cells, ``nn.LSTM(proj_size=...)``: ``second_order_final``
rebuilds them step by step), nearest ``interpolate``/``upsample_nearest``, ``unfold``/``fold``,
``linalg.cross``, ``det``, ``inv``, ``slogdet``, ``solve``, ``cholesky``, ``erfcx``, ``ndtri``,
``log_ndtr``, ``sinc``, ``entr``, ``i0``, ``i1``, ``logit``, ``xlogy``/``xlog1py``, the cosine
embedding, Poisson and Gaussian NLL losses, and a custom ``autograd.Function`` with two
differentiable outputs (one saved); a gradient penalty on an LSTM critic with torch's
weights; what still raises; the GPU."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_as_torchs,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    constant,
    cube,
    drawn,
    exercise,
    gradient_penalty,
    lib_of,
    linear_weights,
    rules_met,
)
from tricycle import (
    backend,
    second_order_final,
    second_order_losses,
    second_order_pointwise,
)

torch = pytest.importorskip("torch")

# the slopes of second_order_pointwise and _losses that the cases here exercise
FINAL_SLOPES = ("erfcx", "ndtri", "log_ndtr", "sinc", "entr", "i0", "i1", "xlogy", "xlog1py",
                "poisson_nll", "gaussian_nll", "cosine_embedding")  # fmt: skip


def well_posed(a):
    """a + 3 I: far from singular."""
    return a + 3 * lib_of(a).eye(a.shape[-1], dtype=a.dtype, device=a.device)


def two_outputs(lib):
    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            s, p = x.sin() * y, x * y * y
            ctx.save_for_backward(x, y, p)  # an output saved: read as the output again
            return s, p

        @staticmethod
        def backward(ctx, ds, dp):
            x, y, p = ctx.saved_tensors
            return ds * x.cos() * y + dp * y * y, ds * x.sin() + dp * p / y * 2

    return Two


TWO = {lib: two_outputs(lib) for lib in (torch, tricycle)}


def function_case(x, y):
    s, p = TWO[lib_of(x)].apply(x, y)
    return cube(s) + (p * s).sum() + cube(TWO[lib_of(x)].apply(y, x)[1])


def lstm(x, h, c, w_ih, w_hh, b_ih, b_hh):
    lib = lib_of(x)
    out, h_n, c_n = lib.lstm(x, (h, c), [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0, False, False,
                             False)  # fmt: skip
    return cube(out) + cube(c_n)


def cells(x, h, c, w_ih, w_hh, b_ih, b_hh):
    lib = lib_of(x)
    h1, c1 = lib.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    r = lib.rnn_relu_cell(x, h, w_ih[:3], w_hh[:3], b_ih[:3], b_hh[:3])
    t = lib.rnn_tanh_cell(x, h, w_ih[3:6], w_hh[3:6], None, None)
    g = lib.gru_cell(x, h, w_ih[:9], w_hh[:9], b_ih[:9], b_hh[:9])
    return cube(h1) + cube(c1) + cube(r) + cube(t) + cube(g)


def likelihoods(a, b, v):
    F = F_of(a)
    return (F.poisson_nll_loss(a, b) ** 2
            + F.poisson_nll_loss(v, b * 3, log_input=False, full=True, reduction="none")
            .pow(3).sum()
            + F.gaussian_nll_loss(a, b, v[:, 0], full=True, reduction="sum") ** 2
            + F.gaussian_nll_loss(a, b[0], v[:, :1] * 0.1, reduction="none").pow(3).sum()
            + F.gaussian_nll_loss(a, b, v) ** 2)  # fmt: skip


# name -> (function of the inputs giving a scalar, input shapes, (low, high) of the values)
CASES = {
    "lstm": (lstm, [(3, 2, 4), (1, 2, 3), (1, 2, 3), (12, 4), (12, 3), (12,), (12,)], (-1, 1)),
    "gru_batch_first": (
        lambda x, h, w_ih, w_hh, b_ih, b_hh: cube(
            lib_of(x).gru(x, h, [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0, False, False, True)[0]
        ),
        [(2, 3, 4), (1, 2, 3), (9, 4), (9, 3), (9,), (9,)], (-1, 1),
    ),
    "rnn_bidirectional": (
        lambda x, h, w_ih, w_hh, w_ih_r, w_hh_r: cube(
            lib_of(x).rnn_tanh(x, h, [w_ih, w_hh, w_ih_r, w_hh_r], False, 1, 0.0, False, True,
                               False)[0]
        ),
        [(3, 2, 4), (2, 2, 3), (3, 4), (3, 3), (3, 4), (3, 3)], (-1, 1),
    ),
    "cells": (cells, [(2, 4), (2, 3), (2, 3), (12, 4), (12, 3), (12,), (12,)], (-1, 1)),
    "nearest": (
        lambda a, b: cube(F_of(a).interpolate(a, scale_factor=2, mode="nearest"))
        + cube(F_of(a).interpolate(b, size=5, mode="nearest")),
        [(1, 2, 3, 3), (1, 2, 3)], (-1, 1),
    ),
    "unfold_fold": (
        lambda a, c: cube(F_of(a).unfold(a, 2, padding=1, stride=2))
        + cube(F_of(a).fold(c, (3, 3), 2, dilation=1)),
        [(1, 2, 3, 3), (1, 8, 4)], (-1, 1),
    ),
    "linalg": (
        lambda a, b, u, v: cube(lib_of(a).linalg.inv(well_posed(a)))
        + cube(lib_of(a).linalg.det(well_posed(a)))
        + cube(lib_of(a).linalg.slogdet(well_posed(a) - 5).logabsdet)
        + cube(lib_of(a).linalg.solve(well_posed(a), b))
        + cube(lib_of(a).linalg.solve(well_posed(a), b[:, 0]))
        + cube(lib_of(a).linalg.cross(u, v)) + cube(lib_of(a).linalg.cross(u, v[:1], dim=1))
        + cube(lib_of(a).linalg.cholesky(well_posed(a @ a.T)))
        + cube(lib_of(a).linalg.cholesky(well_posed(a @ a.T), upper=True)),
        [(3, 3), (3, 2), (2, 3), (2, 3)], (-1, 1),
    ),
    "special": (
        lambda a: cube(lib_of(a).special.erfcx(a)) + cube(lib_of(a).special.log_ndtr(a))
        + cube(lib_of(a).sinc(a)) + cube(lib_of(a).special.i0(a)) + cube(lib_of(a).special.i1(a)),
        [(5,)], (-1.5, 1.5),
    ),
    "probabilities": (
        lambda p: cube(lib_of(p).special.ndtri(p)) + cube(lib_of(p).special.entr(p))
        + cube(lib_of(p).logit(p)) + cube(lib_of(p).logit(p, eps=0.3)),
        [(5,)], (0.05, 0.95),
    ),
    "xlogy": (
        lambda a, b: cube(lib_of(a).xlogy(a, b)) + cube(lib_of(a).special.xlog1py(a, b))
        + cube(lib_of(a).special.xlogy(a[0], b)),
        [(2, 3), (3,)], (0.2, 2),
    ),
    "likelihood_losses": (likelihoods, [(3, 4), (3, 4), (3, 4)], (0.2, 1.5)),
    "cosine_embedding": (
        lambda a, b: F_of(a).cosine_embedding_loss(a, b, constant(a, [1.0, -1.0, -1.0])) ** 2
        + F_of(a).cosine_embedding_loss(a, b, constant(a, [-1.0, 1.0, -1.0]), margin=-0.5,
                                        reduction="none").pow(3).sum()
        + F_of(a).cosine_embedding_loss(a[0], b[1], constant(a, 1.0)) ** 3,
        [(3, 4), (3, 4)], (-1, 1),
    ),
    "function_two_outputs": (function_case, [(2, 3), (2, 3)], (0.5, 1.5)),
}  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning")  # (torch's upsample_nearest is deprecated)
@pytest.mark.parametrize("name, fn, values, weights", list(drawn(CASES)), ids=sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name, fn, values, weights):
    assert_first_and_second_as_torchs(fn, values, weights)


def test_upsample_nearest_as_torchs():
    def fn(a):
        up = F_of(a).upsample_nearest if lib_of(a) is tricycle else F_of(a).interpolate
        return cube(up(a, scale_factor=2))

    assert_first_and_second_as_torchs(fn, arrays((1, 1, 2)), arrays((1, 1, 2), seed=1))


def test_sinc_at_zero():
    """sinc'(0) = 0 (torch's) and sinc''(0) = -pi^2 / 3 (torch's is NaN: 0 / 0 under its
    mask); elsewhere torch's (the cases above)."""
    x = tricycle.tensor(np.array([0.0, 0.5]), requires_grad=True)
    (g,) = tricycle.autograd.grad(tricycle.sinc(x).sum(), x, create_graph=True)
    g.sum().backward()
    t = torch.tensor([0.0, 0.5], dtype=torch.float64, requires_grad=True)
    (g_t,) = torch.autograd.grad(torch.sinc(t).sum(), t, create_graph=True)
    g_t.sum().backward()
    np.testing.assert_allclose(g.numpy(), g_t.detach().numpy(), rtol=1e-12)
    assert x.grad.numpy()[0] == pytest.approx(-(np.pi**2) / 3, rel=1e-12)
    assert np.isnan(t.grad.numpy()[0])
    assert x.grad.numpy()[1] == pytest.approx(t.grad.numpy()[1], rel=1e-12)


def test_lstm_with_projections_as_torchs():
    """nn.LSTM(proj_size=2), two layers both ways: the gradient of the input (create_graph)
    and its square's gradient of the input and of every weight, with torch's weights."""
    options = dict(proj_size=2, num_layers=2, bidirectional=True, batch_first=True)
    theirs = torch.nn.LSTM(3, 4, **options).double()
    ours = tricycle.nn.LSTM(3, 4, **options)
    tricycle.nn.from_torch(ours.double(), theirs.state_dict())
    (values,) = arrays((3, 2, 3), seed=3)
    results = []
    for lib, layer in ((tricycle, ours), (torch, theirs)):
        x = lib.tensor(values, requires_grad=True)
        out, (h_n, c_n) = layer(x)
        (g,) = lib.autograd.grad(cube(out) + cube(c_n), x, create_graph=True)
        (g**2).sum().backward()
        results.append([g.detach().numpy(), x.grad.numpy()] + [p.grad for p in layer.parameters()])
    for a, b in zip(*results):
        a, b = (a.numpy(), b.numpy()) if hasattr(b, "numpy") else (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def critic(lib):
    lib.manual_seed(0)
    return lib.nn.LSTM(3, 5, batch_first=True), lib.nn.Linear(5, 1)


def test_gradient_penalty_on_an_lstm_critic_as_torchs():
    """WGAN-GP on an LSTM critic (its last hidden state, then a Linear): the penalty on the
    norm of grad(D(x_hat), x_hat), backpropagated to every weight and to x_hat."""
    theirs = [m.double() for m in critic(torch)]
    ours = critic(tricycle)
    for a, b in zip(ours, theirs):
        tricycle.nn.from_torch(a.double(), b.state_dict())
    real, fake, eps = arrays((2, 4, 3), (2, 4, 3), (2, 1, 1), low=-1, high=1)
    results = []
    for lib, (recurrent, head) in ((tricycle, ours), (torch, theirs)):

        def score(x_hat, recurrent=recurrent, head=head):
            out, (h_n, c_n) = recurrent(x_hat)
            return head(h_n[-1]).sum() + (out**2).sum() * 0.1

        parameters = [p for m in (recurrent, head) for p in m.parameters()]
        results.append(gradient_penalty(lib, score, parameters, real, fake, eps))
    assert len(results[0]) == len(results[1]) == 3 + 6
    assert results[0][-1] is results[1][-1] is None  # the head's bias: no part in the penalty
    transposed = linear_weights(ours[1], 3 + 4)  # (the head's weights, after the LSTM's four)
    assert_as_torchs(*results, transposed, rtol=1e-9, atol=1e-12)


def test_what_still_raises():
    """A singular det's second derivative (it needs A^-1). (The triangular solve and the
    scaled Bessel functions have theirs: tests/test_second_order_remaining.py.)"""
    singular = tricycle.tensor(np.ones((3, 3)), requires_grad=True)
    with pytest.raises(tricycle.linalg.LinAlgError, match="singular"):
        tricycle.autograd.grad(tricycle.linalg.det(singular), singular, create_graph=True)


def test_every_rule_here_is_exercised(monkeypatch):
    """Each key of ``second_order_final`` and each slope of ``FINAL_SLOPES`` is met by one of
    the cases above."""
    used = rules_met(
        monkeypatch,
        second_order_pointwise.ONE,
        second_order_pointwise.TWO,
        second_order_losses.SLOPES,
    )
    exercise(CASES)
    missing = {n for n, key in second_order_final.KEYS.items() if key not in used}
    assert missing == {"lstm_proj"}  # (test_lstm_with_projections_as_torchs's)
    assert set(FINAL_SLOPES) <= used


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """Every case above with cupy arrays (the rules compute with the arrays' module)."""
    assert_on_a_gpu_as_on_the_host(drawn(CASES))
