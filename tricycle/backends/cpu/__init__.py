"""The CPU backend: the fused ops as plain loops compiled by numba.

Each module holds one family of kernels, written as llm.c's reference C is (one loop over
rows, the formula visible, gradients named ``d...``), and registers them in
``tricycle.dispatch`` for the op they speed up. The dispatch imports this package the first
time an op asks for a CPU kernel; importing it compiles nothing (``compile.jit`` compiles a
kernel at its first call and caches it on disk). Without numba this package cannot be
imported and the reference formulas run.
"""

import numba  # noqa: F401 - the dispatch's one line says so when it is missing

import tricycle.backends.cpu.attention  # noqa: F401, E402
import tricycle.backends.cpu.conv  # noqa: F401, E402
import tricycle.backends.cpu.recurrent  # noqa: F401, E402
