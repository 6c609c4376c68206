"""``Adam`` and ``AdamW`` with torch.optim's signatures, over ``tricycle.optimisers``' Adam.

Adam's ``weight_decay`` is an L2 term added to the gradient; AdamW's (and Adam's with
``decoupled_weight_decay=True``) shrinks the weights, w *= 1 - lr * weight_decay, before the
Adam step. As torch, the decay applies to every parameter of a group: nanoGPT puts its
biases and norm gains in a group of their own with ``weight_decay=0`` (tricycle's own AdamW
picks them by a filter instead). ``maximize`` follows the gradient up.

torch's performance flags (``foreach``, ``fused``, ``capturable``) are accepted and
ignored: tricycle takes its fused update on a GPU by itself. ``amsgrad`` and
``differentiable`` are refused.
"""

from tricycle import checks, optimisers
from tricycle.optim.optimizer import Optimizer, ignored, unsupported
from tricycle.tensor import Tensor


def decay_every_parameter(name: str, param: Tensor) -> bool:
    """torch's choice of decayed parameters: every parameter of the group."""
    return True


class Adam(Optimizer):
    """torch.optim.Adam: Adam with bias correction (``tricycle.optimisers.Adam``'s update)."""

    CHECKS = {
        "lr": checks.non_negative,
        "betas": optimisers.check_betas,
        "eps": checks.non_negative,
        "weight_decay": checks.non_negative,
        "amsgrad": unsupported("tricycle's Adam keeps no running maximum of the second moment"),
        "maximize": checks.boolean,
        "foreach": ignored,
        "capturable": ignored,
        "differentiable": unsupported("tricycle's updates are not recorded for backward"),
        "fused": ignored,
        "decoupled_weight_decay": checks.boolean,
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ):
        defaults = {
            "lr": lr,
            "betas": optimisers.check_betas(type(self).__name__, "betas", betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def rule(self, group: dict) -> optimisers.Adam:
        """tricycle's AdamW, decaying every parameter, or its Adam with L2 decay: exactly
        those classes, whose update is fused on a GPU."""
        lr, betas = float(group["lr"]), tuple(group["betas"])
        eps, decay = group["eps"], group["weight_decay"]
        if group["decoupled_weight_decay"]:
            return optimisers.AdamW(lr, betas, eps, decay, decay_filter=decay_every_parameter)
        return optimisers.Adam(lr, betas, eps, decay)


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay, by default 0.01."""

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=True,
        )  # fmt: skip

    def load_state_dict(self, state_dict: dict) -> None:
        """As ``Optimizer.load_state_dict``; the decay stays decoupled (an Adam's state
        loaded into an AdamW is still AdamW), as torch."""
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
