"""Containers of layers under PyTorch's names: ``Identity``, ``ModuleList`` and ``ModuleDict``.

``Layer`` finds a model's parameters and sublayers by walking its attributes (a list or dict
attribute of layers is walked too, named ``attr.0`` or ``attr.key``). A container holds its
layers in a list or dict of its own and names them as torch does, by position or key alone:
``model.blocks = ModuleList([Linear(4, 4), Linear(4, 2)])`` gives the state-dict keys
``blocks.0.weights`` ... ``blocks.1.bias``, so the walk (``parameters``, ``state_dict``,
``train``/``eval``, ``to_gpu``, ``zero_grad``, ``update``) reaches every layer inside.

The containers have no forward (as torch's): calling one is an error; a model iterates over
them in its own ``forward``. An item is a ``Layer`` or any callable (tricycle's ``Softmax``,
``Sigmoid`` and losses are plain callables): only Layers hold parameters.
"""

from collections.abc import Iterable, Iterator, Mapping

from tricycle import checks
from tricycle.module import Layer


class Identity(Layer):
    """Returns its input unchanged (the same object, so gradients flow through untouched).

    Any arguments are accepted and ignored, as torch's: a placeholder for a layer that a
    configuration switches off (``norm = LayerNorm(E) if use_norm else Identity()``).
    """

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, x):
        return x


class _Container(Layer):
    """What ModuleList and ModuleDict share: no forward, and the walk sees only the items."""

    def __call__(self, *args, **kwargs):
        # a call without arguments is most likely model.layers(), hidden by an attribute
        # named `layers`, as torch models often name a ModuleList (tricycle itself calls
        # named_layers())
        hint = "; an attribute named `layers` hides the method Layer.layers(): use "
        hint = "" if args or kwargs else hint + "named_layers()"
        raise TypeError(
            f"{type(self).__name__} is a container and has no forward: call the layers it "
            f"holds (for layer in container: ...){hint}"
        )

    def _items(self) -> Iterable[tuple[str, object]]:
        """(name, item) for everything held, in order."""
        raise NotImplementedError

    def _members(self):
        """(name, layer) for each held Layer: names are positions or keys alone, as torch's."""
        for name, item in self._items():
            if isinstance(item, Layer):
                yield name, item

    def __len__(self) -> int:
        return len(self._layers)


def _checked_layer(owner: str, name: str, item):
    """``item`` if it is a Layer or another callable, else a TypeError."""
    if not isinstance(item, Layer):
        checks.function(owner, name, item)
    return item


class ModuleList(_Container):
    """A list of layers, seen by the walk as ``0``, ``1``, ... (``name.0.weights``).

    Indexing (an int, or a slice that gives a new ModuleList of the same layers), ``len``,
    iteration, ``append``, ``extend``, ``insert``, ``+=`` and ``+``, ``del`` and item
    assignment behave as a Python list's (and torch's ModuleList's).
    """

    def __init__(self, modules: Iterable | None = None):
        self._layers: list = []
        if modules is not None:
            self.extend(modules)

    def _items(self):
        return ((str(i), item) for i, item in enumerate(self._layers))

    def _index(self, index) -> int:
        """``index`` as a position in range, or an IndexError/TypeError that says so."""
        if not checks.is_integer(index):
            checks.fail("ModuleList", "index", "an integer or a slice", index, TypeError)
        n = len(self._layers)
        if not -n <= index < n:
            raise IndexError(f"ModuleList: index {index} is out of range for {n} layers")
        return int(index) % n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(self._layers[index])
        return self._layers[self._index(index)]

    def __setitem__(self, index, module) -> None:
        self._layers[self._index(index)] = _checked_layer("ModuleList", f"[{index}]", module)

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            del self._layers[index]
        else:
            del self._layers[self._index(index)]

    def __iter__(self) -> Iterator:
        return iter(self._layers)

    def append(self, module) -> "ModuleList":
        """Add ``module`` at the end; returns self."""
        self._layers.append(_checked_layer("ModuleList", f"[{len(self)}]", module))
        return self

    def extend(self, modules: Iterable) -> "ModuleList":
        """Add each of ``modules`` at the end, in order; returns self."""
        one_layer = isinstance(modules, Layer) and not isinstance(modules, ModuleList)
        if one_layer or isinstance(modules, (str, Mapping)) or not isinstance(modules, Iterable):
            checks.fail("ModuleList.extend", "modules", "an iterable of layers", modules, TypeError)
        items = list(modules)
        for i, item in enumerate(items):  # all checked before any is added
            _checked_layer("ModuleList", f"[{len(self) + i}]", item)
        self._layers.extend(items)
        return self

    def insert(self, index: int, module) -> None:
        """Put ``module`` before position ``index`` (as list.insert)."""
        if not checks.is_integer(index):
            checks.fail("ModuleList.insert", "index", "an integer", index, TypeError)
        self._layers.insert(index, _checked_layer("ModuleList", f"[{index}]", module))

    def __iadd__(self, modules: Iterable) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: "ModuleList") -> "ModuleList":
        if not isinstance(other, ModuleList):
            return NotImplemented
        return ModuleList([*self._layers, *other._layers])


class ModuleDict(_Container):
    """An ordered mapping of names to layers, seen by the walk under those names
    (``name.key.weights``). Keys are non-empty strings without dots (a dot would split the
    state-dict name); the order is the order of insertion.

    ``[]`` (get, set, del), ``in``, ``len``, iteration over the keys, ``keys``, ``values``,
    ``items``, ``update``, ``pop`` and ``clear`` behave as a dict's (and torch's ModuleDict's).
    The items are attributes too, as torch's: ``model.transformer.wte`` is
    ``model.transformer["wte"]``, and ``transformer.wte = layer`` sets the item (a method's
    name, such as ``keys``, stays the method: reach such an item with ``[]``).
    """

    def __init__(self, modules: Mapping | Iterable | None = None):
        self._layers: dict = {}
        if modules is not None:
            self.update(modules)

    def _items(self):
        return self._layers.items()

    # attribute access, as torch's (``self.transformer.wte``): the items are the attributes
    def __getattr__(self, name: str):
        # asked only when the usual lookup fails, so methods win over keys (as torch's);
        # __dict__.get: a pickle asks for attributes before _layers is set
        layers = self.__dict__.get("_layers", {})
        if name in layers:
            return layers[name]
        raise AttributeError(f"ModuleDict has no attribute or layer {name!r}; the keys are "
                             f"{list(layers)}")  # fmt: skip

    def __setattr__(self, name: str, value) -> None:
        # a layer set as an attribute is an item (torch registers it), seen by the walk under
        # its key; setting a key to anything else goes through [] and its checks
        layers = self.__dict__.get("_layers")
        if (
            layers is not None
            and not name.startswith("_")
            and (isinstance(value, Layer) or name in layers)
        ):
            self[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self.__dict__.get("_layers", {}):
            self.pop(name)
        else:
            super().__delattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._layers))

    def __getitem__(self, key: str):
        if key not in self._layers:
            raise KeyError(f"ModuleDict: no layer named {key!r}; the keys are {list(self)}")
        return self._layers[key]

    def __setitem__(self, key: str, module) -> None:
        self._layers[_checked_key(key)] = _checked_layer("ModuleDict", f"[{key!r}]", module)

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def __contains__(self, key) -> bool:
        return key in self._layers

    def __iter__(self) -> Iterator[str]:
        return iter(self._layers)

    def keys(self):
        return self._layers.keys()

    def values(self):
        return self._layers.values()

    def items(self):
        return self._layers.items()

    def pop(self, key: str):
        """Remove the layer named ``key`` and return it."""
        layer = self[key]
        del self._layers[key]
        return layer

    def clear(self) -> None:
        self._layers.clear()

    def update(self, modules) -> "ModuleDict":
        """Add or replace layers from a mapping (a dict, a ModuleDict) or from (key, layer)
        pairs, in their order; everything is checked before anything changes. Returns self.

        Layer's ``update(optimiser)`` has the same name: given an optimiser (neither a
        mapping nor an iterable, with an ``update`` method) it steps the parameters of the
        layers held, as on any other layer.
        """
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = list(modules.items())
        elif isinstance(modules, Iterable) and not isinstance(modules, (str, Layer)):
            pairs = list(modules)
            for i, pair in enumerate(pairs):
                if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                    checks.fail("ModuleDict.update", f"modules[{i}]", "a (key, layer) pair",
                                pair, TypeError)  # fmt: skip
        elif callable(getattr(modules, "update", None)):  # an optimiser: Layer.update
            return super().update(modules)
        else:
            expected = "a mapping or an iterable of (key, layer) pairs"
            checks.fail("ModuleDict.update", "modules", expected, modules, TypeError)
        for key, module in pairs:
            _checked_layer("ModuleDict", f"[{_checked_key(key)!r}]", module)
        self._layers.update(pairs)
        return self


def _checked_key(key) -> str:
    """A ModuleDict key: a non-empty str without dots."""
    checks.text("ModuleDict", "key", key)
    if not key or "." in key:
        checks.fail("ModuleDict", "key", "a non-empty name without dots", key)
    return key
