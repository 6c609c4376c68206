"""Hooks on a layer's calls, as ``torch.nn.Module``'s: ``HookMethods``, a base class of
``Layer`` (``tricycle.module``), and ``call``, what calling a layer that has hooks runs.

- ``register_forward_pre_hook(hook)``: ``hook(layer, args)`` before ``forward``; what it
  returns (a tuple, or one value) replaces the positional arguments. With ``with_kwargs=True``
  ``hook(layer, args, kwargs)`` returns None or ``(args, kwargs)``.
- ``register_forward_hook(hook)``: ``hook(layer, args, output)`` after ``forward``; what it
  returns replaces the output (``hook(layer, args, kwargs, output)`` with ``with_kwargs``;
  with ``always_call`` it runs, seeing output None, when the call raises).
- ``register_full_backward_pre_hook(hook)``: ``hook(layer, grad_output)`` once backward has
  the gradients of the layer's outputs, before they go into it; it may return new ones.
- ``register_full_backward_hook(hook)``: ``hook(layer, grad_input, grad_output)`` once backward
  has the gradients of the layer's positional inputs; it may return new ``grad_input``.

Each returns a ``RemovableHandle`` (``remove()``, or a ``with`` block). Hooks run in
registration order (``prepend=True`` puts one first), on every call of the layer (torch's
``layer._forward_pre_hooks`` lists the first kind); a hookless call costs one lookup.

torch's global module hooks (``register_module_forward_hook``...) are the four for every
layer, run before its own; they live in ``GLOBAL`` beside ``_around`` (what runs every
forward in an autocast block: ``tricycle.amp``). While either is set, ``Layer._hooks`` is
``GLOBAL`` (a layer's own shadow it): every call takes ``call``; else None: the plain path.

The backward hooks work on the graph alone, as torch's do: a call's tensor inputs (and its
outputs) pass through a *bundle*, a node that holds no data, feeds a view of each, and runs
its back_fns once backward has summed the gradient of every view (topological order puts the
bundle after them), so a hook sees the gradients together, as Tensors: in ``grad_output``
None for an output that got none; in ``grad_input`` zeros for a Tensor input that needs no
gradient or got none, None for an argument that is no Tensor (torch's); a pair per call.
"""

import itertools
import warnings
import weakref

from tricycle import checks
from tricycle.tensor import Tensor, grad_enabled

_KINDS = ("forward_pre", "forward", "backward_pre", "backward")


class Hooks:
    """A layer's hooks: per kind, {handle id: hook} in calling order; ``with_kwargs`` and
    ``always_call`` hold the ids registered with those options."""

    __slots__ = (*_KINDS, "with_kwargs", "always_call")

    def __init__(self):
        for kind in _KINDS:
            setattr(self, kind, {})
        self.with_kwargs, self.always_call = set(), set()

    def __bool__(self) -> bool:
        return any(getattr(self, kind) for kind in _KINDS)

    def discard(self, kind: str, key: int) -> None:
        getattr(self, kind).pop(key, None)
        self.with_kwargs.discard(key)
        self.always_call.discard(key)


GLOBAL = Hooks()  # torch's global module hooks: every layer's, run before its own
_around = None  # None, or what runs every layer's forward (around_forward: autocast's)


class RemovableHandle:
    """What a ``register_*_hook`` returns, as torch's: ``remove()`` unregisters the hook; used
    as a context manager, the hook is removed at the end of the ``with`` block."""

    _ids = itertools.count()

    def __init__(self, layer, kind: str):  # layer None: a global hook
        self.id = next(RemovableHandle._ids)
        self._layer, self._kind = (None if layer is None else weakref.ref(layer)), kind

    def remove(self) -> None:
        if self._layer is None:
            GLOBAL.discard(self._kind, self.id)
            switch()
            return
        layer = self._layer()
        hooks = None if layer is None else vars(layer).get("_hooks")
        if hooks is None:
            return
        hooks.discard(self._kind, self.id)
        if not hooks:  # the layer's calls take the plain path again
            del layer._hooks

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _register(layer, kind: str, hook, prepend, with_kwargs=False, always_call=False):
    """Add ``hook`` to ``layer``'s hooks of ``kind`` (None: the global ones); its handle."""
    owner = f"{type(layer).__name__}.register_{kind}_hook"
    owner = f"register_module_{kind}_hook" if layer is None else owner
    checks.function(owner, "hook", hook)
    for name, value in (("prepend", prepend), ("with_kwargs", with_kwargs),
                        ("always_call", always_call)):  # fmt: skip
        checks.boolean(owner, name, value)
    hooks = GLOBAL if layer is None else vars(layer).get("_hooks")
    if hooks is None:
        hooks = layer._hooks = Hooks()
    handle = RemovableHandle(layer, kind)
    table = getattr(hooks, kind)
    table[handle.id] = hook
    if prepend:
        setattr(hooks, kind, {handle.id: hook, **table})
    if with_kwargs:
        hooks.with_kwargs.add(handle.id)
    if always_call:
        hooks.always_call.add(handle.id)
    if layer is None:
        switch()
    return handle


class HookMethods:
    """torch's ``register_*_hook`` methods of a ``Layer`` (see the module's doc)."""

    _hooks: Hooks | None = None  # a class default: Layer.__call__ runs hooks when not None

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(layer, args)`` (``hook(layer, args, kwargs)`` with ``with_kwargs``) before
        every ``forward``; a value it returns replaces the arguments. Returns a handle."""
        return _register(self, "forward_pre", hook, prepend, with_kwargs)

    @property
    def _forward_pre_hooks(self) -> dict:
        """torch's: {handle id: hook} of this layer's own forward pre-hooks, in calling order."""
        hooks = vars(self).get("_hooks")
        return {} if hooks is None else hooks.forward_pre

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(layer, args, output)`` (``hook(layer, args, kwargs, output)`` with
        ``with_kwargs``) after every ``forward``; a value it returns replaces the output.
        ``always_call``: run it also when the call raises. Returns a handle."""
        return _register(self, "forward", hook, prepend, with_kwargs, always_call)

    def register_full_backward_pre_hook(self, hook, *, prepend=False):
        """``hook(layer, grad_output)`` when backward reaches the outputs of a call; a tuple
        it returns replaces ``grad_output`` (one entry per output). Returns a handle."""
        return _register(self, "backward_pre", hook, prepend)

    def register_full_backward_hook(self, hook, *, prepend=False):
        """``hook(layer, grad_input, grad_output)`` once backward has the gradients of a
        call's positional inputs (zeros for a Tensor that needs none, None for an argument
        that is no Tensor; when no input needs a gradient, all None and the hook runs as the
        outputs' gradients arrive); a tuple it returns replaces ``grad_input``. Returns a
        handle."""
        return _register(self, "backward", hook, prepend)


# ---------------------------------------------------------------------- global hooks
def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """``hook(layer, args)`` before every layer's forward (and its own pre-hooks)."""
    return _register(None, "forward_pre", hook, False)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(layer, args, output)`` after every layer's forward, before its own hooks."""
    return _register(None, "forward", hook, False, with_kwargs, always_call)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """``hook(layer, grad_output)`` for every layer, before its own backward pre-hooks."""
    return _register(None, "backward_pre", hook, False)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """``hook(layer, grad_input, grad_output)`` for every layer, before its own."""
    return _register(None, "backward", hook, False)


def around_forward(around) -> None:
    """Run every layer's forward as ``around(layer, args, kwargs)`` (None: as ``forward``)."""
    global _around
    _around = around
    switch()


def switch() -> None:
    """Point the class attribute ``_hooks`` at ``GLOBAL`` while it has hooks or there is an
    ``_around`` (every layer call takes ``call``), else back at None (the plain path)."""
    HookMethods._hooks = GLOBAL if GLOBAL or _around is not None else None


def _merged(own: Hooks) -> Hooks:
    """The hooks a call runs: the global ones, then the layer's own (torch's order)."""
    if own is GLOBAL or not GLOBAL:
        return own
    merged = Hooks()
    for kind in _KINDS:
        setattr(merged, kind, {**getattr(GLOBAL, kind), **getattr(own, kind)})
    merged.with_kwargs = GLOBAL.with_kwargs | own.with_kwargs
    merged.always_call = GLOBAL.always_call | own.always_call
    return merged


# ---------------------------------------------------------------------- a call
def call(layer, args: tuple, kwargs: dict):
    """``layer(*args, **kwargs)`` with its hooks, in torch's order: the forward pre-hooks, the
    inputs through a bundle (backward hooks), forward (or ``_around``), the forward hooks,
    the outputs through a bundle."""
    hooks, around, called, output = _merged(layer._hooks), _around, set(), None
    try:
        for key, hook in list(hooks.forward_pre.items()):
            if key in hooks.with_kwargs:
                result = hook(layer, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"{type(layer).__name__}: a forward pre-hook with kwargs must "
                            f"return None or a tuple (new_args, new_kwargs), got {result!r}"
                        )
                    args, kwargs = result
            else:
                result = hook(layer, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward = None
        if (hooks.backward or hooks.backward_pre) and grad_enabled():
            backward = _BackwardHooks(layer, hooks)
            args = backward.inputs(args)
        if around is None:
            output = layer.forward(*args, **kwargs)
        else:
            output = around(layer, args, kwargs)
        for key, hook in list(hooks.forward.items()):
            called.add(key)
            if key in hooks.with_kwargs:
                result = hook(layer, args, kwargs, output)
            else:
                result = hook(layer, args, output)
            output = output if result is None else result
        return output if backward is None else backward.outputs(output)
    except Exception:
        for key, hook in list(hooks.forward.items()):  # torch's always_call: then re-raise
            if key in hooks.always_call and key not in called:
                try:
                    if key in hooks.with_kwargs:
                        hook(layer, args, kwargs, output)
                    else:
                        hook(layer, args, output)
                except Exception as error:  # the call's own error is the one raised
                    message = f"{type(layer).__name__}: an always_call forward hook raised"
                    warnings.warn(f"{message} {error!r} while the call failed", stacklevel=3)
        raise


class _BackwardHooks:
    """The backward hooks of one call of ``layer``, as they were at the call: the bundles its
    inputs and outputs pass through, and the gradients of the outputs between the two."""

    def __init__(self, layer, hooks: Hooks):
        self.layer, self.name = layer, type(layer).__name__
        self.pre_hooks = list(hooks.backward_pre.values())
        self.hooks = list(hooks.backward.values())
        self.n_inputs, self.inputs_at, self.input_shapes, self.input_zeros = 0, None, {}, {}
        self.n_outputs, self.outputs_at, self.output_shapes = 0, None, {}
        self.grad_outputs = None  # between the two bundles' hooks in one backward pass

    def inputs(self, args: tuple) -> tuple:
        """``args`` with each Tensor that requires grad replaced by its view from a bundle."""
        self.n_inputs = len(args)
        at = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not at:  # nothing below gets a gradient: the hooks run on the output side
            return args
        self.inputs_at = at
        # as torch's: a Tensor input that gets no gradient has zeros in grad_input
        self.input_zeros = {i: (a.xp, a.shape, a.dtype) for i, a in enumerate(args)
                            if isinstance(a, Tensor)}  # fmt: skip
        self.input_shapes = {i: shape for i, (_, shape, _) in self.input_zeros.items()}
        views = _through_bundle([args[i] for i in at], self._on_grad_inputs, self.name)
        args = list(args)
        for i, view in zip(at, views):
            args[i] = view
        return tuple(args)

    def outputs(self, output):
        """``output`` (a Tensor or a tuple) with each Tensor that requires grad replaced by its
        view from a bundle."""
        single = not isinstance(output, tuple)
        items = [output] if single else list(output)
        at = [i for i, o in enumerate(items) if isinstance(o, Tensor) and o.requires_grad]
        if not at:
            return output
        self.n_outputs, self.outputs_at = len(items), at
        self.output_shapes = {i: items[i].shape for i in at}
        for i, view in zip(at, _through_bundle([items[i] for i in at], self._on_grad_outputs,
                                               self.name)):  # fmt: skip
            items[i] = view
        if single:
            return items[0]
        return type(output)(*items) if hasattr(output, "_fields") else tuple(items)

    def _on_grad_outputs(self, grads: list) -> list:
        """The backward pre-hooks on the outputs' gradients (and, when no input needs a
        gradient, the backward hooks); the gradients to send into the layer."""
        grad_output = [None] * self.n_outputs
        for i, g in zip(self.outputs_at, grads):
            grad_output[i] = None if g is None else Tensor(g, requires_grad=False)
        grad_output = tuple(grad_output)
        for hook in self.pre_hooks:
            new = hook(self.layer, grad_output)
            if new is not None:
                grad_output = _replace(self, "grad_output", new, grad_output, self.output_shapes)
        self.grad_outputs = grad_output
        if self.inputs_at is None:
            nothing = (None,) * self.n_inputs
            for hook in self.hooks:
                new = hook(self.layer, nothing, grad_output)
                if new is not None and any(g is not None for g in new):
                    raise RuntimeError(
                        f"{self.name}: a backward hook of a layer whose inputs need no "
                        f"gradient must return None (or Nones), got {new!r}"
                    )
            self.grad_outputs = None
        return [_array(grad_output[i]) for i in self.outputs_at]

    def _on_grad_inputs(self, grads: list) -> list:
        """The backward hooks on the inputs' gradients; the gradients to send on."""
        if self.grad_outputs is None:  # it came around the outputs: no hook, as torch's
            return grads
        grad_input = [None] * self.n_inputs
        for i, (xp, shape, dtype) in self.input_zeros.items():
            grad_input[i] = Tensor(xp.zeros(shape, dtype), requires_grad=False)
        for i, g in zip(self.inputs_at, grads):
            if g is not None:
                grad_input[i] = Tensor(g, requires_grad=False)
        grad_input = tuple(grad_input)
        for hook in self.hooks:
            new = hook(self.layer, grad_input, self.grad_outputs)
            if new is not None:
                grad_input = _replace(self, "grad_input", new, grad_input, self.input_shapes)
        self.grad_outputs = None
        return [_array(grad_input[i]) for i in self.inputs_at]


def _replace(hooks: _BackwardHooks, what: str, new, old: tuple, shapes: dict) -> tuple:
    """A hook's ``new`` gradients checked against ``old`` (one per position, the shapes of
    the tensors at ``shapes``'s positions), as a tuple of Tensors and Nones."""
    if not isinstance(new, tuple | list) or len(new) != len(old):
        raise RuntimeError(
            f"{hooks.name}: a backward hook returned {new!r} for {what}; expected None or a "
            f"tuple of {len(old)} (a gradient or None per position)"
        )
    checked = []
    for i, g in enumerate(new):
        if g is not None and not isinstance(g, Tensor):  # an array (numpy or cupy)
            g = Tensor(g, requires_grad=False)
        if g is not None and (i not in shapes or g.shape != shapes[i]):
            expected = f"shape {shapes[i]}" if i in shapes else "None (no Tensor there)"
            raise RuntimeError(
                f"{hooks.name}: a backward hook returned a gradient of shape {g.shape} for "
                f"{what}[{i}]; expected {expected}"
            )
        checked.append(g)
    return tuple(checked)


def _array(grad):
    """A hook's gradient (Tensor or None) as the engine's array (None: no gradient)."""
    return None if grad is None else grad.array


def _through_bundle(tensors: list, fire, name: str) -> list:
    """Views of ``tensors`` (that require grad) fed by one bundle node of no data that takes
    them all as inputs. In backward each view hands its gradient to the bundle; once all have
    (the bundle comes after them), ``fire(grads)`` (arrays, None for a view that got none)
    gives the gradients (arrays or None) to send on to ``tensors``."""
    received, sent, pending = [None] * len(tensors), [], [False]
    nothing = tensors[0].xp.empty((0,), dtype=tensors[0].dtype)  # the bundle's (empty) data

    def keep(i):
        def back_fn(grad):
            received[i], pending[0] = grad, True
            return nothing

        return back_fn

    def send(i):
        def back_fn(_):
            if pending[0]:  # the bundle's first back_fn of this backward pass: fire the hooks
                sent[:] = fire(received[:])
                received[:], pending[0] = [None] * len(tensors), False
            grad = sent[i]
            return tensors[i].xp.zeros_like(tensors[i].array) if grad is None else grad

        return back_fn

    bundle = tensors[0].new(nothing, args=tuple(tensors), name=f"backward hooks of {name}",
                            back_fns=tuple(send(i) for i in range(len(tensors))))  # fmt: skip
    return [
        t.new(t.array, args=(bundle,), back_fns=(keep(i),), is_batched=t.is_batched, name=t.name)
        for i, t in enumerate(tensors)
    ]
