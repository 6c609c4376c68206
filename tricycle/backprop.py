"""Reverse-mode differentiation: ``Node.backward``'s walk over the graph.

The graph is sorted topologically (iteratively: no recursion limit) and walked in reverse:
each node's gradient, once every path into it is summed, goes through its ``back_fns`` to its
inputs, accumulated out of place in a dict keyed by tensor identity. A leaf's gradient (and a
retained one) lands in ``.grad`` as soon as it is final, and its hooks run then; a tensor's
``register_hook`` hooks see its gradient once summed, before it is used. Unless the
graph is retained, each node's inputs are freed as it is passed, leaving a small ``Trace``
(``tricycle.traces``) for drawing. ``tricycle.graph`` holds the nodes themselves.
"""

import operator
import threading

import numpy as np

from tricycle import dispatch
from tricycle.traces import Trace


class Freed(tuple):
    """The args of an op output whose graph backward() has freed: empty, and recognisable."""


FREED = Freed()

# torch's anomaly detection (tricycle.torch_flags): [on, check NaN]; on, a NaN in a gradient a
# back_fn returns is a RuntimeError naming the op
ANOMALY = [False, True]


def freed(node) -> RuntimeError:
    """The error of a walk that meets ``node``'s graph freed by an earlier backward."""
    return RuntimeError(
        f"backward: the graph through {node.name or 'a tensor'} (shape {node.shape}) was "
        "freed by an earlier backward(); pass retain_graph=True to that call to differentiate "
        "through it again"
    )


def add_arrays(a, b):
    """a + b for the gradient sums of backward: plain xp, or a kernel registered as "add"."""
    return dispatch.choose("add", operator.add, a, b)(a, b)


_passes = threading.local()  # .callbacks: those queued by the backward pass on this thread


def queue_callback(callback) -> None:
    """Call ``callback()`` when the backward pass running on this thread has walked its whole
    graph (every gradient final), before ``backward()`` returns: torch's
    ``Variable._execution_engine.queue_callback``. Called from a hook during backward; data
    parallelism waits for its last all-reduces there (``DistributedDataParallel``)."""
    queued = getattr(_passes, "callbacks", None)
    if queued is None:
        raise RuntimeError(
            "queue_callback: no backward pass is running on this thread; call it from a "
            "gradient hook, during backward"
        )
    queued.append(callback)


def backward(root, grad, retain_graph: bool, wanted: set | None = None) -> dict:
    """Differentiate ``root`` (a node) seeded with ``grad`` (an array of its shape and dtype),
    then call the callbacks its hooks queued (``queue_callback``); see ``Node.backward``,
    which checks its arguments and calls this.

    Given ``wanted`` (the ids of some tensors: ``tricycle.autograd.grad``), the walk sets no
    ``.grad`` and runs no post-accumulate hook: it returns {id: gradient array} of the wanted
    tensors it reached, and follows only the edges that lead to them. Else it returns {}."""
    outer = getattr(_passes, "callbacks", None)  # a backward inside a hook has its own
    _passes.callbacks = queued = []
    try:
        captured = _walk(root, grad, retain_graph, wanted)
        for callback in queued:  # (one that queues another runs it too)
            callback()
        return captured
    finally:
        _passes.callbacks = outer


def _walk(root, grad, retain_graph: bool, wanted: set | None) -> dict:
    """The walk of ``backward``: every gradient, accumulated out of place."""
    grads = {id(root): grad}
    # ids of the memory handed out as .grad, so that no two tensors' gradients share it
    # (an optimiser may scale one in place); views count as their base array
    assigned = set()
    traces = None if retain_graph else {}  # id -> Trace: a small record per tensor freed
    order = topological_order(root)
    check_nan = ANOMALY[0] and ANOMALY[1]  # read once a walk, not once an edge
    captured, passes, reach = {}, None, None
    if wanted is not None:  # grad(): the tensors through which the wanted ones are reached
        passes = _towards(order, wanted)
        reach = passes | wanted
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        hooks = node._grad_hooks
        if hooks:  # Tensor.register_hook's may replace the summed gradient before it is used
            g = _hooked(node, g, hooks)
        if traces is not None:
            _trace(node, traces).grad = g
        args = node.args
        if passes is not None and (args is not FREED or id(node) in wanted):
            # grad(): the wanted gradients come back, no .grad is set
            if id(node) in wanted:
                captured[id(node)] = _owned(g, assigned)
            if id(node) not in passes:  # no wanted tensor below this one
                continue
        elif args is FREED:
            raise freed(node)
        elif args is None or node._retain_grad:
            base = g.base if g.base is not None else g
            if g is node.grad_buffer:  # written into this leaf's own memory (its bucket)
                accumulate(node, g)
            elif args is not None or id(base) in assigned:
                # a copy: a retained gradient must not alias the one that flows on
                accumulate(node, g.copy())
            else:
                assigned.add(id(base))
                accumulate(node, g)
            if hooks:  # every path into node is summed: its .grad is final
                for hook in hooks:
                    if type(hook) is not GradHook:
                        hook(node)
            if args is None:
                continue
        for arg, back_fn in zip(args, node.back_fns):
            if not arg.requires_grad or (reach is not None and id(arg) not in reach):
                continue
            try:
                g_arg = back_fn(g)
            except Exception as error:  # the traceback ends in a closure: name the op
                _raise_naming_the_op(error, node, back_fn, arg)
            if hasattr(g_arg, "back_fns"):  # a Tensor from a back_fn (old style): its array
                g_arg = g_arg.array
            if check_nan and bool((g_arg != g_arg).any()):
                _raise_nan(node, back_fn, arg)
            array = arg.array
            if g_arg.shape != array.shape:
                raise RuntimeError(
                    f"backward of {node.name}: gradient for input of shape {array.shape} "
                    f"came back with shape {g_arg.shape}"
                )
            if g_arg.dtype is not array.dtype and g_arg.dtype != array.dtype:
                if array.dtype.kind == "c":  # a real op's real gradient: it read complex wrong
                    raise _not_complex_aware(node, arg)
                with np.errstate(over="ignore"):  # a scaled loss's inf: GradScaler's to find
                    g_arg = g_arg.astype(array.dtype)
            key = id(arg)
            previous = grads.get(key)
            # out of place: never write into an array another tensor may own
            grads[key] = g_arg if previous is None else add_arrays(previous, g_arg)
        if not retain_graph:  # what drawing needs stays: names, shapes, summaries
            node.backward_trace = _trace(node, traces)
            node.backward_trace.args = tuple(_trace(arg, traces) for arg in args)
            node.args, node.back_fns = FREED, None
    return captured


def _towards(order: list, wanted: set) -> set:
    """The ids of the tensors of ``order`` (inputs first) with an input that is wanted or
    has such an input itself: those the walk of ``grad()`` passes through."""
    passes = set()
    for node in order:
        for arg in node.args or ():
            if id(arg) in wanted or id(arg) in passes:
                passes.add(id(node))
                break
    return passes


def _owned(g, assigned: set):
    """``g`` to hand out, or a copy where it is read-only (a broadcast view) or its memory
    was handed out already (``assigned``, the ids of the base arrays given)."""
    base = g.base if g.base is not None else g
    if id(base) in assigned or not _writeable(g):
        return g.copy()
    assigned.add(id(base))
    return g


def topological_order(root) -> list:
    """Tensors reachable from ``root`` that require grad, every input before its outputs.

    An iterative depth-first post-order (no recursion limit). A node is marked visited
    when it is expanded, not when it is pushed: marking on push would let a node that is
    reached both directly and through another input be emitted before that input, so the
    gradient arriving through the other path would be lost.

    An op's leaf inputs (parameters), and its inputs computed from leaves alone (a
    parameter's 16-bit cast under mixed precision, a transposed weight), are expanded after
    its other inputs, so in the reversed order they come right after their last user rather
    than after the whole graph below it: backward finalises a parameter's gradient, and runs
    its hooks, as early as it can (data parallelism overlaps its reduction with the rest of
    backward). What moves has only leaves below it, so this leaves the order of every other
    tensor, and every sum, unchanged.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        key = id(node)
        if key in visited:
            continue
        visited.add(key)
        stack.append((node, True))
        args = node.args
        if args:
            below = len(stack)  # leaves go under the other inputs: expanded last
            for arg in args:
                if arg.requires_grad and id(arg) not in visited:
                    if _of_leaves(arg):
                        stack.insert(below, (arg, False))
                    else:
                        stack.append((arg, False))
    return order


def _of_leaves(node) -> bool:
    """Whether ``node`` is a leaf or an op whose inputs that require grad are all leaves."""
    if node.args is None:
        return True
    for arg in node.args:  # (a loop, not all(): this runs for every input of every op)
        if arg.args is not None and arg.requires_grad:
            return False
    return True


class GradHook:
    """A hook of ``Tensor.register_hook``: ``fn(grad)`` (a Tensor) -> None or a new gradient.
    A tensor's ``_grad_hooks`` holds these beside its post-accumulate hooks (plain callables,
    run with the tensor once its ``.grad`` is final)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def _hooked(node, g, hooks: list):
    """``g``, the summed gradient of ``node``, through its ``GradHook``s in order."""
    for hook in hooks:
        if type(hook) is GradHook:
            returned = hook.fn(node.new(g, requires_grad=False))
            if returned is None:
                continue
            new = returned.array if hasattr(returned, "back_fns") else returned
            if getattr(new, "shape", None) != g.shape:
                raise RuntimeError(
                    f"backward: a hook (Tensor.register_hook) on {node.name or 'a tensor'} of "
                    f"shape {node.shape} returned {type(returned).__name__} of shape "
                    f"{getattr(new, 'shape', None)}; expected a gradient of shape {g.shape}"
                )
            g = new if new.dtype == g.dtype else new.astype(g.dtype)
    return g


def _trace(node, traces: dict) -> Trace:
    """``node``'s trace in this backward pass (made at its first use)."""
    trace = traces.get(id(node))
    if trace is None:
        trace = traces[id(node)] = Trace(node)
    return trace


def _not_complex_aware(node, arg) -> NotImplementedError:
    """A complex input whose op sent back a real gradient: the op is not complex-aware (its
    output was real, so ``complex_tensor.adopt`` could not refuse it in the forward)."""
    return NotImplementedError(
        f"backward of {node.name or 'an op'} (output {node.dtype} of shape {node.shape}): its "
        f"input is complex ({arg.dtype} of shape {arg.shape}) but the op is not complex-aware "
        "(see tricycle.complex_tensor for the ops that are)"
    )


def _raise_nan(node, back_fn, arg):
    """Anomaly detection's error: the backward of ``node`` gave ``arg`` a NaN gradient."""
    i = next(
        j for j, (a, f) in enumerate(zip(node.args, node.back_fns)) if a is arg and f is back_fn
    )
    raise RuntimeError(
        f"Function '{node.name or 'an op'}' (backward of an output of shape {node.shape}) "
        f"returned nan values in its {i}th output (the gradient of input {i}, shape "
        f"{arg.shape}): anomaly detection is on"
    )


def _raise_naming_the_op(error: Exception, node, back_fn, arg):
    """Raise ``error`` (raised by ``back_fn``, for ``arg``) again as the same kind of error,
    naming the op, the input and the back_fn convention; a type that takes other arguments is
    raised as it was."""
    # which input: found here rather than counted in backward's loop, which runs once per edge
    pairs = enumerate(zip(node.args, node.back_fns))
    i = next(j for j, (a, f) in pairs if a is arg and f is back_fn)
    message = (
        f"backward of {node.name or 'an op'} (output shape {node.shape}): the back_fn of "
        f"input {i} (shape {arg.shape}) raised {type(error).__name__}: {error}. A back_fn "
        "takes the output's gradient as an array (numpy or cupy, not a Tensor) and returns "
        "that input's gradient in its shape"
    )
    try:
        named = type(error)(message)
    except Exception:
        named = None
    if named is None:
        raise error
    raise named from error


def accumulate(node, g) -> None:
    """Add ``g`` to ``node.grad`` (out of place, or into the memory given to it)."""
    buffer = node.grad_buffer
    if buffer is not None:  # the gradient lives in memory given to it (data parallelism)
        if node.grad is None:
            if g is not buffer:  # (a back_fn may have written it there: the mixed cast's)
                buffer[...] = g
        elif node.grad.array is buffer:
            buffer += g
        else:
            buffer[...] = add_arrays(node.grad.array, g)
        node.grad = node.new(buffer, requires_grad=False)
        return
    if node.grad is None:
        if not _writeable(g):  # e.g. a broadcast view from sum's backward: give an owned copy
            g = g.copy()
        node.grad = node.new(g, requires_grad=False)
    else:
        node.grad = node.new(add_arrays(node.grad.array, g), requires_grad=False)


def _writeable(array) -> bool:
    """False for read-only numpy views and for views that repeat memory (stride 0)."""
    if isinstance(array, np.ndarray):
        return array.flags.writeable
    return array.size <= 1 or 0 not in array.strides


class HookHandle:
    """What a tensor's ``register_hook`` and ``register_post_accumulate_grad_hook`` return:
    ``remove()`` unregisters the hook (as does the end of a ``with`` block)."""

    def __init__(self, tensor, hook):
        self.tensor, self.hook = tensor, hook

    def remove(self) -> None:
        hooks = self.tensor._grad_hooks
        if hooks is not None and self.hook in hooks:
            hooks.remove(self.hook)

    def __enter__(self) -> "HookHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
