"""torch.Tensor.random_: integers drawn uniformly into a tensor of any dtype, in place.

Beside ``tensor_inplace``'s float fills (``normal_``, ``uniform_``, ``exponential_``), which it
follows: it writes only off the graph (a constant, or a parameter under ``no_grad()``), and
draws on the host from tricycle's generator (``tricycle.manual_seed`` repeats it) or a numpy
``generator``. ``Tensor.random_`` imports this module on its first call
(``tensor_torch.imported``). Without bounds the integers run from 0 to the largest one the
dtype holds exactly, as torch's: 2^24 for float32 (every integer up to it has its own float),
the dtype's maximum for an integer dtype, 1 for bool.
"""

import numpy as np

from tricycle import backend, checks
from tricycle import random as tricycle_random
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def exact_integers(dtype: np.dtype) -> tuple[int, int]:
    """The lowest and the highest integer of ``dtype`` between which every one is exact."""
    if dtype == np.bool_:
        return 0, 1
    if backend.is_float(dtype):  # up to 2^(the significand's bits, the hidden one with them)
        top = 2 ** (8 if dtype.name == "bfloat16" else np.finfo(dtype).nmant + 1)
        return -top, top
    return int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)


def random_(x: Tensor, from_=None, to=None, *, generator=None) -> Tensor:
    """torch.Tensor.random_: integers drawn uniformly from [from_, to - 1], written into x;
    ``random_(to)`` draws from [0, to - 1], ``random_()`` from 0 to the largest integer the
    dtype holds exactly. ``from`` is named ``from_`` here (a Python keyword)."""
    op, (lowest, highest) = "Tensor.random_", exact_integers(x.dtype)
    if to is None:  # random_() or random_(to)
        from_, to = 0, highest + 1 if from_ is None else from_
    low = checks.integer(op, "from", from_, lowest)
    if checks.integer(op, "to", to, low + 1) - 1 > highest:
        checks.fail(op, "to", f"at most {highest + 1} for {x.dtype}", to)
    x._writable("random_", "tricycle.randint")
    kind = np.uint64 if to > 2**63 else np.int64  # uint64's largest does not fit an int64
    drawn = tricycle_random.given_or_ours(op, generator)
    values = drawn.integers(low, to - 1, x.shape, dtype=kind, endpoint=True)
    return x._write("random_", values.astype(x.dtype))
