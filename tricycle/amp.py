"""Automatic mixed precision as torch spells it: ``tricycle.autocast`` (also
``tricycle.amp.autocast``) and ``tricycle.amp.GradScaler`` (``tricycle.amp_scaler``)::

    scaler = tricycle.amp.GradScaler("cuda")              # float16; bfloat16 needs none
    with tricycle.autocast(device_type="cuda", dtype=tricycle.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)                            # before clipping, if clipping
    tricycle.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()

Precision is a policy the call applies, not a mode the math reads (``tricycle.precision``):
no op looks at autocast. While a block is on, every layer call goes through
``tricycle.module_hooks.call`` (the class attribute ``Layer._hooks`` says so, as it does for
global hooks), which hands the forward to ``_forward`` here. The outermost layer call of the
block runs as ``Precision(...).run(layer, layer.forward, ...)`` does: the parameters of the
layer and of every sublayer cast once to the block's dtype (``cast_parameters``:
differentiable, so float32 master weights get float32 gradients), its floating Tensor
arguments cast, and its output cast back to float32 (on every device: the loss after it
reads float32, as torch's autocast runs the losses in float32). The layers it calls run
plainly on those casts. An outermost call of a layer without parameters (a loss, an
activation) runs in its inputs' dtype. Once the last block ends, layer calls take the plain
path again: outside a block a layer call costs what it did.

The one difference from torch: torch casts op by op, tricycle layer call by layer call. A
Tensor op outside any layer (``x @ w`` in a script, a loss function) runs in its inputs' own
dtype under autocast too, and every op inside a layer runs in the dtype of its inputs, the
block's (torch keeps a few, softmax and the norms, in float32); a model's output is float32
where torch's last layer gives the 16-bit dtype.

Blocks nest: for a call, the innermost block of its device type decides (``enabled=False``
turns autocast off). A call inside a cast layer's forward whose innermost block decides
otherwise (an ``autocast(enabled=False)`` inside a forward) starts again from the master
weights: its parameters are those (or their casts to the new dtype), its floating arguments
are cast to the new dtype (left as they are when disabled, as torch leaves them), and its
output is cast to its caller's dtype. The parameters are put back after every call, also when
it raises.

Threads: as torch's, the blocks are the thread's own; a block in one thread changes no other
thread's calls. But the casts are put on the layers themselves for the length of a call, so
another thread that calls the same model meanwhile sees them: give each thread its own model.
"""

import functools
import threading
import warnings

import numpy as np

from tricycle import backend, checks, module_hooks
from tricycle.amp_scaler import GradScaler
from tricycle.casting import (
    cast,
    cast_all,
    cast_parameters,
    is_floating,
    parameter_places,
    put_parameter,
)
from tricycle.tensor import Tensor

_DEFAULT_DTYPES = {"cpu": "bfloat16", "cuda": "float16"}  # torch's, per device type


class _ThreadState(threading.local):
    """This thread's autocast: its open blocks and what the running layer call cast."""

    def __init__(self):
        self.blocks: list = []  # (device type, compute dtype or None: disabled), innermost last
        self.running = None  # the dtype of the running cast call's parameters (None: masters)
        self.places: list = []  # (layer, holder, key, master weight) of that call's parameters


_thread = _ThreadState()
_lock = threading.Lock()
_open_blocks = 0  # enabled blocks open in every thread: while any, _forward runs every forward


class autocast:  # noqa: N801 - torch's name
    """``torch.autocast``: within the block (or the decorated function), layer calls compute
    in ``dtype`` from float32 master weights (see the module's doc).

    Args:
        device_type: "cpu" or "cuda": the calls whose tensors live there are cast. "cuda" on
            a host without a GPU warns and disables the block, as torch's.
        dtype: bfloat16 (default on "cpu") or float16 (default on "cuda"; on the CPU numpy
            computes it too, slowly). Another floating dtype warns and disables the block, as
            torch's; a dtype that is not floating is an error.
        enabled: False turns autocast off within the block (nested inside another).
        cache_enabled: accepted; each parameter is cast once per outermost call anyway.
    """

    _stacklevel = 2  # a warning names the user's line; a subclass's __init__ adds a frame

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if device_type not in _DEFAULT_DTYPES:
            checks.fail("autocast", "device_type", '"cpu" or "cuda"', device_type)
        checks.boolean("autocast", "enabled", enabled)
        checks.boolean("autocast", "cache_enabled", cache_enabled, optional=True)
        if enabled and device_type == "cuda" and not backend.cupy_available():
            warnings.warn(
                "autocast: device_type 'cuda' but no CUDA GPU is available (cupy and a device): "
                "autocast is disabled",
                stacklevel=self._stacklevel,
            )
            enabled = False
        self.device_type = device_type
        self.fast_dtype = (
            None if not enabled and dtype is None else _compute_dtype(dtype, device_type)
        )
        if enabled and self.fast_dtype.itemsize != 2:
            warnings.warn(
                f"autocast: {device_type} autocast computes in bfloat16 or float16, got "
                f"{self.fast_dtype}: autocast is disabled",
                stacklevel=self._stacklevel,
            )
            enabled = False
        self.enabled = enabled

    def __enter__(self) -> "autocast":
        _thread.blocks.append((self.device_type, self.fast_dtype if self.enabled else None))
        if self.enabled:
            _count_block(+1)
        return self

    def __exit__(self, *exc) -> None:
        _thread.blocks.pop()
        if self.enabled:
            _count_block(-1)

    def __call__(self, fn):
        """As a decorator: ``fn`` runs within this block at every call."""
        checks.function("autocast", "fn", fn)

        @functools.wraps(fn)
        def autocast_fn(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return autocast_fn

    def __repr__(self) -> str:
        return f"autocast({self.device_type!r}, dtype={self.fast_dtype}, enabled={self.enabled})"


def _compute_dtype(dtype, device_type: str) -> np.dtype:
    """``dtype`` (None: the device type's default) as a floating numpy dtype."""
    dtype = _DEFAULT_DTYPES[device_type] if dtype is None else dtype
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        return backend.bfloat16("autocast")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype is None or not is_floating(dtype):
        raise TypeError(
            f"autocast: dtype must be a floating dtype (tricycle.bfloat16 or tricycle.float16), "
            f"got {dtype!r}"
        )
    return dtype


def _count_block(change: int) -> None:
    """One more (or one fewer) enabled block open: while any is, every layer call's forward
    runs through ``_forward``; once none is, the calls take the plain path again."""
    global _open_blocks
    with _lock:
        _open_blocks += change
        module_hooks.around_forward(_forward if _open_blocks else None)


# ---------------------------------------------------------------------- a layer call
def _forward(layer, args: tuple, kwargs: dict):
    """``layer.forward(*args, **kwargs)`` while some thread has an autocast block open."""
    if not _thread.blocks:  # this thread has none
        return layer.forward(*args, **kwargs)
    device = _device_type(layer, args, kwargs)
    wanted = next((dtype for kind, dtype in reversed(_thread.blocks) if kind == device), None)
    running = _thread.running
    if wanted is running or (wanted is not None and running is not None and wanted == running):
        return layer.forward(*args, **kwargs)  # inside a cast call, or no autocast for it
    if running is None:
        return _outermost(layer, wanted, args, kwargs)
    return _switched(layer, wanted, running, args, kwargs)


def _outermost(layer, dtype, args: tuple, kwargs: dict):
    """A call whose parameters are their master weights, under a block of ``dtype``: as
    ``Precision.run`` runs it (parameters and floating arguments cast, output to float32)."""
    saved = _thread.running, _thread.places
    places = [(sub, holder, key, value) for _, sub in layer.named_layers()
              for holder, key, value in parameter_places(sub)]  # fmt: skip
    if not places:  # a loss, an activation: in its inputs' dtype (torch's float32 list)
        return layer.forward(*args, **kwargs)
    args, kwargs = _cast_tensors((args, kwargs), lambda x: cast(x, dtype))
    _thread.running, _thread.places = dtype, places
    try:
        with cast_parameters(layer, dtype, [place[1:] for place in places]):  # found above
            output = layer.forward(*args, **kwargs)
    finally:
        _thread.running, _thread.places = saved
    return _cast_tensors(output, lambda x: cast(x, np.float32))


def _switched(layer, dtype, running, args: tuple, kwargs: dict):
    """A call inside a cast call of dtype ``running`` whose block says ``dtype`` (None:
    disabled): its parameters from their master weights (cast to ``dtype``), its output in
    ``running``, its caller's dtype."""
    inside = {id(sub) for sub in layer.layers()}
    mine = [(holder, key, master) for sub, holder, key, master in _thread.places
            if id(sub) in inside]  # fmt: skip
    now = [holder[key] if isinstance(holder, list | dict) else getattr(holder, key)
           for holder, key, _ in mine]  # fmt: skip
    masters = list({id(master): master for _, _, master in mine}.values())
    new = dict(zip(map(id, masters), masters if dtype is None else cast_all(masters, dtype)))
    if dtype is not None:
        args, kwargs = _cast_tensors((args, kwargs), lambda x: cast(x, dtype))
    for holder, key, master in mine:
        put_parameter(holder, key, new[id(master)])
    _thread.running = dtype
    try:
        output = layer.forward(*args, **kwargs)
    finally:
        _thread.running = running
        for (holder, key, _), value in zip(mine, now):
            put_parameter(holder, key, value)
    return _cast_tensors(output, lambda x: cast(x, running))


def _device_type(layer, args: tuple, kwargs: dict) -> str:
    """Where a call's tensors live, "cuda" or "cpu": its first Tensor argument's device
    (else its layer's first Tensor's, else the CPU)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            return "cuda" if value.on_gpu else "cpu"
    first = next(iter(layer.named_tensors()), None)
    return "cuda" if first is not None and first[1].on_gpu else "cpu"


def _cast_tensors(value, cast_one):
    """``value`` with ``cast_one`` applied to each floating Tensor in it (also in tuples,
    lists and dicts, as a call's arguments and outputs hold them)."""
    if isinstance(value, Tensor):
        return cast_one(value) if is_floating(value.dtype) else value
    if isinstance(value, tuple | list):
        items = [_cast_tensors(item, cast_one) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {key: _cast_tensors(item, cast_one) for key, item in value.items()}
    return value


__all__ = ["GradScaler", "autocast"]
