"""CosineSchedule: warm-up, the boundaries, decay and the tail."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle.scheduler import CosineSchedule


def test_warmup_is_linear_and_reaches_max_exactly():
    schedule = CosineSchedule(1e-3, 1e-4, total_steps=100, warmup_steps=10)
    assert schedule(0) == pytest.approx(1e-4)  # max / warmup_steps, never zero
    assert [schedule(s) for s in range(10)] == pytest.approx(
        [1e-3 * (s + 1) / 10 for s in range(10)]
    )
    assert schedule(9) == 1e-3  # the last warm-up step
    assert schedule(10) == 1e-3  # the first decay step starts at the top of the cosine


def test_cosine_decay_reaches_min_at_total_steps_and_stays():
    schedule = CosineSchedule(1.0, 0.1, total_steps=20, warmup_steps=4)
    assert schedule(12) == pytest.approx(0.1 + 0.9 * 0.5)  # half way down
    assert schedule(19) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 15 / 16)))
    assert schedule(20) == 0.1
    assert schedule(10_000) == 0.1
    decay = [schedule(s) for s in range(4, 21)]
    assert all(a > b for a, b in zip(decay, decay[1:]))


def test_no_warmup_starts_at_max():
    schedule = CosineSchedule(2.0, 0.0, total_steps=4, warmup_steps=0)
    assert [schedule(s) for s in range(5)] == pytest.approx(
        [2.0, 1.0 + 2**-0.5, 1.0, 1.0 - 2**-0.5, 0.0]
    )


def test_warmup_equal_to_total_steps():
    schedule = CosineSchedule(1.0, 0.5, total_steps=3, warmup_steps=3)
    assert [schedule(s) for s in range(5)] == pytest.approx([1 / 3, 2 / 3, 1.0, 0.5, 0.5])


@given(
    st.floats(1e-6, 1.0),
    st.floats(0.0, 1.0),
    st.integers(1, 1000),
    st.integers(0, 1000),
    st.integers(0, 2000),
)
def test_learning_rate_stays_within_bounds(top, fraction, total, warmup, step):
    warmup = min(warmup, total)
    bottom = top * fraction
    lr = CosineSchedule(top, bottom, total, warmup)(step)
    assert 0 < lr <= top or (lr == bottom == 0)
    if step >= warmup:
        assert bottom - 1e-12 <= lr


@pytest.mark.parametrize(
    "args, message",
    [
        ((1.0, 2.0, 10, 1), "min_learning_rate"),
        ((1.0, -0.1, 10, 1), "min_learning_rate"),
        ((1.0, 0.1, 10, 11), "warmup_steps"),
        ((1.0, 0.1, 10, -1), "warmup_steps"),
    ],
)
def test_bad_arguments_raise(args, message):
    with pytest.raises(ValueError, match=message):
        CosineSchedule(*args)


def test_negative_step_raises():
    with pytest.raises(ValueError, match="step"):
        CosineSchedule(1.0, 0.1, 10, 2)(-1)
