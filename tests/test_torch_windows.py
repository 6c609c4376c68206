"""torch's factories of ``tricycle.torch_windows``: ``logspace``, the five signal windows
(every length from 0, periodic and symmetric, their parameters, dtypes), ``scalar_tensor``,
``asarray`` (memory shared where torch shares it, copies where asked, ``copy=False`` refused
where a copy is needed) and ``frombuffer`` (count, offset, a bytearray written through),
against torch's, and bad arguments refused naming the function."""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_as_torch(name, periodic):
    for n in range(0, 9):
        ours, theirs = getattr(tc, name)(n, periodic), getattr(torch, name)(n, periodic)
        assert ours.dtype == np.float32 and ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    ours = getattr(tc, name)(6, periodic, dtype=tc.float64).numpy()
    np.testing.assert_allclose(
        ours, getattr(torch, name)(6, periodic, dtype=torch.float64).numpy(), atol=1e-15
    )


def test_window_parameters_and_errors():
    ours, theirs = tc.hamming_window(7, False, 0.5, 0.3), torch.hamming_window(7, False, 0.5, 0.3)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    ours, theirs = tc.kaiser_window(9, True, beta=4.0), torch.kaiser_window(9, True, beta=4.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)
    assert tc.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="hann_window"):
        tc.hann_window(-1)
    with pytest.raises(TypeError, match="hann_window: dtype"):
        tc.hann_window(4, dtype=tc.int64)


def test_logspace_as_torch():
    for args, kwargs in [
        ((-2, 3, 7), {"base": 2.0}),
        ((0, 1, 5), {}),
        ((1, 1, 1), {}),
        ((0, 2, 0), {}),
    ]:
        ours, theirs = tc.logspace(*args, **kwargs), torch.logspace(*args, **kwargs)
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(
        tc.logspace(0, 3, 4, dtype=tc.float64).numpy(),
        torch.logspace(0, 3, 4, dtype=torch.float64).numpy(),
    )
    with pytest.raises(ValueError, match="logspace"):
        tc.logspace(0, 1, -1)


def test_scalar_tensor_as_torch():
    for value, kwargs in [(3, {}), (2.5, {}), (2, {"dtype": tc.int64})]:
        ours = tc.scalar_tensor(value, **kwargs)
        theirs = torch.scalar_tensor(value, **{k: torch.int64 for k in kwargs})
        assert ours.shape == () and str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        assert ours.item() == theirs.item()


def test_asarray_shares_and_copies_as_torch():
    a = np.arange(4.0)
    x, t = tc.asarray(a), torch.asarray(a)
    a[0] = 9.0
    assert x.numpy()[0] == t[0].item() == 9.0  # shared memory
    copied = tc.asarray(a, copy=True)
    a[1] = 7.0
    assert copied.numpy()[1] == 1.0
    assert tc.asarray(x) is x
    assert tc.asarray(x, dtype=tc.float32).dtype == np.float32
    for data in ([1, 2], [1.5, 2.0], 3.0, [[True, False]]):
        ours, theirs = tc.asarray(data), torch.asarray(data)
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="asarray: copy=False"):
        tc.asarray(a, dtype=tc.float32, copy=False)
    assert tc.asarray(a, requires_grad=True).requires_grad


def test_frombuffer_as_torch():
    buffer = bytearray(np.arange(5, dtype=np.int32).tobytes())
    x = tc.frombuffer(buffer, dtype=tc.int32, count=2, offset=4)
    t = torch.frombuffer(bytearray(buffer), dtype=torch.int32, count=2, offset=4)
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    buffer[4] = 42  # the tensor reads the bytearray's memory, as torch's
    assert x.numpy()[0] == 42
    whole = tc.frombuffer(bytes(buffer), dtype=tc.int16)
    assert whole.shape == (10,) and whole.dtype == np.int16
    with pytest.raises(ValueError, match="frombuffer"):
        tc.frombuffer(b"abc", dtype=tc.int32)
