"""Floating dtypes and the casts between them that mixed precision makes.

``cast`` is differentiable: a Tensor cast to a 16-bit dtype sends its gradient back in its
own dtype (float32 master weights get float32 gradients); ``cast_parameters`` casts a whole
model's parameters that way for the length of a forward. ``cast_arrays`` and ``widen`` are
the references of the CUDA backend's one-launch casts, asked for through ``tricycle.dispatch``.
The precision policies that use them are in ``tricycle.precision``, which re-exports them.
``bfloat16()``, the dtype, is the engine's (``tricycle.backend``), named here as before.
"""

from contextlib import contextmanager

import numpy as np

from tricycle import dispatch
from tricycle.backend import bfloat16  # noqa: F401 - the dtype, beside the engine's others
from tricycle.tensor import Tensor, is_float


def is_floating(dtype) -> bool:
    """float16/32/64 and bfloat16 (whose numpy kind is 'V', not 'f')."""
    return is_float(np.dtype(dtype))


def cast(x, dtype):
    """``x`` as ``dtype``: a Tensor gets a differentiable cast (its gradient comes back in x's
    own dtype), an array a plain ``astype``. No copy when the dtype already matches;
    non-floating inputs (token ids) are returned unchanged."""
    dtype = np.dtype(dtype)
    if isinstance(x, Tensor):
        if x.dtype == dtype or not is_floating(x.dtype):
            return x
        return _cast_node(x, x.array.astype(dtype))
    if x.dtype == dtype or not is_floating(x.dtype):
        return x
    return x.astype(dtype)


def cast_all(tensors: list, dtype) -> list:
    """``[cast(t, dtype) for t in tensors]`` for float32 Tensors: on a GPU one kernel casts
    them all (the CUDA backend: views into one 16-bit buffer) instead of one launch
    each. Tensors already in ``dtype`` or not floating pass through, as in ``cast``."""
    dtype = np.dtype(dtype)
    todo = [t for t in tensors if t.dtype != dtype and is_floating(t.dtype)]
    if not todo:
        return list(tensors)
    arrays = [t.array for t in todo]
    cast_many = dispatch.choose("cast_arrays", cast_arrays, *arrays)
    casts = {id(t): _cast_node(t, a) for t, a in zip(todo, cast_many(arrays, dtype))}
    return [casts.get(id(t), t) for t in tensors]


@contextmanager
def cast_parameters(model, dtype, places: list | None = None):
    """Within the block, every parameter attribute of every layer of ``model`` (a ``Layer``)
    is its differentiable cast to ``dtype`` (``cast_all``: one cast per parameter, shared by
    all its uses: a tied head and its token embedding see one Tensor). The parameters are put
    back on exit, even after an error.

    Layers read their parameters as attributes at call time, so no layer needs to know about
    precision: the policy that runs the forward (``Precision.forward``) casts them.
    ``places``: the (holder, key, parameter) triples of ``parameter_places`` over the model's
    layers, where the caller has found them already (autocast).
    """
    if places is None:
        places = [place for _, layer in model.named_layers() for place in parameter_places(layer)]
    unique = list({id(value): value for _, _, value in places}.values())
    casts = dict(zip(map(id, unique), cast_all(unique, dtype)))  # one launch on a GPU
    for holder, key, value in places:
        put_parameter(holder, key, casts[id(value)])
    try:
        yield
    finally:
        for holder, key, value in places:
            put_parameter(holder, key, value)


def parameter_places(layer) -> list:
    """(holder, key, parameter) for each parameter ``layer`` holds: as an attribute (holder:
    the layer, key: its name), or in a list or dict attribute (``ParameterList``,
    ``ParameterDict``: holder the list or dict, key the index or key), as ``Layer`` finds
    its tensors. (One pass, Tensors first: a policy's every eager forward walks it.)"""
    places = []
    for attr, value in vars(layer).items():
        if isinstance(value, Tensor):
            if value.requires_grad:
                places.append((layer, attr, value))
        elif isinstance(value, (list, dict)) and value:
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            places += [(value, k, v) for k, v in pairs if isinstance(v, Tensor) and v.requires_grad]
    return places


def put_parameter(holder, key, value) -> None:
    """Put ``value`` where ``parameter_places`` found a parameter: an attribute, or an item."""
    if isinstance(holder, (list, dict)):
        holder[key] = value
    else:
        setattr(holder, key, value)


def cast_arrays(arrays: list, dtype) -> list:
    """Every array in ``dtype``: the reference of the CUDA backend's one-launch cast."""
    return [a.astype(dtype) for a in arrays]


def widen(grad, dtype, out=None):
    """A gradient back in its parameter's ``dtype`` (16-bit to float32); written into
    ``out`` where one is given (the memory the parameter's gradient lives in)."""
    if out is None:
        return grad.astype(dtype, copy=False)
    out[...] = grad
    return out


def _cast_node(x: Tensor, array) -> Tensor:
    """The graph node of a cast of ``x`` whose result is ``array``: its gradient goes back to
    x's own dtype (on a GPU, 16-bit to float32 by one kernel: every parameter's
    gradient takes this way at every mixed-precision step, and the kernel costs the host
    less than an astype). A parameter whose gradient lives in memory given to it
    (``grad_buffer``: a data-parallel bucket) gets its first gradient written there by the
    widening itself, with no copy after it."""
    source = x.dtype

    def back_fn(grad):
        out = x.grad_buffer if x.grad is None else None
        if out is not None and (out.shape != grad.shape or out.dtype != source):
            out = None
        return dispatch.choose("widen", widen, grad)(grad, source, out)

    return Tensor(array, args=(x,), back_fns=(back_fn,), name="cast")
