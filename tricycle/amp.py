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

torch's queries (also top-level names) read the state the blocks set: per thread and device
type, autocast on or off (``is_autocast_enabled``, ``set_autocast_enabled``) and its dtype
(``get_autocast_dtype``, ``set_autocast_dtype``: an ``autocast`` without a dtype takes it), the
cache flag, the nesting count. A block sets them and puts back what it found, as torch's;
``set_autocast_enabled("cpu", True)`` turns autocast on for the calls that follow as a block
does. The ``_cpu_``/``_gpu_`` forms warn as torch 2.13's. ``clear_autocast_cache`` has nothing
to clear: no cast outlives its outermost call.

Threads: as torch's, the blocks and that state are the thread's own; a block in one thread
changes no other thread's calls. But the casts are put on the layers themselves for the length
of a call, so another thread that calls the same model meanwhile sees them: give each thread
its own model.
"""

import functools
import threading
import warnings

import numpy as np

from tricycle import backend, checks, module_hooks
from tricycle.amp_custom import custom_bwd, custom_fwd, is_autocast_available
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
    """This thread's autocast: per device type, on or off and its dtype (torch's state); the
    state each open block found; and what the running layer call cast."""

    def __init__(self):
        self.enabled = dict.fromkeys(_DEFAULT_DTYPES, False)
        self.dtypes = dict.fromkeys(_DEFAULT_DTYPES)  # None: the device type's default
        self.cache_enabled, self.nesting = True, 0
        self.saved: list = []  # (enabled, dtype, cache flag) each open block found
        self.running = None  # the dtype of the running cast call's parameters (None: masters)
        self.places: list = []  # (layer, holder, key, master weight) of that call's parameters


_thread = _ThreadState()
_lock = threading.Lock()
_open = 0  # (thread, device type)s with autocast on + cast calls running: while any, _forward


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
        if not enabled and dtype is None:  # torch's: the device type's dtype now, unchecked
            self.fast_dtype = get_autocast_dtype(device_type)
        else:
            self.fast_dtype = _compute_dtype(dtype, device_type)
        if enabled and self.fast_dtype.itemsize != 2:
            warnings.warn(
                f"autocast: {device_type} autocast computes in bfloat16 or float16, got "
                f"{self.fast_dtype}: autocast is disabled",
                stacklevel=self._stacklevel,
            )
            enabled = False
        self.enabled = enabled
        self._cache_enabled = _thread.cache_enabled if cache_enabled is None else cache_enabled

    def __enter__(self) -> "autocast":
        kind = self.device_type
        _thread.saved.append((_thread.enabled[kind], _thread.dtypes[kind], _thread.cache_enabled))
        _thread.dtypes[kind], _thread.cache_enabled = self.fast_dtype, self._cache_enabled
        _set_enabled(kind, self.enabled)
        _thread.nesting += 1
        return self

    def __exit__(self, *exc) -> None:
        enabled, _thread.dtypes[self.device_type], _thread.cache_enabled = _thread.saved.pop()
        _thread.nesting -= 1
        _set_enabled(self.device_type, enabled)

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
    """``dtype`` (None: the device type's, ``get_autocast_dtype``) as a floating numpy dtype."""
    dtype = get_autocast_dtype(device_type) if dtype is None else dtype
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


def _set_enabled(kind: str, enabled: bool) -> None:
    """Autocast on or off for this thread's calls on ``kind``."""
    if _thread.enabled[kind] != enabled:
        _thread.enabled[kind] = enabled
        _count(+1 if enabled else -1)


def _count(change: int) -> None:
    """While autocast is on for any thread and device type, or a cast call runs (inside which
    it may be off), every layer call's forward runs through ``_forward``; then the calls take
    the plain path again (a thread that ends with autocast set on leaves them that detour)."""
    global _open
    with _lock:
        _open += change
        module_hooks.around_forward(_forward if _open else None)


def _wanted(kind: str):
    """The dtype this thread's calls on ``kind`` compute in now (None: autocast off). A dtype
    set that autocast does not compute in (not a 16-bit float) leaves it off, as torch's."""
    if not _thread.enabled[kind]:
        return None
    dtype = get_autocast_dtype(kind)
    return dtype if is_floating(dtype) and dtype.itemsize == 2 else None


# ---------------------------------------------------------------------- a layer call
def _forward(layer, args: tuple, kwargs: dict):
    """``layer.forward(*args, **kwargs)`` while some thread has an autocast block open."""
    running = _thread.running
    if running is None and not any(_thread.enabled.values()):  # off in this thread
        return layer.forward(*args, **kwargs)
    wanted = _wanted(_device_type(layer, args, kwargs))
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
    _count(+1)
    try:
        with cast_parameters(layer, dtype, [place[1:] for place in places]):  # found above
            output = layer.forward(*args, **kwargs)
    finally:
        _thread.running, _thread.places = saved
        _count(-1)
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


# ---------------------------------------------------------------------- torch's queries
def _kind(op: str, device_type) -> str:
    """``device_type`` ("cpu", "cuda", "cuda:0") as a key of the state, or torch's error."""
    if not isinstance(device_type, str):
        raise TypeError(f"{op}(): device_type must be str, not {type(device_type).__name__}")
    kind = device_type.partition(":")[0]
    if kind not in _DEFAULT_DTYPES:
        raise RuntimeError(f"{op}: tricycle's autocast has the device types 'cpu' and 'cuda', "
                           f"got {device_type!r}")  # fmt: skip
    return kind


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """torch.is_autocast_enabled: whether autocast is on in this thread for ``device_type``
    (without one, "cuda", as torch's)."""
    return _thread.enabled[_kind("is_autocast_enabled", device_type)]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """torch.set_autocast_enabled(device_type, enabled), or (enabled) for "cuda": autocast
    on or off in this thread until changed (a block puts back what it found)."""
    if enabled is None and isinstance(device_type, bool | np.bool_):
        device_type, enabled = "cuda", device_type
    kind = _kind("set_autocast_enabled", device_type)
    _set_enabled(kind, bool(checks.boolean("set_autocast_enabled", "enabled", enabled)))


def get_autocast_dtype(device_type: str) -> np.dtype:
    """torch.get_autocast_dtype: the dtype autocast computes in on ``device_type`` in this
    thread (bfloat16 on "cpu" and float16 on "cuda" until set)."""
    kind = _kind("get_autocast_dtype", device_type)
    dtype = _thread.dtypes[kind]
    if dtype is None:
        default = _DEFAULT_DTYPES[kind]
        return backend.bfloat16("autocast") if default == "bfloat16" else np.dtype(default)
    return dtype


def set_autocast_dtype(device_type: str, dtype) -> None:
    """torch.set_autocast_dtype: the dtype autocast computes in on ``device_type`` in this
    thread, and an ``autocast`` without one; any dtype is kept, as torch keeps it (one that
    is not a 16-bit float leaves autocast off)."""
    kind = _kind("set_autocast_dtype", device_type)
    if not isinstance(dtype, np.dtype) and not (
        isinstance(dtype, type) and issubclass(dtype, np.generic)
    ):
        checks.fail("set_autocast_dtype", "dtype", "a dtype", dtype, TypeError)
    _thread.dtypes[kind] = np.dtype(dtype)


def _deprecated(fn, kind: str, argument: str = ""):
    """torch 2.13's deprecated ``_cpu_``/``_gpu_`` form of ``fn`` on ``kind``: it warns as
    torch's, then calls ``fn(kind, ...)``."""
    name = fn.__name__.replace("autocast_", f"autocast_{'gpu' if kind == 'cuda' else kind}_")
    now = f"{fn.__name__}({kind!r}{', ' if argument else ''}{argument})"

    def deprecated(*args):
        warnings.warn(f"torch.{name}({argument}) is deprecated. Please use torch.{now} instead.",
                      DeprecationWarning, stacklevel=2)  # fmt: skip
        return fn(kind, *args)

    deprecated.__name__ = deprecated.__qualname__ = name
    deprecated.__doc__ = f"torch.{name}: deprecated, as torch's; ``{now}``."
    return deprecated


is_autocast_cpu_enabled = _deprecated(is_autocast_enabled, "cpu")
set_autocast_cpu_enabled = _deprecated(set_autocast_enabled, "cpu", "enabled")
get_autocast_cpu_dtype = _deprecated(get_autocast_dtype, "cpu")
set_autocast_cpu_dtype = _deprecated(set_autocast_dtype, "cpu", "dtype")
get_autocast_gpu_dtype = _deprecated(get_autocast_dtype, "cuda")
set_autocast_gpu_dtype = _deprecated(set_autocast_dtype, "cuda", "dtype")


def is_autocast_cache_enabled() -> bool:
    """torch.is_autocast_cache_enabled: this thread's flag (True until set)."""
    return _thread.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """torch.set_autocast_cache_enabled: the flag an ``autocast`` without ``cache_enabled``
    takes. Kept only: a parameter is cast once per outermost call either way."""
    _thread.cache_enabled = checks.boolean("set_autocast_cache_enabled", "enabled", enabled)


def clear_autocast_cache() -> None:
    """torch.clear_autocast_cache: nothing to clear (no cast outlives its layer call)."""


def autocast_increment_nesting() -> int:
    """torch.autocast_increment_nesting: this thread's count of open blocks, plus one."""
    _thread.nesting += 1
    return _thread.nesting


def autocast_decrement_nesting() -> int:
    """torch.autocast_decrement_nesting: the count minus one (below 0 too, as torch's)."""
    _thread.nesting -= 1
    return _thread.nesting


QUERIES = (
    "is_autocast_enabled set_autocast_enabled get_autocast_dtype set_autocast_dtype "
    "is_autocast_cpu_enabled set_autocast_cpu_enabled get_autocast_cpu_dtype "
    "set_autocast_cpu_dtype get_autocast_gpu_dtype set_autocast_gpu_dtype "
    "is_autocast_cache_enabled set_autocast_cache_enabled clear_autocast_cache "
    "autocast_increment_nesting autocast_decrement_nesting"
)
__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available",
           *QUERIES.split()]  # fmt: skip
