"""How a layer's tensor attribute becomes one computed at each read, for the
parametrizations (``tricycle.nn.utils.parametrize``) and torch's older ``weight_norm`` and
``spectral_norm`` (``tricycle.nn.utils.legacy_norms``).

A layer reads its parameters as attributes when it runs (``Dense.forward`` reads
``self.weights``), so a parametrized weight is a property: reading it computes the weight
from the tensors it is made of, differentiably. Properties live on a class, so, as torch
does, the layer gets a class of its own, made for it alone: a subclass of its class
(``ParametrizedDense``) holding the properties, each a ``Computed`` descriptor. The layer
stays an instance of its class (``isinstance(layer, Dense)``), and its tensors stay plain
attributes that ``Layer``'s walk finds (the parametrized attribute itself is no longer
in ``vars(layer)``: the walk, ``state_dict`` and the precision policies' casts see the
tensors it is computed from). Once the last property is gone the layer gets its class back.

A per-layer class cannot be found by name, so it pickles (and deep-copies) as its base class
and its descriptors, and the copy gets a class of its own again (``rebuild``).

torch's names: a PyTorch script names the tensor as torch's layer does (``"weight"``), where
tricycle's layer may name it otherwise and lay it out otherwise (``Linear.weights`` is
(in, out), the transpose of torch's ``weight`` (out, in); the norms' ``gamma`` and
``beta`` are torch's ``weight`` and ``bias``): ``torch_attribute`` finds the attribute and
says whether torch's layout is its transpose, from the table ``tricycle.nn.torch_weights``
uses to read and write torch's ``state_dict``.
"""

from tricycle.module import Layer
from tricycle.nn.torch_weights import RENAMES
from tricycle.tensor import Tensor

__all__ = ["Computed", "base_class", "computed", "eject", "inject", "torch_attribute"]


class Computed:
    """A layer's attribute computed at each read: a data descriptor on the layer's own class.
    ``attr`` is the attribute's name; ``origin`` says what computes it, for messages.
    Subclasses define ``__get__`` (with ``layer`` None: the descriptor) and may define
    ``__set__``; by default the attribute cannot be assigned."""

    origin = "a parametrization"

    def __init__(self, attr: str):
        self.attr = attr

    def __get__(self, layer, owner=None):
        raise NotImplementedError

    def __set__(self, layer, value) -> None:
        raise AttributeError(
            f"{type(layer).__name__}.{self.attr} is computed by {self.origin} at each read and "
            "cannot be assigned: set the tensors it is computed from, or remove the "
            "reparametrization first"
        )

    def __delete__(self, layer) -> None:
        raise AttributeError(
            f"{type(layer).__name__}.{self.attr} is computed by {self.origin}: remove the "
            "reparametrization instead of deleting the attribute"
        )


def torch_attribute(owner: str, layer: Layer, name: str) -> tuple[str, bool]:
    """(the attribute of ``layer`` that torch's tensor ``name`` is, whether torch's layout is
    its transpose): ``name`` itself when the layer holds a Tensor under it, else the layer's
    own name for torch's (``"weight"``: ``weights`` of a Linear, transposed, or of a
    convolution, as it is; ``gamma`` of a norm). A ValueError names the layer's tensors when
    there is none, or says that the attribute is computed already."""
    if not isinstance(name, str):
        raise TypeError(f"{owner}: the tensor's name must be a str, got {name!r}")
    held = vars(layer)
    candidates = [(name, False)]
    for kind in type(layer).__mro__:
        for attr, (torch_name, transposed) in RENAMES.get(kind, {}).items():
            if torch_name == name:
                candidates.append((attr, transposed))
    for attr, transposed in candidates:
        if isinstance(held.get(attr), Tensor):
            return attr, transposed
    for attr, _ in candidates:
        descriptor = computed(layer).get(attr)
        if descriptor is not None:
            raise ValueError(
                f"{owner}: {type(layer).__name__}.{attr} (torch's {name!r}) is computed by "
                f"{descriptor.origin} already; remove it first"
            )
        if attr in held:  # None: a layer made without it (bias=False)
            raise ValueError(f"{owner}: {type(layer).__name__}.{attr} is {held[attr]!r}, not a "
                             "tensor")  # fmt: skip
    tensors = [attr for attr, value in held.items() if isinstance(value, Tensor)]
    raise ValueError(
        f"{owner}: {type(layer).__name__} has no parameter or buffer named {name!r} (its "
        f"tensors: {tensors}; torch's names are accepted where they differ)"
    )


def computed(layer: Layer) -> dict[str, Computed]:
    """{attribute: descriptor} of the computed attributes of ``layer`` (empty if none)."""
    kind = type(layer)
    if not vars(kind).get("_per_layer", False):
        return {}
    return {attr: d for attr, d in vars(kind).items() if isinstance(d, Computed)}


def base_class(layer: Layer) -> type:
    """The class ``layer`` had before its attributes were made computed (its own if none)."""
    kind = type(layer)
    return kind.__bases__[0] if vars(kind).get("_per_layer", False) else kind


def inject(layer: Layer, descriptor: Computed) -> None:
    """Make ``descriptor.attr`` of ``layer`` computed: the attribute leaves ``vars(layer)``
    and the descriptor goes on the layer's own class (made here on the first call)."""
    vars(layer).pop(descriptor.attr, None)
    if not vars(type(layer)).get("_per_layer", False):
        layer.__class__ = _own_class(type(layer))
    setattr(type(layer), descriptor.attr, descriptor)


def eject(layer: Layer, attr: str, value) -> None:
    """Undo ``inject`` for ``attr``: the attribute holds ``value`` again (at the end of
    ``vars(layer)``, as torch registers it anew); the layer gets its class back once no
    attribute of it is computed."""
    delattr(type(layer), attr)
    vars(layer)[attr] = value
    if not computed(layer):
        layer.__class__ = base_class(layer)


def _own_class(base: type) -> type:
    """A subclass of ``base`` for one layer, to hold its computed attributes."""
    namespace = {"__module__": base.__module__, "_per_layer": True, "__reduce_ex__": _reduce_ex}
    return type(f"Parametrized{base.__name__}", (base,), namespace)


def _reduce_ex(layer, protocol):
    """Pickle (and ``copy.deepcopy``) a layer with computed attributes as its base class, its
    descriptors and its attributes: ``rebuild`` makes the copy its own class again."""
    return rebuild, (base_class(layer), tuple(computed(layer).values())), vars(layer)


def rebuild(base: type, descriptors: tuple) -> Layer:
    """An empty layer of class ``base`` whose attributes ``descriptors`` compute (its
    attributes come after, from the pickle or the deep copy)."""
    layer = base.__new__(base)
    layer.__class__ = _own_class(base)
    for descriptor in descriptors:
        setattr(type(layer), descriptor.attr, descriptor)
    return layer
