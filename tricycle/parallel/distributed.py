"""Data parallelism on existing engines: MPI between processes, NCCL between GPUs.

Start N copies of a training script with ``mpiexec -n N python train.py``. Each process (a
*rank*) holds the whole model, computes gradients on its own slice of every global batch,
and averages them with the other ranks' before the update, so that every rank takes the same
step::

    world = distributed.init()                       # world size 1 without mpiexec
    model = GPT(config)
    world.broadcast_parameters(model)                # every rank starts from rank 0's weights
    reducer = DataParallel(model, world)             # averages gradients during backward
    for step in range(n_steps):
        loss = loss_fn(targets, model(inputs))       # this rank's slice of the batch
        loss.backward()                              # buckets start reducing as they fill
        reducer.finish()                             # every .grad is the mean over ranks
        model.update(optimiser)
    world.finalize()

**Engines.** MPI (mpi4py, with the ``mpich`` wheel) starts the processes and carries host
arrays; NCCL (``cupy.cuda.nccl``) carries GPU arrays, its unique id handed out over MPI.
Without mpiexec (or without mpi4py) the world is this one process, and the same calls do the
local arithmetic; on a GPU a one-rank NCCL communicator is used all the same. World size 1
is the single-process case, not a branch in the training code.

**Overlap.** As in PyTorch's DDP, gradients are averaged in flat buckets of about
``bucket_bytes``. Parameters fill buckets in the reverse of their order in the model (about
the order backward finishes their gradients); a bucket's all-reduce starts as soon as its
last gradient is final (``Tensor.register_post_accumulate_grad_hook``), while backward goes
on. Buckets start in the same order on every rank, as collectives must. MPICH moves a
non-blocking all-reduce along only inside MPI calls (measured: an all-reduce started before
37 ms of numpy work and waited for after it still took its whole 7 ms inside the wait; with
a ``Test`` every few hundred microseconds the wait was 0), so every gradient hook tests the
requests in flight. MPICH's progress thread (``MPIR_CVAR_ASYNC_PROGRESS=1``) overlaps too, but
spins on a core of its own: it doubled the numpy work's time on a 2-core machine. On a GPU
each all-reduce runs on a stream of its own after an event on the compute stream, and the
compute stream waits for it only when the gradients are used: the host never blocks.

**Failures.** MPI's blocking collectives wait forever for a dead rank. Here every wait is a
non-blocking request tested until a deadline (``timeout``: 600 s, or $TRICYCLE_DIST_TIMEOUT);
past it the rank prints which collective it waited for and aborts the whole job
(``MPI_Abort``). On a GPU a watchdog thread does the same for the collectives in flight,
aborting the NCCL communicator first.
"""

import importlib
import os
import pickle
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager

import numpy as np

from tricycle import backend, checks
from tricycle.optimisers import named_parameters
from tricycle.tensor import Tensor

DEFAULT_TIMEOUT = 600.0  # seconds a rank waits for the others in one collective
DEFAULT_BUCKET_BYTES = 4 << 20
SPIN_SECONDS = 0.1  # a wait tests its request back to back this long, then every millisecond
ABORT_GRACE_SECONDS = 0.5  # between printing why a rank aborts and ending the job
# what launchers (MPICH's hydra, Open MPI, PMIx, MVAPICH) set to the number of processes
_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")


class DistributedError(RuntimeError):
    """A collective could not run: a missing engine, a timeout, or a misuse."""


def launched_size() -> int:
    """How many processes the launcher started, from its environment variables (1 if this
    process was not started by mpiexec)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        if name in os.environ:
            return int(os.environ[name])
    return 1


_world: "World | None" = None


@checks.arguments(timeout=checks.optional(checks.positive), gpu=checks.boolean)
def init(timeout: float | None = None, gpu: bool = False) -> "World":
    """Join the processes that mpiexec started, or be a world of one; returns the World.

    Args:
        timeout: seconds any rank waits for the others in one collective before it aborts
            the job (default $TRICYCLE_DIST_TIMEOUT, else 600).
        gpu: use GPU ``local_rank`` (``cupy.cuda.Device(local_rank).use()``) and NCCL for
            GPU arrays. Call before anything is allocated on a GPU.

    Calling ``init`` again returns the same World (starting NCCL if ``gpu`` asks for it).
    Under mpiexec without mpi4py this raises: N copies that each believed they were alone
    would all train on the same data and write the same files.
    """
    global _world
    if _world is None:
        if timeout is None:
            timeout = float(os.environ.get("TRICYCLE_DIST_TIMEOUT", DEFAULT_TIMEOUT))
        _world = World(_import_mpi(), timeout)
    elif timeout is not None:
        _world.timeout = float(timeout)
    if gpu:
        _world.start_gpu()
    return _world


def _import_mpi():
    """mpi4py's MPI module if this process was started by a launcher (importing it
    initialises MPI), else None."""
    size = launched_size()
    if size == 1:
        return None
    try:
        return importlib.import_module("mpi4py.MPI")
    except (ImportError, RuntimeError) as error:
        raise DistributedError(
            f"distributed: this process is one of {size} started by mpiexec, but mpi4py cannot "
            f"be imported ({error}). Install it with `pip install tricycle-dl[distributed]`."
        ) from error


# ====================================================================== requests
class _Done:
    """A request that completed when it was made (the one-rank engine's)."""

    def test(self) -> bool:
        return True

    def wait(self, world: "World", what: str) -> None:
        pass


class _HostRequest:
    """An MPI request, waited for by testing it until the world's deadline."""

    def __init__(self, request):
        self.request = request

    def test(self) -> bool:
        return self.request.Test()

    def wait(self, world: "World", what: str) -> None:
        request = self.request
        if request.Test():
            return
        start = time.monotonic()
        spin_until, deadline = start + SPIN_SECONDS, start + world.timeout
        while not request.Test():  # MPI moves the data inside Test: keep calling it
            now = time.monotonic()
            if now > deadline:
                world.abort(f"timed out after {world.timeout:g} s waiting for {what}")
            if now > spin_until:  # a rank far behind (writing a checkpoint?): poll gently
                time.sleep(1e-3)


class _DeviceRequest:
    """A GPU collective: ``done`` is recorded on the communication stream after it. Waiting
    makes the current stream wait for it; the host goes on (the watchdog keeps time)."""

    def __init__(self, done):
        self.done = done

    def test(self) -> bool:
        return self.done.done

    def wait(self, world: "World", what: str) -> None:
        backend.cupy().cuda.get_current_stream().wait_event(self.done)


# ====================================================================== engines
class _LocalEngine:
    """The collectives of a world of one process on host arrays: nothing to exchange."""

    def all_reduce_sum(self, array):
        return _Done()

    def broadcast(self, array, root: int):
        return _Done()

    def all_gather(self, send, receive):
        receive[...] = send.reshape(receive.shape)
        return _Done()

    def gather(self, send, receive, counts, root: int):
        receive[: send.size] = send
        return _Done()

    def barrier(self):
        return _Done()


class _MPIEngine:
    """Non-blocking MPI collectives on host (numpy) arrays."""

    def __init__(self, MPI, comm):
        self.MPI, self.comm = MPI, comm

    def all_reduce_sum(self, array):
        return _HostRequest(self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM))

    def broadcast(self, array, root: int):
        return _HostRequest(self.comm.Ibcast(array, root=root))

    def all_gather(self, send, receive):
        return _HostRequest(self.comm.Iallgather(send, receive))

    def gather(self, send, receive, counts, root: int):
        """Rank i's ``send`` (``counts[i]`` bytes) at offset sum(counts[:i]) of root's
        ``receive``."""
        displacements = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
        spec = [receive, list(counts), displacements, self.MPI.BYTE]
        return _HostRequest(self.comm.Igatherv(send, spec, root=root))

    def barrier(self):
        return _HostRequest(self.comm.Ibarrier())


class _NCCLEngine:
    """NCCL collectives on GPU (cupy) arrays, on a stream of their own.

    Each starts after an event recorded on the current (compute) stream, so it sees every
    write made before it, and records an event of its own that a request's ``wait`` makes the
    compute stream wait for.
    """

    def __init__(self, cupy, nccl, communicator, watchdog):
        self.cupy, self.nccl, self.comm = cupy, nccl, communicator
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.watchdog = watchdog
        self.types = {
            np.dtype(np.float16): nccl.NCCL_FLOAT16,
            np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64,
            np.dtype(np.int8): nccl.NCCL_INT8,
            np.dtype(np.uint8): nccl.NCCL_UINT8,
            np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.int64): nccl.NCCL_INT64,
        }

    def _type(self, array) -> int:
        if array.dtype.name == "bfloat16":
            return self.nccl.NCCL_BFLOAT16
        if array.dtype not in self.types:
            raise DistributedError(f"NCCL: no collective for arrays of dtype {array.dtype}")
        return self.types[array.dtype]

    def _run(self, what: str, call) -> _DeviceRequest:
        cuda = self.cupy.cuda
        ready = cuda.Event(disable_timing=True)
        ready.record()  # on the current stream: after the writes this collective reads
        self.stream.wait_event(ready)
        call(self.stream.ptr)
        done = cuda.Event(disable_timing=True)
        done.record(self.stream)
        self.watchdog.watch(done, what)
        return _DeviceRequest(done)

    def all_reduce_sum(self, array):
        ptr, n, kind = array.data.ptr, array.size, self._type(array)
        return self._run(
            f"NCCL all-reduce of {array.nbytes} bytes",
            lambda stream: self.comm.allReduce(ptr, ptr, n, kind, self.nccl.NCCL_SUM, stream),
        )

    def broadcast(self, array, root: int):
        ptr, n, kind = array.data.ptr, array.size, self._type(array)
        return self._run(
            f"NCCL broadcast of {array.nbytes} bytes",
            lambda stream: self.comm.bcast(ptr, n, kind, root, stream),
        )

    def all_gather(self, send, receive):
        n, kind = send.size, self._type(send)
        send_ptr, receive_ptr = send.data.ptr, receive.data.ptr
        return self._run(
            f"NCCL all-gather of {send.nbytes} bytes per rank",
            lambda stream: self.comm.allGather(send_ptr, receive_ptr, n, kind, stream),
        )


class _Watchdog:
    """A daemon thread that aborts the job when a GPU collective has not finished within
    the timeout, or when NCCL reports an error. GPU work is queued, so the host would
    otherwise notice a dead peer only when it next synchronised, and then wait forever."""

    def __init__(self, world: "World"):
        self.world, self.pending = world, deque()  # (deadline, event, what), in launch order
        self.communicator = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tricycle-nccl-watchdog", daemon=True)

    def start(self, communicator) -> None:
        self.communicator = communicator
        self.thread.start()

    def watch(self, event, what: str) -> None:
        self.pending.append((time.monotonic() + self.world.timeout, event, what))

    def _run(self) -> None:
        backend.cupy().cuda.Device(self.world.device).use()  # this thread's CUDA calls
        while not self.stop.wait(min(1.0, self.world.timeout / 10)):
            while self.pending:  # completed in order: the oldest decides
                deadline, event, what = self.pending[0]
                if event.done:
                    self.pending.popleft()
                elif time.monotonic() > deadline:
                    self.world.abort(f"timed out after {self.world.timeout:g} s waiting for {what}")
                else:
                    break
            try:
                self.communicator.check_async_error()
            except Exception as error:  # NcclError: a peer vanished, a network failure
                self.world.abort(f"NCCL failed: {error}")


# ====================================================================== the world
class World:
    """The processes training together; made by ``init()``.

    Attributes:
        rank, world_size: this process's index and the number of processes.
        local_rank, local_size: the same among the processes on this machine (GPU
            ``local_rank`` is this process's, after ``init(gpu=True)``).
        is_main: rank 0, the one process that writes files and logs.
        timeout: seconds a collective waits for the other ranks before aborting the job.
        device: the GPU of this rank once the GPU is started, else None.

    Every collective below must be called by all ranks in the same order. Host (numpy)
    arrays go through MPI, GPU (cupy) arrays through NCCL.
    """

    def __init__(self, MPI, timeout: float):
        self.MPI, self.timeout = MPI, float(timeout)
        if MPI is None:
            self.rank, self.world_size, self.local_rank, self.local_size = 0, 1, 0, 1
            self._host = _LocalEngine()
        else:
            world = MPI.COMM_WORLD
            local = world.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks sharing this machine
            self.rank, self.world_size = world.Get_rank(), world.Get_size()
            self.local_rank, self.local_size = local.Get_rank(), local.Get_size()
            local.Free()
            self._host = _MPIEngine(MPI, world.Dup())  # our own: no clash with user messages
        self.device: int | None = None
        self._gpu: _NCCLEngine | None = None
        self._watchdog: _Watchdog | None = None
        self.finalized = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def __repr__(self) -> str:
        engines = "MPI" if self.MPI is not None else "local"
        if self._gpu is not None:
            engines += f" + NCCL on GPU {self.device}"
        return (
            f"World(rank={self.rank}, world_size={self.world_size}, local_rank="
            f"{self.local_rank}, engines={engines}, timeout={self.timeout:g})"
        )

    # ------------------------------------------------------------------ GPU
    def start_gpu(self) -> None:
        """Use GPU ``local_rank`` (modulo the GPUs visible) and start NCCL over all ranks."""
        if self._gpu is not None:
            return
        cupy, nccl = backend.cupy(), backend.nccl()
        if nccl is None:
            raise DistributedError(
                "distributed: CuPy finds no NCCL library (cupy.cuda.nccl.available is "
                "False); install NCCL for your CUDA version to train on GPUs"
            )
        self.device = self.local_rank % cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(self.device).use()
        unique_id = self.broadcast_object(nccl.get_unique_id() if self.is_main else None)
        self.barrier()  # every rank is alive: NCCL's own start has no timeout
        communicator = nccl.NcclCommunicator(self.world_size, unique_id, self.rank)
        self._watchdog = _Watchdog(self)
        self._watchdog.start(communicator)
        self._gpu = _NCCLEngine(cupy, nccl, communicator, self._watchdog)

    def _engine(self, array):
        if not backend.is_cupy_array(array):
            return self._host
        if self._gpu is None:
            raise DistributedError(
                f"distributed: a GPU array (shape {array.shape}) needs NCCL: call "
                "distributed.init(gpu=True) before moving the model to the GPU"
            )
        return self._gpu

    # ------------------------------------------------------------------ collectives
    def wait(self, request, what: str) -> None:
        """Wait for a request of this world (or abort the job after ``timeout``)."""
        request.wait(self, what)

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        self.wait(self._host.barrier(), "a barrier")

    def start_all_reduce(self, array):
        """Start summing ``array`` (contiguous; in place) over the ranks; returns a request
        for ``wait``. The array must not be touched until then."""
        if not _contiguous(array):
            raise DistributedError(
                f"all_reduce: the array (shape {array.shape}) must be contiguous"
            )
        return self._engine(array).all_reduce_sum(array)

    def all_reduce(self, value, mean: bool = True):
        """The sum (or, with ``mean``, the mean) of ``value`` over the ranks: a number, or a
        numpy or cupy array (then of the same kind; a GPU value stays on the GPU, with no
        host synchronisation). ``value`` itself is left as it is. For metrics: losses,
        counts, norms."""
        is_number = isinstance(value, (int, float, np.number))
        array = np.array(value, dtype=np.float64) if is_number else value.copy()
        if self.world_size > 1:  # with one rank the sum is the value itself: nothing to send
            flat = array.reshape(-1)
            self.wait(self.start_all_reduce(flat), f"an all-reduce of {array.nbytes} bytes")
        if mean:
            array = array / self.world_size
        return float(array) if is_number else array

    def broadcast(self, array, root: int = 0):
        """Overwrite ``array`` (numpy or cupy, in place) with rank ``root``'s; returns it."""
        target = array if _contiguous(array) else array.copy()
        self.wait(self._engine(target).broadcast(target, root), f"a broadcast of {array.shape}")
        if target is not array:
            array[...] = target
        return array

    def broadcast_object(self, obj, root: int = 0):
        """Rank ``root``'s ``obj`` (anything picklable: a seed, a config) on every rank."""
        data = pickle.dumps(obj) if self.rank == root else b""
        size = int(self.broadcast(np.array([len(data)], dtype=np.int64), root)[0])
        if self.rank == root:
            buffer = np.frombuffer(data, dtype=np.uint8).copy()
        else:
            buffer = np.empty(size, dtype=np.uint8)
        buffer = self.broadcast(buffer, root)
        return obj if self.rank == root else pickle.loads(buffer.tobytes())

    def all_gather(self, array):
        """Every rank's ``array`` (same shape on all ranks), stacked: (world_size, ...)."""
        xp = backend.array_module(array)
        send = xp.ascontiguousarray(array)
        receive = xp.empty((self.world_size, *array.shape), dtype=array.dtype)
        self.wait(
            self._engine(send).all_gather(send.reshape(-1), receive.reshape(-1)),
            f"an all-gather of {array.shape}",
        )
        return receive

    def all_gather_object(self, obj) -> list:
        """Every rank's ``obj`` (picklable), as a list indexed by rank."""
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        sizes = self.all_gather(np.array([data.size], dtype=np.int64))[:, 0]
        padded = np.zeros(int(sizes.max()), dtype=np.uint8)
        padded[: data.size] = data
        rows = self.all_gather(padded)
        return [pickle.loads(row[:n].tobytes()) for row, n in zip(rows, sizes)]

    def gather_object(self, obj, root: int = 0) -> list | None:
        """Every rank's ``obj`` (picklable) as a list indexed by rank, on rank ``root``;
        None on the others."""
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
        sizes = self.all_gather(np.array([data.size], dtype=np.int64))[:, 0]
        receive = np.empty(int(sizes.sum()) if self.rank == root else 0, dtype=np.uint8)
        self.wait(self._host.gather(data, receive, sizes.tolist(), root), "a gather of objects")
        if self.rank != root:
            return None
        ends = np.cumsum(sizes)
        return [pickle.loads(receive[end - n : end].tobytes()) for end, n in zip(ends, sizes)]

    def broadcast_parameters(self, parameters, root: int = 0) -> None:
        """Overwrite every parameter (a Layer, (name, Tensor) pairs or Tensors) with rank
        ``root``'s values, so all ranks start from the same weights."""
        for _, param in named_parameters(parameters):
            self.broadcast(param.array, root)

    # ------------------------------------------------------------------ the end
    def abort(self, message: str):
        """Print ``message`` naming this rank and end every rank of the job (``MPI_Abort``);
        without MPI, raise DistributedError (or exit, off the main thread)."""
        text = f"tricycle.parallel.distributed: rank {self.rank} of {self.world_size}: {message}"
        if self.world_size > 1:
            text += "; another rank is dead or hung. Aborting all ranks."
        print(text, file=sys.stderr, flush=True)
        if self._gpu is not None:
            self._gpu.comm.abort()  # frees any NCCL kernel spinning for a dead peer
        if self.MPI is not None:
            # the launcher forwards a rank's output through a pipe and may kill the job before
            # it has read the message: give it a moment, the message is the only diagnosis
            time.sleep(ABORT_GRACE_SECONDS)
            self.MPI.COMM_WORLD.Abort(1)  # the launcher ends every rank
        if self.MPI is not None or threading.current_thread() is not threading.main_thread():
            os._exit(1)
        raise DistributedError(text)

    def finalize(self) -> None:
        """Wait for every rank, then shut NCCL and MPI down. Call once, at the end."""
        global _world
        if self.finalized:
            return
        self.barrier()
        if self._gpu is not None:
            self._gpu.stream.synchronize()
            self._watchdog.stop.set()
            self._watchdog.thread.join()
            self._gpu.comm.destroy()
            self._gpu = None
        if self.MPI is not None and not self.MPI.Is_finalized():
            self._host.comm.Free()
            self.MPI.Finalize()
        self.finalized = True
        if _world is self:
            _world = None


def _contiguous(array) -> bool:
    return array.flags.c_contiguous


# ====================================================================== gradients
class _Bucket:
    """Parameters whose gradients are averaged together, in one flat buffer."""

    def __init__(self, index: int, params: list):
        self.index, self.params = index, params
        self.offsets, size = [], 0
        for p in params:
            self.offsets.append(size)
            size += p.size
        self.size, self.dtype = size, params[0].dtype
        self.buffer = None  # made on the gradients' device at first use
        self.filled: set[int] = set()  # ids of the parameters copied in this step
        self.request = None  # the all-reduce in flight

    def view(self, i: int):
        """Parameter i's slice of the buffer, in its shape."""
        offset, param = self.offsets[i], self.params[i]
        return self.buffer[offset : offset + param.size].reshape(param.shape)

    def ensure_buffer(self, like) -> None:
        """A buffer on ``like``'s device (the model may have moved since the last step)."""
        if self.buffer is None or backend.device_of(self.buffer) != backend.device_of(like):
            xp = backend.array_module(like)
            self.buffer = xp.zeros(self.size, dtype=self.dtype)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


class DataParallel:
    """Averages the gradients of ``parameters`` over the ranks of ``world``, during backward.

    Args:
        parameters: a Layer, (name, Tensor) pairs or Tensors: every parameter must be the
            same (same shapes, same order) on every rank.
        world: the World (``init()``).
        bucket_bytes: gradients are reduced in flat buckets of about this size; a bucket's
            all-reduce starts as soon as its gradients are final. Smaller buckets start
            sooner; larger ones pay the per-call cost less often.
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

    @checks.arguments(bucket_bytes=checks.positive_int, reduce_alone=checks.boolean)
    def __init__(
        self,
        parameters,
        world: World,
        bucket_bytes: int = DEFAULT_BUCKET_BYTES,
        reduce_alone: bool = False,
    ):
        self.world, self.syncing = world, True
        reducing = world.world_size > 1 or reduce_alone
        params = [p for _, p in named_parameters(parameters)] if reducing else []
        self.buckets = _plan_buckets(params[::-1], bucket_bytes)  # gradients finish ~backwards
        self._where = {id(p): (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        self._next = 0  # the next bucket to start: they start in order on every rank
        self._scale = 1.0 / world.world_size
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

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
        """A parameter's gradient is final: copy it (divided by the world size) into its
        bucket, start every bucket that is full and next in line, and let MPI progress."""
        if not self.syncing:
            return
        bucket, i = self._where[id(param)]
        if bucket.request is not None:
            raise DistributedError(
                "DataParallel: a second backward pass before finish(); call finish() after "
                "each backward, or run all micro-steps but the last inside no_sync()"
            )
        grad = param.grad.array
        bucket.ensure_buffer(grad)
        xp = backend.array_module(grad)
        xp.multiply(grad, self._scale, out=bucket.view(i))  # the mean, as a sum of shares
        bucket.filled.add(id(param))
        if len(bucket.filled) == len(bucket.params):
            self._start_ready()
        self._progress()

    def _start_ready(self) -> None:
        while self._next < len(self.buckets):
            bucket = self.buckets[self._next]
            if len(bucket.filled) < len(bucket.params):
                return
            bucket.request = self.world.start_all_reduce(bucket.buffer)
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
                    param.xp.multiply(param.grad.array, self._scale, out=bucket.view(i))
                else:
                    bucket.ensure_buffer(param.array)
                    bucket.view(i)[...] = 0
                bucket.filled.add(id(param))
        self._start_ready()
        for bucket in self.buckets:
            self.world.wait(
                bucket.request,
                f"the all-reduce of gradient bucket {bucket.index} ({bucket.nbytes} bytes)",
            )
            for i, param in enumerate(bucket.params):
                grad = bucket.view(i)
                param.grad = Tensor(grad, requires_grad=False)
            bucket.filled.clear()
            bucket.request = None
        self._next = 0

    def remove(self) -> None:
        """Stop reducing: unregister the gradient hooks."""
        for handle in self._hooks:
            handle.remove()
        self._hooks = []


def _plan_buckets(params: list, bucket_bytes: int) -> list[_Bucket]:
    """Consecutive parameters of one dtype, up to ``bucket_bytes`` per bucket (a larger
    parameter gets a bucket of its own)."""
    groups, group, size = [], [], 0
    for p in params:
        nbytes = p.size * p.dtype.itemsize
        if group and (size + nbytes > bucket_bytes or p.dtype != group[0].dtype):
            groups.append(group)
            group, size = [], 0
        group.append(p)
        size += nbytes
    if group:
        groups.append(group)
    return [_Bucket(i, g) for i, g in enumerate(groups)]
