"""Freed memory stays in the process, so that each training step reuses the last one's.

A step allocates and frees its activations and gradients, tens of megabytes in arrays of up
to a few megabytes each. glibc's malloc gives arrays that large fresh pages from the kernel
(``mmap``) and returns the top of its heap once a few megabytes of it are free, so every step
asks the kernel for the same memory again and touches each new page once: a page fault per
4 KiB, which cost the CPU GPT a fifth of its step (``benchmarks/README.md``). Raising both
thresholds makes malloc keep and reuse what was freed, as PyTorch's caching allocators do on
GPUs. The backend does it before its first kernel runs (``compile.py``); elsewhere than
glibc it does nothing. It changes the process's malloc, never data: the price is that the
process's resident memory stays near its peak.

``fork`` is ``os.fork`` for the children that compile kernels (``compile.py``): Python's
collector in a child walks every object it inherited, writing to each, so the child copies
the parent's whole heap page by page (large where torch is loaded) and compiles slower; the
parent's objects are frozen across the fork (``benchmarks/README.md``).
"""

import ctypes
import ctypes.util
import gc
import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # mallopt's parameters


def keep_freed_memory() -> None:
    """Have glibc's malloc keep freed memory for reuse (arrays up to 32 MiB from its heap, which
    it returns to the kernel only above 1 GiB free)."""
    libc_name = ctypes.util.find_library("c")
    if sys.platform != "linux" or libc_name is None:
        return
    try:
        libc = ctypes.CDLL(libc_name)
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(M_TOP_PAD, 64 << 20)  # grow the heap in steps of 64 MiB
    except (OSError, AttributeError):  # not glibc after all
        pass


def fork() -> int:
    """``os.fork()`` with this process's objects out of the child's collections
    (``gc.freeze``): the child collects only what it allocates; the parent is as before."""
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        raise
    if pid:  # the parent; the child keeps them frozen
        gc.unfreeze()
    return pid
