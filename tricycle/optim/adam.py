"""``Adam`` and ``AdamW`` with torch.optim's signatures, over ``tricycle.optimisers``' Adam.

Adam's ``weight_decay`` is an L2 term added to the gradient; AdamW's (and Adam's with
``decoupled_weight_decay=True``) shrinks the weights, w *= 1 - lr * weight_decay, before the
Adam step. As torch, the decay applies to every parameter of a group: nanoGPT puts its
biases and norm gains in a group of their own with ``weight_decay=0`` (tricycle's own AdamW
picks them by a filter instead). ``maximize`` follows the gradient up.

``amsgrad=True`` (Reddi et al.) divides by the square root of the largest second moment
seen so far ("max_exp_avg_sq") instead of the current one, so that no coordinate's step
grows when its gradients shrink; it is written here, on one parameter at a time
(``update_parameter``), while plain Adam and AdamW take the seed's update. The terms that
NAdam and RAdam share with it are here too (``moments``).

torch's performance flags (``foreach``, ``fused``, ``capturable``) are accepted and
ignored: tricycle takes its fused update on a GPU by itself. ``differentiable`` is refused.
"""

import math

from tricycle import checks, optimisers
from tricycle.optim.optimizer import Optimizer, decayed, state_array, torch_flags
from tricycle.tensor import Tensor


def moments(g, m, v, beta1: float, beta2: float) -> None:
    """Adam's moving averages, in place: m = b1 m + (1 - b1) g (torch's lerp) and
    v = b2 v + (1 - b2) g^2."""
    m += (1.0 - beta1) * (g - m)
    v *= beta2
    v += (1.0 - beta2) * (g * g)


def decay_every_parameter(name: str, param: Tensor) -> bool:
    """torch's choice of decayed parameters: every parameter of the group."""
    return True


class Adam(Optimizer):
    """torch.optim.Adam: Adam with bias correction (``tricycle.optimisers.Adam``'s update)."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "betas": optimisers.check_betas,
        "eps": checks.non_negative,
        "weight_decay": checks.non_negative,
        "amsgrad": checks.boolean,
        "decoupled_weight_decay": checks.boolean,
        **torch_flags("maximize", "foreach", "capturable", "differentiable", "fused"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
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

    def rule(self, group: dict) -> optimisers.Optimiser:
        """tricycle's AdamW, decaying every parameter, or its Adam with L2 decay: exactly
        those classes, whose update is fused on a GPU; with amsgrad, ``update_parameter``."""
        if group["amsgrad"]:
            return super().rule(group)
        lr, betas = float(group["lr"]), tuple(group["betas"])
        eps, decay = group["eps"], group["weight_decay"]
        if group["decoupled_weight_decay"]:
            return optimisers.AdamW(lr, betas, eps, decay, decay_filter=decay_every_parameter)
        return optimisers.Adam(lr, betas, eps, decay)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        """AMSGrad: Adam's step over the running maximum of v, with t the step:

        w -= lr / (1 - b1^t) * m / (sqrt(max v) / sqrt(1 - b2^t) + eps)
        """
        lr, (beta1, beta2), eps = float(group["lr"]), group["betas"], group["eps"]
        g = decayed(w, g, lr, group["weight_decay"], group["decoupled_weight_decay"])
        t = optimisers.adam_state(xp, w, state)  # the moments and step of plain Adam
        m, v = state["exp_avg"], state["exp_avg_sq"]
        moments(g, m, v, beta1, beta2)
        v_max = state_array(state, "max_exp_avg_sq", xp, w)
        xp.maximum(v_max, v, out=v_max)
        denom = xp.sqrt(v_max) / math.sqrt(1.0 - beta2**t) + eps
        w -= lr / (1.0 - beta1**t) * (m / denom)


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
