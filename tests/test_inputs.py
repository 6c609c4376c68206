"""Bad input at the library's boundaries: non-numeric data, float index arrays, state dicts
that are wrong somewhere (nothing is written), devices; and Tensor.to/.cpu/.cuda and cat."""

import numpy as np
import pytest
from helpers import check_grads

import tricycle as tc
from tricycle import backend, ops
from tricycle.initialisers import init_normal, init_ones, init_xavier, init_zeros
from tricycle.layers import Dense, Sequential
from tricycle.tensor import Tensor, to_tensor

needs_gpu = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")


# ------------------------------------------------------------------ non-numeric data
@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (None, TypeError, r"Tensor: cannot make a tensor from None"),
        ([1.0, None], TypeError, r"expected numbers, got list data of numpy dtype object"),
        ("abc", TypeError, r"expected numbers, got str data"),
        ([[1, 2], [3]], ValueError, r"data is not a rectangular array of numbers"),
        ([1j, "a"], TypeError, r"expected numbers, got list data of numpy dtype <U"),
        ({"a": 1}, TypeError, r"expected numbers, got dict data"),
        (np.array([1, None]), TypeError, r"to_tensor: expected a numeric array, got dtype object"),
        (np.array(["a"]), TypeError, r"to_tensor: expected a numeric array, got dtype <U1"),
    ],
)
def test_to_tensor_refuses_what_is_not_numbers(data, error, message):
    with pytest.raises(error, match=message):
        to_tensor(data)


def test_complex_data_makes_a_complex64_tensor_as_torchs():
    assert to_tensor(1j).dtype == np.complex64 and to_tensor([1 + 2j]).array[0] == 1 + 2j


@pytest.mark.parametrize("dtype", ["foo", object, str])
def test_dtypes_must_be_numeric(dtype):
    with pytest.raises(TypeError, match=r"Tensor: .*(is not a dtype|must be a boolean, integer)"):
        to_tensor([1.0], dtype=dtype)
    with pytest.raises(TypeError, match=r"Tensor: .*(is not a dtype|must be a boolean, integer)"):
        Tensor(np.ones(2), dtype=dtype)


def test_tensor_refuses_none_too():
    with pytest.raises(TypeError, match="cannot make a tensor from None"):
        Tensor(None)


def test_numeric_data_keeps_working():
    assert to_tensor([1, 2]).dtype == np.float32
    assert to_tensor([True, False]).dtype == bool
    assert to_tensor(np.float64(2.0)).dtype == np.float64
    assert to_tensor([1.7, 2.2], dtype=int).array.tolist() == [1, 2]  # asked for: truncates
    assert to_tensor([to_tensor(1.0), to_tensor(2.0)]).array.tolist() == [1.0, 2.0]
    assert to_tensor([]).shape == (0,)


# ------------------------------------------------------------------ index arrays
@pytest.mark.parametrize(
    "index",
    [
        [0.0, 1.7],
        np.array([0.5, 1.0]),
        to_tensor([0, 1]),  # float32 by default: say dtype=int
        (slice(None), [0.0]),
        (np.array([1.0]), 0),
    ],
    ids=["list", "array", "tensor", "tuple-list", "tuple-array"],
)
def test_float_index_arrays_raise_instead_of_truncating(index):
    x = to_tensor(np.arange(6.0).reshape(3, 2))
    with pytest.raises(TypeError, match=r"getitem: index arrays must hold integers or booleans"):
        x[index]


def test_integer_and_boolean_indices_keep_working():
    x = to_tensor(np.arange(6.0).reshape(3, 2))
    assert x[[0, 2]].shape == (2, 2)
    assert x[to_tensor([2, 0], dtype=int)].array[0].tolist() == [4.0, 5.0]
    assert x[np.array([True, False, True])].shape == (2, 2)
    assert x[[True, False, True]].shape == (2, 2)
    assert x[[]].shape == (0, 2)
    assert x[:, [1]].shape == (3, 1)
    assert x[1, 1].item() == 3.0


# ------------------------------------------------------------------ load_state_dict
def model():
    tc.manual_seed(0)
    return Sequential(Dense(3, 4), Dense(4, 2), Dense(2, 2))


def snapshot(layer):
    return {name: t.array.copy() for name, t in layer.named_parameters()}


def assert_unchanged(layer, before):
    for name, t in layer.named_parameters():
        np.testing.assert_array_equal(t.array, before[name], err_msg=name)


@pytest.mark.parametrize(
    ("spoil", "error", "message"),
    [
        (lambda s: s.update({"sequence.2.bias": np.zeros(3)}), ValueError, r"shape mismatch .*"
         r"sequence.2.bias: checkpoint \(3,\) vs model \(2,\)"),
        (lambda s: s.update({"sequence.2.bias": np.array([1e300, 0.0])}), ValueError,
         r"sequence.2.bias has values too large for float32 \(largest magnitude 1e\+300\)"),
        (lambda s: s.update({"sequence.2.bias": np.array([np.nan, 0.0])}), ValueError,
         r"sequence.2.bias has non-finite values"),
        (lambda s: s.update({"sequence.2.bias": np.array(["a", "b"])}), TypeError,
         r"sequence.2.bias holds dtype <U1, not numbers"),
        (lambda s: s.update({"sequence.2.bias": None}), TypeError, r"sequence.2.bias holds dtype"),
        (lambda s: s.pop("sequence.2.bias"), ValueError, r"missing keys \['sequence.2.bias'\]"),
    ],
    ids=["shape", "overflow", "nan", "strings", "none", "missing"],
)  # fmt: skip
def test_a_bad_state_writes_nothing(spoil, error, message):
    """The bad entry comes last: every earlier parameter would have been written before."""
    target = model()
    source = model()
    for t in source.parameters():
        t.array[...] = 5.0
    state = {name: value.astype(np.float64) for name, value in source.state_dict().items()}
    spoil(state)
    before = snapshot(target)
    with pytest.raises(error, match=message):
        target.load_state_dict(state)
    assert_unchanged(target, before)


def test_a_good_state_loads_converting_float64_and_tensors():
    target, source = model(), model()
    for t in source.parameters():
        t.array[...] = 0.25
    state = {name: value.astype(np.float64) for name, value in source.state_dict().items()}
    state["sequence.0.weights"] = Tensor(state["sequence.0.weights"])
    state["sequence.1.bias"] = state["sequence.1.bias"].tolist()
    assert target.load_state_dict(state) == ([], [])
    for t in target.parameters():
        assert t.dtype == np.float32 and (t.array == 0.25).all()


# ------------------------------------------------------------------ devices
def test_to_and_cpu_on_the_cpu_return_the_tensor_itself():
    x = tc.ones(2, requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(None) is x  # as torch's


@pytest.mark.parametrize(
    "device, error",
    [("tpu", ValueError), ("cuda:-1", ValueError), (-1, ValueError), (1.5, TypeError),
     ("cpu:x", ValueError), (True, TypeError)],
)  # fmt: skip
def test_to_rejects_unknown_devices(device, error):
    with pytest.raises(error, match=r"Tensor.to: device must be 'cpu', 'gpu', .*, got"):
        tc.ones(2).to(device)


@pytest.mark.skipif(backend.cupy_available(), reason="checks the CPU-only message")
def test_to_a_gpu_without_one_says_so():
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        tc.ones(2).to("cuda")


@needs_gpu
def test_to_the_gpu_and_back_is_a_new_tensor_and_differentiable():
    x = tc.randn(2, 3, dtype="float64", requires_grad=True)
    y = x.to("cuda")
    assert y is not x and y.device == "cuda:0" and x.device == "cpu"
    assert y.cuda() is y and y.to(0) is y
    (y * y).sum().cpu().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.array, 2 * x.array)
    check_grads(lambda t: (t.to("gpu") * 3).cpu(), np.ones((2, 2)))


# ------------------------------------------------------------------ cat and stack
def test_cat_is_concatenate_and_takes_arrays():
    out = tc.cat([tc.ones(2), np.zeros(1)])
    np.testing.assert_array_equal(out.array, [1.0, 1.0, 0.0])
    assert tc.cat is tc.concatenate  # ops.concatenate, and complex_tensor's for complex tensors
    assert tc.cat.__wrapped__ is ops.concatenate


@pytest.mark.parametrize("op", [ops.cat, ops.stack])
@pytest.mark.parametrize("tensors", [[], tc.ones(2, 2), 3.0, None])
def test_cat_and_stack_need_a_list_of_tensors(op, tensors):
    with pytest.raises(TypeError, match=r"expected a non-empty list or tuple of tensors"):
        op(tensors)


# ------------------------------------------------------------------ initialisers
# (gain, std, mean and n_layers: tests/test_checks.py)
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: init_xavier((-1, 2)), ValueError, r"init_xavier: sizes must be non-negative"),
        (lambda: init_xavier((2.5, 2)), TypeError, r"init_xavier: size must be integers"),
        (lambda: init_normal(None), TypeError, r"init_normal: size must be integers or a seq"),
        (lambda: init_zeros((-1,)), ValueError, r"init_zeros: sizes must be non-negative"),
        (
            lambda: Dense(-1, 3),
            ValueError,
            r"Dense: from_size must be an integer >= 1, got -1",
        ),
    ],
)
def test_initialisers_refuse_bad_arguments_instead_of_making_nan_weights(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_initialisers_accept_an_int_and_empty_shapes():
    assert init_ones(3).shape == (3,) and init_zeros(0).shape == (0,)
    assert init_xavier((0, 0)).shape == (0, 0)
    assert init_normal([2, 3], std=0.0).tolist() == [[0.0] * 3] * 2
