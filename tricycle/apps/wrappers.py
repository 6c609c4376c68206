"""What ``Accelerator.prepare`` hands back for a model, an optimiser and a learning-rate
scheduler: the same objects, with the forward in the precision policy's dtype, the update
held until the gradients of every micro-batch are in, and the schedule advanced with the
updates."""

from tricycle.module import named_parameters
from tricycle.optim.optimizer import Optimizer as TorchOptimizer
from tricycle.precision import Precision, StepResult
from tricycle.tensor import Tensor
from tricycle.update import host_multiplier


class PreparedModel:
    """``model`` called under the precision policy (``Precision.forward``: a mixed policy
    casts its parameters to the compute dtype), everything else the model's own
    (``parameters()``, ``eval()``, ``state_dict()``...). ``module``: the model itself."""

    def __init__(self, model, policy: Precision):
        self.module, self.policy = model, policy

    def __call__(self, *args, **kwargs):
        return self.policy.forward(self.module, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.module, name)

    def __repr__(self) -> str:
        return f"PreparedModel({self.module!r}, {self.policy!r})"


class PreparedOptimiser:
    """``step()`` updates (unscale, clip, skip on overflow: ``Accelerator.optimiser_step``)
    once the last micro-batch's backward is done, and does nothing before; ``zero_grad()``
    likewise (the update of a ``tricycle.optimisers`` optimiser zeroes the gradients already;
    a ``tricycle.optim`` one keeps them until then, as torch's). Other attributes are the
    optimiser's own (``learning_rate`` or ``param_groups`` may be set: a schedule)."""

    def __init__(self, optimiser, accelerator):
        object.__setattr__(self, "optimiser", optimiser)
        object.__setattr__(self, "accelerator", accelerator)

    def step(self):
        """The update, once the step's gradients are complete; its ``StepResult`` (the
        gradient norm and whether the update was skipped), or None."""
        return self.accelerator.optimiser_step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        accelerator = self.accelerator
        if not accelerator.sync_grad or accelerator.model is None:
            return
        if isinstance(self.optimiser, TorchOptimizer):  # torch's zero_grad
            self.optimiser.zero_grad(set_to_none)
        else:
            accelerator.model.zero_grad()

    def __getattr__(self, name: str):
        return getattr(self.optimiser, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.optimiser, name, value)

    def __repr__(self) -> str:
        return f"PreparedOptimiser({self.optimiser!r})"


class PreparedScheduler:
    """A ``tricycle.optim.lr_scheduler`` schedule whose ``step()`` advances it only when the
    optimiser has just updated (not before the last micro-batch, nor after a step skipped on
    overflow), as Accelerate's: N times on N processes (each reads its share of the loader,
    so they take 1/N of the steps a one-process run takes over the same data, and the
    schedule keeps to the data), once with ``split_batches``. With
    ``Accelerator(step_scheduler_with_optimizer=False)`` each ``step`` advances it as it is.
    Other attributes are the scheduler's own. ``scheduler``: the scheduler itself."""

    def __init__(self, scheduler, accelerator):
        self.scheduler, self.accelerator = scheduler, accelerator

    def step(self, *args, **kwargs) -> None:
        accelerator = self.accelerator
        if not accelerator.step_scheduler_with_optimizer:
            self.scheduler.step(*args, **kwargs)
            return
        if not accelerator.sync_grad or accelerator.optimizer_step_was_skipped:
            return
        for _ in range(1 if accelerator.split_batches else accelerator.num_processes):
            self.scheduler.step(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.scheduler, name)

    def __repr__(self) -> str:
        return f"PreparedScheduler({self.scheduler!r})"


def torch_optimizer_update(optimizer, model, max_norm: float, scaler) -> StepResult:
    """The update of a ``tricycle.optim`` optimizer, whose own ``step`` updates from the
    gradients: ``tricycle.update.update``'s unscaling (``scaler``), clipping to ``max_norm``
    and skipping on an inf/NaN norm (``host_multiplier``), done to the gradients themselves
    (new arrays: a gradient may share its memory), then ``optimizer.step()``. The gradients
    stay until ``zero_grad``, as torch's."""
    named = [(n, p) for n, p in named_parameters(model) if p.grad is not None]
    if not named or (scaler is None and max_norm <= 0):
        optimizer.step()
        return StepResult(None, False)
    first = named[0][1].grad
    scale = None if scaler is None else scaler.scale_array(first.array)
    norm, multiplier = host_multiplier(named, max_norm, scale)
    skipped = multiplier is None
    if not skipped:
        for _, p in named:
            g = p.grad.array
            p.grad = Tensor((g * multiplier).astype(g.dtype, copy=False), requires_grad=False)
        optimizer.step()
    if scaler is not None:
        scaler.update(first.xp.asarray(skipped))
    return StepResult(norm, skipped)


def foreign_parameters(params, among) -> list:
    """Those of ``params`` that are not among ``among``'s (each a Layer, Tensors or (name,
    Tensor) pairs)."""
    known = {id(p) for _, p in named_parameters(among)}
    return [p for _, p in named_parameters(params) if id(p) not in known]


LISTS = ("params", "param_names")  # a parameter group's lists; its other sequences are tuples


def optimiser_state(optimiser) -> dict:
    """``optimiser.state_dict()`` as a state file keeps it: a ``tricycle.optim`` one (torch's
    layout) numbers its parameters' states by int, which become strings."""
    state = optimiser.state_dict()
    if not isinstance(optimiser, TorchOptimizer):
        return state
    return {**state, "state": {str(k): v for k, v in state["state"].items()}}


def load_optimiser_state(optimiser, saved: dict) -> None:
    """``optimiser.load_state_dict`` of what ``optimiser_state`` saved, its int keys and its
    settings' tuples (betas, etas: lists in the file) back."""
    if isinstance(optimiser, TorchOptimizer):
        groups = [{k: tuple(v) if isinstance(v, list) and k not in LISTS else v
                   for k, v in group.items()} for group in saved["param_groups"]]  # fmt: skip
        saved = {"state": {int(k): v for k, v in saved["state"].items()}, "param_groups": groups}
    optimiser.load_state_dict(saved)


def unwrap(obj):
    """The model, optimiser or scheduler inside a prepared one (anything else as it is)."""
    if isinstance(obj, PreparedModel):
        return obj.module
    if isinstance(obj, PreparedOptimiser):
        return obj.optimiser
    if isinstance(obj, PreparedScheduler):
        return obj.scheduler
    return obj


__all__ = [
    "PreparedModel", "PreparedOptimiser", "PreparedScheduler", "foreign_parameters",
    "load_optimiser_state", "optimiser_state", "torch_optimizer_update", "unwrap",
]  # fmt: skip
