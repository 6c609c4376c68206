"""How the CPU kernels are compiled: numba's ``njit`` with the on-disk cache.

``jit`` compiles a serial loop, ``parallel_jit`` one whose ``prange`` loop is spread over
numba's threads. Compilation happens at a kernel's first call and is cached on disk
(``cache=True``), so a second process reuses it.
"""

import functools

import numba

jit = functools.partial(numba.njit, cache=True, nogil=True)
parallel_jit = functools.partial(numba.njit, cache=True, nogil=True, parallel=True)
