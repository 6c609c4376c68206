"""torch's ``DistributedDataParallel`` on tricycle's World and ``DataParallel``'s buckets.

It is a Layer around ``module`` whose gradients are averaged over the ranks by the time
``loss.backward()`` returns: its gradient hooks fill ``DataParallel``'s buckets during
backward, and the first of them queues the buckets' ``finish`` to run when backward's walk
ends (``tricycle.backprop.queue_callback``, as torch's reducer queues its own). A parameter
that gets no gradient in a backward counts as zero on that rank, whatever
``find_unused_parameters`` says: no rank waits for it (torch raises at the next forward
instead, and leaves a parameter no rank used without a gradient; here it gets zeros).
"""

from contextlib import contextmanager

from tricycle import backprop, checks
from tricycle.layers import Layer
from tricycle.parallel.buckets import DataParallel
from tricycle.parallel.torch_process_group import _member_of
from tricycle.tensor import Tensor


class DistributedDataParallel(Layer):
    """``module`` with its gradients averaged over the ranks by the end of each backward.

    Args (torch's):
        module: the Layer, on its device already (move it before wrapping it).
        device_ids, output_device: None for a model on the host; for one on a GPU, None or
            that GPU (``[local_rank]``).
        dim: 0 (tricycle does not scatter inputs: each rank gives its own batch).
        broadcast_buffers: give every rank rank 0's buffers (batch norm's running
            statistics) at each forward in training mode, as torch's.
        process_group: None (the world), or a group of its ranks (``new_group``,
            ``DeviceMesh.get_group``): gradients are averaged over the group's ranks alone
            (each group of a data-parallel dimension trains its own replica).
        bucket_cap_mb: the size of the gradient buckets; None: 25 MiB on a GPU (torch's),
            ``DataParallel``'s smaller default on the host.
        find_unused_parameters, check_reduction, static_graph: accepted; a parameter
            without a gradient counts as zero whatever they say (see the module).
        gradient_as_bucket_view: let backward accumulate each gradient straight into its
            bucket (no copy); False copies it there. Either way ``.grad`` is a view of its
            bucket after backward.

    At construction every rank gets rank 0's parameters and buffers (the group's rank 0).
    ``no_sync()`` keeps the gradients of the backward passes inside it local (gradient
    accumulation); the next backward outside it averages the sums. ``state_dict()`` names
    the module's entries ``module.<name>``, as torch's.
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
        world = _member_of(owner, process_group)  # the World, or the group to average over
        params = [p for p in module.parameters() if p.requires_grad]  # a frozen one: no grad
        if not params:
            raise ValueError(
                f"{owner}: the module ({type(module).__name__}) has no parameter "
                "that requires a gradient: there is nothing to average"
            )
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
