"""torch.nn.utils.parametrizations.orthogonal: a matrix (or a batch of them, (..., m, n))
kept orthogonal by a parametrization: Q^T Q = I_n when m >= n, Q Q^T = I_m otherwise.

A wide matrix is handled as its transpose, so below Q is tall, (n, k) with n >= k, and X is
the trained original, shaped as Q. The maps, as torch's:

- ``"matrix_exp"`` and ``"cayley"``: A = Y - Y^T is skew-symmetric, where Y is X's lower
  triangle padded with zero columns to (n, n); Q is the first k columns of exp(A)
  (``linalg.matrix_exp``) or of the Cayley map (I - A/2)^-1 (I + A/2) (``linalg.solve``).
- ``"householder"``: Q = H_1 ... H_k (``linalg.householder_product``) from the reflectors
  below X's diagonal, with tau_i = 2 / (1 + ||v_i||^2) (each H_i a true reflection), times
  the signs on X's diagonal (each column times the diagonal entry truncated to an integer:
  torch's ``.int()``; not differentiated, and a step does not move it off +-1 in practice).

The default map is "matrix_exp" for a square matrix, "householder" otherwise.

``use_trivialization=True`` (the default; Lezcano-Casado, 2019) keeps an (n, n) orthogonal
buffer ``base`` (``parametrizations.weight.0.base``) and makes the weight base @ Q: the
right_inverse of a value W stores in ``base`` W itself (square and already orthogonal to
10 n eps), the Q of W's QR with R's diagonal positive (square otherwise) or that of W padded
with random columns (tall: the padding drawn from tricycle's generator, where torch's draws
from its own: compare with torch's weights by copying its ``base``), and returns the original
-I (n, k), which every map sends to I (n, k): the weight starts as base's first k columns.
Without trivialization only "householder" has a right_inverse (from ``geqrf``, as torch's);
"matrix_exp" and "cayley" raise torch's NotImplementedError on an assignment, and at
registration keep the original as it is (the weight is then the map of it).
"""

from tricycle import checks, ops, random
from tricycle.linalg import householder_product, matrix_exp, solve
from tricycle.linalg.householder import geqrf
from tricycle.module import Layer
from tricycle.nn.utils import parametrize
from tricycle.tensor import Tensor, no_grad

__all__ = ["orthogonal"]

MAPS = ("matrix_exp", "cayley", "householder")


def _mT(x: Tensor) -> Tensor:
    """``x`` with its last two axes swapped."""
    return x.transpose(-2, -1)


def _is_orthogonal(Q: Tensor) -> bool:
    """Whether the tall ``Q`` (..., n, k) has orthonormal columns, to torch's tolerance
    (absolute 10 n eps of its dtype, relative 1e-5)."""
    xp, (n, k) = Q.xp, Q.shape[-2:]
    eps = 10.0 * n * float(xp.finfo(Q.dtype).eps)
    product = _mT(Q).array @ Q.array
    return bool(xp.allclose(product, xp.eye(k, dtype=Q.dtype), rtol=1e-5, atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of the tall ``A``'s QR with R's diagonal made non-negative (each column of Q
    times the sign of R's entry), as torch's ``_make_orthogonal``."""
    a, tau = geqrf(A)
    Q = householder_product(a, tau)
    signs = Q.xp.sign(a.array.diagonal(axis1=-2, axis2=-1))[..., None, :]
    return Q.new(Q.array * signs, requires_grad=False)


class _Orthogonal(Layer):
    """The orthogonal parametrization of a tensor shaped ``shape`` (torch's layout), by the
    map ``orthogonal_map``; ``base`` (an (..., n, n) buffer) once a value has been assigned,
    with ``use_trivialization``."""

    def __init__(self, shape: tuple, orthogonal_map: str, use_trivialization: bool = True):
        self.shape = tuple(shape)
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        self.base = None  # set by right_inverse

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X, (n, k) = _mT(X), (k, n)
        if self.orthogonal_map == "householder":
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(axis=-2))
            Q = householder_product(A, tau)
            diagonal = X.array.diagonal(axis1=-2, axis2=-1)
            Q = Q * X.new(X.xp.trunc(diagonal)[..., None, :], requires_grad=False)
        else:
            Y = X.tril()
            if n != k:  # embedded in an (n, n) matrix
                zeros = X.new(X.xp.zeros((*X.shape[:-2], n, n - k), X.dtype), requires_grad=False)
                Y = ops.concatenate([Y, zeros], axis=-1)
            A = Y - _mT(Y)  # skew-symmetric
            if self.orthogonal_map == "matrix_exp":
                Q = matrix_exp(A)
            else:  # the Cayley map (I - A/2)^-1 (I + A/2)
                eye = A.new(A.xp.eye(n, dtype=A.dtype), requires_grad=False)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        if self.base is not None:
            Q = self.base @ Q
        return _mT(Q) if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """The original whose map is ``Q`` (see the module's doc); with trivialization, the
        original -I and ``base`` made from ``Q``."""
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"orthogonal: expected a matrix or batch of matrices of shape {self.shape}, "
                f"got a tensor of shape {tuple(Q.shape)}"
            )
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        shape, xp = Q.shape, Q.xp
        n, k = shape[-2:]
        transposed = n < k
        if transposed:
            Q, (n, k) = _mT(Q), (k, n)
        if not self.use_trivialization:
            if self.orthogonal_map != "householder":
                raise NotImplementedError(
                    "orthogonal: it is not possible to assign to the matrix exponential or "
                    "the Cayley parametrizations when use_trivialization=False"
                )
            a, tau = (t.array for t in geqrf(Q))
            a = a.copy()
            diagonal = xp.sign(a.diagonal(axis1=-2, axis2=-1))
            diagonal = xp.where(tau == 0.0, -diagonal, diagonal)  # LAPACK left it unreflected
            index = xp.arange(k)
            a[..., index, index] = diagonal
            A = Q.new(a, requires_grad=False)
            return _mT(A) if transposed else A
        if n == k:
            base = Q.new(Q.array.copy(), requires_grad=False) if _is_orthogonal(Q) else None
            base = base if base is not None else _make_orthogonal(Q)
        else:  # completed with random columns to an (n, n) matrix
            noise = random.generator().standard_normal((*Q.shape[:-2], n, n - k))
            padded = xp.concatenate([Q.array, xp.asarray(noise, dtype=Q.dtype)], axis=-1)
            base = _make_orthogonal(Q.new(padded, requires_grad=False))
        self.base = base
        minus_eye = xp.zeros(shape, dtype=Q.dtype)
        index = xp.arange(min(n, k))
        minus_eye[..., index, index] = -1.0
        return Q.new(minus_eye, requires_grad=False)

    def extra_repr(self) -> str:
        return f"orthogonal_map={self.orthogonal_map!r}"


def orthogonal(module: Layer, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Layer:  # fmt: skip
    """An orthogonal parametrization of ``module``'s matrix ``name`` (torch's name and
    layout; see the module's doc). ``orthogonal_map``: "matrix_exp", "cayley" or
    "householder" (None: "matrix_exp" for a square matrix, "householder" otherwise).
    ``use_trivialization``: keep the ``base`` buffer (the default). Returns ``module``."""
    owner = "orthogonal"
    weight = parametrize.torch_value(owner, module, name)
    if weight.ndim < 2:
        raise ValueError(
            f"{owner}: expected a matrix or batch of matrices, got a tensor of {weight.ndim} "
            "dimensions"
        )
    checks.boolean(owner, "use_trivialization", use_trivialization)
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square else "householder"
    if orthogonal_map not in MAPS:
        raise ValueError(
            f'{owner}: orthogonal_map has to be one of "matrix_exp", "cayley", "householder"; '
            f"got {orthogonal_map!r}"
        )
    parametrization = _Orthogonal(weight.shape, orthogonal_map, use_trivialization)
    return parametrize.register_parametrization(module, name, parametrization, unsafe=True)
