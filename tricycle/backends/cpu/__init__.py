"""The CPU backend: the fused ops as plain loops compiled by numba.

Each module holds one family of kernels, written as llm.c's reference C is (one loop over
rows, the formula visible, gradients named ``d...``), and registers them in
``tricycle.dispatch`` for the op they speed up. The dispatch imports this package the first
time an op asks for a CPU kernel; importing it compiles nothing (``compile.jit`` compiles a
kernel at its first call and caches it on disk). The matrix products of ``Einsum`` run here
too (``gemm``), so that one pool of threads does all the parallel work (``compile``). Without
numba this package cannot be imported and the reference formulas run. ``set_threads`` sets the
kernels' thread count. ``get_cpu_capability`` is torch.backends.cpu's question.

Inside a kernel, an array is copied into another by a loop (``_copy``, ``unpad_into``), never
by slice assignment (``a[:] = b``): for each one, numba compiles the error path of a shape
mismatch, a large share of the compile time of the kernels that had one (the LSTM's backward,
Winograd's forward: ``benchmarks/README.md``, measured by ``benchmarks/compile_time.py``).
"""

import numba  # noqa: F401 - the dispatch's one line says so when it is missing
import scipy  # noqa: F401 - numba's np.dot (BLAS inside the kernels) needs it

from tricycle.backends.cpu import (  # noqa: F401 - each module registers its kernels
    adam,
    add,
    attention,
    batch_norm,
    conv,
    cross_entropy,
    dropout,
    embedding,
    gelu,
    gemm,
    gemv,  # after gemm: its products of one row take their place
    half_matmul,
    norm,
    pooling,
    recurrent,
    sdpa,
    softmax,
    swiglu,
)
from tricycle.backends.cpu.capability import get_cpu_capability  # noqa: F401 - torch's
from tricycle.backends.cpu.compile import set_threads, thread_count

__all__ = ["set_threads", "thread_count"]
