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
``isend``/``irecv`` may pair with oneself. On GPUs (NCCL) messages have no tags (``tag``
must be 0) and ``batch_isend_irecv`` runs as one NCCL group.

**Groups**, as torch's: with ``group=`` a sub-group (``new_group``) the message travels over
the group's communicator; ``dst``/``src`` are World ranks (of the group's members), and
``group_dst``/``group_src`` the group's ranks; ``recv`` returns the sender's World rank,
a work's ``source_rank()`` its rank in the group. A rank outside the group (it holds
NON_GROUP_MEMBER) may not name a peer: ``send``/``isend`` raise a ValueError, while
``irecv`` warns and returns None (``recv``: -1). One ``batch_isend_irecv`` takes the ops of
one group.
"""

from tricycle.backend import array_module
from tricycle.parallel.torch_process_group import (
    Work,
    _array,
    _global_rank,
    _group_rank,
    _member_of,
    _not_member,
    _resolve,
)

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
        # world: the World or the Group the message travels in (its ranks are the group's)
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


def _peer(owner: str, name: str, value, group_value, group, optional: bool = False) -> tuple:
    """(the World or Group the message travels in, the peer's rank there) from torch's two
    spellings: ``name`` (the World's rank) or ``group_<name>`` (the group's)."""
    over = _member_of(owner, group)
    return over, _group_rank(owner, over, name, value, group_value, optional)


def _message(kind: str, array) -> tuple:
    """(a contiguous array to send or receive, and for a receive into a non-contiguous
    ``array`` the call that lands the received copy in it; else None)."""
    if array.flags.c_contiguous:
        return array, None
    view, array = array, array_module(array).ascontiguousarray(array)
    return array, (lambda: view.__setitem__(..., array)) if kind == "recv" else None


def _start(owner: str, kind: str, tensor, world, peer, tag: int) -> P2PWork:
    """Start a send or a receive of ``tensor``'s array in ``world`` (the World or a Group;
    ``peer`` its rank there), a non-contiguous one through a contiguous copy, which a
    receive lands in it at completion."""
    array = _array(owner, "tensor", tensor)
    array, land = _message(kind, array)
    start = world.start_send if kind == "send" else world.start_recv
    request = start(array, peer, tag)
    way = "to" if kind == "send" else "from"
    rank = "any rank" if peer is None else f"rank {_global_rank(world, peer)}"
    what = f"{owner} of a tensor of shape {tuple(array.shape)} {way} {rank} (tag {tag})"
    return P2PWork(world, request, what, land, peer, buffer=array)


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None) -> P2PWork:
    """Start sending ``tensor`` to rank ``dst``; do not write it until the work is done."""
    over, dst = _peer("isend", "dst", dst, group_dst, group)
    return _start("isend", "send", tensor, over, dst, tag)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank of the group)."""
    _array("irecv", "tensor", tensor)
    if _resolve("irecv", group) is None:
        return _not_member("irecv")
    over, src = _peer("irecv", "src", src, group_src, group, optional=True)
    return _start("irecv", "recv", tensor, over, src, tag)


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (another rank) and wait until it has gone."""
    over, dst = _peer("send", "dst", dst, group_dst, group)
    _not_self("send", "destination", over, dst)
    _start("send", "send", tensor, over, dst, tag).wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any rank of the group); returns the
    sender's World rank (-1 on a rank outside ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return _global_rank(work.world, work.source_rank())


def _not_self(owner: str, kind: str, over, rank) -> None:
    """torch's refusal of a blocking message to or from oneself (``rank``: ``over``'s)."""
    if rank == over.rank:
        raise ValueError(
            f"{owner}: invalid {kind} rank {_global_rank(over, rank)}: {kind} rank should not "
            "be the same as the rank of the current process"
        )


# ====================================================================== batches
class P2POp:
    """One send or receive of ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``,
    ``peer`` the other rank (the World's; ``group_peer``: its rank in ``group``), as torch's:
    ``peer`` and ``group_peer`` then hold both."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op is not isend and op is not irecv:
            raise ValueError(
                f"P2POp: invalid op {op!r}: expected tricycle.distributed.isend or irecv"
            )
        _array("P2POp", "tensor", tensor)
        self.group, self.group_peer = _peer("P2POp", "peer", peer, group_peer, group)
        self.op, self.tensor, self.tag = op, tensor, tag
        self.peer = _global_rank(self.group, self.group_peer)

    def __repr__(self) -> str:
        array = self.tensor.array
        return f"P2POp({self.op.__name__}, peer={self.peer}, {array.shape}, {array.dtype})"


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every send and receive of ``p2p_op_list`` (``P2POp``\\ s) as one batch, whose
    order on either side cannot deadlock (on GPUs: one NCCL group); returns their works.
    Every op must be of one group.
    Several messages between the same two ranks in one direction match in order; a
    non-contiguous tensor goes through a contiguous copy within the same batch."""
    owner = "batch_isend_irecv"
    if not isinstance(p2p_op_list, list) or not p2p_op_list:
        raise ValueError(f"{owner}: p2p_op_list must be a non-empty list of P2POp, got "
                         f"{p2p_op_list!r}")  # fmt: skip
    for op in p2p_op_list:
        if not isinstance(op, P2POp):
            raise ValueError(f"{owner}: each op must be a P2POp, got {type(op).__name__}")
    world = p2p_op_list[0].group
    if any(op.group is not world for op in p2p_op_list):
        raise ValueError(f"{owner}: All ops need to use the same group.")
    kinds = {isend: "send", irecv: "recv"}
    messages, lands = [], []
    for op in p2p_op_list:
        array, land = _message(kinds[op.op], op.tensor.array)
        messages.append((kinds[op.op], array, op.group_peer, op.tag))
        lands.append(land)
    requests = world.start_batch(messages)
    works = []
    for (kind, array, peer, tag), request, land in zip(messages, requests, lands):
        rank = _global_rank(world, peer)
        what = f"{owner}: a {kind} of shape {tuple(array.shape)} with rank {rank} (tag {tag})"
        works.append(P2PWork(world, request, what, land, peer, buffer=array))
    return works


# ====================================================================== objects
def send_object_list(object_list: list, dst: int | None = None, group=None, device=None,
                     group_dst=None, use_batch: bool = False) -> None:  # fmt: skip
    """Send the picklable objects of ``object_list`` to rank ``dst``, whose
    ``recv_object_list`` gives a list of the same length: their sizes, then their bytes."""
    owner = "send_object_list"
    _list(owner, object_list)
    over, dst = _peer(owner, "dst", dst, group_dst, group)
    _not_self(owner, "destination", over, dst)
    for request, _ in over.start_send_objects(object_list, dst):
        over.wait(request, f"{owner}: a send to rank {_global_rank(over, dst)}")


def recv_object_list(object_list: list, src: int | None = None, group=None, device=None,
                     group_src=None, use_batch: bool = False) -> int:  # fmt: skip
    """Fill ``object_list`` (in place, as long as the sent list) with rank ``src``'s
    objects (None: any rank's of the group, on the host); returns the sender's World rank."""
    owner = "recv_object_list"
    _list(owner, object_list)
    over, src = _peer(owner, "src", src, group_src, group, optional=True)
    _not_self(owner, "source", over, src)
    object_list[:], sender = over.recv_objects(len(object_list), src)
    return _global_rank(over, sender)


def _list(owner: str, object_list) -> None:
    if not isinstance(object_list, list):
        raise TypeError(f"{owner}: object_list must be a list, got {type(object_list).__name__}")
