"""torch's ``DTensor`` (``torch.distributed.tensor``): a tensor of a global shape held over a
``DeviceMesh``, each rank with its local values placed as ``Shard``/``Replicate``/``Partial``
(``tricycle.parallel.dtensor_ops``), and ``distribute_tensor``, ``distribute_module``.

tricycle's DTensor is the local Tensor with its mesh, placements and global shape: it moves
between placements (``redistribute``, ``full_tensor``) and converts from and to a local
Tensor (``from_local``, ``to_local``), all differentiable: the local Tensor's gradient is
placed as its DTensor (Partial read as Replicate), and each move's backward is the move from
the gradient's placement back to the input's (an all-gather's backward slices, a slice's
backward all-gathers, an all-reduce's backward is the identity), as torch's. torch runs any
op on DTensors by propagating placements; tricycle's does not: arithmetic on a DTensor
raises a TypeError naming ``to_local``/``full_tensor``. Tensor parallel layers
(``tricycle.parallel.tensor_parallel``) run their ops on local Tensors.

A sharded parameter (``distribute_module``, ``parallelize_module``) is a ``DParameter``: a
Parameter holding this rank's local values (what optimizers step; its ``shape`` is the
local one), with ``device_mesh``, ``placements``, ``to_local``, ``full_tensor`` and
``redistribute`` as torch's DTensor parameter has.
"""

from tricycle.parallel import distributed, dtensor_ops
from tricycle.parallel.device_mesh import DeviceMesh, init_device_mesh
from tricycle.parallel.dtensor_ops import Partial, Placement, Replicate, Shard
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

__all__ = ["DTensor", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
           "distribute_tensor"]  # fmt: skip


def default_mesh() -> DeviceMesh:
    """A 1-D mesh over the World (torch's default for ``device_mesh=None``), on its GPUs if
    the World started them."""
    world = distributed._world or distributed.init()
    return init_device_mesh("cuda" if world.device is not None else "cpu", (world.world_size,))


def _moved(local: Tensor, shape, mesh, source, target) -> Tensor:
    """``local`` placed as ``target``; its backward moves the gradient the other way."""
    array = dtensor_ops.move(local.array, shape, mesh, source, target)
    grad_from, grad_to = dtensor_ops.for_grad(target), dtensor_ops.for_grad(source)

    def back(grad):
        return dtensor_ops.move(grad, shape, mesh, grad_from, grad_to)

    return local.new(array, args=(local,), back_fns=(back,), name="redistribute")


class DTensor:
    """A tensor of global ``shape`` over ``device_mesh``, this rank holding ``_local_tensor``
    placed as ``placements``. Build one with ``distribute_tensor`` or ``DTensor.from_local``."""

    def __init__(self, local: Tensor, device_mesh: DeviceMesh, placements: tuple, shape: tuple):
        self._local_tensor, self.device_mesh = local, device_mesh
        self.placements, self._shape = tuple(placements), tuple(shape)

    # ------------------------------------------------------------------ conversions
    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check: bool = False,
                   shape=None, stride=None, grad_placements=None) -> "DTensor":  # fmt: skip
        """A DTensor of this rank's ``local_tensor`` placed as ``placements`` (Replicate on
        every mesh dimension by default); its global ``shape`` assumes even shards unless
        given. ``run_check``: Replicate values are broadcast from rank 0 first (as torch's).
        The local Tensor's gradient is placed as ``grad_placements`` (default: as the
        DTensor's gradient, Partial read as Replicate)."""
        mesh = device_mesh or default_mesh()
        if not isinstance(local_tensor, Tensor):
            raise TypeError(
                f"DTensor.from_local: local_tensor must be a Tensor, got "
                f"{type(local_tensor).__name__}"
            )
        if placements is None:
            placements = (Replicate(),) * mesh.ndim
        placements = dtensor_ops.checked_placements(
            "DTensor.from_local", placements, mesh, local_tensor.ndim
        )
        if run_check:
            for mesh_dim, p in enumerate(placements):
                if p.is_replicate() and mesh.size(mesh_dim) > 1:
                    mesh.world.broadcast(local_tensor.array, 0)
        if shape is None:
            shape = list(local_tensor.shape)
            for mesh_dim, p in enumerate(placements):
                if p.is_shard():
                    shape[p.dim] *= mesh.size(mesh_dim)
        local = local_tensor
        if grad_placements is not None:
            grad_placements = dtensor_ops.checked_placements(
                "DTensor.from_local", grad_placements, mesh, local_tensor.ndim
            )
            local = _regraded(local_tensor, tuple(shape), mesh, grad_placements, placements)
        return DTensor(local, mesh, placements, shape)

    def to_local(self, *, grad_placements=None) -> Tensor:
        """This rank's values, a Tensor whose gradient is placed as ``grad_placements``
        (default: as this DTensor's). A gradient placed otherwise is moved in backward."""
        if grad_placements is None:
            return self._local_tensor
        grad_placements = dtensor_ops.checked_placements(
            "DTensor.to_local", grad_placements, self.device_mesh, self.ndim
        )
        return _regraded(self._local_tensor, self._shape, self.device_mesh, grad_placements,
                         self.placements)  # fmt: skip

    def redistribute(self, device_mesh=None, placements=None, *, async_op: bool = False,
                     forward_dtype=None, backward_dtype=None) -> "DTensor":  # fmt: skip
        """This DTensor placed as ``placements`` (its own mesh: moving to another mesh is
        refused, as torch's)."""
        if device_mesh is not None and device_mesh != self.device_mesh:
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        if forward_dtype is not None or backward_dtype is not None:
            raise NotImplementedError("DTensor.redistribute: forward_dtype/backward_dtype")
        if placements is None:
            placements = self.placements
        target = dtensor_ops.checked_placements(
            "DTensor.redistribute", placements, self.device_mesh, self.ndim
        )
        for a, b in zip(self.placements, target):
            if b.is_partial() and not (a.is_replicate() or a == b):
                raise RuntimeError(
                    f"redistribute from {a} to {b} is not supported (torch's: only Replicate "
                    "becomes Partial)"
                )
        if target == self.placements:
            return self
        local = _moved(self._local_tensor, self._shape, self.device_mesh, self.placements, target)
        return DTensor(local, self.device_mesh, target, self._shape)

    def full_tensor(self, *, grad_placements=None) -> Tensor:
        """The whole tensor on every rank (differentiable)."""
        whole = self.redistribute(placements=(Replicate(),) * self.device_mesh.ndim)
        return whole.to_local(grad_placements=grad_placements)

    # ------------------------------------------------------------------ what it is
    @property
    def shape(self) -> tuple:
        return self._shape

    def size(self, dim: int | None = None):
        return self._shape if dim is None else self._shape[dim]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self):
        return self._local_tensor.dtype

    @property
    def device(self):
        return self._local_tensor.device

    @property
    def requires_grad(self) -> bool:
        return self._local_tensor.requires_grad

    @property
    def grad(self) -> "DTensor | None":
        """The local Tensor's gradient as a DTensor of this one's placements (Partial read
        as Replicate)."""
        grad = self._local_tensor.grad
        if grad is None:
            return None
        placements = dtensor_ops.for_grad(self.placements)
        return DTensor(grad, self.device_mesh, placements, self._shape)

    def __repr__(self) -> str:
        return (
            f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self.device_mesh!r}, "
            f"placements={self.placements})"
        )

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "DTensor: tricycle's DTensor runs no ops (torch's propagates placements through "
            "them): take .to_local() (this rank's values) or .full_tensor() (the whole) first"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = __pow__ = _refuse


def _regraded(local: Tensor, shape, mesh, grad_placements, placements) -> Tensor:
    """``local`` unchanged, its gradient (placed as ``grad_placements``) moved in backward to
    its DTensor's placements (``placements``)."""
    source = dtensor_ops.for_grad(placements)
    if tuple(grad_placements) == source:
        return local

    def back(grad):
        return dtensor_ops.move(grad, shape, mesh, tuple(grad_placements), source)

    return local.new(local.array, args=(local,), back_fns=(back,), name="to_local")


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0) -> DTensor:
    """torch's ``distribute_tensor``: rank ``src_data_rank``'s whole ``tensor`` placed over
    the mesh (each rank its own when ``src_data_rank`` is None); a new leaf that requires
    grad if ``tensor`` does."""
    mesh = device_mesh or default_mesh()
    if not isinstance(tensor, Tensor):
        raise TypeError(f"distribute_tensor: expected a Tensor, got {type(tensor).__name__}")
    if placements is None:
        placements = (Replicate(),) * mesh.ndim
    placements = dtensor_ops.checked_placements("distribute_tensor", placements, mesh, tensor.ndim)
    array = tensor.array
    if src_data_rank is not None and mesh.world.world_size > 1:
        array = mesh.world.broadcast(tensor.xp.ascontiguousarray(array).copy(), src_data_rank)
    source = (Replicate(),) * mesh.ndim
    local = dtensor_ops.move(array, tensor.shape, mesh, source, placements)
    leaf = Tensor(tensor.xp.ascontiguousarray(local), requires_grad=tensor.requires_grad)
    return DTensor(leaf, mesh, placements, tensor.shape)


class DParameter(Parameter):
    """A Parameter of this rank's values of a distributed parameter: what optimizers step
    (``shape`` is the local one), with torch's DTensor parameter's ``device_mesh``,
    ``placements``, ``to_local``, ``full_tensor`` and ``redistribute``."""

    __slots__ = ()

    def __init__(self, local, device_mesh: DeviceMesh, placements: tuple, shape: tuple,
                 requires_grad: bool = True):  # fmt: skip
        super().__init__(local, requires_grad=requires_grad)
        self.device_mesh, self.placements, self.global_shape = device_mesh, placements, shape

    def as_dtensor(self) -> DTensor:
        return DTensor(self, self.device_mesh, self.placements, self.global_shape)

    def to_local(self, *, grad_placements=None) -> Tensor:
        return self.as_dtensor().to_local(grad_placements=grad_placements)

    def full_tensor(self, *, grad_placements=None) -> Tensor:
        return self.as_dtensor().full_tensor(grad_placements=grad_placements)

    def redistribute(self, device_mesh=None, placements=None, **kwargs) -> DTensor:
        return self.as_dtensor().redistribute(device_mesh, placements, **kwargs)


def distribute_parameter(param: Tensor, mesh: DeviceMesh, placements) -> DParameter:
    """``param`` (whole, rank 0's) as a DParameter of this rank's values."""
    d = distribute_tensor(param, mesh, placements)
    requires_grad = param.requires_grad
    return DParameter(d._local_tensor.array, mesh, d.placements, d.shape, requires_grad)


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):  # fmt: skip
    """torch's ``distribute_module``: ``partition_fn(name, submodule, mesh)`` for every
    submodule (default: every parameter replicated as a DParameter), ``input_fn(module,
    inputs, mesh)`` before each forward and ``output_fn(module, outputs, mesh)`` after it
    (forward hooks; a value they return replaces the inputs or outputs). Returns ``module``."""
    mesh = device_mesh or default_mesh()
    for name, sub in list(module.named_modules()):
        if partition_fn is not None:
            partition_fn(name, sub, mesh)
        for attr, p in list(vars(sub).items()):
            if isinstance(p, Parameter) and not isinstance(p, DParameter):
                setattr(sub, attr, distribute_parameter(p, mesh, (Replicate(),) * mesh.ndim))
    if input_fn is not None:
        module.register_forward_pre_hook(lambda m, args: input_fn(m, args, mesh))
    if output_fn is not None:
        module.register_forward_hook(lambda m, args, out: output_fn(m, out, mesh))
    return module
