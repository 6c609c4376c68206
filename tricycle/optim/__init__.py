"""torch.optim for tricycle models: ``SGD``, ``Adam`` and ``AdamW`` (with ``amsgrad``),
``Adagrad``, ``RMSprop``, ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``, ``Rprop``, ``ASGD``,
``Adafactor``, ``Muon``, ``SparseAdam`` (a refusal: tricycle's gradients are dense) and
``LBFGS`` (whose ``step`` takes the closure it calls several times) with torch's arguments,
parameter groups, ``step()`` and ``state_dict()``/``load_state_dict()``, the learning-rate
schedules of ``lr_scheduler``, and the weight averaging (EMA, SWA) of ``swa_utils``.

A PyTorch training loop (nanoGPT's) runs as it is written::

    import tricycle.optim as optim
    from tricycle.nn.utils import clip_grad_norm_

    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=6e-4, betas=(0.9, 0.95),
    )
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = get_lr(step)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        norm = clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()                 # the update, as torch's

Here ``step()`` applies the update. tricycle's own optimisers (``tricycle.optimisers``) are
the seed's other spelling, unchanged: ``optimiser.step()`` marks the start of an iteration
and ``model.update(optimiser)`` applies it. The optimizers of this package are made of
those (``optimizer``): the same formulas, and on a GPU the same fused Adam update. The
optimizers the seed lacks write their formulas here, one parameter at a time in ``xp``
(``adagrad``: Adagrad, RMSprop, Adadelta; ``adam_variants``: Adamax, NAdam, RAdam; AMSGrad
in ``adam``; ``rprop``: Rprop; ``asgd``: ASGD; ``adafactor``: Adafactor; ``muon``: Muon;
``sparse_adam``: SparseAdam's refusal; ``lbfgs``: LBFGS, with its line search in ``line_search``).
"""

from tricycle.optim import lr_scheduler, swa_utils
from tricycle.optim.adafactor import Adafactor
from tricycle.optim.adagrad import Adadelta, Adagrad, RMSprop
from tricycle.optim.adam import Adam, AdamW
from tricycle.optim.adam_variants import Adamax, NAdam, RAdam
from tricycle.optim.asgd import ASGD
from tricycle.optim.lbfgs import LBFGS
from tricycle.optim.muon import Muon
from tricycle.optim.optimizer import Optimizer
from tricycle.optim.rprop import Rprop
from tricycle.optim.sgd import SGD
from tricycle.optim.sparse_adam import SparseAdam

__all__ = [
    "ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax",
    "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SparseAdam",
    "lr_scheduler", "swa_utils",
]  # fmt: skip
