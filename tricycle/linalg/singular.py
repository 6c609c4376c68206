"""The singular value decomposition, as ``torch.linalg``: ``svd`` (A = U diag(S) V^H for A
(..., m, n), the singular values descending), ``svdvals`` (S alone) and ``pinv`` (the
Moore-Penrose pseudo-inverse, from the SVD), batched over the leading axes.

Backward (the same formula as torch's), with k = min(m, n), U (..., m, k), Vh (..., k, n):

    J = U^T dU - (U^T dU)^T,  K = Vh dVh^T - (Vh dVh^T)^T,  E_ij = S_j^2 - S_i^2 (i != j)
    dA = U (diag(dS) + (J diag(S) + diag(S) K) / E) Vh
         + (I - U U^T) dU diag(S)^-1 Vh          (m > n)
         + U diag(S)^-1 dVh (I - Vh^T Vh)        (m < n)

The singular values' part, U diag(dS) Vh, is finite for any A; the singular vectors' part
is infinite or NaN where two singular values are equal (or, for the extra rows or columns,
zero), as torch's. With ``full_matrices=True`` the gradient reaches A through the first k
columns of U and rows of Vh alone (the others are not unique), as torch's. A loss must not
depend on the signs of the singular vectors, which are arbitrary.

pinv: X = A^+ = V diag(1/S) U^T over the singular values above the cutoff
max(atol, rtol S_max), and (Golub and Pereyra, 1973; for a rank that does not change)

    dA = -X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A)

Complex64/128 matrices (svd, svdvals, pinv) have complex U, Vh, A^+ and real S, and torch's
gradients (``tricycle.complex_tensor``'s convention): every ^T above is then ^H, the
skew-Hermitian parts J - J^H lose their imaginary diagonals, and dU and dVh each add half
of torch's phase term, i im(diag(U^H dU)) / (2S) and -i im(diag(V^H dV)) / (2S) on the
diagonal (their sum is torch's for a loss that does not read the phases). A loss that does
read them (im diag(U^H dU + V^H dV) beyond 1e-2) raises torch's RuntimeError when the
backward pass ends. pinv with ``hermitian`` reads the lower triangle and the real diagonal.
"""

from collections import namedtuple

import numpy as np

from tricycle import backprop, checks
from tricycle.complex_tensor import result
from tricycle.graph import Node as Tensor
from tricycle.graph import grad_enabled
from tricycle.linalg.eig import PHASE_TOLERANCE
from tricycle.linalg.matrices import check_matrices, lapack, mH

SVD = namedtuple("SVD", ["U", "S", "Vh"])  # torch.return_types.linalg_svd


def svd_backward(xp, dU, dS, dVh, U, S, Vh):
    """dA of A = U diag(S) Vh (the reduced decomposition) for the gradients dU, dS, dVh,
    any of them None (no gradient); of a complex A with torch's convention (see the module:
    each of dU and dVh brings half of the phase term)."""
    m, n = U.shape[-2], Vh.shape[-1]
    eye = xp.eye(S.shape[-1], dtype=S.dtype)
    inner = 0 if dS is None else dS[..., None, :] * eye
    if dU is not None or dVh is not None:
        S2 = S * S
        E = S2[..., None, :] - S2[..., :, None]  # E_ij = S_j^2 - S_i^2
        E = E + eye  # the diagonal, where J and K are 0 (or imaginary: the phase term)
        with np.errstate(divide="ignore", invalid="ignore"):  # repeated values: as torch's
            if dU is not None:
                J = mH(U) @ dU
                inner = inner + _off_diagonal(J - mH(J), eye) * S[..., None, :] / E
                inner = inner + _phase_term(xp, J, S, eye)
            if dVh is not None:
                K = Vh @ mH(dVh)
                inner = inner + S[..., :, None] * _off_diagonal(K - mH(K), eye) / E
                inner = inner - _phase_term(xp, K, S, eye)
    dA = U @ inner @ Vh
    if m > n and dU is not None:  # the part of dU outside U's columns
        dU_over_S = dU / S[..., None, :]
        dA = dA + (dU_over_S - U @ (mH(U) @ dU_over_S)) @ Vh
    if m < n and dVh is not None:  # the part of dVh outside Vh's rows
        dVh_over_S = dVh / S[..., :, None]
        dA = dA + U @ (dVh_over_S - (dVh_over_S @ mH(Vh)) @ Vh)
    return dA


def _off_diagonal(X, eye):
    """X without its diagonal (already zero for a real X)."""
    return X * (1 - eye) if X.dtype.kind == "c" else X


def _phase_term(xp, J, S, eye):
    """i im(diag J) / (2 S) on the diagonal (J = U^H dU or V^H dV), 0 for a real J."""
    if J.dtype.kind != "c":
        return 0
    diagonal = xp.diagonal(J, axis1=-2, axis2=-1).imag / (2 * S)
    return 1j * diagonal[..., None, :] * eye


def kept(xp, S, atol, rtol, shape):
    """Which singular values S (..., k) (descending) of matrices of ``shape`` (..., m, n)
    count: those above max(atol, rtol S_max), atol None read as 0 and rtol None as
    eps * max(m, n) (0 when atol is given): pinv's, matrix_rank's and lstsq's rule, as torch's."""
    if rtol is None:
        rtol = np.finfo(S.dtype).eps * max(shape[-2:]) if not atol else 0.0
    largest = S[..., :1] if S.shape[-1] else S  # (..., 1)
    return S > xp.maximum(atol or 0.0, rtol * largest)


def pseudo_inverse(xp, U, S, Vh, mask):
    """V diag(1/S) U^T (..., n, m) of A = U diag(S) Vh over the singular values ``mask``
    keeps."""
    inverse_S = xp.where(mask, 1 / xp.where(mask, S, 1), 0)  # (..., k)
    return (mH(Vh) * inverse_S[..., None, :]) @ mH(U)


def pinv_backward(xp, G, X, a):
    """dA of X = A^+ (..., n, m) for its gradient G, A's matrices ``a`` (..., m, n)."""
    m, n = a.shape[-2:]
    I_m, I_n = xp.eye(m, dtype=X.dtype), xp.eye(n, dtype=X.dtype)
    dA = -mH(X) @ G @ mH(X)
    dA = dA + (I_m - a @ X) @ mH(G) @ X @ mH(X)
    return dA + mH(X) @ X @ mH(G) @ (I_n - X @ a)


def _decompose(op: str, A: Tensor, full_matrices: bool):
    problem = f"the SVD of A (shape {A.shape}) did not converge"
    return lapack(op, problem, A.xp.linalg.svd, A.array, full_matrices)


def svd(A: Tensor, full_matrices: bool = True) -> SVD:
    """``(U, S, Vh)`` with A = U diag(S) Vh for A (..., m, n): U (..., m, m) and Vh
    (..., n, n) (``full_matrices``) or (..., m, k) and (..., k, n), S (..., k) descending,
    k = min(m, n)."""
    check_matrices("svd", A, complex_ok=True)
    checks.boolean("svd", "full_matrices", full_matrices)
    xp = A.xp
    U, S, Vh = _decompose("svd", A, full_matrices)
    k = S.shape[-1]
    Uk, Vhk = U[..., :k], Vh[..., :k, :]  # the columns and rows that have a gradient
    phases = _PhaseCheck(xp) if A.dtype.kind == "c" else None

    def dA_of_U(dU):
        phases is None or phases.add(mH(Uk) @ dU[..., :k])
        return svd_backward(xp, dU[..., :k], None, None, Uk, S, Vhk)

    def dA_of_S(dS):
        return svd_backward(xp, None, dS, None, Uk, S, Vhk)

    def dA_of_Vh(dVh):
        phases is None or phases.add(Vhk @ mH(dVh[..., :k, :]))
        return svd_backward(xp, None, None, dVh[..., :k, :], Uk, S, Vhk)

    if phases is not None:
        return SVD(
            result(U, (A,), (dA_of_U,), "svd U"),
            result(S, (A,), (dA_of_S,), "svd S"),
            result(Vh, (A,), (dA_of_Vh,), "svd Vh"),
        )
    return SVD(
        A.new(U, args=(A,), back_fns=(dA_of_U,), name="svd U"),
        A.new(S, args=(A,), back_fns=(dA_of_S,), name="svd S"),
        A.new(Vh, args=(A,), back_fns=(dA_of_Vh,), name="svd Vh"),
    )


class _PhaseCheck:
    """torch's gauge check of a complex SVD's backward: a loss may not depend on the phases
    e^{i phi} of the singular vectors (U e^{i phi}, V e^{i phi} is as good a decomposition),
    which holds when im diag(U^H dU) + im diag(V^H dV) is about 0. dU and dVh reach their
    back_fns separately: the sum is checked when the backward pass has walked its graph
    (``backprop.queue_callback``), or at once outside one."""

    def __init__(self, xp):
        self.xp, self.total = xp, None

    def add(self, product):
        imaginary = self.xp.diagonal(product, axis1=-2, axis2=-1).imag
        first = self.total is None
        self.total = imaginary if first else self.total + imaginary
        if first:
            try:
                backprop.queue_callback(self.check)
            except RuntimeError:  # no backward pass running (a hand-called back_fn)
                self.check()

    def check(self):
        worst = float(self.xp.abs(self.total).max()) if self.total.size else 0.0
        if worst > PHASE_TOLERANCE:
            raise RuntimeError(
                "svd_backward: The singular vectors in the complex case are specified up to "
                "multiplication by e^{i phi}. The specified loss function depends on this "
                f"phase term, making it ill-defined (max |im diag(U^H dU + V^H dV)| = "
                f"{worst:.3g} > {PHASE_TOLERANCE})."
            )


def svdvals(A: Tensor) -> Tensor:
    """The singular values of A (..., m, n), descending: (..., min(m, n)), real for a complex
    A too. Their gradient is U diag(dS) Vh, from the singular vectors, computed only when it
    is needed (of a complex A, complex: torch's convention, ``tricycle.complex_tensor``)."""
    check_matrices("svdvals", A, complex_ok=True)
    if A.requires_grad and grad_enabled():
        if A.dtype.kind != "c":
            return svd(A, full_matrices=False).S
        U, S, Vh = _decompose("svdvals", A, False)
        back_fn = lambda dS: (U * dS[..., None, :]) @ Vh  # noqa: E731 - U diag(dS) Vh
        return result(S, (A,), (back_fn,), "svdvals")
    problem = f"the SVD of A (shape {A.shape}) did not converge"
    S = lapack("svdvals", problem, lambda a: A.xp.linalg.svd(a, compute_uv=False), A.array)
    return A.new(S, requires_grad=False, name="svdvals")


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The pseudo-inverse A^+ (..., n, m) of A (..., m, n): singular values at most
    max(atol, rtol * the largest) count as zero; rtol is eps * max(m, n) when neither is
    given, 0 when only atol is. ``hermitian``: A is symmetric, and only its lower triangle
    is read (as torch's)."""
    check_matrices("pinv", A, square=hermitian, complex_ok=True)
    checks.non_negative("pinv", "atol", atol, optional=True)
    checks.non_negative("pinv", "rtol", rtol, optional=True)
    checks.boolean("pinv", "hermitian", hermitian)
    xp = A.xp
    a = A.array
    if hermitian:  # the symmetric matrix of its lower triangle
        a = xp.tril(a) + mH(xp.tril(a, -1))
        if a.dtype.kind == "c":  # and a real diagonal (its imaginary part is not read)
            a = a - 1j * xp.eye(a.shape[-1]) * a.imag
    U, S, Vh = lapack("pinv", f"the SVD of A (shape {A.shape}) did not converge",
                      xp.linalg.svd, a, False)  # fmt: skip
    X = pseudo_inverse(xp, U, S, Vh, kept(xp, S, atol, rtol, A.shape))  # (..., n, m)

    def back_fn(G):  # (..., n, m): the formula with A as given (hermitian too), as torch's
        return pinv_backward(xp, G, X, A.array)

    if X.dtype.kind == "c":
        return result(X, (A,), (back_fn,), "pinv")
    return A.new(X, args=(A,), back_fns=(back_fn,), name="pinv")


__all__ = [
    "SVD",
    "kept",
    "pinv",
    "pinv_backward",
    "pseudo_inverse",
    "svd",
    "svd_backward",
    "svdvals",
]
