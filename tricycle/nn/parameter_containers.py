"""Containers of parameters under PyTorch's names: ``ParameterList`` and ``ParameterDict``.

``Layer`` finds a model's tensors by walking its attributes; these containers hold theirs in
a list or dict of their own and name them as torch does, by position or key alone:
``model.scales = ParameterList([...])`` gives ``scales.0``, ``scales.1``, ... in
``named_parameters()`` and ``state_dict()``, so everything that walks a model
(``parameters``, ``state_dict``/``load_state_dict``, ``to_gpu``/``from_gpu``, casts,
``zero_grad``, an optimiser) reaches every parameter inside.

As torch's, a Tensor put in is made a ``Parameter`` (sharing its array, requiring grad; a
numpy or cupy array too); a Parameter is kept as it is. One made with ``requires_grad=False``
is a buffer to tricycle's walk: saved and moved, not trained. The containers have no forward:
calling one is an error; a model reads them in its own ``forward``.
"""

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from tricycle import backend, checks
from tricycle.module import Layer, Parameter
from tricycle.tensor import Tensor

__all__ = ["ParameterDict", "ParameterList"]


def _as_parameter(owner: str, name: str, value) -> Parameter:
    """``value`` as a Parameter: a Parameter as it is, a Tensor or array wrapped (sharing its
    values), anything else a TypeError."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor) or hasattr(value, "__array__") or backend.is_cupy_array(value):
        return Parameter(value)
    checks.fail(owner, name, "a Parameter, a Tensor or an array", value, TypeError)


class _ParameterContainer(Layer):
    """What ParameterList and ParameterDict share: no forward, and the walk sees only the
    parameters held, named by position or key."""

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{type(self).__name__} is a container of parameters and has no forward: read the "
            "parameters it holds in your layer's forward"
        )

    def _items(self) -> Iterable[tuple[str, Parameter]]:
        """(name, parameter) for everything held, in order."""
        raise NotImplementedError

    def _members(self):
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._parameters)

    def extra_repr(self) -> str:
        return ", ".join(f"({name}): {p.dtype} {p.shape}" for name, p in self._items())


class ParameterList(_ParameterContainer):
    """A list of parameters, seen by the walk as ``0``, ``1``, ... (``name.0``).

    Indexing (an int, or a slice that gives a new ParameterList of the same parameters),
    item assignment, ``len``, iteration, ``append``, ``extend`` and ``+=`` behave as a Python
    list's (and torch's ParameterList's).
    """

    def __init__(self, values: Iterable | None = None):
        self._parameters: list[Parameter] = []
        if values is not None:
            self.extend(values)

    def _items(self):
        return ((str(i), p) for i, p in enumerate(self._parameters))

    def _index(self, index) -> int:
        """``index`` as a position in range, or an IndexError/TypeError that says so."""
        if not checks.is_integer(index):
            checks.fail("ParameterList", "index", "an integer or a slice", index, TypeError)
        n = len(self._parameters)
        if not -n <= index < n:
            raise IndexError(f"ParameterList: index {index} is out of range for {n} parameters")
        return int(index) % n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList(self._parameters[index])
        return self._parameters[self._index(index)]

    def __setitem__(self, index, value) -> None:
        i = self._index(index)
        self._parameters[i] = _as_parameter("ParameterList", f"[{index}]", value)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters)

    def append(self, value) -> "ParameterList":
        """Add ``value`` (made a Parameter) at the end; returns self."""
        self._parameters.append(_as_parameter("ParameterList", f"[{len(self)}]", value))
        return self

    def extend(self, values: Iterable) -> "ParameterList":
        """Add each of ``values`` (made Parameters) at the end, in order; returns self."""
        if isinstance(values, (Tensor, str, Mapping)) or not isinstance(values, Iterable):
            expected = "an iterable of parameters (a list, a ParameterList)"
            checks.fail("ParameterList.extend", "values", expected, values, TypeError)
        n = len(self)  # every value checked before any is added
        new = [_as_parameter("ParameterList", f"[{n + i}]", v) for i, v in enumerate(values)]
        self._parameters.extend(new)
        return self

    def __iadd__(self, values: Iterable) -> "ParameterList":
        return self.extend(values)


class ParameterDict(_ParameterContainer):
    """An ordered mapping of names to parameters, seen by the walk under those names
    (``name.key``). Keys are non-empty strings without dots (a dot would split the
    state-dict name); the order is the order of insertion, but a plain dict given to the
    constructor or ``update`` goes in sorted by key, as torch's (so that a model's parameters
    come in torch's order).

    ``[]`` (get, set, del), ``in``, ``len``, iteration over the keys, ``keys``, ``values``,
    ``items``, ``get``, ``setdefault``, ``update``, ``pop``, ``popitem``, ``copy`` and
    ``clear`` behave as a dict's (and torch's ParameterDict's). The parameters are attributes
    too, as torch's: ``scales.a`` is ``scales["a"]``, and ``scales.a = tensor`` sets it (a
    method's name, such as ``keys``, stays the method: reach such a key with ``[]``).
    """

    def __init__(self, parameters: Mapping | Iterable | None = None):
        self._parameters: dict[str, Parameter] = {}
        if parameters is not None:
            self.update(parameters)

    def _items(self):
        return self._parameters.items()

    # attribute access, as torch's: the parameters are the attributes
    def __getattr__(self, name: str):
        # asked only when the usual lookup fails, so methods win over keys (as torch's);
        # __dict__.get: a pickle asks for attributes before _parameters is set
        parameters = self.__dict__.get("_parameters", {})
        if name in parameters:
            return parameters[name]
        raise AttributeError(f"ParameterDict has no attribute or parameter {name!r}; the keys "
                             f"are {list(parameters)}")  # fmt: skip

    def __setattr__(self, name: str, value) -> None:
        # a Tensor set as an attribute is a parameter (torch registers it), under its key
        parameters = self.__dict__.get("_parameters")
        if (
            parameters is not None
            and not name.startswith("_")
            and (isinstance(value, Tensor) or name in parameters)
        ):
            self[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self.__dict__.get("_parameters", {}):
            self.pop(name)
        else:
            super().__delattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters))

    def __getitem__(self, key: str) -> Parameter:
        if key not in self._parameters:
            raise KeyError(f"ParameterDict: no parameter named {key!r}; the keys are "
                           f"{list(self._parameters)}")  # fmt: skip
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        key = _checked_key(key)
        self._parameters[key] = _as_parameter("ParameterDict", f"[{key!r}]", value)

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key: str, default=None):
        """The parameter named ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None) -> Parameter:
        """The parameter named ``key``; if there is none, ``default`` (made a Parameter) is
        put there first."""
        if key not in self._parameters:
            self[key] = default
        return self._parameters[key]

    def pop(self, key: str) -> Parameter:
        """Remove the parameter named ``key`` and return it."""
        value = self[key]
        del self._parameters[key]
        return value

    def popitem(self) -> tuple[str, Parameter]:
        """Remove the last (key, parameter) pair put in and return it."""
        if not self._parameters:
            raise KeyError("ParameterDict.popitem: the dictionary is empty")
        return self._parameters.popitem()

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters (not copies of their values)."""
        return ParameterDict(OrderedDict(self._parameters))  # in this one's order

    def clear(self) -> None:
        self._parameters.clear()

    def update(self, parameters) -> "ParameterDict":
        """Add or replace parameters from a mapping or from (key, value) pairs; everything is
        checked before anything changes. Returns self. As torch's, pairs, an OrderedDict and
        a ParameterDict keep their order, and a plain mapping (a dict) goes in sorted by key.

        Layer's ``update(optimiser)`` has the same name: given an optimiser (neither a
        mapping nor an iterable, with an ``update`` method) it steps the parameters held, as
        on any other layer.
        """
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):  # torch's: a plain mapping's keys sorted
            pairs = sorted(parameters.items(), key=lambda pair: str(pair[0]))
        elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, Tensor)):
            pairs = list(parameters)
            for i, pair in enumerate(pairs):
                if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                    checks.fail("ParameterDict.update", f"parameters[{i}]", "a (key, value) pair",
                                pair, TypeError)  # fmt: skip
        elif callable(getattr(parameters, "update", None)):  # an optimiser: Layer.update
            return super().update(parameters)
        else:
            expected = "a mapping or an iterable of (key, parameter) pairs"
            checks.fail("ParameterDict.update", "parameters", expected, parameters, TypeError)
        checked = [
            (key, _as_parameter("ParameterDict", f"[{key!r}]", value))
            for key, value in ((_checked_key(key), value) for key, value in pairs)
        ]
        self._parameters.update(checked)
        return self


def _checked_key(key) -> str:
    """A ParameterDict key: a non-empty str without dots."""
    checks.text("ParameterDict", "key", key)
    if not key or "." in key:
        checks.fail("ParameterDict", "key", "a non-empty name without dots", key)
    return key
