"""torch.utils.checkpoint on tricycle's engine: activation checkpointing, memory for compute.

A graph keeps every intermediate array of a forward until backward, in its back_fns'
closures. ``checkpoint(function, *args)`` keeps none of ``function``'s: its output is one
node (a ``tricycle.autograd.Function``) whose inputs are ``function``'s input Tensors and the
tensors outside it that it reads (its parameters), and whose backward runs ``function`` once
more, from the same random state, and differentiates that fresh graph. One extra forward per
checkpointed segment buys the memory of all its activations but one segment's at a time.

Which tensors outside ``function`` it reads, the engine knows only from a graph. So the
forward runs ``function`` recording, on detached copies of its inputs, and splits the graph
where it meets the rest (``_recorded``): the nodes computed from the inputs, and the
*frontier*, the other nodes they read (parameters; a tensor the function closes over, made
before; a value it computed from parameters alone, kept rather than recomputed). The output
node takes the frontier as inputs and the recorded graph is dropped. Backward records the
graph again, cuts it at its frontier (each frontier node, matched by position to the
forward's, becomes a leaf of the same array) and asks ``tricycle.autograd.grad`` for the
gradients of the inputs and of those leaves: the frontier's own graphs (a parameter's
gradient hooks, a closed-over tensor's history) are walked once, by the outer backward.

Random state (``preserve_rng_state``): the recomputation draws what the forward drew, from
tricycle's generator (``tricycle.random``: ``F.dropout``'s seeds, ``rand``) and from every
numpy Generator held by a layer the function reaches (a ``Dropout``'s ``rng``, the seeds of
an attention's dropout), or given to it as an argument; each generator is put back after.
Layers are reached through the function itself (a Layer), a bound method, a
``functools.partial``, a closure, default values and the globals its code names.

As torch's, ``use_reentrant=False`` (the default) is the variant above; ``use_reentrant=True``
runs the forward without recording, gives its node the input Tensors alone, and in backward
runs a nested ``backward()`` of the recomputed graph, which accumulates the parameters'
``.grad`` as it goes: nothing reaches the parameters when no input requires grad (a warning
says so), it suits ``Tensor.backward`` but not ``tricycle.autograd.grad``, and it takes no
keyword arguments. Either way ``function``'s side effects (a batch norm's running
statistics) happen twice, and ``function`` must compute the same graph both times: the
default ``determinism_check`` compares the shapes and dtypes of the outputs and of the
frontier, and the parameters read. A precision policy's ``cast_parameters`` swaps the
parameters for the length of the forward only, so a checkpoint inside it fails that check.
"""

import contextlib
import functools
import warnings

from tricycle import checks, random
from tricycle.autograd import Function, backward, enable_grad, grad, is_grad_enabled
from tricycle.backprop import topological_order
from tricycle.graph import Node
from tricycle.module import Layer
from tricycle.utils.checkpoint_selective import (  # selective activation checkpointing
    SelectiveCheckpointContext,
    create_selective_checkpoint_contexts,
)
from tricycle.utils.checkpoint_tools import (  # torch.utils.checkpoint's other names, here
    CheckpointError,
    CheckpointFunction,
    CheckpointPolicy,
    check_backward_validity,
    detach_variable,
    generators,
    get_device_states,
    in_contexts,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
    set_device_states,
)

__all__ = ["CheckpointError", "CheckpointFunction", "CheckpointPolicy",
           "SelectiveCheckpointContext", "check_backward_validity", "checkpoint",
           "checkpoint_sequential", "create_selective_checkpoint_contexts", "detach_variable",
           "get_device_states", "noop_context_fn", "set_checkpoint_debug_enabled",
           "set_checkpoint_early_stop", "set_device_states"]  # fmt: skip


def checkpoint(
    function,
    *args,
    use_reentrant: bool = False,
    preserve_rng_state: bool = True,
    determinism_check: str = "default",
    context_fn=noop_context_fn,
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """torch.utils.checkpoint.checkpoint: ``function(*args, **kwargs)``, whose activations
    are not kept for backward but recomputed there.

    Args:
        function: a callable (a Layer, a block, a lambda) of Tensors and other values,
            returning a Tensor or a tuple holding Tensors.
        args, kwargs: its arguments; the Tensors among them (top level) are its inputs.
        use_reentrant: torch's older variant (see the module's docstring); False by default.
        preserve_rng_state: recompute with the random state of the forward (the same dropout
            masks); False draws afresh.
        determinism_check: "default" checks that the recomputation's outputs and the tensors
            it reads have the forward's shapes and dtypes; "none" skips it.
        context_fn: returns two context managers, the forward's and the recomputation's
            (use_reentrant=False only): ``functools.partial(
            create_selective_checkpoint_contexts, policy)`` keeps the outputs of the ops
            ``policy`` saves instead of recomputing them
            (``tricycle.utils.checkpoint_selective``).
        debug, early_stop: torch's, checked, changing no result
            (``tricycle.utils.checkpoint_tools``).

    Under ``no_grad`` nothing is differentiated, so ``function`` simply runs.
    """
    checks.function("checkpoint", "function", function)
    checks.boolean("checkpoint", "use_reentrant", use_reentrant)
    checks.boolean("checkpoint", "preserve_rng_state", preserve_rng_state)
    checks.one_of(("default", "none"))("checkpoint", "determinism_check", determinism_check)
    checks.function("checkpoint", "context_fn", context_fn)
    checks.boolean("checkpoint", "debug", debug)
    checks.boolean("checkpoint", "early_stop", early_stop)
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("checkpoint: passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False (as torch's)")  # fmt: skip
    if use_reentrant and kwargs:
        raise ValueError(
            f"checkpoint: keyword arguments {sorted(kwargs)} with use_reentrant=True, which "
            "passes positional arguments only (as torch's); use use_reentrant=False"
        )
    if not is_grad_enabled():
        return function(*args, **kwargs)
    checked = determinism_check == "default"
    if context_fn is not noop_context_fn:
        function = functools.partial(in_contexts, list(context_fn()), function)
    return _Segment(function, args, kwargs, preserve_rng_state, use_reentrant, checked).run()


def checkpoint_sequential(
    functions,
    segments: int,
    input,  # noqa: A002 - torch's name
    use_reentrant: bool = False,
    preserve_rng_state: bool = True,
):
    """torch.utils.checkpoint.checkpoint_sequential: ``functions`` (a ``Sequential`` or a
    list of callables) applied in turn to ``input``, in ``segments`` runs of
    len(functions) // segments of them, each checkpointed but the last (which takes the
    rest), whose output backward needs at once."""
    owner = "checkpoint_sequential"
    if isinstance(functions, Layer) and hasattr(functions, "__iter__"):
        functions = list(functions)  # a Sequential: its layers and callables
    elif isinstance(functions, list | tuple):
        functions = list(functions)
    else:
        expected = "a Sequential or a list of callables"
        checks.fail(owner, "functions", expected, type(functions).__name__, TypeError)
    for i, f in enumerate(functions):
        checks.function(owner, f"functions[{i}]", f)
    checks.positive_int(owner, "segments", segments)
    if segments > len(functions):
        raise ValueError(
            f"{owner}: {segments} segments of {len(functions)} function(s); expected at most "
            "one segment per function"
        )
    size, end, x = len(functions) // segments, 0, input
    for start in range(0, size * (segments - 1), size):
        end = start + size
        run = functools.partial(_in_turn, tuple(functions[start:end]))
        x = checkpoint(run, x, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state)
    return _in_turn(functions[end:], x)


def _in_turn(functions, x):
    """``x`` through each of ``functions``, one after another."""
    for f in functions:
        x = f(x)
    return x


class _Recompute(Function):
    """The node of one checkpointed call: its forward hands over the outputs of the
    ``_Segment`` (first input), its backward asks the segment for the gradients."""

    @staticmethod
    def forward(ctx, segment, *tensors):
        ctx.segment = segment
        return segment.forward()

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.segment.backward(grads))


class _Segment:
    """One checkpointed call of ``function``: its arguments, the random state before it,
    and, after the forward, the signature of what it made and read."""

    def __init__(self, function, args: tuple, kwargs: dict, preserve: bool, reentrant: bool,
                 checked: bool):  # fmt: skip
        self.function, self.args, self.kwargs = function, args, kwargs
        self.reentrant, self.checked = reentrant, checked
        values = (*args, *kwargs.values())
        self.places = [i for i, value in enumerate(values) if isinstance(value, Node)]
        self.inputs = [values[i] for i in self.places]  # the input Tensors
        self.random = _RandomState((function, *values)) if preserve else None
        self.signature, self.output = None, None  # (set by the forward)

    # ---------------------------------------------------------------- forward
    def run(self):
        """The checkpointed output: ``_Recompute``'s node(s) over the inputs (and frontier)."""
        if self.reentrant:
            if not any(x.requires_grad for x in self.inputs):
                warnings.warn(
                    "checkpoint: none of the inputs requires grad (use_reentrant=True): the "
                    "output gets no gradient, nor do the parameters of the function",
                    stacklevel=3,
                )
            return _Recompute.apply(self, *self.inputs)
        detached = self.detached()
        output = self.call(detached)  # recorded: its graph shows the frontier
        outputs = _outputs(output)
        _, frontier = _recorded(outputs, detached)
        self.signature = _signature(outputs, frontier)
        self.output = _detached_output(output)  # the recorded graph is dropped here
        del output, outputs
        try:
            return _Recompute.apply(self, *self.inputs, *frontier)
        finally:
            self.output = None

    def forward(self):
        """What ``_Recompute.forward`` returns (under no_grad): the reentrant variant runs
        ``function`` here, the other hands over the recorded run's outputs."""
        if not self.reentrant:
            return self.output
        output = self.call(self.inputs)
        self.signature = _signature(_outputs(output), ())
        return output

    def call(self, inputs: list):
        """``function`` of the arguments, with ``inputs`` in place of the input Tensors."""
        values = [*self.args, *self.kwargs.values()]
        for place, x in zip(self.places, inputs):
            values[place] = x
        n = len(self.args)
        return self.function(*values[:n], **dict(zip(self.kwargs, values[n:])))

    def detached(self) -> list:
        """The input Tensors as leaves of the same arrays, requiring grad as they do."""
        return [
            x.new(x.array, requires_grad=x.requires_grad, is_batched=x.is_batched, name=x.name)
            for x in self.inputs
        ]

    # ---------------------------------------------------------------- backward
    def backward(self, grads: tuple) -> list:
        """One gradient (or None) per input Tensor, then per frontier node, from a
        recomputation of ``function`` whose outputs receive ``grads``."""
        detached = self.detached()
        replayed = self.random.replayed() if self.random else contextlib.nullcontext()
        with replayed, enable_grad():
            outputs = _outputs(self.call(detached))
        if self.reentrant:
            return self.nested_backward(outputs, grads, detached)
        inner, frontier = _recorded(outputs, detached)
        self.compare(_signature(outputs, frontier))
        leaf = {id(node): node.new(node.array, requires_grad=True) for node in frontier}
        for node in inner:  # the cut: the fresh graph ends at the frontier's stand-ins
            node.args = tuple(leaf.get(id(arg), arg) for arg in node.args)
        roots, seeds = _roots([leaf.get(id(o), o) for o in outputs], grads)
        wanted = [x for x in detached if x.requires_grad] + [leaf[id(n)] for n in frontier]
        if not roots or not wanted:
            return [None] * (len(detached) + len(frontier))
        found = iter(grad(roots, wanted, seeds, allow_unused=True))
        return [next(found) if x.requires_grad else None for x in detached] + [
            next(found) for _ in frontier
        ]

    def nested_backward(self, outputs: tuple, grads: tuple, detached: list) -> list:
        """use_reentrant=True: a backward of the recomputed graph, which sets the .grad of the
        parameters it reaches; the inputs' gradients are those of their detached leaves."""
        self.compare(_signature(outputs, ()))
        roots, seeds = _roots(outputs, grads)
        if not roots:
            raise RuntimeError(
                "checkpoint: none of the recomputed outputs requires grad: the function's "
                "output does not depend on its inputs or parameters (no checkpoint needed)"
            )
        backward(roots, seeds)
        return [x.grad if x.requires_grad else None for x in detached]

    def compare(self, signature: tuple) -> None:
        """A RuntimeError unless the recomputation made what the forward made."""
        (outputs, frontier), (was_outputs, was_frontier) = signature, self.signature
        if (len(outputs), len(frontier)) == (len(was_outputs), len(was_frontier)):
            if not self.checked or signature == self.signature:
                return
        name = getattr(self.function, "__name__", type(self.function).__name__)
        raise CheckpointError(
            f"checkpoint: the recomputation of {name} in backward differs from its forward: "
            f"outputs {outputs} and tensors read {frontier}, where the forward made "
            f"{was_outputs} and read {was_frontier}. A checkpointed function must compute "
            "the same graph both times (the same control flow and parameters: a precision "
            "policy's cast_parameters is over by backward); determinism_check='none' skips "
            "the shapes and dtypes, not the counts"
        )


def _outputs(output) -> tuple:
    """The function's output as a tuple (a Tensor, or a tuple holding Tensors), or a
    TypeError."""
    if isinstance(output, Node):
        return (output,)
    if isinstance(output, tuple) and any(isinstance(o, Node) for o in output):
        return output
    raise TypeError(
        f"checkpoint: the function returned {type(output).__name__}; expected a Tensor or a "
        "tuple holding Tensors (other values may sit beside them)"
    )


def _detached_output(output):
    """The output with its Tensors detached (their arrays shared, their graph left)."""
    if isinstance(output, Node):
        return output.detach()
    return tuple(o.detach() if isinstance(o, Node) else o for o in output)


def _recorded(outputs: tuple, inputs: list) -> tuple[list, list]:
    """The graph that a run of the function on ``inputs`` recorded, split where it meets
    the rest: (the nodes computed from the inputs, inputs before outputs; the frontier, the
    other nodes they read, and outputs not computed from the inputs, in order of first use).
    """
    order, seen = [], set()
    for output in outputs:
        if isinstance(output, Node) and output.requires_grad:
            for node in topological_order(output):
                if id(node) not in seen:
                    seen.add(id(node))
                    order.append(node)
    inside = {id(x) for x in inputs}  # grows: a node computed from an input is inside
    inner = []
    for node in order:
        if node.args and any(id(arg) in inside for arg in node.args):
            inside.add(id(node))
            inner.append(node)
    frontier, placed = [], set()
    for read in [arg for node in inner for arg in node.args] + list(outputs):
        if isinstance(read, Node) and read.requires_grad and id(read) not in inside:
            if id(read) not in placed:
                placed.add(id(read))
                frontier.append(read)
    return inner, frontier


def _signature(outputs: tuple, frontier) -> tuple:
    """What a run made and read: the outputs' (shape, dtype) (a non-Tensor's type name), and
    the frontier's (shape, dtype, the leaf's id: a parameter is the same tensor)."""
    made = tuple(
        (o.shape, str(o.dtype)) if isinstance(o, Node) else type(o).__name__ for o in outputs
    )
    read = tuple((n.shape, str(n.dtype), id(n) if n.args is None else None) for n in frontier)
    return made, read


def _roots(outputs, grads: tuple) -> tuple[list, list]:
    """The outputs that require grad and received a gradient, and those gradients."""
    pairs = [
        (o, g) for o, g in zip(outputs, grads) if isinstance(o, Node) and o.requires_grad
        and g is not None
    ]  # fmt: skip
    return [o for o, _ in pairs], [g for _, g in pairs]


class _RandomState:
    """The states, before a run, of the generators it may draw from: tricycle's and those
    that ``roots`` (the function and its arguments) hold (``_generators``)."""

    def __init__(self, roots: tuple):
        self.generators = generators(roots)
        self.states = [g.bit_generator.state for g in [random.generator(), *self.generators]]

    @contextlib.contextmanager
    def replayed(self):
        """Within the block the generators are as they were before the run; after it, as
        they were before the block."""
        generators = [random.generator(), *self.generators]  # tricycle's as it is now
        now = [g.bit_generator.state for g in generators]
        for g, state in zip(generators, self.states):
            g.bit_generator.state = state
        try:
            yield
        finally:
            for g, state in zip(generators, now):
                g.bit_generator.state = state
