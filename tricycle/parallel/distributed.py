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
arrays; NCCL (``cupy.cuda.nccl``) carries GPU arrays, its unique id handed out over MPI
(``tricycle.parallel.engines``). Without mpiexec (or without mpi4py) the world is this one
process, and the same calls do the local arithmetic; a world of one starts an NCCL
communicator only when a collective of GPU arrays asks for one (``DataParallel(...,
reduce_alone=True)``, ZeRO-1), since NCCL's start costs most of a second and one process has
nothing to send. World size 1 is the single-process case, not a branch in the training code.
The gradient buckets are ``tricycle.parallel.buckets``; the World's collectives
``tricycle.parallel.world_collectives``, its point-to-point messages ``tricycle.parallel.p2p``.

**Machines.** ``local_rank`` and ``local_size`` count the ranks on this machine: MPI's
shared-memory group (``COMM_TYPE_SHARED``), or the ranks whose $TRICYCLE_HOST names the
same machine, where it is set. A rank uses GPU ``local_rank``, and its share of the
machine's cores for its host threads (``tricycle.parallel.threads``).

**Failures.** A dead, hung or failing rank ends every rank, with a message:

- MPI's blocking collectives wait forever for a dead rank. Here every wait is a non-blocking
  request tested until a deadline (``timeout``: 600 s, or $TRICYCLE_DIST_TIMEOUT); past it
  the rank prints which collective it waited for and aborts the whole job (``MPI_Abort``,
  whose launcher ends every rank). On a GPU the host does not wait for NCCL's collectives;
  wherever it waits for the device (a read-back, a synchronisation, a graph replay, an
  NCCL call) a keeper thread holds the wait to the same deadline and names the collective
  it is stuck behind (``tricycle.parallel.deadline``).
- A rank killed outright is noticed by the launcher, which ends the others.
- An error on one rank (an exception, or ``sys.exit`` with a message, such as a usage error
  that only rank 0 can see) would leave the others waiting in their next collective. Under
  mpiexec ``init`` makes an uncaught exception abort the job after its traceback, and a
  program's main body runs inside ``fail_together()``, which does the same for
  ``SystemExit`` and Ctrl-C: every rank ends at once, with that rank's message
  (``tricycle.parallel.failures``).

**The end.** ``finalize`` waits for every rank, then shuts MPI down and NCCL's communicator
in the order NCCL documents (``ncclCommFinalize``, then ``ncclCommDestroy``), that teardown
bounded by ``TEARDOWN_SECONDS``: past it the process exits (status 0: the run's work is
done). A communicator whose collectives a CUDA graph recorded is left to the process's exit
(NCCL's destroy waits until every such graph is freed), as is one a run left without
``finalize`` (an error, Ctrl-C in a world of one) and a world of one's (nothing to flush to a
peer: its teardown would only delay the exit).
"""

import atexit
import ctypes
import faulthandler
import importlib
import os
import sys
import threading
import time
import zlib

from tricycle import backend, checks, process_group, waits
from tricycle.backends.cuda import capture
from tricycle.parallel import failures, threads
from tricycle.parallel.buckets import (  # noqa: F401 (the public names of this module)
    DEFAULT_BUCKET_BYTES,
    DEFAULT_FIRST_BUCKET_BYTES,
    DEFAULT_GPU_BUCKET_BYTES,
    DataParallel,
)
from tricycle.parallel.deadline import DeadlineKeeper
from tricycle.parallel.engines import (  # noqa: F401
    DEFAULT_TIMEOUT,
    DistributedError,
    _DeviceRequest,
    _Done,
    _HostRequest,
    _LocalEngine,
    _MPIEngine,
    _NCCLEngine,
)
from tricycle.parallel.failures import SameOnEveryRank  # noqa: F401 (a public name here)
from tricycle.parallel.p2p import PointToPoint
from tricycle.parallel.world_collectives import Collectives

ABORT_GRACE_SECONDS = 0.5  # between printing why a rank aborts and ending the job
ABORT_BACKSTOP_SECONDS = 5.0  # past the grace, the process ends itself whatever blocks it
AFTER_RANK_0_SECONDS = 5.0  # how long a rank lets rank 0 say an error they share (rank 0
# may meet it later: it alone opens the run directory, and a loaded machine slows it more)
TEARDOWN_SECONDS = 5.0  # NCCL's teardown at the end, at most
# what launchers (MPICH's hydra, Open MPI, PMIx, MVAPICH) set to the number of processes
_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")
_LAUNCHER_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")


def launched_size() -> int:
    """How many processes the launcher started, from its environment variables (1 if this
    process was not started by mpiexec)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        if name in os.environ:
            return int(os.environ[name])
    return 1


def launched_rank() -> int:
    """This process's rank among those the launcher started, from its environment variables
    (0 if this process was not started by mpiexec)."""
    for name in _LAUNCHER_RANK_VARIABLES:
        if name in os.environ:
            return int(os.environ[name])
    return 0


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
    would all train on the same data and write the same files. Under mpiexec an uncaught
    exception on any rank then ends every rank (``sys.excepthook``: after its traceback).
    """
    global _world
    if _world is None:
        if timeout is None:
            timeout = float(os.environ.get("TRICYCLE_DIST_TIMEOUT", DEFAULT_TIMEOUT))
        _world = World(_import_mpi(), timeout)
        process_group.use_world(lambda: _world)  # nn.SyncBatchNorm finds the group there
        threads.share_cores(_world.local_size, _world.sharers)  # ranks share their cores
        _world.keep_deadlines()
        if _world.world_size > 1:
            failures.abort_on_uncaught_exceptions(lambda: _world)
            failures.interrupt_on_sigterm()
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


# ====================================================================== the world
class World(Collectives, PointToPoint):  # tricycle.parallel.world_collectives, p2p
    """The processes training together; made by ``init()``.

    Attributes:
        rank, world_size: this process's index and the number of processes.
        local_rank, local_size: the same among the processes on this machine (GPU
            ``local_rank`` is this process's, after ``init(gpu=True)``).
        sharers: the processes on this machine that may run on this one's cores (its own
            count among them), which share them (``tricycle.parallel.threads``).
        is_main: rank 0, the one process that writes files and logs.
        timeout: seconds a collective waits for the other ranks before aborting the job.
        device: the GPU of this rank once the GPU is started, else None.

    Every collective (``tricycle.parallel.world_collectives``: ``barrier``,
    ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``...) must be called by
    all ranks in the same order. Host (numpy) arrays go through MPI, GPU (cupy) arrays
    through NCCL.
    """

    def __init__(self, MPI, timeout: float):
        self.MPI, self.timeout = MPI, float(timeout)
        if MPI is None:
            self.rank, self.world_size, self.local_rank, self.local_size = 0, 1, 0, 1
            self.sharers = 1
            self._host = _LocalEngine()
        else:
            world = MPI.COMM_WORLD
            local = _machine_group(MPI, world)
            self.rank, self.world_size = world.Get_rank(), world.Get_size()
            self.local_rank, self.local_size = local.Get_rank(), local.Get_size()
            mine = threads.affinity()  # the ranks here that may run on this one's cores:
            self.sharers = threads.sharing(mine, local.allgather(mine))  # a launcher may bind
            local.Free()
            self._host = _MPIEngine(MPI, world.Dup())  # our own: no clash with user messages
        self.device: int | None = None
        self._gpu: _NCCLEngine | None = None
        self._keeper: DeadlineKeeper | None = None
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
        """Use GPU ``local_rank`` (modulo the GPUs visible) and start NCCL over all ranks (a
        world of one: at its first collective of GPU arrays, if it makes one)."""
        if self.device is not None:
            return
        cupy = backend.cupy()
        self.device = self.local_rank % cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(self.device).use()
        if self.world_size > 1:
            self._start_nccl()

    def _start_nccl(self) -> None:
        """NCCL's communicator over all ranks (collective: every rank calls it at once)."""
        cupy, nccl = backend.cupy(), backend.nccl()
        if nccl is None:
            raise DistributedError(
                "distributed: CuPy finds no NCCL library (cupy.cuda.nccl.available is "
                "False); install NCCL for your CUDA version to train on several GPUs"
            )
        if capture.capturing():
            raise DistributedError(
                "distributed: a world of one started NCCL inside a CUDA graph's capture; "
                "make one collective of GPU arrays eagerly first"
            )
        unique_id = self.broadcast_object(nccl.get_unique_id() if self.is_main else None)
        self.barrier()  # every rank is alive: NCCL's own start has no timeout
        # and holds the GIL (the deadline keeper cannot run): a C-level timer ends the process
        # if it does not return, dumping every thread's stack (which names this line)
        faulthandler.dump_traceback_later(self.timeout, exit=True)
        try:
            communicator = nccl.NcclCommunicator(self.world_size, unique_id, self.rank)
        finally:
            faulthandler.cancel_dump_traceback_later()
        self.keep_deadlines()
        ranks = self.world_size
        self._gpu = _NCCLEngine(cupy, nccl, communicator, self._keeper, self.abort, ranks)
        atexit.register(self._leave_unfinished)

    def _engine(self, array):
        if not backend.is_cupy_array(array):
            return self._host
        if self._gpu is None:
            if self.device is None:
                raise DistributedError(
                    f"distributed: a GPU array (shape {array.shape}) needs NCCL: call "
                    "distributed.init(gpu=True) before moving the model to the GPU"
                )
            self._start_nccl()  # a world of one's first collective of GPU arrays
        return self._gpu

    def keep_deadlines(self) -> None:
        """Start the deadline keeper (``tricycle.parallel.deadline``), once."""
        if self._keeper is None:
            self._keeper = DeadlineKeeper(self)

    def watch_device(self, what: str) -> None:
        """Name GPU work just queued that peers must join (a replayed CUDA graph with
        collectives in it): a wait of the host stuck behind it names it."""
        if self._keeper is not None:
            self._keeper.queued(what)

    def overdue(self, message: str, limited: bool) -> None:
        """The deadline keeper's verdict on a wait past its deadline: end the job, or, for a
        wait with its own limit (NCCL's teardown, the run done), end this process quietly."""
        if not limited:
            self.abort(message)
        print(f"tricycle.parallel.distributed: rank {self.rank}: {message}; leaving it to the "
              "process's exit", file=sys.stderr, flush=True)  # fmt: skip
        os._exit(0)

    # ------------------------------------------------------------------ requests
    def wait(self, request, what: str) -> None:
        """Wait for a request of this world (or abort the job after ``timeout``)."""
        request.wait(self, what)

    # ------------------------------------------------------------------ the end
    def abort(self, message: str, blame_peers: bool = True, status: int = 1,
              after_rank_0: bool = False):  # fmt: skip
        """Print ``message`` naming this rank and end every rank of the job (``MPI_Abort``);
        without MPI, raise DistributedError (or exit, off the main thread).

        ``blame_peers``: the message is about another rank (dead or hung), not this one's
        own error. ``after_rank_0``: rank 0 meets the same error (``SameOnEveryRank``) and
        ends the job with its message first: wait for it, and speak only if it does not.
        Nothing here waits for the device or for NCCL, whose calls may be stuck for the
        missing peer; a C-level timer ends the process should MPI_Abort not."""
        text = f"tricycle.parallel.distributed: rank {self.rank} of {self.world_size}: {message}"
        if self.world_size > 1:
            text += "; another rank is dead or hung" if blame_peers else ""
            text += ". Ending all ranks."
        if after_rank_0 and self.MPI is not None:
            faulthandler.dump_traceback_later(AFTER_RANK_0_SECONDS + ABORT_BACKSTOP_SECONDS,
                                              exit=True)  # fmt: skip
            try:
                time.sleep(AFTER_RANK_0_SECONDS)  # rank 0's MPI_Abort ends this process first
            except KeyboardInterrupt:  # Open MPI's launcher ends it so (SIGTERM): in silence
                os._exit(status)
        print(text, file=sys.stderr, flush=True)
        if self.MPI is not None:
            faulthandler.dump_traceback_later(ABORT_GRACE_SECONDS + ABORT_BACKSTOP_SECONDS,
                                              exit=True)  # fmt: skip
            # the launcher forwards a rank's output through a pipe and may kill the job before
            # it has read the message: give it a moment, the message is the only diagnosis
            time.sleep(ABORT_GRACE_SECONDS)
            self.MPI.COMM_WORLD.Abort(status)  # the launcher ends every rank
        if self.MPI is not None or threading.current_thread() is not threading.main_thread():
            os._exit(status)
        raise DistributedError(text)

    def finalize(self) -> None:
        """Wait for every rank, then shut MPI and NCCL down. Call once, at the end; it
        returns within ``TEARDOWN_SECONDS`` of the last rank's arrival."""
        global _world
        if self.finalized:
            return
        self.barrier()
        gpu, self._gpu = self._gpu, None
        if gpu is not None:
            with waits.waiting("the last NCCL collectives, at finalize"):
                gpu.stream.synchronize()
        if self.MPI is not None and not self.MPI.Is_finalized():
            self._host.comm.Free()
            self.MPI.Finalize()
        if gpu is not None and self.world_size == 1:  # no peer to flush to: its teardown
            _keep_forever(gpu.comm)  # (most of a second of NCCL's) is the process exit's
        elif gpu is not None:
            _close_nccl(gpu)
        if self._keeper is not None:
            self._keeper.stop()
        self.finalized = True
        if _world is self:
            _world = None

    def _leave_unfinished(self) -> None:
        """At the interpreter's exit, a communicator ``finalize`` did not close (an error,
        Ctrl-C) is left to the process's exit: NCCL's destroy, which CuPy would call when
        freeing it, can wait for peers or graphs that are gone."""
        if self._gpu is not None:
            _keep_forever(self._gpu.comm)


def _close_nccl(engine) -> None:
    """NCCL's teardown in the documented order, ``ncclCommFinalize`` (collective: flushes
    the communicator's operations) then ``ncclCommDestroy``, bounded by TEARDOWN_SECONDS (the
    deadline keeper ends the process past it). A communicator whose collectives a CUDA graph
    recorded is left to the process's exit: its destroy would wait for those graphs to be
    freed, which the caller may still hold."""
    if engine.captured:
        _keep_forever(engine.comm)
        return
    with waits.waiting("NCCL's teardown (ncclCommFinalize, ncclCommDestroy)", TEARDOWN_SECONDS):
        finalize = _nccl_function("ncclCommFinalize")
        if finalize is not None:  # NCCL 2.14 and later
            finalize(ctypes.c_void_p(engine.comm.comm))
        engine.comm.destroy()


def _nccl_function(name: str):
    """``name`` from the NCCL library this process has loaded (CuPy's), or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libnccl.so" in line}
        paths = sorted(p for p in paths if os.path.basename(p).startswith("libnccl.so"))
        return getattr(ctypes.CDLL(paths[0]), name) if paths else None
    except (OSError, AttributeError):
        return None


def _keep_forever(obj) -> None:
    """Never free ``obj``, not even when the interpreter exits (its finaliser must not run)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _machine_group(MPI, comm):
    """The ranks of ``comm`` on this machine, as a communicator: those whose $TRICYCLE_HOST
    is this one's where it is set (a layout MPI cannot see, or a simulated one), else MPI's
    shared-memory group. Ordered by rank in ``comm``."""
    host = os.environ.get("TRICYCLE_HOST")
    if host is None:
        return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    return comm.Split(zlib.crc32(host.encode()) & 0x7FFFFFFF, key=comm.Get_rank())


def fail_together():
    """Run a program's main body (``with fail_together(): ...``): an error that leaves it on
    one rank of several ends every rank at once, with that rank's message, instead of leaving
    the others waiting in their next collective until the timeout.

    ``sys.exit("message")`` (a usage error) prints its message as one line (rank 0 alone, for
    a ``SameOnEveryRank``); another exception prints its traceback; Ctrl-C (or the SIGTERM a
    launcher sends for it) ends with status 130. ``sys.exit(0)`` and a world of one process
    pass through unchanged (``tricycle.parallel.failures``)."""
    return failures.failing_together(lambda: _world)
