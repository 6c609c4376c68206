"""torch.nn.utils.prune: zero a layer's tensor through a mask, kept as torch keeps it::

    import tricycle.nn.utils.prune as prune

    prune.l1_unstructured(layer, name="weight", amount=0.3)  # the 30% smallest |w| -> 0
    prune.ln_structured(layer, name="weight", amount=0.5, n=2, dim=0)  # half the rows too
    prune.remove(layer, "weight")  # the pruned tensor is the parameter again

As torch's: pruning the tensor ``name`` moves its Parameter (the same object) to
``name + "_orig"``, adds the buffer ``name + "_mask"`` (ones and zeros, the tensor's dtype),
and makes the layer's tensor ``orig * mask``: a tensor computed when the pruning is applied
and again before each forward, by the pruning method itself registered as a forward pre-hook
(``layer._forward_pre_hooks``), so that the gradient reaches ``name + "_orig"`` through the
mask and the optimiser keeps training the original. Pruning a pruned tensor again makes a
``PruningContainer``: the new method's mask is computed on the entries (or, structured,
the channels) the previous masks left. ``amount`` is a number of entries (an int) or a
fraction of them (a float in [0, 1], rounded as torch rounds it); the ``l1``/``ln`` methods
zero the smallest by magnitude or norm.

torch's names and layouts (``tricycle.nn.utils.computed_attributes``): ``"weight"`` finds the
layer's tensor under tricycle's name (a Linear's ``weights``, a norm's ``gamma``), and the mask,
``weight_orig``, ``importance_scores`` and a structured ``dim`` are in torch's layout (a
Linear's (out, in): its ``dim=0`` is tricycle's axis 1), so that ``state_dict`` names and
arrays through ``nn.to_torch``/``nn.from_torch`` are torch's. The layer's own attribute
(``weights``, (in, out)) is the transpose of ``orig * mask``. Naming the tricycle attribute
(``"weights"``) prunes it in tricycle's layout instead. As with ``parametrize``, a Linear's
Parameter stays the same object but is laid out anew as ``weight_orig``, and the state an
optimizer keeps of it (momentum, Adam's moments) is laid out with it
(``tricycle.parameter.laid_out_anew``), so an optimizer built before pruning steps as
torch's. The random methods draw from tricycle's generator (``tricycle.manual_seed``).
"""

import numbers

import numpy as np

from tricycle import backend, checks
from tricycle.module import Layer
from tricycle.nn.utils.pruning_base import (
    BasePruningMethod,
    PruningContainer,
    current,
    drop_hook,
    pre_hooks,
    pruning_hook,
    structured_dim,
)
from tricycle.random import generator
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (the tensor gets the pruning's form)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries (an int, or a fraction of them) at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = _amount(type(self).__name__, amount)

    def compute_mask(self, t, default_mask):
        k = _count(type(self).__name__, self.amount, t.size, "entries")
        mask = default_mask.array.copy()
        if k:
            draws = generator().random(t.size)  # (host)
            mask.reshape(-1)[t.xp.asarray(np.argsort(-draws, kind="stable")[:k])] = 0
        return Tensor(mask, requires_grad=False)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries (an int, or a fraction of them) of smallest magnitude
    (the first of equal ones)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = _amount(type(self).__name__, amount)

    def compute_mask(self, t, default_mask):
        k = _count(type(self).__name__, self.amount, t.size, "entries")
        mask = default_mask.array.copy()
        if k:
            smallest = t.xp.argsort(abs(t.array).reshape(-1), kind="stable")[:k]
            mask.reshape(-1)[smallest] = 0
        return Tensor(mask, requires_grad=False)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels (slices along ``dim``, torch's layout) at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        self.amount, self.dim = _amount(type(self).__name__, amount), dim

    def compute_mask(self, t, default_mask):
        owner = type(self).__name__
        dim = structured_dim(owner, self.dim, t)
        k = _count(owner, self.amount, t.shape[dim], "channels")
        if not k:
            return default_mask
        pruned = np.argsort(generator().random(t.shape[dim]), kind="stable")[:k]  # (host)
        return _channels_kept(t, dim, np.setdiff1d(np.arange(t.shape[dim]), pruned), default_mask)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels (slices along ``dim``, torch's layout) of smallest
    ``n``-norm (a number, ``inf``, ``-inf`` or "fro")."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        owner = type(self).__name__
        self.amount, self.dim = _amount(owner, amount), dim
        if not (n == "fro" or (isinstance(n, numbers.Real) and not isinstance(n, bool))):
            checks.fail(owner, "n", "a number, inf, -inf or 'fro'", n, TypeError)
        self.n = n

    def compute_mask(self, t, default_mask):
        owner = type(self).__name__
        dim = structured_dim(owner, self.dim, t)
        k = _count(owner, self.amount, t.shape[dim], "channels")
        if not k:
            return default_mask
        others = tuple(d for d in range(t.ndim) if d != dim)
        size, n = abs(t.array), 2 if self.n == "fro" else self.n
        if n == np.inf:
            norm = size.max(axis=others)
        elif n == -np.inf:
            norm = size.min(axis=others)
        elif n == 0:
            norm = (size != 0).sum(axis=others)
        else:
            norm = (size**n).sum(axis=others) ** (1 / n)  # (channels,)
        kept = t.xp.argsort(-norm, kind="stable")[: t.shape[dim] - k]
        return _channels_kept(t, dim, kept, default_mask)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given ``mask`` (torch's layout) is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = as_tensor(mask)

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"CustomFromMask: the mask has shape {self.mask.shape}, the tensor "
                             f"{default_mask.shape} (torch's layout)")  # fmt: skip
        mask = self.mask.array.astype(default_mask.dtype)
        return Tensor(default_mask.array * mask, requires_grad=False)


# ====================================================================== checks
def _amount(owner: str, amount):
    """torch's amount: an int >= 0 (entries) or a float in [0, 1] (a fraction)."""
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        checks.fail(owner, "amount", "an int (entries) or a float in [0, 1]", amount, TypeError)
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            checks.fail(owner, "amount", "a non-negative int or a float in [0, 1]", amount)
    elif not 0.0 <= float(amount) <= 1.0:
        checks.fail(owner, "amount", "a float in [0, 1] or a non-negative int", amount)
    return amount


def _count(owner: str, amount, size: int, what: str) -> int:
    """The number to prune of ``size`` ``what``: ``amount``, or its fraction rounded."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"{owner}: amount={amount} is more than the {size} {what} there "
                             "are to prune")  # fmt: skip
        return int(amount)
    return round(amount * size)


def _channels_kept(t: Tensor, dim: int, kept, default_mask: Tensor) -> Tensor:
    """Ones on the channels ``kept`` along ``dim``, zeros elsewhere, times ``default_mask``."""
    mask = t.xp.zeros(t.shape, dtype=default_mask.dtype)
    where = [slice(None)] * t.ndim
    where[dim] = t.xp.asarray(kept)
    mask[tuple(where)] = 1
    return Tensor(mask * default_mask.array, requires_grad=False)


# ====================================================================== the functions
def identity(module: Layer, name: str) -> Layer:
    """Prune nothing, but give ``name`` the pruning's form (``_orig``, ``_mask``)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Layer, name: str, amount) -> Layer:
    """Prune ``amount`` entries of ``module``'s ``name`` at random. Returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Layer, name: str, amount, importance_scores=None) -> Layer:
    """Prune the ``amount`` entries of smallest magnitude. Returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Layer, name: str, amount, dim) -> Layer:
    """Prune ``amount`` channels along ``dim`` (torch's layout) at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Layer, name: str, amount, n, dim, importance_scores=None) -> Layer:
    """Prune the ``amount`` channels along ``dim`` (torch's layout) of smallest n-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Layer, name: str, mask) -> Layer:
    """Prune where ``mask`` (torch's layout) is 0. Returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the (module, name) tensors of ``parameters`` together: ``pruning_method``
    (an unstructured method's class, built with ``kwargs``) ranks all their entries at once
    (or ``importance_scores[(module, name)]`` where given), so each tensor loses its own
    share. Each is then pruned by ``custom_from_mask``."""
    owner = "global_unstructured"
    if isinstance(parameters, (str, Tensor)) or not hasattr(parameters, "__iter__"):
        checks.fail(owner, "parameters", "an iterable of (module, name)", parameters, TypeError)
    parameters, scores = list(parameters), importance_scores or {}
    if not isinstance(scores, dict):
        checks.fail(owner, "importance_scores", "a dict {(module, name): Tensor}", scores,
                    TypeError)  # fmt: skip
    if not parameters:
        raise ValueError(f"{owner}: no (module, name) to prune")
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f"{owner}: the pruning method must be unstructured, "
                        f"{pruning_method.__name__} is {method.PRUNING_TYPE}")  # fmt: skip
    tensors = [current(owner, module, name) for module, name in parameters]
    xp = backend.array_module(tensors[0].array)
    ranked, default = [], []  # (each tensor's entries, flat)
    for (module, name), t in zip(parameters, tensors):
        ranked.append(as_tensor(scores.get((module, name), t)).array.reshape(-1))
        pruned = pruning_hook(module, name)[1] is not None
        mask = getattr(module, f"{name}_mask").array if pruned else xp.ones(t.shape, t.dtype)
        default.append(mask.reshape(-1))
    method._tensor_name = "temp"
    ranked, default = xp.concatenate(ranked), xp.concatenate(default)
    mask = (
        PruningContainer(method)
        .compute_mask(Tensor(ranked, requires_grad=False), Tensor(default, requires_grad=False))
        .array
    )
    start = 0
    for (module, name), t in zip(parameters, tensors):
        custom_from_mask(module, name, mask=mask[start : start + t.size].reshape(t.shape))
        start += t.size


def remove(module: Layer, name: str) -> Layer:
    """Make the pruning of ``name`` permanent (see ``BasePruningMethod.remove``) and take its
    hook off. Returns ``module``."""
    checks.instance(Layer)("remove", "module", module)
    key, method = pruning_hook(module, name)
    if method is None:
        raise ValueError(f"remove: {type(module).__name__}'s {name!r} has to be pruned before "
                         "pruning can be removed")  # fmt: skip
    method.remove(module)
    drop_hook(module, key)
    return module


def is_pruned(module: Layer) -> bool:
    """Whether ``module`` or a sublayer has a pruned tensor."""
    layers = module.named_layers()
    return any(isinstance(hook, BasePruningMethod)
               for _, layer in layers for hook in pre_hooks(layer).values())  # fmt: skip
