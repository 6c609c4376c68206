"""A pipeline stage's backward in two halves, for the zero-bubble schedules: the gradients
of the stage's inputs first (``I``: sent upstream at once, so the stage before can go on),
the parameters' later (``W``: run where the pipeline would otherwise wait). ``I`` then ``W``
leaves in every ``.grad`` what one backward leaves, computed by the same back_fns on the
same gradients, so the numbers are the same.

The stage's graph, from its inputs to its outputs, falls in two parts:

- the input path: the tensors with an input below them; the inputs' gradients flow through
  them and nothing else;
- the weight subgraphs hanging off it: the parameters and what was computed from them alone
  (a cast, a transpose), and outputs that do not depend on the inputs.

Where the two meet is an edge from a tensor ``X`` of the input path to a tensor ``A`` of a
weight subgraph: ``A``'s share of the gradient is ``X``'s back_fn for ``A`` applied to
``X``'s gradient. ``I`` is one walk of the engine's (``autograd.grad``) along the input path
alone, asking for the inputs' gradients and for those ``X``'s; it frees the path as it goes,
as backward does, having first kept each meeting edge's back_fn (the arrays a weight
gradient needs live in it). ``W`` is a second walk, from a node whose inputs are the
meeting edges' ``A``'s and whose back_fns apply those kept back_fns to the kept gradients:
it goes down the weight subgraphs only and accumulates into the parameters' ``.grad``
(their hooks run then) as backward would. No back_fn runs twice.

A stage whose inputs need no gradient (the first) has nothing for ``I`` to do: its ``W`` is
the whole backward, as torch's.
"""

from functools import partial

from tricycle import autograd
from tricycle.backprop import topological_order
from tricycle.grad_modes import enable_grad


def backward_input(outputs: tuple, seeds: tuple, inputs: tuple):
    """The input half of the backward of ``outputs`` seeded with ``seeds`` (one per output,
    None for ones): returns the gradients of ``inputs`` (a Tensor, or None for an input that
    needs none or that the outputs do not depend on) and the weight half, a callable to run
    later, once (it frees what it walks)."""
    wanted = tuple(x for x in inputs if x.requires_grad)
    if not wanted:  # no input path: the weight half is the whole backward
        return (None,) * len(inputs), partial(autograd.backward, outputs, seeds)
    edges, frontier, off_path = _meeting_edges(outputs, wanted)
    grads = autograd.grad(outputs, wanted + frontier, seeds, allow_unused=True)
    found = dict(zip(map(id, wanted), grads))
    kept = dict(zip(map(id, frontier), grads[len(wanted) :]))
    # (A, the back_fn that gives A's share, the gradient it is given), in the walk's order
    shares = [(a, back_fn, kept[id(x)].array) for x, back_fn, a in edges
              if kept[id(x)] is not None]  # fmt: skip
    for k in off_path:  # an output off the input path: its seed is its gradient
        seed = seeds[k]
        seed = outputs[k].xp.ones_like(outputs[k].array) if seed is None else seed
        shares.append((outputs[k], _same, getattr(seed, "array", seed)))
    return tuple(found.get(id(x)) for x in inputs), partial(_backward_weight, shares)


def _backward_weight(shares: list) -> None:
    """The weight half: one walk from a node with an edge per share (A, back_fn, gradient),
    whose gradient is ``back_fn(gradient)``; the engine sums, casts and checks them as it
    does any edge's, and accumulates the parameters' ``.grad``."""
    if not shares:  # a stage without parameters
        return
    first = shares[0][0]
    with enable_grad():
        root = first.new(
            first.xp.zeros((), first.dtype),
            args=tuple(a for a, _, _ in shares),
            back_fns=tuple((lambda _, f=f, g=g: f(g)) for _, f, g in shares),
            name="weight gradients",
        )
    autograd.backward(root)


def _meeting_edges(outputs: tuple, inputs: tuple):
    """Where the input path meets the weight subgraphs: the edges (X, X's back_fn for A, A)
    in the order backward walks them, the distinct X's, and the indices of the outputs off
    the path."""
    order, seen = [], set()
    for y in outputs:  # every tensor below the outputs, each after its inputs
        for node in topological_order(y):
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
    path = {id(x) for x in inputs}
    for node in order:
        if node.args and any(id(arg) in path for arg in node.args):
            path.add(id(node))
    edges, frontier = [], {}
    for node in reversed(order):
        if id(node) not in path or not node.args:
            continue
        for arg, back_fn in zip(node.args, node.back_fns):
            if arg.requires_grad and id(arg) not in path:
                edges.append((node, back_fn, arg))
                frontier[id(node)] = node
    off_path = [k for k, y in enumerate(outputs) if id(y) not in path]
    return edges, tuple(frontier.values()), off_path


def _same(g):
    """An output's share of its own gradient: the gradient as it is."""
    return g
