"""torch's top-level odds and ends (``tricycle.torch_misc``) and ``tricycle.compile`` /
``tricycle.compiler``: the answers of torch's eager CPU calls on the same inputs, the
in-place functions against the Tensor methods and torch's, the control-flow operators'
results and gradients, DLPack round trips sharing memory, and torch's refusals. torch.cond,
while_loop and compile import torch's compiler on their first call (seconds), so their
answers and messages (torch 2.13's, eager) are written here instead of asked each run."""

import pickle

import numpy as np
import pytest

import tricycle as tc
from tricycle import torch_misc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


A = normal(2, 3)


def test_dtype_is_the_type_of_tricycles_dtypes():
    assert isinstance(tc.ones(2).dtype, tc.dtype) and isinstance(tc.float32, tc.dtype)
    assert isinstance(tc.long, tc.dtype) and isinstance(tc.bfloat16, tc.dtype)
    assert not isinstance(3, tc.dtype) and not isinstance("float32", tc.dtype)
    assert isinstance(torch.float32, torch.dtype)  # what torch answers for the same checks
    with pytest.raises(TypeError, match="dtype"):
        tc.dtype()


def test_layout_and_memory_formats():
    assert isinstance(tc.strided, tc.layout) and repr(tc.strided) == "tricycle.strided"
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        value = getattr(tc, name)
        assert isinstance(value, tc.memory_format) and repr(value) == f"tricycle.{name}"
        assert repr(getattr(torch, name)) == f"torch.{name}"
        assert pickle.loads(pickle.dumps(value)) is value


def test_queries_as_torchs():
    x, t = tc.Tensor(A), torch.tensor(A)
    assert tc.concat([x, x], dim=1).shape == tuple(torch.concat([t, t], dim=1).shape)
    assert tc.newaxis is torch.newaxis is None
    assert tc.is_same_size(x, tc.Tensor(A)) is torch.is_same_size(t, torch.tensor(A)) is True
    assert tc.is_same_size(x, tc.Tensor(A.T)) is torch.is_same_size(t, t.T) is False
    for dtype, torch_dtype in [(np.float32, torch.float32), (np.uint8, torch.uint8),
                               (np.bool_, torch.bool), (np.int64, torch.int64)]:  # fmt: skip
        ours, theirs = tc.Tensor(np.abs(A)).to(dtype), torch.tensor(np.abs(A)).to(torch_dtype)
        assert tc.is_signed(ours) == torch.is_signed(theirs)
    for name in ("is_conj", "is_neg", "is_inference"):
        assert getattr(tc, name)(x) is getattr(torch, name)(t) is False
        if name != "is_inference":
            assert getattr(x, name)() is getattr(t, name)() is False
    for name in ("resolve_conj", "resolve_neg"):
        assert getattr(tc, name)(x) is x and getattr(x, name)() is x
        assert getattr(torch, name)(t) is t
    assert tc.get_device(x) == torch.get_device(t) == -1
    for ours, theirs in [(x, t), (x.long(), t.long()), (x.half(), t.half())]:
        assert tc.typename(ours) == torch.typename(theirs).replace("torch", "tricycle")
    assert tc.typename(3) == torch.typename(3) == "int"
    assert tc.typename(tc.nn.Linear(2, 2)) == "tricycle.layers.Dense"  # nn.Linear is Dense
    with pytest.raises(TypeError, match="is_same_size"):
        tc.is_same_size(x, 3)
    with pytest.raises(TypeError, match="get_device"):
        tc.get_device(3)


def test_build_flags_as_torchs():
    for name in ("has_lapack", "has_mkl", "has_openmp", "has_spectral"):
        assert getattr(tc, name) is True
    assert tc.compiled_with_cxx11_abi() is torch.compiled_with_cxx11_abi()


@pytest.mark.parametrize(
    ("name", "args"),
    [("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_float", (3,)), ("sym_max", (2, 3.0)),
     ("sym_max", (5, 3)), ("sym_min", (2, 3.0)), ("sym_min", (-1, 4)), ("sym_not", (False,)),
     ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1, 2)), ("sym_sqrt", (4,)),
     ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1, 2))],
)  # fmt: skip
def test_symbolic_helpers_as_torchs(name, args):
    if name == "sym_sum" and len(args) > 1:  # torch before 2.13 takes one iterable alone
        theirs = torch.sym_sum(args)
    else:
        theirs = getattr(torch, name)(*args)
    ours = getattr(tc, name)(*args)
    assert ours == theirs and type(ours) is type(theirs)


def test_symbolic_helpers_refuse_as_torchs():
    with pytest.raises(TypeError, match="sym_ite"):
        tc.sym_ite(1, 1, 2)
    with pytest.raises(AssertionError):
        torch.sym_ite(1, 1, 2)
    with pytest.raises(TypeError, match="sym_max"):
        tc.sym_max(tc.ones(()), 3)
    with pytest.raises(ValueError):
        tc.sym_int("a")


def test_cond_runs_one_branch_with_its_gradient():
    def branches(lib, pred):
        return lib.cond(pred, lambda a: (a * 2).sin(), lambda a: a.exp(), (lib.tensor(A),))

    for pred, expected in ((True, np.sin(2 * A)), (False, np.exp(A))):  # torch.cond's answers
        np.testing.assert_allclose(branches(tc, tc.tensor(pred)).numpy(), expected, rtol=1e-12)
    x = tc.Tensor(A, requires_grad=True)
    tc.cond(tc.tensor([1.0]), lambda a: (a * a).sum(), lambda a: a.sum(), [x]).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * A)


def test_cond_refuses_as_torch():
    for lib in (tc,):  # torch.cond's errors (its first call imports its compiler: seconds)
        with pytest.raises(RuntimeError, match="single-element"):
            lib.cond(lib.tensor([True, False]), lambda: 1, lambda: 2)
        with pytest.raises(RuntimeError, match="bool or tensor"):
            lib.cond("a", lambda: 1, lambda: 2)
        with pytest.raises(TypeError):
            lib.cond(True, 3, lambda: 2)


def test_while_loop_as_torchs():
    def loop(lib, carried):
        return lib.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), carried)

    for wrap in (tuple, list):  # torch's answers: a tuple (3, 8 A) either way
        ours = loop(tc, wrap([tc.tensor(0), tc.Tensor(A)]))
        assert isinstance(ours, tuple) and int(ours[0].item()) == 3
        np.testing.assert_array_equal(ours[1].numpy(), 8 * A)
    with pytest.raises(RuntimeError, match="callable"):
        tc.while_loop(3, lambda i: (i + 1,), (tc.tensor(0),))
    with pytest.raises(RuntimeError, match="body_fn"):
        tc.while_loop(lambda i: i < 3, lambda i: i + 1, (tc.tensor(0),))
    with pytest.raises(TypeError, match="carried_inputs"):
        tc.while_loop(lambda i: i < 3, lambda i: (i + 1,), tc.tensor(0))


def test_dlpack_round_trips_share_memory():
    array = np.arange(6.0).reshape(2, 3)
    x = tc.from_dlpack(array)
    assert np.shares_memory(x.array, array) and not x.requires_grad
    back = np.from_dlpack(tc.to_dlpack(x))
    assert np.shares_memory(back, array)
    t = torch.from_dlpack(tc.to_dlpack(x))
    np.testing.assert_array_equal(t.numpy(), array)
    from_torch = tc.from_dlpack(torch.arange(4.0))
    np.testing.assert_array_equal(from_torch.numpy(), np.arange(4.0))
    assert tc.from_dlpack(x).array is not None and np.shares_memory(tc.from_dlpack(x).array, array)
    assert not np.shares_memory(tc.from_dlpack(array, copy=True).array, array)
    with pytest.raises(TypeError, match="from_dlpack"):
        tc.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="to_dlpack"):
        tc.to_dlpack(array)


def test_every_in_place_function_torch_has_for_a_tensor_method():
    tensor_methods = set(dir(tc.Tensor))
    torch_inplace = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")}
    left_to_helper_f = {"as_strided_", "conj_physical_", "resize_as_sparse_"}
    wanted = {n for n in torch_inplace if n in tensor_methods} - left_to_helper_f
    assert not {name for name in wanted if name not in tc._PUBLIC}  # each at the top level
    assert set(torch_misc.INPLACE) <= torch_inplace
    for name in torch_misc.INPLACE:
        assert getattr(tc, name).__name__ == name


@pytest.mark.parametrize(
    ("name", "args"),
    [("abs_", ()), ("clamp_", (-0.5, 0.5)), ("exp2_", ()), ("sigmoid_", ()), ("round_", ()),
     ("nan_to_num_", ()), ("fill_", (2.5,)), ("xlogy_", (2.0,)), ("clamp_min_", (0.1,))],
)  # fmt: skip
def test_in_place_functions_as_torchs(name, args):
    x, t = tc.Tensor(A.copy(), requires_grad=False), torch.tensor(A.copy())
    out, expected = getattr(tc, name)(x, *args), getattr(torch, name)(t, *args)
    assert out is x and expected is t
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)


def test_compile_returns_the_model_itself():
    model = tc.nn.Linear(2, 3)
    assert tc.compile(model) is model
    assert tc.compile(model, mode="max-autotune", backend="inductor", disable=True) is model

    @tc.compile
    def f(x):
        return x * 2

    @tc.compile(mode="reduce-overhead")
    def g(x):
        return x + 1

    assert f(3) == 6 and g(3) == 4
    assert tc.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert tc.compiler.disable(f) is f and tc.compiler.disable()(f) is f
    assert tc.compiler.allow_in_graph(f) is f and tc.compiler.assume_constant_result(f) is f
    assert tc.compiler.reset() is None and "inductor" in tc.compiler.list_backends()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"mode": "fast"}, "Unrecognized mode"), ({"mode": "default", "options": {}}, "Either mode"),
     ({"backend": "nonesuch"}, "Invalid backend")],
)  # fmt: skip
def test_compile_refuses_as_torch(kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        tc.compile(lambda x: x, **kwargs)
    with pytest.raises(RuntimeError, match="None"):
        tc.compile()(None)


def test_deterministic_debug_mode_as_torchs():
    try:
        for lib in (tc, torch):
            assert lib.get_deterministic_debug_mode() == 0
            lib.use_deterministic_algorithms(True, warn_only=True)
            assert lib.get_deterministic_debug_mode() == 1
            assert lib.is_deterministic_algorithms_warn_only_enabled() is True
            lib.set_deterministic_debug_mode("error")
            assert lib.are_deterministic_algorithms_enabled() is True
            assert lib.is_deterministic_algorithms_warn_only_enabled() is False
            assert lib.get_deterministic_debug_mode() == 2
            for bad, error, match in [("foo", RuntimeError, "`default`, `warn`, `error`"),
                                      (3, RuntimeError, "0, 1, or 2"),
                                      (1.0, TypeError, "str or int")]:  # fmt: skip
                with pytest.raises(error, match=match):
                    lib.set_deterministic_debug_mode(bad)
            lib.set_deterministic_debug_mode(0)
            assert lib.are_deterministic_algorithms_enabled() is False
    finally:
        tc.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


def test_default_generator_is_tricycles_own():
    gen = tc.default_generator
    assert gen.manual_seed(3) is gen and gen.initial_seed() == tc.initial_seed() == 3
    first = tc.rand(4).numpy()
    tc.manual_seed(3)
    np.testing.assert_array_equal(tc.rand(4).numpy(), first)
    state = gen.get_state()
    drawn = tc.randn(3, generator=gen).numpy()
    gen.set_state(state)
    np.testing.assert_array_equal(tc.randn(3).numpy(), drawn)
    assert isinstance(torch.default_generator, torch.Generator)  # torch's is its Generator
