"""What the profiler measures, and how it costs nothing while no profile records.

Every op makes its output through ``Node.__init__`` (``x.new(...)`` calls it, as do the ops
that write ``Tensor(out, args=..., ...)``), and every backward step is a call of a back_fn by
the walk of ``tricycle.backprop`` (``_walk``). A ``Session`` is an observer of those two
(``tricycle.op_observers``, which the FLOP counter uses too, so that the two nest): ``start``
adds it, ``stop`` removes it, and with no observer the op path and the walk's per-edge loop
are exactly the plain code.

How an op is timed: the engine sees an op only when it makes its output, so an op's interval
runs from the previous mark on its thread (the end of the previous op, the start or end of a
``record_function`` range or backward step, or the start of the recording) to the moment its
output is made. Python between two ops (a module's ``__call__``, argument checks) counts
towards the op that follows, as it is spent on the way to it. A composite op (softmax of exp,
sum and division) shows as its parts. Ops are named by their ``name`` (``"exp"``), or by the
function that made them when they have none.

A backward step is timed exactly: each back_fn of the graph is wrapped, for the walk only,
in a timer named ``<op>_backward``; the whole walk is one range, ``autograd::backward``.
Ranges (``record_function``, ``ProfilerStep#N``) nest what runs inside them on their thread.

With ``synchronise`` (``ProfilerActivity.CUDA``), an op whose output is on a GPU, and a
backward step whose gradient is, waits for the GPU before its end is read: its time then
includes the device's work. Otherwise a GPU op's time is the host's time to queue it.
"""

import sys
import threading
import time

from tricycle import backend, op_observers
from tricycle.graph import Node

_clock = time.perf_counter_ns
_session = None  # the Session recording now (one at a time, as torch's profiler)


class Interval:
    """One recorded event while it is measured: an op, a backward step or a range."""

    __slots__ = (
        "name",
        "kind",
        "start",
        "end",
        "thread",
        "shapes",
        "memory",
        "stack",
        "children",
        "on_gpu",
    )

    def __init__(self, name: str, kind: str, start: int, thread: int):
        self.name, self.kind, self.start, self.end, self.thread = name, kind, start, start, thread
        self.shapes, self.memory, self.stack, self.children = None, 0, None, []
        self.on_gpu = False


class _Thread(threading.local):
    """Each thread's open ranges (innermost last) and its last mark (where its next op
    starts)."""

    def __init__(self, start: int, registry: list):
        self.open, self.mark = [], start
        registry.append(self.open)


class Session(op_observers.Observer):
    """One recording: the closed intervals of every thread, in the order they closed. As an
    observer of the op path (``tricycle.op_observers``) it records every op, times every
    backward step and makes each walk one range, ``autograd::backward``."""

    def __init__(
        self, record_shapes=False, profile_memory=False, with_stack=False, synchronise=False
    ):
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.synchronise = with_stack, synchronise
        self.intervals: list[Interval] = []
        self.names: dict[int, str] = {}  # id of an op's output -> the name it was recorded as
        self.start_ns = self.end_ns = _clock()
        self._open_lists: list[list] = []
        self._threads = _Thread(self.start_ns, self._open_lists)

    # ------------------------------------------------------------------ recording
    def op(self, out: Node, args, name: str | None, caller) -> None:
        """Record the op that just made ``out`` from ``args``."""
        if self.synchronise and backend.is_cupy_array(out.array):
            backend.synchronize("the profiler's timing of an op")
        end = _clock()
        state = self._threads
        if name is None:  # named by the function that made it, its backward steps too
            name = self.names[id(out)] = caller.f_code.co_name
        interval = Interval(name, "op", state.mark, threading.get_ident())
        if self.record_shapes:
            interval.shapes = [list(arg.shape) for arg in args]
        if self.profile_memory:
            interval.memory = out.array.nbytes
        if self.with_stack:
            interval.stack = _stack(caller)
        interval.on_gpu = self.synchronise and backend.is_cupy_array(out.array)
        self._close(interval, end, state)

    def back_fns(self, node: Node, back_fns: tuple) -> tuple:
        """``back_fns`` timed, each named after the op's own back_fn (``node.back_fns``)."""
        return tuple(
            self.timed_back_fn(f, _backward_name(self, node, own))
            for f, own in zip(back_fns, node.back_fns)
        )

    def begin_walk(self) -> Interval:
        # the stack of the walk's range starts at what called the walk (backprop.backward)
        return self.open("autograd::backward", caller=sys._getframe(2))

    def end_walk(self, interval: Interval) -> None:
        self.close(interval)

    def open(self, name: str, kind: str = "range", caller=None) -> Interval:
        """Open a range on the calling thread (``record_function``); its stack starts at
        ``caller``, by default the frame that called the caller of ``open``."""
        state = self._threads
        interval = Interval(name, kind, _clock(), threading.get_ident())
        if self.with_stack:
            interval.stack = _stack(sys._getframe(2) if caller is None else caller)
        state.open.append(interval)
        state.mark = interval.start
        return interval

    def close(self, interval: Interval) -> None:
        """Close a range opened by ``open`` (the innermost, or any if they were misnested)."""
        state = self._threads
        if interval in state.open:
            state.open.remove(interval)
            self._close(interval, _clock(), state)

    def _close(self, interval: Interval, end: int, state) -> None:
        interval.end = end
        if state.open:
            state.open[-1].children.append(interval)
        self.intervals.append(interval)
        state.mark = end

    def timed_back_fn(self, back_fn, name: str):
        """``back_fn`` timed as one backward step named ``name``."""

        def timed(g):
            interval, g_in = self.open(name, "backward"), None
            try:
                g_in = back_fn(g)
                return g_in
            finally:
                self._end_step(interval, g, getattr(g_in, "array", g_in))

        return timed

    def _end_step(self, interval: Interval, g, g_in) -> None:
        """Close the backward step ``interval``, which took ``g`` and gave ``g_in``."""
        if g_in is not None and self.synchronise and backend.is_cupy_array(g_in):
            backend.synchronize("the profiler's timing of a backward step")
            interval.on_gpu = True
        if self.record_shapes:
            interval.shapes = [list(g.shape)]
        if self.profile_memory:
            interval.memory = getattr(g_in, "nbytes", 0)
        self.close(interval)

    def finish(self) -> None:
        """Close what is still open (at the end of the recording) on every thread."""
        self.end_ns = end = _clock()
        for open_list in self._open_lists:
            while open_list:
                interval = open_list.pop()
                interval.end = end
                if open_list:
                    open_list[-1].children.append(interval)
                self.intervals.append(interval)


def _stack(frame, depth: int = 8) -> list[str]:
    """``file(line): function`` of ``frame`` and its callers, innermost first."""
    lines = []
    while frame is not None and len(lines) < depth:
        code = frame.f_code
        lines.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return lines


def _backward_name(session: Session, node, back_fn) -> str:
    """``<op>_backward``: the op's name as recorded, or the function that made the back_fn
    (an op made before the recording began)."""
    name = node.name or session.names.get(id(node))
    return f"{name or getattr(back_fn, '__qualname__', 'op').split('.')[0]}_backward"


def start(session: Session) -> None:
    """Record into ``session``: it observes the op path and the walk from now on."""
    global _session
    if _session is not None:
        raise RuntimeError(
            "profiler: a profile is already recording; tricycle records one at a time (as "
            "torch's profiler): stop it before starting another"
        )
    _session = session
    op_observers.add(session)


def stop(session: Session) -> None:
    """Stop recording into ``session``: the op path and walk no longer timed."""
    global _session
    if _session is not session:
        return
    op_observers.remove(session)
    _session = None
    session.finish()


def active() -> Session | None:
    """The session recording now, or None."""
    return _session
