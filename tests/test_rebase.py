"""torch's in-place ops on an op's output (``tricycle.rebase``): ``scores.masked_fill_(mask,
-inf)`` after ``scores = q @ k.T`` (Raschka's attention, many tutorials') and the arithmetic
in-place forms give torch's values and gradients, and finite differences agree; the tensor
becomes the new node, the graph below it unchanged. ``x[i] -= v`` and ``x[i] = v`` too
(``index_put``; makemore's ``dlogits[range(n), Yb] -= 1``). Refused, with the reason, where the
rebinding would differ from torch's write: an op already recorded on the tensor, a view of
its input, retained gradients or hooks; under ``no_grad()`` as before."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
from tricycle.tensor import no_grad

torch = pytest.importorskip("torch")


def _attention(lib, q, k, v, mask):
    scores = q @ k.transpose(1, 2)  # (B, T, T)
    scores.masked_fill_(mask, -float("inf"))
    scores.div_(q.shape[-1] ** 0.5)
    return lib.softmax(scores, dim=-1) @ v


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**16))
def test_masked_fill_in_place_on_scores_gives_torchs_values_and_gradients(B, T, E, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((B, T, E)) for _ in range(3)]
    mask = np.triu(np.ones((T, T), bool), 1)
    ours = [tc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = _attention(tc, *ours, tc.tensor(mask))
    expected = _attention(torch, *theirs, torch.tensor(mask))
    weights = rng.standard_normal(out.shape)
    (out * tc.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


def test_arithmetic_in_place_keeps_the_values_the_graph_below_saw():
    """``s.mul_(w)``: mul's backward reads its inputs' arrays when it runs; the gradient of w
    is the old s, not the product written over it."""
    rng = np.random.default_rng(1)
    a, w, c = (rng.standard_normal((3, 4)) for _ in range(3))

    def run(lib, make):
        x, y, z = (make(v) for v in (a, w, c))
        s = x * 3  # (torch refuses an exp's output: its backward reads the values overwritten)
        s.mul_(y).add_(z, alpha=0.5).clamp_(-1.0, 2.0).sub_(x)
        (s * s).sum().backward()
        return s, x.grad, y.grad, z.grad

    ours = run(tc, lambda v: tc.tensor(v, requires_grad=True))
    theirs = run(torch, lambda v: torch.tensor(v, requires_grad=True))
    for mine, other in zip(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), other.detach().numpy(), atol=1e-12)


def test_in_place_gradients_agree_with_finite_differences():
    mask = np.array([[True, False, False], [False, True, False]])

    def f(x, y):
        s = x * y
        s.masked_fill_(mask, 0.0)
        return s.mul_(x).add_(y)

    rng = np.random.default_rng(2)
    x, y = (tc.tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2))
    assert tc.gradcheck(f, x, y)


def test_the_tensor_becomes_the_new_node_and_keeps_its_dtype():
    x = tc.ones(2, 3, requires_grad=True, dtype=np.float32)
    s = x * 2
    assert s.add_(tc.ones(3, dtype=np.float64)) is s
    assert s.dtype == np.float32 and s.name != "bmul"  # torch's: in place keeps the dtype
    s.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda x: (lambda s: (s + 1, s)[1])(x * 2), "1 recorded op"),  # used by s + 1
        (lambda x: (x * 2)[:, :2], "view of its input"),
        (lambda x: (lambda s: (s.retain_grad(), s)[1])(x * 2), "retains its gradient"),
    ],
)
def test_where_torch_would_write_through_it_is_refused_with_the_reason(make, why):
    x = tc.ones(2, 3, requires_grad=True)
    s = make(x)
    before = s.numpy().copy()
    with pytest.raises(RuntimeError, match=f"masked_fill_: .*{why}.*use masked_fill"):
        s.masked_fill_(np.ones(s.shape, bool), 0.0)
    np.testing.assert_array_equal(s.numpy(), before)  # nothing written


def test_a_result_of_another_shape_is_refused_and_no_grad_keeps_the_old_rule():
    x = tc.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match=r"the result's shape \(2, 3\) is not the shape \(3,\)"):
        (x * 2).add_(tc.ones(2, 3))
    s = x * 2
    with no_grad(), pytest.raises(RuntimeError, match="made by an op in a graph"):
        s.add_(1.0)


def test_item_assignment_into_an_op_output_gives_torchs_values_and_gradients():
    """``d[range(n), ys] -= w`` reads ``d[...]`` first: that selection is pointed at d's old
    node, so the write is allowed, as torch's; ``d[0] = d[0] * 0 + 1`` too."""
    rng = np.random.default_rng(3)
    logits, w = rng.standard_normal((4, 5)), rng.standard_normal(4)
    ys = np.array([1, 0, 4, 1])

    def run(lib):
        x, v = lib.tensor(logits, requires_grad=True), lib.tensor(w, requires_grad=True)
        d = x * 3
        d[range(4), lib.tensor(ys)] -= v
        d /= 4
        d[0] = d[0] * 0 + 1
        d[:, 1:3] = v[:2]  # a value broadcast over the rows: its gradient summed
        (d * d).sum().backward()
        return d, x.grad, v.grad

    for mine, other in zip(run(tc), run(torch)):
        np.testing.assert_allclose(mine.numpy(), other.detach().numpy(), atol=1e-12)


def test_index_put_gradients_agree_with_finite_differences():
    from tricycle.indexing import index_put

    rng = np.random.default_rng(4)
    x = tc.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    v = tc.tensor(rng.standard_normal(4), requires_grad=True)
    assert tc.gradcheck(lambda a, b: index_put(a * 1, (np.array([0, 2]),), b), x, v)
    assert tc.gradcheck(lambda a, b: index_put(a * 1, (slice(None), 1), b[:3]), x, v)


def test_item_assignment_is_refused_where_another_op_used_the_tensor():
    x = tc.ones(2, 3, requires_grad=True)
    d = x * 2
    e = d.sum()  # another op reads d: rebinding d would send e's gradient through the write
    with pytest.raises(RuntimeError, match="__setitem__: .*1 recorded op.*use index_put"):
        d[0] = 5.0
    e.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_a_constant_written_with_a_value_in_a_graph_joins_the_graph_as_torchs():
    """``m = zeros(...).fill_(-9e15); m[adj == 1] = logits`` (the GAT layer of the UvA
    tutorials) and ``m.add_(w)``: torch's constant then requires grad, the value's gradient
    flowing through the write; the array itself is still written (a numpy view of it sees the
    values). An op recorded on the constant before is refused, as on an op's output."""
    rng = np.random.default_rng(5)
    logits, w, weights = rng.standard_normal(5), *rng.standard_normal((2, 3, 3))
    adj = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]])  # five places written, one per logit
    results = []
    for lib in tc, torch:
        v, u = lib.tensor(logits, requires_grad=True), lib.tensor(w, requires_grad=True)
        m = v.new_zeros((3, 3)).fill_(-9e15)
        bridge = m.detach().numpy()
        m[lib.tensor(adj) == 1] = v * 2
        assert m.requires_grad
        n = lib.zeros(3, 3)
        n.add_(u).mul_(u)  # a constant whose in-place ops take u: u's gradient is 2 u
        loss = (lib.softmax(m, dim=1) * lib.tensor(weights)).sum() + n.sum()
        loss.backward()
        results.append((m.detach().numpy(), bridge, v.grad.numpy(), u.grad.numpy()))
    (m, bridge, dv, du), (m_t, bridge_t, dv_t, du_t) = results
    np.testing.assert_allclose(m, m_t)
    np.testing.assert_allclose(bridge, bridge_t)  # written into the array as well
    np.testing.assert_allclose(dv, dv_t, atol=1e-12)
    np.testing.assert_allclose(du, du_t, atol=1e-12)

    c = tc.zeros(3)
    x = tc.ones(3, requires_grad=True)
    e = (c * x).sum()  # an op recorded on the constant: its backward reads c as it was
    with pytest.raises(RuntimeError, match="__setitem__: .*1 recorded op.*use index_put"):
        c[0] = x[0]
    e.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    with no_grad():  # no graph: written as before
        c[0] = x[0]
    assert not c.requires_grad and c.numpy()[0] == 1


def test_squeeze_unsqueeze_and_t_in_place_on_an_ops_output_as_torchs():
    """torch's ``logits.squeeze_(-1)`` after a pooling (Raschka's all-convolutional net): the
    tensor becomes the reshaping op's output, its gradient torch's; twice over, and on a view."""
    import tricycle.nn.functional as F  # noqa: PLC0415

    data = np.random.default_rng(5).normal(size=(2, 3, 4, 4)).astype(np.float32)
    weights = np.random.default_rng(6).normal(size=(3, 2)).astype(np.float32)
    results = []
    for lib, functional in (torch, torch.nn.functional), (tc, F):
        a = lib.tensor(data, requires_grad=True)
        y = functional.adaptive_avg_pool2d(a, 1)  # (2, 3, 1, 1)
        assert y.squeeze_(-1) is y and y.squeeze_(-1) is y and tuple(y.shape) == (2, 3)
        z = (y * 2).t_().unsqueeze_(0)  # (1, 3, 2)
        (z * lib.tensor(weights)).sum().backward()
        results.append(a.grad.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def _masked_scores(lib, a, w, mask, value):
    """d2l's ``masked_softmax`` over an additive attention's scores: a write into a reshaped
    view of a squeezed op's output (writing through both views, as torch's), the scores and
    their squeezed form read after the write."""
    h = a * w  # (B, T, T, 1)
    scores = h.squeeze(-1)  # a view of h
    shape = scores.shape
    X = scores.reshape(-1, shape[-1])  # a view of scores, hence of h
    X[~mask] = value
    out = lib.softmax(X.reshape(shape), dim=-1)
    return out, scores, h


def test_a_write_into_a_reshaped_view_writes_through_as_torchs():
    rng = np.random.default_rng(5)
    a, w = rng.standard_normal((2, 3, 4, 1)), rng.standard_normal((2, 3, 4, 1))
    mask = rng.uniform(size=(6, 4)) < 0.6
    weights = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 3, 4), (2, 3, 4, 1))]

    def run(lib):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(w, requires_grad=True)
        results = _masked_scores(lib, x, y, lib.tensor(mask), -1e6)
        sum(((r * lib.tensor(v)).sum() for r, v in zip(results, weights))).backward()
        return (*results, x.grad, y.grad)

    for mine, other in zip(run(tc), run(torch), strict=True):
        np.testing.assert_allclose(mine.numpy(), other.detach().numpy(), atol=1e-12)
    x, y = (tc.tensor(v, requires_grad=True) for v in (a, w))  # finite differences agree
    assert tc.gradcheck(lambda x, y: _masked_scores(tc, x, y, mask, -3.0)[0], x, y)


@pytest.mark.parametrize(
    "make",
    [
        lambda z: z.transpose(0, 1),  # a view not in z's order
        lambda z: (z, z * 1)[0].reshape(-1),  # z used by another recorded op
        lambda z: z[:, :2],  # a slice's view
        lambda z: z.reshape(-1)[:4].reshape(2, 2),  # a reshaped view of a slice
    ],
)
def test_other_views_are_still_refused_and_nothing_written(make):
    x = tc.ones(2, 3, requires_grad=True)
    z = x * 2
    v = make(z)
    before = z.numpy().copy()
    with pytest.raises(RuntimeError, match="__setitem__: .*(view of its input|recorded op)"):
        v[0] = 5.0
    np.testing.assert_array_equal(z.numpy(), before)
