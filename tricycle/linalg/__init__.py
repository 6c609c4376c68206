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
``cholesky_factor``, ``qr_factors``, ``eigen`` (``eigh``, ``eigvalsh``), ``singular``
(``svd``, ``svdvals``, ``pinv``) and ``norms`` (``vector_norm``, ``matrix_norm``,
``norm``); ``matrices`` holds their checks and helpers, ``tensor_methods`` torch's Tensor
methods (``x.inverse()``, ``x.det()`` ...). A matrix an op cannot take (singular for
``inv`` and ``solve``, not positive-definite for ``cholesky``) raises ``LinAlgError``, a
ValueError, on the CPU and on a GPU alike.
"""

from tricycle.linalg.cholesky_factor import cholesky
from tricycle.linalg.determinant import det, slogdet
from tricycle.linalg.eigen import eigh, eigvalsh
from tricycle.linalg.matrices import LinAlgError
from tricycle.linalg.norms import matrix_norm, norm, vector_norm
from tricycle.linalg.qr_factors import qr
from tricycle.linalg.singular import pinv, svd, svdvals
from tricycle.linalg.systems import inv, matrix_power, solve, solve_triangular

__all__ = [
    "LinAlgError",
    "cholesky",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "matrix_norm",
    "matrix_power",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vector_norm",
]
