"""What a profile gives back: torch's ``FunctionEvent``, ``FunctionEventAvg`` and
``EventList`` (``key_averages``, ``table``, ``export_chrome_trace``), from the intervals a
``tricycle.profiler.recorder.Session`` recorded.

Times are in microseconds, as torch's (``cpu_time_total``, ``self_cpu_time_total``: the
total less the totals of the events nested in it). Device times (``device_time_total``, named
``cuda_time_total`` too) are the same synchronised times for events that ran on a GPU under
``ProfilerActivity.CUDA`` (see ``recorder``), zero otherwise. Memory is the bytes of the
arrays an event made (its output, or the gradient a backward step gave), its children's
included; ``self_cpu_memory_usage`` is its own.
"""

import gzip
import json
import os

_KIND_CATEGORY = {"op": "cpu_op", "backward": "cpu_op", "range": "user_annotation"}


class FunctionEvent:
    """One recorded op, backward step or range (torch's ``FunctionEvent``)."""

    def __init__(self, index: int, interval, origin_ns: int):
        self.id, self.name, self.key = index, interval.name, interval.name
        self.kind, self.thread, self.count = interval.kind, interval.thread, 1
        self.start_us = (interval.start - origin_ns) / 1000.0
        self.cpu_time_total = (interval.end - interval.start) / 1000.0
        self.input_shapes = interval.shapes or []
        self.stack = interval.stack or []
        self.self_cpu_memory_usage = interval.memory
        self.cpu_memory_usage = interval.memory
        self.on_gpu = interval.on_gpu
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def device_time_total(self) -> float:
        return self.cpu_time_total if self.on_gpu else 0.0

    @property
    def self_device_time_total(self) -> float:
        return self.self_cpu_time_total if self.on_gpu else 0.0

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total
    device_time = cuda_time = device_time_total

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} cpu_time_total="
            f"{self.cpu_time_total:.3f}us self_cpu_time_total="
            f"{self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """The events of one key summed (torch's ``FunctionEventAvg``): ``count`` calls,
    ``cpu_time_total`` and ``self_cpu_time_total`` their sums, ``cpu_time`` the mean."""

    def __init__(self, key: str, input_shapes=None, stack=None):
        self.key = key
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []

    def add(self, other) -> "FunctionEventAvg":
        """Add an event (or another average) to this one; returns self."""
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    @property
    def name(self) -> str:
        return self.key

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_time = device_time

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total="
            f"{self.cpu_time_total:.3f}us self_cpu_time_total="
            f"{self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of events (torch's ``EventList``), with its summaries and exports."""

    def __init__(self, events=(), metadata=None):
        super().__init__(events)
        self.metadata = metadata if metadata is not None else {}

    @classmethod
    def from_session(cls, session, metadata=None) -> "EventList":
        """The events of a finished recording, in start order, children linked to parents."""
        intervals = sorted(session.intervals, key=lambda i: (i.start, -i.end))  # parents first
        events = [
            FunctionEvent(i, interval, session.start_ns) for i, interval in enumerate(intervals)
        ]
        by_interval = {id(interval): event for interval, event in zip(intervals, events)}
        for interval, event in zip(intervals, events):
            for child in interval.children:
                child_event = by_interval[id(child)]
                child_event.cpu_parent = event
                event.cpu_children.append(child_event)
        for event in reversed(events):  # children (which start later) are summed first
            event.cpu_memory_usage += sum(c.cpu_memory_usage for c in event.cpu_children)
        return cls(events, metadata)

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time: the whole recorded time, once."""
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(
        self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False
    ) -> "EventList":
        """One ``FunctionEventAvg`` per name (and input shapes, and top ``group_by_stack_n``
        stack lines, when asked), in order of first appearance."""
        groups: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            key = [event.key]
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key.append(tuple(event.stack[:group_by_stack_n]))
            key = tuple(key)
            if key not in groups:
                shapes = event.input_shapes if group_by_input_shapes else None
                stack = event.stack[:group_by_stack_n] if group_by_stack_n > 0 else None
                groups[key] = FunctionEventAvg(event.key, shapes, stack)
            groups[key].add(event)
        return EventList(groups.values(), self.metadata)

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one ``FunctionEventAvg`` named "Total"."""
        total = FunctionEventAvg("Total")
        for event in self:
            total.add(event)
        return total

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
        time_unit=None,
    ) -> str:
        """The events as a text table (torch's columns: name, self and total CPU time and
        their shares, mean time, calls; memory and input shapes when recorded), sorted by the
        attribute ``sort_by`` (largest first; None: as recorded), at most ``row_limit`` rows."""
        return _table(
            self,
            sort_by,
            row_limit,
            max_name_column_width,
            max_shapes_column_width,
            header,
            top_level_events_only,
            time_unit,
        )

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON "X" events, times in microseconds),
        which chrome://tracing and Perfetto open; gzipped when ``path`` ends in ``.gz``."""
        pid = os.getpid()
        trace = [
            {
                "ph": "X",
                "cat": _KIND_CATEGORY.get(getattr(e, "kind", "op"), "cpu_op"),
                "name": e.name,
                "pid": pid,
                "tid": e.thread,
                "ts": e.start_us,
                "dur": e.cpu_time_total,
                "args": {"Input Dims": e.input_shapes, "External id": e.id},
            }
            for e in self
            if isinstance(e, FunctionEvent)
        ]
        document = {
            "schemaVersion": 1,
            **self.metadata,
            "traceEvents": trace,
            "displayTimeUnit": "ms",
        }
        text = json.dumps(document)
        if str(path).endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as file:
                file.write(text)
        else:
            with open(path, "w", encoding="utf-8") as file:
                file.write(text)


def _format_time(us: float, unit=None) -> str:
    if unit == "s" or (unit is None and us >= 1e6):
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and us >= 1e3):
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes: float) -> str:
    for size, unit in ((1024**3, "Gb"), (1024**2, "Mb"), (1024, "Kb")):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{int(nbytes)} b"


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


def _table(events, sort_by, row_limit, name_width, shapes_width, header, top_only, unit):
    """torch's profiler table, in its spirit (see ``EventList.table``)."""
    if sort_by is not None and events and not hasattr(events[0], sort_by):
        raise AttributeError(
            f"table: sort_by={sort_by!r} is not an attribute of the events; use e.g. "
            "'cpu_time_total', 'self_cpu_time_total', 'cpu_time', 'count', "
            "'cpu_memory_usage' or 'self_cpu_memory_usage'"
        )
    if top_only:
        events = [e for e in events if getattr(e, "cpu_parent", None) is None]
    rows = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True) if sort_by else events
    rows = rows[:row_limit] if row_limit is not None and row_limit >= 0 else rows
    self_total = sum(e.self_cpu_time_total for e in events)
    device_total = sum(e.self_device_time_total for e in events)
    memory = any(e.cpu_memory_usage for e in events)
    shapes = any(e.input_shapes for e in events)
    width = min(name_width, max([len("Name")] + [len(e.key) for e in rows]))
    columns = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if device_total:
        columns += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    columns += ["CPU Mem", "Self CPU Mem"] if memory else []
    columns.append("# of Calls")
    lines = []
    for e in rows:
        cells = [
            _share(e.self_cpu_time_total, self_total),
            _format_time(e.self_cpu_time_total, unit),
            _share(e.cpu_time_total, self_total),
            _format_time(e.cpu_time_total, unit),
            _format_time(e.cpu_time_total / max(e.count, 1), unit),
        ]
        if device_total:
            cells += [
                _format_time(e.self_device_time_total, unit),
                _share(e.self_device_time_total, device_total),
                _format_time(e.device_time_total, unit),
                _format_time(e.device_time_total / max(e.count, 1), unit),
            ]
        if memory:
            cells += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        name = e.key if len(e.key) <= width else e.key[: width - 3] + "..."
        line = f"{name:>{width}}  " + "  ".join(f"{c:>12}" for c in cells)
        if shapes:
            line += "  " + str(e.input_shapes)[:shapes_width]
        lines.append(line)
    title = f"{'Name':>{width}}  " + "  ".join(f"{c:>12}" for c in columns)
    title += "  Input Shapes" if shapes else ""
    rule = "-" * len(title)
    out = ([header] if header else []) + [rule, title, rule, *lines, rule]
    out.append(f"Self CPU time total: {_format_time(self_total, unit)}")
    if device_total:
        out.append(f"Self CUDA time total: {_format_time(device_total, unit)}")
    return "\n".join(out) + "\n"
