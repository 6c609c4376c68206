"""torch.cuda's streams and events, on cupy's: a ``Stream`` is a queue of GPU work, an
``Event`` a mark in one that others (or the host) can wait for or time::

    side = tricycle.cuda.Stream()
    side.wait_stream(tricycle.cuda.current_stream())
    with tricycle.cuda.stream(side):
        y = model(x)                      # queued on ``side``
    tricycle.cuda.current_stream().wait_stream(side)

tricycle's ops launch on cupy's current stream (cupy's own kernels and tricycle's CUDA C
kernels by cupy's default, cuBLAS because ``backends.cuda.gemm`` binds its handle to it before
each product), so ``tricycle.cuda.stream(s)`` moves them onto ``s``. A ``Stream`` holds cupy's
stream (``.cupy``), and ``cuda_stream`` is its handle, as torch's. Without a GPU, ``Stream``,
``Event``, ``current_stream`` and ``default_stream`` raise as torch's do there, and
``stream(None)``/``set_stream(None)`` do nothing, as torch's.
"""

from tricycle import backend
from tricycle.cuda.devices import cupy, index


def _priority_range(cp) -> tuple[int, int]:
    """(least, greatest) stream priority of the current GPU: CUDA's
    ``cudaDeviceGetStreamPriorityRange`` where cupy's runtime has it, else CUDA's range on
    every GPU since Volta, (0, -5) (cupy 14 does not expose the call)."""
    ask = getattr(cp.cuda.runtime, "deviceGetStreamPriorityRange", None)
    return ask() if ask is not None else (0, -5)


class Stream:
    """torch.cuda.Stream(device=None, priority=0): a new stream on GPU ``device`` (the
    current one). A lower ``priority`` runs first (negative: high), as CUDA's; it is clamped
    to the GPU's range, as torch's."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if "_cupy" in kwargs:  # one of cupy's streams, as current_stream() finds it
            self.cupy, self.device_index = kwargs["_cupy"], kwargs["_device"]
            return
        if kwargs:
            raise TypeError(f"tricycle.cuda.Stream: unexpected arguments {sorted(kwargs)}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"tricycle.cuda.Stream: priority must be an int, got {priority!r}")
        cp = cupy("Stream")
        self.device_index = index("Stream", device)
        with cp.cuda.Device(self.device_index):
            least, greatest = _priority_range(cp)
            clamped = max(greatest, min(least, priority))
            self.cupy = cp.cuda.Stream(non_blocking=False, priority=clamped)

    @property
    def device(self):
        """The stream's GPU, a ``tricycle.device``."""
        return backend.device(f"cuda:{self.device_index}")

    @property
    def cuda_stream(self) -> int:
        """The stream's CUDA handle (cudaStream_t as an int; 0 for the default stream)."""
        return int(self.cupy.ptr)

    @property
    def priority(self) -> int:
        """The stream's priority, as CUDA keeps it (cupy's ``Stream.priority``)."""
        return int(getattr(self.cupy, "priority", 0))

    def wait_event(self, event: "Event") -> None:
        """Make the work queued on this stream from now on wait for ``event``."""
        if event.cupy is not None:  # an event never recorded is done: nothing to wait for
            self.cupy.wait_event(event.cupy)

    def wait_stream(self, stream: "Stream") -> None:
        """Make the work queued here from now on wait for all the work queued on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one for None) at this point of the stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """Whether all the work queued on this stream has finished."""
        return bool(self.cupy.done)

    def synchronize(self) -> None:
        """Wait on the host until all the work queued on this stream has finished."""
        self.cupy.synchronize()

    def __enter__(self) -> "Stream":
        self._context = StreamContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        return self._context.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and (self.cuda_stream, self.device_index) == (
            other.cuda_stream,
            other.device_index,
        )

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self) -> str:
        return (
            f"<tricycle.cuda.Stream device=cuda:{self.device_index} "
            f"cuda_stream={self.cuda_stream:#x}>"
        )


class ExternalStream(Stream):
    """torch.cuda.ExternalStream(stream_ptr, device=None): a stream made elsewhere (another
    library's cudaStream_t), used as tricycle's; it is not destroyed here."""

    def __init__(self, stream_ptr: int, device=None):
        cp = cupy("ExternalStream")
        number = index("ExternalStream", device)
        super().__init__(_cupy=cp.cuda.ExternalStream(int(stream_ptr), number), _device=number)


def current_stream(device=None) -> Stream:
    """The stream that GPU ``device``'s work (the current GPU's for None) is queued on now."""
    number = index("current_stream", device)
    cp = backend.cupy()
    return Stream(_cupy=cp.cuda.get_current_stream(number), _device=number)


def default_stream(device=None) -> Stream:
    """GPU ``device``'s default (null) stream, the one work goes to when no other is set."""
    number = index("default_stream", device)
    return Stream(_cupy=backend.cupy().cuda.Stream.null, _device=number)


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` its GPU's current stream; None does nothing, as torch's (prefer the
    ``stream`` context, which puts the one before back)."""
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"tricycle.cuda.set_stream: expected a Stream, got {type(stream).__name__}")
    stream.cupy.use()


class StreamContext:
    """``with tricycle.cuda.StreamContext(s):`` queues the block's GPU work on ``s`` (its GPU
    current meanwhile) and puts the stream and GPU before back after it; None does
    nothing."""

    def __init__(self, stream: Stream | None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"tricycle.cuda.stream: expected a Stream or None, got "
                            f"{type(stream).__name__}")  # fmt: skip
        self.stream, self._saved = stream, None

    def __enter__(self) -> Stream | None:
        if self.stream is None:
            return None
        cp = backend.cupy()
        before = cp.cuda.runtime.getDevice()
        cp.cuda.runtime.setDevice(self.stream.device_index)
        self._saved = (before, cp.cuda.get_current_stream())
        self.stream.cupy.use()
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self._saved is not None:
            before, previous = self._saved
            previous.use()
            backend.cupy().cuda.runtime.setDevice(before)
            self._saved = None
        return False


def stream(stream: Stream | None) -> StreamContext:
    """torch.cuda.stream(s): the ``StreamContext`` of ``s``."""
    return StreamContext(stream)


class Event:
    """torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False): a mark in a
    stream. Made on the GPU at its first ``record``, as torch's; until then it counts as
    done. ``elapsed_time`` needs two timing events, both recorded and done."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False):  # fmt: skip
        cupy("Event")
        if external:
            raise NotImplementedError("tricycle.cuda.Event: external events are not supported")
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        self.cupy = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark this point of ``stream`` (the current stream for None)."""
        cp = backend.cupy()
        stream = current_stream() if stream is None else stream
        if self.cupy is None:
            with cp.cuda.Device(stream.device_index):
                self.cupy = cp.cuda.Event(block=self.blocking,
                                          disable_timing=not self.enable_timing,
                                          interprocess=self.interprocess)  # fmt: skip
        self.cupy.record(stream.cupy)

    def wait(self, stream: Stream | None = None) -> None:
        """Make the work queued on ``stream`` (the current stream) from now wait for this."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the mark has finished (True if never recorded)."""
        return self.cupy is None or bool(self.cupy.done)

    def synchronize(self) -> None:
        """Wait on the host until the work before the mark has finished."""
        if self.cupy is not None:
            self.cupy.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """The milliseconds between this event and ``end_event``, as the GPU timed them."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with "
                               "enable_timing=True")  # fmt: skip
        if self.cupy is None or end_event.cupy is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded first")
        return float(backend.cupy().cuda.get_elapsed_time(self.cupy, end_event.cupy))

    @property
    def cuda_event(self) -> int:
        """The event's CUDA handle (0 before its first record)."""
        return 0 if self.cupy is None else int(self.cupy.ptr)

    def __repr__(self) -> str:
        made = f"{self.cuda_event:#x}" if self.cupy is not None else "uninitialized"
        return f"<tricycle.cuda.Event {made}>"
