"""The CPU kernels of the layers around the fused ops (tricycle/backends/cpu): pooling, batch
norm and dropout against their references, on random geometries, odd sizes, size-1 axes, ties
and NaN, non-contiguous inputs, float32 and float64, forward and backward."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import dispatch, dropout_mask
from tricycle.backends.cpu import batch_norm as cpu_batch_norm
from tricycle.backends.cpu import dropout as cpu_dropout
from tricycle.backends.cpu import pooling as cpu_pooling
from tricycle.nn import batch_norm, pooling

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-11)}


def close(got, expected, dtype, what):
    assert got.shape == expected.shape and got.dtype == expected.dtype, what
    np.testing.assert_allclose(got, expected, **TOLERANCE[dtype], err_msg=what)


def test_pooling_batch_norm_and_dropout_kernels_are_registered():
    ops = {k.op for k in dispatch.kernels(device="cpu")}
    assert {"max_pool", "avg_pool", "batch_norm", "dropout"} <= ops


def array(rng, shape, dtype, transposed: bool, ties: bool = False):
    """Random values of ``shape`` (small integers when ``ties``, so that windows hold equal
    largest elements); every other element of a wider array when ``transposed``."""
    wide = shape[:-1] + (2 * shape[-1] if transposed else shape[-1],)
    values = rng.integers(-2, 3, wide) if ties else rng.standard_normal(wide)
    values = values.astype(dtype)
    return values[..., ::2] if transposed else values


@st.composite
def pool_cases(draw):
    """(x shape, kernel, stride, padding) of a 1-d or 2-d pooling with an output >= 1."""
    n = draw(st.sampled_from([1, 2]))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(
        max(1, k - 2 * p) + draw(st.integers(0, 5)) for k, p in zip(kernel, padding)
    )  # fmt: skip
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3))) + size
    return shape, kernel, stride, padding


@given(
    case=pool_cases(),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    ties=st.booleans(),
)
def test_max_pool_kernel_matches_reference(case, dtype, transposed, ties):
    """The same maxima, and each window's gradient at the same (first largest) element, ties
    included: exactly."""
    shape, kernel, stride, padding = case
    rng = np.random.default_rng(sum(shape) + 5 * sum(kernel) + sum(stride))
    x = array(rng, shape, dtype, transposed, ties)
    out, index = pooling.max_pool_forward(np, x, kernel, stride, padding)
    dout = array(rng, out.shape, dtype, transposed)
    dx = pooling.max_pool_backward(np, dout, index, x.shape, kernel, stride, padding)
    got, got_index = cpu_pooling.max_pool_forward(np, x, kernel, stride, padding)
    np.testing.assert_array_equal(got, out)
    got_dx = cpu_pooling.max_pool_backward(np, dout, got_index, x.shape, kernel, stride, padding)
    close(got_dx, dx, dtype, "dx")


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_kernel_takes_the_first_nan_or_infinity_as_the_reference(dtype):
    x = np.array([[[1.0, np.nan, 3.0, np.nan, -np.inf, -np.inf, 2.0, np.inf, np.inf]]], dtype)
    for kernel, stride, padding in [((3,), (3,), (0,)), ((2,), (1,), (1,)), ((4,), (2,), (2,))]:
        out, index = pooling.max_pool_forward(np, x, kernel, stride, padding)
        dout = np.arange(1, out.size + 1, dtype=dtype).reshape(out.shape)
        dx = pooling.max_pool_backward(np, dout, index, x.shape, kernel, stride, padding)
        got, got_index = cpu_pooling.max_pool_forward(np, x, kernel, stride, padding)
        np.testing.assert_array_equal(got, out)
        got_dx = cpu_pooling.max_pool_backward(
            np, dout, got_index, x.shape, kernel, stride, padding
        )  # fmt: skip
        np.testing.assert_array_equal(got_dx, dx)


@given(
    case=pool_cases(),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    count_include_pad=st.booleans(),
)
def test_avg_pool_kernel_matches_reference(case, dtype, transposed, count_include_pad):
    shape, kernel, stride, padding = case
    rng = np.random.default_rng(sum(shape) + 5 * sum(kernel) + sum(stride))
    x = array(rng, shape, dtype, transposed)
    geometry = (kernel, stride, padding, count_include_pad)
    out = pooling.avg_pool_forward(np, x, *geometry)
    dout = array(rng, out.shape, dtype, transposed)
    close(cpu_pooling.avg_pool_forward(np, x, *geometry), out, dtype, "out")
    close(
        cpu_pooling.avg_pool_backward(np, dout, x.shape, *geometry),
        pooling.avg_pool_backward(np, dout, x.shape, *geometry),
        dtype,
        "dx",
    )


@given(
    shape=st.tuples(st.integers(1, 5), st.integers(1, 4), st.integers(1, 9)),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    affine=st.booleans(),
    fixed_statistics=st.booleans(),
)
def test_batch_norm_kernel_matches_reference(shape, dtype, transposed, affine, fixed_statistics):
    """Forward (y, xhat, rstd, mean, var) and backward (dx, dgamma, dbeta), with the batch's
    statistics or fixed ones, with and without gamma and beta."""
    N, C, R = shape
    if not fixed_statistics and N * R == 1:
        shape = (2, C, R)
    rng = np.random.default_rng(sum(shape))
    x = array(rng, shape, dtype, transposed) * 3 + 1
    gamma, beta = (rng.standard_normal(C).astype(dtype) for _ in range(2))
    if not affine:
        gamma = beta = None
    mean = var = None
    if fixed_statistics:
        mean, var = rng.standard_normal(C).astype(dtype), rng.random(C).astype(dtype) + 0.5
    expected = batch_norm.batch_norm_forward(np, x, gamma, beta, 1e-5, mean, var)
    got = cpu_batch_norm.batch_norm_forward(np, x, gamma, beta, 1e-5, mean, var)
    for name, g, e in zip(("y", "xhat", "rstd", "mean", "var"), got, expected):
        close(g, e, dtype, name)
    dy = array(rng, shape, dtype, transposed)
    xhat, rstd = expected[1], expected[2]
    expected = batch_norm.batch_norm_backward(np, dy, xhat, gamma, rstd, not fixed_statistics)
    got = cpu_batch_norm.batch_norm_backward(np, dy, xhat, gamma, rstd, not fixed_statistics)
    for name, g, e in zip(("dx", "dgamma", "dbeta"), got, expected):
        close(g, e, dtype, name)


def test_batch_norm_kernel_sums_a_large_channel_accurately():
    """A float32 channel of 2^18 elements with a large mean: the kernel's float64 sums give
    the mean and variance of the float64 reference to float32's precision."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 2, 4096)) * 0.1 + 1000).astype(np.float32)
    _, _, _, mean, var = cpu_batch_norm.batch_norm_forward(np, x, None, None, 1e-5)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(axis=(0, 2)), rtol=1e-7)
    np.testing.assert_allclose(var, x64.var(axis=(0, 2)), rtol=1e-4)


@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple),
    probability=st.sampled_from([0.0, 0.1, 0.5, 0.9]),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_dropout_kernel_applies_the_counter_based_mask(shape, probability, dtype, transposed, seed):
    """Forward and backward are x and dy times ``dropout_mask.keep_mask`` of the seed drawn
    from the layer's generator (rows the flattened leading axes, keys the last), exactly: the
    mask the CUDA kernel draws from the same seed."""
    rng = np.random.default_rng(seed)
    x, dy = array(rng, shape, dtype, transposed), array(rng, shape, dtype, transposed)
    y, saved = cpu_dropout.dropout_forward(np, x, probability, np.random.default_rng(seed))
    assert saved == int(np.random.default_rng(seed).integers(2**32))
    rows = np.arange(x.size // shape[-1]).reshape(shape[:-1] + (1,))
    mask = dropout_mask.keep_mask(np, saved, probability, rows, np.arange(shape[-1]), dtype)
    np.testing.assert_array_equal(y, x * mask)
    np.testing.assert_array_equal(
        cpu_dropout.dropout_backward(np, dy, probability, saved), dy * mask
    )


def test_dropout_kernel_keeps_one_minus_p_of_the_elements_and_the_mean():
    x = np.ones((256, 1024), np.float32)
    y, _ = cpu_dropout.dropout_forward(np, x, 0.2, np.random.default_rng(0))
    assert abs((y > 0).mean() - 0.8) < 0.005
    assert abs(y.mean() - 1.0) < 0.01
    np.testing.assert_allclose(y[y > 0], 1.25)
