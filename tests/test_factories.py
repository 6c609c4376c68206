"""Factories (zeros ... randn_like): values, dtype, device and requires_grad against numpy, the
torch-style calling forms, and clear errors for bad sizes, dtypes and devices."""

import numpy as np
import pytest
from conftest import BACKENDS
from helpers import check_grads

import tricycle as tc
from tricycle import backend
from tricycle.tensor import Tensor


@pytest.fixture(params=BACKENDS)
def device(request):
    return "cpu" if request.param == "numpy" else "cuda"


def host(t: Tensor) -> np.ndarray:
    return t.numpy()


def check(t: Tensor, expected: np.ndarray, device: str, requires_grad=False):
    assert isinstance(t, Tensor)
    assert t.dtype == expected.dtype, (t.dtype, expected.dtype)
    assert t.shape == expected.shape
    np.testing.assert_array_equal(host(t), expected)
    assert t.requires_grad is requires_grad and t.args is None  # a leaf
    assert t.device == ("cpu" if device == "cpu" else "cuda:0")


# ------------------------------------------------------------------ deterministic factories
def test_zeros_ones_full(device):
    check(tc.zeros(2, 3, device=device), np.zeros((2, 3), np.float32), device)
    check(tc.zeros((2, 3), device=device), np.zeros((2, 3), np.float32), device)
    check(tc.ones([4], dtype="float64", device=device), np.ones(4), device)
    check(tc.ones(2, dtype=int, device=device), np.ones(2, dtype=int), device)
    check(tc.full((2, 2), 7, dtype=np.int32, device=device), np.full((2, 2), 7, np.int32), device)
    check(tc.full((3,), -1.5, device=device), np.full(3, -1.5, np.float32), device)
    check(tc.full((3,), 2, device=device), np.full(3, 2, np.int64), device)  # as torch's
    check(tc.full((2,), True, device=device), np.full(2, True), device)
    check(tc.full((2,), np.int32(2), device=device), np.full(2, 2, np.int64), device)
    check(tc.full((2,), 2, dtype=float, device=device), np.full(2, 2.0), device)
    check(tc.zeros(device=device), np.zeros((), np.float32), device)  # a scalar
    check(tc.zeros(0, 3, device=device), np.zeros((0, 3), np.float32), device)
    check(tc.ones(2, requires_grad=True, device=device), np.ones(2, np.float32), device, True)
    check(tc.zeros(np.int64(2), device=device), np.zeros(2, np.float32), device)


def test_arange_and_linspace(device):
    check(tc.arange(5, device=device), np.arange(5), device)  # int64, as torch
    check(tc.arange(2, 11, 3, device=device), np.arange(2, 11, 3), device)
    check(tc.arange(5, 0, -2, device=device), np.arange(5, 0, -2), device)
    check(tc.arange(0, 1, 0.25, device=device), np.arange(0, 1, 0.25).astype(np.float32), device)
    check(tc.arange(3, dtype="float64", device=device), np.arange(3.0), device)
    check(tc.linspace(-1, 1, 5, device=device), np.linspace(-1, 1, 5, dtype=np.float32), device)
    check(tc.linspace(0, 1, 1, device=device), np.array([0.0], np.float32), device)
    check(tc.linspace(0, 1, 0, device=device), np.zeros(0, np.float32), device)


def test_eye_tril_triu(device):
    check(tc.eye(3, device=device), np.eye(3, dtype=np.float32), device)
    check(tc.eye(2, 4, dtype=bool, device=device), np.eye(2, 4, dtype=bool), device)
    x = tc.arange(1, 13, dtype="float64", device=device).reshape(3, 4)
    expected = np.arange(1.0, 13.0).reshape(3, 4)
    np.testing.assert_array_equal(host(tc.tril(x)), np.tril(expected))
    np.testing.assert_array_equal(host(tc.triu(x, 1)), np.triu(expected, 1))
    np.testing.assert_array_equal(
        host(tc.tril(np.ones((2, 2, 2)), -1)), np.tril(np.ones((2, 2)), -1)[None].repeat(2, 0)
    )


def test_tril_and_triu_are_differentiable():
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    check_grads(lambda t: tc.tril(t, 1) * tc.tril(t, 1) + tc.triu(t), x)


def test_tril_against_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=(3, 4))
    ours, theirs = Tensor(x), torch.tensor(x, requires_grad=True)
    upstream = np.random.default_rng(1).normal(size=(3, 4))
    tc.triu(ours, -1).backward(upstream)
    torch.triu(theirs, -1).backward(torch.tensor(upstream))
    np.testing.assert_array_equal(ours.grad.array, theirs.grad.numpy())


# ------------------------------------------------------------------ random factories
def test_rand_randn_randint(device):
    tc.manual_seed(0)
    u = tc.rand(1000, device=device)
    assert u.dtype == np.float32 and u.device == ("cpu" if device == "cpu" else "cuda:0")
    assert 0 <= host(u).min() and host(u).max() < 1 and abs(host(u).mean() - 0.5) < 0.05
    n = tc.randn(50, 40, dtype="float64", device=device)
    assert n.dtype == np.float64 and abs(host(n).mean()) < 0.1 and abs(host(n).std() - 1) < 0.1
    i = tc.randint(3, 7, (2000,), device=device)
    assert i.dtype == np.int64 and set(np.unique(host(i))) == {3, 4, 5, 6}
    j = tc.randint(4, (3, 2), device=device)  # torch's form: high and size
    assert j.shape == (3, 2) and host(j).min() >= 0 and host(j).max() < 4
    # size by keyword, as pytorch/examples' forward-forward writes it: randint(9, size=(1,))
    k = tc.randint(3, size=(2000,), device=device)
    assert k.dtype == np.int64 and set(np.unique(host(k))) == {0, 1, 2}
    assert tc.randint(5, 9, size=(4,)).shape == (4,)
    assert tc.rand(2, dtype="float16").dtype == np.float16
    assert tc.randn(2, 3, requires_grad=True).requires_grad


def test_sizes_by_keyword_as_torchs(device):
    """torch's ``rand(size=(2, 4))`` (d2l's builders' guide), ``zeros(size=...)``: the same
    tensors as the sizes given by position; both at once is an error naming the factory."""
    for name in "zeros", "ones", "rand", "randn":
        factory = getattr(tc, name)
        tc.manual_seed(0)
        by_keyword = factory(size=(2, 4), device=device)
        tc.manual_seed(0)
        np.testing.assert_array_equal(host(by_keyword), host(factory(2, 4, device=device)))
        assert by_keyword.shape == (2, 4) and factory(size=3).shape == (3,)
        with pytest.raises(TypeError, match=rf"{name}: got the sizes \(2,\) and size=\(3,\)"):
            factory(2, size=(3,))


def test_random_factories_reproduce_under_manual_seed_on_every_device(device):
    tc.manual_seed(123)
    first = [host(tc.rand(5)), host(tc.randn(5)), host(tc.randint(0, 100, (5,)))]
    tc.manual_seed(123)
    again = [host(f(device=device)) for f in (
        lambda **k: tc.rand(5, **k), lambda **k: tc.randn(5, **k),
        lambda **k: tc.randint(0, 100, (5,), **k),
    )]  # fmt: skip
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    tc.manual_seed(124)
    assert not np.array_equal(host(tc.rand(5)), first[0])


def test_an_explicit_generator_is_used_and_tricycles_is_untouched():
    tc.manual_seed(5)
    state = tc.random.generator().bit_generator.state
    a = tc.randn(4, generator=np.random.default_rng(9))
    b = tc.randn(4, generator=np.random.default_rng(9))
    np.testing.assert_array_equal(a.array, b.array)
    assert tc.random.generator().bit_generator.state == state


# ------------------------------------------------------------------ *_like
def test_like_factories_copy_shape_dtype_and_device(device):
    x = tc.zeros(2, 3, dtype="float64", device=device)
    check(tc.zeros_like(x), np.zeros((2, 3)), device)
    check(tc.ones_like(x, dtype=np.float32), np.ones((2, 3), np.float32), device)
    check(tc.full_like(x, 4.0), np.full((2, 3), 4.0), device)
    assert tc.rand_like(x).dtype == np.float64 and tc.rand_like(x).device == x.device
    assert tc.randn_like(x, requires_grad=True).requires_grad
    ids = tc.arange(4, device=device)
    check(tc.zeros_like(ids), np.zeros(4, dtype=np.int64), device)
    check(tc.ones_like(np.zeros((2,), np.int32)), np.ones(2, np.int32), "cpu")
    check(tc.zeros_like(x, device="cpu"), np.zeros((2, 3)), "cpu")


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tc.zeros(2, -1), ValueError, r"zeros: sizes must be non-negative, got \(2, -1\)"),
        (lambda: tc.ones(2.5), TypeError, r"ones: size must be integers, got \(2.5,\)"),
        (lambda: tc.zeros(float("nan")), TypeError, r"zeros: size must be integers, got \(nan,\)"),
        (lambda: tc.zeros("3"), TypeError, r"zeros: size must be integers or a sequence"),
        (lambda: tc.zeros(None), TypeError, r"zeros: size must be integers or a sequence"),
        (lambda: tc.zeros(True), TypeError, r"zeros: size must be integers"),
        (lambda: tc.rand(2, -3), ValueError, r"rand: sizes must be non-negative"),
        (lambda: tc.full((2,), "x"), TypeError, r"full: fill_value must be a real number"),
        (lambda: tc.full((2,), 1.5, dtype=int), ValueError, r"full: fill_value 1.5 is not an"),
        (lambda: tc.full((2,), float("nan"), dtype=int), ValueError, r"full: fill_value nan"),
        (lambda: tc.zeros(2, dtype="foo"), TypeError, r"zeros: 'foo' is not a dtype"),
        (lambda: tc.zeros(2, dtype=str), TypeError, r"zeros: dtype must be a boolean, integer"),
        (lambda: tc.zeros(2, dtype=object), TypeError, r"zeros: dtype must be a boolean"),
        (lambda: tc.ones(2, dtype=int, requires_grad=True), TypeError, r"ones: only floating"),
        (lambda: tc.rand(2, dtype=int), TypeError, r"rand: draws floats; dtype must be a float"),
        (lambda: tc.randn(2, dtype=bool), TypeError, r"randn: draws floats"),
        (lambda: tc.randint(5, 5, (2,)), ValueError, r"randint: needs low < high, got low=5"),
        (lambda: tc.randint(5.5, 9, (2,)), TypeError, r"randint: low must be an integer"),
        (lambda: tc.randint(10), TypeError, r"randint: missing size"),
        (lambda: tc.arange(0, 5, 0), ValueError, r"arange: step must not be zero"),
        (lambda: tc.arange(0, float("inf")), ValueError, r"arange: end must be a finite number"),
        (lambda: tc.arange(float("nan")), ValueError, r"arange: end must be a finite number"),
        (lambda: tc.arange("5"), TypeError, r"arange: end must be a finite number, got '5'"),
        (lambda: tc.linspace(0, 1, -1), ValueError, r"linspace: steps must be an integer >= 0"),
        (lambda: tc.linspace(0, 1, 2.5), TypeError, r"linspace: steps must be an integer"),
        (lambda: tc.linspace(0, float("nan"), 3), ValueError, r"linspace: end must be a finite"),
        (lambda: tc.eye(-2), ValueError, r"eye: n must be an integer >= 0, got -2"),
        (lambda: tc.eye(2, 1.5), TypeError, r"eye: m must be an integer"),
        (lambda: tc.tril(tc.ones(3)), ValueError, r"tril: needs a tensor with at least 2"),
        (lambda: tc.triu(tc.ones(2, 2), 0.5), TypeError, r"triu: diagonal must be an integer"),
        (lambda: tc.zeros(2, device="tpu"), ValueError, r"zeros: device must be .*, got 'tpu'"),
        (lambda: tc.zeros(2, device=-1), ValueError, r"zeros: device must be .*, got -1"),
        (lambda: tc.zeros(2, device="cuda:x"), ValueError, r"zeros: device must be .*'cuda:x'"),
    ],
)
def test_bad_arguments_raise_naming_the_factory(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.skipif(backend.cupy_available(), reason="checks the CPU-only message")
def test_a_gpu_device_without_a_gpu_says_so():
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        tc.zeros(2, device="cuda")


def test_arange_takes_torchs_dtype_names(device):
    """nanoGPT's ``torch.arange(0, t, dtype=torch.long, device=device)``, as tricycle."""
    positions = tc.arange(0, 5, dtype=tc.long, device=device)
    check(positions, np.arange(5, dtype=np.int64), device)
    check(tc.zeros(2, dtype=tc.float64, device=device), np.zeros(2), device)
    check(tc.ones(2, dtype=tc.bool, device=device), np.ones(2, dtype=bool), device)


def test_multinomial_is_the_method_as_a_function():
    weights = tc.to_tensor([[0.0, 1.0, 3.0], [2.0, 0.0, 5.0]])
    tc.manual_seed(3)
    drawn = tc.multinomial(weights, num_samples=2)
    tc.manual_seed(3)
    np.testing.assert_array_equal(drawn.numpy(), weights.multinomial(2).numpy())
    assert drawn.dtype == np.int64 and drawn.shape == (2, 2)
    # without replacement: both ids of weight > 0 in each row
    assert sorted(drawn.numpy()[0]) == [1, 2] and sorted(drawn.numpy()[1]) == [0, 2]
    drawn = tc.multinomial(weights[:, 1:], 4, True, generator=np.random.default_rng(0))
    assert drawn.shape == (2, 4) and (drawn.numpy()[1] == 1).all()  # the one id of weight > 0
    with pytest.raises(TypeError, match="multinomial: input must be a Tensor of weights"):
        tc.multinomial(np.ones(3), 1)
