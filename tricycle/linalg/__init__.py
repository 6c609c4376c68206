"""Linear algebra with gradients, as ``torch.linalg`` (``import tricycle.linalg as LA``)::

    import tricycle.linalg as LA

    L = LA.cholesky(covariance)               # (..., n, n) lower triangular
    z = LA.solve_triangular(L, x, upper=False)  # L^-1 x
    logdet = 2 * L.diagonal(0, -2, -1).log().sum(-1)
    eigenvalues, eigenvectors = LA.eigh(A)    # ascending

Every function works on the last two axes and is batched over the others (two operands
broadcast), with torch's shapes, arguments and gradients; each is one op written with the
tensor's array module (numpy or cupy), its backward the closed-form matrix-calculus one
beside it. The modules, one concern each: ``systems`` (``inv``, ``solve``,
``solve_triangular``, ``matrix_power``), ``determinant`` (``det``, ``slogdet``),
``cholesky_factor``, ``qr_factors``, ``eigen`` (``eigh``, ``eigvalsh``), ``eig``
(``eig``, ``eigvals`` of a general matrix, real or complex: complex results), ``singular``
(``svd``, ``svdvals``, ``pinv``), ``norms`` (``vector_norm``, ``matrix_norm``, ``norm``),
``lu_factors`` (``lu_factor``, ``lu_factor_ex``, ``lu``, written with ``xp``: neither numpy
nor cupy has an LU), ``lu_systems`` (``lu_solve``), ``least_squares`` (``lstsq``),
``exponential`` (``matrix_exp``), ``error_info`` (``cholesky_ex``, ``inv_ex``,
``solve_ex``: an info code instead of an error), ``conditioning`` (``matrix_rank``,
``cond``), ``products`` (``cross``, ``vecdot``, ``multi_dot``), ``structured``
(``vander``, ``diagonal``), ``tensor_equations`` (``tensorinv``, ``tensorsolve``),
``householder`` (``householder_product``, with ``geqrf``, ``orgqr`` and ``ormqr``: QR in
LAPACK's compact form), ``ldl`` (``ldl_factor``, ``ldl_factor_ex``, ``ldl_solve``) and
``lowrank`` (torch's ``svd_lowrank`` and ``pca_lowrank``); ``matmul`` is
``tricycle.matmul``;
``matrices`` holds their checks and helpers, ``tensor_methods`` torch's Tensor methods
(``x.inverse()``, ``x.det()`` ...), ``legacy`` torch's older top-level names and argument
orders (``tricycle.cholesky(A, upper)``, ``lu_solve(b, LU, pivots)``). A matrix an op
cannot take (singular for ``inv``, ``solve`` and ``lu_factor``, not positive-definite for
``cholesky``) raises
``LinAlgError``, a ValueError, on the CPU and on a GPU alike.
"""

from tricycle.linalg.cholesky_factor import cholesky
from tricycle.linalg.conditioning import cond, matrix_rank
from tricycle.linalg.determinant import det, slogdet
from tricycle.linalg.eig import eig, eigvals
from tricycle.linalg.eigen import eigh, eigvalsh
from tricycle.linalg.error_info import cholesky_ex, inv_ex, solve_ex
from tricycle.linalg.exponential import matrix_exp
from tricycle.linalg.householder import householder_product
from tricycle.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from tricycle.linalg.least_squares import lstsq
from tricycle.linalg.lu_factors import lu, lu_factor, lu_factor_ex
from tricycle.linalg.lu_systems import lu_solve
from tricycle.linalg.matrices import LinAlgError
from tricycle.linalg.norms import matrix_norm, norm, vector_norm
from tricycle.linalg.products import cross, multi_dot, vecdot
from tricycle.linalg.qr_factors import qr
from tricycle.linalg.singular import pinv, svd, svdvals
from tricycle.linalg.structured import diagonal, vander
from tricycle.linalg.systems import inv, matrix_power, solve, solve_triangular
from tricycle.linalg.tensor_equations import tensorinv, tensorsolve
from tricycle.torch_functions import matmul

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
