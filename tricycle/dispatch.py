"""The one dispatch: where a fused op finds a faster kernel for its arrays.

Every fused op is written once, in plain ``xp`` (numpy or cupy), as its reference: the
formula a reader reads and the specification every kernel is tested against. A backend
registers faster implementations of the same functions, taking the same arguments and
returning the same results, for an op name, a device and dtypes::

    # tricycle/backends/cpu/norm.py: the forward and backward as compiled loops
    dispatch.add("layer_norm", "cpu", (layer_norm_forward, layer_norm_backward),
                 applies=same_dtype)

and the op asks once, giving its reference and the arrays it is about to compute with::

    # tricycle/norms.py: the references, in plain xp
    forward, backward = dispatch.choose(
        "layer_norm", (layer_norm_forward, layer_norm_backward), *arrays  # x, gamma, beta
    )
    y, mean, rstd = forward(xp, *arrays, eps)

``choose`` returns the kernel registered for the arrays' device ("cpu" for numpy arrays,
"cuda" for cupy arrays) whose dtypes include every array's dtype and whose ``applies``
(if any) accepts the arrays; otherwise the reference. Whatever is registered is what comes
back: an op whose forward and backward must agree on what is saved (attention keeps
probabilities in the reference and log-sum-exps in the CUDA kernel) registers the pair as
one tuple, and its reference is the tuple of its reference functions.

``choose`` runs once per op call, thousands of times per training step, so the walk over the
registry is done once per kind of call: the kernels whose device and dtypes fit are
remembered per (op, array type, dtypes) (``_fitting``, emptied by ``add`` and ``remove``),
and only ``applies``, which may look at shapes and layouts, runs on every call.

Backends are imported by name (``BACKENDS``) on the first request for their device, so
importing the engine loads none. A backend that cannot be imported (numba missing) says so in
one line and the references run. ``TRICYCLE_DISABLE_KERNELS`` set to anything non-empty, or
the ``references()`` context, makes ``choose`` return the references.
"""

import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

# device -> the package that registers its kernels when imported
BACKENDS = {"cpu": "tricycle.backends.cpu", "cuda": "tricycle.backends.cuda"}


class Kernel(NamedTuple):
    """One registration: what runs ``op`` on ``device`` for arrays of ``dtypes``."""

    op: str
    device: str
    dtypes: frozenset[str]
    implementation: object
    applies: Callable[..., bool] | None


_registry: dict[tuple[str, str], list[Kernel]] = {}
# (op, type of the first array, dtype of each array) -> the kernels that fit, latest first
_fitting: dict[tuple, tuple[Kernel, ...]] = {}
_loaded: dict[str, bool] = {}  # device -> whether its backend imported
_load_lock = threading.Lock()


class _Mode(threading.local):
    references_only = False


_mode = _Mode()


def register(
    op: str,
    device: str,
    dtypes=("float32", "float64"),
    applies: Callable[..., bool] | None = None,
):
    """Decorator: register the decorated function (or pass a tuple to ``add``) as ``op``'s
    kernel on ``device`` for arrays whose dtypes are all in ``dtypes``."""

    def decorate(implementation):
        add(op, device, implementation, dtypes, applies)
        return implementation

    return decorate


def add(op: str, device: str, implementation, dtypes=("float32", "float64"), applies=None):
    """Register ``implementation`` (a function, or a tuple such as (forward, backward))."""
    if device not in BACKENDS:
        raise ValueError(f"dispatch.add: device must be one of {sorted(BACKENDS)}, got {device!r}")
    kernel = Kernel(op, device, frozenset(dtypes), implementation, applies)
    _registry.setdefault((op, device), []).insert(0, kernel)  # the latest registration wins
    _fitting.clear()


def remove(op: str, device: str) -> None:
    """Forget every kernel of ``op`` on ``device`` (tests that register their own)."""
    _registry.pop((op, device), None)
    _fitting.clear()


def device_of(array) -> str:
    """ "cpu" for a numpy array, "cuda" for anything else (a cupy array)."""
    return "cpu" if isinstance(array, np.ndarray) else "cuda"


def choose(op: str, reference, *arrays):
    """The kernel registered for ``op`` that fits ``arrays`` (None entries are skipped), or
    ``reference``."""
    if _mode.references_only:
        return reference
    try:
        key = (op, type(arrays[0]), *[a.dtype for a in arrays])
    except (IndexError, AttributeError):  # no arrays, or a None among them: drop the Nones
        arrays = [a for a in arrays if a is not None]
        if not arrays:
            return reference
        key = (op, type(arrays[0]), *[a.dtype for a in arrays])
    fitting = _fitting.get(key)
    if fitting is None:
        fitting = _fitting[key] = _fit(op, arrays)
    if not fitting or os.environ.get("TRICYCLE_DISABLE_KERNELS"):
        return reference
    for kernel in fitting:
        if kernel.applies is None or kernel.applies(*arrays):
            return kernel.implementation
    return reference


def kernel_for(op: str, *arrays):
    """The kernel registered for ``op`` that fits ``arrays``, or None (none fits, or kernels
    are off): for a caller whose whole path differs where a kernel runs (a gradient norm
    kept on the device, decode steps recorded as a graph), rather than one formula's."""
    return choose(op, None, *arrays)


def _fit(op: str, arrays: list) -> tuple[Kernel, ...]:
    """The kernels of ``op`` on the arrays' device (loading its backend the first time) whose
    dtypes include every array's dtype, latest registration first."""
    device = device_of(arrays[0])
    if device not in _loaded:
        _load(device)
    names = {a.dtype.name for a in arrays}
    return tuple(kernel for kernel in _registry.get((op, device), ()) if names <= kernel.dtypes)


def kernels(op: str | None = None, device: str | None = None) -> list[Kernel]:
    """The registered kernels (of ``op``, on ``device``), loading the backends asked about:
    what the tests walk to check every kernel against its reference."""
    for name in [device] if device else list(BACKENDS):
        if name not in _loaded:
            _load(name)
    return [
        kernel
        for (name, where), entries in _registry.items()
        for kernel in entries
        if (op is None or name == op) and (device is None or where == device)
    ]


def setting(op: str, device: str, reference):
    """What ``device``'s backend registered for ``op``, a setting of the device rather than a
    kernel of arrays (TF32 for float32 products, the current device, when a range check
    raises: ``tricycle.ranges``), whatever its dtypes; otherwise ``reference``, the CPU's way.
    A setting changes no formula: neither ``references()`` nor the kernels' switch turns it off."""
    if device not in _loaded:
        _load(device)
    entries = _registry.get((op, device))
    return entries[0].implementation if entries else reference


@contextmanager
def references() -> Iterator[None]:
    """Run the reference formulas in this thread while inside the block."""
    previous, _mode.references_only = _mode.references_only, True
    try:
        yield
    finally:
        _mode.references_only = previous


def available(device: str) -> bool:
    """Whether ``device``'s backend imported (importing it if not tried yet)."""
    if device not in _loaded:
        _load(device)
    return _loaded[device]


def _load(device: str) -> None:
    with _load_lock:
        if device in _loaded:
            return
        try:
            importlib.import_module(BACKENDS[device])
        except ImportError as error:
            _loaded[device] = False
            print(
                f"tricycle: no {device} kernels ({error}); the reference formulas run",
                file=sys.stderr,
            )
        else:
            _loaded[device] = True
