"""torch.jit as under PYTORCH_JIT=0 (``tricycle.jit``), ``tricycle.types``,
``tricycle.utils.hooks`` and ``tricycle.nn.parallel``: each checked against torch's behaviour
(a scripted or traced model gives the model's numbers; torch's eager branches; handles remove
their hooks; the wrappers' outputs equal the module's)."""

import collections
import typing
import warnings

import numpy as np
import pytest

import tricycle as tc
import tricycle.jit as jit
import tricycle.nn as nn
import tricycle.types as types
from tricycle.module_hooks import RemovableHandle as LayerHandle
from tricycle.nn.parallel import DataParallel, data_parallel
from tricycle.tensor import Tensor
from tricycle.utils import hooks

pytestmark = pytest.mark.filterwarnings("ignore:`jit.:DeprecationWarning")


def model_and_input():
    tc.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    return model, Tensor(np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32))


# ---------------------------------------------------------------------- jit
def test_script_and_trace_give_the_model_and_its_numbers_as_torchs():
    torch = pytest.importorskip("torch")
    model, x = model_and_input()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in nn.to_torch(model).items()})
    scripted, traced = jit.script(model), jit.trace(model, x)
    assert scripted is model and traced is model
    expected = theirs(torch.from_numpy(x.numpy())).detach().numpy()
    np.testing.assert_allclose(scripted(x).numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(traced(x * 2).numpy(), model(x * 2).numpy())
    assert jit.trace_module(model, {"forward": (x,)}) is model
    assert jit.trace(lambda a, b: a + b, example_kwarg_inputs={"a": x, "b": x}) is not None


def test_trace_runs_its_example_and_raises_its_error():
    model, _ = model_and_input()
    with pytest.raises(ValueError):
        jit.trace(model, Tensor(np.zeros((3, 5), np.float32)))  # 5 features, not 4
    with pytest.raises(ValueError, match="example_inputs"):
        jit.trace(model)
    with pytest.raises(AttributeError, match="nn.Module"):
        jit.trace_module(lambda x: x, {"forward": 1})


def test_the_decorators_leave_functions_and_the_queries_say_eager():
    def f(x):
        return x + 1

    for decorator in (jit.ignore, jit.ignore(drop=True), jit.unused, jit.export,
                      jit.script_method, jit.script_if_tracing, jit.interface):  # fmt: skip
        assert decorator(f) is f
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.annotate(list[int], []) == [] and jit.Attribute(3, int) == 3
    assert jit.isinstance([1], list[int]) and not jit.isinstance((1,), list[int])
    assert jit.freeze(f) is f and jit.optimize_for_inference(f) is f
    assert issubclass(jit.ScriptModule, nn.Module) and jit.Final is typing.Final


def test_fork_and_wait_give_the_result_or_its_error():
    future = jit.fork(lambda a, b: a * b, 3, b=4)
    assert future.done() and jit.wait(future) == 12 and future.value() == 12
    assert future.then(lambda done: done.wait() + 1).wait() == 13
    failed = jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        jit.wait(failed)
    with pytest.raises(TypeError, match="wait: future"):
        jit.wait(12)


def test_the_entry_points_warn_as_torchs():
    model, x = model_and_input()
    calls = [lambda: jit.script(model), lambda: jit.trace(model, x), lambda: jit.fork(len, [])]
    for call in [*calls, lambda: jit.trace_module(model, {"forward": x})]:
        with pytest.warns(DeprecationWarning, match="deprecated"):
            call()


def test_save_and_load_are_refused_naming_tricycle_save():
    model, _ = model_and_input()
    with pytest.raises(jit.Error, match=r"tricycle\.save"):
        jit.save(model, "model.pt")
    with pytest.raises(RuntimeError, match=r"tricycle\.load"):
        jit.load("model.pt")


def test_a_jit_branch_takes_torchs_eager_path():
    torch = pytest.importorskip("torch")
    for lib in (torch, tc):
        assert not lib.jit.is_scripting() and not lib.jit.is_tracing()


# ---------------------------------------------------------------------- types
def test_types_are_torchs_aliases_on_tricycles_types():
    torch = pytest.importorskip("torch")
    assert types.Number == torch.types.Number == int | float | bool
    assert types._Number == torch.types._Number
    assert types._int is int and types._float is float and types._bool is bool
    assert types.Tensor is Tensor and types.Size is tc.Size
    assert isinstance(tc.zeros(2).dtype, types._dtype)
    assert isinstance(tc.device("cpu"), types._device)

    def typed(x: types.Number, device: types.Device = None) -> types._TensorOrTensors:
        return tc.full((2,), x)

    assert typing.get_type_hints(typed)["x"] == int | float | bool
    np.testing.assert_array_equal(typed(2.5).numpy(), [2.5, 2.5])


# ---------------------------------------------------------------------- utils.hooks
def story(Handle, kind) -> tuple:
    """Two hooks in a registry of the user's, one removed by a ``with`` block, one by
    ``remove()`` (twice); what the registries hold."""
    registry, extra = kind(), kind()
    first = Handle(registry, extra_dict=extra)
    registry[first.id], extra[first.id] = print, "extra"
    second = Handle(registry)
    registry[second.id] = len
    with second:
        pass
    after_with = list(registry.values())
    first.remove()
    first.remove()
    return after_with, dict(registry), dict(extra), second.id > first.id


@pytest.mark.parametrize("kind", [dict, collections.OrderedDict])
def test_removable_handle_removes_its_hooks_as_torchs(kind):
    torch = pytest.importorskip("torch")
    theirs = story(torch.utils.hooks.RemovableHandle, collections.OrderedDict)
    assert story(hooks.RemovableHandle, kind) == theirs == ([print], {}, {}, True)
    assert isinstance(hooks.RemovableHandle({}), LayerHandle)


def test_a_layers_handle_is_tricycles_one_handle_type():
    model, x = model_and_input()
    seen = []
    handle = model.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    assert isinstance(handle, LayerHandle)
    model(x)
    handle.remove()
    model(x)
    assert seen == [(3, 2)]


def test_unserializable_hook_marks_and_warn_if_has_hooks_warns():
    @hooks.unserializable_hook
    def quiet(grad):
        return grad

    def loud(grad):
        return grad

    assert quiet.__torch_unserializable__ is True

    class Holder:
        _backward_hooks = {0: quiet}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.warn_if_has_hooks(Holder())
    Holder._backward_hooks = {0: quiet, 1: loud}
    with pytest.warns(UserWarning, match="will not be serialized"):
        hooks.warn_if_has_hooks(Holder())


# ---------------------------------------------------------------------- nn.parallel
def test_nn_parallel_wrappers_give_the_modules_numbers():
    model, x = model_and_input()
    expected = model(x).numpy()
    np.testing.assert_array_equal(DataParallel(model)(x).numpy(), expected)
    np.testing.assert_array_equal(data_parallel(model, x).numpy(), expected)
    np.testing.assert_array_equal(data_parallel(model, (x,), device_ids=[0]).numpy(), expected)
    assert DataParallel is nn.DataParallel
    from tricycle.nn.parallel import DistributedDataParallel
    from tricycle.parallel import DistributedDataParallel as ours

    assert DistributedDataParallel is ours
    with pytest.raises(TypeError, match="data_parallel: module"):
        data_parallel(lambda v: v, x)
    with pytest.raises(AttributeError, match="nope"):
        nn.parallel.nope  # noqa: B018
