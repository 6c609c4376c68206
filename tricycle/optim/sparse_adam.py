"""torch.optim.SparseAdam, as a clear refusal: torch's takes only sparse gradients (an
``Embedding(sparse=True)``'s) and raises at its step for a dense one; tricycle's gradients
are all dense (``sparse=True`` is refused where a layer takes it), so every step with a
gradient raises torch's error, saying to use ``Adam``. The constructor checks torch's
arguments and keeps torch's defaults, so that code which only builds one still runs.
"""

from tricycle import checks, optimisers
from tricycle.optim.optimizer import Optimizer


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam: Adam for sparse gradients, which tricycle has none of; its
    ``step`` refuses a (dense) gradient as torch's does."""

    CHECKS = {
        "lr": checks.positive,
        "betas": optimisers.check_betas,
        "eps": checks.positive,
        "maximize": checks.boolean,
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        raise RuntimeError(
            "SparseAdam does not support dense gradients, please consider Adam instead "
            "(tricycle's gradients are all dense: there is no sparse gradient to give it)"
        )
