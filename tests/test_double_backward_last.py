"""Double backward (``create_graph=True``) of the last ops that refused it, against torch in
float64: first and second derivatives of the elementwise ops whose slopes are rewritten with
differentiable ops (``second_order_pointwise``: torch's special, trigonometric, hyperbolic and
logarithmic functions, ``atan2``/``hypot``/``logaddexp``, the smooth activations, the norms),
the masks (hardtanh, shrinks, threshold, ``tril``, step functions, ``fmod``) and the ops that
move or pick entries or are rebuilt (``second_order_shapes``: ``masked_fill``, ``expand``,
``repeat_interleave``, ``scatter``/``index_add``/``diag``, ``cummax``, ``logcumsumexp``,
``cosine_similarity``, ``prelu``), the soft margin, hinge embedding and margin ranking
losses; and the ops torch itself refuses to differentiate twice."""

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    constant,
    cube,
    drawn,
    exercise,
    first_and_second,
    lib_of,
    rules_met,
)
from tests.test_double_backward_final import FINAL_SLOPES
from tricycle import (
    backend,
    second_order_losses,
    second_order_pointwise,
    second_order_shapes,
    torch_pointwise,
)

torch = pytest.importorskip("torch")


def signs(x):
    return constant(x, [1.0, -1, 1, -1, -1, 1])


# name -> (function of the inputs giving a scalar, input shapes, (low, high) of the values)
CASES = {
    "special": (
        lambda a: cube(lib_of(a).erf(a)) + cube(lib_of(a).erfc(a)) + cube(lib_of(a).expm1(a))
        + cube(lib_of(a).erfinv(a * 0.5)) + cube(lib_of(a).exp2(a)),
        [(4,)], (-1, 1),
    ),
    "lp_pool": (
        lambda a: cube(F_of(a).lp_pool2d(a, 2, 2)) + cube(F_of(a).lp_pool1d(a[0], 3.0, 2)),
        [(1, 2, 4, 4)], (0.2, 1.5),
    ),
    "gamma": (
        lambda a: cube(lib_of(a).lgamma(a)) + cube(lib_of(a).digamma(a))
        + cube(lib_of(a).polygamma(2, a)),
        [(4,)], (0.5, 2),
    ),
    "trigonometry": (
        lambda a: cube(a.tan()) + cube(a.asin()) + cube(a.acos()) + cube(a.atan())
        + cube(a.sinh()) + cube(a.cosh()) + cube(a.asinh()) + cube(a.atanh()),
        [(4,)], (-0.8, 0.8),
    ),
    "logarithms": (
        lambda a: cube(a.log1p()) + cube(a.log2()) + cube(a.log10()) + cube((a + 1).acosh()),
        [(4,)], (0.5, 2),
    ),
    "of_two": (
        lambda a, b: cube(lib_of(a).atan2(a, b)) + cube(lib_of(a).hypot(a, b))
        + cube(lib_of(a).logaddexp(a, b)) + cube(lib_of(a).logaddexp2(b, a)),
        [(2, 3), (3,)], (-1, 1),
    ),
    "smooth_activations": (
        lambda a: cube(F_of(a).logsigmoid(a)) + cube(F_of(a).softsign(a))
        + cube(F_of(a).tanhshrink(a)) + cube(F_of(a).mish(a)) + cube(F_of(a).hardswish(a * 5)),
        [(6,)], (-1, 1),
    ),
    "masks": (
        lambda a: cube(F_of(a).hardtanh(a * 2)) + cube(F_of(a).relu6(a * 8))
        + cube(F_of(a).threshold(a, 0.1, 2.0)) + cube(F_of(a).hardshrink(a, 0.3))
        + cube(F_of(a).softshrink(a, 0.3)) + cube(F_of(a).rrelu(a)) + (a.floor() * a**3).sum()
        + cube(lib_of(a).fmod(a * 3, a + 2)),
        [(6,)], (-1, 1),
    ),
    "norms": (
        lambda a: cube(lib_of(a).linalg.vector_norm(a, dim=1)) + a.norm() ** 3
        + cube(lib_of(a).linalg.vector_norm(a, 3, dim=0)) + cube(F_of(a).normalize(a))
        + cube(F_of(a).pairwise_distance(a, a.flip(0))),
        [(3, 4)], (-1, 1),
    ),
    "triangles_and_masks": (
        lambda a: cube(lib_of(a).tril(a)) + cube(a.triu(1)) + cube(a.masked_fill(a > 0.5, 0.5))
        + cube(a.expand(2, 3, 4)),
        [(3, 4)], (-1, 1),
    ),
    "scatter_and_picks": (
        lambda a, s: cube(a.scatter(1, constant(a, [[0, 2], [1, 3], [3, 0]]), s))
        + cube(a.scatter_add(1, constant(a, [[0, 2], [1, 1], [3, 0]]), s))
        + cube(a.index_add(0, constant(a, [2, 0]), s.repeat_interleave(2, 1)[:2]))
        + cube(a.repeat_interleave(2, 0)) + cube(lib_of(a).diag(a[0])),
        [(3, 4), (3, 2)], (-1, 1),
    ),
    "running": (
        lambda a: cube(lib_of(a).cummax(a, 1)[0]) + cube(lib_of(a).cummin(a, 0)[0])
        + cube(lib_of(a).logcumsumexp(a, 1)),
        [(3, 4)], (-1, 1),
    ),
    "cosine_prelu": (
        lambda a, b, w: cube(F_of(a).cosine_similarity(a, b)) + cube(F_of(a).prelu(a, w))
        + cube(F_of(a).triplet_margin_loss(a, b, b.flip(0)).reshape(1)),
        [(3, 4), (3, 4), (4,)], (-1, 1),
    ),
    "margin_losses": (
        lambda a, b, y: F_of(a).soft_margin_loss(a, signs(a)) ** 2
        + F_of(a).hinge_embedding_loss(a, signs(a), reduction="sum") ** 2
        + F_of(a).margin_ranking_loss(a, b, y, margin=0.1, reduction="none").pow(3).sum(),
        [(6,), (6,), (6,)], (-1, 1),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name, fn, values, weights", list(drawn(CASES)), ids=sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name, fn, values, weights):
    assert_first_and_second_as_torchs(fn, values, weights)


# ops whose double backward torch refuses (a RuntimeError; NotImplementedError is one)
REFUSED = {
    "hardsigmoid": (lambda a: cube(F_of(a).hardsigmoid(a * 4)), [(5,)]),
    "multi_margin": (lambda a: F_of(a).multi_margin_loss(a, constant(a, [0, 2, 1])), [(3, 4)]),
    "ctc": (
        lambda a: F_of(a).ctc_loss(
            a.log_softmax(2), constant(a, [[1, 2]]), constant(a, [4]), constant(a, [2])
        ),
        [(4, 1, 3)],
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_torch_refuses_to_differentiate_twice_raises(name):
    fn, shapes = REFUSED[name]
    for lib in (torch, tricycle):
        with pytest.raises(RuntimeError, match="not implemented"):
            first_and_second(lib, fn, arrays(*shapes, low=-1, high=1), arrays(*shapes))


def test_an_elementwise_op_with_no_slope_here_raises_naming_it():
    """An op of ``of_one`` whose name has no slope in the tables (one made here)."""
    made_up = torch_pointwise.of_one("made_up", lambda xp, a: a * a, lambda xp, a, y: 2 * a, "")
    x = tricycle.tensor(np.array([0.5, 1.5]), requires_grad=True)
    with pytest.raises(NotImplementedError, match="second derivative of made_up"):
        tricycle.autograd.grad(made_up(x).sum(), x, create_graph=True)


def test_every_rule_here_is_exercised(monkeypatch):
    """Each key of ``second_order_pointwise`` and ``second_order_shapes``, and each slope of
    ``ONE`` and ``TWO`` but the few not listed, is met by one of the cases above."""
    used = rules_met(
        monkeypatch,
        second_order_pointwise.ONE,
        second_order_pointwise.TWO,
        second_order_losses.SLOPES,
    )
    exercise(CASES)
    keys = dict(second_order_pointwise.KEYS, **second_order_shapes.KEYS)
    missing = {name for name, key in keys.items() if key not in used}
    slopes = set(second_order_pointwise.ONE) | set(second_order_pointwise.TWO)
    assert not missing
    assert slopes - used - set(FINAL_SLOPES) == {"ndtr"}  # (test_double_backward_final's)
    assert {"hinge_embedding", "margin_ranking", "soft_margin"} <= used


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """Every case above with cupy arrays (the rules compute with the arrays' module)."""
    assert_on_a_gpu_as_on_the_host(drawn(CASES))
