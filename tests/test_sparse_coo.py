"""tricycle.sparse's COO tensors against torch's: construction, coalescing of repeated indices,
to_dense / to_sparse, transposes, + and scaling, sparse.sum, sparse.mm / spmm / mm / addmm /
smm (values and gradients to the values and to the dense matrix), sparse.softmax /
log_softmax, a GCN layer as GCN code writes it, and the errors."""

import numpy as np
import pytest

import tricycle as tc
from tricycle import sparse

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")

RNG = np.random.default_rng(0)
# repeated cells (0, 2) and (1, 0), stored out of order
IDS = np.array([[0, 1, 1, 0, 2], [2, 0, 0, 2, 1]])
VALS = RNG.standard_normal(5)


def pair(ids=IDS, vals=VALS, size=(3, 4), requires_grad=False):
    """One sparse tensor in tricycle and in torch, with their values as leaves."""
    ours_v = tc.tensor(vals, dtype=tc.float64, requires_grad=requires_grad)
    theirs_v = torch.tensor(vals, dtype=torch.float64, requires_grad=requires_grad)
    ours = tc.sparse_coo_tensor(ids, ours_v, size)
    theirs = torch.sparse_coo_tensor(torch.tensor(ids), theirs_v, size)
    return ours, theirs, ours_v, theirs_v


def same(ours, theirs, atol=1e-12):
    ours = ours.to_dense() if getattr(ours, "is_sparse", False) else ours
    theirs = theirs.to_dense() if theirs.is_sparse else theirs
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), atol=atol)


def test_construction_and_queries_as_torch():
    ours, theirs, *_ = pair()
    assert (
        ours.is_sparse
        and ours.layout is tc.sparse_coo
        and str(ours.layout) == "tricycle.sparse_coo"
    )
    assert ours.shape == theirs.shape and ours.size() == tuple(theirs.size()) and ours.size(1) == 4
    assert ours.sparse_dim() == 2 and ours.dense_dim() == 0 and ours._nnz() == theirs._nnz() == 5
    assert ours.is_coalesced() is theirs.is_coalesced() is False
    assert ours.dtype == np.float64 and ours.device == "cpu" and ours.dim() == 2
    same(ours, theirs)
    default = tc.sparse_coo_tensor(IDS, VALS)  # size: the smallest that holds the indices
    assert default.shape == torch.sparse_coo_tensor(torch.tensor(IDS), torch.tensor(VALS)).shape
    promised = tc.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), is_coalesced=True)
    assert promised.is_coalesced() and promised.indices().numpy().tolist() == [[0, 1]]
    assert not tc.zeros(2, 2).is_sparse  # dense tensors stay dense


def test_coalesce_sums_repeats_and_sorts_as_torch():
    ours, theirs, ours_v, theirs_v = pair(requires_grad=True)
    c, tc_c = ours.coalesce(), theirs.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    np.testing.assert_array_equal(c.indices().numpy(), tc_c.indices().numpy())
    np.testing.assert_allclose(c.values().numpy(), tc_c.values().detach().numpy())
    assert c.indices().dtype == np.int64
    w = RNG.standard_normal(len(tc_c.values()))
    (c.values() * tc.tensor(w)).sum().backward()
    (tc_c.values() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy())  # each repeat: its sum's


def test_to_dense_gradient_and_leaf_grad_as_torch():
    ours, theirs, ours_v, theirs_v = pair(requires_grad=True)
    w = RNG.standard_normal((3, 4))
    (ours.to_dense() * tc.tensor(w)).sum().backward()
    (theirs.to_dense() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy())
    leaf = tc.sparse_coo_tensor(IDS, VALS, (3, 4), requires_grad=True)
    tleaf = torch.sparse_coo_tensor(
        torch.tensor(IDS), torch.tensor(VALS), (3, 4), requires_grad=True
    )
    assert leaf.requires_grad and leaf.is_leaf and leaf.grad is None
    (leaf.to_dense() * tc.tensor(w)).sum().backward()
    (tleaf.to_dense() * torch.tensor(w)).sum().backward()
    assert leaf.grad.is_sparse and tleaf.grad.is_sparse
    same(leaf.grad, tleaf.grad)  # at the stored cells (torch's is uncoalesced here, ours not)


@pytest.mark.parametrize("sparse_dim", [None, 1, 2])
def test_to_sparse_as_torch(sparse_dim):
    a = RNG.standard_normal((3, 4)) * (RNG.random((3, 4)) < 0.4)
    a[1] = 0  # an empty row: no cell when its axis is sparse
    args = () if sparse_dim is None else (sparse_dim,)
    x, t = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = x.to_sparse(*args), t.to_sparse(*args)
    assert ours.is_coalesced() and theirs.is_coalesced()
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    np.testing.assert_array_equal(ours.indices().numpy(), theirs.indices().numpy())
    np.testing.assert_allclose(ours.values().numpy(), theirs.values().detach().numpy())
    same(ours, theirs)
    assert x.to_sparse_coo().shape == x.shape and x.to_dense() is x
    ours.values().sum().backward()
    theirs.values().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_hybrid_tensor_as_torch():
    vals = RNG.standard_normal((5, 2))
    ours = tc.sparse_coo_tensor(IDS[:1], vals, (3, 2))
    theirs = torch.sparse_coo_tensor(torch.tensor(IDS[:1]), torch.tensor(vals), (3, 2))
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    same(ours, theirs)
    same(ours.coalesce(), theirs.coalesce())
    same(ours.transpose(1, 1), theirs.transpose(1, 1))
    same(sparse.sum(ours, 1), torch.sparse.sum(theirs, 1))
    same(sparse.sum(ours, 0), torch.sparse.sum(theirs, 0))
    with pytest.raises(RuntimeError, match="sparse.mm: mat1 must be a sparse matrix"):
        sparse.mm(ours, tc.ones(2, 2, dtype=tc.float64))


def test_transpose_add_mul_as_torch():
    ours, theirs, *_ = pair()
    other = pair(IDS[:, ::-1].copy(), RNG.standard_normal(5))
    same(ours.t(), theirs.t())
    same(ours.transpose(1, 0), theirs.transpose(1, 0))
    assert ours.t().is_coalesced() is theirs.t().is_coalesced() is False
    same(ours + other[0], theirs + other[1])
    same(ours - other[0], theirs - other[1])
    coalesced = ours.coalesce() + other[0].coalesce()
    assert coalesced.is_coalesced() is (theirs.coalesce() + other[1].coalesce()).is_coalesced()
    same(ours * 2.5, theirs * 2.5)
    same(-1.5 * ours, -1.5 * theirs)
    same(ours / 4, theirs / 4)
    same(
        ours.mul(tc.tensor(3.0, dtype=tc.float64)),
        theirs.mul(torch.tensor(3.0, dtype=torch.float64)),
    )


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), (1,), -1])
def test_sum_as_torch(dim):
    ours, theirs, ours_v, theirs_v = pair(requires_grad=True)
    args = () if dim is None else (dim,)
    out, ref = sparse.sum(ours, *args), torch.sparse.sum(theirs, *args)
    assert getattr(out, "is_sparse", False) is ref.is_sparse
    same(out, ref)
    dense = out.to_dense() if ref.is_sparse else out
    (dense * dense).sum().backward()
    ref_dense = ref.to_dense() if ref.is_sparse else ref
    (ref_dense * ref_dense).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy())
    same(ours.sum(*args), theirs.sum(*args))
    assert sparse.sum(ours, 1, dtype=tc.float32).dtype == np.float32


@pytest.mark.parametrize("which", ["sparse.mm", "spmm", "mm", "@", "method"])
def test_mm_values_and_gradients_as_torch(which):
    ours, theirs, ours_v, theirs_v = pair(requires_grad=True)
    d = RNG.standard_normal((4, 3))
    x, t = tc.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    calls = {
        "sparse.mm": (lambda a, b: sparse.mm(a, b), torch.sparse.mm),
        "spmm": (tc.spmm, torch.spmm),
        "mm": (tc.mm, torch.mm),
        "@": (lambda a, b: a @ b, lambda a, b: a @ b),
        "method": (lambda a, b: a.mm(b), lambda a, b: a.mm(b)),
    }
    mine, theirs_call = calls[which]
    out, ref = mine(ours, x), theirs_call(theirs, t)
    same(out, ref)
    w = RNG.standard_normal((3, 3))
    (out * tc.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), atol=1e-12)


def test_values_gradient_only_at_stored_cells_of_a_leaf():
    leaf = tc.sparse_coo_tensor(IDS, VALS, (3, 4), requires_grad=True)
    tleaf = torch.sparse_coo_tensor(
        torch.tensor(IDS), torch.tensor(VALS), (3, 4), requires_grad=True
    )
    d = RNG.standard_normal((4, 2))
    sparse.mm(leaf, tc.tensor(d)).sum().backward()
    torch.sparse.mm(tleaf, torch.tensor(d)).sum().backward()
    same(leaf.grad, tleaf.grad)  # dout @ d.T at the stored cells alone
    np.testing.assert_array_equal(
        leaf.grad.indices().numpy(), tleaf.grad.coalesce().indices().numpy()
    )


def test_addmm_and_smm_as_torch():
    ours, theirs, ours_v, theirs_v = pair(requires_grad=True)
    m, d = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 2))
    x, t = tc.tensor(m, requires_grad=True), torch.tensor(m, requires_grad=True)
    for mine, ref in ((sparse.addmm, torch.sparse.addmm), (tc.addmm, torch.addmm)):
        same(mine(x, ours, tc.tensor(d), beta=0.5, alpha=2.0),
             ref(t, theirs, torch.tensor(d), beta=0.5, alpha=2.0))  # fmt: skip
    sparse.addmm(x, ours, tc.tensor(d), beta=0.5).sum().backward()
    torch.sparse.addmm(t, theirs, torch.tensor(d), beta=0.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy())
    product, ref = tc.smm(ours, tc.tensor(d)), torch.smm(theirs.detach(), torch.tensor(d))
    assert product.is_sparse and ref.is_sparse
    same(product, ref)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_stored_entries_as_torch(dim, log):
    vals = RNG.standard_normal(5) * 30  # large: the slice max keeps exp finite
    ours, theirs, ours_v, theirs_v = pair(vals=vals, requires_grad=True)
    mine, ref = (sparse.log_softmax, torch.sparse.log_softmax) if log else (
        sparse.softmax, torch.sparse.softmax)  # fmt: skip
    out, expected = mine(ours, dim), ref(theirs, dim)
    assert out.is_sparse and out.is_coalesced()
    np.testing.assert_array_equal(out.indices().numpy(), expected.coalesce().indices().numpy())
    np.testing.assert_allclose(out.values().numpy(), expected.coalesce().values().detach().numpy(),
                               atol=1e-12)  # fmt: skip
    w = RNG.standard_normal(out._nnz())
    (out.values() * tc.tensor(w)).sum().backward()
    (expected.coalesce().values() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours_v.grad.numpy(), theirs_v.grad.numpy(), atol=1e-10)


def test_gcn_layer_as_gcn_code_writes_it():
    n, f, h = 6, 4, 3
    edges = np.array([[0, 1, 1, 2, 3, 4, 5, 0, 2], [1, 0, 2, 1, 4, 3, 0, 5, 2]])
    weights = RNG.random(edges.shape[1])
    feats, w0 = RNG.standard_normal((n, f)), RNG.standard_normal((f, h))
    outs = []
    for lib in (tc, torch):
        adj = lib.sparse_coo_tensor(lib.tensor(edges), lib.tensor(weights), (n, n))
        x, w = lib.tensor(feats), lib.tensor(w0, requires_grad=True)
        support = x @ w
        out = lib.spmm(adj, support).relu()
        out.sum().backward()
        outs.append((out, w.grad))
    same(*[o[0] for o in outs])
    np.testing.assert_allclose(outs[0][1].numpy(), outs[1][1].numpy(), atol=1e-12)


def test_errors_as_torch():
    ours, theirs, *_ = pair()
    with pytest.raises(RuntimeError, match="indices and values must have same nnz"):
        tc.sparse_coo_tensor(IDS, VALS[:3], (3, 4))
    with pytest.raises(RuntimeError, match="size \\(1, 4\\) is inconsistent with indices"):
        tc.sparse_coo_tensor(IDS, VALS, (1, 4))
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(torch.tensor([0, 1]), torch.ones(2))
    with pytest.raises(RuntimeError, match="sparse_coo_tensor: indices must be sparse_dim x nnz"):
        tc.sparse_coo_tensor([0, 1], [1.0, 1.0])
    floats = tc.sparse_coo_tensor(IDS.astype(float), VALS, (3, 4))  # cast to int64, as torch's
    same(
        floats,
        torch.sparse_coo_tensor(torch.tensor(IDS, dtype=torch.float64), torch.tensor(VALS), (3, 4)),
    )
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError):
            getattr(theirs, name)()
        with pytest.raises(
            RuntimeError, match=f"Tensor.{name}: cannot get {name} on an uncoalesced"
        ):
            getattr(ours, name)()
    with pytest.raises(RuntimeError):
        theirs + torch.ones(3, 4, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        ours + tc.ones(3, 4)
    with pytest.raises(RuntimeError, match="expected sizes of 'self' and 'other' to match"):
        ours + tc.sparse_coo_tensor(IDS, VALS, (4, 4))
    with pytest.raises(RuntimeError):
        torch.sparse.mm(theirs, torch.ones(4, 2, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="sparse.mm: expected one dtype"):
        sparse.mm(ours, tc.ones(4, 2, dtype=tc.float32))
    with pytest.raises(RuntimeError, match="sparse.mm: shapes \\(3, 4\\) and \\(3, 2\\)"):
        sparse.mm(ours, tc.ones(3, 2, dtype=tc.float64))
    with pytest.raises(TypeError, match="sparse.mm: mat1"):
        sparse.mm(tc.ones(3, 4), tc.ones(4, 2))
    with pytest.raises(RuntimeError, match="must both be sparse or both dense"):
        tc.sparse_coo_tensor(IDS[:1], RNG.standard_normal((5, 2)), (3, 2)).transpose(0, 1)
    with pytest.raises(NotImplementedError, match="COO and CSR layouts alone"):
        tc.ones(2, 2).to_sparse_csc()
