"""QR in LAPACK's compact form, as torch's: ``geqrf`` (A = Q R with R on and above the
diagonal of ``a`` and the Householder vectors of Q below it, their scales in ``tau``),
``householder_product`` (``orgqr``: the first n columns of Q from ``(a, tau)``) and
``ormqr`` (Q, or Q^T, times a matrix, on its left or its right, without forming Q).

Q = H_1 H_2 ... H_k, each reflector H_i = I - tau_i v_i v_i^T with v_i = (0, ..., 0, 1,
a[i+1:, i]) (i - 1 zeros, the 1 implicit). ``geqrf`` chooses the reflectors as LAPACK's
``dlarfg`` does: for the column x of the rest of the matrix, beta = -sign(x_1) ||x||,
tau = (beta - x_1) / beta, v = x / (x_1 - beta) (v_1 = 1), and H = I (tau = 0) when x is
already zero below its first entry, so its results are LAPACK's (and torch's) themselves.

Gradients: ``householder_product`` and ``ormqr`` apply the reflectors one at a time with the
engine's differentiable ops (H C = C - tau v (v^T C)), so they have gradients in ``a`` (its
part below the diagonal, the only part read), ``tau`` and the other operand, as torch's;
``geqrf`` has none in torch ("not implemented"): its backward raises torch's
NotImplementedError.
"""

from collections import namedtuple

from tricycle import checks, factories, ops
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, mT

Geqrf = namedtuple("Geqrf", ["a", "tau"])  # torch.return_types.geqrf


def geqrf(input: Tensor) -> Geqrf:  # noqa: A002 - torch's name
    """torch.geqrf: ``(a, tau)`` for A (..., m, n): R on and above a's diagonal, the
    Householder vectors below it, and tau (..., min(m, n)) their scales (LAPACK's layout)."""
    check_matrices("geqrf", input, "input")
    xp = input.xp
    m, n = input.shape[-2:]
    k = min(m, n)
    a = input.array.copy()
    tau = xp.zeros(input.shape[:-2] + (k,), dtype=input.dtype)
    for j in range(k):
        alpha = a[..., j, j].copy()  # (...)
        below = a[..., j + 1 :, j]  # (..., m - j - 1)
        xnorm = xp.sqrt((below * below).sum(-1))
        reflect = xnorm > 0  # else H = I: tau 0, the column left as it is
        beta = -xp.copysign(xp.sqrt(alpha * alpha + xnorm * xnorm), alpha)
        safe_beta = xp.where(reflect, beta, 1)
        tau[..., j] = xp.where(reflect, (beta - alpha) / safe_beta, 0)
        scale = xp.where(reflect, 1 / xp.where(reflect, alpha - beta, 1), 1)
        a[..., j + 1 :, j] = below * scale[..., None]
        a[..., j, j] = xp.where(reflect, beta, alpha)
        if j + 1 < n:  # apply H_j = I - tau v v^T to the columns on its right
            v = xp.concatenate([xp.ones_like(alpha)[..., None], a[..., j + 1 :, j]], axis=-1)
            rest = a[..., j:, j + 1 :]  # (..., m - j, n - j - 1)
            w = (v[..., :, None] * rest).sum(-2)  # v^T rest
            a[..., j:, j + 1 :] = rest - tau[..., j, None, None] * v[..., :, None] * w[..., None, :]

    def refuse(dout):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")

    return Geqrf(
        input.new(a, args=(input,), back_fns=(refuse,), name="geqrf a"),
        input.new(tau, args=(input,), back_fns=(refuse,), name="geqrf tau"),
    )


def _check_tau(op: str, A: Tensor, tau, rows: int) -> int:
    """tau's length k, checked: a Tensor of A's dtype, shape (..., k) with A's batch axes,
    k at most A's columns and ``rows``."""
    if not isinstance(tau, Tensor):
        checks.fail(op, "tau", "a Tensor", tau, TypeError)
    if tau.dtype != A.dtype:
        raise TypeError(f"{op}: tau must have the dtype of input {A.dtype}, got {tau.dtype}")
    if tau.ndim != A.ndim - 1 or tau.shape[:-1] != A.shape[:-2]:
        raise ValueError(
            f"{op}: tau {tau.shape} must be (..., k) with the batch axes {A.shape[:-2]} of "
            f"input {A.shape}"
        )
    k = tau.shape[-1]
    if k > A.shape[-1] or k > rows:
        raise ValueError(
            f"{op}: tau's length {k} must be at most input's columns {A.shape[-1]} and rows "
            f"{rows} (input {A.shape})"
        )
    return k


def _vectors(A: Tensor, k: int) -> Tensor:
    """The reflectors' vectors (..., m, k): a's part below the diagonal, ones on it."""
    m = A.shape[-2]
    eye = A.new(A.xp.eye(m, k, dtype=A.dtype))
    return factories.tril(A[..., :, :k], -1) + eye


def _reflect(V: Tensor, tau: Tensor, C: Tensor, left: bool, transpose: bool) -> Tensor:
    """Q C, Q^T C (``left``) or C Q, C Q^T, Q = H_1 ... H_k given by V (..., m, k) and tau."""
    k = V.shape[-1]
    first_to_last = left == transpose  # Q^T C = H_k ... H_1 C and C Q = C H_1 ... H_k
    for i in range(k) if first_to_last else reversed(range(k)):
        v = V[..., :, i : i + 1]  # (..., m, 1)
        scale = ops.expand_dims(tau[..., i : i + 1], -1)  # (..., 1, 1)
        if left:
            C = C - (v * scale) @ (mT(v) @ C)
        else:
            C = C - ((C @ v) * scale) @ mT(v)
    return C


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product: the first n columns of H_1 ... H_k (an m x n
    matrix with orthonormal columns when the taus are geqrf's) for A (..., m, n), m >= n,
    holding the vectors below its diagonal, and tau (..., k), k <= n."""
    op = "householder_product"
    check_matrices(op, A, "input")
    m, n = A.shape[-2:]
    if m < n:
        checks.fail(op, "input's shape", "(..., m, n) with m >= n", A.shape)
    k = _check_tau(op, A, tau, m)
    eye = A.new(A.xp.broadcast_to(A.xp.eye(m, n, dtype=A.dtype), A.shape))
    return _reflect(_vectors(A, k), tau, eye, left=True, transpose=False)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """torch.orgqr: ``householder_product(input, tau)``."""
    return householder_product(input, tau)


def ormqr(
    input: Tensor,  # noqa: A002 - torch's name
    tau: Tensor,
    other: Tensor,
    left: bool = True,
    transpose: bool = False,
) -> Tensor:
    """torch.ormqr: Q C (Q^T C if ``transpose``; C Q, C Q^T if not ``left``) for C = other
    (..., m, n) and Q = H_1 ... H_k (m x m if ``left``, n x n otherwise) given by geqrf's
    ``(input, tau)``, input (..., m or n, k') and tau (..., k), k <= k'."""
    op = "ormqr"
    checks.boolean(op, "left", left)
    checks.boolean(op, "transpose", transpose)
    check_matrices(op, input, "input")
    check_matrices(op, other, "other")
    if other.dtype != input.dtype:
        raise TypeError(f"{op}: other must have input's dtype {input.dtype}, got {other.dtype}")
    if other.shape[:-2] != input.shape[:-2]:
        raise ValueError(
            f"{op}: other {other.shape} must have the batch axes of input {input.shape}"
        )
    side = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != side:
        raise ValueError(
            f"{op}: input {input.shape} must have {side} rows, other's "
            f"{'rows' if left else 'columns'} (other {other.shape}, left={left})"
        )
    k = _check_tau(op, input, tau, side)
    return _reflect(_vectors(input, k), tau, other, left, transpose)


__all__ = ["Geqrf", "geqrf", "householder_product", "orgqr", "ormqr"]
