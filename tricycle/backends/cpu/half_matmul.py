"""Products with 16-bit floats on the CPU: bfloat16 and float16 through float32 BLAS.

numpy has no BLAS for 16-bit floats: ``np.matmul`` runs float16 in numpy's own loops, and
bfloat16 (ml_dtypes), alone or beside another float, in ml_dtypes' loops, far slower than a
float32 product of the same size. ml_dtypes gives a product of two bfloat16 operands in
float32, so under ``autocast(device_type="cpu", dtype=bfloat16)`` (nanoGPT's,
build-nanogpt's) a layer's activations become float32 after its first product and meet
bfloat16 weights in every product after it: a forward spends most of its time there.

The same product is the BLAS product of the operands widened to float32 (or float64 beside a
float64), exact since every 16-bit float is a float32, given in the reference's dtype:
float16 for two float16 operands (numpy's), else the wider of float32 and the operands'
(ml_dtypes'). Only the order of the sums differs from the reference's, as between two BLAS
libraries.

Registered for "matmul" on the CPU for floating operands of which one at least is 16-bit, any
number of batch axes; the wide product goes to the float32/float64 kernels (``gemm``,
``gemv``) where they apply.
"""

import numpy as np

from tricycle import dispatch

SIXTEEN_BITS = ("bfloat16", "float16")
FLOATS = (*SIXTEEN_BITS, "float32", "float64")


def applies(a, b) -> bool:
    """One operand at least is 16-bit (the registration takes floating operands only, so a
    2-byte one is bfloat16 or float16). Asked on every float32 product: ``itemsize`` is a
    field, where ``dtype.name`` builds a string."""
    return a.dtype.itemsize == 2 or b.dtype.itemsize == 2


def _wide(dtype: np.dtype) -> np.dtype:
    """The dtype BLAS multiplies ``dtype`` in: float32 for a 16-bit float."""
    return np.dtype(np.float32) if dtype.name in SIXTEEN_BITS else dtype


@dispatch.register("matmul", "cpu", dtypes=FLOATS, applies=applies)
def matmul(a, b):
    """``np.matmul(a, b)`` with a 16-bit operand, as a wide product (see the module's doc)."""
    wide = np.result_type(_wide(a.dtype), _wide(b.dtype))
    wide_a, wide_b = a.astype(wide, copy=False), b.astype(wide, copy=False)
    out = dispatch.choose("matmul", np.matmul, wide_a, wide_b)(wide_a, wide_b)
    both_float16 = a.dtype == b.dtype == np.float16
    return out.astype(np.float16) if both_float16 else out
