"""What the ops of ``tricycle.linalg`` share: the checks of their inputs (a floating tensor of
matrices on its last two axes, square where the op needs it), ``LinAlgError`` for a matrix an
op cannot take, ``lapack`` (a call of ``xp.linalg`` that fails with that error, on either
device), ``first_failure`` (the first matrix an op could not take, from its info codes)
and the array helpers of the backwards: ``mT`` (the last two axes swapped), ``mH`` (and
conjugated) and
``solve`` (A^-1 B with the leading axes broadcast, which cupy's solve does not do itself),
and ``transposed``, the differentiable transpose of a Tensor's matrices.

Every op reads its arrays with the tensor's array module ``xp`` (numpy or cupy) and calls
only functions both ``numpy.linalg`` and ``cupy.linalg`` have, each batched over the leading
axes: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, ``qr``, ``eigh``, ``eigvalsh``
and ``svd``. numpy has no triangular solve: a triangular system is solved by the general one.
"""

import numpy as np

from tricycle import backend, checks, ops
from tricycle.graph import Node as Tensor


class LinAlgError(ValueError):
    """A matrix an op cannot take: singular where the op needs an inverse, not
    positive-definite for a Cholesky factor (``torch.linalg.LinAlgError``; a ValueError)."""


def dense_matrix(A):
    """A sparse COO or CSR matrix as its dense one (``to_dense()``, differentiable to its
    values), for the ops torch gives sparse inputs (lobpcg, svd_lowrank); anything else as is."""
    sparse = getattr(A, "is_sparse", False) is True or getattr(A, "is_sparse_csr", False) is True
    return A.to_dense() if sparse else A


_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX_OK = _REAL + (np.dtype(np.complex64), np.dtype(np.complex128))


def check_matrices(op: str, A, name: str = "A", square: bool = False, complex_ok=False) -> Tensor:
    """``A`` if it is a float32 or float64 Tensor (or complex64/128 where ``complex_ok``) with
    at least 2 axes (matrices on the last two), square ones if ``square``; a TypeError or
    ValueError naming ``op`` otherwise."""
    if not isinstance(A, Tensor):
        checks.fail(op, name, "a Tensor", A, TypeError)
    allowed = _COMPLEX_OK if complex_ok else _REAL
    if A.dtype not in allowed:  # LAPACK and cuSOLVER take these (and their complex ones)
        kinds = "float32, float64, complex64 or complex128" if complex_ok else "float32 or float64"
        raise TypeError(
            f"{op}: {name} must be a {kinds} tensor, got dtype {A.dtype} with shape {A.shape}"
        )
    if A.ndim < 2:
        expected = "(..., m, n): matrices on the last two axes"
        checks.fail(op, f"{name}'s shape", expected, A.shape)
    if square and A.shape[-1] != A.shape[-2]:
        expected = "(..., n, n): square matrices on the last two axes"
        checks.fail(op, f"{name}'s shape", expected, A.shape)
    return A


def lapack(op: str, problem: str, function, *arrays):
    """``function(*arrays)`` (an ``xp.linalg`` call) that raises ``LinAlgError`` naming ``op``
    and ``problem`` when the matrices cannot be factored: numpy raises, cupy returns inf or
    NaN in silence (the check reads one boolean back from the device, as torch's does)."""
    try:
        out = function(*arrays)
    except np.linalg.LinAlgError:  # cupy.linalg.LinAlgError is numpy's
        raise LinAlgError(f"{op}: {problem}") from None
    first = out[0] if isinstance(out, tuple) else out
    xp = backend.array_module(first)
    inputs = [a for a in arrays if hasattr(a, "shape")]  # the matrices, not the options
    if not bool(xp.isfinite(first).all()) and all(bool(xp.isfinite(a).all()) for a in inputs):
        raise LinAlgError(f"{op}: {problem}")
    return out


def first_failure(info):
    """``(index, code)`` of the first matrix whose ``info`` (an int array of the batch shape,
    0 where the op succeeded) is not 0, or None: one value read back from a device."""
    failed = backend.array_module(info).reshape(info, -1) > 0
    if not bool(failed.any()):
        return None
    first = int(failed.argmax())
    index = tuple(int(i) for i in np.unravel_index(first, info.shape))
    return index, int(info.reshape(-1)[first])


def mT(a):  # noqa: N802 - torch's name
    """The matrices of ``a`` (..., m, n) transposed: (..., n, m)."""
    return a.swapaxes(-1, -2)


def mH(a):  # noqa: N802 - torch's name
    """The conjugate transposes of the matrices of ``a`` (..., m, n): (..., n, m); ``mT`` of
    real ones."""
    return a.swapaxes(-1, -2).conj() if a.dtype.kind == "c" else a.swapaxes(-1, -2)


def solve(a, b):
    """a^-1 b for (..., n, n) ``a`` and (..., n, k) ``b``, their leading axes broadcast."""
    xp = backend.array_module(a)
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, lead + a.shape[-2:])
    b = xp.broadcast_to(b, lead + b.shape[-2:])
    return xp.linalg.solve(a, b)


def transposed(x: Tensor) -> Tensor:
    """``x.mT`` of a Tensor, differentiable: its last two axes swapped (of a complex one too,
    through its method)."""
    return x.swapaxes(-1, -2) if x.dtype.kind == "c" else ops.swapaxes(x, -1, -2)


def batch_shape(op: str, A: Tensor, B: Tensor) -> tuple[int, ...]:
    """The broadcast leading axes of ``A`` and ``B``; a ValueError naming ``op`` if they do
    not broadcast."""
    try:
        return np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{op}: the leading (batch) axes of A {A.shape} and B {B.shape} do not broadcast"
        ) from None


__all__ = [
    "LinAlgError",
    "batch_shape",
    "check_matrices",
    "first_failure",
    "lapack",
    "mH",
    "mT",
    "solve",
    "transposed",
]
