"""Inverses and linear systems, as ``torch.linalg``: ``inv``, ``solve``, ``solve_triangular``
and ``matrix_power``, batched over the leading axes (broadcast between A and B).

Backwards (gradients named ``d...``, G the output's gradient):

    X = A^-1:      dA = -X^H G X^H
    X = A^-1 B:    dB = A^-H G,   dA = -dB X^H
    X = A^-1 B, A triangular: the same, dA kept to the triangle the solve reads
                   (without its diagonal when A is unitriangular)

``left=False`` (X A = B) is the left solve of the transposes, X^T = A^-T B^T, written with
differentiable transposes; ``matrix_power`` is a product of ``@`` (and ``inv`` for a negative
power), so its gradient is theirs.

``inv``, ``solve`` and ``solve_triangular`` take complex64/128 matrices too (^H the
conjugate transpose, ^T of a real matrix), with torch's convention for complex gradients
(``tricycle.complex_tensor``).
"""

from tricycle import binary, checks
from tricycle.complex_tensor import result
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import batch_shape, check_matrices, lapack, mH, transposed
from tricycle.linalg.matrices import solve as solve_arrays


def inv(A: Tensor) -> Tensor:
    """A^-1 of square (..., n, n) matrices; ``LinAlgError`` if one is singular."""
    check_matrices("inv", A, square=True, complex_ok=True)
    X = lapack("inv", f"the matrices A (shape {A.shape}) are singular", A.xp.linalg.inv, A.array)

    def back_fn(dX):
        return -(mH(X) @ dX @ mH(X))

    return _output(A, X, (A,), (back_fn,), "inv")


def _output(A: Tensor, X, args, back_fns, name: str) -> Tensor:
    """The Tensor of ``X``, an op's result for the matrices A: a complex one through
    ``complex_tensor.result`` (its back_fns written with torch's convention), else A's kind."""
    if X.dtype.kind == "c":
        return result(X, args, back_fns, name)
    return A.new(X, args=args, back_fns=back_fns, name=name)


def _left_solve(op: str, A: Tensor, B: Tensor, a, keep=None) -> Tensor:
    """X = a^-1 B, for ``a`` the matrices of A as the op reads them (..., n, n) and B
    (..., n, k), their leading axes broadcast; ``keep`` maps dA onto the entries read."""
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise ValueError(
            f"{op}: incompatible shapes of A {A.shape} and B {B.shape} for the equation "
            f"AX = B: B must be (..., {n}, k)"
        )
    batch_shape(op, A, B)
    X = lapack(op, f"the matrices A (shape {A.shape}) are singular", solve_arrays, a, B.array)

    def dB_of(dX):  # (..., n, k)
        return binary.unbroadcast(solve_arrays(mH(a), dX), B.shape)

    def dA_of(dX):  # (..., n, n)
        dA = -solve_arrays(mH(a), dX) @ mH(X)
        return binary.unbroadcast(dA if keep is None else keep(dA), A.shape)

    return _output(A, X, (A, B), (dA_of, dB_of), op)


def _is_vector(A: Tensor, B: Tensor) -> bool:
    """Whether torch reads B as vectors: (n,), or A's shape without its last axis."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (``left``) or X A = B, for square A (..., n, n) and B (..., n, k), or
    B (..., n) a batch of vectors (torch's rule: B of shape (n,) or A's shape without its
    last axis); the leading axes broadcast. ``LinAlgError`` if an A is singular."""
    check_matrices("solve", A, square=True, complex_ok=True)
    if not isinstance(B, Tensor):
        checks.fail("solve", "B", "a Tensor", B, TypeError)
    if B.ndim < 1:
        checks.fail("solve", "B's shape", "(..., n) or (..., n, k)", B.shape)
    checks.boolean("solve", "left", left)
    vector = _is_vector(A, B)
    if not left:
        if vector:
            raise ValueError(
                f"solve: B of shape {B.shape} is read as vectors, which left=False does not "
                f"take (for a vector b, x A = b is solve(A^T, b))"
            )
        return transposed(solve(transposed(A), transposed(B)))
    if B.dtype != A.dtype:
        raise TypeError(f"solve: A and B must have one dtype, got {A.dtype} and {B.dtype}")
    if vector:
        return _left_solve("solve", A, B.unsqueeze(-1), A.array).squeeze(-1)  # (complex too)
    check_matrices("solve", B, "B", complex_ok=True)
    return _left_solve("solve", A, B, A.array)


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """X with A X = B (``left``) or X A = B, for A (..., n, n) upper or lower triangular (the
    other triangle is never read; with ``unitriangular`` neither is the diagonal, taken to
    be ones) and B (..., n, k) (or (..., k, n) for ``left=False``), the leading axes
    broadcast; real or complex. A zero on the diagonal is a ``LinAlgError`` (torch returns
    inf or NaN)."""
    op = "solve_triangular"
    check_matrices(op, A, square=True, complex_ok=True)
    check_matrices(op, B, "B", complex_ok=True)
    for name, value in (("upper", upper), ("left", left), ("unitriangular", unitriangular)):
        checks.boolean(op, name, value)
    if B.dtype != A.dtype:
        raise TypeError(f"{op}: A and B must have one dtype, got {A.dtype} and {B.dtype}")
    if not left:  # X A = B: A^T X^T = B^T, and A^T has the other triangle
        X_T = solve_triangular(
            transposed(A), transposed(B), upper=not upper, unitriangular=unitriangular
        )
        return transposed(X_T)
    xp = A.xp
    triangle = xp.triu if upper else xp.tril
    below = 1 if upper else -1  # the first diagonal past the one a unitriangular A skips
    a = triangle(A.array, below) if unitriangular else triangle(A.array)
    if unitriangular:
        a = a + xp.eye(A.shape[-1], dtype=a.dtype)

    def keep(dA):
        return triangle(dA, below) if unitriangular else triangle(dA)

    return _left_solve(op, A, B, a, keep)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n for square A (..., n, n) and an integer n: the identity for n = 0, products of A
    by repeated squaring for n > 0, of A^-1 for n < 0."""
    check_matrices("matrix_power", A, square=True)
    checks.integer("matrix_power", "n", n)
    if n == 0:  # the identity, of gradient zero
        xp = A.xp
        identity = xp.broadcast_to(xp.eye(A.shape[-1], dtype=A.dtype), A.shape).copy()
        return A.new(identity, args=(A,), back_fns=(xp.zeros_like,), name="matrix_power")
    square, result, k = (inv(A) if n < 0 else A), None, abs(n)
    while k:  # the binary digits of |n|, lowest first: square holds base^(2^i)
        if k & 1:
            result = square if result is None else result @ square
        k >>= 1
        if k:
            square = square @ square
    if result is A:  # n = 1: a new tensor, as torch's (writing into it leaves A alone)
        return A.new(A.array.copy(), args=(A,), back_fns=(lambda dout: dout,), name="matrix_power")
    return result


__all__ = ["inv", "matrix_power", "solve", "solve_triangular"]
