"""The GPU's settings that the math asks for by name: TF32 for float32 products; and which
device is current while an array's device records something (``device_scope``, for the
deferred range checks of ``deferred.py``, which registers the "check_range" setting).

They are not kernels of arrays but states of the device, so they are registered with
``tricycle.dispatch.setting`` in mind: ``tricycle.precision`` asks for "tf32" and
"tf32_enabled" and, without a GPU, runs references that do nothing. cupy comes only from
``tricycle.backend.cupy()``.

TF32 in CuPy (14.x), found by reading its source and checked on the H100 (GPU_NOTES.md):
``CUPY_TF32=1`` is read once, the first time a float32 product asks for its compute type, and
then cached; ``cupy._core.set_compute_type(float32, COMPUTE_TYPE_TF32)`` changes it at any
time for 2-D products (``cupy.dot``/``matmul``/``tensordot`` of 2-D operands, which go through
``cublasGemmEx`` with ``CUBLAS_COMPUTE_32F_FAST_TF32``). Batched products (ndim > 2) use
``cublasGemmStridedBatchedEx`` with the legacy compute type CUDA_R_32F and ignore that
setting; they follow the cuBLAS handle's math mode instead, which ``switch_tf32`` sets to
``CUBLAS_TF32_TENSOR_OP_MATH`` too. (CuPy resets the math mode to the default after every
float16/bfloat16 2-D product, so inside a mixed-precision region the batched float32 products
fall back to full float32.)
"""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.gemm import _COMPUTE_TYPE_TF32, tf32_enabled

# cublas_api.h: CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3
CUBLAS_TF32_TENSOR_OP_MATH = 3
COMPUTE_TYPE_TF32 = _COMPUTE_TYPE_TF32  # cupy/_core/_routines_linalg.pyx (DEFAULT is 1)
TF32_ON = (COMPUTE_TYPE_TF32, CUBLAS_TF32_TENSOR_OP_MATH)
TF32_OFF = (1, 0)  # CuPy's COMPUTE_TYPE_DEFAULT, CUBLAS_DEFAULT_MATH


def tf32_state() -> tuple[int, int]:
    """(CuPy's compute type for float32 products, the current cuBLAS handle's math mode)."""
    cp = backend.cupy()
    handle = cp.cuda.device.get_cublas_handle()
    return cp._core.get_compute_type(np.float32), cp.cuda.cublas.getMathMode(handle)


def switch_tf32(state) -> tuple[int, int]:
    """Set float32 products' TF32 state: ``True`` for TF32 on (``TF32_ON``), ``False`` for
    off (``TF32_OFF``), or a state that an earlier call returned, to restore it. Returns the
    state before."""
    cp = backend.cupy()
    before = tf32_state()
    compute_type, math_mode = TF32_ON if state is True else TF32_OFF if state is False else state
    cp._core.set_compute_type(np.float32, compute_type)
    cp.cuda.cublas.setMathMode(cp.cuda.device.get_cublas_handle(), math_mode)
    return before


class MatmulFlags:
    """torch.backends.cuda.matmul, for a PyTorch script's ``torch.backends.cuda.matmul.
    allow_tf32 = True`` (nanoGPT's first lines): ``allow_tf32`` is the GPU's TF32 switch for
    float32 products (``switch_tf32``), read back from the device; without a GPU, whether the
    float32 matmul precision is below "highest". It and ``tricycle.set_float32_matmul_
    precision`` are one switch, as torch's: True is "high", False "highest". The
    reduced-precision reductions of 16-bit products are torch's flags only: tricycle's 16-bit
    products sum in float32 whatever they say."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        if backend.cupy_available():
            return bool(tf32_enabled())
        return backend.float32_matmul["precision"] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, allowed: bool) -> None:
        if not isinstance(allowed, bool):
            raise TypeError(f"matmul.allow_tf32: expected True or False, got {allowed!r}")
        backend.float32_matmul["precision"] = "high" if allowed else "highest"
        if backend.cupy_available():
            switch_tf32(allowed)


matmul = MatmulFlags()


def device_scope(array):
    """A context in which ``array``'s GPU is the current device."""
    return backend.cupy().cuda.Device(array.device.id)


dispatch.add("tf32", "cuda", switch_tf32, dtypes=())
dispatch.add("tf32_enabled", "cuda", tf32_enabled, dtypes=())
