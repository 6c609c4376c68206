"""The ``Layer`` base class (``tricycle.nn.Module``): what every layer shares.

A layer holds parameters (Tensors that require grad) and sublayers as plain attributes; the
base class finds them by walking ``vars(self)``, so no layer re-implements ``update``,
``zero_grad``, ``to_gpu``, ``state_dict``... Forward passes call stateless ops: what backward
needs lives in the op's closures, so a layer may be called several times before one backward
(weight tying, recurrent use). ``parameter`` makes a layer's trainable Tensor, a
``Parameter`` (torch's ``nn.Parameter``).

What torch users call beyond this (``named_modules``, ``apply``, ``requires_grad_``, ``to``,
``cuda``...) is ``tricycle.module_torch``'s, a base class of ``Layer``; the forward and
backward hooks are ``tricycle.module_hooks``'s, another.

The layers themselves live in ``tricycle.layers`` (which re-exports ``Layer``), the
activations in ``tricycle.activation`` and the rest of the catalogue in ``tricycle.nn``.
"""

from collections import namedtuple
from collections.abc import Iterator
from types import MappingProxyType

import numpy as np

from tricycle import backend, checks, module_hooks
from tricycle.module_hooks import HookMethods
from tricycle.module_torch import TorchMethods
from tricycle.parameter import Parameter, is_parameter, parameter  # noqa: F401 (re-exported)
from tricycle.tensor import Tensor


class _IncompatibleKeys(namedtuple("_IncompatibleKeys", "missing_keys unexpected_keys")):
    """``load_state_dict``'s (missing, unexpected) key lists, named and printed as torch's."""

    def __repr__(self) -> str:
        return super().__repr__() if any(self) else "<All keys matched successfully>"


class StateDictError(ValueError, RuntimeError):
    """``load_state_dict``'s refusal of a checkpoint whose keys or shapes do not fit: a
    ValueError (a bad argument) that is also torch's RuntimeError, so a user's ``except
    RuntimeError`` around a strict load catches it as it does torch's."""


class Parameters(list):
    """What ``Layer.parameters()`` returns: a list (indexing, ``len``, any number of passes),
    and, as torch's ``parameters()`` is a generator, ``next`` gives its items one by one."""

    _next = 0

    def __next__(self) -> Tensor:
        if self._next >= len(self):
            raise StopIteration
        self._next += 1
        return self[self._next - 1]


def clear_grad(p: Tensor, set_to_none: bool = True) -> None:
    """Forget ``p``'s gradient, or (``set_to_none=False``) make an existing one zeros, so that
    a step after it still sees the parameter (torch's ``zero_grad``). A gradient in the
    parameter's own memory (``grad_buffer``: a data-parallel bucket's view) is zeroed in
    place; any other may be shared with another tensor, so it is replaced, never written."""
    if p.grad is None or set_to_none:
        p.grad = None
    elif p.grad.array is p.grad_buffer:
        p.grad.array[...] = 0
    else:
        p.grad = Tensor(p.xp.zeros_like(p.grad.array), requires_grad=False)


class Layer(TorchMethods, HookMethods):
    """Base class of every layer: subclasses implement ``forward``; calling a layer runs it.

    Discovery: each attribute of a layer that is a Tensor with ``requires_grad``, or a
    ``Parameter`` (frozen too: ``p.requires_grad = False``, as torch's), is a parameter
    (``is_parameter``); any other Tensor is a buffer (moved between devices and saved in
    ``state_dict``, never trained: batch norm's running statistics); a Tensor that an op
    computed, with its graph (not a leaf), is neither: an activation a forward keeps for
    inspection (the Annotated Transformer's ``self.attn``), a plain attribute as in torch,
    in a list too; a Layer, or a list/tuple/dict holding Layers (or Tensors), is a sublayer,
    but where the layer also holds it as an attribute (then named by that). Names are
    dotted attribute paths (``blocks.0.attention.qkv_projection.weights``): a layer's own
    Tensors, in attribute order, come before its sublayers', which follow depth first. A
    Tensor or Layer reachable twice (weight tying) counts once, under the first name in that
    order (a parent's attribute before a sublayer's). A buffer registered with
    ``register_buffer(..., persistent=False)`` is walked (moved, cast) but not saved.
    """

    training = True  # a class default, so subclasses need not call Layer.__init__

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args, **kwargs):
        if self._hooks is None:  # no hooks registered (the class default): forward alone
            return self.forward(*args, **kwargs)
        return module_hooks.call(self, args, kwargs)

    @property
    def _modules(self) -> MappingProxyType:
        """torch's ``Module._modules``, read-only: {name: sublayer} of the direct sublayers in
        order (``named_children``), a Sequential's by position alone ("0", "1"), as torch's.
        Made on each read: set or delete a sublayer as an attribute."""
        held = getattr(type(self).__setattr__, "by_position", None)  # Sequential's "sequence"
        names = ((n.removeprefix(f"{held}.") if held else n, c) for n, c in self.named_children())
        return MappingProxyType(dict(names))

    # ------------------------------------------------------------------ discovery
    def _members(self) -> Iterator[tuple[str, object]]:
        """(attribute path, value) for the Tensors and Layers held directly by this layer.
        A list/tuple/dict's items as its attributes', but a Layer that is also an attribute
        of its own (d2l's ``hparams`` dict of a model's arguments holds its encoder): named
        by that attribute, as torch's."""
        values, own = vars(self).items(), None
        for attr, value in values:
            if isinstance(value, Layer) or (isinstance(value, Tensor) and value.args is None):
                yield attr, value
            elif isinstance(value, (list, tuple, dict)):
                if own is None:  # the layer's own sublayers, asked only of a container
                    own = {id(v) for _, v in values if isinstance(v, Layer)}
                items = value.items() if isinstance(value, dict) else enumerate(value)
                for key, item in items:
                    if _member(item) and id(item) not in own:
                        yield f"{attr}.{key}", item

    def _walk(self) -> tuple[list[tuple[str, "Layer"]], list[tuple[str, Tensor]]]:
        """(named layers, named tensors) in one depth-first pass: this layer (named "") and
        every sublayer, each once; then each layer's Tensors, each once, in that order."""
        layers, tensors, seen = [], [], set()
        stack = [("", self)]
        while stack:
            name, layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            layers.append((name, layer))
            children = []
            for attr, value in layer._members():
                path = f"{name}.{attr}" if name else attr
                if isinstance(value, Layer):
                    children.append((path, value))
                elif id(value) not in seen:
                    seen.add(id(value))
                    tensors.append((path, value))
            stack.extend(reversed(children))  # pop in attribute order
        return layers, tensors

    def named_layers(self) -> list[tuple[str, "Layer"]]:
        """This layer (named "") and every sublayer, depth first, each once."""
        return self._walk()[0]

    def layers(self) -> list["Layer"]:
        """This layer and every sublayer, depth first, each once."""
        return [layer for _, layer in self.named_layers()]

    def named_tensors(self) -> list[tuple[str, Tensor]]:
        """Every Tensor attribute (parameters and buffers), each once, in a stable order."""
        return self._walk()[1]

    def named_persistent(self) -> list[tuple[str, Tensor]]:
        """``named_tensors`` but the buffers registered with ``persistent=False``: what
        ``state_dict`` saves and ``load_state_dict`` expects."""
        layers, tensors = self._walk()
        transient = {f"{name}.{attr}" if name else attr
                     for name, layer in layers for attr in layer._non_persistent}  # fmt: skip
        transient |= {n for n, t in tensors if getattr(t, "persistent", True) is False}  # nn.Buffer
        return [(n, t) for n, t in tensors if n not in transient] if transient else tensors

    def named_parameters(self) -> list[tuple[str, Tensor]]:
        """(dotted name, Tensor) for every parameter (``is_parameter``: frozen ones too, as
        torch lists them), each once."""
        return [(name, t) for name, t in self.named_tensors() if is_parameter(t)]

    def parameters(self) -> "Parameters":
        """Every parameter, each once, in the order of ``named_parameters``: a list, which
        ``next`` also reads as torch's generator (``next(model.parameters()).device``)."""
        return Parameters(t for _, t in self.named_parameters())

    def num_parameters(self) -> int:
        """The number of trainable scalars (a frozen parameter's left out)."""
        return sum(t.size for t in self.parameters() if t.requires_grad)

    # ------------------------------------------------------------------ training
    def update(self, optimiser) -> "Layer":
        """Apply ``optimiser`` to every parameter that has a gradient, then zero the grads."""
        optimiser.update(self.named_parameters())
        self.zero_grad()
        return self

    @checks.arguments(set_to_none=checks.boolean)
    def zero_grad(self, set_to_none: bool = True) -> "Layer":
        """Forget every parameter's gradient (``set_to_none=False``: make it zeros, as
        torch's ``Module.zero_grad``)."""
        for t in self.parameters():
            clear_grad(t, set_to_none)
        return self

    @checks.arguments(mode=checks.boolean)
    def train(self, mode: bool = True) -> "Layer":
        """Training mode for this layer and its sublayers (dropout active); ``train(False)``
        is evaluation mode, as torch's."""
        for _, layer in self.named_layers():  # not layers(): a torch model's attribute
            layer.training = bool(mode)
        return self

    def eval(self) -> "Layer":
        """Evaluation mode for this layer and its sublayers (dropout off): ``train(False)``."""
        return self.train(False)

    # ------------------------------------------------------------------ devices
    @checks.arguments(device=checks.non_negative_int)
    def to_gpu(self, device: int = 0) -> "Layer":
        """Move every parameter and buffer to GPU ``device`` in place; returns self."""
        for _, t in self.named_tensors():
            t.to_gpu(device)
        return self

    def from_gpu(self) -> "Layer":
        """Move every parameter and buffer to host memory in place; returns self."""
        for _, t in self.named_tensors():
            t.from_gpu()
        return self

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, np.ndarray]:
        """{dotted name: host (numpy) copy of the parameter or (persistent) buffer}."""
        return {name: backend.host_snapshot(t.numpy()) for name, t in self.named_persistent()}

    @checks.arguments(strict=checks.boolean)
    def load_state_dict(self, state: dict, strict: bool = True) -> _IncompatibleKeys:
        """Copy ``state`` into the parameters and buffers in place (on their current device).

        With ``strict`` every parameter and (persistent) buffer must be present and no other
        key may be (a non-persistent buffer's name is one);
        otherwise only the keys both sides share are loaded. Shapes must always match, values
        must be numeric and finite in the tensor's dtype (a float64 value too large for
        float32 is an error), but that a buffer may hold infinities, as torch loads them (an
        attention mask's ``-inf``: a buffer is no weight); NaN is refused everywhere. Every
        value is checked (and converted) before any is written: a bad state changes nothing.
        Returns the (missing, unexpected) key lists, a named tuple as torch's
        (``missing_keys``, ``unexpected_keys``).
        """
        owner = f"load_state_dict of {type(self).__name__}"
        params = dict(self.named_persistent())
        missing = [name for name in params if name not in state]
        unexpected = [name for name in state if name not in params]
        if strict and (missing or unexpected):
            raise StateDictError(f"{owner}: missing keys {missing}, unexpected keys {unexpected}")
        values = {name: _host_value(state[name]) for name in params if name in state}
        for name, value in values.items():
            if value.dtype.kind not in "biuf" and value.dtype != params[name].dtype:
                raise TypeError(f"{owner}: {name} holds dtype {value.dtype}, not numbers")
        # a lazy layer's tensor not made yet takes the checkpoint's shape, as torch's lazy
        # modules do (the layer's first call then keeps it)
        lazy = {name for name in values if hasattr(params[name], "materialize")}
        mismatched = [
            f"{name}: checkpoint {value.shape} vs model {params[name].shape}"
            for name, value in values.items()
            if value.shape != params[name].shape and name not in lazy
        ]
        if mismatched:
            raise StateDictError(f"{owner}: shape mismatch for " + "; ".join(mismatched))
        converted = {}
        for name, value in values.items():
            t = params[name]
            with np.errstate(over="ignore", invalid="ignore"):
                cast = value.astype(t.dtype)
            bad = ~np.isfinite(cast)
            if not is_parameter(t) and value.dtype.kind == "f":
                bad &= ~np.isinf(value)  # a buffer's own infinities (a mask's -inf) load
            if bad.any():
                if not np.isfinite(value[bad]).all():
                    raise ValueError(f"{owner}: {name} has non-finite values (NaN or inf)")
                raise ValueError(
                    f"{owner}: {name} has values too large for {t.dtype} (largest magnitude "
                    f"{np.abs(value[bad]).max():.4g})"
                )
            if t.on_gpu:
                cast = backend.to_device_array(cast, t.array.device.id)
            converted[name] = cast
        for name, value in converted.items():  # nothing below can fail: all or nothing
            if name in lazy:
                params[name].materialize(value.shape)
            params[name].array[...] = value
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """Arguments shown between the parentheses in the repr; override in subclasses."""
        return ""

    def __repr__(self) -> str:
        n_params = self.num_parameters()
        count = f"  # {n_params:,} parameters" if n_params else ""
        head = f"{type(self).__name__}({self.extra_repr()}"
        children = [(name, v) for name, v in self._members() if isinstance(v, Layer)]
        if not children:
            return f"{head}){count}"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + f"\n){count}"


def _host_value(value) -> np.ndarray:
    """A state-dict value (numpy or cupy array, Tensor, nested list) as a numpy array."""
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(backend.to_host_array(value))


def _member(value) -> bool:
    """Whether an attribute's value (or a list's item) is a Layer's member: a Layer, or a
    leaf Tensor (an op's output with its graph is an activation kept for inspection)."""
    return isinstance(value, Layer) or (isinstance(value, Tensor) and value.args is None)


def named_parameters(parameters) -> list[tuple[str, Tensor]]:
    """(name, Tensor) pairs from a Layer (its parameters that require grad: a frozen one has
    nothing to update, reduce or clip), pairs, or bare Tensors (named by position)."""
    if hasattr(parameters, "named_parameters"):
        return [(name, p) for name, p in parameters.named_parameters() if p.requires_grad]
    named = []
    for i, item in enumerate(parameters):
        if isinstance(item, Tensor):
            named.append((str(i), item))
        else:
            name, tensor = item
            named.append((name, tensor))
    return named
