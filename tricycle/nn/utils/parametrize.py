"""torch.nn.utils.parametrize: a layer's tensor seen through a function of other tensors.

``register_parametrization(layer, "weight", P)`` makes the layer's weight ``P(original)``,
computed at each read from ``layer.parametrizations.weight.original``, differentiably: the
optimiser trains ``original``, the layer sees ``P`` of it::

    import tricycle.nn.utils.parametrize as P

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).T

        def right_inverse(self, A):  # optional: what `layer.weight = A` stores
            return A.triu()

    P.register_parametrization(layer, "weight", Symmetric())

As torch's: a parametrization is a layer (or a callable) with ``forward(X)``, and optionally
``right_inverse(A)``, which gives the original from a value (called once at registration on
the tensor as it is, and on each assignment ``layer.weight = A``); one that returns several
tensors makes ``original0``, ``original1``... and a first parametrization then takes them
all (``forward(g, v)``: ``weight_norm``). Several parametrizations on one tensor compose in
registration order; ``unsafe=False`` checks that each keeps the shape and dtype. The
``state_dict`` names are torch's (``parametrizations.weight.original``, then the
parametrization layers' own tensors, ``parametrizations.weight.0._u``); ``cached()`` computes
each parametrized tensor once within its block; ``remove_parametrizations`` makes the tensor
a plain parameter again (its current value, or the original).

torch's names and layouts: ``"weight"`` is accepted where the tricycle layer names it
otherwise (``tricycle.nn.utils.computed_attributes``), and the parametrization works in
torch's layout, so that torch code and torch's ``state_dict`` carry over: a Linear's
``original`` is torch's (out, in) weight (the same Parameter object, its values transposed),
and ``layer.weights`` stays (in, out): the transpose of ``P(original)``. Naming the tricycle
attribute (``"weights"``) parametrizes it in tricycle's layout instead.
"""

import threading
from collections.abc import Sequence
from contextlib import contextmanager

from tricycle import backend, checks
from tricycle.module import Layer, Parameter
from tricycle.nn.containers import ModuleDict, ModuleList
from tricycle.nn.utils.computed_attributes import (
    Computed,
    base_class,
    computed,
    eject,
    inject,
    torch_attribute,
)
from tricycle.parameter import laid_out_anew
from tricycle.tensor import Tensor, as_tensor, no_grad

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_local = threading.local()  # .cache: {(id(layer), name): value} inside cached(); .depth


@contextmanager
def cached():
    """Within the block, each parametrized tensor is computed at its first read and that
    Tensor is reused by the next reads (one graph node, one power iteration): for a weight
    read many times in a forward (a recurrent kernel, a tied weight). Blocks nest; the
    values are dropped when the outermost ends. Per thread, as grad mode."""
    depth = getattr(_local, "depth", 0)
    if depth == 0:
        _local.cache = {}
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
        if depth == 0:
            _local.cache = None


class ParametrizationList(ModuleList):
    """``layer.parametrizations[name]``: the parametrizations of one tensor, in order (items
    ``0``, ``1``, ...), and the tensor(s) they compute it from, ``original`` (or
    ``original0``, ``original1``... when the first one's ``right_inverse`` returns several).
    Calling it gives the parametrized tensor (torch's layout; see the module's doc).
    ``register_parametrization`` makes one; it is not meant to be built by hand."""

    def __init__(self, modules: Sequence, original: Tensor, unsafe: bool = False):
        owner = "ParametrizationList"
        if not modules:
            raise ValueError(f"{owner}: needs one or more parametrizations, got none")
        super().__init__(modules)
        self.unsafe = unsafe
        self.shape = original.shape  # the parametrized tensor's (what an assignment gives)
        with no_grad():
            new = original
            for parametrization in reversed(self._layers):
                if hasattr(parametrization, "right_inverse"):
                    try:
                        new = parametrization.right_inverse(new)
                    except NotImplementedError:  # torch's convention: then the identity
                        pass
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor:
            _check_like(owner, "right_inverse(original)", new, original, shape=False)
            _set(original, new)
            self.original = original
        elif isinstance(new, (tuple, list)) and new:
            for i, tensor in enumerate(new):
                if not isinstance(tensor, Tensor):
                    _fail(owner, f"element {i} of right_inverse(original)", "a Tensor", tensor)
                copy = backend.array_module(tensor.array).array(tensor.array, copy=True)
                if original.requires_grad:
                    setattr(self, f"original{i}", Parameter(copy))
                else:
                    setattr(self, f"original{i}", Tensor(copy, requires_grad=False))
        else:
            _fail(owner, "right_inverse(original)", "a Tensor or a sequence of Tensors", new)
        self.ntensors = 1 if self.is_tensor else len(new)
        if not unsafe:
            _check_like(owner, "the parametrized tensor", self(), original)

    def _members(self):
        """The originals, then the parametrizations ``0``, ``1``... (torch's names)."""
        for name, value in vars(self).items():
            if isinstance(value, Tensor):
                yield name, value
        yield from super()._members()

    __call__ = Layer.__call__  # a container, but one with a forward

    def originals(self) -> list[Tensor]:
        """``[original]``, or ``[original0, original1, ...]``."""
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def forward(self) -> Tensor:
        """The parametrized tensor: the first parametrization of the originals, then each
        next one of the previous one's output."""
        x = self._layers[0](*self.originals())
        for parametrization in self._layers[1:]:
            x = parametrization(x)
        return x

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` (torch's layout) as the parametrized tensor: each parametrization's
        ``right_inverse``, last to first, gives the new originals, written into them (the
        same Tensors, without recording a graph)."""
        owner = "ParametrizationList.right_inverse"
        if not self.unsafe and isinstance(value, Tensor) and value.shape != self.shape:
            raise ValueError(f"{owner}: the value has shape {value.shape}, but the parametrized "
                             f"tensor has shape {self.shape} (torch's layout)")  # fmt: skip
        with no_grad():
            for parametrization in reversed(self._layers):
                if not hasattr(parametrization, "right_inverse"):
                    raise ValueError(
                        f"{owner}: the parametrization {type(parametrization).__name__} has no "
                        "right_inverse, so the parametrized tensor cannot be assigned"
                    )
                value = parametrization.right_inverse(value)
            if self.is_tensor:
                _check_like(owner, "right_inverse(value)", value, self.original, shape=False)
                _set(self.original, value)
                return
            if not (isinstance(value, (tuple, list)) and len(value) == self.ntensors):
                _fail(owner, "right_inverse(value)", f"{self.ntensors} Tensors", value)
            for i, (original, tensor) in enumerate(zip(self.originals(), value)):
                what = f"element {i} of right_inverse(value)"
                _check_like(owner, what, tensor, original, shape=False)
                _set(original, tensor)


def _fail(owner: str, what: str, expected: str, value) -> None:
    raise ValueError(f"{owner}: {what} must be {expected}, got a {type(value).__name__}")


def _check_like(owner: str, what: str, value, like: Tensor, shape: bool = True) -> None:
    """A ValueError unless ``value`` is a Tensor with ``like``'s dtype, device (and shape)."""
    if not isinstance(value, Tensor):
        _fail(owner, what, "a Tensor", value)
    for name in ("dtype", "device") + (("shape",) if shape else ()):
        if getattr(value, name) != getattr(like, name):
            raise ValueError(
                f"{owner}: {what} has {name} {getattr(value, name)}, but the tensor it stands "
                f"for has {getattr(like, name)} (a parametrization may change the shape or "
                "dtype only with unsafe=True)"
            )


def _set(original: Tensor, value: Tensor) -> None:
    """``value``'s values into the Tensor ``original`` (torch's ``set_``: the same object,
    so an optimiser that holds it keeps it), copied: nothing else shares them."""
    if value is original:
        return
    if value.shape != original.shape:
        original.grad = None
    original.array = backend.array_module(value.array).array(value.array, copy=True)


class Parametrized(Computed):
    """The descriptor of a parametrized attribute: reading it calls
    ``layer.parametrizations[name]`` (transposed to the layer's layout where torch's is the
    transpose); assigning stores the value through ``right_inverse``."""

    def __init__(self, attr: str, name: str, transposed: bool):
        super().__init__(attr)
        self.name, self.transposed = name, transposed

    def __get__(self, layer, owner=None):
        if layer is None:
            return self
        cache = getattr(_local, "cache", None)
        key = (id(layer), self.name)
        if cache is not None and key in cache:
            return cache[key]
        value = layer.parametrizations[self.name]()
        value = value.T if self.transposed else value  # (in, out) of torch's (out, in)
        if cache is not None:
            cache[key] = value
        return value

    def __set__(self, layer, value) -> None:
        with no_grad():
            value = as_tensor(value)
            layer.parametrizations[self.name].right_inverse(value.T if self.transposed else value)


# ====================================================================== registering
def register_parametrization(module: Layer, tensor_name: str, parametrization, *,
                             unsafe: bool = False) -> Layer:  # fmt: skip
    """Make ``module``'s tensor ``tensor_name`` (torch's name, or the layer's own) computed
    by ``parametrization`` (a layer or a callable, with an optional ``right_inverse``) from
    ``module.parametrizations[tensor_name].original``; a second call on the same name
    composes (the new one applied last). ``unsafe``: allow a change of shape or dtype (no
    checks). The original is the same Parameter object (an optimiser built before keeps
    training it) unless ``right_inverse`` returns several tensors, which are new parameters.
    Returns ``module``."""
    owner = "register_parametrization"
    checks.instance(Layer)(owner, "module", module)
    checks.text(owner, "tensor_name", tensor_name)
    if not isinstance(parametrization, Layer):
        checks.function(owner, "parametrization", parametrization)
    checks.boolean(owner, "unsafe", unsafe)
    if isinstance(parametrization, Layer):
        parametrization.train(module.training)
    name = _name(module, tensor_name) or tensor_name
    if is_parametrized(module, name):
        parametrizations = module.parametrizations[name]
        if not unsafe:
            before = parametrizations()  # (torch's layout)
            after = parametrization(before)
            _check_like(owner, f"parametrization(module.{name})", after, before)
            if hasattr(parametrization, "right_inverse"):
                with no_grad():
                    try:
                        back = parametrization.right_inverse(after)
                    except NotImplementedError:
                        back = before
                _check_like(owner, "parametrization.right_inverse(...)", back, before)
        parametrizations.append(parametrization)
        parametrizations.unsafe = parametrizations.unsafe or unsafe
        return module
    held = vars(module).get("parametrizations")
    if held is not None and not isinstance(held, ModuleDict):
        raise ValueError(f"{owner}: {type(module).__name__}.parametrizations is a "
                         f"{type(held).__name__}, not the ModuleDict this needs")  # fmt: skip
    attr, transposed = torch_attribute(owner, module, name)
    original = vars(module)[attr]
    before = original.array
    if transposed:  # the parametrization sees torch's layout
        original.array, original.grad = before.T.copy(), None
        laid_out_anew(original)  # an optimizer's state of it follows
    try:
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    except Exception:
        original.array = before  # a failed registration changes nothing
        raise
    if held is None:
        module.parametrizations = ModuleDict()
    module.parametrizations[name] = parametrizations
    inject(module, Parametrized(attr, name, transposed))
    return module


def _name(module: Layer, tensor_name: str) -> str | None:
    """The parametrized tensor's name in ``module.parametrizations`` that ``tensor_name`` is
    (itself, or the layer's attribute computed under that name: ``"weights"`` of a Linear
    parametrized as ``"weight"``); None if neither."""
    held = vars(module).get("parametrizations")
    if isinstance(held, ModuleDict) and tensor_name in held:
        return tensor_name
    descriptor = computed(module).get(tensor_name)
    return descriptor.name if isinstance(descriptor, Parametrized) else None


def torch_value(owner: str, module: Layer, name: str) -> Tensor:
    """``module``'s tensor ``name`` as torch's ``getattr(module, name)`` sees it: in torch's
    layout, parametrized if it is (no graph recorded); a ValueError if there is none."""
    checks.instance(Layer)(owner, "module", module)
    checks.text(owner, "name", name)
    key = _name(module, name)
    if key is not None:
        with no_grad():
            return module.parametrizations[key]()
    attr, transposed = torch_attribute(owner, module, name)
    weight = vars(module)[attr]
    if not backend.is_float(weight.dtype):
        raise TypeError(f"{owner}: {type(module).__name__}.{attr} has dtype {weight.dtype}, "
                        "not a floating one")  # fmt: skip
    return Tensor(weight.array.T, requires_grad=False) if transposed else weight


def is_parametrized(module: Layer, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (its name, or the layer's
    attribute computed under it), or on any tensor when None."""
    held = vars(module).get("parametrizations") if isinstance(module, Layer) else None
    if not isinstance(held, ModuleDict):
        return False
    return len(held) > 0 if tensor_name is None else _name(module, tensor_name) is not None


def type_before_parametrizations(module: Layer) -> type:
    """The class ``module`` had before it was parametrized (its own if it is not)."""
    return base_class(module)


def remove_parametrizations(module: Layer, tensor_name: str,
                            leave_parametrized: bool = True) -> Layer:  # fmt: skip
    """Make the parametrized tensor a plain attribute again: its current value
    (``leave_parametrized``, written into the original, the same Parameter object) or the
    original itself (only when it is one tensor). The ``parametrizations`` attribute and the
    layer's own class go when the last parametrization does. Returns ``module``."""
    owner = "remove_parametrizations"
    checks.boolean(owner, "leave_parametrized", leave_parametrized)
    name = _name(module, tensor_name) if isinstance(module, Layer) else None
    if name is None:
        raise ValueError(f"{owner}: {type(module).__name__} has no parametrization on "
                         f"{tensor_name!r}")  # fmt: skip
    descriptor = computed(module)[_attribute(module, name)]
    parametrizations = module.parametrizations[name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = parametrizations()
            _check_like(owner, f"the parametrized {name}", value, original, shape=False)
            _set(original, value)
    elif leave_parametrized:
        with no_grad():
            value = parametrizations()
        trained = any(t.requires_grad for t in parametrizations.originals())
        original = Parameter(value.array) if trained else Tensor(value.array, requires_grad=False)
    else:
        raise ValueError(f"{owner}: {name!r} is computed from {parametrizations.ntensors} "
                         "tensors, so it can only be left parametrized (leave_parametrized="
                         "True)")  # fmt: skip
    if descriptor.transposed:  # back to the layer's layout
        original.array, original.grad = original.array.T.copy(), None
        laid_out_anew(original)
    del module.parametrizations[name]
    if not module.parametrizations:
        del module.parametrizations
    eject(module, descriptor.attr, original)
    return module


def transfer_parametrizations_and_params(from_module: Layer, to_module: Layer,
                                         tensor_name: str | None = None) -> Layer:  # fmt: skip
    """torch's: ``from_module``'s parametrizations of ``tensor_name`` (all when None)
    registered on ``to_module`` (a parameter made where it has none), then its originals
    replaced by ``from_module``'s (the same Tensors: shared). Returns ``to_module``."""
    owner = "transfer_parametrizations_and_params"
    if not is_parametrized(from_module):
        return to_module
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        try:  # the tensor under torch's name or the layer's own
            torch_attribute(owner, to_module, name)
        except ValueError:  # none (or parametrized already: composed)
            if _name(to_module, name) is None:
                value = torch_value(owner, from_module, name)
                setattr(to_module, name, Parameter(value.array.copy()))
        parametrizations = from_module.parametrizations[name]
        for parametrization in parametrizations:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[_name(to_module, name)]
        for i, original in enumerate(parametrizations.originals()):
            setattr(target, "original" if parametrizations.is_tensor else f"original{i}", original)
    return to_module


def _attribute(module: Layer, name: str) -> str:
    """The layer's attribute parametrized under ``name``."""
    return next(a for a, d in computed(module).items()
                if isinstance(d, Parametrized) and d.name == name)  # fmt: skip
