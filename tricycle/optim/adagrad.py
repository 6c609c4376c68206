"""``Adagrad`` and the two that mend its ever-shrinking steps, ``RMSprop`` and ``Adadelta``,
with torch.optim's signatures and formulas: each coordinate's step is divided by the root of
its own history of squared gradients, so rarely moved coordinates take larger steps.

With g the gradient (negated with ``maximize``) plus ``weight_decay`` * w (an L2 term), and
t the parameter's step count:

    Adagrad   s += g^2;  w -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)
    RMSprop   v = a v + (1 - a) g^2  (a moving average instead of a sum);  with ``centered``
              the variance, v - gbar^2, where gbar = a gbar + (1 - a) g;
              w -= lr * g / (sqrt(v) + eps), or with momentum m: b = m b + g / (sqrt(v) + eps),
              w -= lr * b
    Adadelta  v = r v + (1 - r) g^2;  d = sqrt(u + eps) / sqrt(v + eps) * g;
              u = r u + (1 - r) d^2;  w -= lr * d  (units of w, without a learning rate to
              tune: lr is 1 by default)

Each is written once, on one parameter, in ``xp`` (numpy or cupy); torch's state keys
("sum", "square_avg", "grad_avg", "momentum_buffer", "acc_delta", "step"). torch's flags
``foreach``, ``fused`` and ``capturable`` are accepted and ignored; ``differentiable`` is
refused.
"""

from tricycle import checks
from tricycle.optim.optimizer import Optimizer, advance, decayed, state_array, torch_flags


class Adagrad(Optimizer):
    """torch.optim.Adagrad (Duchi et al.): steps divided by the root of the sum of squared
    gradients, with a learning rate decaying as 1 / (1 + (t - 1) lr_decay). As torch, the
    sums are made in the constructor, at ``initial_accumulator_value`` (each group's own
    value here, where torch takes the constructor's for every group)."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "lr_decay": checks.non_negative,
        "weight_decay": checks.non_negative,
        "initial_accumulator_value": checks.non_negative,
        "eps": checks.non_negative,
        **torch_flags("foreach", "maximize", "differentiable", "fused"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"step": 0}
                fill = group["initial_accumulator_value"]  # both parts' sums, as torch's:
                fill = complex(fill, fill) if p.dtype.kind == "c" else fill
                state_array(self.state[p], "sum", p.xp, p.array, fill)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, t = float(group["lr"]), advance(state)
        total = state_array(state, "sum", xp, w, group["initial_accumulator_value"])
        g = decayed(w, g, lr, group["weight_decay"])
        total += g * g
        decayed_lr = lr / (1 + (t - 1) * group["lr_decay"])
        w -= decayed_lr * (g / (xp.sqrt(total) + group["eps"]))


class RMSprop(Optimizer):
    """torch.optim.RMSprop (Hinton): steps divided by the root of a moving average of the
    squared gradients (``centered``: of their variance), with optional momentum."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "momentum": checks.non_negative,
        "alpha": checks.non_negative,
        "eps": checks.non_negative,
        "centered": checks.boolean,
        "weight_decay": checks.non_negative,
        **torch_flags("capturable", "foreach", "maximize", "differentiable"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, alpha, momentum = float(group["lr"]), group["alpha"], group["momentum"]
        advance(state)
        v = state_array(state, "square_avg", xp, w)
        g = decayed(w, g, lr, group["weight_decay"])
        v *= alpha
        v += (1 - alpha) * (g * g)
        if group["centered"]:
            g_mean = state_array(state, "grad_avg", xp, w)
            g_mean += (1 - alpha) * (g - g_mean)  # torch's lerp
            avg = xp.sqrt(v - g_mean * g_mean) + group["eps"]
        else:
            avg = xp.sqrt(v) + group["eps"]
        if momentum > 0:
            buffer = state_array(state, "momentum_buffer", xp, w)
            buffer *= momentum
            buffer += g / avg
            w -= lr * buffer
        else:
            w -= lr * (g / avg)


class Adadelta(Optimizer):
    """torch.optim.Adadelta (Zeiler): each step is the root of the moving average of past
    squared steps over that of the squared gradients, times the gradient."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "rho": checks.interval(0, 1),
        "eps": checks.non_negative,
        "weight_decay": checks.non_negative,
        **torch_flags("maximize", "capturable", "foreach", "differentiable"),
    }

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, rho, eps = float(group["lr"]), group["rho"], group["eps"]
        advance(state)
        v, u = state_array(state, "square_avg", xp, w), state_array(state, "acc_delta", xp, w)
        g = decayed(w, g, lr, group["weight_decay"])
        v *= rho
        v += (1 - rho) * (g * g)
        delta = xp.sqrt(u + eps) / xp.sqrt(v + eps) * g
        u *= rho
        u += (1 - rho) * (delta * delta)
        w -= lr * delta
