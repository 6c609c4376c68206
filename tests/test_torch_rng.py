"""torch's random state on tricycle: ``get_rng_state``/``set_rng_state`` (a uint8 Tensor that
round-trips exactly: the draws after it repeat), ``seed`` and ``initial_seed``, and
``tricycle.random.fork_rng``; the errors as torch's (a TypeError for a state that is not a
uint8 tensor, a RuntimeError for one of another size)."""

import numpy as np
import pytest

import tricycle as tc
from tricycle import random

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _keep_the_generator():
    """Each test leaves tricycle's generator as it found it."""
    with random.fork_rng():
        yield


def draws():
    """One of each kind of draw: floats, normals, integers, a permutation, a 32-bit draw."""
    return np.concatenate([
        tc.rand(3).numpy(),
        tc.randn(2, 2).numpy().ravel(),
        tc.randint(0, 100, (4,)).numpy(),
        tc.randperm(5).numpy(),
        [random.generator().integers(0, 2**31, dtype=np.int32)],
    ])  # fmt: skip


def test_the_state_is_a_uint8_tensor_as_torchs():
    ours, theirs = tc.get_rng_state(), torch.get_rng_state()
    assert isinstance(ours, tc.Tensor) and ours.dtype == np.uint8 and not ours.requires_grad
    assert theirs.dtype == torch.uint8 and ours.ndim == theirs.ndim == 1
    assert ours.shape == (random.STATE_BYTES,)


def test_set_rng_state_repeats_the_draws_as_torchs():
    tc.manual_seed(1)
    torch.manual_seed(1)
    random.generator().integers(0, 7, dtype=np.int32)  # a 32-bit draw left half a word: kept
    ours, theirs = tc.get_rng_state(), torch.get_rng_state()
    first, first_t = draws(), torch.rand(5)
    tc.set_rng_state(ours)
    torch.set_rng_state(theirs)
    np.testing.assert_array_equal(draws(), first)
    np.testing.assert_array_equal(torch.rand(5).numpy(), first_t.numpy())
    tc.set_rng_state(ours)
    np.testing.assert_array_equal(tc.get_rng_state().numpy(), ours.numpy())  # exactly


def test_the_state_is_a_copy():
    state = tc.get_rng_state()
    before = state.numpy().copy()
    tc.randn(10)
    np.testing.assert_array_equal(state.numpy(), before)
    assert not np.array_equal(tc.get_rng_state().numpy(), before)


def test_seed_and_initial_seed():
    tc.manual_seed(5)
    torch.manual_seed(5)
    assert tc.initial_seed() == torch.initial_seed() == 5
    s = tc.seed()
    assert isinstance(s, int) and 0 <= s < 2**64
    assert tc.initial_seed() == s
    a = tc.randn(4).numpy()
    tc.manual_seed(s)
    np.testing.assert_array_equal(tc.randn(4).numpy(), a)
    assert tc.seed() != s  # from the OS: a new one each call


def test_fork_rng_puts_the_state_back():
    tc.manual_seed(0)
    expected = tc.randn(3).numpy()
    tc.manual_seed(0)
    with tc.random.fork_rng(devices=[], device_type="cuda"):
        tc.randn(100)
        tc.manual_seed(9)
    np.testing.assert_array_equal(tc.randn(3).numpy(), expected)
    tc.manual_seed(0)
    with tc.random.fork_rng(enabled=False):
        tc.randn(100)
    assert not np.array_equal(tc.randn(3).numpy(), expected)


def test_fork_rng_puts_the_state_back_after_an_error():
    tc.manual_seed(0)
    before = tc.get_rng_state().numpy()
    with pytest.raises(KeyError), tc.random.fork_rng():
        tc.randn(5)
        raise KeyError
    np.testing.assert_array_equal(tc.get_rng_state().numpy(), before)


@pytest.mark.parametrize(
    ("ours", "theirs", "error"),
    [
        (lambda: tc.zeros(3), lambda: torch.zeros(3), TypeError),
        (lambda: [1, 2], lambda: [1, 2], TypeError),
        (lambda: tc.zeros(3, dtype=np.uint8), lambda: torch.zeros(3, dtype=torch.uint8),
         RuntimeError),
    ],
)  # fmt: skip
def test_a_bad_state_is_refused_as_torch_refuses_it(ours, theirs, error):
    with pytest.raises(error):
        torch.set_rng_state(theirs())
    with pytest.raises(error, match="set_rng_state"):
        tc.set_rng_state(ours())


def test_restore_state_refuses_bytes_it_did_not_write():
    state = random.state_bytes()
    state[32] = 7  # has_uint32: 0 or 1
    with pytest.raises(ValueError, match="restore_state: state must be bytes state_bytes wrote"):
        random.restore_state(state)
    with pytest.raises(ValueError, match="restore_state: state must be 40 uint8"):
        random.restore_state(state[:5])
