"""Three variants of Adam with torch.optim's signatures and formulas: ``Adamax`` (the
infinity norm in place of the second moment), ``NAdam`` (Nesterov momentum) and ``RAdam``
(the variance of the adaptive step rectified, so that no warm-up is needed).

With g the gradient (negated with ``maximize``), t the parameter's step, m and v Adam's
moments (``adam.moments``) and b1, b2 the betas:

    Adamax  u = max(b2 u, |g| + eps);  w -= lr / (1 - b1^t) * m / u
    NAdam   mu_t = b1 (1 - 0.96^(t psi) / 2) (psi: ``momentum_decay``), P_t = mu_1 ... mu_t;
            w -= lr (1 - mu_t) / (1 - P_t) * g / d + lr mu_{t+1} / (1 - P_t mu_{t+1}) * m / d,
            d = sqrt(v / (1 - b2^t)) + eps
    RAdam   rho_inf = 2 / (1 - b2) - 1,  rho_t = rho_inf - 2 t b2^t / (1 - b2^t);
            m_hat = m / (1 - b1^t); while rho_t <= 5: w -= lr m_hat (momentum alone); then
            w -= lr m_hat r sqrt(1 - b2^t) / (sqrt(v) + eps), with the rectification
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))

``weight_decay`` is an L2 term added to g, or with ``decoupled_weight_decay`` (NAdam's and
RAdam's: NAdamW, RAdamW) shrinks the weights first, w *= 1 - lr * weight_decay. Each is
written once, on one parameter, in ``xp`` (numpy or cupy), with torch's state keys.
"""

import math

from tricycle import checks, optimisers
from tricycle.optim.adam import moments
from tricycle.optim.optimizer import Optimizer, advance, decayed, state_array, torch_flags

ADAM_CHECKS = {
    "lr": checks.non_negative,
    "betas": optimisers.check_betas,
    "eps": checks.non_negative,
    "weight_decay": checks.non_negative,
}


class Adamax(Optimizer):
    """torch.optim.Adamax (Kingma & Ba): Adam with the exponentially weighted infinity norm
    of the gradients ("exp_inf") as its denominator."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = ADAM_CHECKS | torch_flags("foreach", "maximize", "differentiable", "capturable")

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "betas": optimisers.check_betas(type(self).__name__, "betas", betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, (beta1, beta2) = float(group["lr"]), group["betas"]
        t = advance(state)
        m, u = state_array(state, "exp_avg", xp, w), state_array(state, "exp_inf", xp, w)
        g = decayed(w, g, lr, group["weight_decay"])
        m += (1.0 - beta1) * (g - m)  # torch's lerp
        u *= beta2
        xp.maximum(u, xp.abs(g) + group["eps"], out=u)
        w -= lr / (1.0 - beta1**t) * (m / u)


class NAdam(Optimizer):
    """torch.optim.NAdam (Dozat): Adam with Nesterov momentum, the momentum coefficient
    warming up by ``momentum_decay``; its product over the steps is the state "mu_product"."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = ADAM_CHECKS | {
        "momentum_decay": checks.non_negative,
        "decoupled_weight_decay": checks.boolean,
        **torch_flags("maximize", "foreach", "capturable", "differentiable"),
    }

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "betas": optimisers.check_betas(type(self).__name__, "betas", betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, (beta1, beta2), psi = float(group["lr"]), group["betas"], group["momentum_decay"]
        t = advance(state)
        state.setdefault("mu_product", 1.0)
        m, v = state_array(state, "exp_avg", xp, w), state_array(state, "exp_avg_sq", xp, w)
        g = decayed(w, g, lr, group["weight_decay"], group["decoupled_weight_decay"])
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))  # this step's momentum, and the next's
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
        state["mu_product"] *= mu
        product = state["mu_product"]
        moments(g, m, v, beta1, beta2)
        denom = xp.sqrt(v / (1.0 - beta2**t)) + group["eps"]
        w -= lr * (1.0 - mu) / (1.0 - product) * (g / denom)  # the gradient's share
        w -= lr * mu_next / (1.0 - product * mu_next) * (m / denom)  # the momentum's


class RAdam(Optimizer):
    """torch.optim.RAdam (Liu et al.): Adam whose adaptive step is rectified by the
    variance of its estimate, and plain momentum while that estimate is too uncertain."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = ADAM_CHECKS | {
        "decoupled_weight_decay": checks.boolean,
        **torch_flags("maximize", "foreach", "capturable", "differentiable"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "betas": optimisers.check_betas(type(self).__name__, "betas", betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, (beta1, beta2) = float(group["lr"]), group["betas"]
        t = advance(state)
        m, v = state_array(state, "exp_avg", xp, w), state_array(state, "exp_avg_sq", xp, w)
        g = decayed(w, g, lr, group["weight_decay"], group["decoupled_weight_decay"])
        moments(g, m, v, beta1, beta2)
        correction1, correction2 = 1.0 - beta1**t, 1.0 - beta2**t
        m_hat = m / correction1
        rho_inf = 2.0 / (1.0 - beta2) - 1.0  # the length of the moving average, at most
        rho_t = rho_inf - 2.0 * t * beta2**t / correction2  # ... and at step t
        if rho_t <= 5.0:
            w -= m_hat * lr
            return
        rect = math.sqrt(
            (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
        )
        w -= m_hat * lr * (math.sqrt(correction2) / (xp.sqrt(v) + group["eps"])) * rect
