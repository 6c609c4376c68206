"""torch.compile and torch.compiler, as their eager behaviour: tricycle compiles its kernels
ahead of time (the CPU backend's numba kernels on their first use, the CUDA backend's fused
kernels when first launched), so there is no graph to capture and ``compile`` returns the
model or function itself, ready to run. It checks its arguments as torch's does (a known
``mode``, ``mode`` and ``options`` not both, a ``backend`` name torch knows, or a callable),
so a script's mistake shows here as it would under torch. ``compile(model)``,
``@compile`` and ``@compile(mode=...)`` all work; ``disable=True`` is the same.

``tricycle.compiler`` holds torch.compiler's eager answers: ``disable`` (the function
itself), ``is_compiling`` and ``is_dynamo_compiling`` (False), ``reset`` (nothing to drop),
``allow_in_graph`` and ``assume_constant_result`` (the function itself), and
``list_backends``.
"""

from tricycle import checks

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# the backends torch.compile takes by name (torch._dynamo.list_backends(None))
BACKENDS = (
    "aot_eager aot_eager_decomp_partition aot_eager_default_partitioner aot_ts cudagraphs "
    "eager inductor openxla tvm ts"
).split()


def compile(  # noqa: A001 - torch's name
    model=None,
    *,
    fullgraph: bool = False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    name=None,
    disable: bool = False,
    recompile_limit=None,
    isolate_recompiles: bool = False,
    shapes_spec=None,
):
    """torch.compile: ``model`` itself after torch's argument checks (see the module's doc);
    without a model, a decorator that takes one."""
    if model is None:

        def decorate(model):
            if model is None:
                raise RuntimeError("compile: Model can't be None")
            return compile(
                model,
                fullgraph=fullgraph,
                dynamic=dynamic,
                backend=backend,
                mode=mode,
                options=options,
                name=name,
                disable=disable,
                recompile_limit=recompile_limit,
                isolate_recompiles=isolate_recompiles,
                shapes_spec=shapes_spec,
            )

        return decorate
    if mode is not None and options is not None:
        raise RuntimeError("compile: Either mode or options can be specified, but both can't be "
                           "specified at the same time.")  # fmt: skip
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"compile: Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(MODES)}")  # fmt: skip
    if isinstance(backend, str) and backend not in BACKENDS:
        raise RuntimeError(f"compile: Invalid backend: {backend!r}, see "
                           "tricycle.compiler.list_backends() for available backends.")  # fmt: skip
    if options is not None and not isinstance(options, dict):
        checks.fail("compile", "options", "a dict or None", options, TypeError)
    for flag, value in (("fullgraph", fullgraph), ("disable", disable)):
        checks.boolean("compile", flag, value)
    return model


def disable(fn=None, recursive: bool = True, *, reason=None):
    """torch.compiler.disable: ``fn`` itself (nothing is compiled to leave out); without
    ``fn``, a decorator."""
    checks.boolean("compiler.disable", "recursive", recursive)
    return (lambda f: f) if fn is None else fn


def is_compiling() -> bool:
    """torch.compiler.is_compiling: False: tricycle never traces a function."""
    return False


is_dynamo_compiling = is_compiling


def reset() -> None:
    """torch.compiler.reset: nothing to clear (no compiled graphs are cached)."""


def allow_in_graph(fn):
    """torch.compiler.allow_in_graph: ``fn`` itself."""
    return fn


def assume_constant_result(fn):
    """torch.compiler.assume_constant_result: ``fn`` itself."""
    return fn


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """torch.compiler.list_backends: the backend names ``compile`` takes."""
    return sorted(BACKENDS)
