"""The CPU's products of one row and a matrix (tricycle/backends/cpu/gemv.py) against numpy:
the matrix stored plainly and transposed, odd sizes (rows of the matrix not a multiple of
four, columns not of a tile), on the kernels' threads and on one."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import dispatch

pytest.importorskip("numba")
from tricycle.backends.cpu import gemm as cpu_gemm  # noqa: E402
from tricycle.backends.cpu import gemv as cpu_gemv  # noqa: E402

TOLERANCE = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@given(
    k=st.integers(1, 70), n=st.integers(1, 300), transposed=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_a_row_times_a_matrix_matches_numpy(k, n, transposed, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, k)).astype(dtype)
    w = rng.standard_normal((n, k) if transposed else (k, n)).astype(dtype)
    w = w.T if transposed else w  # (k, n), F-ordered when transposed
    kernel = dispatch.choose("matmul", np.matmul, x, w)
    assert kernel is cpu_gemv.matmul
    expected = x @ w
    for tile, work in [(cpu_gemv.TILE, cpu_gemv.PARALLEL_MIN_WORK), (7, 0)]:  # small tiles
        with pytest.MonkeyPatch.context() as patch:  # and every size on the threads
            patch.setattr(cpu_gemv, "TILE", tile)
            patch.setattr(cpu_gemv, "PARALLEL_MIN_WORK", work)
            got = cpu_gemv.matmul(x, w)
        assert got.dtype == expected.dtype and got.shape == (1, n)
        np.testing.assert_allclose(got, expected, **TOLERANCE[dtype])


def test_more_rows_or_a_strided_matrix_stay_with_the_general_product():
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((2, 8)), rng.standard_normal((8, 6))
    assert not cpu_gemv.applies(a, w) and not cpu_gemv.applies(a[:1], w[:, ::2])
    assert dispatch.choose("matmul", np.matmul, a, w) is cpu_gemm.matmul


def test_a_decode_sized_product_runs_on_the_threads_and_alone_alike():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 768)).astype(np.float32)
    for w in (rng.standard_normal((768, 2304)), rng.standard_normal((3072, 768)).T):
        w = w.astype(np.float32)
        threaded = cpu_gemv.matmul(x, w)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cpu_gemv, "thread_count", lambda: 1)
            np.testing.assert_allclose(cpu_gemv.matmul(x, w), threaded, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(threaded, x @ w, rtol=1e-4, atol=1e-4)
