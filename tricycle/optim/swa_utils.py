"""torch.optim.swa_utils on tricycle: weight averaging (EMA and SWA) with torch's names::

    from tricycle.optim import swa_utils

    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.999))
    for x, y in loader:
        ...                                   # loss.backward(); optimizer.step()
        ema.update_parameters(model)          # the average moves towards the model
    samples = ema(noise)                      # the averaged copy's forward

``AveragedModel`` holds a deep copy of the model (``module``, on the model's device or the one
given) and ``n_averaged``, the number of models averaged so far, a buffer: its state_dict is
torch's, ``module.<name>`` and ``n_averaged``. Its first ``update_parameters`` copies the
model's parameters; each later one moves the copy's parameters w towards the model's v:

    SWA (the default)   w <- w + (v - w) / (n + 1)    the mean of the n + 1 models seen
    EMA (decay d)       w <- d w + (1 - d) v

With ``use_buffers=True`` the buffers (batch norm's running statistics) are averaged too;
otherwise they are copied from the model. The averaging runs off the graph, in place on the
copy's arrays, in plain ``xp`` (numpy or cupy). An ``avg_fn(w, v, n)`` returns the new w of
one tensor; a ``multi_avg_fn(ws, vs, n)`` writes the new values into the lists' tensors
(``.array`` in place, or ``copy_``/``mul_``/``add_``); both get Tensors that share the
arrays (the model's moved to the copy's device) and n an int.

``SWALR`` anneals each group's learning rate to its ``swa_lr`` over ``anneal_epochs`` (on a
cosine or a line), torch's formula term by term; ``update_bn`` recomputes the batch norms'
running statistics of an averaged model over a loader (their average over its batches:
``momentum=None``).
"""

import copy
import itertools
import math
from collections.abc import Callable, Iterable

import numpy as np

from tricycle import backend, checks
from tricycle.graph import no_grad
from tricycle.module import Layer
from tricycle.nn.batch_norm import _BatchNorm
from tricycle.nn.instance_norm import _InstanceNorm
from tricycle.optim.scheduler_base import LRScheduler, per_group
from tricycle.tensor import Tensor

__all__ = [
    "SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
    "get_swa_multi_avg_fn", "update_bn",
]  # fmt: skip

# ====================================================================== averaging functions


def _decay(owner: str, decay: float) -> float:
    return checks.real(owner, "decay", decay, low=0.0, high=1.0)


def _write(averaged: Tensor, value) -> None:
    """``value`` (a Tensor or an array) into ``averaged``'s array, in place; an integer
    buffer takes a float value truncated, as torch's ``copy_``."""
    averaged.array[...] = getattr(value, "array", value)


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of many tensors, in place: w <- d w + (1 - d) v
    (``w += (1 - d) (v - w)``, torch's lerp) for floats; an integer buffer as torch computes
    it, d w + (1 - d) v truncated."""
    _decay("get_ema_multi_avg_fn", decay)

    def ema_update(averaged: list[Tensor], current: list[Tensor], n_averaged) -> None:
        for w, v in zip(averaged, current, strict=True):
            if backend.is_float(w.dtype):
                w.array += (1 - decay) * (v.array - w.array)
            else:
                _write(w, w.array * decay + v.array * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean of many tensors, in place: w <- w + (v - w) / (n + 1), where n models
    are averaged in w (an integer buffer's mean truncated, as torch's)."""

    def swa_update(averaged: list[Tensor], current: list[Tensor], n_averaged) -> None:
        weight = 1 / (int(n_averaged) + 1)
        for w, v in zip(averaged, current, strict=True):
            if backend.is_float(w.dtype):
                w.array += weight * (v.array - w.array)
            else:
                _write(w, w.array + (v.array - w.array) * weight)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """The exponential moving average of one tensor: returns d w + (1 - d) v."""
    _decay("get_ema_avg_fn", decay)

    def ema_update(averaged, current, n_averaged):
        return decay * averaged + (1 - decay) * current

    return ema_update


def get_swa_avg_fn() -> Callable:
    """The running mean of one tensor: returns w + (v - w) / (n + 1)."""

    def swa_update(averaged, current, n_averaged):
        return averaged + (current - averaged) / (n_averaged + 1)

    return swa_update


# ====================================================================== the averaged model


def _same_device(array, like):
    """``array`` on ``like``'s device (itself when it is there already)."""
    if backend.device_of(array) == backend.device_of(like):
        return array
    return backend.move(array, like.device.id if backend.is_cupy_array(like) else None)


class AveragedModel(Layer):
    """A running average of a model's weights, as ``torch.optim.swa_utils.AveragedModel``:
    ``module`` is a deep copy of ``model`` (moved to ``device`` when given), ``n_averaged``
    (an int64 buffer) counts the models averaged into it, and calling the averaged model
    calls the copy. ``avg_fn`` or ``multi_avg_fn`` (at most one; see the module's doc)
    replaces the default running mean; with ``use_buffers`` the buffers are averaged with
    the parameters, else copied from the model at each update. The functions are not saved
    in ``state_dict``, as torch's."""

    @checks.arguments(
        model=checks.instance(Layer),
        avg_fn=checks.optional(checks.function),
        multi_avg_fn=checks.optional(checks.function),
        use_buffers=checks.boolean,
    )
    def __init__(
        self,
        model: Layer,
        device=None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ):
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError(
                "AveragedModel: give avg_fn or multi_avg_fn, not both (got "
                f"avg_fn={avg_fn!r}, multi_avg_fn={multi_avg_fn!r})"
            )
        self.module = copy.deepcopy(model)
        self.n_averaged = Tensor(np.array(0, dtype=np.int64), requires_grad=False)
        if device is not None:
            index = backend.parse_device(device, "AveragedModel")
            self.module.to(device)
            if index is not None:
                self.n_averaged.to_gpu(index)
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _pairs(self, model: Layer, buffers_only: bool = False) -> list[tuple[Tensor, Tensor]]:
        """(the copy's tensor, the model's, on the copy's device, off the graph) for the
        parameters and, with ``use_buffers``, then the buffers (torch's order); for the
        buffers alone with ``buffers_only``. Both lists must match one to one in shape."""

        def tensors(layer: Layer) -> list[tuple[str, Tensor]]:
            buffers = list(layer.named_buffers())
            if buffers_only:
                return buffers
            return layer.named_parameters() + (buffers if self.use_buffers else [])

        ours, theirs = tensors(self.module), tensors(model)
        kind = "buffers" if buffers_only else "parameters" + " and buffers" * self.use_buffers
        if len(ours) != len(theirs):
            raise ValueError(
                f"AveragedModel.update_parameters: the model has {len(theirs)} {kind}, the "
                f"averaged copy {len(ours)}: give a model of the architecture it was made from"
            )
        for (name, w), (model_name, v) in zip(ours, theirs):
            if w.shape != v.shape:
                raise ValueError(
                    f"AveragedModel.update_parameters: the model's {model_name} has shape "
                    f"{v.shape}, the averaged copy's {name} {w.shape}: give a model of the "
                    "architecture it was made from"
                )
        return [(w.detach(), Tensor(_same_device(v.array, w.array), requires_grad=False))
                for (_, w), (_, v) in zip(ours, theirs)]  # fmt: skip

    @checks.arguments(model=checks.instance(Layer))
    def update_parameters(self, model: Layer) -> None:
        """Average ``model``'s parameters (and buffers, with ``use_buffers``) into the copy:
        the first call copies them; each later one applies the averaging function. Without
        ``use_buffers`` the copy's buffers become the model's. Then ``n_averaged`` += 1."""
        n_averaged = int(self.n_averaged.array)
        with no_grad():
            pairs = self._pairs(model)
            averaged, current = [w for w, _ in pairs], [v for _, v in pairs]
            if n_averaged == 0:
                for w, v in pairs:
                    _write(w, v)
            elif self.avg_fn is not None:
                for w, v in pairs:
                    _write(w, self.avg_fn(w, v, n_averaged))
            elif pairs:
                multi_avg_fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                multi_avg_fn(averaged, current, n_averaged)
            if not self.use_buffers:  # the buffers follow the model's
                for w, v in self._pairs(model, buffers_only=True):
                    _write(w, v)
        self.n_averaged.array = self.n_averaged.array + 1

    def extra_repr(self) -> str:
        averaging = "avg_fn" if self.avg_fn else "multi_avg_fn" if self.multi_avg_fn else "swa"
        return f"{averaging}, use_buffers={self.use_buffers}"


# ====================================================================== batch norm statistics


def _is_batch_norm(layer: Layer) -> bool:
    """A batch norm (torch's ``_BatchNorm``): instance norm shares tricycle's base class but
    not torch's, and keeps its statistics."""
    return isinstance(layer, _BatchNorm) and not isinstance(layer, _InstanceNorm)


_EMPTY = object()  # what an empty loader's iterator gives first


@checks.arguments(model=checks.instance(Layer))
def update_bn(loader: Iterable, model: Layer, device=None) -> None:
    """Recompute the running statistics of every batch norm of ``model`` over ``loader``, as
    ``torch.optim.swa_utils.update_bn``: reset, then one pass in training mode with
    ``momentum=None``, so they are the average of the batches' statistics. A batch is an
    input, or a list or tuple whose first item is the input; with ``device`` inputs are
    moved there first. The momenta and the model's training mode are restored after. An
    empty loader is an error that leaves the statistics as they were."""
    if not isinstance(loader, Iterable):
        checks.fail("update_bn", "loader", "an iterable of batches", loader, TypeError)
    norms = [layer for layer in model.layers() if _is_batch_norm(layer)]
    if not norms:
        return
    batches = iter(loader)
    first = next(batches, _EMPTY)
    if first is _EMPTY:
        raise ValueError(
            f"update_bn: the loader gave no batches, so the running statistics of the "
            f"{len(norms)} batch norm layers cannot be recomputed (left as they were)"
        )
    momenta = [layer.momentum for layer in norms]
    for layer in norms:
        layer.reset_running_stats()
        layer.momentum = None
    was_training = model.training
    model.train()
    try:
        with no_grad():
            for batch in itertools.chain([first], batches):
                if isinstance(batch, list | tuple):
                    batch = batch[0]
                if device is not None:
                    batch = _to_device(batch, device)
                model(batch)
    finally:
        for layer, momentum in zip(norms, momenta):
            layer.momentum = momentum
        model.train(was_training)


def _to_device(batch, device):
    """``batch`` (a Tensor or an array) as a Tensor on ``device``."""
    batch = batch if isinstance(batch, Tensor) else Tensor(batch, requires_grad=False)
    return batch.to(device)


# ====================================================================== the learning rate


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` (one for all groups, or one each) over
    ``anneal_epochs`` steps, then hold it, as ``torch.optim.swa_utils.SWALR``. With
    t = min(1, step / anneal_epochs) and alpha = (1 - cos(pi t)) / 2 ("cos") or t
    ("linear"), the rate is swa_lr alpha + lr0 (1 - alpha), where lr0 is the rate the
    annealing started from, recovered from the group's current one (torch's chainable
    form: another schedule may have moved it)."""

    @checks.arguments(
        anneal_epochs=checks.non_negative_int,
        anneal_strategy=checks.one_of(("cos", "linear")),
    )
    def __init__(
        self,
        optimizer,
        swa_lr,
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ):
        owner = "SWALR"
        swa_lrs = per_group(owner, "swa_lr", optimizer, swa_lr)
        for value in swa_lrs:
            checks.real(owner, "swa_lr", value, low=0.0)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        self._anneal_strategy = anneal_strategy
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        """The fraction of the way to swa_lr at t in [0, 1] of the annealing."""
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """lr0 from lr = swa_lr alpha + lr0 (1 - alpha)."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
