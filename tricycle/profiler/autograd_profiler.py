"""torch.autograd.profiler's names on ``tricycle.profiler``: the older ``profile`` (a
context manager whose results are on it: ``function_events``, ``key_averages()``,
``table()``, ``export_chrome_trace()``), ``record_function`` and the event classes.

``use_cuda=True`` (or ``use_device="cuda"``) is ``ProfilerActivity.CUDA``: ops on a GPU wait
for it, so their times include the device's work. ``enabled=False`` records nothing.
"""

import warnings

from tricycle.profiler import recorder
from tricycle.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from tricycle.profiler.record import record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """Record the ops and backward steps run inside the block (torch.autograd.profiler's
    ``profile``; see ``tricycle.profiler``)."""

    def __init__(
        self,
        enabled=True,
        *,
        use_cuda=False,
        use_device=None,
        record_shapes=False,
        with_flops=False,
        profile_memory=False,
        with_stack=False,
        with_modules=False,
        use_kineto=False,
        use_cpu=True,
        experimental_config=None,
        acc_events=False,
        custom_trace_id_callback=None,
    ):
        if use_cuda:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, please use "
                "``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
            use_device = "cuda"
        if use_device not in (None, "cuda"):
            raise ValueError(f"profile: use_device must be None or 'cuda', got {use_device!r}")
        self.enabled, self.use_device = bool(enabled), use_device
        self.record_shapes, self.profile_memory = bool(record_shapes), bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.function_events: EventList | None = None
        self._session = None

    def __enter__(self) -> "profile":
        if self.enabled:
            self._session = recorder.Session(
                self.record_shapes, self.profile_memory, self.with_stack, self.use_device == "cuda"
            )
            recorder.start(self._session)
        return self

    def __exit__(self, *exc) -> None:
        if self._session is not None:
            recorder.stop(self._session)
            self.function_events = EventList.from_session(self._session)
            self._session = None

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError(
                "profile: the profiler has not finished running (its block "
                "has not ended, or it was not enabled)"
            )
        return self.function_events

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(
        self,
        sort_by=None,
        row_limit=100,
        max_src_column_width=75,
        max_name_column_width=55,
        max_shapes_column_width=80,
        header=None,
        top_level_events_only=False,
    ) -> str:
        return self._events().table(
            sort_by,
            row_limit,
            max_src_column_width,
            max_name_column_width,
            max_shapes_column_width,
            header,
            top_level_events_only,
        )

    def total_average(self):
        return self._events().total_average()

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()
