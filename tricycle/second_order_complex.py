"""Double backward of the complex ops (``create_graph=True``: ``tricycle.second_order``).

Every complex op is a formula of real ops and of a few complex-aware ones whose back_fns are
written by hand: ``tricycle.complex_parts``' ``complex``, ``real``, ``imag`` and ``abs``,
``complex_math.angle``, the casts into and between the complex dtypes, and the linear algebra
that takes complex matrices. Their rules here, beside the real ops' own, give every complex
op of ``tricycle.complex_tensor`` a second derivative: + - * /, exp, log, pow, sin, the
products, the reductions and the shape ops come through them by construction.

Each rule writes its back_fn again with differentiable complex-aware ops, in torch's
convention (for a real loss L of z = a + ib, z's gradient is dL/da + i dL/db; g is the
output's gradient, G a matrix one)::

    complex(x, y):   dx = re g, dy = im g             (each summed over its broadcast axes)
    real(z):         dz = g + 0i                      imag(z):  dz = 0 + ig
    |z|:             dz = g sgn(z)                    angle(z): dz = g iz / |z|^2 (0 at 0)
    a cast:          the gradient cast back (its real part, to a real source)
    X = A^-1:        dA = -X^H G X^H
    X = A^-1 B:      dB = A^-H G, dA = -dB X^H        (A's triangle kept: solve_triangular)
    det A:           dA = g conj(det A) A^-H
    slogdet A:       dA = (g_logabsdet - i im(conj(g_sign) sign)) A^-H

The linear algebra ops share their back_fns with the real ones, whose rules
(``second_order_final``, ``second_order_linalg``) transpose where a complex matrix needs the
conjugate transpose: ``rules`` wraps each so that a node of complex matrices comes here and a
real one goes on to its own rule. svd and pinv of complex matrices have no second derivative
here: they raise NotImplementedError rather than reach a real rule.
"""

import importlib

from tricycle import complex_math, ops
from tricycle.complex_parts import abs, complex, conj, imag, real  # noqa: A004 - torch's names
from tricycle.complex_parts import linear as of_parts
from tricycle.second_order_base import cell, constant, linear, summed_to

KEYS: dict = {}  # a readable name -> the key of its rule (for the tests)


def _linalg():
    return importlib.import_module("tricycle.linalg")


def _imag_of(g):
    """im g, a zero of g's shape for a real g (a seed given real)."""
    return imag(g) if g.dtype.kind == "c" else g * 0


# ------------------------------------------------------------------ the primitives
def _real_part(node, fn, g):
    """complex(x, y)'s dx = re g."""
    return summed_to(real(g), node.args[0].shape)


def _imaginary_part(node, fn, g):
    """complex(x, y)'s dy = im g."""
    return summed_to(_imag_of(g), node.args[1].shape)


def _of_real(node, fn, g):
    """real(z)'s dz = g + 0i: the real g cast to z's dtype (whose rule takes re again)."""
    return g._cast("real", node.args[0].dtype)


def _of_imag(node, fn, g):
    """imag(z)'s dz = 0 + ig."""
    return complex(constant(node, g.xp.zeros((), g.dtype)), g)


def _of_abs(node, fn, g):
    """|z|'s dz = g z / |z| (0 at 0, where sgn's own gradient is 0, as torch's)."""
    return complex_math.sgn(node.args[0]) * g


def _of_angle(node, fn, g):
    """angle(z)'s dz = g iz / |z|^2 = g (-b + ia) / (a^2 + b^2), 0 at z = 0 (torch's)."""
    z = node.args[0]
    vanishes = z.xp.abs(z.array) == 0
    a, b = real(z), imag(z)
    size2 = ops.where(vanishes, 1.0, a * a + b * b)
    turn_re = ops.where(vanishes, 0.0, -b / size2)
    turn_im = ops.where(vanishes, 0.0, a / size2)
    return complex(turn_re * g, turn_im * g)


def _complex_cast(node, fn, g):
    """A cast between complex dtypes: the gradient cast back."""
    return g._cast("cast", cell(fn, "self").dtype)


def _real_to_complex(node, fn, g):
    """A real tensor cast to a complex dtype: the gradient's real part, cast back."""
    return real(g)._cast("cast", cell(fn, "source"))


# ------------------------------------------------------------------ linear algebra
def _matrices(g):
    """A gradient of one number per matrix (...) as (..., 1, 1)."""
    return g.reshape(*g.shape, 1, 1)


def _summed_to(z, shape):
    """``summed_to`` of both parts of z."""
    return of_parts(z, lambda part: summed_to(part, shape))


def _inv(node, fn, g):
    """d(A^-1): -X^H G X^H, X = A^-1 the node (differentiated again by this rule)."""
    x_h = node.mH
    return -(x_h @ g @ x_h)


def _solve(which: int):
    """X = A^-1 B: dB = A^-H G (a triangular solve where the op read A as a triangle: A^H
    has the other one), dA = -dB X^H (kept to the triangle read), each summed over its
    broadcast axes."""

    def rule(node, fn, g):
        A, B = node.args
        linalg, keep = _linalg(), cell(node.back_fns[0], "keep")
        if keep is None:
            dB = linalg.solve(A.mH, g)
        else:  # systems.solve_triangular's keep: ``below`` is 1 for an upper triangle
            dB = linalg.solve_triangular(
                A.mH, g, upper=cell(keep, "below") < 0, unitriangular=cell(keep, "unitriangular")
            )
        if which == 1:
            return _summed_to(dB, B.shape)
        dA = -(dB @ node.mH)
        if keep is not None:
            dA = of_parts(dA, lambda part: linear(part, keep, keep, "triangle"))
        return _summed_to(dA, A.shape)

    return rule


def _det(node, fn, g):
    """g conj(det A) A^-H (A^-1 differentiable: ``inv``'s rule)."""
    A = node.args[0]
    return _matrices(g * conj(node)) * _linalg().inv(A).mH


def _logabsdet(node, fn, g):
    """g A^-H (g real)."""
    return _matrices(g) * _linalg().inv(node.args[0]).mH


def _slogdet_sign(node, fn, g):
    """-i im(conj(g) sign) A^-H, with im(conj(g) s) = re g im s - im g re s (s the node)."""
    turn = real(g) * imag(node) - _imag_of(g) * real(node)
    zero = constant(turn, turn.xp.zeros((), turn.dtype))
    return _matrices(complex(zero, -turn)) * _linalg().inv(node.args[0]).mH


def _refused(node, fn, g):
    A = node.args[0]
    raise NotImplementedError(
        f"backward with create_graph=True: the second derivative of {node.name} of complex "
        f"matrices ({A.dtype}, shape {A.shape}) is not implemented; differentiate it once "
        "(create_graph=False)"
    )


def _by_kind(real_rule, complex_rule):
    """The rule of a back_fn that real and complex matrices share: ``complex_rule`` for a
    node whose input is complex, else ``real_rule`` (None: the real op has no such back_fn)."""

    def rule(node, fn, g):
        if node.args[0].dtype.kind == "c" or real_rule is None:
            return complex_rule(node, fn, g)
        return real_rule(node, fn, g)

    return rule


# ------------------------------------------------------------------ finding the keys
def rules(t, real_rules: dict) -> dict:
    """{code of a back_fn: rule} of the complex-aware ops, each run once on small tensors made
    of ``t(*shape)``'s; the linear algebra's rules wrap those ``real_rules`` (the table built
    so far) holds under the same keys."""
    from tricycle.complex_math import angle

    linalg = _linalg()

    def z(*shape):
        return complex(t(*shape), t(*shape))

    square, other = z(2, 2), z(2, 3)
    own = {
        "complex": (complex(t(2, 3), t(3)), (_real_part, _imaginary_part)),
        "real": (real(square), (_of_real,)),
        "imag": (imag(square), (_of_imag,)),
        "abs": (abs(square), (_of_abs,)),
        "angle": (angle(square), (_of_angle,)),
        "cast": (square._cast("cast", "complex128"), (_complex_cast,)),
        "cast from real": (t(2)._cast("cast", "complex64"), (_real_to_complex,)),
    }
    svd = linalg.svd(other, full_matrices=False)
    sign, logabsdet = linalg.slogdet(square)
    shared = {
        "inv": (linalg.inv(square), (_inv,)),
        "solve": (linalg.solve(square, other), (_solve(0), _solve(1))),
        "det": (linalg.det(square), (_det,)),
        "slogdet sign": (sign, (_slogdet_sign,)),
        "slogdet": (logabsdet, (_logabsdet,)),
        "svd U": (svd.U, (_refused,)),
        "svd S": (svd.S, (_refused,)),
        "svd Vh": (svd.Vh, (_refused,)),
        "pinv": (linalg.pinv(other), (_refused,)),
    }
    table = {}
    for made, wrapped in ((own, False), (shared, True)):
        for name, (out, rules_) in made.items():
            for i, rule in enumerate(rules_):
                key = out.back_fns[i].__code__
                KEYS[name if len(rules_) == 1 else f"{name}[{i}]"] = key
                table[key] = _by_kind(real_rules.get(key), rule) if wrapped else rule
    return table
