"""Double backward through a custom ``autograd.Function`` (``create_graph=True``:
``tricycle.second_order``), as torch's: the user's ``backward`` runs with the graph
recorded, so a backward written with tricycle's ops is itself differentiable. Several
differentiable outputs are pieces of one flat node (``autograd_function``): each piece's
back_fn is linear (its gradient put at its place), and the flat node's gradient is cut into
the outputs' gradients again, with differentiable ops, for ``backward``.

The rule calls ``backward(ctx, g)`` with the output's gradient ``g`` (a Tensor of the walk)
and grad mode on: a saved input is the input itself, and a saved output is read as the
output's node, whose gradient comes back through this Function again (torch's saved
outputs). A gradient returned as a Tensor is used as it is (summed back where the input
broadcasts to it); one returned as a raw array cannot be differentiated: it comes back as a
node whose own backward raises, as torch's ``@once_differentiable`` gradients do (the error
comes when the gradient is differentiated, not before).
"""

from tricycle import second_order_fused
from tricycle.second_order_base import cell, constant, linear

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _function(node, fn, g):
    """The gradient of input ``i`` of the Function's node, from ``g``."""
    graph, i = cell(fn, "self"), cell(fn, "i")
    name = graph.cls.__name__
    # once per node and gradient, in this thread's memo that the walk forgets when it ends
    returned, arrays = second_order_fused.remembered(node, g, lambda: _run(graph, node, g))
    arg = graph.args[i]
    if returned[i] is None:
        return constant(node, arg.xp.zeros_like(arg.array))
    if not hasattr(returned[i], "back_fns"):
        return _once_differentiable(node, name, i, arrays[i], arg)
    return _summed_to(returned[i], arg.shape)


def _outputs(graph, node, g) -> tuple:
    """(each output's gradient, each output as a node of the graph: a saved output is read
    so): the one output is ``node``; several are pieces of the flat ``node`` (and of ``g``),
    an output whose gradient did not come None where the Function does not materialize."""
    grads, as_nodes = [None] * len(graph.outputs), {}
    if len(graph.differentiable) == 1:
        (k,) = graph.differentiable
        grads[k], as_nodes[graph.output_ids[k]] = g, node
        return grads, as_nodes
    for k in graph.differentiable:
        (start, stop), output = graph.places[k], graph.outputs[k]

        def piece(t, start=start, stop=stop, output=output):
            t = t[start:stop].reshape(output.shape)
            return t if t.dtype == output.dtype else t._cast("cast", output.dtype)

        as_nodes[graph.output_ids[k]] = piece(node)
        if k in graph.reached or graph.ctx._materialize_grads:
            grads[k] = piece(g)
    graph.reached.clear()
    return grads, as_nodes


def _run(graph, node, g) -> tuple:
    """The user's backward on the outputs' gradients, a saved output read as its node: (what
    it returned, one gradient or None per forward input; the same as arrays in the inputs'
    shapes)."""
    ctx = graph.ctx
    grads, as_nodes = _outputs(graph, node, g)
    saved = ctx._saved
    ctx._saved = tuple(as_nodes.get(id(s), s) for s in saved)
    try:
        returned = graph.cls.backward(ctx, *grads)
    finally:
        ctx._saved = saved
    returned = returned if isinstance(returned, tuple) else (returned,)
    return returned, graph.checked(returned)  # the first backward's checks: counts, shapes


def _piece(node, fn, g):
    """A piece of several outputs: its gradient put at its place in the flat one (zeros
    elsewhere; the back_fn notes the output as reached); the adjoint reads the place."""
    start, stop, shape = cell(fn, "start"), cell(fn, "stop"), node.shape
    return linear(g, fn, lambda d: d[start:stop].reshape(shape), "piece")


def _summed_to(grad, shape):
    """``grad`` summed back to ``shape`` where the input broadcasts to it, as torch's."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(lead))) if lead else grad
    stretched = tuple(a for a, n in enumerate(shape) if n == 1 and grad.shape[a] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _once_differentiable(node, name: str, i: int, array, arg):
    """``array`` as the gradient, a node whose backward raises (torch's once_differentiable)."""

    def refuse(dout):
        raise RuntimeError(
            f"trying to differentiate twice {name}.backward, which returned an array at "
            f"position {i} (shape {arg.shape}), not a Tensor made with tricycle's ops: its "
            "gradient can be differentiated once only (torch's @once_differentiable)"
        )

    inputs = tuple(a for a in node.args if a.requires_grad)
    return node.new(array, args=inputs, back_fns=(refuse,) * len(inputs), name=f"{name} grad")


def rules(t) -> dict:
    """{code of a Function's back_fn: rule}, found by applying a small Function to ``t(3)``."""
    import importlib

    autograd_function = importlib.import_module("tricycle.autograd_function")

    class Identity(autograd_function.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, dy):
            return dy

    class Pair(autograd_function.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, da, db):
            return da + db * 2

    out = Identity.apply(t(3))
    KEYS["function"] = key = out.back_fns[0].__code__
    KEYS["function_piece"] = piece = Pair.apply(t(3))[0].back_fns[0].__code__
    return {key: _function, piece: _piece}
