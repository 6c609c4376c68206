"""The pieces every second-derivative rule is made of (``tricycle.second_order_rules`` and
``second_order_more`` both use them): ``cell`` reads the value a back_fn closed over (a rule
reads its op's inputs so), ``linear`` records a backward that is linear in the gradient as a
node whose own back_fn is its transpose (``Linear``), ``summed_to`` sums a gradient back over
broadcast axes so, and ``constant`` makes an array a Tensor of the graph's class that needs no
gradient."""


def cell(fn, name: str):
    """The value ``fn`` closed over under ``name`` (a rule reads its op's inputs so)."""
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def constant(node, array):
    """``array`` as a Tensor of ``node``'s class that requires no gradient."""
    return node.new(array, requires_grad=False)


class Linear:
    """A back_fn ``dout -> apply(dout)`` of a node made by ``linear``, whose own derivative is
    ``adjoint`` (both array functions, linear in their argument)."""

    __slots__ = ("apply", "adjoint")

    def __init__(self, apply, adjoint):
        self.apply, self.adjoint = apply, adjoint

    def __call__(self, dout):
        return self.apply(dout)


def linear(g, apply, adjoint, name: str = "linear"):
    """``apply(g)`` as a Tensor recorded in the graph (when ``g`` needs it), with ``adjoint``
    (the transpose of ``apply``) as its back_fn."""
    return g.new(apply(g.array), args=(g,), back_fns=(Linear(adjoint, apply),), name=name)


def summed_to(g, shape):
    """``g`` summed over the axes broadcasting added or stretched to reach ``shape``."""
    from tricycle.binary import unbroadcast

    if g.shape == shape:
        return g
    big, xp = g.shape, g.xp
    return linear(g, lambda d: unbroadcast(d, shape), lambda d: xp.broadcast_to(d, big), "sum_to")
