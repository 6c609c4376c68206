"""The ``tricycle.nn.functional`` functions a PyTorch port calls with torch's arguments:
``F.linear`` (torch's (out, in) weight), ``F.layer_norm`` (over the last axes, weight and bias
optional) and ``F.softmax``/``F.log_softmax`` along any ``dim``: against finite differences
(random shapes) and against PyTorch, forward and backward, in float64."""

import numpy as np
import pytest
from helpers import check_grads, randn
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn.functional as F
from tricycle.tensor import Tensor


@given(
    lead=st.lists(st.integers(1, 3), max_size=2),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_linear_matches_finite_differences(lead, sizes, bias, seed):
    n_in, n_out = sizes
    arrays = [randn(*lead, n_in, seed=seed), randn(n_out, n_in, seed=seed + 1)]
    arrays += [randn(n_out, seed=seed + 2)] if bias else []
    check_grads(lambda *t: F.linear(*t), *arrays)


@given(
    lead=st.lists(st.integers(1, 3), min_size=1, max_size=2),
    normalized=st.lists(st.integers(2, 4), min_size=1, max_size=2),
    affine=st.sampled_from(["both", "weight", "none"]),
    seed=st.integers(0, 2**16),
)
def test_layer_norm_matches_finite_differences(lead, normalized, affine, seed):
    shape = tuple(normalized)
    arrays = [randn(*lead, *shape, seed=seed)]
    arrays += [] if affine == "none" else [1 + randn(*shape, seed=seed + 1, scale=0.1)]
    arrays += [randn(*shape, seed=seed + 2)] if affine == "both" else []
    check_grads(lambda *t: F.layer_norm(t[0], shape, *t[1:]), *arrays, rtol=1e-4, atol=1e-6)


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    dim=st.integers(-3, 2),
    log=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_softmax_along_any_dim_matches_finite_differences(shape, dim, log, seed):
    dim = dim % len(shape)
    f = F.log_softmax if log else F.softmax
    check_grads(lambda x: f(x, dim=dim) * Tensor(randn(*shape, seed=seed + 1)), randn(*shape))


# ---------------------------------------------------------------------- PyTorch
def _against_torch(torch, ours, theirs, *arrays):
    """``ours`` and ``theirs`` of the same arrays: outputs and every input's gradient."""
    inputs = [Tensor(a, requires_grad=True) for a in arrays]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*inputs), theirs(*torch_inputs)
    dout = randn(*out.shape, seed=9)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours_in, theirs_in in zip(inputs, torch_inputs):
        np.testing.assert_allclose(
            ours_in.grad.array, theirs_in.grad.numpy(), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(bias):
    torch = pytest.importorskip("torch")
    arrays = [randn(2, 3, 5), randn(4, 5, seed=1)] + ([randn(4, seed=2)] if bias else [])
    _against_torch(torch, F.linear, torch.nn.functional.linear, *arrays)


@pytest.mark.parametrize(("normalized", "affine"), [((6,), 2), ((3, 6), 2), ((6,), 1), ((6,), 0)])
def test_layer_norm_matches_torch(normalized, affine):
    torch = pytest.importorskip("torch")
    arrays = [randn(2, 3, 6, scale=3) + 1] + [randn(*normalized, seed=i) for i in range(affine)]

    def ours(x, *affine):
        return F.layer_norm(x, normalized, *affine, eps=1e-5)

    def theirs(x, *affine):
        return torch.nn.functional.layer_norm(x, normalized, *affine, eps=1e-5)

    _against_torch(torch, ours, theirs, *arrays)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_along_dim_matches_torch(name, dim):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    _against_torch(torch, lambda x: ours(x, dim=dim), lambda x: theirs(x, dim=dim), randn(3, 4, 5))
    half = F.softmax(Tensor(randn(2, 3)), dim=0, dtype=np.float32)  # computed in dtype
    assert half.dtype == np.float32


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: F.linear(x, np.ones((3, 4))), r"F.linear: expected weight \(out, in\)"),
        (lambda x: F.linear(x, np.ones(5)), r"F.linear: .*weight \(5,\)"),
        (lambda x: F.layer_norm(x, (4,)), r"F.layer_norm: normalized_shape \(4,\)"),
        (lambda x: F.layer_norm(x, (2, 3, 5, 7)), "F.layer_norm: normalized_shape"),
        (lambda x: F.layer_norm(x, 5, np.ones(4)), r"F.layer_norm: weight's shape"),
        (lambda x: F.softmax(x, dim=3), "F.softmax: dim"),
    ],
)
def test_bad_arguments_name_the_function(call, match):
    with pytest.raises(ValueError, match=match):
        call(Tensor(np.ones((2, 3, 5))))
