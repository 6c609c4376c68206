"""torch's smaller names that tricycle lacked, against torch where it can answer:
``tricycle.serialization``'s (``skip_data``, ``get_unsafe_globals_in_checkpoint``, the load
endianness and mmap settings, the device registry, ``DEFAULT_PROTOCOL``,
``SourceChangeWarning``), ``tricycle.random``'s torch names, the deprecated
``testing.assert_allclose``, ``nn.utils.rnn.invert_permutation`` and
``parametrize.transfer_parametrizations_and_params``; ``tricycle.utils.checkpoint``'s
(``checkpoint``'s arguments, the helpers, selective activation checkpointing)."""

import contextlib
import io
import mmap
import warnings

import numpy as np
import pytest

import tricycle as tc
from tricycle import backend, nn, testing
from tricycle import random as tc_random
from tricycle import serialization as S
from tricycle.nn.utils import parametrizations, parametrize
from tricycle.nn.utils.rnn import invert_permutation
from tricycle.utils import checkpoint

torch = pytest.importorskip("torch")


class Custom:
    """A class pickled by reference: not on the weights_only allow-list."""


# ---------------------------------------------------------------------------- serialization
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_unsafe_globals_listed_without_loading(protocol):
    f = io.BytesIO()
    state = {"layer": nn.Linear(2, 3), "cls": Custom, "w": tc.tensor([1.0]), "again": Custom}
    tc.save(state, f, pickle_protocol=protocol)
    data = f.getvalue()
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [
        "tricycle.layers.Dense",
        f"{__name__}.Custom",
    ]
    with S.safe_globals([Custom]):
        assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == ["tricycle.layers.Dense"]
    f = io.BytesIO()
    tc.save({"w": tc.tensor([1.0, 2.0]), "a": np.ones(2)}, f, pickle_protocol=protocol)
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(f.getvalue())) == []


def test_unsafe_globals_as_torch_on_its_own_files(tmp_path):
    f = io.BytesIO()
    torch.save({"cls": Custom, "w": torch.ones(1)}, f)
    f.seek(0)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(f) == [f"{__name__}.Custom"]
    with pytest.raises(ValueError, match="zip"):
        S.get_unsafe_globals_in_checkpoint(io.BytesIO(f.getvalue()))


def test_skip_data_saves_and_loads_zeros():
    state = {"w": tc.tensor([[1.0, 2.0]]), "a": np.arange(3, dtype=np.int32)}
    f = io.BytesIO()
    with S.skip_data():
        tc.save(state, f)
    assert not S.skipping()
    loaded = tc.load(io.BytesIO(f.getvalue()))
    np.testing.assert_array_equal(loaded["w"].array, np.zeros((1, 2), np.float32))
    assert loaded["a"].dtype == np.int32 and not loaded["a"].any()
    np.testing.assert_array_equal(state["w"].array, [[1.0, 2.0]])  # the object is untouched
    f = io.BytesIO()
    tc.save(state, f)
    with S.skip_data(materialize_fake_tensors=False):
        loaded = tc.load(io.BytesIO(f.getvalue()))
    assert loaded["w"].shape == (1, 2) and not loaded["w"].array.any()
    # torch's: the same zeros
    g = io.BytesIO()
    with torch.serialization.skip_data():
        torch.save({"w": torch.tensor([[1.0, 2.0]])}, g)
    g.seek(0)
    np.testing.assert_array_equal(torch.load(g)["w"].numpy(), loaded["w"].array)


def test_held_settings_as_torch():
    for ours, theirs in ((S, torch.serialization),):
        assert ours.get_default_load_endianness() is theirs.get_default_load_endianness() is None
        assert ours.get_default_mmap_options() == theirs.get_default_mmap_options()
        assert [e.value for e in ours.LoadEndianness] == [e.value for e in theirs.LoadEndianness]
    S.set_default_load_endianness(S.LoadEndianness.BIG)
    assert S.get_default_load_endianness() is S.LoadEndianness.BIG
    S.set_default_load_endianness(None)
    for module in (S, torch.serialization):
        with pytest.raises(TypeError, match="set_default_load_endianness"):
            module.set_default_load_endianness("big")
        with pytest.raises(ValueError, match="MAP_PRIVATE or mmap.MAP_SHARED"):
            module.set_default_mmap_options(7)
    with S.set_default_mmap_options(mmap.MAP_SHARED):
        assert S.get_default_mmap_options() == mmap.MAP_SHARED
    assert S.get_default_mmap_options() == mmap.MAP_PRIVATE
    assert S.DEFAULT_PROTOCOL == torch.serialization.DEFAULT_PROTOCOL == 2
    assert issubclass(S.SourceChangeWarning, Warning)


def test_device_registry():
    x = tc.tensor([1.0, 2.0])
    assert S.location_tag(x) == S.location_tag(x.array) == "cpu"
    assert torch.serialization.location_tag(torch.ones(1).untyped_storage()) == "cpu"
    assert S.default_restore_location(x, "cpu") is not None
    with pytest.raises(RuntimeError, match="don't know how to restore"):
        S.default_restore_location(x, "ipu")
    with pytest.raises(RuntimeError, match="don't know how to determine"):
        S.location_tag(_Untagged())
    seen = []
    S.register_package(
        5,
        lambda obj: "ipu" if isinstance(obj, _Untagged) else None,
        lambda obj, where: seen.append(where) or obj if where == "ipu" else None,
    )
    thing = _Untagged()
    assert S.location_tag(thing) == "ipu"
    assert S.default_restore_location(thing, "ipu") is thing and seen == ["ipu"]
    assert S.location_tag(x) == "cpu"  # the host's tagger still answers for the rest


class _Untagged:
    """An object no default tagger knows."""


# ---------------------------------------------------------------------------- random, testing
def test_random_names_as_torch_random():
    for name in (
        "get_rng_state",
        "set_rng_state",
        "default_generator",
        "Generator",
        "thread_safe_generator",
        "fork_rng",
        "manual_seed",
        "seed",
        "initial_seed",
    ):
        assert hasattr(tc_random, name), name
        # torch before 2.13 has no thread_safe_generator
        assert hasattr(torch.random, name) or name == "thread_safe_generator", name
    assert tc_random.get_rng_state is tc.get_rng_state
    assert tc_random.default_generator is tc.default_generator
    state = tc_random.get_rng_state()
    first = tc.rand(3).array
    tc_random.set_rng_state(state)
    np.testing.assert_array_equal(tc.rand(3).array, first)
    assert tc_random.thread_safe_generator() is None
    if hasattr(torch.random, "thread_safe_generator"):
        assert torch.random.thread_safe_generator() is None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tc_random.nothing  # noqa: B018


@pytest.mark.parametrize(
    "actual, expected",
    [(1.0, 1.00005), (1.0, 1.001), ([1.0, 2.0], [1.0, 2.00001]), (np.array([1.0, np.nan]),
     np.array([1.0, np.nan])), (np.array([1.0]), np.array([1.0000001])),
     (np.array([1.0], np.float32), 1.00001), (np.array([3], np.int64), 3)],
)  # fmt: skip
def test_assert_allclose_as_torch(actual, expected):
    outcomes = []
    for check, to in ((testing.assert_allclose, tc.tensor), (torch.testing.assert_allclose,
                                                              torch.tensor)):  # fmt: skip
        a = to(actual) if isinstance(actual, np.ndarray) else actual
        with pytest.warns(FutureWarning, match="assert_close"):
            try:
                check(a, expected)
                outcomes.append(True)
            except AssertionError:
                outcomes.append(False)
    assert outcomes[0] == outcomes[1]
    with pytest.raises(AssertionError, match="custom"), pytest.warns(FutureWarning):
        testing.assert_allclose(1.0, 2.0, msg="custom")


# ---------------------------------------------------------------------------- nn.utils
def test_invert_permutation_as_torch():
    order = np.random.default_rng(0).permutation(7)
    ours = invert_permutation(tc.tensor(order))
    theirs = torch.nn.utils.rnn.invert_permutation(torch.tensor(order))
    np.testing.assert_array_equal(ours.array, theirs.numpy())
    assert str(ours.dtype) == "int64" and invert_permutation(None) is None
    assert invert_permutation(tc.tensor(np.zeros(0, np.int64))).shape == (0,)
    for bad, kind in (([2, 0, 1], RuntimeError), ([[0, 1]], IndexError),
                      ([3, 0, 1], RuntimeError), ([0.0, 1.0], RuntimeError)):  # fmt: skip
        dtype = np.int32 if bad == [2, 0, 1] else None
        with pytest.raises(kind):
            torch.nn.utils.rnn.invert_permutation(torch.tensor(np.array(bad, dtype=dtype)))
        with pytest.raises(kind, match="invert_permutation"):
            invert_permutation(tc.tensor(np.array(bad, dtype=dtype)))


def test_transfer_parametrizations_and_params():
    source, target = nn.Linear(3, 4), nn.Linear(3, 4)
    parametrizations.weight_norm(source)
    assert parametrize.transfer_parametrizations_and_params(source, target) is target
    assert sorted(target.state_dict()) == sorted(source.state_dict())
    assert target.parametrizations.weight.original0 is source.parametrizations.weight.original0
    np.testing.assert_array_equal(target.weights.array, source.weights.array)
    assert parametrize.type_before_parametrizations(target) is nn.Linear

    class Empty(nn.Module):
        pass

    class TorchEmpty(torch.nn.Module):
        pass

    bare, torch_bare = Empty(), TorchEmpty()
    torch_source = torch.nn.Linear(3, 4)
    torch.nn.utils.parametrizations.weight_norm(torch_source)
    torch.nn.utils.parametrize.transfer_parametrizations_and_params(torch_source, torch_bare)
    parametrize.transfer_parametrizations_and_params(source, bare, "weight")
    assert sorted(bare.state_dict()) == sorted(torch_bare.state_dict())
    np.testing.assert_array_equal(bare.weight.array, source.weights.array.T)
    plain = nn.Linear(3, 4)
    assert parametrize.transfer_parametrizations_and_params(plain, target) is target


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_serialization_on_gpu():
    x = tc.tensor([1.0, 2.0]).to_gpu()
    assert S.location_tag(x) == S.location_tag(x.array) == "cuda:0"
    host = S.default_restore_location(x, "cpu")
    assert isinstance(host.array, np.ndarray)
    back = S.default_restore_location(tc.tensor([3.0]), "cuda:0")
    assert backend.is_cupy_array(back.array)
    f = io.BytesIO()
    with S.skip_data():
        tc.save({"w": x}, f)
    loaded = tc.load(io.BytesIO(f.getvalue()))
    np.testing.assert_array_equal(loaded["w"].array, [0.0, 0.0])
    np.testing.assert_array_equal(backend.to_host_array(x.array), [1.0, 2.0])


# ---------------------------------------------------------------------------- checkpoint
def _both_blocks():
    """A tricycle block and torch's with the same float64 weights."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    theirs = theirs.double()
    ours = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    for i in (0, 2):
        ours[i].weights.array = theirs[i].weight.detach().numpy().T.copy()
        ours[i].bias.array = theirs[i].bias.detach().numpy().copy()
    return ours, theirs


def _counting_context_fn(entered: list):
    def context_fn():
        def counted(name):
            @contextlib.contextmanager
            def context():
                entered.append(name)
                yield

            return context()

        return counted("forward"), counted("recompute")

    return context_fn


@pytest.mark.parametrize("early_stop", [True, False])
def test_checkpoint_context_fn_as_torch(early_stop):
    ours, theirs = _both_blocks()
    x = np.random.default_rng(0).normal(size=(4, 3))
    entered, torch_entered = [], []
    x_ours = tc.tensor(x, requires_grad=True)
    x_torch = torch.tensor(x, requires_grad=True)
    y = checkpoint.checkpoint(ours, x_ours, context_fn=_counting_context_fn(entered),
                              early_stop=early_stop, debug=False)  # fmt: skip
    torch_y = torch.utils.checkpoint.checkpoint(
        theirs, x_torch, use_reentrant=False, context_fn=_counting_context_fn(torch_entered),
        early_stop=early_stop,
    )  # fmt: skip
    assert entered == torch_entered == ["forward"]
    (y * y).sum().backward()
    (torch_y * torch_y).sum().backward()
    assert entered == torch_entered == ["forward", "recompute"]
    np.testing.assert_allclose(y.array, torch_y.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(x_ours.grad.array, x_torch.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours[0].weights.grad.array, theirs[0].weight.grad.numpy().T,
                               atol=1e-12)  # fmt: skip
    with checkpoint.set_checkpoint_early_stop(False), checkpoint.set_checkpoint_debug_enabled(True):
        again = checkpoint.checkpoint(ours, tc.tensor(x, requires_grad=True))
    np.testing.assert_array_equal(again.array, y.array)


def test_checkpoint_refusals_as_torch():
    ours, theirs = _both_blocks()
    x = np.ones((2, 3))
    runs = [(checkpoint.checkpoint, ours, tc.tensor),
            (torch.utils.checkpoint.checkpoint, theirs, torch.tensor)]  # fmt: skip
    for run, block, make in runs:
        with pytest.raises(ValueError, match="context_fn` or `debug"):
            run(block, make(x, requires_grad=True), use_reentrant=True, debug=True)
    with pytest.raises(TypeError, match="early_stop"):
        checkpoint.checkpoint(ours, tc.tensor(x), early_stop="yes")
    calls = []

    def changing(a):  # a different graph when recomputed
        calls.append(1)
        return a * 2 if len(calls) == 1 else a[:1] * 2

    y = checkpoint.checkpoint(changing, tc.tensor(x, requires_grad=True))
    with pytest.raises(checkpoint.CheckpointError, match="differs from its forward"):
        y.sum().backward()
    assert issubclass(checkpoint.CheckpointError, RuntimeError)
    assert issubclass(torch.utils.checkpoint.CheckpointError, RuntimeError)


def test_checkpoint_function_and_helpers_as_torch():
    ours, theirs = _both_blocks()
    x = np.random.default_rng(1).normal(size=(2, 3))
    x_ours, x_torch = tc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y = checkpoint.CheckpointFunction.apply(ours, True, x_ours)
    torch_y = torch.utils.checkpoint.CheckpointFunction.apply(theirs, True, x_torch)
    y.sum().backward()
    torch_y.sum().backward()
    np.testing.assert_allclose(x_ours.grad.array, x_torch.grad.numpy(), atol=1e-12)
    # detach_variable: requires_grad kept, graph left, non-tensors as they are
    a = tc.tensor([1.0, 2.0], requires_grad=True) * 2
    detached = checkpoint.detach_variable((a, 3, tc.tensor([1.0])))
    theirs_detached = torch.utils.checkpoint.detach_variable(
        (torch.tensor([1.0, 2.0], requires_grad=True) * 2, 3, torch.tensor([1.0]))
    )
    assert [getattr(d, "requires_grad", None) for d in detached] == [
        getattr(d, "requires_grad", None) for d in theirs_detached
    ]
    assert detached[0].args is None and detached[1] == 3
    np.testing.assert_array_equal(detached[0].array, [2.0, 4.0])
    for module in (checkpoint, torch.utils.checkpoint):
        with pytest.raises(RuntimeError, match="Only tuple of tensors"):
            module.detach_variable([a])
    for module, make in ((checkpoint, tc.tensor), (torch.utils.checkpoint, torch.tensor)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
            module.check_backward_validity([make([1.0]), 2])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            module.check_backward_validity([make([1.0], requires_grad=True)])
    state = torch.utils.checkpoint.get_device_states(torch.ones(1))
    assert checkpoint.get_device_states(tc.tensor([1.0])) == state == ([], [])
    checkpoint.set_device_states([], [])
    assert {p.name: p.value for p in checkpoint.CheckpointPolicy} == {
        p.name: p.value for p in torch.utils.checkpoint.CheckpointPolicy
    }
    first, second = checkpoint.noop_context_fn()
    with first, second:
        pass
    first, second = checkpoint.create_selective_checkpoint_contexts(["matmul"])
    with first:  # the forward's context: a region whose saved ops the recomputation reuses
        pass
