"""tricycle.blocking: row blocks cover every row once, run once each on any number of threads,
and compute exactly what one call over the whole array computes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import blocks_over_threads
from tricycle import blocking, threads
from tricycle.blocking import (
    as_rows,
    block_index,
    blocked_ufunc,
    for_each_block,
    for_row_groups,
    row_blocks,
    row_sum,
)


@given(st.integers(0, 50), st.integers(1, 20), st.integers(1, 40))
def test_row_blocks_cover_every_row_once(n_rows, row_size, block):
    default = blocking.BLOCK_ELEMENTS
    try:
        blocking.BLOCK_ELEMENTS = block
        slices = row_blocks(np, n_rows, row_size)
    finally:
        blocking.BLOCK_ELEMENTS = default
    covered = np.concatenate([np.arange(n_rows)[s] for s in slices] + [np.array([])])
    np.testing.assert_array_equal(covered, np.arange(n_rows))
    assert [block_index(s) for s in slices] == list(range(len(slices)))


@pytest.mark.parametrize("n_threads", [1, 3])
def test_for_each_block_runs_every_block_once(monkeypatch, n_threads):
    """On any number of threads, and with a nested blocked op inside a block (run serially)."""
    monkeypatch.setattr(blocking, "BLOCK_ELEMENTS", 4)
    out = np.zeros(50)

    def fill(rows):
        out[rows] += 1
        inner = np.zeros(10)
        for_each_block(np, 10, 1, lambda r: inner.__setitem__(r, 1))  # nested: serial
        assert inner.all()

    with threads.enabled(n_threads, share_machine=False):
        for_each_block(np, 50, 1, fill)
    np.testing.assert_array_equal(out, 1)


def test_for_each_block_propagates_errors(monkeypatch):
    def fail(rows):
        if rows.start == 3:
            raise ArithmeticError("block 3")

    with blocks_over_threads(monkeypatch, 1), pytest.raises(ArithmeticError, match="block 3"):
        for_each_block(np, 6, 1, fail)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_for_row_groups_partitions_the_rows(n_threads):
    seen = np.zeros(7, dtype=int)

    def visit(rows):
        seen[rows] += 1

    with threads.enabled(n_threads, share_machine=False):
        for_row_groups(np, 7, visit)
    np.testing.assert_array_equal(seen, 1)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply])
def test_blocked_ufunc_matches_the_ufunc(monkeypatch, ufunc):
    """Row blocks over threads compute exactly ufunc(a, b): b of a's shape or a row (bias),
    a not contiguous, and in place (out=a)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 5, 7)).astype(np.float32)
    operands = [rng.normal(size=shape).astype(np.float32) for shape in (a.shape, (7,))]
    with blocks_over_threads(monkeypatch, 8):
        for b in operands:
            np.testing.assert_array_equal(blocked_ufunc(np, ufunc, a, b), ufunc(a, b))
            strided = a[:, ::2]
            b_strided = b[:, ::2] if b.ndim == 3 else b
            got = blocked_ufunc(np, ufunc, strided, b_strided)
            np.testing.assert_array_equal(got, ufunc(strided, b_strided))
            inplace = a.copy()
            blocked_ufunc(np, ufunc, inplace, b, out=inplace)
            np.testing.assert_array_equal(inplace, ufunc(a, b))


def test_row_sum_and_as_rows():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    np.testing.assert_array_equal(as_rows(a), a.reshape(6, 4))
    assert as_rows(np.arange(3.0)).shape == (1, 3)
    np.testing.assert_allclose(row_sum(np, as_rows(a), 0.5), 0.5 * a.reshape(6, 4).sum(1)[:, None])
