"""The ``torch.nn.Module`` methods a PyTorch user calls, on tricycle's walk: ``TorchMethods``,
a base class of ``Layer`` (``tricycle.module``), which holds the walk itself.

- ``named_modules()``/``modules()``: this layer (named "") and every sublayer, depth first,
  each once (``named_layers``); ``named_children()``/``children()``: the direct sublayers. A
  list or dict attribute of layers is no layer of its own (torch would need a ``ModuleList``
  there): its items are children named ``attr.0``, ``attr.key``.
- ``apply(fn)``: ``fn`` on every sublayer, children first, then on this layer.
- ``requires_grad_(False)`` freezes the parameters, ``requires_grad_(True)`` thaws them.
- ``to(device)``, ``to(dtype)``, ``cuda()``, ``cpu()``: ``to_gpu``/``from_gpu`` and a cast.
- ``register_buffer``, ``register_parameter``, ``add_module``: attributes, as the walk finds
  them; ``named_buffers()``/``buffers()``: the Tensors that need no gradient.

The methods of torch's Module that tricycle does things another way for (hooks,
``half()``...) are not there: reading one raises an AttributeError that says what to use
(``hasattr`` is False, as for any missing attribute).
"""

import numpy as np

from tricycle import backend, checks
from tricycle.tensor import Tensor

_HOOKS = (
    "tricycle layers have no hooks: wrap the layer in one whose forward calls it and does "
    "the rest; for a parameter's gradient use Tensor.register_post_accumulate_grad_hook"
)
_CAST = (
    "cast with to({}) (to(dtype)); for mixed-precision training keep float32 weights and use "
    "a precision policy, tricycle.precision.Precision({!r})"
)


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


class TorchMethods:
    """torch's names for walking, freezing and moving a ``Layer`` (see the module's doc)."""

    _frozen: frozenset = frozenset()  # names of this layer's parameters requires_grad_ froze

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

        A frozen parameter is a constant to the graph: backward gives it no gradient, and
        since tricycle's parameters are the Tensors that require grad, it leaves
        ``parameters()`` (unlike torch's, which still lists it), so an optimiser's update, the
        clipping and ``zero_grad`` pass it by; a gradient it had is dropped. It stays in
        ``state_dict()`` and moves with the layer. ``requires_grad_(True)`` thaws the
        parameters that ``requires_grad_(False)`` froze on this layer or its sublayers (each
        layer keeps their names), never a buffer: batch norm's statistics stay buffers.
        Freeze with this, not by setting a parameter's ``requires_grad`` (that makes it a
        buffer), and before handing the model to a data-parallel wrapper, which lays out the
        gradients of the parameters it finds. Returns self.
        """
        layers = [layer for _, layer in self.named_layers()]
        if requires_grad:
            for layer in layers:
                for name, value in layer._members():
                    if name in layer._frozen and isinstance(value, Tensor):
                        value.requires_grad = True
                vars(layer).pop("_frozen", None)
            return self
        parameters = self.parameters()
        trainable = {id(t) for t in parameters}
        for layer in layers:  # a parameter two layers hold (tied) is named in both
            names = {n for n, v in layer._members() if isinstance(v, Tensor) and id(v) in trainable}
            if names:
                layer._frozen = layer._frozen | names
        for t in parameters:
            t.requires_grad, t.grad = False, None
        return self

    # ------------------------------------------------------------------ devices
    def to(self, device=None, dtype=None, non_blocking: bool = False):
        """Move and/or cast every parameter and buffer in place, as torch's ``Module.to``;
        returns self.

        ``to(device)``: "cpu" (``from_gpu``), "cuda", "cuda:N", "gpu" or a GPU index N
        (``to_gpu(N)``). ``to(dtype)`` or ``to(device, dtype)``: the floating parameters and
        buffers (and their gradients) cast to a floating numpy dtype (``numpy.float64`` for
        gradient checks; integer buffers stay). For mixed-precision training keep float32
        weights and use a precision policy (``tricycle.precision.Precision``). ``to(tensor)``:
        that tensor's device and dtype. ``non_blocking`` is accepted: copies are synchronous.
        """
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
        if dtype is None:
            return self
        for _, t in self.named_tensors():
            if backend.is_float(t.dtype) and t.dtype != dtype:
                t.array = t.array.astype(dtype)
                if t.grad is not None:
                    t.grad.array = t.grad.array.astype(dtype)
        return self

    def cuda(self, device=None):
        """Move to GPU ``device`` (an index or "cuda:N"; GPU 0 when None, as ``to_gpu``);
        without a usable GPU, a RuntimeError that says so. Returns self."""
        index = 0 if device is None else backend.parse_device(device, f"{type(self).__name__}.cuda")
        if index is None:
            checks.fail(f"{type(self).__name__}.cuda", "device", "a GPU", device)
        return self.to_gpu(index)

    def cpu(self):
        """Move to host memory (``from_gpu``); returns self."""
        return self.from_gpu()

    # ------------------------------------------------------------------ registering
    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """torch's ``register_buffer``: ``tensor`` (an array or a Tensor; None keeps the name
        empty) as an attribute that needs no gradient, so the walk moves it with the layer and
        saves it in ``state_dict()``; every buffer is saved, so ``persistent=False`` is
        refused."""
        owner = f"{type(self).__name__}.register_buffer"
        checks.text(owner, "name", name)
        if not persistent:
            raise ValueError(f"{owner}: persistent=False is not supported: every Tensor "
                             "attribute of a layer is saved in its state_dict")  # fmt: skip
        array = tensor.array if isinstance(tensor, Tensor) else tensor
        setattr(self, name, None if tensor is None else Tensor(array, requires_grad=False))

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
        return iter([(n, t) for n, t in self.named_tensors() if not t.requires_grad])

    def buffers(self):
        """The Tensors of ``named_buffers``."""
        return iter([t for _, t in self.named_buffers()])

    # ------------------------------------------------------------------ not in tricycle
    get_submodule = _NotInTricycle("dict(layer.named_modules())[name]")
    get_parameter = _NotInTricycle("dict(layer.named_parameters())[name]")
    register_forward_hook = _NotInTricycle(_HOOKS)
    register_forward_pre_hook = _NotInTricycle(_HOOKS)
    register_full_backward_hook = _NotInTricycle(_HOOKS)
    register_full_backward_pre_hook = _NotInTricycle(_HOOKS)
    register_backward_hook = _NotInTricycle(_HOOKS)
    half = _NotInTricycle(_CAST.format("numpy.float16", "fp16"))
    bfloat16 = _NotInTricycle(_CAST.format("tricycle.casting.bfloat16()", "bf16"))
    float = _NotInTricycle("cast with to(numpy.float32)")
    double = _NotInTricycle("cast with to(numpy.float64)")


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
