"""torch's bit shifts and two integer reductions that tricycle lacked: ``bitwise_left_shift``
and ``bitwise_right_shift`` (``x << n``, ``x >> n``; Tensor methods and their in-place forms in
``tricycle.tensor_rest``), ``nonzero_static`` and ``hash_tensor``.

The shifts take bool or integer tensors (a float one is refused, as torch's ``lshift`` is not
implemented for floats) and Python integers on either side, with torch's promotion; a shift by
the dtype's width or more gives what torch's gives, not C's undefined result: 0 to the left,
and to the right the sign (0, or -1 for a negative value). No gradient, as torch's.
``nonzero_static`` is ``nonzero`` padded (with ``fill_value``) or cut to ``size`` rows, a shape
known ahead; ``hash_tensor`` xor-reduces the elements' bits, each widened to 64 bits (float64
or int64) and read as uint64, as torch's (a uint64 result: no gradient).
"""

import numpy as np

from tricycle import binary, checks
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def _integers(op: str, input, other) -> tuple:  # noqa: A002
    """The two operands as tensors of one bool or integer dtype (torch's promotion)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        checks.fail(op, "input", "a Tensor (or other one)", input, TypeError)
    a = input if isinstance(input, Tensor) else binary.constant(input, other, op)
    b = binary.constant(other, a, op)
    for name, t in (("input", a), ("other", b)):
        if t.dtype.kind not in "biu":
            checks.fail(op, name, "a bool or integer tensor (as torch's)", t.dtype, TypeError)
    dtype = a.xp.result_type(a.array, b.array)
    dtype = np.dtype(np.int64) if dtype == np.bool_ else dtype  # bool << 1 is int64, as torch's
    return a.array.astype(dtype, copy=False), b.array.astype(dtype, copy=False), a


def _shift(name: str, left: bool):
    def shift(input, other) -> Tensor:  # noqa: A002
        x, n, like = _integers(name, input, other)
        xp, bits = like.xp, x.dtype.itemsize * 8
        wide = n >= bits  # C leaves these undefined; torch gives 0 or the sign
        n = xp.where(wide, 0, n).astype(x.dtype)
        if left:
            out = xp.where(wide, 0, xp.left_shift(x, n))
        else:
            sign = xp.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
            out = xp.where(wide, sign, xp.right_shift(x, n))
        return like.new(out.astype(x.dtype, copy=False), requires_grad=False)

    verb = "left (times 2^other)" if left else "right (floor of / 2^other)"
    shift.__name__ = shift.__qualname__ = name
    shift.__doc__ = f"torch.{name}: input's bits shifted {verb}, of bools or integers."
    return shift


bitwise_left_shift = _shift("bitwise_left_shift", True)
bitwise_right_shift = _shift("bitwise_right_shift", False)


def rbitwise_left_shift(other, input) -> Tensor:  # noqa: A002
    """``number << x``: the tensor is the shift (Tensor.__rlshift__)."""
    return bitwise_left_shift(input, other)


def rbitwise_right_shift(other, input) -> Tensor:  # noqa: A002
    """``number >> x``: the tensor is the shift (Tensor.__rrshift__)."""
    return bitwise_right_shift(input, other)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """torch.nonzero_static: ``nonzero``'s int64 ids (size, ndim), the first ``size`` of them,
    rows of ``fill_value`` after the last one."""
    if not isinstance(input, Tensor):
        checks.fail("nonzero_static", "input", "a Tensor", input, TypeError)
    size = checks.integer("nonzero_static", "size", size, 0)
    fill_value = checks.integer("nonzero_static", "fill_value", fill_value)
    xp = input.xp
    ids = xp.argwhere(input.array)[:size].astype(np.int64, copy=False)  # (<= size, ndim)
    out = xp.full((size, input.ndim), fill_value, dtype=np.int64)
    out[: ids.shape[0]] = ids
    return input.new(out, requires_grad=False)


def hash_tensor(input: Tensor, dim=(), *, keepdim: bool = False, mode: int = 0) -> Tensor:  # noqa: A002
    """torch.hash_tensor: the xor of the elements' 64-bit patterns over ``dim`` (every axis by
    default, or for ``()``), a uint64 tensor (see the module's doc); ``mode`` 0 alone, as
    torch's."""
    if not isinstance(input, Tensor):
        checks.fail("hash_tensor", "input", "a Tensor", input, TypeError)
    if mode != 0:
        checks.fail("hash_tensor", "mode", "0 (xor reduction, torch's only mode)", mode)
    xp, array = input.xp, input.array
    every = dim is None or dim == () or dim == []
    axes = tuple(range(input.ndim)) if every else checks.axes("hash_tensor", "dim", dim,
                                                              input.ndim, input.shape)  # fmt: skip
    wide = np.float64 if array.dtype.kind == "f" or array.dtype.name == "bfloat16" else np.int64
    wide = np.uint64 if array.dtype.kind == "u" else wide
    bits = array.astype(wide).view(np.uint64)
    kept = tuple(k for k in range(input.ndim) if k not in axes)
    shape = tuple(1 if k in axes else n for k, n in enumerate(input.shape))
    rows = xp.transpose(bits, kept + axes).reshape(tuple(input.shape[k] for k in kept) + (-1,))
    while rows.shape[-1] > 1:  # pairwise xor folds: log2(n) steps, on numpy or cupy
        if rows.shape[-1] % 2:
            rows = xp.concatenate([rows, xp.zeros(rows.shape[:-1] + (1,), np.uint64)], -1)
        rows = rows[..., 0::2] ^ rows[..., 1::2]
    out = rows[..., 0] if rows.shape[-1] else xp.zeros(rows.shape[:-1], np.uint64)
    return input.new(out.reshape(shape) if keepdim else out, requires_grad=False)
