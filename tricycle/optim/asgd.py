"""``ASGD`` with torch.optim's signature and formula: averaged stochastic gradient descent
(Polyak and Juditsky), SGD with a decaying step whose iterates are also averaged.

With g the gradient (negated with ``maximize``) plus ``weight_decay`` * w (an L2 term), and t
the parameter's step count, each step is

    w *= 1 - lambd * eta;   w -= eta * g
    ax = w while mu = 1, else ax += mu * (w - ax)     (the running average of the iterates)
    eta = lr / (1 + lambd * lr * t) ^ alpha;   mu = 1 / max(1, t - t0)

so the step size eta decays as t^-alpha and the average starts at step ``t0``: before it, ax
follows w. The average is in the state ("ax"), as torch keeps it; it is what the method
returns in theory, and the loop copies it into the weights if it wants it.

Written once, on one parameter, in ``xp`` (numpy or cupy), with torch's state keys ("eta",
"mu", "ax", "step"); eta and mu are numbers here (torch's are 0-d tensors of its default
dtype). ``foreach`` and ``capturable`` are accepted and ignored, ``differentiable`` refused.
"""

from tricycle import checks
from tricycle.optim.optimizer import Optimizer, advance, decayed, state_array, torch_flags


class ASGD(Optimizer):
    """torch.optim.ASGD: SGD with a step decaying as t^-alpha, and the running average of
    its iterates from step ``t0`` on (the state "ax")."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "lambd": checks.non_negative,
        "alpha": checks.non_negative,
        "t0": checks.non_negative,
        "weight_decay": checks.non_negative,
        **torch_flags("foreach", "maximize", "differentiable", "capturable"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, lambd = float(group["lr"]), group["lambd"]
        t = advance(state)
        eta, mu = state.setdefault("eta", lr), state.setdefault("mu", 1.0)
        average = state_array(state, "ax", xp, w)
        g = decayed(w, g, lr, group["weight_decay"])
        w *= 1 - lambd * eta
        w -= eta * g
        if mu != 1:
            average += (w - average) * mu
        else:
            average[...] = w
        state["eta"] = lr / (1 + lambd * lr * t) ** group["alpha"]
        state["mu"] = 1 / max(1, t - group["t0"])
