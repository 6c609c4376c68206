"""torch's last top-level functions on tricycle: ``native_channel_shuffle``, ATen's
``embedding_bag`` (torch's 4-tuple: output, offset2bag, bag_size, max_indices, and the
gradients of the table and the per-sample weights), ``embedding_renorm_`` (in place),
``segment_reduce`` (every reduction, lengths or offsets, an inner axis, empty segments,
``initial``, ``unsafe``: values and gradients against torch and finite differences), and
``add``/``sub`` of a dense and a sparse tensor; the errors as torch's."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import check_grads
from tricycle import backend

torch = pytest.importorskip("torch")
TORCH_VERSION = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


def arrays(*xs):
    return [x.detach().numpy() if isinstance(x, torch.Tensor) else x.array for x in xs]


# ------------------------------------------------------------------ native_channel_shuffle
@pytest.mark.parametrize("shape, groups", [((2, 6, 3), 3), ((1, 8, 2, 2), 2), ((3, 4), 4)])
def test_native_channel_shuffle(shape, groups):
    """F.channel_shuffle's values; an input of 2 dims refused, as torch's."""
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    if len(shape) < 3:
        with pytest.raises(RuntimeError):
            torch.native_channel_shuffle(torch.tensor(x), groups)
        with pytest.raises(ValueError, match="3 dimensions"):
            tc.native_channel_shuffle(tc.tensor(x), groups)
        return
    ours = tc.native_channel_shuffle(tc.tensor(x), groups)
    np.testing.assert_array_equal(ours.array, torch.native_channel_shuffle(torch.tensor(x), groups))


# ------------------------------------------------------------------ embedding_bag
IDS = np.array([1, 2, 5, 5, 4, 3, 2, 0])
OFFSETS = [[0, 2, 2, 5], [0, 8], [0, 0, 3], [0, 3, 8, 8]]


def bags(lib, mode, offsets, pad, weighted, last, dtype, seed=0):
    rng = np.random.default_rng(seed)
    grad = dtype == np.float64  # float32: the forward-only path, with torch's fast "sum"
    table = lib.tensor(rng.normal(size=(6, 3)).astype(dtype), requires_grad=grad)
    psw = lib.tensor(rng.random(8).astype(dtype), requires_grad=grad) if weighted else None
    bounds = offsets + [8] if last else offsets
    out = lib.embedding_bag(table, lib.tensor(IDS), lib.tensor(bounds), False, mode, False,
                            psw, last, pad)  # fmt: skip
    if not grad:
        return out, None, None
    (out[0] * lib.tensor(rng.normal(size=tuple(out[0].shape)))).sum().backward()
    return out, table.grad, None if psw is None else psw.grad


@pytest.mark.parametrize("offsets", OFFSETS)
@pytest.mark.parametrize("mode, weighted", [(0, False), (0, True), (1, False), (2, False)])
@pytest.mark.parametrize("pad", [None, 2, -1])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_bag_as_torch(offsets, mode, weighted, pad, last, dtype):
    """The 4-tuple (bookkeeping as torch's CPU kernel fills it) and the gradients (float64)."""
    if last and offsets[-1] == 8:
        offsets = offsets[:-1]
    ours, theirs = (bags(lib, mode, offsets, pad, weighted, last, dtype) for lib in (tc, torch))
    for got, want in zip(ours[0], theirs[0]):
        assert got.shape == tuple(want.shape) and str(got.dtype) == str(want.dtype)[6:]
        tight = got.dtype == np.float64  # float32: sums in another order than torch's
        np.testing.assert_allclose(got.array, want.detach().numpy(), rtol=1e-6 if tight else 1e-5,
                                   atol=1e-12 if tight else 1e-7)  # fmt: skip
    for got, want in zip(ours[1:], theirs[1:]):
        if want is not None:
            np.testing.assert_allclose(got.array, want.numpy(), atol=1e-12)


def test_embedding_bag_gradients_by_finite_differences():
    ids, offsets = tc.tensor(IDS), tc.tensor([0, 3, 3, 6])
    for mode in (0, 1, 2):
        check_grads(lambda w: tc.embedding_bag(w, ids, offsets, mode=mode)[0],
                    np.random.default_rng(1).normal(size=(6, 3)))  # fmt: skip
    table, weights = np.random.default_rng(2).normal(size=(6, 3)), np.linspace(0.1, 2, 8)
    check_grads(lambda w, p: tc.embedding_bag(w, ids, offsets, per_sample_weights=p)[0],
                table, weights)  # fmt: skip


def test_embedding_bag_errors_as_torch():
    w, ids, offsets = np.ones((6, 3), np.float32), IDS, np.array([0, 2])
    psw = np.ones(8, np.float32)
    for args in [(w, ids, offsets, False, 5), (w, ids, offsets, False, 1, False, psw),
                 (w, ids, np.array([1, 2]), False, 1), (w, ids + 5, offsets, False, 1),
                 (w, ids, offsets, False, 1, False, None, False, 7)]:  # fmt: skip
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            tc.embedding_bag(*(tc.tensor(a) if isinstance(a, np.ndarray) else a for a in args))
        if TORCH_VERSION < (2, 13):  # torch 2.11's CPU kernel crashes the process on some
            continue
        with pytest.raises(Exception) as theirs:
            torch.embedding_bag(
                *(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
            )
        assert isinstance(theirs.value, RuntimeError)
    with pytest.raises(RuntimeError, match="1-D"):
        tc.embedding_bag(tc.tensor(w), tc.tensor(ids.reshape(2, 4)), tc.tensor(offsets))


# ------------------------------------------------------------------ embedding_renorm_
@pytest.mark.parametrize("max_norm, norm_type", [(1.0, 2.0), (2.0, 1.0), (0.5, np.inf), (3.0, 3.0)])
def test_embedding_renorm_in_place_as_torch(max_norm, norm_type):
    w = (np.random.default_rng(0).normal(size=(5, 4)) * 2).astype(np.float32)
    ids = np.array([[1, 1], [3, 0]])
    ours, theirs = tc.tensor(w.copy()), torch.tensor(w.copy())
    result = tc.embedding_renorm_(ours, tc.tensor(ids), max_norm, norm_type)
    torch.embedding_renorm_(theirs, torch.tensor(ids), max_norm, norm_type)
    assert result is ours
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-6)
    assert np.array_equal(ours.array[[2, 4]], w[[2, 4]])  # rows not picked: untouched


def test_embedding_renorm_refusals():
    leaf = tc.ones(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        tc.embedding_renorm_(leaf, tc.tensor([1]), 1.0, 2.0)
    with tc.no_grad():  # as F.embedding's max_norm runs it on a parameter
        tc.embedding_renorm_(leaf, tc.tensor([1]), 1.0, 2.0)
    np.testing.assert_allclose(np.linalg.norm(leaf.array[1]), 1.0, rtol=1e-6)
    with pytest.raises(RuntimeError, match="integers"):
        tc.embedding_renorm_(tc.ones(3, 3), tc.tensor([1.0]), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="weight"):
        tc.embedding_renorm_(tc.ones(3), tc.tensor([1]), 1.0, 2.0)
    with pytest.raises(IndexError):
        tc.embedding_renorm_(tc.ones(3, 3), tc.tensor([9]), 1.0, 2.0)


# ------------------------------------------------------------------ segment_reduce
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "amax", "amin"]
SEGMENTS = [  # (data shape, keywords as arrays, axis)
    ((6, 2), {"lengths": [2, 0, 4]}, 0),
    ((6,), {"offsets": [0, 2, 2, 6]}, 0),
    ((2, 5, 3), {"lengths": [[2, 3, 0], [1, 1, 3]]}, 1),
    ((2, 5, 3), {"offsets": [[0, 2, 5], [0, 4, 5]]}, 1),
    ((6, 2), {"lengths": [2, 1], "unsafe": True}, 0),
    ((3, 4), {"lengths": [[4], [1], [2]], "unsafe": True}, -1),
]


def segments(lib, data, reduce, keywords, axis, initial, grad_seed=1):
    x = lib.tensor(data, requires_grad=True)
    kw = {k: v if isinstance(v, bool) else lib.tensor(v) for k, v in keywords.items()}
    out = lib.segment_reduce(x, reduce, axis=axis, initial=initial, **kw)
    grad = np.random.default_rng(grad_seed).normal(size=tuple(out.shape))
    finite = lib.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)  # empty segments: no grad
    (finite * lib.tensor(grad)).sum().backward()
    return out, x.grad


@pytest.mark.parametrize("shape, keywords, axis", SEGMENTS)
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 0.5])
def test_segment_reduce_as_torch(shape, keywords, axis, reduce, initial):
    """Values (empty segments: torch's 0, 1, -inf, inf, nan or ``initial``) and gradients;
    a zero among the data for the products."""
    data = np.random.default_rng(0).normal(size=shape)
    data.reshape(-1)[3] = 0.0
    ours, theirs = segments(tc, data, reduce, keywords, axis, initial), segments(
        torch, data, reduce, keywords, axis, initial)  # fmt: skip
    np.testing.assert_allclose(ours[0].array, theirs[0].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[1].array, theirs[1].numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_segment_reduce_ties_share_the_gradient(reduce):
    """Tied elements share their segment's gradient equally, as torch's (whose CPU kernel
    divides only positive gradients: these are positive)."""
    data = np.array([[3.0, 1.0], [3.0, 1.0], [1.0, 3.0], [4.0, 4.0]])
    g = np.abs(np.random.default_rng(5).normal(size=(2, 2)))
    x, y = tc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (tc.segment_reduce(x, reduce, lengths=tc.tensor([3, 1])) * tc.tensor(g)).sum().backward()
    (
        torch.segment_reduce(y, reduce, lengths=torch.tensor([3, 1])) * torch.tensor(g)
    ).sum().backward()
    np.testing.assert_allclose(x.grad.array, y.grad.numpy(), rtol=1e-12)
    assert (x.grad.array != 0).sum() > 4  # ties were there to share


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_segment_reduce_finite_differences(reduce):
    data = np.random.default_rng(3).normal(size=(7, 2))
    lengths = tc.tensor([3, 0, 4])
    initial = -10.0 if reduce == "max" else 0.5  # the empty segment: initial, not -inf
    check_grads(lambda x: tc.segment_reduce(x, reduce, lengths=lengths, initial=initial), data)


def test_segment_reduce_errors_as_torch():
    data = np.arange(6.0)
    cases = [
        ("sum", {"lengths": [1, 1]}, 0),  # the lengths do not sum to the axis
        ("foo", {"lengths": [6]}, 0),
        ("sum", {}, 0),
        ("sum", {"indices": [6]}, 0),
        ("sum", {"lengths": [-1, 7]}, 0),
        ("sum", {"lengths": [6]}, 1),
    ]
    for reduce, keywords, axis in cases:
        with pytest.raises(Exception) as theirs:
            kw = {k: torch.tensor(v) for k, v in keywords.items()}
            torch.segment_reduce(torch.tensor(data), reduce, axis=axis, **kw)
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            kw = {k: tc.tensor(v) for k, v in keywords.items()}
            tc.segment_reduce(tc.tensor(data), reduce, axis=axis, **kw)
        assert isinstance(theirs.value, RuntimeError | IndexError)
    with pytest.raises(TypeError, match="floating"):
        tc.segment_reduce(tc.tensor([1, 2]), "sum", lengths=tc.tensor([2]))


# ------------------------------------------------------------------ dense and sparse
@pytest.mark.parametrize("alpha", [1, 2.5])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_sub_dense_and_sparse_as_torch(op, alpha):
    """dense op sparse: dense, the dense gradient passed; sparse op sparse: sparse; sparse op
    dense: torch's RuntimeError."""
    d = np.random.default_rng(0).normal(size=(3, 4))
    s = np.eye(3, 4) * 2
    x, y = tc.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    ours = getattr(tc, op)(x, tc.tensor(s).to_sparse(), alpha=alpha)
    theirs = getattr(torch, op)(y, torch.tensor(s).to_sparse(), alpha=alpha)
    assert type(ours) is type(x) and theirs.layout == torch.strided
    np.testing.assert_allclose(ours.array, theirs.detach().numpy())
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    np.testing.assert_allclose(x.grad.array, y.grad.numpy())
    method = getattr(x.detach(), op)(tc.tensor(s).to_sparse(), alpha=alpha)
    np.testing.assert_allclose(method.array, theirs.detach().numpy())
    both = getattr(tc, op)(tc.tensor(s).to_sparse(), tc.tensor(d).to_sparse(), alpha=alpha)
    want = getattr(torch, op)(torch.tensor(s).to_sparse(), torch.tensor(d).to_sparse(), alpha=alpha)
    assert both.layout == tc.sparse_coo
    np.testing.assert_allclose(both.to_dense().array, want.to_dense().numpy())
    with pytest.raises(RuntimeError, match="not supported"):
        getattr(tc, op)(tc.tensor(s).to_sparse(), tc.tensor(d), alpha=alpha)
    with pytest.raises(RuntimeError):
        getattr(torch, op)(torch.tensor(s).to_sparse(), torch.tensor(d), alpha=alpha)


# ------------------------------------------------------------------ on a GPU (the lead's run)
@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_as_on_the_host():
    """segment_reduce, embedding_bag and embedding_renorm_ on cupy arrays: the host's values
    and gradients (host lengths and offsets moved over)."""
    rng = np.random.default_rng(0)
    data, table = rng.normal(size=(2, 5, 3)), rng.normal(size=(6, 3)) * 3
    lengths = tc.tensor([[2, 3, 0], [1, 1, 3]])
    results = []
    for device in ("cpu", "cuda"):
        x = tc.tensor(data).to(device).requires_grad_()
        w = tc.tensor(table).to(device).requires_grad_()
        seg = tc.segment_reduce(x, "prod", lengths=lengths, axis=1, initial=0.5)
        bag = tc.embedding_bag(w, tc.tensor(IDS).to(device), tc.tensor([0, 2, 2, 5]).to(device),
                               mode=2)  # fmt: skip
        (seg.sum() + bag[0].sum()).backward()
        renormed = tc.tensor(table).to(device)
        tc.embedding_renorm_(renormed, tc.tensor([1, 4]).to(device), 1.0, 2.0)
        parts = (seg, *bag, x.grad, w.grad, renormed)
        results.append([backend.to_host_array(part.array) for part in parts])
    for host, gpu in zip(*results):
        np.testing.assert_allclose(gpu, host, rtol=1e-12)
