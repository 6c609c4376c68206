"""torch.cuda's CUDA graphs on tricycle's capture machinery: ``CUDAGraph``, the ``graph``
context, ``graph_pool_handle``, ``is_current_stream_capturing`` and
``make_graphed_callables`` (reached as ``tricycle.cuda.<name>``). torch's whole-network
example runs as written::

    g = tricycle.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with tricycle.cuda.graph(g):
        static_y_pred = model(static_input)
        static_loss = loss_fn(static_y_pred, static_target)
        static_loss.backward()
        optimizer.step()
    for data, target in batches:
        static_input.copy_(data)       # new data into the graph's input tensors
        static_target.copy_(target)
        g.replay()                     # static_loss, .grad and the parameters: rewritten

torch's rules hold: the block's kernels are recorded, not run (the first ``replay`` runs
them); a replay repeats them on the same memory, so inputs are tensors that stay in place
and new data is copied into them, and outputs (the tensors the block made, the gradients it
left in ``.grad``) are rewritten in place by every replay; the block's memory comes from the
graph's own pool (``graph_pool_handle()`` or another graph's ``pool()`` shares one between
graphs replayed in the order they were captured); warm the code up eagerly first (a few
iterations: kernels compile, optimiser state is made), as torch's example does on a side
stream (tricycle's ordering needs no side stream: any stream works).

tricycle's own rules, where they differ:

- Host work an op does each step is redone before every replay (``tricycle.backends.cuda
  .capture``'s hooks): Adam's and AdamW's step counts and bias corrections (their fused
  update: torch needs ``capturable=True`` for this, tricycle needs nothing), a dropout
  mask's seed (fresh masks at every replay, as torch's). Host work that a replay could not
  redo raises ``CaptureError`` (a RuntimeError) out of the block, and so does any op that
  makes the host wait (``.item()``, a read-back, boolean indexing) or copies from host
  memory (a tensor made from a list or a numpy array inside the block: make it before).
  SGD's learning rate is read when captured, as torch's float learning rate is.
- The capture mode is always CUDA's "relaxed" one: the graph's memory pool may call
  cudaMalloc while the block is recorded, which the "global" and "thread_local" modes
  forbid (``capture_error_mode`` is checked, and says only that a mode was named).
- ``debug_dump`` and the raw graph handles are refused: cupy keeps the graph.

Without a GPU every name raises torch's RuntimeError for a machine without CUDA. This module
is an application: it imports the CUDA backend's capture machinery, which only the
applications and the parallel layer may.
"""

from tricycle import amp, backend, checks
from tricycle.autograd import grad as autograd_grad
from tricycle.autograd_function import Function
from tricycle.backends.cuda import capture
from tricycle.graph import no_grad
from tricycle.module import Layer
from tricycle.tensor import Tensor

CaptureError = capture.CaptureError

_DEFAULT_STREAMS = (0, 1, 2)  # the legacy, per-thread and null streams: none can be captured


def _cupy(op: str):
    """cupy, or torch's RuntimeError on a machine without CUDA."""
    if not backend.cupy_available():
        raise RuntimeError(
            f"tricycle.cuda.{op}: CUDA graphs need a CUDA GPU, and none is available (cupy is "
            "not installed or sees no device); torch raises the same on a machine without CUDA"
        )
    return backend.cupy()


def _mode(op: str, capture_error_mode: str) -> int:
    if capture_error_mode not in capture.CAPTURE_MODES:
        raise RuntimeError(
            f"{op}: capture_error_mode must be one of {sorted(capture.CAPTURE_MODES)}, got "
            f"{capture_error_mode!r}"
        )
    return capture.CAPTURE_MODES["relaxed"]  # the pool may cudaMalloc (see the module doc)


def _stream(op: str, stream):
    """The cupy stream to capture on: ``stream`` (cupy's, or any object with torch's
    ``cuda_stream`` address), None for a fresh one."""
    if stream is None or hasattr(stream, "begin_capture"):
        return stream
    if isinstance(getattr(stream, "cuda_stream", None), int):
        return backend.cupy().cuda.ExternalStream(stream.cuda_stream)
    raise TypeError(f"{op}: stream must be a CUDA stream, got {type(stream).__name__}")


class GraphPool:
    """The opaque handle of a graph's memory pool (torch's ``graph_pool_handle()``): graphs
    captured with one handle share its memory."""

    def __init__(self):
        self.memory = _cupy("graph_pool_handle").cuda.MemoryPool()

    def __repr__(self) -> str:
        return f"GraphPool(used_bytes={self.memory.used_bytes()})"


def graph_pool_handle() -> GraphPool:
    """A new memory pool for graphs to share (pass it as ``pool=``)."""
    return GraphPool()


def is_current_stream_capturing() -> bool:
    """Whether this thread is recording a CUDA graph (tricycle captures on the stream it makes
    current for the block)."""
    _cupy("is_current_stream_capturing")
    return capture.capturing()


class CUDAGraph:
    """torch.cuda.CUDAGraph: one recorded graph; ``replay()`` launches it on the current
    stream. Captured by the ``graph`` context (or ``capture_begin`` / ``capture_end`` around
    the work, on a stream other than the default one); ``reset()`` drops it."""

    def __init__(self, keep_graph: bool = False):
        _cupy("CUDAGraph")
        checks.boolean("CUDAGraph", "keep_graph", keep_graph)
        self.keep_graph = keep_graph
        self._capture: capture.Capture | None = None
        self._graph = self._pool = self._recording = None
        self._replays = 0

    def capture_begin(self, pool=None, capture_error_mode: str = "global",
                      check_input_liveness: bool = False) -> None:  # fmt: skip
        """Start recording this thread's kernels into this graph, on the current stream (a
        fresh one where the current one is a default stream, which cannot be captured).
        ``check_input_liveness`` is accepted and does nothing (the graph keeps what it reads)."""
        checks.boolean("CUDAGraph.capture_begin", "check_input_liveness", check_input_liveness)
        stream = backend.cupy().cuda.get_current_stream()
        self._begin(pool, capture_error_mode, None if stream.ptr in _DEFAULT_STREAMS else stream)

    def _begin(self, pool, capture_error_mode: str, stream) -> None:
        if self._capture is not None or self._graph is not None:
            raise RuntimeError(
                "CUDAGraph.capture_begin: this graph is being or has been captured; reset() it "
                "first, or make a new CUDAGraph"
            )
        if pool is not None and not isinstance(pool, GraphPool):
            raise TypeError(
                "CUDAGraph.capture_begin: pool must come from tricycle.cuda.graph_pool_handle() "
                f"or another graph's pool(), got {type(pool).__name__}"
            )
        mode = _mode("CUDAGraph.capture_begin", capture_error_mode)
        pool = GraphPool() if pool is None else pool
        self._capture = capture.Capture(pool.memory, stream, mode)
        self._pool = pool

    def capture_end(self) -> None:
        """End the recording: the graph is ready to ``replay`` (its first replay runs the
        recorded work). An op the capture could not record raises here."""
        if self._capture is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture was begun (capture_begin)")
        begun, self._capture = self._capture, None
        try:
            self._graph = begun.end()
        except BaseException:
            self._pool = None
            raise
        self._recording, self._replays = begun.recording, 0

    def _abandon(self) -> None:
        """End a capture whose work raised: nothing is kept (the work's error is the one
        raised, not the capture's)."""
        begun, self._capture, self._pool = self._capture, None, None
        if begun is not None:
            try:
                begun.end()
            except Exception:  # the capture was invalidated by the work's failure
                pass

    def instantiate(self) -> None:
        """Nothing: cupy instantiates the graph when the capture ends (``keep_graph`` or not)."""
        self._captured("instantiate")

    def replay(self) -> None:
        """Run the recorded work once more, on the current stream, after the host work it
        holds (step counts, seeds) has been redone (not before the first replay: the
        capture did it)."""
        self._captured("replay")
        if self._replays:
            self._recording.refresh()
        self._replays += 1
        self._graph.launch(backend.cupy().cuda.get_current_stream())

    def reset(self) -> None:
        """Drop the graph and its memory (the tensors the block made keep theirs)."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph.reset: a capture is under way (capture_end first)")
        self._graph = self._pool = self._recording = None

    def pool(self) -> GraphPool:
        """The handle of this graph's memory pool, to share with graphs captured after it."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: called without a preceding successful capture")
        return self._pool

    def enable_debug_mode(self) -> None:
        """Refused: see ``debug_dump``."""
        self.debug_dump("")

    def debug_dump(self, debug_path: str) -> None:
        """Refused: cupy gives no access to the recorded graph's nodes to dump."""
        raise RuntimeError(
            "CUDAGraph.debug_dump: tricycle cannot dump a graph's nodes (cupy holds the graph)"
        )

    def _captured(self, op: str) -> None:
        if self._graph is None:
            raise RuntimeError(
                f"CUDAGraph.{op}: the graph was not captured (use tricycle.cuda.graph, or "
                "capture_begin and capture_end)"
            )


class graph:  # noqa: N801 - torch's name
    """torch.cuda.graph: ``with graph(cuda_graph):`` records the block's work into
    ``cuda_graph`` instead of running it, on ``stream`` (a fresh side stream by default),
    from ``pool``'s memory (the graph's own by default). The GPU is synchronised first,
    as torch's does. An error inside the block ends the capture and keeps no graph."""

    def __init__(self, cuda_graph: CUDAGraph, pool=None, stream=None,
                 capture_error_mode: str = "global", enable_annotations: bool = False,
                 check_input_liveness: bool = False):  # fmt: skip
        _cupy("graph")
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a CUDAGraph, got {type(cuda_graph).__name__}")
        _mode("graph", capture_error_mode)
        checks.boolean("graph", "enable_annotations", enable_annotations)
        checks.boolean("graph", "check_input_liveness", check_input_liveness)
        self.cuda_graph, self.pool = cuda_graph, pool
        self.capture_stream = _stream("graph", stream)
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        backend.cupy().cuda.Device().synchronize()
        self.cuda_graph._begin(self.pool, self.capture_error_mode, self.capture_stream)

    def __exit__(self, kind, error, traceback) -> None:
        if error is None:
            self.cuda_graph.capture_end()
        else:
            self.cuda_graph._abandon()  # the block's own error propagates


# ---------------------------------------------------------------------- make_graphed_callables
def _leaves(op: str, what: str, value) -> tuple:
    """The Tensors of ``value`` (a Tensor, or tuples and lists of them), flattened."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, tuple | list):
        return tuple(t for v in value for t in _leaves(op, what, v))
    raise AssertionError(
        f"{op}: in the beta API, {what} must contain only Tensors, got {type(value).__name__}"
    )


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):  # fmt: skip
    """torch.cuda.make_graphed_callables: each callable (a Layer or a function of Tensors)
    with its forward and its backward each recorded as a CUDA graph, from ``sample_args``
    (one tuple of Tensors per callable; one tuple, for one callable). The returned function
    (or the Layer, whose ``forward`` is replaced while it is in the training mode it had
    here) copies its Tensor arguments into the sample ones (same shapes and dtypes) and
    replays the forward graph; its outputs' backward replays the backward graph, and the
    Layer's parameters get their gradients as usual. ``num_warmup_iters`` eager forwards
    and backwards run first. All graphs share one memory pool (``pool``), captured in the
    order they run: forwards first to last, backwards last to first."""
    op = "make_graphed_callables"
    checks.non_negative_int(op, "num_warmup_iters", num_warmup_iters)
    checks.boolean(op, "allow_unused_input", allow_unused_input)
    if amp.is_autocast_enabled() and amp.is_autocast_cache_enabled():
        raise RuntimeError(
            "make_graphed_callables does not support the autocast caching. Please set "
            "`cache_enabled=False`."
        )
    one = not isinstance(callables, tuple)
    callables, sample_args = ((callables,), (sample_args,)) if one else (callables, sample_args)
    if len(callables) != len(sample_args):
        raise ValueError(f"{op}: {len(callables)} callables but {len(sample_args)} sample_args")
    surfaces, user_counts, params = [], [], []
    for c, args in zip(callables, sample_args):
        # (torch also refuses buffers that require grad: a tricycle one is a parameter)
        if isinstance(c, Layer):
            if vars(c).get("_hooks"):
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed."
                )
        user = _leaves(op, "sample_args for each callable", args)
        own = tuple(c.parameters()) if isinstance(c, Layer) else ()
        surfaces.append(user + own)
        user_counts.append(len(user))
        params.append(own)
    _cupy(op)
    pool = graph_pool_handle() if pool is None else pool
    for c, args, surface in zip(callables, sample_args, surfaces):
        for _ in range(num_warmup_iters):  # kernels compile, tables and handles are made
            outputs = [o for o in _leaves(op, "outputs", c(*args)) if o.requires_grad]
            if outputs:
                autograd_grad(outputs, [x for x in surface if x.requires_grad],
                              grad_outputs=[o.xp.zeros_like(o.array) for o in outputs],
                              allow_unused=allow_unused_input)  # fmt: skip
    backend.cupy().cuda.Device().synchronize()
    forwards, outputs, singles = [], [], []
    for c, args in zip(callables, sample_args):
        forwards.append(CUDAGraph())
        with graph(forwards[-1], pool=pool):
            out = c(*args)
        outputs.append(_leaves(op, "outputs", out))
        singles.append(isinstance(out, Tensor))
    backwards, grad_outputs, grad_inputs = [None] * len(callables), [None] * len(callables), []
    for i in reversed(range(len(callables))):
        backwards[i], grad_outputs[i], grads = _capture_backward(
            outputs[i], surfaces[i], pool, allow_unused_input
        )
        grad_inputs.insert(0, grads)
    graphed = []
    for i, c in enumerate(callables):
        run = _Graphed(forwards[i], backwards[i], surfaces[i], user_counts[i], outputs[i],
                       grad_outputs[i], grad_inputs[i], singles[i])  # fmt: skip
        if isinstance(c, Layer):
            c.forward = _graphed_forward(c, c.training, run, c.forward)
            graphed.append(c)
        else:
            graphed.append(run)
    return graphed[0] if one else tuple(graphed)


def _capture_backward(outputs: tuple, surface: tuple, pool, allow_unused: bool) -> tuple:
    """(the backward graph, or None where nothing needs a gradient; the gradients of the
    outputs it reads, zeros now; the gradients it writes, one per input of ``surface``, None
    for an input that needs none)."""
    seeds = tuple(o.xp.zeros_like(o.array) if o.requires_grad else None for o in outputs)
    wanted = [o for o in outputs if o.requires_grad]
    inputs = [x for x in surface if x.requires_grad]
    if not (wanted and inputs):
        return None, seeds, (None,) * len(surface)
    backward = CUDAGraph()
    with graph(backward, pool=pool):  # retain_graph: the forward's graph serves every pass
        grads = autograd_grad(wanted, inputs, grad_outputs=[s for s in seeds if s is not None],
                              retain_graph=True, allow_unused=allow_unused)  # fmt: skip
    grads = iter(grads)
    return backward, seeds, tuple(next(grads) if x.requires_grad else None for x in surface)


def _graphed_forward(layer: Layer, training: bool, run, eager):
    def forward(*args):
        """The graphed forward in the training mode it was captured in, else the eager one."""
        return run(*args) if layer.training == training else eager(*args)

    return forward


class _Graphed:
    """One graphed callable: a call is an autograd Function whose forward replays the forward
    graph on the static inputs and whose backward replays the backward graph."""

    def __init__(self, forward, backward, surface, user_count, outputs, grad_outputs,
                 grad_inputs, single):  # fmt: skip
        self.forward_graph, self.backward_graph = forward, backward
        self.surface, self.user_count = surface, user_count
        self.outputs, self.grad_outputs, self.grad_inputs = outputs, grad_outputs, grad_inputs
        self.single = single
        run = self

        class Graphed(Function):
            @staticmethod
            def forward(ctx, *inputs):
                return run.replay_forward(inputs)

            @staticmethod
            def backward(ctx, *grads):
                return run.replay_backward(grads)

        self.function = Graphed

    def __call__(self, *args):
        user = _leaves("make_graphed_callables", "the arguments", args)
        if len(user) != self.user_count:
            raise TypeError(
                f"make_graphed_callables: the graphed callable takes {self.user_count} "
                f"Tensors (as its sample_args), got {len(user)}"
            )
        out = self.function.apply(*user, *self.surface[self.user_count :])
        return out[0] if self.single else out

    def replay_forward(self, inputs: tuple) -> tuple:
        for i, (static, new) in enumerate(zip(self.surface, inputs[: self.user_count])):
            if new.shape != static.shape or new.dtype != static.dtype:
                raise RuntimeError(
                    f"make_graphed_callables: argument {i} has shape {tuple(new.shape)} and "
                    f"dtype {new.dtype}; the graph was captured with {tuple(static.shape)} and "
                    f"{static.dtype}"
                )
            if new.array is not static.array:
                static.array[...] = new.array  # into the graph's input, on the stream
        self.forward_graph.replay()
        return tuple(o.detach() for o in self.outputs)

    def replay_backward(self, grads: tuple) -> tuple:
        if self.backward_graph is None:
            return (None,) * len(self.surface)
        with no_grad():
            for static, grad in zip(self.grad_outputs, grads):
                if static is None:
                    continue
                if grad is None:
                    static[...] = 0
                elif grad.array is not static:
                    static[...] = grad.array
        self.backward_graph.replay()
        # copies: the next replay rewrites the graph's gradients, and a .grad must keep them
        return tuple(None if g is None else g.array.copy() for g in self.grad_inputs)


__all__ = [
    "CUDAGraph",
    "CaptureError",
    "GraphPool",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
]
