"""Point-to-point messages between two ranks of the World: ``send`` and ``recv``.

A rank sends a contiguous array to one other rank, which receives it into an array of the
same size (bytes: the receiver gives the shape and dtype), matched by ``tag`` in the order
they were sent. As the collectives, each has a non-blocking start returning a request for
``World.wait`` (tested against the world's deadline: a peer that never answers ends the job
with a message naming the message it waited for).

    MPI (host arrays)   ``Isend``/``Irecv``; ``src=None`` receives from any rank, and the
                        request's ``source`` names the sender
    NCCL (GPU arrays)   ``ncclSend``/``ncclRecv`` on the engine's stream; ``start_batch``
                        puts several in one NCCL group (``ncclGroupStart``/``End``), so that
                        their order on the two sides cannot deadlock. NCCL has no tags and no
                        receive from any rank: both are refused rather than ignored
    one process         a rank may send itself a message and then receive it; a receive that
                        nothing was sent for is an error at once instead of a wait forever

``World`` takes these methods from ``PointToPoint``; torch's names (``dist.send``, ``isend``,
``batch_isend_irecv``...) are ``tricycle.parallel.torch_p2p``.
"""

import pickle

import numpy as np

from tricycle import backend, checks
from tricycle.parallel.engines import DistributedError

KINDS = ("send", "recv")


class PointToPoint:
    """The World's point-to-point methods (mixed into ``World``: uses its ``rank``,
    ``world_size``, ``_engine``, ``_host`` and ``wait``)."""

    def start_send(self, array, dst: int, tag: int = 0):
        """Start sending ``array`` (contiguous; not to be written until the request is
        done) to rank ``dst``; returns a request for ``wait``."""
        self._check_message("send", array, dst, tag)
        return self._p2p_engine(array).send(array, dst, tag)

    def start_recv(self, array, src: int | None = None, tag: int = 0):
        """Start receiving into ``array`` (contiguous, the sent message's size) from rank
        ``src`` (None: any rank, on the host); returns a request for ``wait``, whose
        ``source`` is the sender once it is done."""
        self._check_message("recv", array, src, tag)
        request = self._p2p_engine(array).recv(array, src, tag)
        if src is not None or self.world_size == 1:
            request.source = self.rank if src is None else src
        return request

    def send(self, array, dst: int, tag: int = 0) -> None:
        """Send ``array`` to rank ``dst`` and wait until it has gone (another rank's)."""
        if dst == self.rank:
            raise DistributedError(
                f"send: rank {self.rank} sends to itself, which would wait for its own "
                "receive: start it with start_send and receive it with recv"
            )
        self.wait(self.start_send(array, dst, tag), _what("send", array, "to", dst, tag))

    def recv(self, array, src: int | None = None, tag: int = 0) -> int:
        """Receive into ``array`` from rank ``src`` (None: any rank); returns the sender."""
        request = self.start_recv(array, src, tag)
        self.wait(request, _what("receive", array, "from", src, tag))
        return request.source

    def start_batch(self, messages: list) -> list:
        """Start several sends and receives, ``("send" or "recv", array, peer, tag)`` each,
        as one batch: on GPUs one NCCL group. Returns their requests, in order."""
        for kind, array, peer, tag in messages:
            if kind not in KINDS:
                raise ValueError(f"start_batch: a message is 'send' or 'recv', got {kind!r}")
            self._check_message(kind, array, peer, tag)
        on_gpu = [backend.is_cupy_array(array) for _, array, _, _ in messages]
        if any(on_gpu) and self.world_size > 1:
            if not all(on_gpu):
                raise DistributedError(
                    "start_batch: host and GPU arrays in one batch; batch each kind apart"
                )
            engine = self._engine(messages[0][1])
            return engine.batch([(kind, array, peer) for kind, array, peer, _ in messages])
        starts = {"send": self.start_send, "recv": self.start_recv}
        return [starts[kind](array, peer, tag) for kind, array, peer, tag in messages]

    def start_send_objects(self, objects: list, dst: int) -> list:
        """Start sending the picklable ``objects`` to rank ``dst`` (host messages: their
        sizes, then their bytes); returns (request, array) pairs: keep each array until
        its request is done."""
        data = [pickle.dumps(obj) for obj in objects]
        sizes = np.array([len(d) for d in data], dtype=np.int64)
        joined = np.frombuffer(b"".join(data), dtype=np.uint8).copy()
        return [(self.start_send(a, dst), a) for a in (sizes, joined)]

    def recv_objects(self, n: int, src: int | None) -> tuple:
        """(the ``n`` objects rank ``src`` sent with ``start_send_objects``, the sender):
        ``src`` None takes them from any rank (the first message's sender sends the rest)."""
        sizes = np.empty(n, dtype=np.int64)
        src = self.recv(sizes, src)
        data = np.empty(int(sizes.sum()), dtype=np.uint8)
        self.recv(data, src)
        ends = np.cumsum(sizes)
        objects = [pickle.loads(data[end - k : end].tobytes()) for end, k in zip(ends, sizes)]
        return objects, src

    def _p2p_engine(self, array):
        """The engine of a message: a world of one's own for any array (a rank messaging
        itself needs no NCCL), else the array's (MPI or NCCL)."""
        return self._host if self.world_size == 1 else self._engine(array)

    def _check_message(self, kind: str, array, peer, tag) -> None:
        """The arguments of a send or a receive, refused as torch refuses them."""
        name = "dst" if kind == "send" else "src"
        if not (peer is None and kind == "recv"):
            checks.integer(kind, name, peer, low=0)
            if peer >= self.world_size:
                raise ValueError(
                    f"{kind}: {name}={peer}, but the ranks are 0 to {self.world_size - 1}"
                )
        checks.integer(kind, "tag", tag, low=0)
        if not array.flags.c_contiguous:
            raise DistributedError(f"{kind}: the array (shape {array.shape}) must be contiguous")
        if backend.is_cupy_array(array) and self.world_size > 1:
            if tag != 0:
                raise DistributedError(
                    f"{kind}: NCCL has no tags (a GPU array, tag={tag}): messages between "
                    "two ranks match in the order they were sent; pass tag=0"
                )
            if peer is None:
                raise DistributedError(
                    f"{kind}: NCCL cannot receive from any rank (a GPU array): name src"
                )
        elif self.MPI is not None and tag > (limit := _largest_tag(self.MPI)):
            raise ValueError(f"{kind}: tag={tag} is above MPI's largest tag, {limit}")


def _largest_tag(MPI) -> int:
    """MPI's largest tag: an attribute of COMM_WORLD alone (a split communicator need not
    carry it: Open MPI's answers None there), 32767 at least by the standard."""
    return MPI.COMM_WORLD.Get_attr(MPI.TAG_UB) or 32767


def _what(verb: str, array, way: str, peer, tag: int) -> str:
    """A message's name, for the deadline's report."""
    rank = "any rank" if peer is None else f"rank {peer}"
    return f"a {verb} of {array.nbytes} bytes {way} {rank} (tag {tag})"
