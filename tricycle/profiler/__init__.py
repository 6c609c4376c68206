"""torch.profiler on tricycle's engine: which ops and backward steps a program spends its
time in.

    with tricycle.profiler.profile(record_shapes=True) as prof:
        with tricycle.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")  # chrome://tracing, Perfetto

``profile`` records every op's forward (named by the op: ``"matmul"``, ``"exp"``) and every
backward step (``"matmul_backward"``), with self and total times, input shapes
(``record_shapes``), the bytes each made (``profile_memory``) and the Python stack
(``with_stack``); ``record_function`` ranges nest what runs inside them. How each is timed,
and why nothing costs anything while no profile records, is ``tricycle.profiler.recorder``'s
docstring: the timed op path and walk are swapped in only while a profile records.

``schedule(wait=, warmup=, active=, repeat=, skip_first=, skip_first_wait=)`` and
``profile.step()`` follow torch's steps: a cycle waits, warms up (records nothing here: there
is no tracer to warm), records ``active`` steps (each a ``ProfilerStep#N`` range), then calls
``on_trace_ready(prof)`` (``tensorboard_trace_handler(dir)`` writes the trace there). Without
a schedule the whole block is recorded and ``on_trace_ready`` is called at its end.

``ProfilerActivity.CUDA``: ops on a GPU wait for it, so their times include the device's
work (reported as CUDA times too); without it, a GPU op's time is the host's time to queue it.
There are no FLOPs (``with_flops``) or module hierarchy (``with_modules``): they warn.
"""

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable

from tricycle import backend
from tricycle.profiler import recorder
from tricycle.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from tricycle.profiler.record import record_function

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What a profile measures: the host's ops (CPU) and, on a GPU, the device's (CUDA)."""

    CPU = 0
    CUDA = 2


class ProfilerAction(enum.Enum):
    """What a schedule says to do at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """CPU, and CUDA when a GPU can be used."""
    found = {ProfilerActivity.CPU}
    if backend.cupy_available():
        found.add(ProfilerActivity.CUDA)
    return found


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
) -> Callable[[int], ProfilerAction]:
    """torch's schedule: after ``skip_first`` steps, cycles of ``wait`` steps doing nothing,
    ``warmup`` steps warming up and ``active`` steps recording, the last of which saves
    (``RECORD_AND_SAVE``: ``on_trace_ready`` is called); ``repeat`` cycles (0: without end).
    ``skip_first_wait`` skips the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup="
            f"{warmup} (need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(
    dir_name: str,
    worker_name: str | None = None,
    use_gzip: bool = False,
    use_python_export: bool = False,
):
    """An ``on_trace_ready`` that writes each trace into ``dir_name`` (made if missing) as
    ``<worker_name>.<time ns>.pt.trace.json`` (``.gz`` with ``use_gzip``), ``worker_name``
    being ``<host>_<pid>`` by default: the files TensorBoard's profiler plugin reads."""

    def handler(prof) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as error:
            raise RuntimeError(f"Can't create directory: {dir_name}") from error
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


_A = ProfilerAction
# (previous action, next action; None: the profile stops) -> what to do, as torch's profile
_TRANSITIONS = {
    (_A.NONE, _A.RECORD): ("start",),
    (_A.NONE, _A.RECORD_AND_SAVE): ("start",),
    (_A.WARMUP, _A.NONE): ("warn", "start", "stop"),
    (_A.WARMUP, _A.RECORD): ("start",),
    (_A.WARMUP, _A.RECORD_AND_SAVE): ("start",),
    (_A.RECORD, _A.NONE): ("warn", "stop"),
    (_A.RECORD, _A.WARMUP): ("warn", "stop"),
    (_A.RECORD_AND_SAVE, _A.NONE): ("stop", "ready"),
    (_A.RECORD_AND_SAVE, _A.WARMUP): ("stop", "ready"),
    (_A.RECORD_AND_SAVE, _A.RECORD): ("stop", "ready", "start"),
    (_A.RECORD_AND_SAVE, _A.RECORD_AND_SAVE): ("stop", "ready", "start"),
    (_A.WARMUP, None): ("start", "stop"),
    (_A.RECORD, None): ("stop", "ready"),
    (_A.RECORD_AND_SAVE, None): ("stop", "ready"),
}


class profile:
    """torch.profiler.profile: a context manager (or ``start()``/``stop()``) that records
    the ops and backward steps run inside it; see the module's docstring. ``events()`` and
    ``key_averages()`` give the last recorded trace."""

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events=False,
        use_cuda=None,
        custom_trace_id_callback=None,
    ):
        found = supported_activities() if activities is None else set()
        for item in activities or ():
            if isinstance(item, dict):
                found.update(item)
            elif isinstance(item, ProfilerActivity):
                found.add(item)
            else:
                raise TypeError(
                    f"profile: activities must be ProfilerActivity values, got {item!r}"
                )
        if use_cuda is not None:
            warnings.warn(
                "`use_cuda` is deprecated, use `activities` argument instead",
                FutureWarning,
                stacklevel=2,
            )
            (found.add if use_cuda else found.discard)(ProfilerActivity.CUDA)
        if not found:
            raise AssertionError("No valid profiler activities found")
        for flag, value in (("with_flops", with_flops), ("with_modules", with_modules)):
            if value:
                warnings.warn(
                    f"profile: {flag}=True: tricycle's profiler records no {flag[5:]}; ignored",
                    stacklevel=2,
                )
        if execution_trace_observer is not None:
            raise NotImplementedError(
                "profile: execution_trace_observer: tricycle's profiler writes Chrome traces only"
            )
        self.activities = found
        self.record_shapes, self.profile_memory = bool(record_shapes), bool(profile_memory)
        self.with_stack, self.acc_events = bool(with_stack), bool(acc_events)
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self.profiler = None  # the last trace's events (an EventList), once one stops
        self._session = self._step_range = None
        self._accumulated = EventList()
        self._metadata: dict = {}

    # ------------------------------------------------------------------ steps
    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self) -> None:
        self._exit_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """The next step begins: what the schedule says for it is done."""
        self._exit_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step()

    def _enter_step(self) -> None:
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _transit(self, previous, current) -> None:
        for action in _TRANSITIONS.get((previous, current), ()):
            if action == "warn":
                warnings.warn(
                    f"Incorrect schedule: {previous.name} followed by "
                    f"{current.name if current else 'the end'}",
                    stacklevel=3,
                )
            elif action == "start":
                self._session = recorder.Session(
                    self.record_shapes,
                    self.profile_memory,
                    self.with_stack,
                    ProfilerActivity.CUDA in self.activities,
                )
                recorder.start(self._session)
            elif action == "stop":
                recorder.stop(self._session)
                events = EventList.from_session(self._session, self._metadata)
                self._session = None
                if self.acc_events:
                    self._accumulated.extend(events)
                    events = EventList(self._accumulated, self._metadata)
                self.profiler = events
            elif self.on_trace_ready is not None:  # "ready"
                self.on_trace_ready(self)

    # ------------------------------------------------------------------ results
    def events(self) -> EventList:
        """The events of the last recorded trace."""
        if self.profiler is None:
            raise RuntimeError(
                "profile.events: no trace has been recorded yet (the profile "
                "is still recording, or its schedule recorded no step)"
            )
        return self.profiler

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ) -> EventList:
        """The last trace's events averaged per name (and input shapes, stack)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last trace as Chrome trace JSON (``.gz``: gzipped)."""
        self.events().export_chrome_trace(path)

    def add_metadata(self, key: str, value: str) -> None:
        """A key and value written at the top of the exported traces."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """As ``add_metadata``, the value being JSON text."""
        import json  # noqa: PLC0415 - only here

        self._metadata[key] = json.loads(value)
