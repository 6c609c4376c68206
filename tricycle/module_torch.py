"""The ``torch.nn.Module`` methods a PyTorch user calls, on tricycle's walk: ``TorchMethods``,
a base class of ``Layer`` (``tricycle.module``), which holds the walk itself.

- ``named_modules()``/``modules()``: this layer (named "") and every sublayer, depth first,
  each once (``named_layers``); ``named_children()``/``children()``: the direct sublayers. A
  list or dict attribute of layers is no layer of its own (torch would need a ``ModuleList``
  there): its items are children named ``attr.0``, ``attr.key``.
- ``apply(fn)``: ``fn`` on every sublayer, children first, then on this layer.
- ``requires_grad_(False)`` freezes the parameters, ``requires_grad_(True)`` thaws them.
- ``to(device)``, ``to(dtype)``, ``cuda()``, ``cpu()``: ``to_gpu``/``from_gpu`` and a cast;
  ``half()``, ``bfloat16()``, ``float()``, ``double()``: ``to(dtype)``.
- ``register_buffer``, ``register_parameter``, ``add_module``: attributes, as the walk finds
  them; ``named_buffers()``/``buffers()``: the Tensors that need no gradient. A buffer
  registered with ``persistent=False`` moves with the layer but is not in ``state_dict()``.
- ``get_submodule``, ``get_parameter``, ``get_buffer``: by dotted name, as torch's.

The hooks are ``tricycle.module_hooks``'s. The methods of torch's Module that tricycle does
another way for (the deprecated ``register_backward_hook``) are not there: reading one raises
an AttributeError that says what to use (``hasattr`` is False, as for any missing attribute),
and so does torch's ``weight`` on a layer that names its tensors otherwise (``weights``,
``gamma``): the error lists them.
"""

import functools
import inspect

import numpy as np

from tricycle import backend, checks, memory_formats
from tricycle.parameter import is_parameter
from tricycle.tensor import Tensor


class _NotInTricycle:
    """A torch Module method that tricycle does another way: reading it on a layer raises an
    AttributeError naming the torch method and what to use instead."""

    def __init__(self, instead: str):
        self.instead = instead
        self.__doc__ = f"Not in tricycle: {instead}."

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, layer, owner=None):
        if layer is None:  # on the class: the descriptor itself, for help() and docs
            return self
        raise AttributeError(
            f"{type(layer).__name__} has no {self.name}() (torch.nn.Module's): {self.instead}",
            name=self.name,
            obj=layer,
        )


class _TorchWeight:
    """torch's ``weight`` (or ``bias``), on a layer that has none (a port's first error: a
    norm's are gamma and beta): reading it raises an AttributeError naming the layer's tensors
    and tricycle's names for torch's. A layer that holds one of its own (the recurrent layers,
    Bilinear, a Linear's bias) shadows it."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, layer, owner=None):
        if layer is None:  # on the class: the descriptor itself
            return self
        held = [f"{n} {tuple(v.shape)}" for n, v in vars(layer).items() if isinstance(v, Tensor)]
        raise AttributeError(
            f"{type(layer).__name__} has no '{self.name}' (torch's name); its tensors are "
            f"{', '.join(held) or 'none'}: a Linear's weights are (in, out), the transpose of "
            "torch's weight, and a norm's weight and bias are gamma and beta",
            name=self.name,
            obj=layer,
        )


class TorchMethods:
    """torch's names for walking, freezing and moving a ``Layer`` (see the module's doc)."""

    weight, bias = _TorchWeight(), _TorchWeight()

    _frozen: frozenset = frozenset()  # names of this layer's parameters requires_grad_ froze
    _non_persistent: frozenset = frozenset()  # names of this layer's buffers not saved

    def __init_subclass__(cls, **kwargs):
        """Each of tricycle's layers takes torch's factory keywords ``device=`` and ``dtype=``
        (``nn.Linear(4, 8, device="cuda", dtype=torch.float64)``), as ``to(device, dtype)``
        after ``__init__``: see ``_factory_keywords``."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.__module__.startswith("tricycle."):
            cls.__init__ = _factory_keywords(init, cls.__dict__.get("torch_names", {}))

    # ------------------------------------------------------------------ sublayers
    def named_children(self):
        """(attribute path, layer) of each direct sublayer, each once, in attribute order."""
        seen = set()
        for name, value in self._members():
            if isinstance(value, TorchMethods) and id(value) not in seen:
                seen.add(id(value))
                yield name, value

    def children(self):
        """Each direct sublayer, once (an iterator, as torch's)."""
        return (child for _, child in self.named_children())

    @checks.arguments(prefix=checks.text, remove_duplicate=checks.boolean)
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate=True):
        """(dotted name, layer) for this layer (named ``prefix``, "" by default) and every
        sublayer, depth first, as torch's: each once (``named_layers``), or each time it is
        reached with ``remove_duplicate=False``. ``memo``: layers to leave out."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, value in self._members():
            if isinstance(value, TorchMethods):
                path = f"{prefix}.{name}" if prefix else name
                yield from value.named_modules(memo, path, remove_duplicate)

    def modules(self):
        """This layer and every sublayer, depth first, each once (an iterator, as torch's)."""
        return (layer for _, layer in self.named_modules())

    @checks.arguments(fn=checks.function)
    def apply(self, fn):
        """Call ``fn(layer)`` on every sublayer, children first (each child's own children
        before it), then on this layer, as torch's; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ freezing
    @checks.arguments(requires_grad=checks.boolean)
    def requires_grad_(self, requires_grad: bool = True):
        """Freeze (False) or thaw (True) every parameter of this layer and its sublayers.

        A frozen parameter is a constant to the graph: backward gives it no gradient, so an
        optimiser's update, the clipping and data parallelism pass it by; a gradient it had is
        dropped. A ``Parameter`` (every layer's) stays in ``parameters()`` and ``state_dict()``,
        as torch's, and moves with the layer; so does one frozen by hand
        (``p.requires_grad = False``). ``requires_grad_(True)`` thaws every Parameter here and
        the other tensors that ``requires_grad_(False)`` froze on this layer or its sublayers
        (each layer keeps their names), never a buffer: batch norm's statistics stay buffers.
        Freeze before handing the model to a data-parallel wrapper, which lays out the
        gradients of the parameters that require them. Returns self.
        """
        layers = [layer for _, layer in self.named_layers()]
        if requires_grad:
            for t in self.parameters():  # the Parameters, frozen ones too
                t.requires_grad = True
            for layer in layers:
                for name, value in layer._members():
                    if name in layer._frozen and isinstance(value, Tensor):
                        value.requires_grad = True
                vars(layer).pop("_frozen", None)
            return self
        parameters = [t for t in self.parameters() if t.requires_grad]
        trainable = {id(t) for t in parameters}
        for layer in layers:  # a parameter two layers hold (tied) is named in both
            names = {n for n, v in layer._members() if isinstance(v, Tensor) and id(v) in trainable}
            if names:
                layer._frozen = layer._frozen | names
        for t in parameters:
            t.requires_grad, t.grad = False, None
        return self

    # ------------------------------------------------------------------ devices
    def to(self, device=None, dtype=None, non_blocking: bool = False, *, memory_format=None):
        """Move and/or cast every parameter and buffer in place, as torch's ``Module.to``;
        returns self.

        ``to(device)``: "cpu" (``from_gpu``), "cuda", "cuda:N", "gpu" or a GPU index N
        (``to_gpu(N)``). ``to(dtype)`` or ``to(device, dtype)``: the floating parameters and
        buffers (and their gradients) cast to a floating numpy dtype (``numpy.float64`` for
        gradient checks; integer buffers stay). For mixed-precision training keep float32
        weights and use a precision policy (``tricycle.precision.Precision``). ``to(tensor)``:
        that tensor's device and dtype. ``non_blocking`` is accepted: copies are synchronous.
        ``memory_format`` (``tricycle.channels_last``...): the rank-4 and rank-5 tensors laid
        out so (``tricycle.memory_formats``), as torch's."""
        owner = f"{type(self).__name__}.to"
        checks.boolean(owner, "non_blocking", non_blocking)
        if isinstance(device, Tensor):
            device, dtype = device.device, device.dtype if dtype is None else dtype
        elif _is_dtype(device):
            if dtype is not None:
                checks.fail(owner, "device", "a device when dtype is given", device, TypeError)
            device, dtype = None, device
        dtype = None if dtype is None else _floating_dtype(owner, dtype)
        if device is not None:
            index = backend.parse_device(device, owner)
            self.from_gpu() if index is None else self.to_gpu(index)
        memory_formats.format_name(owner, memory_format)  # refuses what is no format
        for t in (t for _, t in self.named_tensors() if memory_format and t.ndim in (4, 5)):
            t.array = memory_formats.laid_out(owner, t.array, memory_format)
        if dtype is None:
            return self
        for _, t in self.named_tensors():
            if backend.is_float(t.dtype) and t.dtype != dtype:
                t.array = t.array.astype(dtype)
                if t.grad is not None:
                    t.grad.array = t.grad.array.astype(dtype)
        return self

    def cuda(self, device=None):
        """Move to GPU ``device`` (an index or "cuda:N"; the current GPU when None, as torch's:
        a rank's own in a data-parallel run); without a usable GPU, a RuntimeError that says
        so. Returns self."""
        owner = f"{type(self).__name__}.cuda"
        index = backend.parse_device("cuda" if device is None else device, owner)
        if index is None:
            checks.fail(owner, "device", "a GPU", device)
        return self.to_gpu(index)

    def cpu(self):
        """Move to host memory (``from_gpu``); returns self."""
        return self.from_gpu()

    # ------------------------------------------------------------------ registering
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """torch's ``register_buffer``: ``tensor`` (an array or a Tensor; None keeps the name
        empty) as an attribute that needs no gradient, so the walk moves and casts it with the
        layer and saves it in ``state_dict()``; with ``persistent=False`` it is not saved (nor
        expected by ``load_state_dict``): a value the layer recomputes, such as a mask."""
        owner = f"{type(self).__name__}.register_buffer"
        checks.text(owner, "name", name)
        checks.boolean(owner, "persistent", persistent)
        array = tensor.array if isinstance(tensor, Tensor) else tensor
        setattr(self, name, None if tensor is None else Tensor(array, requires_grad=False))
        if persistent and name in self._non_persistent:
            self._non_persistent = self._non_persistent - {name}
        elif not persistent:
            self._non_persistent = self._non_persistent | {name}

    def register_parameter(self, name: str, param) -> None:
        """torch's ``register_parameter``: ``param`` (a Tensor that requires grad, as
        ``tricycle.module.parameter`` makes, or None) as an attribute."""
        owner = f"{type(self).__name__}.register_parameter"
        checks.text(owner, "name", name)
        if param is not None and not (isinstance(param, Tensor) and param.requires_grad):
            checks.fail(owner, "param", "a Tensor that requires grad (tricycle.module."
                        "parameter(values)) or None", param, TypeError)  # fmt: skip
        setattr(self, name, param)

    def add_module(self, name: str, module) -> None:
        """torch's ``add_module``: ``module`` (a layer, or None) as the attribute ``name``."""
        checks.text(f"{type(self).__name__}.add_module", "name", name)
        setattr(self, name, module)

    register_module = add_module

    def named_buffers(self):
        """(name, Tensor) of every Tensor attribute of this layer and its sublayers that
        needs no gradient (what ``named_tensors`` lists beside the parameters)."""
        return iter([(n, t) for n, t in self.named_tensors() if not is_parameter(t)])

    def buffers(self):
        """The Tensors of ``named_buffers``."""
        return iter([t for _, t in self.named_buffers()])

    # ------------------------------------------------------------------ by name
    def get_submodule(self, target: str):
        """The sublayer at the dotted path ``target`` ("" is this layer), as torch's: an
        AttributeError names the part of the path that is missing or is no layer."""
        checks.text(f"{type(self).__name__}.get_submodule", "target", target)
        layer = self._at(target)
        if not isinstance(layer, TorchMethods):
            raise AttributeError(f"`{target.rpartition('.')[2]}` is not an nn.Module")
        return layer

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at the dotted path ``target`` (a name of ``named_parameters``), as
        torch's: an AttributeError names what is missing or not a parameter."""
        checks.text(f"{type(self).__name__}.get_parameter", "target", target)
        value = self._at(target)
        if not (isinstance(value, Tensor) and is_parameter(value)):
            raise AttributeError(f"`{target.rpartition('.')[2]}` is not an nn.Parameter")
        return value

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (a name of ``named_buffers``), as torch's:
        an AttributeError names what is missing or not a buffer."""
        checks.text(f"{type(self).__name__}.get_buffer", "target", target)
        value = self._at(target)
        if not (isinstance(value, Tensor) and not is_parameter(value)):
            raise AttributeError(f"`{target.rpartition('.')[2]}` is not a buffer")
        return value

    def _at(self, target: str):
        """The Tensor or layer at the dotted path ``target``, one layer at a time; a list or
        dict item is one step of two parts (``blocks.0``), as the walk names it."""
        value, parts, key = self, target.split(".") if target else [], ""
        while parts:
            if not isinstance(value, TorchMethods):  # a Tensor with more path after it
                raise AttributeError(f"`{key.rpartition('.')[2]}` is not an nn.Module")
            members = dict(value._members())
            if parts[0] in members:
                key = parts.pop(0)
            elif len(parts) > 1 and f"{parts[0]}.{parts[1]}" in members:
                key = f"{parts.pop(0)}.{parts.pop(0)}"
            else:
                raise AttributeError(f"{type(value).__name__} has no attribute `{parts[0]}`")
            value = members[key]
        return value

    def share_memory(self):
        """Move every parameter and buffer (and gradient) into memory shared between
        processes (``Tensor.share_memory_``), as torch's: Hogwild training, where the
        processes of ``tricycle.multiprocessing`` update one model. Returns self."""
        for _, tensor in self.named_tensors():
            tensor.share_memory_()
            if tensor.grad is not None:
                tensor.grad.share_memory_()
        return self

    # ------------------------------------------------------------------ not in tricycle
    register_backward_hook = _NotInTricycle(
        "use register_full_backward_hook (torch deprecates this one: its gradients are those "
        "of the last op of forward, not of the layer's inputs)"
    )

    # ------------------------------------------------------------------ casts (last: they
    # are named as Python's float, which the class body must not call after them)
    def half(self):
        """Cast every floating parameter and buffer to float16 (``to(numpy.float16)``);
        returns self. For mixed-precision training keep float32 weights and use a precision
        policy: ``tricycle.precision.Precision('fp16')``."""
        return self.to(np.float16)

    def bfloat16(self):
        """Cast every floating parameter and buffer to bfloat16 (``to(tricycle.casting.
        bfloat16())``, which needs ml_dtypes); returns self. For mixed-precision training keep
        float32 weights and use a precision policy: ``tricycle.precision.Precision('bf16')``."""
        return self.to(backend.bfloat16(f"{type(self).__name__}.bfloat16()"))

    def float(self):
        """Cast every floating parameter and buffer to float32 (``to(numpy.float32)``);
        returns self."""
        return self.to(np.float32)

    def double(self):
        """Cast every floating parameter and buffer to float64 (``to(numpy.float64)``, for
        gradient checks); returns self."""
        return self.to(np.float64)


def _factory_keywords(init, torch_names: dict):
    """``init`` (a tricycle layer's ``__init__``) taking torch's ``device`` and ``dtype``
    keywords where it has none of its own: they are taken out of the call, and the layer,
    once built, moved and cast by ``to(device, dtype)`` (its floating parameters and buffers,
    as torch's factory keywords make them). A user's own Module takes them only if its
    ``__init__`` says so, as in torch; ``None`` for either changes nothing. ``torch_names``
    (the class's, torch's keyword -> the layer's) renames torch's keywords for the layer's
    arguments: ``nn.Linear(in_features=4, out_features=2)`` is ``Dense(from_size=4, ...)``."""
    names = [
        name
        for name in ("device", "dtype")
        if name not in inspect.signature(init).parameters  # the layer's own, when it has one
    ]
    if not names and not torch_names:
        return init

    @functools.wraps(init)
    def with_factory_keywords(self, *args, **kwargs):
        for torch_name in torch_names.keys() & kwargs.keys():
            name = torch_names[torch_name]
            if name in kwargs:
                raise TypeError(
                    f"{type(self).__name__}: got both {torch_name}= and {name}= (torch's name "
                    f"for it): give one"
                )
            kwargs[name] = kwargs.pop(torch_name)
        factory = {name: kwargs.pop(name) for name in names if name in kwargs}
        init(self, *args, **kwargs)
        if any(value is not None for value in factory.values()):
            self.to(factory.get("device"), factory.get("dtype"))

    return with_factory_keywords


def _is_dtype(value) -> bool:
    """A numpy dtype or scalar type (``numpy.float64``), which ``to`` takes as a dtype."""
    return isinstance(value, np.dtype) or (
        isinstance(value, type) and issubclass(value, np.generic)
    )


def _floating_dtype(owner: str, dtype) -> np.dtype:
    """``dtype`` as a floating numpy dtype, or a TypeError naming ``owner``."""
    expected = "a floating numpy dtype (numpy.float32, numpy.float64, numpy.float16, bfloat16)"
    try:
        value = np.dtype(dtype)
    except TypeError:
        checks.fail(owner, "dtype", expected, dtype, TypeError)
    if not backend.is_float(value):
        checks.fail(owner, "dtype", expected, dtype, TypeError)
    return value
