"""``Sequential``: layers (or any callables) applied one after another, as torch's
``nn.Sequential``, given by position or as one ``OrderedDict`` of named layers.

Its layers live in ``sequence``, a list or a dict: a Sequential of positional layers names its
tensors ``sequence.0.weights`` (torch's ``0.weight``), a named one ``sequence.hidden.weights``
(torch's ``hidden.weight``); ``add_module`` with a name turns a list into a dict keyed "0",
"1", ..., which names the earlier layers as before. ``setattr_by_position`` is the
``__setattr__`` that lets torch's ``setattr(seq, "0", layer)`` replace a layer. Pickles name
the class ``tricycle.layers.Sequential``, where it was first defined (that module re-exports it).
"""

from tricycle import checks
from tricycle.module import Layer


def setattr_by_position(attribute: str):
    """A ``__setattr__`` for a layer that keeps its sublayers in the list or dict ``attribute``
    (``Sequential.sequence``): a name that ``named_children`` gives (``sequence.N``,
    ``sequence.key``), or torch's ``N`` (or ``key``), replaces that layer, so torch's ``for
    name, m in model.named_children(): setattr(model, name, f(m))`` swaps it; any other name is
    set as usual."""

    def __setattr__(self, name: str, value) -> None:
        layers = vars(self).get(attribute, ())
        key = name.removeprefix(f"{attribute}.")
        if isinstance(layers, dict) and key in layers:
            layers[key] = checks.function(type(self).__name__, name, value)
        elif isinstance(layers, list) and key.isdigit() and int(key) < len(layers):
            layers[int(key)] = checks.function(type(self).__name__, name, value)
        else:
            object.__setattr__(self, name, value)

    __setattr__.by_position = attribute  # torch's names for _modules
    return __setattr__


class Sequential(Layer):
    """Apply layers (or any callables) one after another: ``Sequential(a, b)(x) == b(a(x))``.

    Given one ``OrderedDict`` (or dict) of name -> layer, as torch's, the layers run in its
    order and keep their names: each is an attribute (``seq.hidden_linear``) and names its
    tensors (``sequence.hidden_linear.weights``, torch's ``hidden_linear.weight``); else they
    are named by position (``sequence.0.weights``, torch's ``0.weight``)."""

    def __init__(self, *layers):
        named = len(layers) == 1 and isinstance(layers[0], dict)
        for key, layer in layers[0].items() if named else enumerate(layers):
            if named:
                checks.text("Sequential", "a layer's name", key)
            checks.function("Sequential", f"layers[{key!r}]" if named else f"layers[{key}]", layer)
        self.sequence = dict(layers[0]) if named else list(layers)

    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x

    def append(self, layer) -> "Sequential":
        """torch's ``Sequential.append``: ``layer`` runs last (named by its position when the
        others are named, as torch's)."""
        checks.function("Sequential.append", "layer", layer)
        if isinstance(self.sequence, dict):
            self.sequence[str(len(self))] = layer
        else:
            self.sequence.append(layer)
        return self

    def extend(self, layers) -> "Sequential":
        for layer in layers:
            self.append(layer)
        return self

    def add_module(self, name: str, layer) -> None:
        """torch's ``add_module`` on a Sequential: ``layer`` runs last, named ``name`` (an
        attribute, and its tensors' prefix: ``sequence.<name>.weights``), as torch's
        (DenseNet's ``self.add_module('norm1', ...)`` then ``self.norm1``)."""
        checks.text("Sequential.add_module", "name", name)
        if not isinstance(self.sequence, dict):  # the earlier layers keep their names
            self.sequence = {str(i): held for i, held in enumerate(self.sequence)}
        self.sequence[name] = checks.function("Sequential.add_module", "layer", layer)

    def __delitem__(self, index: int) -> None:
        """``del seq[i]``: the layer removed and the rest renumbered "0", "1", ..., as torch's
        (named layers too)."""
        layers = list(self)
        del layers[index]
        self.sequence = layers

    def __getattr__(self, name: str):  # a named layer, as torch's seq.hidden_linear
        sequence = vars(self).get("sequence")
        if isinstance(sequence, dict) and name in sequence:
            return sequence[name]
        return object.__getattribute__(self, name)  # Python's error, or a descriptor's own

    def __getitem__(self, index):  # a slice is a Sequential of those layers, as torch's
        if type(index) is not slice:
            layers = self.sequence
            return (layers if isinstance(layers, list) else list(layers.values()))[index]
        if isinstance(self.sequence, dict):
            return Sequential(dict(list(self.sequence.items())[index]))
        return Sequential(*self.sequence[index])

    def __setitem__(self, index: int, layer) -> None:  # seq[-1] = nn.Linear(...), as torch's
        keys = list(self.sequence) if isinstance(self.sequence, dict) else range(len(self))
        self.sequence[keys[index]] = checks.function("Sequential", f"layers[{index}]", layer)

    __setattr__ = setattr_by_position("sequence")  # torch's setattr(seq, "0", layer)

    def __len__(self) -> int:
        return len(self.sequence)

    def __iter__(self):
        sequence = self.sequence
        return iter(sequence.values() if isinstance(sequence, dict) else sequence)


# pickles (and safe_globals lists) name Sequential where it was first defined, which re-exports it
Sequential.__module__ = "tricycle.layers"
