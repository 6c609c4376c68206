"""How ``tricycle.nn.utils.prune`` keeps a layer's tensor pruned, as torch keeps it: the
pruned attribute (a ``Computed`` descriptor reading what the forward pre-hook computed last),
``BasePruningMethod`` (``apply``: the parameter moves to ``{name}_orig``, the mask is the
buffer ``{name}_mask``, the method becomes the layer's forward pre-hook; ``remove``) and
``PruningContainer`` (iterative pruning). The methods themselves and the functions a script
calls are in ``prune`` (see its doc for the names and layouts).
"""

from abc import ABC, abstractmethod

from tricycle import backend, checks
from tricycle.module import Layer
from tricycle.nn.utils.computed_attributes import Computed, computed, eject, inject
from tricycle.nn.utils.parametrize import torch_attribute, torch_value
from tricycle.parameter import laid_out_anew
from tricycle.tensor import Tensor, as_tensor, no_grad

__all__ = ["BasePruningMethod", "PruningContainer"]


# ====================================================================== the pruned attribute
class _Values:
    """A layer's pruned tensors as its pre-hooks last computed them, {torch name: Tensor in the
    layer's layout}: no member of the layer (not walked, saved or moved), and empty in a copy
    or a pickle (read again, each is computed anew)."""

    __slots__ = ("values",)

    def __init__(self):
        self.values = {}

    def __deepcopy__(self, memo):
        return _Values()

    def __reduce__(self):
        return _Values, ()


_HELD = "_pruned_values"  # the _Values attribute of a pruned layer


class _Pruned(Computed):
    """The descriptor of a pruned attribute (``weights`` of a Linear pruned as ``"weight"``):
    reading it gives ``orig * mask`` as the last forward pre-hook computed it."""

    def __init__(self, attr: str, name: str, transposed: bool):
        super().__init__(attr)
        self.name, self.transposed = name, transposed
        self.origin = f"pruning (from {name}_orig and {name}_mask)"

    def __get__(self, layer, owner=None):
        if layer is None:
            return self
        held = vars(layer).setdefault(_HELD, _Values()).values
        if self.name not in held:  # a copy's first read
            _store(layer, self.name, _masked(layer, self.name))
        return held[self.name]

    def __set__(self, layer, value) -> None:
        raise AttributeError(
            f"{type(layer).__name__}.{self.attr} is pruned: it is {self.name}_orig * "
            f"{self.name}_mask, computed before each forward; set those, or "
            f"prune.remove(layer, {self.name!r}) first"
        )


def _descriptor(module: Layer, name: str) -> _Pruned | None:
    return next((d for d in computed(module).values()
                 if isinstance(d, _Pruned) and d.name == name), None)  # fmt: skip


def _masked(module: Layer, name: str) -> Tensor:
    """``mask * orig`` (torch's layout), differentiable in ``orig``."""
    mask, orig = getattr(module, f"{name}_mask"), getattr(module, f"{name}_orig")
    if mask.dtype != orig.dtype:
        mask = Tensor(mask.array.astype(orig.dtype), requires_grad=False)
    return mask * orig


def _store(module: Layer, name: str, value: Tensor) -> None:
    """``value`` (torch's layout) as what the pruned attribute reads, in the layer's layout."""
    descriptor = _descriptor(module, name)
    value = value.T if descriptor.transposed else value
    vars(module).setdefault(_HELD, _Values()).values[name] = value


def pre_hooks(module: Layer) -> dict:
    """{handle id: hook} of ``module``'s own forward pre-hooks (the live table)."""
    hooks = vars(module).get("_hooks")
    return {} if hooks is None else hooks.forward_pre


def pruning_hook(module: Layer, name: str):
    """(key, pruning method) of ``module``'s pre-hook pruning ``name``, or (None, None)."""
    for key, hook in pre_hooks(module).items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            return key, hook
    return None, None


def drop_hook(module: Layer, key: int) -> None:
    hooks = module._hooks
    hooks.discard("forward_pre", key)
    if not hooks:  # the plain call path again, as a removed handle leaves it
        del module._hooks


def _transpose(tensor: Tensor) -> None:
    """Lay ``tensor`` (and its gradient, and the optimizers' state of it) out as its
    transpose, in place (the same object)."""
    tensor.array = tensor.array.T.copy()
    if tensor.grad is not None:
        tensor.grad = Tensor(tensor.grad.array.T.copy(), requires_grad=False)
    laid_out_anew(tensor)


def current(owner: str, module: Layer, name: str) -> Tensor:
    """torch's ``getattr(module, name)``: the tensor in torch's layout, pruned if it is (no
    graph recorded)."""
    checks.instance(Layer)(owner, "module", module)
    checks.text(owner, "name", name)
    if pruning_hook(module, name)[1] is not None:
        with no_grad():
            return _masked(module, name)
    return torch_value(owner, module, name)


# ====================================================================== the methods
class BasePruningMethod(ABC):
    """A way to prune: a subclass sets ``PRUNING_TYPE`` ("unstructured": entries;
    "structured": whole channels along ``self.dim``; "global") and defines
    ``compute_mask(t, default_mask)``, the mask (a Tensor of ``t``'s shape) that prunes ``t``
    further than ``default_mask`` does. ``apply`` prunes a layer's tensor with it; the
    instance is then the layer's forward pre-hook for that tensor."""

    PRUNING_TYPE: str
    _tensor_name: str | None = None

    def __call__(self, module: Layer, inputs) -> None:
        """The forward pre-hook: the pruned tensor computed anew from orig and mask."""
        _store(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` (torch's layout), given the mask it has already."""

    def apply_mask(self, module: Layer) -> Tensor:
        """``module``'s pruned tensor: ``{name}_mask * {name}_orig`` (torch's layout)."""
        if self._tensor_name is None:
            raise ValueError(f"{type(self).__name__}.apply_mask: the method prunes no tensor "
                             "yet (apply() sets it)")  # fmt: skip
        return _masked(module, self._tensor_name)

    @classmethod
    def apply(cls, module: Layer, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module``'s tensor ``name`` with ``cls(*args, **kwargs)`` (composed with the
        pruning it has already); ``importance_scores`` (torch's layout, the tensor's shape)
        ranks the entries in place of the tensor's values. Returns the method now held."""
        owner = f"{cls.__name__}.apply"
        t = current(owner, module, name)
        key, old = pruning_hook(module, name)
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:  # iterative pruning: a container of the methods so far
            before = old._pruning_methods if isinstance(old, PruningContainer) else (old,)
            method = PruningContainer(*before, method)
            method._tensor_name = name
        scores = t if importance_scores is None else as_tensor(importance_scores)
        if scores.shape != t.shape:
            raise ValueError(f"{owner}: importance_scores has shape {scores.shape}, but "
                             f"{type(module).__name__}'s {name!r} has {t.shape} (torch's "
                             "layout)")  # fmt: skip
        xp = backend.array_module(t.array)
        if old is None:
            default = xp.ones(t.shape, dtype=t.dtype)
        else:
            default = getattr(module, f"{name}_mask").array.copy()
        with no_grad():
            mask = method.compute_mask(scores, default_mask=Tensor(default, requires_grad=False))
        mask = as_tensor(mask)
        if mask.shape != t.shape:
            raise ValueError(f"{owner}: compute_mask gave a mask of shape {mask.shape} for a "
                             f"tensor of shape {t.shape}")  # fmt: skip
        if old is None:  # the parameter moves to name_orig (torch's layout)
            attr, transposed = torch_attribute(owner, module, name)
            orig = vars(module)[attr]
            inject(module, _Pruned(attr, name, transposed))
            if transposed:
                _transpose(orig)
            setattr(module, f"{name}_orig", orig)
        else:
            drop_hook(module, key)
        module.register_buffer(f"{name}_mask", mask.array.astype(t.dtype))  # (its own copy)
        method(module, ())
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None) -> Tensor:
        """``t`` times the mask this method computes for it (no layer involved)."""
        t = as_tensor(t)
        scores = t if importance_scores is None else as_tensor(importance_scores)
        if scores.shape != t.shape:
            raise ValueError(f"{type(self).__name__}.prune: importance_scores has shape "
                             f"{scores.shape}, t has {t.shape}")  # fmt: skip
        if default_mask is None:
            default_mask = Tensor(t.xp.ones(t.shape, dtype=t.dtype), requires_grad=False)
        with no_grad():
            mask = as_tensor(self.compute_mask(scores, default_mask=as_tensor(default_mask)))
        return t * mask

    def remove(self, module: Layer) -> None:
        """Make the pruning permanent: the tensor is its Parameter again (the object that was
        ``{name}_orig``), holding ``orig * mask``; the mask and the pruned attribute go.
        (``prune.remove`` also takes the hook off.)"""
        name = self._tensor_name
        descriptor = _descriptor(module, name) if name is not None else None
        if descriptor is None:
            raise ValueError(f"{type(self).__name__}.remove: {type(module).__name__} has no "
                             f"pruned tensor {name!r}")  # fmt: skip
        with no_grad():
            weight = self.apply_mask(module)
        orig = getattr(module, f"{name}_orig")
        orig.array = weight.array.copy()
        if descriptor.transposed:
            _transpose(orig)
        delattr(module, f"{name}_orig")
        delattr(module, f"{name}_mask")
        held = vars(module).get(_HELD)
        if held is not None:
            held.values.pop(name, None)
            if not held.values:
                del vars(module)[_HELD]
        eject(module, descriptor.attr, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order (``list(container)``); its mask is
    the last one's, computed on what the earlier ones left: the entries still 1
    (unstructured), the channels along its ``dim`` not wholly 0 (structured), or all
    (global)."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        if len(methods) == 1 and not isinstance(methods[0], BasePruningMethod):
            methods = tuple(methods[0])  # torch's container of an iterable
        if methods:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method``, which must prune the same tensor."""
        if not isinstance(method, BasePruningMethod):
            checks.fail("PruningContainer.add_pruning_method", "method",
                        "a BasePruningMethod", method, TypeError)  # fmt: skip
        if self._tensor_name != method._tensor_name:
            raise ValueError(
                f"PruningContainer.add_pruning_method: the container prunes "
                f"{self._tensor_name!r}, the method {method._tensor_name!r}"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, index):
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        owner = "PruningContainer.compute_mask"
        method = self._pruning_methods[-1]
        mask = default_mask.array.astype(t.dtype)  # (a copy)
        kind = getattr(method, "PRUNING_TYPE", None)
        if kind == "unstructured":
            where = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(f"{owner}: a structured pruning method needs a `dim`, "
                                     f"{type(method).__name__} has none")  # fmt: skip
            dim = structured_dim(owner, method.dim, t)
            others = tuple(d for d in range(t.ndim) if d != dim)
            where = [slice(None)] * t.ndim
            where[dim] = backend.array_module(mask).flatnonzero(mask.sum(axis=others))  # left
            where = tuple(where)
        elif kind == "global":
            where = (slice(None),) * t.ndim
        else:
            what = f"unknown PRUNING_TYPE {kind!r} of {type(method).__name__}"
            raise ValueError(f"{owner}: {what} (unstructured, structured or global)")
        left = Tensor(t.array[where], requires_grad=False)
        part = method.compute_mask(left, default_mask=Tensor(mask[where], requires_grad=False))
        mask[where] = as_tensor(part).array
        return Tensor(mask, requires_grad=False)


def structured_dim(owner: str, dim, t: Tensor) -> int:
    """A structured method's ``dim`` of ``t`` (a tensor of 2 or more axes) as an index."""
    if t.ndim <= 1:
        raise ValueError(f"{owner}: structured pruning needs a tensor of 2 or more axes, got "
                         f"shape {t.shape}")  # fmt: skip
    return checks.axis(owner, "dim", dim, t.ndim, t.shape)
