"""The eigendecomposition of general square matrices, as ``torch.linalg.eig`` and ``eigvals``:
A = V diag(L) V^-1 for A (..., n, n) real or complex, batched over the leading axes. The
eigenvalues L (..., n) and eigenvectors V (..., n, n, as columns) are complex (complex64 for
float32 or complex64 A, complex128 otherwise) even where they happen to be real, as torch's.
Each eigenvector has norm 1 and its largest component real (LAPACK's geev, as torch's); it is
still unique only up to a phase e^{i phi}, so a loss must not depend on that phase. The order
of the eigenvalues is LAPACK's (none in particular).

Neither cupy nor cuSOLVER has a general eigensolver: on a GPU the matrices are copied to the
host, decomposed there by numpy and copied back (torch's CUDA eig does the same with MAGMA's
host geev, and likewise waits for the device); the backward runs on the device.

Backward (torch's formula, with its conventions for complex gradients: ``complex_tensor``):

    dA = V^-H (diag(dL) + P(V^H dV) / conj(E)) V^H,   E_ij = L_j - L_i (i != j, else 1)
    P(X) = X - V^H V diag(re diag X)   (the part that a change of phase of V cannot make)

with the eigenvalues' and the eigenvectors' terms from separate gradients (torch writes
diag(dL) over the diagonal when both come at once; they differ by i im(diag V^H dV), zero for
a loss that does not depend on the phases). Where im(diag V^H dV) is not about 0 (|.| > 1e-2,
torch's tolerance) the loss depends on the phases and the backward raises torch's
RuntimeError. A real A gets the real part of dA. The eigenvectors' part is infinite or NaN
where two eigenvalues are equal, as torch's.
"""

from collections import namedtuple

import numpy as np

from tricycle import backend
from tricycle.complex_tensor import result
from tricycle.graph import Node as Tensor
from tricycle.graph import grad_enabled
from tricycle.linalg.matrices import lapack, mT, solve

Eig = namedtuple("Eig", ["eigenvalues", "eigenvectors"])  # torch.return_types.linalg_eig

_COMPLEX_OF = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
    np.dtype(np.complex64): np.dtype(np.complex64),
    np.dtype(np.complex128): np.dtype(np.complex128),
}
PHASE_TOLERANCE = 1e-2  # torch's: im(diag(V^H dV)) beyond it means the loss reads a phase


def _check(op: str, A) -> np.dtype:
    """The complex dtype of ``op``'s results for A; torch's kind of error if A is not a
    batch of square float32/64 or complex64/128 matrices of finite values."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}: A must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(
            f"linalg.{op}: The input tensor A must have at least 2 dimensions, got shape {A.shape}"
        )
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.{op}: A must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices (shape {A.shape})"
        )
    if A.dtype not in _COMPLEX_OF:
        error = NotImplementedError if A.dtype.kind in "fV" else RuntimeError  # half: torch's
        raise error(
            f"linalg.{op}: A must be a float32, float64, complex64 or complex128 tensor, got "
            f"dtype {A.dtype} with shape {A.shape}"
        )
    if not bool(A.xp.isfinite(A.array).all()):  # one boolean read back, as torch's check
        raise RuntimeError(f"linalg.{op}: input tensor should not contain infs or NaNs.")
    return _COMPLEX_OF[A.dtype]


def _on_host(op: str, function, A, dtype):
    """``function`` (numpy's ``eig`` or ``eigvals``) of A's matrices as ``dtype`` arrays on A's
    device: computed on the host, as cupy has no general eigensolver."""
    problem = f"the eigenvalues of A (shape {A.shape}) did not converge"
    out = lapack(op, problem, function, backend.to_host_array(A.array))
    out = out if isinstance(out, tuple) else (out,)
    out = tuple(part.astype(dtype, copy=False) for part in out)
    if backend.is_cupy_array(A.array):
        out = tuple(backend.to_device_array(part, A.array.device.id) for part in out)
    return out


def eig_backward(xp, dL, dV, L, V, real_input: bool):
    """dA of A = V diag(L) V^-1 for the gradients ``dL`` (..., n) or ``dV`` (..., n, n): one
    of them, the other None. The real part for a real A."""
    Vh = mT(V).conj()
    n = L.shape[-1]
    if dV is not None:
        VhdV = Vh @ dV
        phases = xp.diagonal(VhdV, axis1=-2, axis2=-1)
        if not bool((xp.abs(phases.imag) <= PHASE_TOLERANCE).all()):
            raise RuntimeError(
                "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                "multiplication by e^{i phi}. The specified loss function depends on this "
                f"quantity, so it is ill-defined (max |im diag(V^H dV)| = "
                f"{float(xp.abs(phases.imag).max()):.3g} > {PHASE_TOLERANCE})."
            )
        projected = VhdV - Vh @ (V * phases.real[..., None, :])
        Lc = L.conj()
        E = Lc[..., None, :] - Lc[..., :, None] + xp.eye(n, dtype=L.dtype)  # 1 on the diagonal
        with np.errstate(divide="ignore", invalid="ignore"):  # repeated eigenvalues: as torch's
            inner = projected / E
    else:
        inner = dL[..., :, None] * xp.eye(n, dtype=L.dtype)
    dA = solve(Vh, inner @ Vh)
    return dA.real if real_input else dA


def eig(A: Tensor) -> Eig:
    """``(eigenvalues, eigenvectors)`` of A (..., n, n): complex (..., n) and (..., n, n) with
    the eigenvectors as columns, each of norm 1 (see the module)."""
    dtype = _check("eig", A)
    L, V = _on_host("eig", np.linalg.eig, A, dtype)
    xp, real_input = A.xp, A.dtype.kind == "f"

    def dA_of_eigenvalues(dL):
        return eig_backward(xp, dL, None, L, V, real_input).astype(A.dtype, copy=False)

    def dA_of_eigenvectors(dV):
        return eig_backward(xp, None, dV, L, V, real_input).astype(A.dtype, copy=False)

    return Eig(
        result(L, (A,), (dA_of_eigenvalues,), "linalg.eig eigenvalues"),
        result(V, (A,), (dA_of_eigenvectors,), "linalg.eig eigenvectors"),
    )


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of A (..., n, n): complex (..., n), in ``eig``'s order."""
    if isinstance(A, Tensor) and A.requires_grad and grad_enabled():
        return eig(A).eigenvalues  # the backward needs the eigenvectors
    (L,) = _on_host("eigvals", np.linalg.eigvals, A, _check("eigvals", A))
    return A.new(L, requires_grad=False, name="linalg.eigvals")  # a complex Tensor, not a Node


__all__ = ["Eig", "eig", "eig_backward", "eigvals"]
