"""torch's tensor parallelism (``torch.distributed.tensor.parallel``): ``parallelize_module``
with ``ColwiseParallel``, ``RowwiseParallel``, ``SequenceParallel``, ``PrepareModuleInput``
and ``PrepareModuleOutput``, on a 1-D ``DeviceMesh``: the World's, or one dimension of a
larger mesh (``mesh["tp"]`` of a (dp, tp) mesh, its moves within each row's group).

A Linear's ``weights`` are (in, out) in tricycle, the transpose of torch's: ColwiseParallel
shards its output features (``Shard(1)`` of tricycle's weights, torch's ``Shard(0)``, and
the bias's ``Shard(0)``), RowwiseParallel its input features (``Shard(0)``; the bias stays
replicated). The sharded Linear's ``from_size``/``to_size`` become its local sizes. The
layers run on local Tensors (the moves are DTensor's; the products local): a colwise
Linear takes its input whole (Replicate; an all-gather from a sequence shard) and gives its output's
features sharded; a rowwise one takes features sharded and gives the partial sums' all-reduce
(Replicate) or reduce-scatter (a sequence shard), its bias added after. Gradients are moved
as torch's DTensor moves them: the input of a colwise Linear gets its partial gradients
all-reduced (reduce-scattered from a sequence shard), and a replicated parameter used on a
sequence shard (SequenceParallel's norms, a rowwise bias before a sequence shard) gets its
gradient all-reduced. An Embedding may be colwise (its vectors' features sharded).
"""

import fnmatch

from tricycle.layers import Dense, Embedding, dense
from tricycle.parallel.dtensor import DParameter, DTensor, default_mesh, distribute_parameter
from tricycle.parallel.dtensor_ops import Partial, Placement, Replicate, Shard
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleOutput",
           "RowwiseParallel", "SequenceParallel", "parallelize_module"]  # fmt: skip


def _placement(owner: str, name: str, value, default):
    if value is None:
        return default
    if not isinstance(value, Placement):
        raise TypeError(f"{owner}: {name} must be a Placement, got {value!r}")
    return value


def _as_dtensor(x, mesh, layout, desired) -> DTensor:
    """``x`` (a DTensor, or a local Tensor placed as ``layout``) placed as ``desired``."""
    if not isinstance(x, DTensor):
        x = DTensor.from_local(x, mesh, (layout,))  # even shards, as torch's
    return x.redistribute(placements=(desired,)) if desired is not None else x


def _output(local: Tensor, mesh, placement, shape, use_local_output: bool):
    return local if use_local_output else DTensor.from_local(local, mesh, (placement,), shape=shape)


def _with_partial_grads(module, mesh, call):
    """``call()`` with the module's own parameters swapped for views whose gradient (partial
    sums over a shard of the data) is all-reduced in backward."""
    own = {k: p for k, p in vars(module).items() if isinstance(p, Parameter)}
    for k, p in own.items():
        d = DTensor(p, mesh, (Replicate(),), p.shape)
        vars(module)[k] = d.to_local(grad_placements=(Partial(),))
    try:
        return call()
    finally:
        vars(module).update(own)


class ParallelStyle:
    """What a plan's values are: ``_apply(module, mesh)`` parallelizes ``module`` in place."""

    def _apply(self, module, mesh):
        raise NotImplementedError


class ColwiseParallel(ParallelStyle):
    """torch's ``ColwiseParallel(*, input_layouts=Replicate(), output_layouts=Shard(-1),
    use_local_output=True)`` for a Linear (or an Embedding)."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = _placement("ColwiseParallel", "input_layouts", input_layouts,
                                        Replicate())  # fmt: skip
        self.output_layouts = _placement("ColwiseParallel", "output_layouts", output_layouts,
                                         Shard(-1))  # fmt: skip
        self.use_local_output = use_local_output

    def _apply(self, module, mesh):
        if isinstance(module, Embedding):
            module.weights = distribute_parameter(module.weights, mesh, (Shard(1),))
            module.to_size = module.weights.shape[1]
            forward = type(module).forward
        elif isinstance(module, Dense):
            module.weights = distribute_parameter(module.weights, mesh, (Shard(1),))
            if module.bias is not None:
                module.bias = distribute_parameter(module.bias, mesh, (Shard(0),))
            module.to_size = module.weights.shape[1]
            forward = None
        else:
            raise NotImplementedError(
                f"ColwiseParallel: tricycle shards a Linear or an Embedding, got "
                f"{type(module).__name__}"
            )
        full = module.weights.global_shape[1]

        def colwise(x):
            x = _as_dtensor(x, mesh, self.input_layouts, Replicate())
            if forward is not None:  # an Embedding: ids need no gradient
                local = forward(module, x.to_local())
            else:
                local = x.to_local(grad_placements=(Partial(),))  # partial input gradients
                local = dense(module.checked_input(local), module.weights, module.bias)
            shape = (*local.shape[:-1], full)
            out = DTensor.from_local(local, mesh, (Shard(local.ndim - 1),), shape=shape)
            out = out.redistribute(placements=(self.output_layouts,))
            return out.to_local() if self.use_local_output else out

        module.forward = colwise
        return module


class RowwiseParallel(ParallelStyle):
    """torch's ``RowwiseParallel(*, input_layouts=Shard(-1), output_layouts=Replicate(),
    use_local_output=True)`` for a Linear."""

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        self.input_layouts = _placement("RowwiseParallel", "input_layouts", input_layouts,
                                        Shard(-1))  # fmt: skip
        self.output_layouts = _placement("RowwiseParallel", "output_layouts", output_layouts,
                                         Replicate())  # fmt: skip
        self.use_local_output = use_local_output

    def _apply(self, module, mesh):
        if not isinstance(module, Dense):
            raise NotImplementedError(
                f"RowwiseParallel: tricycle shards a Linear, got {type(module).__name__}"
            )
        module.weights = distribute_parameter(module.weights, mesh, (Shard(0),))
        if module.bias is not None:
            module.bias = distribute_parameter(module.bias, mesh, (Replicate(),))
        module.from_size = module.weights.shape[0]

        def rowwise(x):
            x = _as_dtensor(x, mesh, self.input_layouts, Shard(-1))
            partial = dense(module.checked_input(x.to_local()), module.weights)
            out = DTensor.from_local(partial, mesh, (Partial(),), shape=partial.shape)
            out = out.redistribute(placements=(self.output_layouts,))
            local = out.to_local()
            if module.bias is not None:
                bias = module.bias
                if not self.output_layouts.is_replicate():  # used on a shard: partial grads
                    bias = bias.as_dtensor().to_local(grad_placements=(Partial(),))
                local = local + bias
            return _output(local, mesh, out.placements[0], out.shape, self.use_local_output)

        module.forward = rowwise
        return module


class SequenceParallel(ParallelStyle):
    """torch's ``SequenceParallel(*, sequence_dim=1, use_local_output=False)``: a norm (or any
    layer acting on each position alone) runs on this rank's shard of the sequence; its
    parameters stay replicated, their gradients all-reduced."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        self.sequence_dim, self.use_local_output = sequence_dim, use_local_output

    def _apply(self, module, mesh):
        for k, p in list(vars(module).items()):
            if isinstance(p, Parameter) and not isinstance(p, DParameter):
                setattr(module, k, distribute_parameter(p, mesh, (Replicate(),)))
        forward = type(module).forward
        layout = Shard(self.sequence_dim)

        def sequence_parallel(x, *args, **kwargs):
            x = _as_dtensor(x, mesh, layout, layout)
            local = _with_partial_grads(module, mesh, lambda: forward(module, x.to_local(),
                                                                      *args, **kwargs))  # fmt: skip
            return _output(local, mesh, x.placements[0], x.shape, self.use_local_output)

        module.forward = sequence_parallel
        return module


def _layouts(owner: str, value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, Placement) else tuple(value)


class PrepareModuleInput(ParallelStyle):
    """torch's ``PrepareModuleInput``: before the module's forward, each positional input
    with a layout (None: left alone) becomes a DTensor of ``input_layouts`` moved to
    ``desired_input_layouts`` (the same for keyword inputs), local again with
    ``use_local_output``."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output: bool = False):  # fmt: skip
        self.input_layouts = _layouts("PrepareModuleInput", input_layouts)
        self.desired_input_layouts = _layouts("PrepareModuleInput", desired_input_layouts)
        if len(self.input_layouts) != len(self.desired_input_layouts):
            raise AssertionError("input_layouts and desired_input_layouts should have same length!")
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        self.use_local_output = use_local_output

    def _prepare(self, x, mesh, layout, desired):
        if layout is None or not isinstance(x, (Tensor, DTensor)):
            return x
        d = _as_dtensor(x, mesh, layout, desired)
        return d.to_local() if self.use_local_output else d

    def _apply(self, module, mesh):
        def hook(_, args, kwargs):
            if len(args) < len(self.input_layouts):
                raise ValueError(
                    f"PrepareModuleInput: {len(self.input_layouts)} input layouts for "
                    f"{len(args)} positional inputs"
                )
            pairs = zip(self.input_layouts, self.desired_input_layouts)
            out = [self._prepare(x, mesh, a, b) for x, (a, b) in zip(args, pairs)]
            out += list(args[len(out) :])
            named = dict(kwargs)
            for key, layout in self.input_kwarg_layouts.items():
                if key in named:
                    desired = self.desired_input_kwarg_layouts.get(key, layout)
                    named[key] = self._prepare(named[key], mesh, layout, desired)
            return tuple(out), named

        module.register_forward_pre_hook(hook, with_kwargs=True)
        return module


class PrepareModuleOutput(ParallelStyle):
    """torch's ``PrepareModuleOutput``: after the module's forward, each output with a layout
    becomes a DTensor of ``output_layouts`` moved to ``desired_output_layouts`` (local again
    with ``use_local_output``)."""

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output=True):
        self.output_layouts = _layouts("PrepareModuleOutput", output_layouts)
        self.desired_output_layouts = _layouts("PrepareModuleOutput", desired_output_layouts)
        if len(self.output_layouts) != len(self.desired_output_layouts):
            raise AssertionError(
                "output_layouts and desired_output_layouts should have same length!"
            )
        self.use_local_output = use_local_output

    def _apply(self, module, mesh):
        def hook(_, args, outputs):
            single = not isinstance(outputs, tuple)
            values = (outputs,) if single else outputs
            if len(values) != len(self.output_layouts):
                raise ValueError(
                    f"PrepareModuleOutput: {len(self.output_layouts)} output layouts for "
                    f"{len(values)} outputs"
                )
            out = []
            for x, a, b in zip(values, self.output_layouts, self.desired_output_layouts):
                if a is not None and isinstance(x, (Tensor, DTensor)):
                    x = _as_dtensor(x, mesh, a, b)
                    x = x.to_local() if self.use_local_output else x
                out.append(x)
            return out[0] if single else tuple(out)

        module.register_forward_hook(hook)
        return module


def _matching(module, path: str) -> list:
    """The submodules of ``module`` at the dotted ``path`` (``fnmatch`` patterns per part)."""
    found = [module]
    for part in path.split("."):
        found = [c for m in found for name, c in m._modules.items() if fnmatch.fnmatch(name, part)]
    return found


def parallelize_module(module, device_mesh=None, parallelize_plan=None, *, src_data_rank=0):
    """torch's ``parallelize_module``: apply ``parallelize_plan`` (a ParallelStyle for
    ``module`` itself, or {dotted path (``*`` patterns allowed): ParallelStyle}) over the 1-D
    ``device_mesh``; the whole parameters are rank ``src_data_rank``'s (0). Returns
    ``module``, changed in place."""
    mesh = device_mesh or default_mesh()
    if mesh.ndim != 1:
        raise ValueError(
            f"parallelize_module: a 1-D DeviceMesh, got {mesh.ndim} dimensions; pass the "
            "tensor parallel dimension, e.g. mesh['tp']"
        )
    if src_data_rank != 0:
        raise NotImplementedError("parallelize_module: tricycle takes rank 0's parameters")
    if parallelize_plan is None:
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(
            "parallelize_module: expect a ParallelStyle or Dict[str, ParallelStyle] for "
            f"parallelize_plan, {type(parallelize_plan)} found!"
        )
    for path, style in parallelize_plan.items():
        targets = _matching(module, path)
        if not targets:
            raise ValueError(f"parallelize_module: no submodule matches {path!r}")
        for target in targets:
            parallelize_module(target, mesh, style)
    return module
