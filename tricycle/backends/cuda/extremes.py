"""The smallest and largest of many integer ids folded into a persistent device pair in one
launch (extremes.cu), for the deferred range checks (``deferred.py``): the "fold_extremes"
kernel, whose reference is ``tricycle.ranges.fold_extremes``."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import LABEL_CTYPES, compiled, elementwise_grid, flat_labels


def fold_extremes_enabled(ids, pairs) -> bool:
    """``fold_extremes`` applies: cupy ids and an int64 cupy table."""
    return (
        backend.is_cupy_array(ids)
        and backend.is_cupy_array(pairs)
        and pairs.dtype == np.int64
        and pairs.flags.c_contiguous
    )


@dispatch.register(
    "fold_extremes", "cuda", dtypes=tuple(LABEL_CTYPES), applies=fold_extremes_enabled
)
def fold_extremes_xp(xp, ids, pairs, row: int, ignore: int | None = None) -> None:
    """``tricycle.ranges.fold_extremes``'s signature for the kernel below."""
    fold_extremes(ids, pairs, row, ignore)


def fold_extremes(ids, pairs, row: int, ignore: int | None = None) -> None:
    """pairs[row] = (min(pairs[row, 0], min(ids)), max(pairs[row, 1], max(ids))) over the ids
    that are not ``ignore``, in place and asynchronously (as ``ranges.fold_extremes``)."""
    cp = backend.cupy()
    ids, id_ctype = flat_labels(cp, ids)
    if not ids.size:
        return
    kernel = compiled("extremes.cu", "fold_extremes_kernel", id_ctype)
    kernel(
        (elementwise_grid(ids.size),),
        (256,),
        (ids, np.int64(ids.size), np.int64(0 if ignore is None else ignore),
         np.int32(ignore is not None), pairs, np.int32(row)),
    )  # fmt: skip


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [("extremes.cu", "fold_extremes_kernel", (t,)) for t in LABEL_CTYPES.values()]
