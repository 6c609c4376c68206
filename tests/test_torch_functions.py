"""torch's top-level functions on tricycle (``tricycle.torch_functions``): each against torch
for values and, where torch has them, the gradients of every input; the grad modes nested as
torch's; bad arguments refused, naming the function."""

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def both(*arrays):
    """The arrays as tricycle and torch leaves that require gradients (float64)."""
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


# (name, tricycle call, torch call, input shapes): values and gradients of every input
DIFFERENTIABLE = [
    ("matmul", lambda a, b: tc.matmul(a, b), lambda a, b: torch.matmul(a, b), [(2, 3, 4), (4, 5)]),
    ("matmul 1-D", lambda a, b: tc.matmul(a, b), lambda a, b: torch.matmul(a, b), [(4,), (4, 3)]),
    ("bmm", lambda a, b: tc.bmm(a, b), lambda a, b: torch.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    ("outer", lambda a, b: tc.outer(a, b), lambda a, b: torch.outer(a, b), [(3,), (4,)]),
    ("flatten", lambda a: tc.flatten(a, 1), lambda a: torch.flatten(a, 1), [(2, 3, 4)]),
    ("flatten all", lambda a: tc.flatten(a), lambda a: torch.flatten(a), [(2, 3, 4)]),
    ("unsqueeze", lambda a: tc.unsqueeze(a, -1), lambda a: torch.unsqueeze(a, -1), [(2, 3)]),
    ("squeeze", lambda a: tc.squeeze(a), lambda a: torch.squeeze(a), [(1, 3, 1)]),
    ("squeeze dim", lambda a: tc.squeeze(a, 0), lambda a: torch.squeeze(a, 0), [(1, 3, 1)]),
    ("squeeze dims", lambda a: tc.squeeze(a, (0, 1)), lambda a: torch.squeeze(a, (0, 1)),
     [(1, 3, 1)]),
    ("squeeze a dim not 1", lambda a: tc.squeeze(a, 1), lambda a: torch.squeeze(a, 1), [(1, 3)]),
    ("clamp", lambda a: tc.clamp(a, -0.5, 0.5), lambda a: torch.clamp(a, -0.5, 0.5), [(3, 4)]),
    ("clamp min", lambda a: tc.clamp(a, min=0.1), lambda a: torch.clamp(a, min=0.1), [(3, 4)]),
    ("pow number", lambda a: tc.pow(a, 3), lambda a: torch.pow(a, 3), [(3, 4)]),
    ("pow tensor", lambda a, b: tc.pow(a.abs() + 0.5, b),
     lambda a, b: torch.pow(a.abs() + 0.5, b), [(3, 4), (4,)]),
    ("pow of a number", lambda a: tc.pow(2.0, a), lambda a: torch.pow(2.0, a), [(3,)]),
    ("gather", lambda a: tc.gather(a, 1, tc.tensor([[0, 0], [2, 1]])),
     lambda a: torch.gather(a, 1, torch.tensor([[0, 0], [2, 1]])), [(2, 3)]),
    ("norm", lambda a: tc.norm(a), lambda a: torch.norm(a), [(3, 4)]),
    ("norm p=1 dim", lambda a: tc.norm(a, 1, dim=1, keepdim=True),
     lambda a: torch.norm(a, 1, dim=1, keepdim=True), [(3, 4)]),
    ("norm p=3", lambda a: tc.norm(a, p=3, dim=0), lambda a: torch.norm(a, p=3, dim=0), [(3, 4)]),
    ("max", lambda a: tc.max(a), lambda a: torch.max(a), [(3, 4)]),
    ("max dim", lambda a: tc.max(a, 1)[0], lambda a: torch.max(a, 1)[0], [(3, 4)]),
    ("min dim keepdim", lambda a: tc.min(a, dim=0, keepdim=True).values,
     lambda a: torch.min(a, dim=0, keepdim=True).values, [(3, 4)]),
    ("max other", lambda a, b: tc.max(a, b), lambda a, b: torch.max(a, b), [(3, 4), (4,)]),
    ("min other", lambda a, b: tc.min(a, b), lambda a, b: torch.min(a, b), [(3, 4), (3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs", "shapes"), DIFFERENTIABLE,
                         ids=[case[0] for case in DIFFERENTIABLE])  # fmt: skip
def test_values_and_gradients_match_torch(name, ours, theirs, shapes):
    arrays = [normal(*shape, seed=i) for i, shape in enumerate(shapes)]
    xs, ts = both(*arrays)
    out, expected = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = normal(*expected.shape, seed=9)
    out.backward(seed)
    expected.backward(torch.tensor(seed))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_flatten_and_squeeze_shapes_match_torch_on_random_shapes(shape, data):
    x = np.zeros(shape)
    ndim = len(shape)
    start = data.draw(st.integers(-ndim, ndim - 1))
    end = data.draw(st.integers(-ndim, ndim - 1))
    if (start % ndim) <= (end % ndim):
        assert (
            tc.flatten(tc.tensor(x), start, end).shape
            == torch.flatten(torch.tensor(x), start, end).shape
        )
    dim = data.draw(st.integers(-ndim, ndim - 1))
    assert tc.squeeze(tc.tensor(x), dim).shape == torch.squeeze(torch.tensor(x), dim).shape
    assert tc.unsqueeze(tc.tensor(x), dim).shape == torch.unsqueeze(torch.tensor(x), dim).shape


def test_a_function_of_several_calls_passes_gradcheck():
    def f(a):
        b = tc.clamp(tc.matmul(a, tc.flatten(a.T)[:3].reshape(3, 1)), -2.0, 2.0)
        return tc.norm(tc.outer(tc.squeeze(b), tc.squeeze(b)) + tc.pow(a, 2).sum())

    assert tc.gradcheck(f, normal(2, 3) * 0.5)


@pytest.mark.parametrize(
    ("data", "dtype"),
    [([1, 2], None), ([1.0, 2.5], None), ([True, False], None), (3, None), (2.5, None),
     ([[1, 2], [3, 4]], "float64"), (np.arange(3, dtype=np.int32), None),
     (np.ones(2, dtype=np.float64), None), (np.float64(1.5), None), ([1, 2], "float16")],
)  # fmt: skip
def test_tensor_makes_torchs_dtypes_and_values(data, dtype):
    out = tc.tensor(data, dtype=None if dtype is None else np.dtype(dtype))
    expected = torch.tensor(data, dtype=None if dtype is None else getattr(torch, dtype))
    assert out.dtype == expected.numpy().dtype, (data, out.dtype, expected.dtype)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert out.requires_grad is False and out.args is None


def test_tensor_of_a_list_of_one_element_tensors_holds_their_numbers_as_torchs():
    # Deep Learning with PyTorch's p1ch7: torch.tensor([nll(o) for o in outs]), each (1,)
    for make in (
        lambda lib: [lib.tensor([0.5]), lib.tensor([1.5])],
        lambda lib: [lib.tensor(1.5, dtype=lib.float64), lib.tensor(2.0)],
        lambda lib: [[lib.tensor([1])], [lib.tensor(2)]],
        lambda lib: [lib.tensor([[True]]), lib.tensor([False])],
    ):
        out, expected = tc.tensor(make(tc)), torch.tensor(make(torch))
        assert out.shape == tuple(expected.shape) and out.dtype == expected.numpy().dtype
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    leaf = tc.tensor([2.0], requires_grad=True)
    copied = tc.tensor([leaf * 2, leaf])  # numbers: cut from the graph, as torch's
    assert copied.args is None and not copied.requires_grad
    np.testing.assert_array_equal(copied.numpy(), [4.0, 2.0])
    with pytest.raises(ValueError, match=r"tensor: a list's tensor must be of one.*stack.*\(2,\)"):
        tc.tensor([tc.tensor([1.0, 2.0])])
    with pytest.raises(ValueError):
        torch.tensor([torch.tensor([1.0, 2.0])])


def test_tensor_copies_and_from_numpy_and_as_tensor_share():
    array = np.arange(3.0)
    copied, shared, also_shared = tc.tensor(array), tc.from_numpy(array), tc.as_tensor(array)
    array[0] = 7.0
    assert copied.numpy()[0] == 0.0 and shared.numpy()[0] == 7.0 and also_shared.numpy()[0] == 7.0
    assert shared.dtype == np.float64 and not shared.requires_grad  # as torch.from_numpy
    leaf = tc.tensor([1.0, 2.0], requires_grad=True)
    assert leaf.requires_grad and tc.tensor(leaf).args is None  # a copy cut from the graph
    assert tc.tensor(leaf).array is not leaf.array
    assert tc.as_tensor(leaf) is leaf and tc.as_tensor(leaf, dtype=tc.float32) is leaf
    doubled = tc.as_tensor(leaf, dtype=tc.float64)  # a conversion, differentiable as torch's
    doubled.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [1.0, 1.0])
    assert tc.as_tensor([1, 2]).dtype == np.int64 and tc.as_tensor(array, dtype="float32").dtype
    assert tc.is_tensor(leaf) and not tc.is_tensor(array) and not tc.is_tensor(1.0)
    assert torch.is_tensor(torch.tensor(1.0)) and not torch.is_tensor(array)


def test_empty_numel_randperm_and_the_index_functions():
    assert tc.empty(2, 3).shape == tuple(torch.empty(2, 3).shape) == (2, 3)
    assert tc.empty((2,), dtype=tc.long).dtype == np.int64
    assert tc.numel(tc.zeros(2, 3)) == torch.numel(torch.zeros(2, 3)) == 6
    tc.manual_seed(0)
    first = tc.randperm(10)
    tc.manual_seed(0)
    assert first.dtype == np.int64 and tc.equal(first, tc.randperm(10))  # the seed repeats it
    assert sorted(first.tolist()) == list(range(10)) and tc.randperm(0).shape == (0,)
    generated = tc.randperm(5, generator=np.random.default_rng(1), dtype=tc.int32)
    assert generated.dtype == np.int32 and sorted(generated.tolist()) == [0, 1, 2, 3, 4]
    x = normal(3, 4)
    for dim, keepdim in [(None, False), (0, False), (1, True), (-1, False)]:
        for ours, theirs in [(tc.argmax, torch.argmax), (tc.argmin, torch.argmin)]:
            out = ours(tc.tensor(x), dim, keepdim)
            expected = theirs(torch.tensor(x), dim, keepdim)
            assert out.dtype == np.int64 and out.shape == tuple(expected.shape)
            np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_max_and_min_give_torchs_values_and_indices_and_numpys_keywords_numpys_values():
    x = np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 3.0]])  # a tie: torch's index is the first
    for ours, theirs in [(tc.max, torch.max), (tc.min, torch.min)]:
        for args, kwargs in [((1,), {}), ((0,), {"keepdim": True}), ((), {"dim": -1})]:
            out = ours(tc.tensor(x), *args, **kwargs)
            expected = theirs(torch.tensor(x), *args, **kwargs)
            values, indices = out  # the tutorial's  _, predicted = torch.max(outputs, 1)
            assert type(out).__name__.lower() == type(expected).__name__  # torch.return_types.max
            assert indices.dtype == np.int64 and values.shape == tuple(expected.values.shape)
            np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
            np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
        # numpy's keywords keep numpy's meaning: the values alone
        expected = theirs(torch.tensor(x), 1).values
        np.testing.assert_array_equal(ours(tc.tensor(x), axis=1).numpy(), expected.numpy())
        assert ours(tc.tensor(x), axis=(0, 1), keepdims=True).shape == (1, 1)
    with pytest.raises(TypeError, match=r"max: dim must be an axis .* got \(0, 1\)"):
        tc.max(tc.tensor(x), (0, 1))
    with pytest.raises(TypeError, match="min: arguments must be numpy's axis/keepdims or torch's"):
        tc.min(tc.tensor(x), 0, axis=0)
    with pytest.raises(TypeError, match="max: dim must be an axis or a tensor .* got None"):
        tc.max(tc.tensor(x), keepdim=True)
    with pytest.raises(TypeError, match="max: input must be a Tensor"):
        tc.max([1.0, 2.0])
    with pytest.raises(TypeError, match=r"max: out= is not supported"):
        tc.max(tc.tensor(x), 1, out=tc.zeros(2))


def test_device_names_a_device_as_torchs():
    for args in [("cpu",), ("cuda",), ("cuda:1",), ("cuda", 2)]:
        ours, theirs = tc.device(*args), torch.device(*args)
        assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
        assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert tc.device(3) == "cuda:3" and tc.device(tc.device("cpu")) == "cpu"
    x = tc.ones(2)
    assert x.to(tc.device("cpu")) is x and x.device == tc.device("cpu")
    y = torch.ones(2)  # a tensor's device as torch's: its repr, type and index, and a str
    assert (repr(x.device), str(x.device)) == (repr(y.device), str(y.device))
    assert (x.device.type, x.device.index) == (y.device.type, y.device.index) == ("cpu", None)
    assert x.device == "cpu" and f"{x.device}" == "cpu" and x.device is tc.zeros(1).device
    for args, error, match in [
        (("tpu",), ValueError, "device: device must be 'cpu', 'gpu', 'cuda'"),
        (("cuda:1", 1), ValueError, "device: index must be None: 'cuda:1' names its index"),
        (("cuda", -1), ValueError, "device: index must be None or an integer >= 0"),
        ((1.5,), TypeError, "device: type must be a str"),
    ]:
        with pytest.raises(error, match=match):
            tc.device(*args)


def test_comparisons_match_torch():
    a = np.array([1.0, 2.0, np.nan])
    b = a + np.array([1e-9, 1e-3, 0.0])
    for equal_nan in (False, True):
        close = tc.isclose(tc.tensor(a), tc.tensor(b), equal_nan=equal_nan)
        expected = torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan)
        assert close.dtype == np.bool_ and not close.requires_grad
        np.testing.assert_array_equal(close.numpy(), expected.numpy())
        for x, y in [(a[:1], b[:1]), (a, b), (a[[0, 2]], b[[0, 2]])]:
            assert tc.allclose(tc.tensor(x), tc.tensor(y), equal_nan=equal_nan) == torch.allclose(
                torch.tensor(x), torch.tensor(y), equal_nan=equal_nan
            )
    assert tc.allclose(tc.tensor(a[:2]), tc.tensor(b[:2]), atol=1e-2)
    for x, y in [([1, 2], [1, 2]), ([1, 2], [1, 3]), ([1, 2], [[1, 2]]), ([1.0], [1.0])]:
        assert tc.equal(tc.tensor(x), tc.tensor(y)) == torch.equal(torch.tensor(x), torch.tensor(y))


def test_bad_arguments_are_refused_naming_the_function():
    x = tc.ones(2, 3)
    with pytest.raises(TypeError, match="matmul: input must be a Tensor, got"):
        tc.matmul([[1.0]], x)
    with pytest.raises(TypeError, match=r"matmul: out= is not supported"):
        tc.matmul(x, x.T, out=tc.zeros(2, 2))
    with pytest.raises(ValueError, match=r"outer: input's shape must be 1-D, got \(2, 3\)"):
        tc.outer(x, tc.ones(3))
    with pytest.raises(ValueError, match="clamp: give min, max or both"):
        tc.clamp(x)
    with pytest.raises(TypeError, match="pow: exponent .* must be a Tensor"):
        tc.pow(2.0, 3.0)
    with pytest.raises(TypeError, match="from_numpy: ndarray must be a numpy ndarray"):
        tc.from_numpy([1.0])
    with pytest.raises(TypeError, match="from_numpy: dtype must be a boolean, integer or float"):
        tc.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError, match="only floating tensors can require gradients"):
        tc.tensor([1, 2], requires_grad=True)  # int64, as torch's (which raises too)
    with pytest.raises(TypeError, match="expected numbers"):
        tc.tensor(["a"])
    with pytest.raises(ValueError, match="randperm: n must be an integer >= 0"):
        tc.randperm(-1)
    with pytest.raises(TypeError, match="randperm: generator must be"):
        tc.randperm(3, generator=torch.Generator())
    with pytest.raises(ValueError, match="squeeze: dim must be"):
        tc.squeeze(x, 2)
    ones = tc.tensor(np.ones((1, 3)))  # numpy's axis is taken; an axis not of size 1 stays
    assert tc.squeeze(ones, axis=0).shape == (3,)
    assert tc.squeeze(ones, axis=1).shape == ones.squeeze(1).shape == (1, 3)
    with pytest.raises(TypeError, match="squeeze: got axis=0 and dim=0"):
        tc.squeeze(ones, 0, axis=0)
    with pytest.raises(TypeError, match="set_grad_enabled: mode must be"):
        tc.set_grad_enabled("no")
    with pytest.raises(TypeError, match="inference_mode: its argument must be a function"):
        tc.inference_mode("no")
    assert tc.is_grad_enabled()


# ------------------------------------------------------------------------- grad modes
def modes(library):
    """The grad mode seen at each point of one nesting of every context, in a library."""
    seen = [library.is_grad_enabled()]
    with library.no_grad():
        seen.append(library.is_grad_enabled())
        with library.enable_grad():
            seen.append(library.is_grad_enabled())
            with library.set_grad_enabled(False):
                seen.append(library.is_grad_enabled())
                with library.inference_mode(False):
                    seen.append(library.is_grad_enabled())
            seen.append(library.is_grad_enabled())
            with library.inference_mode():
                seen.append(library.is_grad_enabled())
        seen.append(library.is_grad_enabled())
        with library.set_grad_enabled(True):
            seen.append(library.is_grad_enabled())
    seen.append(library.is_grad_enabled())
    library.set_grad_enabled(False)  # a plain call: the mode stays set
    seen.append(library.is_grad_enabled())
    library.set_grad_enabled(True)
    seen.append(library.is_grad_enabled())
    return seen


def test_grad_modes_nest_as_torchs():
    assert modes(tc) == modes(torch)


def test_grad_modes_decorate_functions_as_torchs():
    for library in (tc, torch):

        def probe():
            return library.is_grad_enabled()

        decorated = [library.enable_grad(probe), library.enable_grad()(probe),
                     library.inference_mode(probe), library.inference_mode()(probe)]  # fmt: skip
        off = library.set_grad_enabled(False)(probe)  # decorating leaves the mode as it was
        assert library.is_grad_enabled()
        with library.no_grad():
            assert [f() for f in decorated] == [True, True, False, False]
        assert off() is False and library.is_grad_enabled()
        assert library.inference_mode(probe).__name__ == "probe"


def test_grad_modes_decide_whether_the_graph_is_built_and_restore_on_error():
    x = tc.ones(2, requires_grad=True)
    with tc.inference_mode():
        assert (x * 2).args is None
    with tc.set_grad_enabled(False):
        assert (x * 2).args is None
        with tc.enable_grad():
            assert (x * 2).args is not None
    with pytest.raises(KeyError):
        with tc.no_grad(), tc.enable_grad(), tc.set_grad_enabled(False):
            raise KeyError("inside")
    assert tc.is_grad_enabled() and (x * 2).args is not None


def test_grad_mode_is_per_thread():
    seen = []
    with tc.set_grad_enabled(False):
        thread = threading.Thread(target=lambda: seen.append(tc.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True] and tc.is_grad_enabled()
