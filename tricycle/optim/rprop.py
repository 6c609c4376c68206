"""``Rprop`` with torch.optim's signature and formula: resilient backpropagation (Riedmiller
and Braun), which steps each coordinate by its own step size in the direction of the
gradient's sign, ignoring the gradient's magnitude.

With g the gradient (negated with ``maximize``) and g' the one the previous step kept, each
coordinate's step size grows by eta+ where g g' > 0 (the same slope: go faster), shrinks by
eta- where g g' < 0 (a minimum was jumped over), and stays where g g' = 0; it is clipped to
``step_sizes`` (min, max) and starts at ``lr``. Then w -= sign(g) * step_size, except where
the sign changed: there the step is skipped and g is kept as 0, so the next step neither
grows nor shrinks that coordinate's step size.

Written once, on one parameter, in ``xp`` (numpy or cupy), with torch's state keys ("prev",
"step_size", "step"); ``foreach`` and ``capturable`` are accepted and ignored,
``differentiable`` refused.
"""

from tricycle import checks
from tricycle.optim.optimizer import Optimizer, advance, state_array, torch_flags


def check_etas(owner: str, name: str, value):
    """(eta-, eta+): the factors that shrink and grow a step size, 0 < eta- < 1 < eta+."""
    pair = _pair(owner, name, value, "(eta-, eta+) with 0 < eta- < 1 < eta+")
    if not 0 < pair[0] < 1 < pair[1]:
        checks.fail(owner, name, "(eta-, eta+) with 0 < eta- < 1 < eta+", value)
    return value


def check_step_sizes(owner: str, name: str, value):
    """(min, max): the bounds of a step size, 0 <= min <= max."""
    pair = _pair(owner, name, value, "(min, max) with 0 <= min <= max")
    if not 0 <= pair[0] <= pair[1]:
        checks.fail(owner, name, "(min, max) with 0 <= min <= max", value)
    return value


def _pair(owner: str, name: str, value, expected: str) -> tuple:
    """``value`` as a pair of finite numbers, or a TypeError saying what was expected."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        checks.fail(owner, name, expected, value, TypeError)
    for number in value:
        checks.real(owner, name, number)
    return tuple(value)


class Rprop(Optimizer):
    """torch.optim.Rprop: per-coordinate step sizes adapted from the gradient's sign alone
    (meant for full-batch training: a mini-batch's noisy signs shrink the steps)."""

    complex_as_real = True  # complex parameters stepped as torch's view_as_real

    CHECKS = {
        "lr": checks.non_negative,
        "etas": check_etas,
        "step_sizes": check_step_sizes,
        **torch_flags("capturable", "foreach", "maximize", "differentiable"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        (eta_minus, eta_plus), (smallest, largest) = group["etas"], group["step_sizes"]
        advance(state)
        previous = state_array(state, "prev", xp, w)
        step_size = state_array(state, "step_size", xp, w, float(group["lr"]))
        agreement = xp.sign(g * previous)  # +1 the same slope, -1 a sign change, 0 either is 0
        factor = xp.ones_like(w)
        factor[agreement > 0] = eta_plus
        factor[agreement < 0] = eta_minus
        step_size *= factor
        xp.clip(step_size, smallest, largest, out=step_size)
        g = xp.where(agreement < 0, 0, g)  # after a sign change: no step, and forget g
        w -= xp.sign(g) * step_size
        previous[...] = g
