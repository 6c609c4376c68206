"""Einsum: parsing, forward against numpy.einsum, gradients against finite differences,
matmul via ``@``, BLAS dispatch without copies, and the per-shape plan cache."""

import pickle
import tracemalloc

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tricycle.einsum import Einsum, Subscript, _contract_plan, contract
from tricycle.tensor import Tensor, to_tensor

# explicit and implicit outputs, '...', 1/2/3 operands, transposed outputs, outer products
SUBSCRIPTS = [
    # one operand: transposes, sums, identity
    "ij->ji",
    "ij->i",
    "ij->j",
    "ij->",
    "ij",
    "ji",
    "i->",
    "i->i",
    "...->...",
    "...ij->...ji",
    "...i->...",
    "i...->...i",
    # two operands
    "ij,jk->ik",
    "ij,jk",
    "ij,jk->ki",
    "ij,kj->ik",
    "ji,jk->ik",
    "i,i->",
    "i,i",
    "i,j->ij",
    "i,j->ji",
    "ij,ij->ij",
    "ij,ij->",
    "ij,ji->",
    "...i,ij->...j",
    "...j,ij->...i",
    "...i,...j->ij",
    "bij,bjk->bik",
    "bij,bjk->kbi",
    "bij,jk->bik",
    "bhtd,bhsd->bhts",
    "zxTb,bW->zxTW",
    "abc,c->ab",
    "abc,b->",
    "ab,cd->abcd",
    "ab,cd->dbca",
    "...ij,...jk->...ik",
    "i...,i->...",
    # three operands
    "ijk,jkl,lm->im",
    "i,i,i->i",
    "ij,j,jk->ik",
    "a,b,c->cba",
    "...i,...i,...i->...",
]


@st.composite
def einsum_cases(draw, subscripts=SUBSCRIPTS):
    """A subscript and float64 operands for it; any named axis may be 1 (broadcasting)."""
    subscript = draw(st.sampled_from(subscripts), label="subscript")
    parts = subscript.split("->")[0].split(",")
    letters = sorted(set("".join(parts)) - {"."})
    sizes = {c: draw(st.integers(1, 4), label=f"size {c}") for c in letters}
    with_dots = sum("..." in part for part in parts)
    dot_shapes = iter(())
    if with_dots:
        dot_shapes = iter(
            draw(
                hnp.mutually_broadcastable_shapes(num_shapes=with_dots, max_dims=2, max_side=3),
                label="... shapes",
            ).input_shapes
        )

    def named(letters_):
        return [1 if draw(st.integers(0, 5)) == 0 else sizes[c] for c in letters_]

    arrays = []
    for part in parts:
        before, dots, after = part.partition("...")
        shape = named(before) + (list(next(dot_shapes)) if dots else []) + named(after)
        arrays.append(
            draw(hnp.arrays(np.float64, tuple(shape), elements=st.floats(-2, 2)), label=part)
        )
    return subscript, arrays


def reference(subscript, arrays):
    """numpy.einsum, with '...' spelt out as letters (numpy cannot sum '...' axes away)."""
    lhs, arrow, rhs = subscript.partition("->")
    parts = lhs.split(",")
    ranks = [a.ndim - len(p.replace("...", "")) for p, a in zip(parts, arrays)]
    dots = "ABCDEFGH"[: max(ranks, default=0)]
    parts = [p.replace("...", dots[len(dots) - k :]) for p, k in zip(parts, ranks)]
    if not arrow:  # implicit output: '...' first, then the letters used once, sorted
        letters = "".join(parts)
        rhs = dots + "".join(sorted(c for c in set(letters) - set(dots) if letters.count(c) == 1))
    return np.einsum(f"{','.join(parts)}->{rhs.replace('...', dots)}", *arrays)


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    ("subscript", "inputs", "output"),
    [
        ("ij,jk", ("ij", "jk"), "ik"),
        ("ji", ("ji",), "ij"),
        ("ij", ("ij",), "ij"),
        ("ba,ca", ("ba", "ca"), "bc"),
        ("...ij,...jk", (".ij", ".jk"), ".ik"),
        ("i,i", ("i", "i"), ""),
        ("ij -> ji", ("ij",), "ji"),
        ("...i,ij->...j", (".i", "ij"), ".j"),
        ("ij->", ("ij",), ""),
    ],
)
def test_parse_explicit_and_implicit_outputs(subscript, inputs, output):
    parsed = Subscript.parse(subscript)
    assert parsed.inputs == inputs
    assert parsed.output == output


def test_expand_right_aligns_ellipsis_like_numpy():
    parsed = Subscript.parse("...ij,...jk->...ik")
    expanded = parsed.expand([(5, 2, 3, 4), (3, 4, 6)])
    (a, b), out = expanded.inputs, expanded.output
    assert len(a) == 4 and len(b) == 3 and len(out) == 4
    assert a[1] == b[0] == out[1]  # the shared '...' axis lines up from the right
    assert a[0] == out[0] and a[0] not in b


# ------------------------------------------------------------------ forward and gradient
@pytest.mark.parametrize("subscript", SUBSCRIPTS)
@given(data=st.data())
def test_einsum_forward_and_grad(subscript, data):
    """The output matches numpy.einsum and the gradients match finite differences."""
    subscript, arrays = data.draw(einsum_cases([subscript]))
    op = Einsum(subscript)
    out = check_grads(lambda *ts: op(*ts), *arrays)
    expected = reference(subscript, arrays)
    np.testing.assert_allclose(out.array, expected, rtol=1e-12, atol=1e-12)
    assert out.name == f"einsum {subscript}"


@given(case=einsum_cases())
def test_einsum_diamond(case):
    """Every operand used twice, and the output used twice."""
    subscript, arrays = case
    op = Einsum(subscript)

    def f(*ts):
        y = op(*ts)
        return y * y + op(*ts)

    check_grads(f, *arrays)


@pytest.mark.parametrize(
    "subscript", ["ij,jk->ik", "...i,ij->...j", "ij,ij->ij", "i,i->", "ij,jk,kl->il"]
)
def test_einsum_same_tensor_in_several_operands(subscript):
    """x in every operand position: the gradients of all positions add up."""
    rng = np.random.default_rng(0)
    n = 3
    x = rng.normal(size=(n,) if subscript == "i,i->" else (n, n))
    check_grads(lambda t: Einsum(subscript)(*[t] * (subscript.count(",") + 1)), x)


# ------------------------------------------------------------------ matmul via @
@st.composite
def matmul_operands(draw):
    batch_a, batch_b = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)
    ).input_shapes
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    a_shape = (k,) if draw(st.booleans()) else (*batch_a, n, k)
    b_shape = (k,) if draw(st.booleans()) else (*batch_b, k, m)
    elements = st.floats(-2, 2)
    a = draw(hnp.arrays(np.float64, a_shape, elements=elements), label="a")
    b = draw(hnp.arrays(np.float64, b_shape, elements=elements), label="b")
    return a, b


@given(operands=matmul_operands())
def test_matmul_operator(operands):
    a, b = operands
    out = check_grads(lambda x, y: x @ y, a, b)
    np.testing.assert_allclose(out.array, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    check_grads(lambda x: x @ b, a)  # a raw array on the right
    check_grads(lambda y: a @ y, b)  # and on the left (__rmatmul__)


# ------------------------------------------------------------------ BLAS dispatch, no copies
DENSE = [
    # (subscript, shapes): the Dense forward and both gradients, 2-D and 3-D inputs
    ("...i,ij->...j", [(2048, 64), (64, 128)]),
    ("...j,ij->...i", [(2048, 128), (64, 128)]),
    ("...i,...j->ij", [(2048, 64), (2048, 128)]),
    ("...i,ij->...j", [(4, 512, 64), (64, 128)]),
    ("...j,ij->...i", [(4, 512, 128), (64, 128)]),
    ("...i,...j->ij", [(4, 512, 64), (4, 512, 128)]),
]


@pytest.mark.parametrize(("subscript", "shapes"), DENSE, ids=[d[0] for d in DENSE])
def test_dense_contractions_run_as_one_matmul_without_copies(subscript, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.random(shape, dtype=np.float32) for shape in shapes]
    sub = Subscript.parse(subscript).expand(shapes)
    kind, sums, plan = _contract_plan(sub.inputs, sub.output, tuple(shapes))
    assert kind == "matmul" and sums == ((), ())
    assert plan.first[0] is None and plan.second[0] is None  # no transpose of an operand
    assert plan.perm is None  # nor of the result

    expected = reference(subscript, arrays)
    contract(np, sub.inputs, sub.output, arrays)  # warm up (BLAS buffers)
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = contract(np, sub.inputs, sub.output, arrays)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    smallest_input = min(a.nbytes for a in arrays)
    assert peak < result.nbytes + smallest_input // 2, "an operand was copied"
    assert result.flags.c_contiguous
    np.testing.assert_allclose(result, expected, rtol=1e-4)


def test_dense_gradients_are_contiguous_and_match_numpy():
    rng = np.random.default_rng(0)
    x = Tensor(rng.random((6, 5, 4)))
    w = Tensor(rng.random((4, 3)))
    g = rng.random((6, 5, 3))
    Einsum("...i,ij->...j")(x, w).backward(g)
    np.testing.assert_allclose(x.grad.array, g @ w.array.T)
    np.testing.assert_allclose(w.grad.array, x.array.reshape(-1, 4).T @ g.reshape(-1, 3))
    assert x.grad.array.flags.c_contiguous and w.grad.array.flags.c_contiguous


def test_summed_index_broadcast_from_one_falls_back_to_einsum():
    a, b = np.ones((2, 1)), np.ones((3, 4))  # j is 1 in a and 3 in b, and is summed
    sub = Subscript.parse("ij,jk->ik")
    assert _contract_plan(sub.inputs, sub.output, (a.shape, b.shape))[0] == "einsum2"
    np.testing.assert_array_equal(Einsum("ij,jk->ik")(a, b).array, np.full((2, 4), 3.0))


@pytest.mark.parametrize(
    "subscript, shape_a, shape_b",
    [
        ("tni,gi->tng", (5, 0, 6), (7, 6)),  # an empty batch through a projection
        ("ij,jk->ik", (0, 3), (3, 4)),
        ("ij,jk->ik", (2, 0), (0, 4)),  # an empty sum: zeros
        ("bij,bjk->bik", (1, 2, 3), (0, 3, 4)),  # batch 1 broadcast against 0
    ],
)
def test_an_axis_of_size_zero_keeps_it(subscript, shape_a, shape_b):
    """Size 0 against size 1 broadcasts to 0, as numpy's does, forward and backward: each
    case's output is empty or an empty sum, so every gradient is zero (or empty)."""
    a = Tensor(np.ones(shape_a), requires_grad=True)
    b = Tensor(np.ones(shape_b), requires_grad=True)
    y = Einsum(subscript)(a, b)
    expected = np.einsum(subscript, a.array, b.array)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(y.array, expected)
    y.backward(np.ones(y.shape))
    for tensor, shape in ((a, shape_a), (b, shape_b)):
        np.testing.assert_array_equal(tensor.grad.array, np.zeros(shape))


# ------------------------------------------------------------------ statelessness and caching
def test_plan_is_cached_per_input_shapes():
    op = Einsum("...i,ij->...j")
    w = to_tensor(np.ones((3, 2)))
    op(to_tensor(np.ones((4, 3))), w)
    op(to_tensor(np.ones((4, 3))), w)
    assert len(op._plans) == 1
    op(to_tensor(np.ones((5, 4, 3))), w)
    assert len(op._plans) == 2


def test_one_einsum_called_twice_before_backward():
    """Weight tying: the same op (and weight) used twice; the gradients of both uses add."""
    rng = np.random.default_rng(0)
    x1, x2, w = rng.normal(size=(4, 3)), rng.normal(size=(2, 3)), rng.normal(size=(3, 3))
    op = Einsum("...i,ij->...j")
    check_grads(lambda a, b, c: op(op(a, c), c).sum() + op(b, c).sum(), x1, x2, w)


def test_einsum_accepts_arrays_and_pickles():
    op = pickle.loads(pickle.dumps(Einsum("ij->ji")))
    out = op(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(out.array, np.arange(6.0).reshape(2, 3).T)
    assert repr(op) == "Einsum('ij->ji')"


def test_einsum_takes_its_operands_as_one_list_as_torch():
    """torch.einsum("nqhd,nkhd->nhqk", [queries, keys]): the operands as a list (or tuple)
    give what they give spread out, forward and backward, as torch's."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 3, 2, 4)), rng.normal(size=(2, 5, 2, 4))
    grads = []
    for lib in torch, tricycle:
        a, b = lib.tensor(q, requires_grad=True), lib.tensor(k, requires_grad=True)
        out = lib.einsum("nqhd,nkhd->nhqk", [a, b])
        (out * lib.tensor(np.arange(60.0).reshape(2, 2, 3, 5))).sum().backward()
        np.testing.assert_allclose(
            np.asarray(out.detach().numpy() if lib is torch else out.array),
            np.einsum("nqhd,nkhd->nhqk", q, k),
        )
        grads.append([np.asarray(t.grad.numpy() if lib is torch else t.grad.array) for t in (a, b)])
    for ours, theirs in zip(grads[1], grads[0], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    out = tricycle.einsum("ij,jk->ik", (tricycle.tensor(q[0, 0]), tricycle.tensor(k[0, 0].T)))
    np.testing.assert_allclose(out.array, q[0, 0] @ k[0, 0].T)
