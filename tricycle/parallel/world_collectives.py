"""The World's collectives: barrier, all-reduce, broadcast, all-gather, reduce-scatter and
their object forms, each a request tested against the world's deadline (``World.wait``).

Every rank must call each collective, in the same order. Host (numpy) arrays go through MPI,
GPU (cupy) arrays through NCCL (``tricycle.parallel.engines``); in a world of one they are the
local arithmetic. ``World`` takes these methods from ``Collectives``; torch's names
(``dist.all_reduce``...) are ``tricycle.parallel.torch_collectives``.
"""

import pickle

import numpy as np

from tricycle import backend
from tricycle.optimisers import named_parameters
from tricycle.parallel.engines import DistributedError


class Collectives:
    """The World's collectives (mixed into ``World``: uses its ``rank``, ``world_size``,
    ``_engine``, ``_host`` and ``wait``)."""

    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""
        self.wait(self._host.barrier(), "a barrier")

    def start_all_reduce(self, array, mean: bool = False):
        """Start summing ``array`` (contiguous; in place) over the ranks, or with ``mean``
        averaging it (a float array: on GPUs in NCCL's kernel, no pass of its own); returns
        a request for ``wait``. The array must not be touched until then."""
        if not _contiguous(array):
            raise DistributedError(
                f"all_reduce: the array (shape {array.shape}) must be contiguous"
            )
        if mean and array.dtype.kind != "f" and array.dtype.name != "bfloat16":
            raise DistributedError(
                f"all_reduce: the mean of an array of dtype {array.dtype}; pass a float array"
            )
        return self._engine(array).all_reduce(array, mean)

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
        if self.world_size == 1:  # it is rank root's already
            return array
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

    def all_gather(self, array, check: bool = True):
        """Every rank's ``array`` (same shape and dtype on all ranks), stacked:
        (world_size, ...). With ``check`` the ranks first exchange their arrays' sizes and
        dtypes (a few bytes through the host: no GPU synchronisation) and every rank refuses
        a mismatch with the same error, where the transfer itself would cut or pad another
        rank's data silently; callers whose arrays agree by construction (equal padded
        shards, object sizes) pass ``check=False`` and skip that message."""
        xp = backend.array_module(array)
        send = xp.ascontiguousarray(array)
        if check and self.world_size > 1:
            self._check_same_size("all_gather", send)
        receive = xp.empty((self.world_size, *array.shape), dtype=array.dtype)
        self.wait(
            self._engine(send).all_gather(send.reshape(-1), receive.reshape(-1)),
            f"an all-gather of {array.shape}",
        )
        return receive

    def _check_same_size(self, owner: str, array) -> None:
        """Refuse, on every rank alike, arrays whose sizes or dtypes differ between ranks."""
        kind = array.dtype.kind
        mine = np.array([array.size, ord(kind), array.dtype.itemsize], dtype=np.int64)
        every = np.empty((self.world_size, mine.size), dtype=np.int64)
        what = f"{owner}: an exchange of the arrays' sizes"
        self.wait(self._host.all_gather(mine, every.reshape(-1)), what)
        if (every != mine).any():
            seen = ", ".join(f"rank {r}: {n} values of {chr(k)}{b}" for r, (n, k, b) in
                             enumerate(every.tolist()))  # fmt: skip
            raise DistributedError(
                f"{owner}: the ranks' arrays differ ({seen}; this rank's has shape "
                f"{tuple(array.shape)}); every rank must pass the same shape and dtype"
            )

    def start_reduce_scatter(self, send, receive, mean: bool = False):
        """Start writing into ``receive`` (contiguous, ``send.size // world_size`` values)
        this rank's block of the sum (or, with ``mean``, the mean) over the ranks of
        ``send`` (contiguous; rank r's block is ``send``'s r-th slice of that size): MPI's
        reduce-scatter on host arrays, NCCL's on GPU arrays. Returns a request for
        ``wait``; neither array may be touched until then."""
        if not (_contiguous(send) and _contiguous(receive)):
            raise DistributedError(
                f"reduce_scatter: the arrays (shapes {send.shape}, {receive.shape}) must be "
                "contiguous"
            )
        if send.size != receive.size * self.world_size or send.dtype != receive.dtype:
            raise DistributedError(
                f"reduce_scatter: {send.size} values of {send.dtype} sent by each of "
                f"{self.world_size} ranks into {receive.size} of {receive.dtype}; expected "
                f"world_size * receive.size of receive's dtype"
            )
        if mean and send.dtype.kind != "f" and send.dtype.name != "bfloat16":
            raise DistributedError(
                f"reduce_scatter: the mean of an array of dtype {send.dtype}; pass a float array"
            )
        return self._engine(send).reduce_scatter(send, receive, mean)

    def reduce_scatter(self, array, mean: bool = False):
        """This rank's block of the sum (or mean) over the ranks of ``array`` (numpy or cupy,
        its size a multiple of ``world_size``; rank r gets the r-th of ``world_size`` equal
        blocks of it, flat): what an all-reduce then a slice gives, moving 1/world_size of
        the data. ``array`` is left as it is."""
        xp = backend.array_module(array)
        send = xp.ascontiguousarray(array).reshape(-1)
        if send.size % self.world_size:
            raise DistributedError(
                f"reduce_scatter: an array of {send.size} values (shape {array.shape}) does "
                f"not split into {self.world_size} equal blocks; pad it to a multiple"
            )
        receive = xp.empty(send.size // self.world_size, dtype=send.dtype)
        what = f"a reduce-scatter of {send.nbytes} bytes"
        self.wait(self.start_reduce_scatter(send, receive, mean), what)
        return receive

    def all_gather_object(self, obj) -> list:
        """Every rank's ``obj`` (picklable), as a list indexed by rank."""
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        sizes = self.all_gather(np.array([data.size], dtype=np.int64), check=False)[:, 0]
        padded = np.zeros(int(sizes.max()), dtype=np.uint8)
        padded[: data.size] = data
        rows = self.all_gather(padded, check=False)  # padded to the longest: equal sizes
        return [pickle.loads(row[:n].tobytes()) for row, n in zip(rows, sizes)]

    def gather_object(self, obj, root: int = 0) -> list | None:
        """Every rank's ``obj`` (picklable) as a list indexed by rank, on rank ``root``;
        None on the others."""
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
        sizes = self.all_gather(np.array([data.size], dtype=np.int64), check=False)[:, 0]
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


def _contiguous(array) -> bool:
    return array.flags.c_contiguous
