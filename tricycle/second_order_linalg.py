"""Double backward of the decompositions (``create_graph=True``: ``tricycle.second_order``):
``eigh`` (and ``eigvalsh``, which goes through it when a gradient is needed), ``svd`` (and a
real ``svdvals``), ``qr``, ``pinv``, ``lstsq`` and ``matrix_exp``.

A decomposition cannot be rebuilt from differentiable ops, so each rule writes its op's
first backward again with ops on the saved factors, made differentiable outputs of A here
(``_factors``): nodes of A holding the same arrays, whose back_fns are the op's formulas
again (and have these same rules, so that every order goes through them):

- eigh, A = Q diag(l) Q^T: dA = Q (diag(dl) + skew(Q^T dQ) / (l_j - l_i)) Q^T;
- svd, A = U diag(S) Vh: dA = U (diag(dS) + (J - J^T) S_j / E + S_i (K - K^T) / E) Vh with
  J = U^T dU, K = Vh dVh^T, E_ij = S_j^2 - S_i^2, plus the parts of dU, dVh outside U's
  columns, Vh's rows (a non-square A);
- qr, A = Q R: dA = (dQ + Q copyltu(R dR^T - dQ^T Q)) R^-T (a wide A: its first m columns so,
  the rest Q dR2);
- pinv, X = A^+: dA = -X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A);
- lstsq, X = A^+ B: pinv's dA for G B^T, dB = A^+^T G, with A^+ a node of A; its residuals
  |A X - B|^2 (full column rank only): dA = 2 (R g) X^T, dB = -2 R g, R = A X - B;
- matrix_exp: dA = exp([[A^T, G], [0, A^T]])[:n, n:], a matrix_exp again.

The ops sit in the math layer, above this engine module: they are loaded by name when the
table is built or a rule runs. Real matrices only (the first-order ops are real there).
"""

import importlib

from tricycle.second_order_base import cell, constant, summed_to

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _module(name):
    return importlib.import_module(f"tricycle.linalg.{name}")


def _t(x):
    from tricycle.ops import swapaxes

    return swapaxes(x, -1, -2)


def _eye(like, n):
    return constant(like, like.xp.eye(n, dtype=like.dtype))


def _row(v):  # (..., k) -> (..., 1, k)
    return v.reshape(*v.shape[:-1], 1, v.shape[-1])


def _column(v):  # (..., k) -> (..., k, 1)
    return v.reshape(*v.shape, 1)


# ------------------------------------------------------------------ the factors as nodes
def _eigh_factors(A, eigenvalues, Q):
    """(l, Q) of eigh as nodes of A whose back_fns are eigh's formula."""
    xp, backward = A.xp, _module("eigen").eigh_backward

    def dA_of_eigenvalues(dlambda):
        return backward(xp, dlambda, None, eigenvalues, Q)

    def dA_of_eigenvectors(dQ):
        return backward(xp, None, dQ, eigenvalues, Q)

    return (
        A.new(eigenvalues, args=(A,), back_fns=(dA_of_eigenvalues,), name="eigh eigenvalues"),
        A.new(Q, args=(A,), back_fns=(dA_of_eigenvectors,), name="eigh eigenvectors"),
    )


def _svd_factors(A, Uk, S, Vhk):
    """(U, S, Vh) of the reduced svd as nodes of A whose back_fns are svd's formula."""
    xp, backward, k = A.xp, _module("singular").svd_backward, S.shape[-1]

    def dA_of_U(dU):
        return backward(xp, dU[..., :k], None, None, Uk, S, Vhk)

    def dA_of_S(dS):
        return backward(xp, None, dS, None, Uk, S, Vhk)

    def dA_of_Vh(dVh):
        return backward(xp, None, None, dVh[..., :k, :], Uk, S, Vhk)

    return (
        A.new(Uk, args=(A,), back_fns=(dA_of_U,), name="svd U"),
        A.new(S, args=(A,), back_fns=(dA_of_S,), name="svd S"),
        A.new(Vhk, args=(A,), back_fns=(dA_of_Vh,), name="svd Vh"),
    )


def _qr_factors(A, Q, R):
    """(Q, R) of the reduced qr as nodes of A whose back_fns are qr's formula."""
    xp, backward = A.xp, _module("qr_factors").qr_backward

    def dQ_of(dQ):
        return backward(xp, dQ, xp.zeros_like(R), Q, R)

    def dR_of(dR):
        return backward(xp, xp.zeros_like(Q), dR, Q, R)

    return (
        A.new(Q, args=(A,), back_fns=(dQ_of,), name="qr Q"),
        A.new(R, args=(A,), back_fns=(dR_of,), name="qr R"),
    )


# ------------------------------------------------------------------ the rules
def _eigh(which: int):
    """dA = Q inner Q^T: inner diag(g) (the eigenvalues) or skew(Q^T g) / (l_j - l_i)."""

    def rule(node, fn, g):
        lam, Q = _eigh_factors(node.args[0], cell(fn, "eigenvalues"), cell(fn, "Q"))
        n = lam.shape[-1]
        if which == 0:
            return (Q * _row(g)) @ _t(Q)
        X = _t(Q) @ g
        E = _row(lam) - _column(lam) + _eye(lam, n)  # the diagonal, where skew(X) is 0: 1
        return Q @ ((X - _t(X)) * 0.5 / E) @ _t(Q)

    return rule


def _svd(which: int):
    """dA of A = U diag(S) Vh for a gradient of U (0), S (1) or Vh (2)."""

    def rule(node, fn, g):
        U, S, Vh = _svd_factors(node.args[0], cell(fn, "Uk"), cell(fn, "S"), cell(fn, "Vhk"))
        m, k, n = U.shape[-2], S.shape[-1], Vh.shape[-1]
        if which == 1:
            return (U * _row(g)) @ Vh
        S2 = S * S
        E = _row(S2) - _column(S2) + _eye(S, k)  # E_ij = S_j^2 - S_i^2; 1 on the diagonal
        if which == 0:
            dU = g[..., :k]
            J = _t(U) @ dU
            dA = U @ ((J - _t(J)) * _row(S) / E) @ Vh
            if m > n:  # the part of dU outside U's columns
                over = dU / _row(S)
                dA = dA + (over - U @ (_t(U) @ over)) @ Vh
            return dA
        dVh = g[..., :k, :]
        K = Vh @ _t(dVh)
        dA = U @ (_column(S) * (K - _t(K)) / E) @ Vh
        if m < n:  # the part of dVh outside Vh's rows
            over = dVh / _column(S)
            dA = dA + U @ (over - (over @ _t(Vh)) @ Vh)
        return dA

    return rule


def _square_or_tall(dQ, dR, Q, R):
    """dA of A = Q R with R square: (dQ + Q copyltu(R dR^T - dQ^T Q)) R^-T."""
    factories = importlib.import_module("tricycle.factories")
    M = R @ _t(dR) - _t(dQ) @ Q
    copyltu = factories.tril(M) + _t(factories.tril(M, -1))
    return _t(_module("systems").solve(R, _t(dQ + Q @ copyltu)))


def _qr(which: int):
    """dA of A = Q R for a gradient of Q (0) or R (1), the other taken as zero."""

    def rule(node, fn, g):
        from tricycle.ops import concatenate

        Q, R = _qr_factors(node.args[0], cell(fn, "Q"), cell(fn, "R"))
        zero = constant(g, g.xp.zeros((), g.dtype))
        dQ, dR = (g, R * zero) if which == 0 else (Q * zero, g)
        m, n = Q.shape[-2], R.shape[-1]
        if m >= n:
            return _square_or_tall(dQ, dR, Q, R)
        dR1, dR2 = dR[..., :m], dR[..., m:]
        Y = Q @ R[..., m:]
        dX = _square_or_tall(dQ + Y @ _t(dR2), dR1, Q, R[..., :m])
        return concatenate([dX, Q @ dR2], -1)

    return rule


def _pinv(node, fn, g):
    """-X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A), X = A^+ the node."""
    return _pinv_gradient(node, node.args[0], g)


def _pinv_gradient(X, A, g):
    m, n = A.shape[-2:]
    I_m, I_n = _eye(X, m), _eye(X, n)
    dA = -(_t(X) @ g @ _t(X))
    dA = dA + (I_m - A @ X) @ _t(g) @ X @ _t(X)
    return dA + _t(X) @ X @ _t(g) @ (I_n - X @ A)


def _pinv_node(A, X):
    """A^+ (the array X) as a node of A whose back_fn is pinv's formula."""
    xp, backward = A.xp, _module("singular").pinv_backward

    def back_fn(G):
        return backward(xp, G, X, A.array)

    return A.new(X, args=(A,), back_fns=(back_fn,), name="pinv")


def _lstsq(which: int):
    """X = A^+ B: dA = pinv's dA for G B^T, dB = A^+^T G (each summed over its broadcast
    axes), with A^+ a node of A (``_pinv_node``)."""

    def rule(node, fn, g):
        A, B = node.args
        pseudo = _pinv_node(A, cell(fn, "A_plus"))
        if which == 1:
            return summed_to(_t(pseudo) @ g, B.shape)
        return summed_to(_pinv_gradient(pseudo, A, g @ _t(B)), A.shape)

    return rule


def _lstsq_residuals(which: int):
    """r = |A X - B|^2 per column, X = A^+ B: dA = 2 (R g) X^T, dB = -2 R g, R = A X - B
    (there only when every A has full column rank: A^+ is pinv's with no cut, rtol 0)."""

    def rule(node, fn, g):
        A, B = node.args
        X = _module("singular").pinv(A, rtol=0.0) @ B
        Rg = (A @ X - B) * _row(g)
        if which == 1:
            return summed_to(Rg * -2, B.shape)
        return summed_to((Rg * 2) @ _t(X), A.shape)

    return rule


def _matrix_exp(node, fn, g):
    """exp([[A^T, G], [0, A^T]])[:n, n:]: matrix_exp again, differentiable."""
    from tricycle.ops import concatenate

    A = node.args[0]
    n, AT = A.shape[-1], _t(A)
    zeros = AT * constant(A, A.xp.zeros((), A.dtype))
    block = concatenate([concatenate([AT, g], -1), concatenate([zeros, AT], -1)], -2)
    return _module("exponential").matrix_exp(block)[..., :n, n:]


# ------------------------------------------------------------------ finding the keys
def rules(t) -> dict:
    """{code of a back_fn: rule} of the decompositions and of their factor nodes here, every
    op run once on small tensors made by ``t(*shape)``."""
    linalg = importlib.import_module("tricycle.linalg")
    square = t(2, 2)
    symmetric = square + _t(square)
    eigh, svd, qr = linalg.eigh(symmetric), linalg.svd(t(3, 2), False), linalg.qr(t(3, 2))
    made = {
        "eigh": (eigh, _eigh),
        "eigh factors": (_eigh_factors(symmetric, eigh[0].array, eigh[1].array), _eigh),
        "svd": (svd, _svd),
        "svd factors": (_svd_factors(square, *(x.array for x in linalg.svd(square))), _svd),
        "qr": (qr, _qr),
        "qr factors": (_qr_factors(square, *(x.array for x in linalg.qr(square))), _qr),
    }
    table = {}
    for name, (outs, make) in made.items():
        for i, out in enumerate(outs):
            KEYS[f"{name}[{i}]"] = key = out.back_fns[0].__code__
            table[key] = make(i)
    solution, residuals, *_ = linalg.lstsq(t(3, 2), t(3, 1), driver="gelsd")
    for i in range(2):
        KEYS[f"lstsq[{i}]"] = key = solution.back_fns[i].__code__
        table[key] = _lstsq(i)
        KEYS[f"lstsq residuals[{i}]"] = key = residuals.back_fns[i].__code__
        table[key] = _lstsq_residuals(i)
    for name, out, rule in (
        ("pinv", linalg.pinv(t(3, 2)), _pinv),
        ("pinv of lstsq", _pinv_node(square, square.array), _pinv),
        ("matrix_exp", linalg.matrix_exp(square), _matrix_exp),
    ):
        KEYS[name] = key = out.back_fns[0].__code__
        table[key] = rule
    return table
