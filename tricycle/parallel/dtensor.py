"""torch's ``DTensor`` (``torch.distributed.tensor``): a tensor of a global shape held over a
``DeviceMesh``, each rank with its local values placed as ``Shard``/``Replicate``/``Partial``
(``tricycle.parallel.dtensor_ops``), and ``distribute_tensor``, ``distribute_module``.

tricycle's DTensor is the local Tensor with its mesh, placements and global shape: it moves
between placements (``redistribute``, ``full_tensor``) and converts from and to a local
Tensor (``from_local``, ``to_local``), all differentiable: the local Tensor's gradient is
placed as its DTensor (Partial read as Replicate), and each move's backward is the move from
the gradient's placement back to the input's (an all-gather's backward slices, a slice's
backward all-gathers, an all-reduce's backward is the identity), as torch's.

It runs the ops a tensor-parallel model meets by propagating placements, as torch's
(``tricycle.parallel.dtensor_dispatch``): ``+ - * / ** @``, ``neg``, ``exp``, ``log``,
``tanh``, ``sigmoid``, ``sqrt``, ``abs``, ``relu``, ``sum``/``mean``, ``softmax``/
``log_softmax``, ``view``/``reshape``/``flatten``/``transpose``/``permute`` and, through
``tricycle.nn.functional``'s ``__tricycle_function__`` protocol (torch's
``__torch_function__``), ``F.gelu``/``relu``/``silu``/``softmax``/``log_softmax``/``linear``
and, inside ``loss_parallel()``, ``F.cross_entropy`` (``tricycle.parallel.loss_parallel``).
Its operands are DTensors of one mesh, Python numbers and 0-d Tensors; a Tensor with
dimensions is refused (torch's "mixed torch.Tensor and DTensor") unless inside
``implicit_replication()``, where it is Replicate. Tensor parallel layers
(``tricycle.parallel.tensor_parallel``) run their ops on local Tensors.

A sharded parameter (``distribute_module``, ``parallelize_module``) is a ``DParameter``: a
Parameter holding this rank's local values (what optimizers step; its ``shape`` is the
local one), with ``device_mesh``, ``placements``, ``to_local``, ``full_tensor`` and
``redistribute`` as torch's DTensor parameter has; an op of a DTensor with it reads it as
its DTensor.
"""

import contextlib
import contextvars
import functools
import math
import numbers
import operator

from tricycle.parallel import distributed, dtensor_dispatch, dtensor_ops, dtensor_shapes
from tricycle.parallel import loss_parallel as loss_parallel_module
from tricycle.parallel.device_mesh import DeviceMesh, init_device_mesh
from tricycle.parallel.dtensor_ops import Partial, Placement, Replicate, Shard
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

__all__ = ["DTensor", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
           "distribute_tensor", "implicit_replication"]  # fmt: skip

_implicit = contextvars.ContextVar("implicit_replication", default=False)


@contextlib.contextmanager
def implicit_replication():
    """torch's ``implicit_replication()`` (``torch.distributed.tensor.experimental``): inside
    it a Tensor with dimensions meeting a DTensor in an op is read as Replicate (the same
    values on every rank) instead of refused."""
    token = _implicit.set(True)
    try:
        yield
    finally:
        _implicit.reset(token)


def _operand(value, mesh, owner: str) -> "DTensor":
    """``value`` as a DTensor of ``mesh`` to meet another in an op ``owner``: a DTensor (of
    that mesh), a DParameter's, or a Tensor read as Replicate (0-d, or inside
    ``implicit_replication()``)."""
    if isinstance(value, DParameter):
        value = value.as_dtensor()
    if isinstance(value, DTensor):
        if value.device_mesh != mesh:
            raise ValueError(f"DTensor {owner}: operands on different meshes, {mesh!r} and "
                             f"{value.device_mesh!r}")  # fmt: skip
        return value
    if isinstance(value, Tensor):
        if value.ndim and not _implicit.get():
            raise RuntimeError(
                f"DTensor {owner} got mixed Tensor and DTensor (a Tensor of shape "
                f"{value.shape}), need to convert all Tensors to DTensors before calling "
                "distributed operators (DTensor.from_local, distribute_tensor), or run it "
                "inside implicit_replication()"
            )
        return DTensor(value, mesh, (Replicate(),) * mesh.ndim, value.shape)
    raise TypeError(f"DTensor {owner}: expected a DTensor, a Tensor or a number, got "
                    f"{type(value).__name__}")  # fmt: skip


def _arithmetic(name: str, compute, kind, scalar_kind, reflected_kind):
    """The operator and its reflection, propagated (``dtensor_dispatch.pointwise``) between
    DTensors (and 0-d Tensors) as ``kind``, with a number as ``scalar_kind`` (``x * 2`` is
    linear, ``x + 2`` is not), a number on the left as ``reflected_kind``."""

    def forward(self, other):
        if isinstance(other, numbers.Number):
            return self._pointwise(name, scalar_kind, lambda t: compute(t, other))
        other = _operand(other, self.device_mesh, name)
        return self._placed(dtensor_dispatch.pointwise(name, (self, other), kind, compute))

    def reflected(self, other):
        if isinstance(other, numbers.Number):
            return self._pointwise(name, reflected_kind, lambda t: compute(other, t))
        other = _operand(other, self.device_mesh, name)
        return self._placed(dtensor_dispatch.pointwise(name, (other, self), kind, compute))

    return forward, reflected


def _elementwise(name: str):
    """The Tensor method ``name`` of the local values, elementwise and not linear."""

    def method(self) -> "DTensor":
        return self._pointwise(name, None, lambda t: getattr(t, name)())

    method.__name__ = name
    return method


def default_mesh() -> DeviceMesh:
    """A 1-D mesh over the World (torch's default for ``device_mesh=None``), on its GPUs if
    the World started them."""
    world = distributed._world or distributed.init()
    return init_device_mesh("cuda" if world.device is not None else "cpu", (world.world_size,))


class DTensor:
    """A tensor of global ``shape`` over ``device_mesh``, this rank holding ``_local_tensor``
    placed as ``placements``. Build one with ``distribute_tensor`` or ``DTensor.from_local``."""

    __array_ufunc__ = None  # numpy's operators hand ``array + dtensor`` to the DTensor

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
        if run_check:  # each Replicate dimension's rank 0 gives its values along it
            for mesh_dim, p in enumerate(placements):
                if p.is_replicate() and mesh.size(mesh_dim) > 1:
                    mesh.group(mesh_dim).broadcast(local_tensor.array, 0)
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
            local = dtensor_dispatch.regraded(local_tensor, tuple(shape), mesh,
                                              grad_placements, placements)  # fmt: skip
        return DTensor(local, mesh, placements, shape)

    def to_local(self, *, grad_placements=None) -> Tensor:
        """This rank's values, a Tensor whose gradient is placed as ``grad_placements``
        (default: as this DTensor's). A gradient placed otherwise is moved in backward."""
        if grad_placements is None:
            return self._local_tensor
        grad_placements = dtensor_ops.checked_placements(
            "DTensor.to_local", grad_placements, self.device_mesh, self.ndim
        )
        return dtensor_dispatch.regraded(self._local_tensor, self._shape, self.device_mesh,
                                         grad_placements, self.placements)  # fmt: skip

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
        local = dtensor_dispatch.moved(self._local_tensor, self._shape, self.device_mesh,
                                       self.placements, target)  # fmt: skip
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

    # ------------------------------------------------------------------ ops
    def _placed(self, placed) -> "DTensor":
        return DTensor(placed.local, self.device_mesh, placed.placements, placed.shape)

    def _pointwise(self, name: str, kind, compute) -> "DTensor":
        return self._placed(dtensor_dispatch.pointwise(name, (self,), kind, compute))

    __add__, __radd__ = _arithmetic("add", operator.add, "add", None, None)
    __sub__, __rsub__ = _arithmetic("sub", operator.sub, "add", None, None)
    __mul__, __rmul__ = _arithmetic("mul", operator.mul, "mul", "mul", "mul")
    __truediv__, __rtruediv__ = _arithmetic("div", operator.truediv, "div", "mul", None)
    __pow__, __rpow__ = _arithmetic("pow", operator.pow, None, None, None)
    add, sub, mul, div, pow = __add__, __sub__, __mul__, __truediv__, __pow__

    def __neg__(self) -> "DTensor":
        return self._pointwise("neg", "mul", operator.neg)

    neg = __neg__
    exp, log, tanh = _elementwise("exp"), _elementwise("log"), _elementwise("tanh")
    sigmoid, sqrt, abs = _elementwise("sigmoid"), _elementwise("sqrt"), _elementwise("abs")
    relu = _elementwise("relu")

    def __matmul__(self, other) -> "DTensor":
        other = _operand(other, self.device_mesh, "matmul")
        return self._placed(dtensor_dispatch.matmul(self, other, operator.matmul))

    matmul = __matmul__

    def _reduced(self, name: str, dim, keepdim: bool) -> "DTensor":
        def run(local, dims):
            return getattr(local, name)(dim=dims, keepdim=keepdim)

        mean = name == "mean"
        return self._placed(dtensor_dispatch.reduction(name, self, dim, keepdim, mean, run))

    def sum(self, dim=None, keepdim: bool = False) -> "DTensor":
        """torch's ``sum``: over ``dim`` (an int, a sequence; None: every dimension)."""
        return self._reduced("sum", dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False) -> "DTensor":
        """torch's ``mean``: over ``dim`` (an int, a sequence; None: every dimension)."""
        return self._reduced("mean", dim, keepdim)

    def softmax(self, dim: int) -> "DTensor":
        run = functools.partial(Tensor.softmax, dim=dim)
        return self._placed(dtensor_dispatch.along("softmax", self, dim, run))

    def log_softmax(self, dim: int) -> "DTensor":
        run = functools.partial(Tensor.log_softmax, dim=dim)
        return self._placed(dtensor_dispatch.along("log_softmax", self, dim, run))

    def view(self, *shape) -> "DTensor":
        """torch's ``view`` (``reshape`` alike): refused where a shard does not map cleanly
        (``tricycle.parallel.dtensor_shapes``)."""
        return self._placed(dtensor_dispatch.reshape("view", self, shape))

    def reshape(self, *shape) -> "DTensor":
        return self._placed(dtensor_dispatch.reshape("reshape", self, shape))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "DTensor":
        """torch's ``flatten``: the dimensions ``start_dim`` to ``end_dim`` merged (a view)."""
        if self.ndim == 0:
            return self.reshape(1)
        dtensor_shapes.transposition("flatten", self.ndim, start_dim, end_dim)  # in range
        a, b = start_dim % self.ndim, end_dim % self.ndim
        if a > b:
            raise ValueError(f"DTensor.flatten: start_dim {start_dim} comes after end_dim "
                             f"{end_dim}")  # fmt: skip
        merged = math.prod(self._shape[a : b + 1])
        return self.reshape(*self._shape[:a], merged, *self._shape[b + 1 :])

    def permute(self, *dims) -> "DTensor":
        return self._placed(dtensor_dispatch.permute("permute", self, dims))

    def transpose(self, dim0: int, dim1: int) -> "DTensor":
        order = dtensor_shapes.transposition("transpose", self.ndim, dim0, dim1)
        return self._placed(dtensor_dispatch.permute("transpose", self, order))

    def t(self) -> "DTensor":
        if self.ndim > 2:
            raise ValueError(f"DTensor.t: expects a DTensor of 2 dimensions at most, got "
                             f"{self.ndim}")  # fmt: skip
        return self.transpose(0, 1) if self.ndim == 2 else self

    @property
    def T(self) -> "DTensor":  # noqa: N802 - torch's name
        return self.permute(*reversed(range(self.ndim)))

    def detach(self) -> "DTensor":
        return DTensor(self._local_tensor.detach(), self.device_mesh, self.placements, self._shape)

    def backward(self, gradient=None, retain_graph=None, create_graph=False) -> None:
        """The local Tensor's backward, seeded by ``gradient`` (a DTensor, moved to this
        one's gradient placement; None: ones, as for a Replicate or Partial loss)."""
        if isinstance(gradient, DTensor):
            target = dtensor_ops.for_grad(self.placements)
            gradient = gradient.redistribute(placements=target)._local_tensor
        self._local_tensor.backward(gradient, retain_graph, create_graph)

    @staticmethod
    def __tricycle_function__(function, args: tuple, kwargs: dict):
        """How ``tricycle.nn.functional`` runs ``function`` when an argument is a DTensor
        (torch's ``__torch_function__``)."""
        return _functional(function, args, kwargs)


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0) -> DTensor:
    """torch's ``distribute_tensor``: the whole ``tensor`` of the rank at index
    ``src_data_rank`` along every mesh dimension (each group's rank ``src_data_rank``: on a
    1-D mesh of the World, that World rank) placed over the mesh (each rank its own when
    ``src_data_rank`` is None); a new leaf that requires grad if ``tensor`` does."""
    mesh = device_mesh or default_mesh()
    if not isinstance(tensor, Tensor):
        raise TypeError(f"distribute_tensor: expected a Tensor, got {type(tensor).__name__}")
    if placements is None:
        placements = (Replicate(),) * mesh.ndim
    placements = dtensor_ops.checked_placements("distribute_tensor", placements, mesh, tensor.ndim)
    array = tensor.array
    if src_data_rank is not None:
        array = _from_source(tensor, mesh, src_data_rank)
    source = (Replicate(),) * mesh.ndim
    local = dtensor_ops.move(array, tensor.shape, mesh, source, placements)
    leaf = Tensor(tensor.xp.ascontiguousarray(local), requires_grad=tensor.requires_grad)
    return DTensor(leaf, mesh, placements, tensor.shape)


def _from_source(tensor: Tensor, mesh: DeviceMesh, src_data_rank: int):
    """``tensor``'s array as the rank at ``src_data_rank`` along every mesh dimension holds
    it: broadcast along each dimension in turn, within its group."""
    sizes = [mesh.size(m) for m in range(mesh.ndim) if mesh.size(m) > 1]
    if not (isinstance(src_data_rank, int) and 0 <= src_data_rank < min(sizes, default=1)):
        raise ValueError(
            f"distribute_tensor: src_data_rank={src_data_rank!r} must be a rank of every "
            f"dimension of {mesh!r} (0 to {min(sizes, default=1) - 1}) or None"
        )
    if not sizes:  # every rank holds the whole alone: nothing to send
        return tensor.array
    array = tensor.xp.ascontiguousarray(tensor.array).copy()  # ``tensor`` stays as it is
    for mesh_dim in range(mesh.ndim):
        if mesh.size(mesh_dim) > 1:
            mesh.group(mesh_dim).broadcast(array, src_data_rank)
    return array


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


def _functional(function, args: tuple, kwargs: dict):
    """``tricycle.nn.functional``'s ``function`` of DTensors: the activations elementwise,
    softmax and log-softmax along their dimension, ``linear`` as ``x @ weight.T + bias``,
    ``cross_entropy`` of logits sharded over the classes inside ``loss_parallel()``."""
    from tricycle.nn import functional as F  # noqa: N812, PLC0415 - its caller: loaded

    name = f"F.{function.__name__}"
    mesh = next(a.device_mesh for a in args if isinstance(a, DTensor))
    if function is F.linear:
        return _linear(mesh, *args, **kwargs)
    if function is F.cross_entropy:
        if not loss_parallel_module.active():
            raise RuntimeError(
                f"{name}: logits are a DTensor ({args[0].placements}): run it inside "
                "loss_parallel() (logits sharded over the classes), or take .full_tensor() "
                "first"
            )
        logits, target, *rest = args
        if not isinstance(logits, DTensor):
            raise TypeError(f"{name}: the logits must be the DTensor, got {type(logits).__name__}")
        whole = [a.full_tensor() if isinstance(a, DTensor) else a for a in (target, *rest)]
        weight = kwargs.pop("weight", None)
        weight = weight.full_tensor() if isinstance(weight, DTensor) else weight
        if weight is not None:
            kwargs["weight"] = weight
        return logits._placed(loss_parallel_module.cross_entropy(logits, *whole, **kwargs))
    x, rest = _operand(args[0], mesh, name), args[1:]
    if function in (F.relu, F.silu, F.gelu):
        if function is not F.gelu and kwargs.get("inplace", rest[0] if rest else False):
            raise NotImplementedError(f"{name}: inplace=True on a DTensor; use inplace=False")
        return x._pointwise(name, None, lambda t: function(t, *rest, **kwargs))
    if function in (F.softmax, F.log_softmax):
        dim = rest[0] if rest else kwargs.get("dim", -1)
        run = lambda t: function(t, *rest, **kwargs)  # noqa: E731
        return x._placed(dtensor_dispatch.along(name, x, dim, run))
    raise NotImplementedError(
        f"{name}: tricycle's DTensor runs F.gelu, relu, silu, softmax, log_softmax, linear and "
        "cross_entropy (in loss_parallel()); take .to_local() or .full_tensor() first"
    )


def _linear(mesh, input, weight, bias=None) -> DTensor:  # noqa: A002 - torch's name
    """torch's ``F.linear`` of DTensors, ``weight`` (out, in): ``input @ weight.T + bias``."""
    x, w = _operand(input, mesh, "F.linear"), _operand(weight, mesh, "F.linear")
    if w.ndim != 2 or x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"F.linear: expected weight (out, in) and input (..., in), got weight "
                         f"{w.shape} and input {x.shape}")  # fmt: skip
    out = x @ w.transpose(0, 1)  # (..., out)
    return out if bias is None else out + _operand(bias, mesh, "F.linear")
