"""``SGD`` with torch.optim's signature, over ``tricycle.optimisers.StochasticGradientDescent``.

With g the gradient (negated with ``maximize``) plus ``weight_decay`` * w (L2), momentum m
and dampening d: the buffer starts at b = g and then b = m b + (1 - d) g; the step is
w -= lr * (g + m b) with Nesterov momentum, w -= lr * b without (w -= lr * g with no
momentum). torch's ``foreach`` and ``fused`` flags are accepted and ignored.
"""

from tricycle import checks, optimisers
from tricycle.optim.optimizer import Optimizer, torch_flags


class SGD(Optimizer):
    """torch.optim.SGD: stochastic gradient descent with optional (Nesterov) momentum,
    dampening and L2 weight decay. Linear in the gradient, it steps complex parameters too."""

    complex_parameters = True

    CHECKS = {
        "lr": checks.non_negative,
        "momentum": checks.non_negative,
        "dampening": checks.real,
        "weight_decay": checks.non_negative,
        "nesterov": checks.boolean,
        **torch_flags("maximize", "foreach", "differentiable", "fused"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def check_group(self, group: dict, where: str) -> None:
        super().check_group(group, where)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                f"SGD: {where or 'nesterov'}: Nesterov momentum needs momentum > 0 and "
                f"dampening 0, got momentum={group['momentum']}, "
                f"dampening={group['dampening']}"
            )

    def rule(self, group: dict) -> optimisers.StochasticGradientDescent:
        return optimisers.StochasticGradientDescent(
            float(group["lr"]), group["weight_decay"], group["momentum"], group["nesterov"],
            group["dampening"],
        )  # fmt: skip
