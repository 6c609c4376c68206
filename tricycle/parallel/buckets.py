"""Gradients averaged over the ranks in buckets, during backward: ``DataParallel``.

As in PyTorch's DDP, gradients are averaged in flat buckets of about ``bucket_bytes``. A
bucket's all-reduce starts as soon as its last gradient is final
(``Tensor.register_post_accumulate_grad_hook``), while backward goes on, and buckets start
in the same order on every rank, as collectives must.

**Bucket order.** Parameters are first planned in the reverse of their order in the model
(about the order in which backward finishes their gradients). The first synchronised
backward records the order the gradients really became final; its ``finish`` plans the
buckets again in that order (rank 0's, the same on every rank), so no bucket waits for a
parameter that backward finishes late. A bucket closes once it holds ``bucket_bytes``, the
first once it holds ``first_bucket_bytes`` (smaller: its all-reduce starts early in
backward), as DDP's do.

**Where gradients live.** After ``finish`` every ``.grad`` is a view of its bucket (nothing
is copied out). By default (``gradient_as_bucket_view``, which the engine supports through
``Tensor.grad_buffer``) backward accumulates each leaf's gradient straight into its slice of
the bucket, so the bucket is filled by backward itself and the hook copies nothing; with
``gradient_as_bucket_view=False`` backward makes each gradient as a fresh array and the hook
copies it into the bucket.

**On the wire.** The all-reduce averages in the gradients' dtype (on GPUs the 1/N is in
NCCL's kernel, ``ncclAvg``: no pass of its own); ``reduce_dtype`` (float16 or
bfloat16) sends a cast copy of each bucket instead, half the bytes, and casts the mean back
into the bucket, so gradients and their accumulation stay in float32 (DDP's bf16 compression
hook does the same).

**Progress.** MPICH moves a non-blocking all-reduce along only inside MPI calls, so every
gradient hook tests the host requests in flight (MPICH's progress thread,
``MPIR_CVAR_ASYNC_PROGRESS=1``, overlaps too, but spins on a core of its own). On a GPU each
all-reduce runs on NCCL's stream, forked from the compute stream by an event where its
bucket is full and joined back by another where ``finish`` needs the sums: the host never
waits, nor queries an event, inside backward, and the same calls record the fork and the
join into a CUDA graph being captured (``tricycle.apps.cuda_graph``).
"""

from contextlib import contextmanager

import numpy as np

from tricycle import backend, checks
from tricycle.optimisers import named_parameters
from tricycle.parallel.engines import DistributedError
from tricycle.tensor import Tensor

# the bucket size by where the gradients are: NCCL's fixed cost per all-reduce favours DDP's
# 25 MiB; MPI on the host moves a request along only inside MPI calls (the hooks' tests), and
# smaller buckets give it more of them (benchmarks/README.md has both measurements)
DEFAULT_BUCKET_BYTES = 4 << 20
DEFAULT_GPU_BUCKET_BYTES = 25 << 20
DEFAULT_FIRST_BUCKET_BYTES = 1 << 20
# an engine that accumulates gradients into assigned buffers (see the module's docstring)
ENGINE_FILLS_GRAD_BUFFERS = hasattr(Tensor, "grad_buffer")


class _Bucket:
    """Parameters whose gradients are averaged together, in one flat buffer."""

    def __init__(self, index: int, params: list, reduce_dtype=None):
        self.index, self.params = index, params
        self.offsets, size = [], 0
        for p in params:
            self.offsets.append(size)
            size += p.size
        self.size, self.dtype = size, params[0].dtype
        self.reduce_dtype = None if reduce_dtype == self.dtype else reduce_dtype
        self.buffer = None  # made on the gradients' device at first use
        # each parameter's slice of the buffer, in its shape (made with the buffer: slicing
        # a GPU array costs the host microseconds, for every parameter at every step)
        self.views: list = []
        self.wire = None  # the cast copy sent instead, with a reduce_dtype
        self.filled: set[int] = set()  # ids of the parameters whose gradient is in
        self.request = None  # the all-reduce in flight

    def ensure_buffer(self, like) -> bool:
        """A buffer on ``like``'s device (the model may have moved since the last step);
        True if it was made now."""
        if self.buffer is not None and backend.device_of(self.buffer) == backend.device_of(like):
            return False
        self.buffer = backend.array_module(like).zeros(self.size, dtype=self.dtype)
        self.views = [
            self.buffer[offset : offset + p.size].reshape(p.shape)
            for offset, p in zip(self.offsets, self.params)
        ]
        return True

    @property
    def full(self) -> bool:
        return len(self.filled) == len(self.params)

    def start(self, world):
        """Start averaging this bucket over the ranks (its cast copy, with a reduce_dtype)."""
        if self.reduce_dtype is None:
            self.request = world.start_all_reduce(self.buffer, mean=True)
        else:
            self.wire = self.buffer.astype(self.reduce_dtype)
            self.request = world.start_all_reduce(self.wire, mean=True)

    def land(self, world) -> None:
        """Wait for the all-reduce; the mean is then in the buffer."""
        world.wait(self.request, f"the all-reduce of gradient bucket {self.index} "
                                 f"({self.nbytes} bytes)")  # fmt: skip
        if self.wire is not None:
            self.buffer[...] = self.wire  # cast back: float32 from here on
            self.wire = None
        self.request = None

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.reduce_dtype or self.dtype).itemsize


class DataParallel:
    """Averages the gradients of ``parameters`` over the ranks of ``world``, during backward.

    Args:
        parameters: a Layer, (name, Tensor) pairs or Tensors: every parameter must be the
            same (same shapes, same order) on every rank.
        world: the World (``init()``).
        bucket_bytes: gradients are reduced in flat buckets of about this size; a bucket's
            all-reduce starts as soon as its gradients are final. Smaller buckets start
            sooner; larger ones pay the per-call cost less often. Default: 25 MiB for
            parameters on a GPU (DDP's), 4 MiB on the host.
        first_bucket_bytes: the size at which the first bucket (the first gradients
            backward finishes) closes, smaller so that communication starts early.
        reduce_dtype: None (the gradients' own dtype), or a narrower float dtype (float16,
            bfloat16) to send each bucket in; gradients stay in their dtype.
        reorder: plan the buckets again after the first backward, in the order in which its
            gradients became final.
        gradient_as_bucket_view: let backward accumulate each gradient straight into its
            bucket (needs an engine with ``Tensor.grad_buffer``; default: where it has one).
        reduce_alone: in a world of one process the mean over the ranks is each gradient
            itself, so by default nothing is copied or sent (the one-process run pays
            nothing for the shared code path); True reduces through the engine anyway (to
            check it, or to time it).

    After a ``backward()`` call ``finish()``: it waits for the buckets and sets every
    parameter's ``.grad`` to the mean over the ranks (a view into a bucket: it stays valid
    until the next ``finish``). With gradient accumulation, run the backward passes of all
    micro-steps but the last inside ``no_sync()``: their gradients add up locally and only
    the last is reduced. A parameter that got no gradient on a rank counts as zero there.
    """

    @checks.arguments(
        bucket_bytes=checks.optional(checks.positive_int),
        first_bucket_bytes=checks.positive_int,
        reorder=checks.boolean,
        gradient_as_bucket_view=checks.optional(checks.boolean),
        reduce_alone=checks.boolean,
    )
    def __init__(
        self,
        parameters,
        world,
        bucket_bytes: int | None = None,
        first_bucket_bytes: int = DEFAULT_FIRST_BUCKET_BYTES,
        reduce_dtype=None,
        reorder: bool = True,
        gradient_as_bucket_view: bool | None = None,
        reduce_alone: bool = False,
    ):
        self.world, self.syncing = world, True
        if gradient_as_bucket_view is None:
            gradient_as_bucket_view = ENGINE_FILLS_GRAD_BUFFERS
        if gradient_as_bucket_view and not ENGINE_FILLS_GRAD_BUFFERS:
            raise DistributedError(
                "DataParallel: gradient_as_bucket_view needs an engine that accumulates "
                "gradients into Tensor.grad_buffer; this tricycle's does not"
            )
        self.as_view = gradient_as_bucket_view
        reducing = world.world_size > 1 or reduce_alone
        params = [p for _, p in named_parameters(parameters) if p.requires_grad] if reducing else []
        if bucket_bytes is None:
            on_gpu = bool(params) and backend.device_of(params[0].array) != "cpu"
            bucket_bytes = DEFAULT_GPU_BUCKET_BYTES if on_gpu else DEFAULT_BUCKET_BYTES
        self.sizes = (first_bucket_bytes, bucket_bytes)
        self.reduce_dtype = None if reduce_dtype is None else np.dtype(reduce_dtype)
        if self.reduce_dtype is not None and self.reduce_dtype.itemsize != 2:
            raise DistributedError(
                f"DataParallel: reduce_dtype must be float16 or bfloat16, got {reduce_dtype}"
            )
        self._plan(params[::-1])  # gradients finish about backwards
        self._order: list | None = [] if reorder and params else None  # the first backward's
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

    def _plan(self, params: list) -> None:
        self.buckets = _plan_buckets(params, *self.sizes, self.reduce_dtype)
        self._where = {id(p): (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        self._next = 0  # the next bucket to start: they start in order on every rank
        if self.as_view:  # backward accumulates into the buckets (on the model's device)
            for bucket in self.buckets:
                bucket.ensure_buffer(bucket.params[0].array)
                for p, view in zip(bucket.params, bucket.views):
                    p.grad_buffer = view

    @contextmanager
    def no_sync(self):
        """Backward passes in this block keep their gradients local (they accumulate in
        ``.grad``): the micro-steps of gradient accumulation before the last."""
        previous, self.syncing = self.syncing, False
        try:
            yield
        finally:
            self.syncing = previous

    def _on_grad(self, param: Tensor) -> None:
        """A parameter's gradient is final: have it in its bucket, start every bucket that
        is full and next in line, and let MPI progress."""
        if not self.syncing:
            return
        bucket, i = self._where[id(param)]
        if bucket.request is not None:
            raise DistributedError(
                "DataParallel: a second backward pass before finish(); call finish() after "
                "each backward, or run all micro-steps but the last inside no_sync()"
            )
        if self._order is not None:
            self._order.append(param)
        if not self.as_view:
            grad = param.grad.array
            bucket.ensure_buffer(grad)
            bucket.views[i][...] = grad
        bucket.filled.add(id(param))
        if bucket.full:
            self._start_ready()
        if self._next and self.buckets[0].request.needs_progress:  # MPI's, on the host
            self._progress()

    def _start_ready(self) -> None:
        while self._next < len(self.buckets):
            bucket = self.buckets[self._next]
            if not bucket.full:
                return
            bucket.start(self.world)  # the mean: 1/N in the collective's own kernel
            self._next += 1

    def _progress(self) -> None:
        """Test the oldest unfinished all-reduce: MPICH advances them inside MPI calls."""
        for bucket in self.buckets[: self._next]:
            if not bucket.request.test():
                return

    def finish(self) -> None:
        """Wait for every bucket's all-reduce and set each parameter's ``.grad`` to its mean
        over the ranks. Gradients that never arrived in this backward (a parameter unused
        here, or kept from ``no_sync`` micro-steps) are taken as they are, or as zeros."""
        if not self.syncing:
            raise DistributedError("DataParallel.finish() inside no_sync(): nothing to reduce")
        for bucket in self.buckets[self._next :]:
            for i, param in enumerate(bucket.params):
                if id(param) in bucket.filled:
                    continue
                if param.grad is not None:
                    bucket.ensure_buffer(param.grad.array)
                    bucket.views[i][...] = param.grad.array
                else:
                    bucket.ensure_buffer(param.array)
                    bucket.views[i][...] = 0
                bucket.filled.add(id(param))
        self._start_ready()
        for bucket in self.buckets:
            bucket.land(self.world)
            for param, view in zip(bucket.params, bucket.views):
                if param.grad is None or param.grad.array is not view:  # (as_view: it is)
                    param.grad = Tensor(view, requires_grad=False)
            bucket.filled.clear()
        self._next = 0
        if self._order:
            self._reorder()

    def _reorder(self) -> None:
        """Plan the buckets in the order the first backward finished its gradients (rank
        0's: every rank must start the same buckets in the same order), keeping the
        gradients just reduced."""
        order, self._order = self._order, None
        position = {id(p): k for k, p in enumerate(order)}
        params = [p for b in self.buckets for p in b.params]
        params.sort(key=lambda p: position.get(id(p), len(order)))  # unused ones last
        mine = [position.get(id(p), -1) for p in params]
        if self.world.broadcast_object(mine) != mine:
            raise DistributedError(
                "DataParallel: the ranks' backward passes finished their gradients in "
                "different orders; keep the model's code the same on every rank"
            )
        if [id(p) for p in params] == [id(p) for b in self.buckets for p in b.params]:
            return
        grads = [p.grad for p in params]
        self._plan(params)
        for p, grad in zip(params, grads):  # into the new buckets: still valid until the next
            bucket, i = self._where[id(p)]
            bucket.ensure_buffer(grad.array)
            bucket.views[i][...] = grad.array
            p.grad = Tensor(bucket.views[i], requires_grad=False)

    def abandon(self) -> None:
        """Forget a step that will not be finished (a CUDA graph capture that failed): no
        bucket is filled or in flight."""
        for bucket in self.buckets:
            bucket.filled.clear()
            bucket.request = bucket.wire = None
        self._next = 0

    def remove(self) -> None:
        """Stop reducing: unregister the gradient hooks."""
        for handle in self._hooks:
            handle.remove()
        self._hooks = []


def _plan_buckets(
    params: list, first_bytes: int, bucket_bytes: int, reduce_dtype=None
) -> list[_Bucket]:
    """Consecutive parameters of one dtype, a bucket closed as soon as it holds
    ``first_bytes`` (the first bucket; at most ``bucket_bytes``) or ``bucket_bytes`` (the
    others), as PyTorch's DDP plans them: a large parameter joins the small ones before it
    (a bias, a norm's scales) rather than leave them a bucket of their own, since every
    all-reduce has a fixed cost whatever its size."""
    groups, group, size = [], [], 0
    for p in params:
        if group and p.dtype != group[0].dtype:
            groups.append(group)
            group, size = [], 0
        group.append(p)
        size += p.size * p.dtype.itemsize
        if size >= (min(first_bytes, bucket_bytes) if not groups else bucket_bytes):
            groups.append(group)
            group, size = [], 0
    if group:
        groups.append(group)
    return [_Bucket(i, g, reduce_dtype) for i, g in enumerate(groups)]
