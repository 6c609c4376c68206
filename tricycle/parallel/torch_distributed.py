"""torch.distributed's calls and ``DistributedDataParallel``, on tricycle's World.

A PyTorch script's data-parallel loop runs with its imports changed::

    import tricycle.distributed as dist
    from tricycle.distributed import DistributedDataParallel as DDP

    dist.init_process_group("nccl")              # the processes of `tricycle-run -n N`
    model = DDP(model, device_ids=[dist.get_node_local_rank()])
    for x, y in loader:                          # a loader with a DistributedSampler
        loss = loss_fn(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    dist.all_reduce(t, op=dist.ReduceOp.SUM); dist.barrier(); dist.destroy_process_group()

**The process group** is the World of ``tricycle.parallel.distributed.init()``, one per
process: tricycle's own calls (``init``, ``World``, ``DataParallel``, ``fail_together``) keep
their names and meanings beside these. The processes are started by ``tricycle-run -n N``
(mpiexec), which takes torchrun's flags (``--standalone --nproc_per_node=N``) and sets its
$RANK, $LOCAL_RANK, $WORLD_SIZE... on every rank; a $WORLD_SIZE or $RANK that disagrees with
the launch (a real torchrun's processes) is an error, as is an explicit ``world_size`` or
``rank``. The backend names the engines' start only:
"nccl" uses GPU ``local_rank`` and NCCL for GPU arrays, "gloo" and "mpi" stay on the host,
None starts the GPU where there is one; host arrays always go through MPI.

**Collectives** act in place on a Tensor's array, as torch's, and return when done (with
``async_op=True`` a ``Work`` that is done already). ``ReduceOp.SUM`` and ``AVG`` are
all-reduces; ``MAX``, ``MIN`` and ``PRODUCT`` gather every rank's tensor and reduce it on
each rank (``world_size`` copies: for metrics, not gradients). There is one group, the
world: ``group`` must be None.

**DistributedDataParallel** is a Layer around ``module`` whose gradients are averaged over
the ranks by the time ``loss.backward()`` returns: its gradient hooks fill
``DataParallel``'s buckets during backward, and the first of them queues the buckets'
``finish`` to run when backward's walk ends (``tricycle.backprop.queue_callback``, as
torch's reducer queues its own). A parameter that gets no gradient in a backward counts as
zero on that rank, whatever ``find_unused_parameters`` says: no rank waits for it (torch
raises at the next forward instead, and leaves a parameter no rank used without a gradient;
here it gets zeros).
"""

import enum
import os
from contextlib import contextmanager
from datetime import timedelta

from tricycle import backprop, checks
from tricycle.backend import array_module, cupy_available
from tricycle.layers import Layer
from tricycle.parallel import distributed
from tricycle.parallel.buckets import DataParallel
from tricycle.tensor import Tensor

__all__ = [
    "DistributedDataParallel",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_object",
    "all_gather_into_tensor",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "get_backend",
    "get_default_backend_for_device",
    "get_node_local_rank",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "reduce_scatter",
    "reduce_scatter_tensor",
]

BACKENDS = ("nccl", "gloo", "mpi")
_INIT_METHODS = ("env://", "tcp://", "file://")  # the launcher joins the processes: ignored
_state = {"backend": None, "world": None, "mpi_ended": False}  # what init_process_group set


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the ranks' tensors."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class Work:
    """What a collective called with ``async_op=True`` returns: it is done already."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


# ====================================================================== the process group
def init_process_group(
    backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1
):
    """Join the processes the launcher started (a world of one without it): torch's call.

    ``backend``: "nccl" (GPU ``local_rank`` and NCCL), "gloo" or "mpi" (the host), torch's
    "cpu:gloo,cuda:nccl" form, or None (the GPU where there is one). ``init_method`` is
    accepted and ignored (mpiexec joins the processes); ``timeout`` (seconds or a timedelta)
    is how long a collective waits for the other ranks before the job ends.
    ``world_size`` and ``rank``, where given, must be the launch's."""
    owner = "init_process_group"
    if _state["world"] is not None and _state["world"] is distributed._world:
        raise ValueError(f"{owner}: the default process group is initialized already")
    gpu = _wants_gpu(owner, backend)
    if init_method is not None and not str(init_method).startswith(_INIT_METHODS):
        raise ValueError(
            f"{owner}: init_method must start with one of {_INIT_METHODS} "
            f"(it is ignored: mpiexec joins the processes), got {init_method!r}"
        )
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    checks.positive(owner, "timeout", timeout, optional=True)
    size, me = distributed.launched_size(), distributed.launched_rank()
    for name, given, launched in (("world_size", world_size, size), ("rank", rank, me)):
        checks.integer(owner, name, given, low=-1)
        if given != -1 and given != launched:
            raise ValueError(
                f"{owner}: {name}={given}, but this process is rank {me} of "
                f"{size} started by the launcher (tricycle-run -n N, mpiexec)"
            )
    for variable, launched in (("WORLD_SIZE", size), ("RANK", me)):
        value = os.environ.get(variable)
        if value is not None and value.strip() != str(launched):
            raise ValueError(
                f"{owner}: ${variable}={value}, but this process is rank {me} of {size} "
                "started by mpiexec: start tricycle's processes with tricycle-run (mpiexec), "
                "which takes torchrun's flags: `tricycle-run --standalone --nproc_per_node=N "
                "script.py`, not torchrun"
            )
    if _state["mpi_ended"] and size > 1:
        raise ValueError(
            f"{owner}: MPI cannot start again in a process after "
            "destroy_process_group(); initialize once per run"
        )
    _state["world"] = distributed.init(timeout=timeout, gpu=gpu)
    _state["backend"] = None if backend is None else str(backend).lower()


def _wants_gpu(owner: str, name) -> bool:
    """Whether the backend ``name`` asks for the GPU; a ValueError for a name not torch's."""
    if name is None:
        return cupy_available()
    if not isinstance(name, str):
        raise TypeError(f"{owner}: backend must be a string or None, got {type(name).__name__}")
    parts = [part.split(":")[-1] for part in name.lower().split(",")]  # "cpu:gloo,cuda:nccl"
    if not parts or any(part not in BACKENDS for part in parts):
        raise ValueError(f"{owner}: backend must be one of {BACKENDS} or None, got {name!r}")
    if "nccl" in parts and not cupy_available():
        raise ValueError(
            f"{owner}: backend {name!r} needs a CUDA GPU and cupy, and none is "
            "available; use 'gloo' or 'mpi' for processes on the host"
        )
    return "nccl" in parts


def is_available() -> bool:
    """True: tricycle's collectives run everywhere (a world of one without mpiexec)."""
    return True


def is_initialized() -> bool:
    """Whether this process is in a World (``init_process_group`` or ``init``)."""
    return distributed._world is not None


def _the_world(owner: str) -> "distributed.World":
    """The process's World (``distributed.init``'s, held by that module), or an error."""
    world = distributed._world
    if world is None:
        raise RuntimeError(
            f"{owner}: the default process group has not been initialized; "
            "call init_process_group() first"
        )
    return world


def get_rank(group=None) -> int:
    """This process's rank (0 to ``get_world_size() - 1``)."""
    _check_group("get_rank", group)
    return _the_world("get_rank").rank


def get_world_size(group=None) -> int:
    """The number of processes."""
    _check_group("get_world_size", group)
    return _the_world("get_world_size").world_size


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among those on its machine (its GPU's index); before
    ``init_process_group``, $LOCAL_RANK (torchrun's and tricycle-run's), else
    ``fallback_rank`` where given, as torch's."""
    if distributed._world is None and os.environ.get("LOCAL_RANK", "").strip().isdigit():
        return int(os.environ["LOCAL_RANK"])
    if distributed._world is None and fallback_rank is not None:
        return checks.integer("get_node_local_rank", "fallback_rank", fallback_rank, low=0)
    return _the_world("get_node_local_rank").local_rank


def get_backend(group=None) -> str:
    """The backend named at ``init_process_group``; without one, the engine of the world's
    arrays: "nccl" once the GPU is started, else "mpi"."""
    _check_group("get_backend", group)
    world = _the_world("get_backend")
    if _state["backend"] is not None and _state["world"] is world:
        return _state["backend"]
    return "nccl" if world.device is not None else "mpi"


def get_default_backend_for_device(device) -> str:
    """torch's backend for a device's collectives: "nccl" for a GPU ("cuda", "cuda:N", a GPU
    index, a device object of type "cuda"), "gloo" for the CPU, as ``init_process_group``
    takes them."""
    owner = "get_default_backend_for_device"
    kind = getattr(device, "type", device)  # torch.device("cuda:0").type is "cuda"
    if isinstance(kind, str):
        kind = kind.strip().lower().partition(":")[0]
    elif checks.is_integer(kind) and not isinstance(kind, bool) and kind >= 0:
        kind = "cuda"  # torch reads an index as a GPU's
    if kind not in ("cpu", "cuda", "gpu"):
        error = ValueError if isinstance(kind, str) or checks.is_integer(kind) else TypeError
        checks.fail(
            owner, "device", "'cpu', 'cuda', 'cuda:N', a GPU index or a device", device, error
        )
    return "gloo" if kind == "cpu" else "nccl"


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank has called ``barrier``."""
    _check_group("barrier", group)
    _the_world("barrier").barrier()
    return _done(async_op)


def destroy_process_group(group=None) -> None:
    """Wait for every rank, then shut MPI and NCCL down (``World.finalize``); nothing if no
    group is initialized. Under mpiexec a process cannot initialize again after it."""
    _check_group("destroy_process_group", group)
    world = distributed._world
    if world is None:
        return
    _state["mpi_ended"] = _state["mpi_ended"] or world.MPI is not None
    world.finalize()
    _state["world"] = _state["backend"] = None


# ====================================================================== collectives
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Replace ``tensor`` (in place) by its ``op`` over the ranks."""
    world, array = _the_world("all_reduce"), _array("all_reduce", "tensor", tensor)
    _check_group("all_reduce", group)
    if not isinstance(op, ReduceOp):
        raise TypeError(
            f"all_reduce: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}"
        )
    if op is ReduceOp.AVG and array.dtype.kind != "f" and array.dtype.name != "bfloat16":
        raise TypeError(
            f"all_reduce: ReduceOp.AVG of a tensor of dtype {array.dtype} "
            f"(shape {array.shape}); pass a float tensor"
        )
    if world.world_size == 1:  # each op of one rank's tensor is the tensor itself
        return _done(async_op)
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        contiguous = array.flags.c_contiguous  # then flat is a view: reduced in place
        flat = array if contiguous else array_module(array).ascontiguousarray(array)
        flat = flat.reshape(-1)
        request = world.start_all_reduce(flat, mean=op is ReduceOp.AVG)
        world.wait(request, f"all_reduce of a tensor of shape {array.shape}")
        if not contiguous:
            array[...] = flat.reshape(array.shape)
    else:
        stacked = world.all_gather(array)  # (world_size, *shape)
        reduce = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        array[...] = getattr(stacked, reduce)(axis=0)
    return _done(async_op)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False):
    """Overwrite ``tensor`` (in place) with rank ``src``'s."""
    world, array = _the_world("broadcast"), _array("broadcast", "tensor", tensor)
    _check_group("broadcast", group)
    _check_rank("broadcast", "src", src, world)
    world.broadcast(array, src)
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` (in place) with rank i's ``tensor``."""
    world, array = _the_world("all_gather"), _array("all_gather", "tensor", tensor)
    _check_group("all_gather", group)
    _check_list("all_gather", "tensor_list", tensor_list, world)
    outs = [_array("all_gather", f"tensor_list[{i}]", t) for i, t in enumerate(tensor_list)]
    for i, out in enumerate(outs):
        if out.shape != array.shape or out.dtype != array.dtype:
            raise ValueError(
                f"all_gather: tensor_list[{i}] is {out.shape} {out.dtype}; "
                f"expected the tensor's {array.shape} {array.dtype}"
            )
    for out, row in zip(outs, world.all_gather(array)):
        out[...] = row
    return _done(async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):  # fmt: skip
    """Fill ``output_tensor`` (world_size times ``input_tensor``'s values: stacked on a first
    dim, or concatenated along dim 0) with every rank's ``input_tensor``, rank order."""
    owner = "all_gather_into_tensor"
    world, out = _the_world(owner), _array(owner, "output_tensor", output_tensor)
    array = _array(owner, "input_tensor", input_tensor)
    _check_group(owner, group)
    n = world.world_size
    if out.size != n * array.size or out.dtype != array.dtype:
        raise ValueError(
            f"{owner}: output_tensor is {out.shape} {out.dtype}; expected {n} times the input's "
            f"{array.shape} {array.dtype} values (({n}, *shape) or shape[0] * {n} rows)"
        )
    out[...] = world.all_gather(array).reshape(out.shape)
    return _done(async_op)


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None,
                   async_op: bool = False):  # fmt: skip
    """Fill ``output`` with the ``op`` over the ranks of their ``input_list[rank]`` (a list
    of ``world_size`` tensors of ``output``'s shape)."""
    world = _the_world("reduce_scatter")
    _check_list("reduce_scatter", "input_list", input_list, world)
    out = _array("reduce_scatter", "output", output)
    parts = [_array("reduce_scatter", f"input_list[{i}]", t) for i, t in enumerate(input_list)]
    for i, part in enumerate(parts):
        if part.shape != out.shape or part.dtype != out.dtype:
            raise ValueError(
                f"reduce_scatter: input_list[{i}] is {part.shape} {part.dtype}; expected "
                f"output's {out.shape} {out.dtype}"
            )
    whole = array_module(out).stack(parts)
    return _reduce_scatter("reduce_scatter", world, out, whole, op, group, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,  # noqa: A002
                          group=None, async_op: bool = False):  # fmt: skip
    """Fill ``output`` with this rank's block of the ``op`` over the ranks of ``input``
    (world_size blocks of ``output``'s values: ``(world_size, *shape)`` or ``shape[0] *
    world_size`` rows): torch's reduce-scatter, 1/world_size of an all-reduce's traffic."""
    owner = "reduce_scatter_tensor"
    world, out = _the_world(owner), _array(owner, "output", output)
    array = _array(owner, "input", input)
    n = world.world_size
    if array.size != n * out.size or array.dtype != out.dtype:
        raise ValueError(
            f"{owner}: input is {array.shape} {array.dtype}; expected {n} times output's "
            f"{out.shape} {out.dtype} values"
        )
    return _reduce_scatter(owner, world, out, array, op, group, async_op)


def _reduce_scatter(owner: str, world, out, whole, op, group, async_op: bool):
    """``out[...]`` = this rank's block of ``op`` over the ranks of ``whole`` (world_size
    blocks of ``out``'s size): SUM and AVG by the World's reduce-scatter, the others by a
    gather (for metrics, as ``all_reduce``'s)."""
    _check_group(owner, group)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{owner}: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}")
    if op is ReduceOp.AVG and out.dtype.kind != "f" and out.dtype.name != "bfloat16":
        raise TypeError(f"{owner}: ReduceOp.AVG of a tensor of dtype {out.dtype}; pass floats")
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        mine = world.reduce_scatter(whole, mean=op is ReduceOp.AVG)
    else:
        reduce = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        stacked = world.all_gather(whole.reshape(world.world_size, -1))  # (ranks, blocks, m)
        mine = getattr(stacked[:, world.rank], reduce)(axis=0)
    out[...] = mine.reshape(out.shape)
    return _done(async_op)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill ``object_list[i]`` (a list of ``world_size`` items) with rank i's ``obj``
    (anything picklable)."""
    world = _the_world("all_gather_object")
    _check_group("all_gather_object", group)
    _check_list("all_gather_object", "object_list", object_list, world)
    object_list[:] = world.all_gather_object(obj)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None) -> None:
    """Replace the items of ``object_list`` (in place, the same length on every rank) with
    rank ``src``'s (picklable)."""
    world = _the_world("broadcast_object_list")
    _check_group("broadcast_object_list", group)
    _check_rank("broadcast_object_list", "src", src, world)
    if not isinstance(object_list, list):
        raise TypeError(
            f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}"
        )
    sent = world.broadcast_object(list(object_list), src)
    if len(sent) != len(object_list):
        raise ValueError(
            f"broadcast_object_list: rank {src} sent {len(sent)} objects; this "
            f"rank's object_list holds {len(object_list)}: make them equal"
        )
    object_list[:] = sent


def _done(async_op: bool) -> "Work | None":
    checks.boolean("collective", "async_op", async_op)
    return Work() if async_op else None


def _check_group(owner: str, group) -> None:
    if group is not None:
        raise ValueError(
            f"{owner}: tricycle has one process group, the world of every "
            f"rank: pass group=None, got {group!r}"
        )


def _check_rank(owner: str, name: str, value, world) -> None:
    checks.integer(owner, name, value, low=0)
    if value >= world.world_size:
        raise ValueError(f"{owner}: {name}={value}, but the ranks are 0 to {world.world_size - 1}")


def _check_list(owner: str, name: str, items, world) -> None:
    if not isinstance(items, list) or len(items) != world.world_size:
        size = len(items) if isinstance(items, list) else type(items).__name__
        raise ValueError(
            f"{owner}: {name} must be a list of world_size={world.world_size} items, got {size}"
        )


def _array(owner: str, name: str, tensor):
    """The array of a Tensor, which the collective writes in place."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{owner}: {name} must be a tricycle Tensor, got {type(tensor).__name__}")
    return tensor.array


# ====================================================================== DDP
class DistributedDataParallel(Layer):
    """``module`` with its gradients averaged over the ranks by the end of each backward.

    Args (torch's):
        module: the Layer, on its device already (move it before wrapping it).
        device_ids, output_device: None for a model on the host; for one on a GPU, None or
            that GPU (``[local_rank]``).
        dim: 0 (tricycle does not scatter inputs: each rank gives its own batch).
        broadcast_buffers: give every rank rank 0's buffers (batch norm's running
            statistics) at each forward in training mode, as torch's.
        process_group: None (the world).
        bucket_cap_mb: the size of the gradient buckets; None: 25 MiB on a GPU (torch's),
            ``DataParallel``'s smaller default on the host.
        find_unused_parameters, check_reduction, static_graph: accepted; a parameter
            without a gradient counts as zero whatever they say (see the module).
        gradient_as_bucket_view: let backward accumulate each gradient straight into its
            bucket (no copy); False copies it there. Either way ``.grad`` is a view of its
            bucket after backward.

    At construction every rank gets rank 0's parameters and buffers. ``no_sync()`` keeps
    the gradients of the backward passes inside it local (gradient accumulation); the next
    backward outside it averages the sums. ``state_dict()`` names the module's entries
    ``module.<name>``, as torch's.
    """

    def __init__(
        self,
        module: Layer,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ):
        owner = "DistributedDataParallel"
        if not isinstance(module, Layer):
            raise TypeError(f"{owner}: module must be a Layer, got {type(module).__name__}")
        for name, value in (
            ("broadcast_buffers", broadcast_buffers),
            ("find_unused_parameters", find_unused_parameters),
            ("check_reduction", check_reduction),
            ("static_graph", static_graph),
            ("gradient_as_bucket_view", gradient_as_bucket_view),
        ):
            checks.boolean(owner, name, value)
        checks.positive(owner, "bucket_cap_mb", bucket_cap_mb, optional=True)
        if dim != 0:
            raise ValueError(f"{owner}: dim must be 0 (each rank gives its own batch), got {dim}")
        _check_group(owner, process_group)
        params = [p for p in module.parameters() if p.requires_grad]  # a frozen one: no grad
        if not params:
            raise ValueError(
                f"{owner}: the module ({type(module).__name__}) has no parameter "
                "that requires a gradient: there is nothing to average"
            )
        world = _the_world(owner)
        _check_devices(owner, params, device_ids, output_device, world)
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        for _, t in module.named_tensors():  # every rank starts from rank 0's state
            world.broadcast(t.array, 0)
        bucket_bytes = None if bucket_cap_mb is None else max(1, int(bucket_cap_mb * 2**20))
        self._reducer = DataParallel(
            module,
            world,
            bucket_bytes=bucket_bytes,
            gradient_as_bucket_view=gradient_as_bucket_view,
        )
        self._world, self._queued = world, False
        self._handles = []
        if world.world_size > 1:  # (alone, the reducer sends nothing and needs no finish)
            self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

    def forward(self, *args, **kwargs):
        if self._queued:  # the last backward raised before its end: forget its buckets
            self._reducer.abandon()
            self._queued = False
        if self.broadcast_buffers and self.training and self._world.world_size > 1:
            for _, buffer in self.module.named_buffers():
                self._world.broadcast(buffer.array, 0)
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self):
        """Backward passes in this block keep their gradients local; they add up in ``.grad``
        until a backward outside it averages them."""
        with self._reducer.no_sync():
            yield

    @property
    def require_backward_grad_sync(self) -> bool:
        """torch's flag behind ``no_sync()``: while False, backward passes keep their gradients
        local (they add up in ``.grad``) until one runs with it True again, which averages the
        sums (build-nanogpt sets it False for every micro-step but the last)."""
        return self._reducer.syncing

    @require_backward_grad_sync.setter
    def require_backward_grad_sync(self, value: bool) -> None:
        checks.boolean("DistributedDataParallel", "require_backward_grad_sync", value)
        self._reducer.syncing = bool(value)

    def _on_grad(self, param: Tensor) -> None:
        """A gradient is final (the reducer's own hook has put it in its bucket): have the
        buckets finished once this backward has walked its graph."""
        if self._reducer.syncing and not self._queued:
            self._queued = True
            backprop.queue_callback(self._finish)

    def _finish(self) -> None:
        self._queued = False
        self._reducer.finish()  # every .grad is the mean over the ranks


def _check_devices(owner: str, params: list, device_ids, output_device, world) -> None:
    """torch's rule: no device ids for a model on the host; at most its own GPU for one on
    a GPU, which must be this rank's. The parameters must all be on one device."""
    devices = sorted({p.device for p in params})
    if len(devices) > 1:
        raise ValueError(
            f"{owner}: the module's parameters are on {devices}; move them to "
            "one device before wrapping it"
        )
    device = devices[0]
    if device == "cpu":
        if device_ids is not None or output_device is not None:
            raise ValueError(
                f"{owner}: device_ids and output_device must be None for a "
                f"module on the host, got device_ids={device_ids}, "
                f"output_device={output_device}"
            )
        return
    index = int(device.split(":")[1])
    if world.world_size > 1 and world.device is not None and world.device != index:
        raise ValueError(
            f"{owner}: the module is on {device}, but this rank's GPU is cuda:{world.device} "
            f"(local rank {world.local_rank}): move it there (model.to_gpu({world.device}))"
        )
    if device_ids is not None and not isinstance(device_ids, (list, tuple)):
        raise TypeError(
            f"{owner}: device_ids must be a list (torch's [local_rank]), got "
            f"{type(device_ids).__name__}"
        )
    given = [] if device_ids is None else list(device_ids)
    given += [] if output_device is None else [output_device]
    for value in given:
        if _gpu_index(value) != index:
            raise ValueError(
                f"{owner}: the module is on {device}, but device_ids="
                f"{device_ids}, output_device={output_device} name another GPU"
            )


def _gpu_index(value):
    """A GPU's index from torch's spellings: 0, "cuda:0", a torch.device (``.index``) or
    cupy's Device (``.id``)."""
    if isinstance(value, str):
        return (
            int(value.split(":")[1])
            if value.count(":") == 1 and value.startswith("cuda")
            else value
        )
    return getattr(value, "index", getattr(value, "id", value))
