"""torch.utils.benchmark: time a statement (``Timer``), summarise the times (``Measurement``)
and lay several out as a table (``Compare``).

``Timer(stmt, setup, ...)`` wraps Python's ``timeit.Timer``, with torch's differences: the
statement's globals hold ``tricycle`` (as torch's hold ``torch``), the measurement runs on
``num_threads`` CPU threads (1 by default, so that numbers compare across machines; the
setting is put back afterwards), the clock waits for the GPU's queued work before each read
(so a GPU statement is timed to its end), and the results are ``Measurement``s. ``timeit(n)``
warms up and times one block of n runs; ``blocked_autorange`` picks a block size whose clock
overhead is negligible and times blocks until ``min_run_time`` has passed; ``repeat`` and
``autorange`` are refused as torch refuses them (NotImplementedError: use
``blocked_autorange``). ``Measurement.times`` are seconds per run, one per block; ``median``
and the quartiles interpolate linearly between sorted times. ``Compare`` prints one table per
``label``: a row per ``sub_label`` (grouped by thread count), a column per ``description``,
each cell a median in one time unit for the table. torch's C++ and Callgrind timers,
``Fuzzer`` and ``adaptive_autorange`` are left out.
"""

import dataclasses
import math
import textwrap
import time
import timeit as _timeit
from collections.abc import Callable, Iterable

from tricycle import backend, checks
from tricycle.parallel.threads import cpu_threads

__all__ = ["Compare", "Measurement", "TaskSpec", "Timer", "select_unit", "trim_sigfig"]

IQR_WARN_THRESHOLD = 0.1  # an IQR above this share of the median is worth a warning
IQR_GROSS_WARN_THRESHOLD = 0.25  # and above this one, a louder warning
MAX_SIGNIFICANT_FIGURES = 4
MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds: a finer difference is below the clock's resolution
UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


def timer() -> float:
    """Seconds on a monotonic clock, read after the GPU's queued work is done."""
    backend.synchronize("the benchmark timer")
    return time.perf_counter()


def select_unit(t: float) -> tuple[str, float]:
    """The unit in which the time ``t`` (seconds) reads as 1 to 999, and its size in seconds:
    ns, us or ms, else s (below a nanosecond too, as torch's)."""
    thousands = math.floor(math.log10(t) / 3) if t > 0 else 0
    return UNITS[thousands + 3] if -3 <= thousands <= -1 else UNITS[3]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    checks.positive_int("trim_sigfig", "n", n)
    if x == 0:
        return 0.0
    magnitude = math.floor(math.log10(abs(x)))
    return round(x, n - 1 - magnitude)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup, and the labels that place it in a table."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement), with the sub-label after a colon."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + textwrap.indent(
            self.stmt, "  "
        )

    def setup_str(self) -> str:
        """The setup as a line (or an indented block); empty for none."""
        if self.setup in ("", "pass"):
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, environment, description and setup, one per line."""
        parts = [self.title, self.env, self.description, self.setup_str()]
        return "\n".join(part for part in parts if part)


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (numpy's and torch's)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Measurement:
    """The times of one task: ``raw_times`` (seconds per block of ``number_per_run`` runs)
    and their statistics per run. The task's fields (``label``, ``stmt``, ...) read through."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: TaskSpec,
                 metadata: dict | None = None):  # fmt: skip
        checks.positive_int("Measurement", "number_per_run", number_per_run)
        if not raw_times:
            raise ValueError("Measurement: raw_times must hold at least one time, got []")
        self.number_per_run = number_per_run
        self.raw_times = [float(t) for t in raw_times]
        self.task_spec = task_spec
        self.metadata = metadata
        self._sorted = sorted(self.times)

    def __getattr__(self, name: str):
        if name in {field.name for field in dataclasses.fields(TaskSpec)} | {"title"}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return _quantile(self._sorted, 0.5)

    @property
    def mean(self) -> float:
        return sum(self._sorted) / len(self._sorted)

    @property
    def iqr(self) -> float:
        """The interquartile range: the 75th percentile less the 25th."""
        return _quantile(self._sorted, 0.75) - _quantile(self._sorted, 0.25)

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread of the middle half supports (1 to 4)."""
        n = len(self._sorted)
        middle = self._sorted[n // 4 : math.ceil(3 * n / 4)]
        average = sum(middle) / len(middle)
        std = math.sqrt(sum((t - average) ** 2 for t in middle) / len(middle))
        interval = max(1.645 * std / math.sqrt(len(middle)), MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self.median / interval))
        return min(max(figures, 1), MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        return not self.meets_confidence(IQR_WARN_THRESHOLD) and len(self._sorted) >= 4

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        """Whether the IQR is below ``threshold`` times the median."""
        return self.iqr / self.median < threshold

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        n = len(self._sorted)
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines = [f"<{type(self).__module__}.Measurement object at {hex(id(self))}>",
                 self.task_spec.summarize()]  # fmt: skip
        if n > 1:
            low, high = _quantile(self._sorted, 0.25), _quantile(self._sorted, 0.75)
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({low / scale:.2f} to "
                             f"{high / scale:.2f})")  # fmt: skip
            lines.append(
                f"  {n} measurements, {self.number_per_run} runs per measurement, {threads}"
            )
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {threads}")
        if self.has_warnings:
            share = self.iqr / self.median * 100
            why = ("This could indicate system fluctuation." if share < IQR_GROSS_WARN_THRESHOLD
                   * 100 else "This suggests significant environmental influence.")  # fmt: skip
            lines.append(f"  WARNING: Interquartile range is {share:.1f}% of the median "
                         f"measurement.\n           {why}")  # fmt: skip
        return "\n".join(lines)

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list["Measurement"]:
        """One Measurement per task, its times those of every measurement of that task (as
        per-run times, so blocks of different sizes mix); metadata is not carried over."""
        grouped: dict[TaskSpec, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)
        return [Measurement(1, [t for m in group for t in m.times], spec, None)
                for spec, group in grouped.items()]  # fmt: skip


class Timer:
    """torch.utils.benchmark.Timer: times ``stmt`` after ``setup`` with ``globals`` (see the
    module's doc). ``timer`` is the clock (seconds); ``language`` is Python only."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict | None = None,  # noqa: A002
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: str = "python"):  # fmt: skip
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise TypeError(f"Timer: stmt and setup must be str, got {stmt!r} and {setup!r}")
        if str(getattr(language, "name", language)).lower() != "python":
            raise ValueError(f"Timer: language must be 'python' (tricycle has no C++ timer), "
                             f"got {language!r}")  # fmt: skip
        if global_setup:
            raise ValueError(f"Timer: global_setup is C++ only, got {global_setup!r}; move it "
                             "to setup")  # fmt: skip
        checks.positive_int("Timer", "num_threads", num_threads)
        stmt, setup = _dedent(stmt), _dedent(setup)
        namespace = dict(globals or {})
        if "tricycle" not in namespace:
            import tricycle  # noqa: PLC0415 - the package above this module, for the statement

            namespace["tricycle"] = tricycle
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=namespace)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)  # fmt: skip

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # never 0: times are divided by

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up of a hundredth as many, at least 2)."""
        checks.positive_int("Timer.timeit", "number", number)
        with cpu_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("Timer.repeat: see Timer.blocked_autorange")

    def autorange(self, callback=None):
        raise NotImplementedError("Timer.autorange: see Timer.blocked_autorange")

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: grown tenfold until the clock's own cost is under 1e-4 of a block
        that lasts a thousandth of ``min_run_time`` (or a block outlasts it); a warm-up too."""
        overheads = sorted(self._timeit(0) for _ in range(5))
        number = 1
        while number * 10 <= 2**31 - 1:
            taken = self._timeit(number)
            if (overheads[2] / taken <= 1e-4 and taken >= min_run_time / 1000) or (
                taken > min_run_time
            ):
                break
            number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:  # fmt: skip
        """Blocks of a size chosen by a warm-up, timed until ``min_run_time`` seconds have
        passed; ``callback(number, seconds)`` after each block."""
        checks.positive("Timer.blocked_autorange", "min_run_time", min_run_time)
        with cpu_threads(self._task_spec.num_threads):
            number = self._block_size(min_run_time)
            times: list[float] = []
            while sum(times) < min_run_time:
                times.append(self._timeit(number))
                if callback is not None:
                    callback(number, times[-1])
        return Measurement(number, times, self._task_spec)


def _dedent(code: str) -> str:
    """A block of code without its common indent, first empty line or trailing space."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Compare:
    """torch.utils.benchmark.Compare: ``print()`` (or ``str``) lays the Measurements out as
    one table per label (see the module's doc)."""

    def __init__(self, results: list[Measurement]):
        self._results: list[Measurement] = []
        self._trim = False
        self._colorize = False
        self._highlight = False
        self.extend_results(results)

    def extend_results(self, results: Iterable[Measurement]) -> None:
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Compare: expected Measurements, got {type(r).__name__}")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Mark each cell's ratio to the fastest of its row (``rowwise``) or column."""
        self._colorize, self._rowwise = True, rowwise

    def highlight_warnings(self) -> None:
        self._highlight = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        merged = Measurement.merge(self._results)
        labels = list(dict.fromkeys(m.label for m in merged))
        return "\n".join(self._table(label, [m for m in merged if m.label == label])
                         for label in labels)  # fmt: skip

    def _cell(self, m: Measurement | None, scale: float) -> str:
        if m is None:
            return ""
        value = m.median / scale
        text = f"{trim_sigfig(value, m.significant_figures):g}" if self._trim else f"{value:.1f}"
        if self._highlight and m.has_warnings:
            text += f" (! {m.iqr / m.median * 100:.0f}%)"
        return text

    def _table(self, label: str | None, results: list[Measurement]) -> str:
        """One label's table: rows of (threads, sub_label), columns of descriptions."""
        columns = list(dict.fromkeys(m.description for m in results))
        rows = list(dict.fromkeys((m.num_threads, m.sub_label or m.stmt) for m in results))
        unit, scale = select_unit(min(m.median for m in results))
        cells = {(m.num_threads, m.sub_label or m.stmt, m.description): m for m in results}
        body = [[self._cell(cells.get((*row, c)), scale) for c in columns] for row in rows]
        if self._colorize:
            body = self._marked(body, rows, columns, cells)
        names = [row[1] for row in rows]
        name_width = max(9, *(len(n) for n in names)) + 2
        widths = [max(len(str(c or "")), *(len(r[i]) for r in body)) + 4
                  for i, c in enumerate(columns)]  # fmt: skip
        header = " " * name_width + "|" + "|".join(f"{c or '':^{w}}" for c, w in
                                                   zip(columns, widths, strict=True))  # fmt: skip
        width = len(header)
        lines = [f"[{f' {label} ' if label else '':-^{width - 2}}]", header]
        threads = None
        for (n_threads, name), values in zip(rows, body, strict=True):
            if n_threads != threads:
                threads = n_threads
                lines.append(f"{n_threads} threads: ".ljust(width, "-"))
            cells_text = "|".join(f"{v:^{w}}" for v, w in zip(values, widths, strict=True))
            lines.append(f"{name:>{name_width - 2}}  |{cells_text}")
        words = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}
        lines += ["", f"Times are in {words[unit]} ({unit}).", ""]
        return "\n".join(lines)

    def _marked(self, body, rows, columns, cells):
        """Each cell with its median's ratio to the fastest of its row or column."""
        medians = [[getattr(cells.get((*row, c)), "median", None) for c in columns]
                   for row in rows]  # fmt: skip
        marked = [list(r) for r in body]
        for i, row in enumerate(medians):
            for j, value in enumerate(row):
                group = row if self._rowwise else [r[j] for r in medians]
                best = min(v for v in group if v is not None)
                if value is not None and value > best:
                    marked[i][j] += f" (x{value / best:.2f})"
        return marked
