"""The engines under ``tricycle.parallel.distributed``: what one collective is on each.

A collective returns a *request*; ``wait`` waits for it against the world's deadline:

    _LocalEngine   a world of one process: nothing to exchange, every request done at once
    _MPIEngine     host (numpy) arrays through MPI's non-blocking collectives, tested until
                   done or past the deadline (MPI's blocking calls wait forever for a dead rank)
    _NCCLEngine    GPU (cupy) arrays through NCCL on a stream of its own, ordered by events;
                   the host does not wait for them: where it next waits for the device (a
                   read-back, a synchronisation), the world's deadline keeper
                   (``tricycle.parallel.deadline``) times that wait and names the collective

Ending the job is ``World.abort``: a message, then ``MPI_Abort``, whose launcher kills every
rank (NCCL's own abort is not called first: it can itself wait for the kernels that spin for
the missing peer).
"""

import time

import numpy as np

from tricycle import backend, waits
from tricycle.backends.cuda import capture

DEFAULT_TIMEOUT = 600.0  # seconds a rank waits for the others in one collective
SPIN_SECONDS = 0.1  # a wait tests its request back to back this long, then every millisecond


class DistributedError(RuntimeError):
    """A collective could not run: a missing engine, a timeout, or a misuse."""


# ====================================================================== requests
class _Done:
    """A request that completed when it was made (the one-rank engine's)."""

    needs_progress = False  # nothing moves it along: see _HostRequest

    def test(self) -> bool:
        return True

    def wait(self, world, what: str) -> None:
        pass


class _HostRequest:
    """An MPI request, waited for by testing it until the world's deadline."""

    needs_progress = True  # MPICH moves its data only inside MPI calls: test it now and then

    def __init__(self, request):
        self.request = request
        self.then = None  # what completes the request's result, once (a copy back)

    def test(self) -> bool:
        done = self.request.Test()
        if done:
            self._finish()
        return done

    def _finish(self) -> None:
        if self.then is not None:
            then, self.then = self.then, None
            then()

    def wait(self, world, what: str) -> None:
        request = self.request
        if request.Test():
            self._finish()
            return
        start = time.monotonic()
        spin_until, deadline = start + SPIN_SECONDS, start + world.timeout
        while not request.Test():  # MPI moves the data inside Test: keep calling it
            now = time.monotonic()
            if now > deadline:
                world.abort(f"timed out after {world.timeout:g} s waiting for {what}")
            if now > spin_until:  # a rank far behind (writing a checkpoint?): poll gently
                time.sleep(1e-3)
        self._finish()


class _DeviceRequest:
    """A GPU collective: ``done`` is recorded on the communication stream after it. Waiting
    makes the current stream wait for it; the host goes on (the deadline keeper times the
    host's next wait for the device)."""

    needs_progress = False  # NCCL's kernels move the data: the host never queries the event

    def __init__(self, done):
        self.done = done

    def test(self) -> bool:
        return self.done.done

    def wait(self, world, what: str) -> None:
        backend.cupy().cuda.get_current_stream().wait_event(self.done)


def _scale(array, factor: float) -> None:
    """``array *= factor`` in place, on the current stream (a function of its own: the same
    statement inside a closure would make ``array`` the closure's local)."""
    array *= factor


def _version(nccl) -> int:
    """NCCL's version as a number (2.10.3: 21003), or 0 where it does not say."""
    try:
        return int(nccl.get_version())
    except (AttributeError, TypeError, ValueError):
        return 0


# ====================================================================== engines
class _LocalEngine:
    """The collectives of a world of one process on host arrays: nothing to exchange."""

    def __init__(self):
        self.mail = []  # (tag, array): what this rank sent itself and has not received

    def all_reduce(self, array, mean: bool = False):
        return _Done()  # the sum and the mean over one rank are the array itself

    def broadcast(self, array, root: int):
        return _Done()

    def all_gather(self, send, receive):
        receive[...] = send.reshape(receive.shape)
        return _Done()

    def gather(self, send, receive, counts, root: int):
        receive[: send.size] = send
        return _Done()

    def reduce_scatter(self, send, receive, mean: bool = False):
        receive[...] = send  # one rank's block is the whole, its sum and mean itself
        return _Done()

    def barrier(self):
        return _Done()

    # point to point (``tricycle.parallel.p2p``): a rank of one may message itself
    def send(self, array, peer: int, tag: int):
        """Post ``array`` (copied) to this rank itself: done at once; a receive with its tag
        takes it, oldest first (MPI's order)."""
        self.mail.append((tag, array.copy()))
        return _Done()

    def recv(self, array, peer, tag: int):
        """Take the oldest message this rank sent itself with ``tag``; a receive nothing was
        sent for would wait forever: an error at once."""
        for i, (sent_tag, sent) in enumerate(self.mail):
            if sent_tag == tag:
                del self.mail[i]
                _check_received(sent.nbytes, array, 0)
                array[...] = sent.reshape(array.shape)
                return _Done()
        raise DistributedError(
            f"recv: a world of one process receives from itself a message (tag {tag}) it "
            "has not sent: send it first (isend), or it would wait forever"
        )


class _MPIEngine:
    """Non-blocking MPI collectives on host (numpy) arrays."""

    def __init__(self, MPI, comm):
        self.MPI, self.comm = MPI, comm

    def all_reduce(self, array, mean: bool = False):
        share = 1.0 / self.comm.Get_size() if mean else 1.0
        wide = array.astype(np.float32) if array.dtype.itemsize == 2 else array  # MPI has
        request = _HostRequest(self.comm.Iallreduce(self.MPI.IN_PLACE, wide, op=self.MPI.SUM))
        if wide is not array:  # no portable 16-bit float: summed in float32, cast back
            request.then = lambda: array.__setitem__(..., wide * share if mean else wide)
        elif mean:
            request.then = lambda: np.multiply(array, share, out=array)
        return request

    def broadcast(self, array, root: int):
        return _HostRequest(self.comm.Ibcast(array, root=root))

    def reduce_scatter(self, send, receive, mean: bool = False):
        """MPI's reduce-scatter: ``receive`` (send.size / ranks values) gets this rank's
        block of the sum (or mean) of every rank's ``send``."""
        share = 1.0 / self.comm.Get_size() if mean else 1.0
        wide = send.astype(np.float32) if send.dtype.itemsize == 2 else send  # as all_reduce
        out = np.empty(receive.shape, np.float32) if wide is not send else receive
        request = _HostRequest(self.comm.Ireduce_scatter_block(wide, out, op=self.MPI.SUM))
        if out is not receive:
            request.then = lambda: receive.__setitem__(..., out * share if mean else out)
        elif mean:
            request.then = lambda: np.multiply(receive, share, out=receive)
        return request

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

    # point to point (``tricycle.parallel.p2p``): the bytes of a contiguous array
    def send(self, array, peer: int, tag: int):
        return _HostRequest(self.comm.Isend(_bytes(array), dest=peer, tag=tag))

    def recv(self, array, peer, tag: int):
        """Receive into ``array`` from rank ``peer`` (None: any rank); once done the
        request's ``source`` is the sender's rank. A message of another size is an error."""
        source = self.MPI.ANY_SOURCE if peer is None else peer
        status = self.MPI.Status()
        received = _Received(self.comm.Irecv(_bytes(array), source=source, tag=tag), status,
                             self.MPI, array)  # fmt: skip
        request = _HostRequest(received)

        def then():
            request.source = status.Get_source()
            _check_received(status.Get_count(self.MPI.BYTE), array, request.source)

        request.then = then
        return request


class _NCCLEngine:
    """NCCL collectives on GPU (cupy) arrays, on a stream of their own.

    Each starts after an event recorded on the current (compute) stream, so it sees every
    write made before it, and records an event of its own that a request's ``wait`` makes the
    compute stream wait for. Nothing here makes the host wait for the device.

    The same calls record into a CUDA graph being captured on the current stream: the
    events fork NCCL's stream off the capture and join it back where the step waits, so a
    captured training step holds its all-reduces (NCCL supports capture).
    """

    def __init__(self, cupy, nccl, communicator, keeper, on_error, ranks: int = 1):
        self.cupy, self.nccl, self.comm, self.ranks = cupy, nccl, communicator, ranks
        # the mean in NCCL's own kernel (ncclAvg, NCCL 2.10): no pass of its own over the data
        self.average = getattr(nccl, "NCCL_AVG", 4) if _version(nccl) >= 21000 else None
        # the highest priority: a collective's blocks go to the SMs before the pending blocks
        # of backward's kernels, so the reduction runs under backward instead of after it
        try:
            _, highest = cupy.cuda.runtime.deviceGetStreamPriorityRange()
            self.stream = cupy.cuda.Stream(non_blocking=True, priority=highest)
        except (AttributeError, TypeError):  # a CuPy without stream priorities
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.ready = cupy.cuda.Event(disable_timing=True)  # re-recorded for each fork
        self.keeper, self.on_error = keeper, on_error
        self.captured = False  # a collective was recorded into a CUDA graph
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
        recording = capture.capturing()  # into a CUDA graph: each replay is watched whole
        # the fork: on the current stream, after the writes this collective reads (eager, one
        # event re-recorded: a wait takes it as recorded then; captured, an event each)
        ready = cuda.Event(disable_timing=True) if recording else self.ready
        ready.record()
        self.stream.wait_event(ready)
        if not recording:
            self._check()
        with waits.waiting(what):  # an NCCL call may block the host: a peer not yet
            call(self.stream.ptr)  # connected, a full work queue
        done = cuda.Event(disable_timing=True)
        done.record(self.stream)
        if recording:
            self.captured = True
        elif self.keeper is not None:
            self.keeper.queued(what)
        return _DeviceRequest(done)

    def _check(self) -> None:
        """End the job if NCCL has reported an error (a peer vanished, a network failure):
        from the main thread, which NCCL's asynchronous errors reach at the next call."""
        try:
            self.comm.check_async_error()
        except Exception as error:  # NcclError
            self.on_error(f"NCCL failed: {error}")

    def all_reduce(self, array, mean: bool = False):
        ptr, n, kind = array.data.ptr, array.size, self._type(array)
        op = self.average if mean and self.average is not None else self.nccl.NCCL_SUM

        def call(stream):
            self.comm.allReduce(ptr, ptr, n, kind, op, stream)
            if mean and op == self.nccl.NCCL_SUM:  # an NCCL without ncclAvg: scale after
                with self.stream:
                    _scale(array, 1.0 / self.ranks)

        return self._run(f"NCCL all-reduce of {array.nbytes} bytes", call)

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

    def reduce_scatter(self, send, receive, mean: bool = False):
        n, kind = receive.size, self._type(send)
        send_ptr, receive_ptr = send.data.ptr, receive.data.ptr
        op = self.average if mean and self.average is not None else self.nccl.NCCL_SUM

        def call(stream):
            self.comm.reduceScatter(send_ptr, receive_ptr, n, kind, op, stream)
            if mean and op == self.nccl.NCCL_SUM:  # an NCCL without ncclAvg: scale after
                with self.stream:
                    _scale(receive, 1.0 / self.ranks)

        return self._run(f"NCCL reduce-scatter of {send.nbytes} bytes", call)

    # point to point (``tricycle.parallel.p2p``): NCCL's send and recv (2.7 and later)
    def send(self, array, peer: int, tag: int):
        return self.batch([("send", array, peer)])[0]

    def recv(self, array, peer, tag: int):
        return self.batch([("recv", array, peer)])[0]

    def batch(self, messages: list) -> list:
        """Sends and receives (("send" or "recv", array, peer) each) in one NCCL group, so
        that their order on the two sides cannot deadlock; one request for them all."""
        calls = [(kind, array.data.ptr, array.size, self._type(array), peer)
                 for kind, array, peer in messages]  # fmt: skip
        nbytes = sum(array.nbytes for _, array, _ in messages)

        def call(stream):
            self.nccl.groupStart()
            try:
                for kind, ptr, n, datatype, peer in calls:
                    getattr(self.comm, kind)(ptr, n, datatype, peer, stream)
            finally:
                self.nccl.groupEnd()

        request = self._run(f"NCCL sends and receives of {nbytes} bytes", call)
        return [request] * len(messages)


class _Received:
    """An MPI receive's request that tests with its status (the sender, the size) and names
    a message too long for its buffer (MPI's truncation error) as the receive's error."""

    def __init__(self, request, status, MPI, array):
        self.request, self.status, self.MPI, self.array = request, status, MPI, array

    def Test(self) -> bool:
        try:
            return self.request.Test(self.status)
        except self.MPI.Exception as error:
            raise DistributedError(
                f"recv: the message is longer than the receiving tensor's {self.array.nbytes} "
                f"bytes (shape {self.array.shape}, {self.array.dtype}): {error}"
            ) from error


def _bytes(array):
    """A contiguous host array's bytes, as MPI sends them (any dtype, bfloat16 too)."""
    return array.reshape(-1).view(np.uint8)


def _check_received(nbytes: int, array, source) -> None:
    """A received message must fill the receiving array exactly."""
    if nbytes != array.nbytes:
        raise DistributedError(
            f"recv: rank {source} sent {nbytes} bytes, but the receiving tensor holds "
            f"{array.nbytes} (shape {array.shape}, {array.dtype}): give it the sent shape and dtype"
        )
