"""The backward pass that records a graph (``create_graph=True``): double backward.

The ordinary walk (``tricycle.backprop``) maps arrays to arrays through each op's back_fns
and records nothing. This one walks the same graph but carries every gradient as a Tensor
and computes each input's gradient with tricycle's differentiable ops, so the gradients
themselves can be differentiated again (a gradient penalty, a Hessian-vector product, MAML's
inner step).

An op's back_fns stay as they are. For each back_fn the walk meets it looks up a rule
(``tricycle.second_order_rules``), keyed by the back_fn's code object (each lambda of an op
has its own, the same for every call) or, for a callable object, its class: the rule reads
what the back_fn closed over (the op's inputs, its constants) and returns the input's
gradient as a Tensor function of the output's gradient, the node's inputs and the node
itself (which holds the output: ``exp``'s gradient is ``g * node``). A back_fn with no
rule is a NotImplementedError naming the op, never a silently detached gradient.

A back_fn that is linear in the gradient with coefficients that need no gradient (a
reshape, a sum, an index, a constant mask) is recorded as one node by the rules' ``linear``:
its array function forward and, as its own back_fn, the adjoint, which is linear again:
every order of derivative goes through it.

The ordinary walk never comes here: ``Tensor.backward`` and ``tricycle.autograd`` call this
one only for ``create_graph=True``.
"""

from tricycle import backprop, second_order_fused
from tricycle.backprop import FREED, GradHook, freed
from tricycle.second_order_rules import Seed, differentiable


def tensor_backward(tensor, given, gradient, retain_graph: bool) -> None:
    """``Tensor.backward(gradient=given, create_graph=True)``, its seed checked as the array
    ``gradient``: ``given`` itself when it is a Tensor of that array (it may need gradients)."""
    keep = hasattr(given, "back_fns") and given.array is gradient
    seed = given if keep else tensor.new(gradient, requires_grad=False)
    backward(tensor, seed, retain_graph)


def root(outputs: tuple, seeds: tuple, given: tuple) -> tuple:
    """The node a walk of ``tricycle.autograd`` starts from and its gradient, as Tensors: the
    one output and its seed, or a node whose ``Seed`` back_fns send each output its own. A
    seed given as a Tensor (``given``) is kept as it is: it may need gradients itself."""
    from tricycle.graph import _grad_mode

    first = outputs[0]
    tensors = tuple(
        g if hasattr(g, "back_fns") and g.array is s else y.new(s, requires_grad=False)
        for y, s, g in zip(outputs, seeds, given)
    )
    if len(outputs) == 1:
        return first, tensors[0]
    previous, _grad_mode.enabled = _grad_mode.enabled, True  # joins them in any grad mode
    try:
        zero = first.xp.zeros((), first.dtype)
        joined = first.new(zero, args=outputs, back_fns=tuple(map(Seed, tensors)), name="outputs")
    finally:
        _grad_mode.enabled = previous
    return joined, first.new(first.xp.ones((), first.dtype), requires_grad=False)


def backward(root, grad, retain_graph: bool, wanted: set | None = None) -> dict:
    """``backprop.backward`` with Tensor gradients recorded in the graph: ``grad`` is a
    Tensor of ``root``'s shape. Leaves (and retained tensors) get a ``.grad`` Tensor that
    requires grad where it depends on tensors that do; given ``wanted`` (ids), the walk sets
    no ``.grad`` and returns {id: gradient Tensor} of the wanted tensors it reached."""
    from tricycle.graph import _grad_mode

    previous, _grad_mode.enabled = _grad_mode.enabled, True  # the rules record the graph
    outer = getattr(backprop._passes, "callbacks", None)
    backprop._passes.callbacks = queued = []
    try:
        captured = _walk(root, grad, retain_graph, wanted)
        for callback in queued:
            callback()
        return captured
    finally:
        backprop._passes.callbacks = outer
        _grad_mode.enabled = previous
        second_order_fused.forget()  # the memo of the last rebuilt op: its graph freed


def _walk(root, grad, retain_graph: bool, wanted: set | None) -> dict:
    grads = {id(root): grad}
    traces = None if retain_graph else {}
    order = backprop.topological_order(root)
    captured, passes, reach = {}, None, None
    if wanted is not None:
        passes = backprop._towards(order, wanted)
        reach = passes | wanted
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        hooks = node._grad_hooks
        if hooks:
            g = _hooked(node, g, hooks)
        args = node.args
        if passes is not None and (args is not FREED or id(node) in wanted):
            if id(node) in wanted:
                captured[id(node)] = g
            if id(node) not in passes:
                continue
        elif args is FREED:
            raise freed(node)
        elif args is None or node._retain_grad:
            if node.grad_buffer is not None:
                raise NotImplementedError(
                    f"backward with create_graph=True: {node.name or 'a tensor'} (shape "
                    f"{node.shape}) keeps its gradient in a given buffer (data parallelism's "
                    "buckets), which cannot hold a gradient that is part of a graph"
                )
            node.grad = g if node.grad is None else node.grad + g
            if hooks:
                for hook in hooks:
                    if type(hook) is not GradHook:
                        hook(node)
            if args is None:
                continue
        if traces is not None:
            backprop._trace(node, traces).grad = g.array
        for arg, back_fn in zip(args, node.back_fns):
            if not arg.requires_grad or (reach is not None and id(arg) not in reach):
                continue
            g_arg = differentiable(node, back_fn, g)
            if g_arg.shape != arg.shape:
                raise RuntimeError(
                    f"backward of {node.name} (create_graph=True): gradient for input of "
                    f"shape {arg.shape} came back with shape {g_arg.shape}"
                )
            if g_arg.dtype != arg.dtype:
                g_arg = g_arg._cast("grad", arg.dtype)
            previous = grads.get(id(arg))
            grads[id(arg)] = g_arg if previous is None else previous + g_arg
        if not retain_graph:
            node.backward_trace = backprop._trace(node, traces)
            node.backward_trace.args = tuple(backprop._trace(arg, traces) for arg in args)
            node.args, node.back_fns = FREED, None
    return captured


def _hooked(node, g, hooks: list):
    """``g`` (a Tensor) through ``node``'s ``register_hook`` hooks, which see it as it is."""
    for hook in hooks:
        if type(hook) is GradHook:
            returned = hook.fn(g)
            if returned is None:
                continue
            if not hasattr(returned, "back_fns") or returned.shape != g.shape:
                raise RuntimeError(
                    f"backward: a hook (Tensor.register_hook) on {node.name or 'a tensor'} of "
                    f"shape {node.shape} returned {type(returned).__name__} of shape "
                    f"{getattr(returned, 'shape', None)}; expected a gradient of shape {g.shape}"
                )
            g = returned
    return g
