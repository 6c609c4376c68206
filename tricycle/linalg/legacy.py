"""torch's older linear-algebra functions outside ``torch.linalg``, under their names and
argument orders, over this package's functions (``import tricycle as torch`` runs them):

    torch.cholesky(A, upper=False)             linalg.cholesky(A, upper=upper)
    torch.qr(A, some=True)                     linalg.qr(A, "reduced" or "complete")
    torch.lu(A, pivot=True, get_infos=False)   linalg.lu_factor_ex (no error if singular)
    torch.lu_unpack(LU, pivots)                P, L, U of the compact LU
    torch.lu_solve(b, LU, pivots)              linalg.lu_solve(LU, pivots, b)
    torch.triangular_solve(b, A, upper=True)   (linalg.solve_triangular(A, b), A's copy)
    torch.cholesky_solve(B, L, upper=False)    X with L L^T X = B, two triangular solves
    torch.cholesky_inverse(L, upper=False)     (L L^T)^-1
    torch.matrix_exp(A)                        linalg.matrix_exp(A)

Each is a composition of differentiable functions, so each has their gradients. The
functions torch removed in 1.9 (``solve``, ``lstsq``, ``symeig``, ``eig``, ``matrix_rank``)
raise torch's RuntimeError, which says what replaces them (``eig``'s: ``linalg.eig`` and
``linalg.eigvals``, whose results are complex).
"""

from collections import namedtuple

from tricycle import binary, checks, factories
from tricycle.graph import Node as Tensor
from tricycle.linalg.cholesky_factor import cholesky as cholesky_factor
from tricycle.linalg.exponential import matrix_exp
from tricycle.linalg.lu_factors import lu_factor_ex, permutation, rows_of
from tricycle.linalg.lu_systems import lu_solve as lu_systems_solve
from tricycle.linalg.matrices import batch_shape, check_matrices, mT, transposed
from tricycle.linalg.matrices import solve as solve_general
from tricycle.linalg.qr_factors import qr as qr_factors
from tricycle.linalg.systems import solve_triangular

QR = namedtuple("QR", ["Q", "R"])  # torch.return_types.qr
LUUnpack = namedtuple("LUUnpack", ["P", "L", "U"])  # torch.return_types.lu_unpack
TriangularSolve = namedtuple("TriangularSolve", ["solution", "cloned_coefficient"])


def cholesky(A: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky: L (lower, A = L L^T) or U (``upper``, A = U^T U) of A (..., n, n)."""
    checks.boolean("cholesky", "upper", upper)
    return cholesky_factor(A, upper=upper)


def qr(A: Tensor, some: bool = True) -> QR:
    """torch.qr: ``(Q, R)`` of A (..., m, n), reduced (``some``) or complete."""
    checks.boolean("qr", "some", some)
    return QR(*qr_factors(A, "reduced" if some else "complete"))


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """torch.lu: ``(LU, pivots)`` of A (..., m, n), and the infos with ``get_infos`` (the
    first zero on U's diagonal, 1-based, 0 if none): a singular A is factored, no error."""
    checks.boolean("lu", "get_infos", get_infos)
    LU, pivots, infos = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def lu_unpack(
    LU_data: Tensor,  # noqa: N803 - torch's names
    LU_pivots: Tensor,  # noqa: N803
    unpack_data: bool = True,
    unpack_pivots: bool = True,
) -> LUUnpack:
    """torch.lu_unpack: ``(P, L, U)`` with A = P L U from ``lu``'s compact LU (..., m, n) and
    pivots (..., k): L (..., m, k) unit lower triangular, U (..., k, n) upper triangular
    (both differentiable), P (..., m, m). What is not unpacked is an empty tensor, as torch's."""
    op = "lu_unpack"
    check_matrices(op, LU_data, "LU_data")
    checks.boolean(op, "unpack_data", unpack_data)
    checks.boolean(op, "unpack_pivots", unpack_pivots)
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    pivots = LU_pivots.array if isinstance(LU_pivots, Tensor) else None
    if pivots is None or pivots.dtype.kind not in "iu" or pivots.shape != LU_data.shape[:-2] + (k,):
        raise ValueError(
            f"{op}: LU_pivots must be integers of shape {LU_data.shape[:-2] + (k,)} (lu's "
            f"pivots of LU_data {LU_data.shape}), got {getattr(LU_pivots, 'shape', LU_pivots)!r}"
        )
    if pivots.size and not bool(((pivots >= 1) & (pivots <= m)).all()):
        raise ValueError(f"{op}: LU_pivots must lie in [1, {m}] (1-based rows), got some outside")
    xp, empty = LU_data.xp, LU_data.new(LU_data.xp.zeros(0, dtype=LU_data.dtype))
    P = empty
    if unpack_pivots:
        P = LU_data.new(permutation(xp, rows_of(xp, pivots, m), LU_data.dtype))
    if not unpack_data:
        return LUUnpack(P, empty, empty)
    eye = LU_data.new(xp.eye(m, k, dtype=LU_data.dtype))
    L = factories.tril(LU_data[..., :, :k], -1) + eye  # (..., m, k)
    U = factories.triu(LU_data[..., :k, :])  # (..., k, n)
    return LUUnpack(P, L, U)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """torch.lu_solve: X with A X = b, A given by ``lu``'s ``(LU_data, LU_pivots)``."""
    return lu_systems_solve(LU_data, LU_pivots, b)


def triangular_solve(
    b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
) -> TriangularSolve:
    """torch.triangular_solve: ``(X, A's copy)`` with A X = b (A^T X = b if ``transpose``),
    A (..., n, n) upper (or lower) triangular, its diagonal taken as ones if ``unitriangular``."""
    checks.boolean("triangular_solve", "transpose", transpose)
    checks.boolean("triangular_solve", "upper", upper)
    coefficient = transposed(A) if transpose else A  # A^T has the other triangle
    X = solve_triangular(coefficient, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolve(X, A.clone())


def _factor_solve(op: str, B: Tensor, L: Tensor, upper: bool) -> Tensor:
    """X with A X = B for A = L L^T (or U^T U if ``upper``), L's one triangle read.

    Backward, as torch's (L as given, both triangles: the gradient of A = L L^T for a full
    L), with G_B = A^-1 G and C = G_B X^T + X G_B^T: dB = G_B, dL = -C L (-U C if upper)."""
    checks.boolean(op, "upper", upper)
    check_matrices(op, L, "L", square=True)
    check_matrices(op, B, "B")
    if B.dtype != L.dtype:
        raise TypeError(f"{op}: B and L must have one dtype, got {B.dtype} and {L.dtype}")
    if B.shape[-2] != L.shape[-1]:
        raise ValueError(f"{op}: B {B.shape} must be (..., {L.shape[-1]}, k) for L {L.shape}")
    batch_shape(op, B, L)
    xp = L.xp
    l = xp.triu(L.array) if upper else xp.tril(L.array)  # noqa: E741
    first, second = (mT(l), l) if upper else (l, mT(l))  # A = first @ second

    def inverse_times(C):  # A^-1 C
        return solve_general(second, solve_general(first, C))

    X = inverse_times(B.array)

    def dB_of(G):
        return binary.unbroadcast(inverse_times(G), B.shape)

    def dL_of(G):
        dB = inverse_times(G)
        C = dB @ mT(X) + X @ mT(dB)
        return binary.unbroadcast(-(L.array @ C if upper else C @ L.array), L.shape)

    return L.new(X, args=(B, L), back_fns=(dB_of, dL_of), name=op)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """torch.cholesky_solve: X with A X = B, A = L L^T given by its Cholesky factor L
    (..., n, n) (U with A = U^T U if ``upper``), B (..., n, k), the leading axes broadcast."""
    return _factor_solve("cholesky_solve", B, L, upper)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """torch.cholesky_inverse: A^-1 for A = L L^T given by L (..., n, n) (A = U^T U if
    ``upper``): ``cholesky_solve`` of the identity, whose gradient is torch's."""
    check_matrices("cholesky_inverse", L, "L", square=True)
    eye = L.new(L.xp.eye(L.shape[-1], dtype=L.dtype))
    return _factor_solve("cholesky_inverse", eye, L, upper)


def _removed(name: str, message: str):
    def removed(*args, **kwargs):
        raise RuntimeError(
            f"This function was deprecated since version 1.9 and is now removed.{message}"
        )

    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = f"torch.{name}: removed in torch 1.9; raises torch's RuntimeError."
    return removed


solve = _removed(
    "solve",
    " `tricycle.solve` is deprecated in favor of `tricycle.linalg.solve`. `tricycle.linalg.solve` "
    "has its arguments reversed and does not return the LU factorization.\n\nTo get the LU "
    "factorization see `tricycle.lu`, which can be used with `tricycle.lu_solve` or "
    "`tricycle.lu_unpack`.\nX = tricycle.solve(B, A).solution should be replaced with:\n"
    "X = tricycle.linalg.solve(A, B)",
)
lstsq = _removed(
    "lstsq",
    " `tricycle.lstsq` is deprecated in favor of `tricycle.linalg.lstsq`.\n`tricycle.linalg.lstsq` "
    "has reversed arguments and does not return the QR decomposition in the returned tuple "
    "(although it returns other information about the problem).\n\nTo get the QR decomposition "
    "consider using `tricycle.linalg.qr`.\n\nThe returned solution in `tricycle.lstsq` stored "
    "the residuals of the solution in the last m - n columns of the returned value whenever "
    "m > n. In tricycle.linalg.lstsq, the residuals are in the field 'residuals' of the returned "
    "named tuple.\n\nThe unpacking of the solution, as in\nX, _ = tricycle.lstsq(B, A).solution"
    "[:A.size(1)]\nshould be replaced with:\nX = tricycle.linalg.lstsq(A, B).solution",
)
symeig = _removed(
    "symeig",
    " The default behavior has changed from using the upper triangular portion of the matrix by "
    "default to using the lower triangular portion.\n\nL, _ = tricycle.symeig(A, upper=upper) "
    "should be replaced with:\nL = tricycle.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\n"
    "and\n\nL, V = tricycle.symeig(A, eigenvectors=True) should be replaced with:\n"
    "L, V = tricycle.linalg.eigh(A, UPLO='U' if upper else 'L')",
)
eig = _removed(
    "eig",
    " `tricycle.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
    "real tensors mimicking complex tensors.\n\nL, _ = tricycle.eig(A) should be replaced with:\n"
    "L_complex = tricycle.linalg.eigvals(A)\n\nand\n\nL, V = tricycle.eig(A, eigenvectors=True) "
    "should be replaced with:\nL_complex, V_complex = tricycle.linalg.eig(A)",
)
matrix_rank = _removed(
    "matrix_rank",
    "\nPlease use the `tricycle.linalg.matrix_rank` function instead. The parameter 'symmetric' "
    "was renamed in `tricycle.linalg.matrix_rank()` to 'hermitian'.",
)

__all__ = [
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "eig",
    "lstsq",
    "lu",
    "lu_solve",
    "lu_unpack",
    "matrix_exp",
    "matrix_rank",
    "qr",
    "solve",
    "symeig",
    "triangular_solve",
]
