"""torch.distributed's point-to-point calls, on the World's ``send``/``recv``
(``tricycle.parallel.p2p``)::

    import tricycle.distributed as dist
    if dist.get_rank() == 0:
        dist.send(x, dst=1)                        # blocking
    else:
        dist.recv(x, src=0)                        # returns the sender's rank
    work = dist.isend(x, dst=1, tag=7); work.wait()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, 1), dist.P2POp(dist.irecv, b, 1)])
    dist.send_object_list([config], dst=1); dist.recv_object_list(objects, src=0)

As torch's: a receive fills its tensor in place (its shape and dtype must hold the sent
bytes: a message of another size is an error); ``recv``/``irecv`` without ``src`` take a
message from any rank (host tensors) and report the sender; a blocking ``send`` to oneself,
or ``send_object_list``/``recv_object_list`` with oneself, is a ValueError, while
``isend``/``irecv`` may pair with oneself. There is one group, the world: ``group`` must be
None (``group_dst``/``group_src``, its ranks, are the world's). On GPUs (NCCL) messages have
no tags (``tag`` must be 0) and ``batch_isend_irecv`` runs as one NCCL group.
"""

from tricycle.backend import array_module
from tricycle.parallel.torch_distributed import Work, _array, _check_group, _the_world

__all__ = [
    "P2POp",
    "batch_isend_irecv",
    "irecv",
    "isend",
    "recv",
    "recv_object_list",
    "send",
    "send_object_list",
]


class P2PWork(Work):
    """What ``isend``/``irecv``/``batch_isend_irecv`` return: ``wait()`` until the message
    has gone or arrived (against the world's deadline), ``is_completed()`` without waiting.
    A receive into a non-contiguous tensor lands there when it completes; the message's
    contiguous array (``buffer``) is kept until then (NCCL reads it from its stream)."""

    def __init__(self, world, request, what: str, land=None, peer=None, buffer=None):
        self.world, self.request, self.what = world, request, what
        self.land, self.peer, self.done, self.buffer = land, peer, False, buffer

    def wait(self, timeout=None) -> bool:
        if not self.done:
            self.world.wait(self.request, self.what)
            self._finish()
        return True

    def is_completed(self) -> bool:
        if not self.done and self.request.test():
            self._finish()
        return self.done

    def source_rank(self) -> int:
        """The sender of a completed receive (torch's ``Work._source_rank``)."""
        self.wait()
        return getattr(self.request, "source", self.peer)

    _source_rank = source_rank

    def _finish(self) -> None:
        self.done, self.buffer = True, None
        if self.land is not None:
            land, self.land = self.land, None
            land()


def _peer(owner: str, name: str, value, group_value, group, optional: bool = False):
    """The peer's rank from torch's two spellings (the world's rank or the group's)."""
    _check_group(owner, group)
    if value is not None and group_value is not None:
        raise ValueError(f"{owner}: give {name} or group_{name}, not both")
    value = group_value if value is None else value
    if value is None and not optional:
        raise ValueError(f"{owner}: {name} (the peer's rank) must be given")
    return value


def _message(kind: str, array) -> tuple:
    """(a contiguous array to send or receive, and for a receive into a non-contiguous
    ``array`` the call that lands the received copy in it; else None)."""
    if array.flags.c_contiguous:
        return array, None
    view, array = array, array_module(array).ascontiguousarray(array)
    return array, (lambda: view.__setitem__(..., array)) if kind == "recv" else None


def _start(owner: str, kind: str, tensor, peer, tag: int) -> P2PWork:
    """Start a send or a receive of ``tensor``'s array (a non-contiguous one through a
    contiguous copy, which a receive lands in it at completion)."""
    world, array = _the_world(owner), _array(owner, "tensor", tensor)
    array, land = _message(kind, array)
    start = world.start_send if kind == "send" else world.start_recv
    request = start(array, peer, tag)
    way = "to" if kind == "send" else "from"
    rank = "any rank" if peer is None else f"rank {peer}"
    what = f"{owner} of a tensor of shape {tuple(array.shape)} {way} {rank} (tag {tag})"
    return P2PWork(world, request, what, land, peer, buffer=array)


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None) -> P2PWork:
    """Start sending ``tensor`` to rank ``dst``; do not write it until the work is done."""
    dst = _peer("isend", "dst", dst, group_dst, group)
    return _start("isend", "send", tensor, dst, tag)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src=None) -> P2PWork:
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank)."""
    src = _peer("irecv", "src", src, group_src, group, optional=True)
    return _start("irecv", "recv", tensor, src, tag)


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (another rank) and wait until it has gone."""
    dst = _peer("send", "dst", dst, group_dst, group)
    _not_self("send", "destination", dst)
    _start("send", "send", tensor, dst, tag).wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender."""
    src = _peer("recv", "src", src, group_src, group, optional=True)
    work = _start("recv", "recv", tensor, src, tag)
    work.wait()
    return work.source_rank()


def _not_self(owner: str, kind: str, rank) -> None:
    if rank == _the_world(owner).rank:
        raise ValueError(
            f"{owner}: invalid {kind} rank {rank}: {kind} rank should not be the same as the "
            "rank of the current process"
        )


# ====================================================================== batches
class P2POp:
    """One send or receive of ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``,
    ``peer`` (or ``group_peer``) the other rank."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op is not isend and op is not irecv:
            raise ValueError(
                f"P2POp: invalid op {op!r}: expected tricycle.distributed.isend or irecv"
            )
        _array("P2POp", "tensor", tensor)
        self.op, self.tensor, self.group, self.tag = op, tensor, group, tag
        self.peer = _peer("P2POp", "peer", peer, group_peer, group)
        self.group_peer = self.peer

    def __repr__(self) -> str:
        array = self.tensor.array
        return f"P2POp({self.op.__name__}, peer={self.peer}, {array.shape}, {array.dtype})"


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every send and receive of ``p2p_op_list`` (``P2POp``\\ s) as one batch, whose
    order on either side cannot deadlock (on GPUs: one NCCL group); returns their works.
    Several messages between the same two ranks in one direction match in order; a
    non-contiguous tensor goes through a contiguous copy within the same batch."""
    owner = "batch_isend_irecv"
    if not isinstance(p2p_op_list, list) or not p2p_op_list:
        raise ValueError(f"{owner}: p2p_op_list must be a non-empty list of P2POp, got "
                         f"{p2p_op_list!r}")  # fmt: skip
    for op in p2p_op_list:
        if not isinstance(op, P2POp):
            raise ValueError(f"{owner}: each op must be a P2POp, got {type(op).__name__}")
    world = _the_world(owner)
    kinds = {isend: "send", irecv: "recv"}
    messages, lands = [], []
    for op in p2p_op_list:
        array, land = _message(kinds[op.op], op.tensor.array)
        messages.append((kinds[op.op], array, op.peer, op.tag))
        lands.append(land)
    requests = world.start_batch(messages)
    works = []
    for (kind, array, peer, tag), request, land in zip(messages, requests, lands):
        what = f"{owner}: a {kind} of shape {tuple(array.shape)} with rank {peer} (tag {tag})"
        works.append(P2PWork(world, request, what, land, peer, buffer=array))
    return works


# ====================================================================== objects
def send_object_list(object_list: list, dst: int | None = None, group=None, device=None,
                     group_dst=None, use_batch: bool = False) -> None:  # fmt: skip
    """Send the picklable objects of ``object_list`` to rank ``dst``, whose
    ``recv_object_list`` gives a list of the same length: their sizes, then their bytes."""
    owner = "send_object_list"
    dst = _peer(owner, "dst", dst, group_dst, group)
    _not_self(owner, "destination", dst)
    _list(owner, object_list)
    world = _the_world(owner)
    for request, _ in world.start_send_objects(object_list, dst):
        world.wait(request, f"{owner}: a send to rank {dst}")


def recv_object_list(object_list: list, src: int | None = None, group=None, device=None,
                     group_src=None, use_batch: bool = False) -> int:  # fmt: skip
    """Fill ``object_list`` (in place, as long as the sent list) with rank ``src``'s
    objects (None: any rank's, on the host); returns the sender."""
    owner = "recv_object_list"
    src = _peer(owner, "src", src, group_src, group, optional=True)
    _not_self(owner, "source", src)
    _list(owner, object_list)
    object_list[:], sender = _the_world(owner).recv_objects(len(object_list), src)
    return sender


def _list(owner: str, object_list) -> None:
    if not isinstance(object_list, list):
        raise TypeError(f"{owner}: object_list must be a list, got {type(object_list).__name__}")
