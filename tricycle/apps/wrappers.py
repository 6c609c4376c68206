"""What ``Accelerator.prepare`` hands back for a model and an optimiser: the same objects,
with the forward in the precision policy's dtype and the update held until the gradients
of every micro-batch are in."""

from tricycle.precision import Precision


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
    """``step()`` updates (``tricycle.update.update``: unscale, clip, skip on overflow) once the
    last micro-batch's backward is done, and does nothing before; ``zero_grad()`` likewise
    (the update zeroes the gradients already). Other attributes are the optimiser's own
    (``learning_rate`` may be set: a schedule)."""

    def __init__(self, optimiser, accelerator):
        object.__setattr__(self, "optimiser", optimiser)
        object.__setattr__(self, "accelerator", accelerator)

    def step(self):
        """The update, once the step's gradients are complete; its ``StepResult`` (the
        gradient norm and whether the update was skipped), or None."""
        return self.accelerator.optimiser_step()

    def zero_grad(self) -> None:
        if self.accelerator.sync_grad and self.accelerator.model is not None:
            self.accelerator.model.zero_grad()

    def __getattr__(self, name: str):
        return getattr(self.optimiser, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.optimiser, name, value)

    def __repr__(self) -> str:
        return f"PreparedOptimiser({self.optimiser!r})"


def unwrap(obj):
    """The model or optimiser inside a prepared one (anything else as it is)."""
    if isinstance(obj, PreparedModel):
        return obj.module
    if isinstance(obj, PreparedOptimiser):
        return obj.optimiser
    return obj


__all__ = ["PreparedModel", "PreparedOptimiser", "unwrap"]
