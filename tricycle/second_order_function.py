"""Double backward through a custom ``autograd.Function`` (``create_graph=True``:
``tricycle.second_order``), as torch's: the user's ``backward`` runs with the graph
recorded, so a backward written with tricycle's ops is itself differentiable.

The rule calls ``backward(ctx, g)`` with the output's gradient ``g`` (a Tensor of the walk)
and grad mode on: a saved input is the input itself, and a saved output is read as the
output's node, whose gradient comes back through this Function again (torch's saved
outputs). A gradient returned as a Tensor is used as it is (summed back where the input
broadcasts to it); one returned as a raw array cannot be differentiated: it comes back as a
node whose own backward raises, as torch's ``@once_differentiable`` gradients do (the error
comes when the gradient is differentiated, not before).
"""

from tricycle.second_order_base import cell, constant

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _function(node, fn, g):
    """The gradient of input ``i`` of the Function's node, from ``g``."""
    graph, i = cell(fn, "self"), cell(fn, "i")
    name = graph.cls.__name__
    if len(graph.differentiable) != 1:
        raise NotImplementedError(
            f"backward with create_graph=True: the second derivative of {name}, a Function "
            f"with {len(graph.differentiable)} differentiable outputs, is not implemented"
        )
    memo = getattr(graph, "recorded", None)
    if memo is None or memo[0] is not g:
        memo = graph.recorded = g, _run(graph, node, g)
    if i == graph.last:  # the walk is done with this node: keep nothing
        graph.recorded = None
    (returned, arrays), arg = memo[1], graph.args[i]
    if returned[i] is None:
        return constant(node, arg.xp.zeros_like(arg.array))
    if not hasattr(returned[i], "back_fns"):
        return _once_differentiable(node, name, i, arrays[i], arg)
    return _summed_to(returned[i], arg.shape)


def _run(graph, node, g) -> tuple:
    """The user's backward on ``g``, a saved output read as ``node``: (what it returned, one
    gradient or None per forward input; the same as arrays in the inputs' shapes)."""
    (k,) = graph.differentiable
    output, ctx = graph.outputs[k], graph.ctx
    saved = ctx._saved
    ctx._saved = tuple(node if s is output else s for s in saved)
    grads = [None] * len(graph.outputs)
    grads[k] = g
    try:
        returned = graph.cls.backward(ctx, *grads)
    finally:
        ctx._saved = saved
    returned = returned if isinstance(returned, tuple) else (returned,)
    return returned, graph.checked(returned)  # the first backward's checks: counts, shapes


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

    out = Identity.apply(t(3))
    KEYS["function"] = key = out.back_fns[0].__code__
    return {key: _function}
