"""torch's in-place op on an op's output, on functional tensors: the tensor takes the new
node's place.

``scores = q @ k.T; scores.masked_fill_(mask, -inf)`` writes into ``scores`` in PyTorch,
whose graph then runs through the fill ("rebasing" its history). tricycle's tensors are
functional, and an op's output is the node of its graph that its inputs' backward reads. So
``rebase`` makes the new node without writing any array: a twin of ``x`` takes x's place as
the op's output, ``y = op(twin, ...)`` is computed as ever, and ``x`` becomes ``y`` (its values,
its inputs, its backward): what the user's name ``scores`` holds afterwards is the filled
tensor, and the graph below it is unchanged.

Only a tensor no other recorded op uses yet can move (``Node._uses``): an op that took ``x``
as an input holds the object itself, and would then differentiate through ``y``. torch keeps
those ops' saved values with a version counter; here they are refused, with the reason. The
one use allowed is a selection of ``x`` inside the value written (``x[i] -= 1`` reads
``x[i]`` first): a selection's backward reads no values, so it is pointed at the twin.

A view of its input is written through, as torch's, where it holds all of its input's values
in the same order (``x = z.reshape(-1, n)``, ``view``, ``squeeze``, ``flatten`` of a
contiguous ``z``; d2l's ``masked_softmax`` writes ``X[~mask] = value`` into such a view of
the scores): ``z``, used by no other recorded op, is rebased in turn to the written ``x``
reshaped back (and the tensor z views, if z is such a view). Any other view (``x =
z[:, :3]``, a transpose) is refused: torch would write through to ``z``, and rebinding ``x``
would leave ``z`` as it was.

A constant (a leaf that requires no grad) written with a value in a graph joins the graph as
torch's does: ``m = zeros(...).fill_(-inf); m[adj == 1] = logits`` (a graph attention layer's
scores) gives ``logits`` its gradient through ``m``. Its array is written as ever (a numpy
view of it sees the values); the op's input is a copy of what it held before.
"""

from tricycle.backend import memory_owner as owner
from tricycle.graph import Node, grad_enabled, no_grad

# what makes a node: its slots but the count of its uses (a twin starts its own), weakrefs
# and the attributes a user set on the tensor (they stay with it, as torch's)
_NODE = tuple(slot for slot in Node.__slots__ if slot not in ("_uses", "__weakref__", "__dict__"))


def rebased(x: Node, method: str, instead: str, *inputs, writes: bool = True) -> list | None:
    """None where ``x.<method>`` writes as it always has (under ``no_grad()``, or a leaf that
    takes no value in a graph); for an op's output, or a constant taking such a value, that
    may be rebased, the selections of x in the graphs of ``inputs`` (the values written) to
    point at its twin; else a RuntimeError saying why. A method that ``writes`` no values
    (``squeeze_``: a new shape) may rebase a view."""
    if not grad_enabled():
        return None
    if x.args is None and (x.requires_grad or not any(_in_graph(i) for i in inputs)):
        return None  # a leaf written as ever (a parameter: refused outside no_grad())
    selections = _selections_of(x, inputs) if x._uses else []
    why = None
    if x._uses > len(selections):
        why = f"{x._uses - len(selections)} recorded op(s) already use it as an input"
    elif writes and _views(x) and _viewed(x) is None:
        why = "its values are a view of its input's, which torch would write through"
    elif x._retain_grad or x._grad_hooks:
        why = "it retains its gradient or has hooks"
    if why is None:
        return selections
    raise RuntimeError(f"Tensor.{method}: cannot write in place into this tensor (shape "
                       f"{x.shape}), made by an op in a graph: {why}; tricycle's tensors are "
                       f"functional: use {instead} and keep the result")  # fmt: skip


def in_place(x: Node, name: str, out_of_place, instead: str, *args, otherwise=None, **kwargs):
    """``out_of_place(x, *args, **kwargs)`` written into ``x`` as torch's in-place ``name``
    writes it: an op's output (or a constant taking a value in a graph) is rebased, any other
    tensor has its array written; where that would change a graph (``rebased``,
    ``Tensor._writable``) refused, naming ``instead``, or, given ``otherwise``, its result
    (an activation's ``inplace=True``: computed out of place)."""
    try:
        if (selections := rebased(x, name, instead, *args)) is None:
            x._writable(name, instead)
    except RuntimeError:
        if otherwise is None:
            raise
        return otherwise(x, *args, **kwargs)
    if selections is not None:
        return rebase(x, selections, out_of_place, *args, **kwargs)
    with no_grad():
        return x._write(name, out_of_place(x, *args, **kwargs))


def written_if(inplace: bool, x: Node, name: str, compute):
    """``compute(x)``, written into ``x`` when ``inplace`` (torch's ``F.<name>(...,
    inplace=True)``: ``in_place``; where tricycle cannot write, computed out of place, as an
    activation's ``inplace=True``)."""
    if not inplace:
        return compute(x)
    return in_place(x, f"{name}(inplace=True)", compute, f"{name}()", otherwise=compute)


def _in_graph(value) -> bool:
    """Whether ``value`` (an in-place op's argument) is a tensor whose gradient is wanted."""
    return isinstance(value, Node) and value.requires_grad


def _selections_of(x: Node, inputs) -> list:
    """The ``getitem`` nodes of x in the graphs of ``inputs`` (a walk that stops at x)."""
    found, seen = [], set()
    stack = [node for node in inputs if isinstance(node, Node)]
    while stack:
        node = stack.pop()
        if id(node) in seen or not node.args:
            continue
        seen.add(id(node))
        for arg in node.args:
            if arg is x:
                found += [node] if node.name == "getitem" else []
            else:
                stack.append(arg)
    return found


def _views(x: Node) -> bool:
    """Whether ``x`` is an op's output whose array is a view of one of its inputs' arrays."""
    return x.args is not None and any(owner(a.array) is owner(x.array) for a in x.args)


def _viewed(x: Node) -> list | None:
    """The tensors that a write into ``x`` writes through, nearest first (``[]``: x is no
    view): each the one input of a view holding all its values in the same order (both
    contiguous over all of their memory), an op's output that no other recorded op uses.
    None where a view is not such (a slice, a transpose, a leaf's view): refused."""
    viewed = []
    while _views(x):
        z, a = x.args[0], x.array
        if (len(x.args) != 1 or z.args is None or z._uses != 1 or z._retain_grad
                or z._grad_hooks or a.dtype != z.dtype or not a.flags.c_contiguous
                or not z.array.flags.c_contiguous or a.size != owner(a).size):  # fmt: skip
            return None
        viewed.append(z)
        x = z
    return viewed


def rebase(x: Node, selections: list, op, *args, reshaped: bool = False, **kwargs) -> Node:
    """``x`` becomes ``op(x, *args, **kwargs)`` (of x's shape, unless ``reshaped``: torch's
    ``squeeze_``, and dtype), x's old node moved to a twin that the new node, and the
    ``selections`` of x, take as their input; the tensors x is a reshaped view of become
    the written x reshaped back (``_viewed``; not where ``reshaped``: a new shape writes
    nothing). Returns ``x``."""
    viewed = [] if reshaped else _viewed(x) or []
    twin = type(x).__new__(type(x))
    for slot in _NODE:
        setattr(twin, slot, getattr(x, slot))
    written = x.array if x.args is None else None  # a constant's array, written as ever
    if written is not None:
        twin.array = written.copy()  # the values before, which the op's backward may read
    twin._uses = len(selections)
    for node in selections:
        node.args = tuple(twin if arg is x else arg for arg in node.args)
    y = op(twin, *args, **kwargs)
    if y.shape != x.shape and not reshaped:
        raise ValueError(f"{y.name or 'Tensor'}: the result's shape {y.shape} is not the "
                         f"shape {x.shape} of the tensor written in place")  # fmt: skip
    if y.dtype != x.dtype:  # in place keeps the tensor's dtype, as torch's
        y = y.to(x.dtype)
    for slot in _NODE:
        setattr(x, slot, getattr(y, slot))
    if written is not None:
        written[...] = x.array
        x.array = written
    x._uses = 0
    above, old = x, twin
    for z in viewed:  # z takes the written values, its old node below the old view's
        rebase(z, [old], lambda _, a=above, shape=z.shape: a.reshape(shape), reshaped=True)
        above, old = z, old.args[0]
    return x


def index_put(x: Node, index, value) -> Node:
    """``x[index] = value`` as an op (``tricycle.indexing.index_put``, loaded when first used)."""
    from tricycle import indexing  # noqa: PLC0415 - import tricycle.tensor stays small

    return indexing.index_put(x, index, value)
