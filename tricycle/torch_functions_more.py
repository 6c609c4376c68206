"""More of torch's top-level functions, each a thin call of a Tensor method or a
``tricycle.linalg`` function (``tricycle.torch_functions`` and ``torch_math`` hold the others):

- the comparisons ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` (booleans, broadcasting: the
  operators'), and the bitwise ops ``bitwise_and``, ``bitwise_or``, ``bitwise_xor`` and
  ``bitwise_not`` (``tricycle.pointwise``'s);
- ``square`` and ``neg``: the Tensor methods as functions (x * x, -x; d2l's optimizers from
  scratch write ``torch.square(p.grad)``);
- ``cross(input, other, dim=None)``: torch's, whose ``dim`` left out is the first axis of
  length 3 (torch's deprecated default; ``tricycle.linalg.cross`` takes the last);
- ``svd(input, some=True, compute_uv=True)``: torch's older SVD, ``(U, S, V)`` with
  ``input = U diag(S) V^T`` (V, not ``linalg.svd``'s Vh), reduced unless ``some=False``; without
  ``compute_uv`` U and V are zeros, as torch's;
- ``meshgrid(*tensors, indexing="ij")``: torch's coordinate grids, each input (1-d, or 0-d)
  laid along its own axis and broadcast to the grid's shape (``"xy"`` swaps the first two
  axes, as numpy's); each grid's gradient sums back into its input;
- ``sort(input, dim=-1, descending=False, stable=False)``: torch's, the ``(values, indices)``
  of ``input`` sorted along ``dim`` (``tricycle.ops.sort`` gives the values alone, and is what
  ``Tensor.sort`` is); the values' gradient goes back to where each came from, the indices
  have none. Always stable: equal values keep their order, as torch's ``stable=True``;
- ``isfinite``, ``isnan``, ``isinf``: the Tensor methods as functions, and ``transpose(input,
  dim0, dim1)``, torch's (two axes swapped), as ``Tensor.transpose`` (which takes numpy's
  permutation too: ``transpose(x, (1, 0, 2))``, or none to reverse the axes);
- ``set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)``: a
  tensor prints its numpy (or cupy) array, so these set numpy's print options, for every
  array the process prints (``sci_mode=False`` is numpy's ``suppress=True``); ``profile``
  ("default", "short", "full") starts from numpy's defaults, as torch's from its own;
- ``broadcast_to(input, size)``: ``Tensor.broadcast_to``, torch's name for ``expand`` to a
  sequence of sizes (-1 keeps an axis); the gradient sums back over the stretched axes;
- ``range(start, end, step=1)``: torch's deprecated range, ``start``, ``start + step``, ... up
  to ``end`` *included*, float32 unless ``dtype`` says (integers too: torch's default dtype);
  it warns as torch's does (``arange`` stops before ``end``: what both libraries advise).
"""

import importlib
import math
import warnings
from collections import namedtuple

import numpy as np

from tricycle import checks, ops
from tricycle.torch_functions import no_out, tensor, tensor_input
from tricycle.torch_math import _elementwise

SVD = namedtuple("svd", "U S V")
Sort = namedtuple("sort", "values indices")  # as torch.return_types.sort

eq = _elementwise("eq", "booleans, True where input == other (broadcast)", True)
ne = _elementwise("ne", "booleans, True where input != other (broadcast)", True)
lt = _elementwise("lt", "booleans, True where input < other (broadcast)", True)
le = _elementwise("le", "booleans, True where input <= other (broadcast)", True)
gt = _elementwise("gt", "booleans, True where input > other (broadcast)", True)
ge = _elementwise("ge", "booleans, True where input >= other (broadcast)", True)
bitwise_and = _elementwise("bitwise_and", "input & other, of booleans or integers", True)
bitwise_or = _elementwise("bitwise_or", "input | other, of booleans or integers", True)
bitwise_xor = _elementwise("bitwise_xor", "input ^ other, of booleans or integers", True)
bitwise_not = _elementwise("bitwise_not", "~input, of booleans or integers")
square = _elementwise("square", "input * input, elementwise")
neg = _elementwise("neg", "-input, elementwise")


def cross(input, other, dim=None, *, out=None):  # noqa: A002 - torch's names
    """torch.cross: the cross product of the 3-vectors on the axis ``dim`` of ``input`` and
    ``other``; without ``dim``, the first axis of length 3 (see the module's doc)."""
    linalg = importlib.import_module("tricycle.linalg")  # loaded on the call, as Tensor's
    no_out("cross", out)
    a, b = tensor_input("cross", input), tensor_input("cross", other, "other")
    if dim is None:
        dim = next((i for i, n in enumerate(a.shape) if n == 3), -1)  # linalg.cross says why not
    return linalg.cross(a, b, dim=dim)


def svd(input, some: bool = True, compute_uv: bool = True, *, out=None):  # noqa: A002
    """torch.svd: ``(U, S, V)`` with input = U diag(S) V^T, reduced unless ``some=False``."""
    linalg = importlib.import_module("tricycle.linalg")  # loaded on the call, as Tensor's
    no_out("svd", out)
    U, S, Vh = linalg.svd(tensor_input("svd", input), full_matrices=not some)
    V = Vh.swapaxes(-2, -1)
    if not compute_uv:
        return SVD(U.new(U.xp.zeros_like(U.array)), S, V.new(V.xp.zeros_like(V.array)))
    return SVD(U, S, V)


def meshgrid(*tensors, indexing: str = "ij"):
    """torch.meshgrid: a tuple of grids, one per input (given as arguments or one list), the
    k-th input's values along axis k of the shape ``(len(t0), len(t1), ...)`` (see above)."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    xs = [tensor_input("meshgrid", t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not xs or any(x.ndim > 1 for x in xs):
        shapes = [tuple(x.shape) for x in xs]
        raise ValueError(f"meshgrid: expected one or more 0-d or 1-d tensors, got shapes {shapes}")
    axes = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(xs)
    for x, axis in zip(xs, axes):
        shape[axis] = x.numel()
    grids = []
    for x, axis in zip(xs, axes):
        view = [1] * len(xs)
        view[axis] = -1
        grids.append(x.reshape(view).expand(*shape))  # (n0, n1, ...)
    return tuple(grids)


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False, *, out=None):  # noqa: A002
    """torch.sort: ``(values, indices)`` of ``input`` sorted along ``dim`` (see above)."""
    no_out("sort", out)
    x = tensor_input("sort", input)
    checks.boolean("sort", "stable", stable)
    return Sort(ops.sort(x, dim, descending), ops.argsort(x, dim, descending))


def transpose(input, *dims):  # noqa: A002
    """torch.transpose: ``input`` with the axes ``dim0`` and ``dim1`` swapped (see above)."""
    return tensor_input("transpose", input).transpose(*dims)


def isfinite(input):  # noqa: A002 - torch's name
    """torch.isfinite: booleans, True where ``input`` is neither inf nor nan."""
    return tensor_input("isfinite", input).isfinite()


def isnan(input):  # noqa: A002
    """torch.isnan: booleans, True where ``input`` is nan."""
    return tensor_input("isnan", input).isnan()


def isinf(input):  # noqa: A002
    """torch.isinf: booleans, True where ``input`` is inf or -inf."""
    return tensor_input("isinf", input).isinf()


def inclusive_range(
    start, end, step=1, *, out=None, dtype=None, device=None, requires_grad: bool = False
):
    """torch.range (``tricycle.range``; named apart from Python's ``range``, which this module
    uses): from ``start`` to ``end`` included, in steps of ``step`` (see above)."""
    no_out("range", out)
    warnings.warn(
        "tricycle.range is deprecated, as torch.range is: use tricycle.arange, which stops "
        "before end",
        UserWarning,
        stacklevel=2,
    )
    for name, value in (("start", start), ("end", end), ("step", step)):
        checks.real("range", name, value)
    if step == 0 or (end - start) * step < 0:
        raise ValueError(
            f"range: step {step} must be non-zero and lead from start {start} to end {end}"
        )
    values = start + step * np.arange(math.floor((end - start) / step) + 1, dtype=np.float64)
    dtype = np.float32 if dtype is None else dtype
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


_PROFILES = {  # torch's profiles, on numpy's default precision and line width
    "default": {"precision": 8, "threshold": 1000, "edgeitems": 3, "linewidth": 75},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 75},
    "full": {"precision": 8, "threshold": math.inf, "edgeitems": 3, "linewidth": 75},
}


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
) -> None:
    """torch.set_printoptions: how tensors print, as numpy's print options (see above)."""
    if profile is not None and profile not in _PROFILES:
        expected = f"one of {list(_PROFILES)}"
        raise ValueError(f"set_printoptions: profile must be {expected}, got {profile!r}")
    options = dict(_PROFILES[profile]) if profile else {}
    given = dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth)
    options.update({key: value for key, value in given.items() if value is not None})
    if sci_mode is not None:
        options["suppress"] = not sci_mode
    threshold = options.get("threshold")
    if threshold is not None and threshold == math.inf:
        options["threshold"] = np.iinfo(np.int64).max  # numpy's "never summarise"
    np.set_printoptions(**options)


def broadcast_to(input, size):  # noqa: A002 - torch's names
    """torch.broadcast_to: ``input`` broadcast to ``size`` (``Tensor.broadcast_to``)."""
    return tensor_input("broadcast_to", input).broadcast_to(size)
