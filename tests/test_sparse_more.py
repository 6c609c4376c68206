"""tricycle.sparse's second step against torch's: a dense tensor's ``+``, ``-`` and ``@`` with a
sparse one (``tricycle.matmul``/``mm``/``Tensor.mm`` too), ``*`` of sparse tensors and of a
sparse and a dense one, ``pow`` and ``sqrt``; CSR matrices (``sparse_csr_tensor``,
``to_sparse_csr``, their indices, ``to_dense``, ``to_sparse_coo``, ``mm`` with values'
gradients, the invariants and ``check_sparse_tensor_invariants``); ``sampled_addmm``,
``spdiags`` and the legacy ``sparse.FloatTensor`` constructor; and the errors."""

import warnings

import numpy as np
import pytest

import tricycle as tc
from tricycle import sparse

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks", "ignore:.*deprecated")

RNG = np.random.default_rng(1)
IDS = np.array([[0, 1, 1, 0, 2], [2, 0, 0, 2, 1]])  # repeated cells, out of order
VALS = RNG.standard_normal(5)
CROW, COL, CVALS = [0, 1, 3, 3], [2, 0, 3], RNG.standard_normal(3)


def coo(requires_grad=False, vals=VALS):
    ours_v = tc.tensor(vals, dtype=tc.float64, requires_grad=requires_grad)
    theirs_v = torch.tensor(vals, dtype=torch.float64, requires_grad=requires_grad)
    ours = tc.sparse_coo_tensor(IDS, ours_v, (3, 4))
    return ours, torch.sparse_coo_tensor(torch.tensor(IDS), theirs_v, (3, 4)), ours_v, theirs_v


def csr(requires_grad=False):
    ours_v = tc.tensor(CVALS, dtype=tc.float64, requires_grad=requires_grad)
    theirs_v = torch.tensor(CVALS, dtype=torch.float64, requires_grad=requires_grad)
    ours = sparse.sparse_csr_tensor(CROW, COL, ours_v, (3, 4))
    theirs = torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COL), theirs_v, (3, 4))
    return ours, theirs, ours_v, theirs_v


def dense(*shape, requires_grad=False):
    x = RNG.standard_normal(shape)
    ours = tc.tensor(x, dtype=tc.float64, requires_grad=requires_grad)
    return ours, torch.tensor(x, dtype=torch.float64, requires_grad=requires_grad)


def same(ours, theirs, atol=1e-12):
    if hasattr(ours, "_sparse_layout"):
        assert ours.layout.name == str(theirs.layout).split(".")[-1]
        ours, theirs = ours.to_dense(), theirs.to_dense()
    assert not theirs.is_sparse and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=atol)


@pytest.mark.parametrize("make", [coo, csr])
def test_dense_add_sub_matmul_sparse_as_torch(make):
    ours, theirs, ours_v, theirs_v = make(requires_grad=True)
    a, ta = dense(3, 4, requires_grad=True)
    b, tb = dense(5, 3, requires_grad=True)
    second, tsecond = (a - ours, ta - theirs) if make is coo else (ours + a, theirs + ta)
    results = [a + ours, second, b @ ours, tc.matmul(b, ours), tc.mm(b, ours), b.mm(ours)]
    expected = [ta + theirs, tsecond, tb @ theirs, torch.matmul(tb, theirs)]
    expected += [torch.mm(tb, theirs), tb.mm(theirs)]
    for r, t in zip(results, expected, strict=True):
        same(r, t)
    weights = RNG.standard_normal((6, 3, 4))
    loss = sum((r * tc.tensor(w)).sum() for r, w in zip(results[:2], weights, strict=False))
    tloss = sum((r * torch.tensor(w)).sum() for r, w in zip(expected[:2], weights, strict=False))
    w2 = RNG.standard_normal((5, 4))
    loss = loss + (results[2] * tc.tensor(w2)).sum()
    tloss = tloss + (expected[2] * torch.tensor(w2)).sum()
    loss.backward()
    tloss.backward()
    for g, tg in ((ours_v.grad, theirs_v.grad), (a.grad, ta.grad), (b.grad, tb.grad)):
        np.testing.assert_allclose(g.numpy(), tg.numpy(), atol=1e-10)


def test_sparse_matmul_dense_through_top_level_as_torch():
    ours, theirs, *_ = coo()
    m, tm = dense(4, 2)
    same(tc.matmul(ours, m), torch.matmul(theirs, tm))
    c, tcr, *_ = csr()
    same(tc.matmul(c, m), torch.matmul(tcr, tm))
    same(tc.mm(c, m), torch.mm(tcr, tm))
    same(c @ m, tcr @ tm)
    with pytest.raises(RuntimeError):
        theirs + torch.ones(3, 4, dtype=torch.float64)  # sparse + dense: refused by both
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        ours + tc.ones(3, 4)
    with pytest.raises(RuntimeError):
        torch.ones(4, dtype=torch.float64) + theirs
    with pytest.raises(RuntimeError, match="does not currently support broadcasting"):
        tc.ones(4, dtype=tc.float64) + ours
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tc.ones(2, 2, dtype=tc.float64) @ ours


def test_elementwise_mul_pow_sqrt_as_torch():
    ours, theirs, ours_v, theirs_v = coo(requires_grad=True)
    other_vals = RNG.uniform(0.5, 2.0, 5)
    ours2, theirs2, ours2_v, theirs2_v = coo(requires_grad=True, vals=other_vals)
    d, td = dense(3, 4)
    row, trow = dense(4)
    pos, tpos = coo(vals=np.abs(VALS) + 0.1)[:2]
    first = ours.coalesce()
    pairs = [(ours * ours2, theirs * theirs2), (first * ours2, theirs.coalesce() * theirs2),
             (ours * d, theirs * td), (d * ours, td * theirs), (ours * row, theirs * trow),
             (ours**2, theirs**2), (ours.pow(-1), theirs.pow(-1)), (pos.sqrt(), tpos.sqrt()),
             (ours * 2.5, theirs * 2.5)]  # fmt: skip
    for r, t in pairs:
        assert r.is_sparse
        same(r, t)
    assert (ours.coalesce() * ours2.coalesce()).is_coalesced()
    assert (ours**2).is_coalesced() is (theirs**2).is_coalesced() is True
    loss = (
        (ours * ours2).to_dense().sum() + (ours * d).to_dense().sum() + (ours**3).to_dense().sum()
    )
    tloss = (theirs * theirs2).to_dense().sum() + (theirs * td).to_dense().sum()
    tloss = tloss + (theirs**3).to_dense().sum()
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours2_v.grad.numpy(), theirs2_v.grad.numpy(), atol=1e-10)
    # different patterns: the cells both store
    a = tc.sparse_coo_tensor([[0, 1, 2]], tc.tensor([1.0, 2.0, 3.0]), (4,))
    b = tc.sparse_coo_tensor([[2, 1, 3]], tc.tensor([5.0, 7.0, 9.0]), (4,))
    ta = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2]]), torch.tensor([1.0, 2.0, 3.0]), (4,))
    tb = torch.sparse_coo_tensor(torch.tensor([[2, 1, 3]]), torch.tensor([5.0, 7.0, 9.0]), (4,))
    same(a * b, ta * tb)
    assert (a * b)._nnz() == 2  # the cells both store (torch's may keep zeros beside them)
    with pytest.raises(RuntimeError):
        theirs.pow(0)
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power"):
        ours.pow(0)
    with pytest.raises(RuntimeError, match="expected sizes of 'self' and 'other' to match"):
        ours * a
    with pytest.raises(RuntimeError, match="does not broadcast"):
        ours * tc.ones(5)


def test_csr_construction_conversions_as_torch():
    ours, theirs, *_ = csr()
    assert ours.layout is tc.sparse_csr and not ours.is_sparse and ours.is_sparse_csr
    assert theirs.is_sparse is ours.is_sparse and tc.sparse_csr is sparse.csr.sparse_csr
    assert ours.shape == theirs.shape and ours._nnz() == theirs._nnz() == 3
    np.testing.assert_array_equal(ours.crow_indices().numpy(), theirs.crow_indices().numpy())
    np.testing.assert_array_equal(ours.col_indices().numpy(), theirs.col_indices().numpy())
    np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())
    same(ours, theirs)
    same(ours.to_sparse_coo(), theirs.to_sparse_coo())
    same(ours.to_sparse(), theirs.to_sparse())
    assert ours.to_sparse().is_sparse and ours.to_sparse_coo().is_coalesced()
    inferred = sparse.sparse_csr_tensor(CROW, COL, CVALS)
    tinf = torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COL), torch.tensor(CVALS))
    assert inferred.shape == tinf.shape
    x = RNG.standard_normal((4, 5)) * (RNG.random((4, 5)) < 0.5)
    made, tmade = tc.tensor(x).to_sparse_csr(), torch.tensor(x, dtype=torch.float32).to_sparse_csr()
    for get in ("crow_indices", "col_indices", "values"):
        np.testing.assert_allclose(getattr(made, get)().numpy(), getattr(tmade, get)().numpy())
    from_coo, tfrom = coo()[0].to_sparse_csr(), coo()[1].to_sparse_csr()
    np.testing.assert_array_equal(from_coo.crow_indices().numpy(), tfrom.crow_indices().numpy())
    same(from_coo, tfrom)
    same(tc.tensor(x).to_sparse(layout=tc.sparse_csr), tmade, atol=1e-6)
    d, td = dense(3, 4)
    for r, t in ((ours * 2, theirs * 2), (ours * d, theirs * td), (d * ours, td * theirs)):
        assert r.is_sparse_csr
        same(r, t)
    with pytest.raises(RuntimeError):
        td - theirs
    with pytest.raises(RuntimeError, match="unsupported tensor layout: SparseCsr"):
        d - ours


def test_csr_mm_gradients_as_torch():
    ours, theirs, ours_v, theirs_v = csr(requires_grad=True)
    m, tm = dense(4, 2, requires_grad=True)
    w = RNG.standard_normal((3, 2))
    (ours.mm(m) * tc.tensor(w)).sum().backward()
    (theirs.mm(tm) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), atol=1e-12)
    leaf = sparse.sparse_csr_tensor(CROW, COL, tc.tensor(CVALS), (3, 4), requires_grad=True)
    (leaf @ tc.tensor(np.ones((4, 2)))).sum().backward()
    assert leaf.grad.is_sparse_csr and leaf.is_leaf  # at its cells (torch's: the dense grad)
    np.testing.assert_allclose(leaf.grad.values().numpy(), [2.0, 2.0, 2.0])


def test_csr_invariants_as_torch():
    v = torch.ones(3)
    cases = [([1, 1, 3], [2, 0, 2], "crow_indices\\[..., 0\\] == 0"),
             ([0, 1, 2], [2, 0, 2], "crow_indices\\[..., -1\\] == nnz"),
             ([0, 1, 3], [3, 0, 2], "0 <= col_indices < ncols"),
             ([0, 1, 3], [2, 2, 0], "sorted and distinct")]  # fmt: skip
    for crow, col, message in cases:
        with pytest.raises(RuntimeError, match=message):
            torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), v, (2, 3),
                                    check_invariants=True)  # fmt: skip
        with pytest.raises(RuntimeError, match=message):
            sparse.sparse_csr_tensor(crow, col, tc.ones(3), (2, 3), check_invariants=True)
    unsorted = ([0, 1, 3], [2, 2, 0])  # allowed unless asked, as torch's
    sparse.sparse_csr_tensor(*unsorted, tc.ones(3), (2, 3))
    check = sparse.check_sparse_tensor_invariants
    assert not check.is_enabled()
    with check():
        assert check.is_enabled()
        with pytest.raises(RuntimeError, match="sorted and distinct"):
            sparse.sparse_csr_tensor(*unsorted, tc.ones(3), (2, 3))
        sparse.sparse_csr_tensor(*unsorted, tc.ones(3), (2, 3), check_invariants=False)
    assert not check.is_enabled()
    assert check(enable=True)(check.is_enabled)() and not check.is_enabled()
    with pytest.raises(RuntimeError, match="number of rows \\+ 1 \\(=4\\), but got 3"):
        sparse.sparse_csr_tensor([0, 1, 3], [2, 0, 2], tc.ones(3), (3, 3))
    with pytest.raises(RuntimeError, match="must be equal to nnz \\(=3\\)"):
        sparse.sparse_csr_tensor([0, 1, 3], [2, 0], tc.ones(3), (2, 3))
    with pytest.raises(NotImplementedError, match="2-D"):
        sparse.sparse_csr_tensor([0, 1, 3], [2, 0, 2], tc.ones(3), (2, 3, 4))


def test_sampled_addmm_as_torch():
    ours, theirs, ours_v, theirs_v = csr(requires_grad=True)
    m1, tm1 = dense(3, 5, requires_grad=True)
    m2, tm2 = dense(5, 4, requires_grad=True)
    r = sparse.sampled_addmm(ours, m1, m2, beta=0.5, alpha=2.0)
    t = torch.sparse.sampled_addmm(theirs, tm1, tm2, beta=0.5, alpha=2.0)
    assert r.is_sparse_csr
    same(r, t)
    w = RNG.standard_normal(3)
    (r.values() * tc.tensor(w)).sum().backward()
    (t.values() * torch.tensor(w)).sum().backward()
    for g, tg in ((ours_v.grad, theirs_v.grad), (m1.grad, tm1.grad), (m2.grad, tm2.grad)):
        np.testing.assert_allclose(g.numpy(), tg.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="expected mat1 \\(m, k\\) and mat2 \\(k, n\\)"):
        sparse.sampled_addmm(ours, m1, m1)
    with pytest.raises(TypeError, match="a sparse CSR matrix"):
        sparse.sampled_addmm(coo()[0], m1, m2)


@pytest.mark.parametrize("shape", [(3, 4), (5, 5)])
def test_spdiags_as_torch(shape):
    # torch's (4, 3) and (2, 6) keep cells outside the matrix (invariants it breaks): not
    # compared; its spdiags has no derivative, tricycle's has: checked against the cells taken
    diagonals = tc.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    offsets = [0, 1, -2]
    ours = sparse.spdiags(diagonals, tc.tensor(offsets, dtype=tc.int64), shape)
    coded = torch.arange(12, dtype=torch.float64).reshape(3, 4)  # each value its flat position
    theirs = torch.sparse.spdiags(torch.tensor(diagonals.numpy()), torch.tensor(offsets), shape)
    taken = torch.sparse.spdiags(coded, torch.tensor(offsets), shape)._values().long().numpy()
    assert ours.is_coalesced() is theirs.is_coalesced()
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    same(ours, theirs)
    weights = RNG.standard_normal(len(taken))
    (ours._values() * tc.tensor(weights)).sum().backward()
    expected = np.zeros(12)
    np.add.at(expected, taken, weights)
    np.testing.assert_allclose(diagonals.grad.numpy().reshape(-1), expected)
    as_csr = sparse.spdiags(diagonals, tc.tensor(offsets, dtype=tc.int64), shape, tc.sparse_csr)
    same(as_csr, theirs.to_sparse_csr())
    with pytest.raises(RuntimeError, match="Offset tensor contains duplicate values"):
        torch.sparse.spdiags(coded, torch.tensor([0, 1, 1]), shape)
    with pytest.raises(RuntimeError, match="Offset tensor contains duplicate values"):
        sparse.spdiags(diagonals, tc.tensor([0, 1, 1], dtype=tc.int64), shape)


def test_legacy_float_tensor_as_torch():
    ids, vals = torch.tensor(IDS), torch.tensor(VALS, dtype=torch.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theirs = torch.sparse.FloatTensor(ids, vals, torch.Size([3, 4]))
        ours_v = tc.tensor(VALS, dtype=tc.float32)
        ours = sparse.FloatTensor(tc.tensor(IDS, dtype=tc.int64), ours_v, (3, 4))
    assert [w.category for w in caught] == [UserWarning, UserWarning]
    assert "deprecated" in str(caught[1].message)
    same(ours, theirs, atol=1e-6)
    assert ours.is_coalesced() is theirs.is_coalesced() is False
    assert isinstance(ours, sparse.FloatTensor) and not isinstance(ours, sparse.DoubleTensor)
    assert isinstance(theirs, torch.sparse.FloatTensor)
    empty = sparse.FloatTensor(2, 3)
    assert empty.shape == torch.sparse.FloatTensor(2, 3).shape and empty._nnz() == 0
    assert not isinstance(tc.ones(2), sparse.FloatTensor)


def test_is_sparse_only_for_coo():
    assert coo()[0].is_sparse and not csr()[0].is_sparse and not tc.ones(2).is_sparse
    assert not tc.ones(2).is_sparse_csr and csr()[0].is_sparse_csr
