"""One way to observe the op path: what the profiler and the FLOP counter watch ops with.

Every op makes its output through ``Node.__init__`` (``x.new(...)`` calls it, as do the ops
that write ``Tensor(out, args=..., ...)``), and every backward step is a call of a back_fn by
the walk of ``tricycle.backprop`` (``_walk``). ``add(observer)`` and ``remove(observer)``
keep the list of active observers and rebuild, from the plain function, one observed
``Node.__init__`` and one observed walk that call every active observer in the order they
were added; when none is left the plain functions are put back. The op path and the walk's
per-edge loop hold no check of their own: with no observer they are exactly the plain code.

An observer (a subclass of ``Observer``) says what it does with:

- ``op(node, args, name, caller)``: an op just made ``node`` from ``args`` (its inputs, which
  ``node`` keeps only when it needs a gradient) and named it ``name`` (maybe None);
  ``caller`` is the frame of the function that made the op (``x.new``'s caller when made
  through ``new``), looked up once here for all observers;
- ``back_fns(node, back_fns)``: for one walk, the back_fns to call in place of ``back_fns``
  (``node``'s, maybe already wrapped by an observer added earlier; ``node.back_fns`` still
  holds the op's own until the walk starts), or None to leave them;
- ``begin_walk()`` / ``end_walk(token)``: around a walk (``end_walk`` gets what
  ``begin_walk`` returned, also when the walk raises).

A walk restores each node's own back_fns when it ends (a retained graph keeps its own).
"""

import sys

from tricycle import backprop
from tricycle.graph import Node

plain_init = Node.__init__
plain_walk = backprop._walk
_NEW_CODE = Node.new.__code__
_observers: list = []  # the active observers, in the order they were added


class Observer:
    """What an observer of the op path may do; each method does nothing here."""

    def op(self, node: Node, args, name: str | None, caller) -> None:
        """An op made ``node`` from ``args``; ``caller`` is the frame of what made it."""

    def back_fns(self, node: Node, back_fns: tuple):
        """The back_fns to call in place of ``back_fns`` for one walk, or None."""
        return None

    def begin_walk(self):
        """A walk starts; what is returned is given to ``end_walk``."""
        return None

    def end_walk(self, token) -> None:
        """The walk that ``begin_walk`` returned ``token`` for has ended."""


def add(observer: Observer) -> None:
    """Make ``observer`` see every op and walk from now on, after those added before it."""
    if observer not in _observers:
        _observers.append(observer)
        _rebuild()


def remove(observer: Observer) -> None:
    """Stop ``observer`` seeing ops and walks; the plain functions are back with none left."""
    if observer in _observers:
        _observers.remove(observer)
        _rebuild()


def active() -> tuple:
    """The active observers, in the order they were added."""
    return tuple(_observers)


def _rebuild() -> None:
    """Put the plain functions in place, or observed ones calling the active observers."""
    observers = tuple(_observers)
    if not observers:
        Node.__init__, backprop._walk = plain_init, plain_walk
        return
    Node.__init__, backprop._walk = _observed_init(observers), _observed_walk(observers)


def _observed_init(observers: tuple):
    """``Node.__init__`` calling ``observers`` after an op made its output."""

    def observed_init(
        self,
        array,
        args=None,
        back_fns=None,
        requires_grad=None,
        is_batched=False,
        name=None,
        dtype=None,
    ):
        plain_init(self, array, args, back_fns, requires_grad, is_batched, name, dtype)
        if args is not None:
            caller = sys._getframe(1)
            if caller.f_code is _NEW_CODE:  # made through x.new(...): the op is new's caller
                caller = caller.f_back
            for observer in observers:
                observer.op(self, args, name, caller)

    return observed_init


def _observed_walk(observers: tuple):
    """``backprop._walk`` with each node's back_fns wrapped by ``observers`` for the walk."""

    def observed_walk(root, grad, retain_graph: bool, wanted):
        wrapped = []
        for node in backprop.topological_order(root):
            own = node.back_fns
            if own:
                back_fns = own
                for observer in observers:
                    back_fns = observer.back_fns(node, back_fns) or back_fns
                if back_fns is not own:
                    wrapped.append((node, own))
                    node.back_fns = back_fns
        tokens = []
        try:
            for observer in observers:
                tokens.append(observer.begin_walk())
            return plain_walk(root, grad, retain_graph, wanted)
        finally:
            for observer, token in zip(reversed(observers[: len(tokens)]), reversed(tokens)):
                observer.end_walk(token)
            for node, own in wrapped:  # a retained graph keeps its own back_fns
                if node.back_fns is not None:
                    node.back_fns = own

    return observed_walk
