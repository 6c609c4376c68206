"""``torch.jit`` as torch runs it under ``PYTORCH_JIT=0``, its documented eager mode: a script
or trace is the Python it was given, run as Python.

tricycle has no TorchScript (no compiler of Python into a graph of its own ops, no archive
format), so a program that scripts or traces a model for speed runs the model as it is:
``script(model)`` and ``script(fn)`` return their argument; ``trace(fn, example_inputs)`` and
``trace_module(module, {"forward": inputs})`` run the examples once (so that a model that
cannot run on them fails there, as a trace would) and return the function or module;
``ignore``, ``unused``, ``export``, ``script_method``, ``script_if_tracing``, ``interface``
leave what they decorate as it is; ``is_scripting()`` and ``is_tracing()`` are False, so code
that branches on them takes its eager branch; ``annotate`` and ``Attribute`` give the value;
``fork`` runs the call at once and ``wait`` gives its result. ``freeze`` and
``optimize_for_inference`` return the module. ``ScriptModule`` is ``nn.Module`` and
``ScriptFunction`` any callable. ``script``, ``trace``, ``trace_module`` and ``fork`` warn
that they are deprecated, as torch 2.13's do.

What needs TorchScript itself is refused with a clear error: ``save`` and ``load`` (save the
weights with ``tricycle.save(model.state_dict(), f)``, or the model with
``tricycle.save(model, f)``, and load them with ``tricycle.load``)."""

import builtins
import collections.abc
import typing
import warnings

from tricycle import checks
from tricycle.futures import Future  # torch.jit.Future: torch.futures' one class
from tricycle.module import Layer

Final = typing.Final  # torch.jit.Final: a constant attribute's annotation
ScriptModule = Layer  # a scripted module is the module (torch.nn.Module under PYTORCH_JIT=0)
RecursiveScriptModule = TracedModule = TopLevelTracedModule = Layer
ScriptFunction = collections.abc.Callable


class Error(RuntimeError):
    """torch.jit.Error: what TorchScript raises; here what this module refuses with."""


def _deprecated(name: str) -> None:
    """torch 2.13's warning on its TorchScript entry points, at the user's line."""
    message = f"`jit.{name}` is deprecated, as torch's: please switch to `tricycle.compile`"
    warnings.warn(message, DeprecationWarning, stacklevel=3)


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """torch.jit.script under PYTORCH_JIT=0: ``obj`` (a module, function or class) itself."""
    _deprecated("script")
    return obj


def _run(owner: str, fn, inputs, kwarg_inputs=None) -> None:
    """Call ``fn`` on example inputs (a tuple of arguments, or one argument), as a trace runs
    them; its error propagates, as a trace's does."""
    if kwarg_inputs is not None:
        if not builtins.isinstance(kwarg_inputs, dict):
            checks.fail(owner, "example_kwarg_inputs", "a dict", kwarg_inputs, TypeError)
        args, kwargs = (), kwarg_inputs
    else:
        args, kwargs = (inputs if builtins.isinstance(inputs, tuple) else (inputs,)), {}
    fn(*args, **kwargs)


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True):  # fmt: skip
    """torch.jit.trace, eagerly: ``func`` (a function or module) run once on the example
    inputs, then returned itself (it runs as Python, each call on its own inputs)."""
    _deprecated("trace")
    checks.function("trace", "func", func)
    if example_inputs is None and example_kwarg_inputs is None:
        raise ValueError("trace: example_inputs or example_kwarg_inputs must be given")
    _run("trace", func, example_inputs, example_kwarg_inputs)
    return func


def trace_module(mod, inputs, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True):  # fmt: skip
    """torch.jit.trace_module, eagerly: each method named in ``inputs`` (a dict: method name ->
    example inputs) run once on its inputs; the module itself is returned."""
    _deprecated("trace_module")
    if not builtins.isinstance(mod, Layer):
        raise AttributeError("trace_module: expected torch.nn.Module as the first argument")
    if not builtins.isinstance(inputs, dict):
        raise AttributeError("trace_module: expected a dictionary of (method_name, input) pairs")
    for name, example in inputs.items():
        method = getattr(mod, name)
        kwargs = example if example_inputs_is_kwarg else None
        _run(f"trace_module({name!r})", method, example, kwargs)
    return mod


def ignore(drop=False, **kwargs):
    """torch.jit.ignore: ``@ignore`` or ``@ignore(drop=True)``; the function is left as it is."""
    if callable(drop):  # used bare: @ignore
        return drop
    return lambda fn: fn


def _unchanged(fn):
    """A decorator of TorchScript's that changes nothing when run as Python."""
    return fn


unused = export = script_method = script_if_tracing = interface = _unchanged


def is_scripting() -> bool:
    """torch.jit.is_scripting: False (nothing runs as TorchScript)."""
    return False


def is_tracing() -> bool:
    """torch.jit.is_tracing: False (a trace runs as Python)."""
    return False


def annotate(the_type, the_value):
    """torch.jit.annotate: ``the_value`` (the type is TorchScript's alone)."""
    return the_value


def Attribute(value, type):  # noqa: N802, A002 - torch's names
    """torch.jit.Attribute: ``value`` (the type is TorchScript's alone)."""
    return value


def isinstance(obj, target_type) -> bool:  # noqa: A001 - torch's name
    """torch.jit.isinstance: Python's, for plain classes; for a generic alias
    (``List[int]``), whether ``obj`` is an instance of its origin."""
    origin = typing.get_origin(target_type)
    return builtins.isinstance(obj, origin if origin is not None else target_type)


def fork(func, *args, **kwargs) -> Future:
    """torch.jit.fork: ``func(*args, **kwargs)`` run at once (no TorchScript threads)."""
    _deprecated("fork")
    checks.function("fork", "func", func)
    future = Future()
    try:
        result = func(*args, **kwargs)
    except Exception as error:  # raised by wait(), as torch raises a task's error there
        future.set_exception(error)
    else:
        future.set_result(result)
    return future


def wait(future: Future):
    """torch.jit.wait: the forked call's result."""
    if not builtins.isinstance(future, Future):
        checks.fail("wait", "future", "a Future from fork", future, TypeError)
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """torch.jit.freeze: the module itself (there is no TorchScript graph to fold)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """torch.jit.optimize_for_inference: the module itself."""
    return mod


def _no_torchscript(name: str, instead: str):
    """torch.jit's ``name``, which needs TorchScript: refused, saying what to do instead."""

    def refused(*args, **kwargs):
        raise Error(f"jit.{name}: tricycle has no TorchScript archives; {instead}")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"torch.jit.{name}: refused (no TorchScript); {instead}."
    return refused


save = _no_torchscript("save", "save the model's weights with tricycle.save(model.state_dict(), "
                       "f), or the model with tricycle.save(model, f)")  # fmt: skip
load = _no_torchscript("load", "load what tricycle.save wrote with tricycle.load(f)")
