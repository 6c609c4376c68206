"""Round 40's review of the code of rounds 36-39: each test shows a defect that was found (it
failed before its fix), against torch where torch is the oracle.

- ``clone``/``to``/``*_like`` in ``preserve_format`` of an expanded (overlapping) tensor laid
  the expanded axis innermost, leaving a non-contiguous copy where torch's is row-major
  (``tricycle.memory_formats``: the axes are now ranked by torch's rules, where a zero stride
  is not compared).
- ``segment_reduce`` failed inside numpy on data with an empty axis, accepted decreasing
  offsets (negative segment lengths) silently, and failed with an IndexError on 0-d data.
"""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def _layout(x):
    """(shape, strides of the axes longer than 1, is_contiguous): a tensor's layout as far as
    it matters (a size-1 axis' stride never does)."""
    shape, strides = tuple(x.shape), tuple(x.stride())
    return shape, tuple(s for s, n in zip(strides, shape, strict=True) if n > 1), x.is_contiguous()


VIEWS = {
    "expanded": lambda x: x[:1].expand(3, *x.shape[1:]),
    "expanded middle": lambda x: x[:, :1].expand(x.shape[0], 4, *x.shape[2:]),
    "permuted": lambda x: x.permute(2, 0, 1),
    "permuted, sliced": lambda x: x.permute(2, 0, 1)[:, ::2],
    "expanded, permuted": lambda x: x[:1].expand(3, *x.shape[1:]).permute(2, 0, 1),
}
COPIES = {
    "clone": lambda lib, x: x.clone(),
    "to(dtype)": lambda lib, x: x.to(lib.float32),
    "empty_like": lambda lib, x: lib.empty_like(x),
    "zeros_like": lambda lib, x: lib.zeros_like(x),
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("copy", COPIES)
def test_preserve_format_copies_lay_out_as_torch(view, copy):
    values = np.random.default_rng(0).standard_normal((2, 3, 5))
    layouts = [_layout(COPIES[copy](lib, VIEWS[view](lib.tensor(values)))) for lib in (torch, tc)]
    assert layouts[1] == layouts[0]


def test_clone_of_an_expanded_tensor_keeps_values_and_gradient():
    values = np.random.default_rng(1).standard_normal((1, 3, 4))
    x = tc.tensor(values, requires_grad=True)
    y = x.expand(5, 3, 4).clone()
    assert y.is_contiguous()
    np.testing.assert_array_equal(y.array, np.broadcast_to(values, (5, 3, 4)))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.array, np.full((1, 3, 4), 5.0))


# ------------------------------------------------------------------ segment_reduce
def torch_and_tricycle(*arrays):
    """(lib, *arrays as lib's tensors) for torch, then for tricycle."""
    for lib in (torch, tc):
        yield lib, *(lib.tensor(a) for a in arrays)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_of_empty_data_as_torch(reduce, initial):
    for lib, data, lengths in torch_and_tricycle(np.zeros((0, 3)), np.array([0, 0])):
        data.requires_grad_()
        out = lib.segment_reduce(data, reduce, lengths=lengths, initial=initial)
        out.sum().backward()
        if lib is torch:
            expected, expected_grad = out.detach().numpy(), data.grad.numpy()
    np.testing.assert_array_equal(out.array, expected)
    assert out.shape == (2, 3) and data.grad.shape == expected_grad.shape == (0, 3)


def test_segment_reduce_refuses_decreasing_offsets_as_torch():
    data = np.arange(6.0)
    for lib, x, offsets in torch_and_tricycle(data, np.array([0, 3, 2, 6])):
        with pytest.raises(RuntimeError, match="segment_length >= 0|offsets must not decrease"):
            lib.segment_reduce(x, "sum", offsets=offsets)


def test_segment_reduce_refuses_0d_data_as_torch():
    for lib, x, lengths in torch_and_tricycle(np.array(5.0), np.array([1])):
        with pytest.raises(RuntimeError, match="dim|0-d"):
            lib.segment_reduce(x, "sum", lengths=lengths)


# ------------------------------------------------------------------ native_norm
def test_native_norm_of_a_sparse_tensor_as_torch():
    """Its docstring said tricycle had no sparse tensors and it refused every input."""
    indices, values = np.array([[0, 1, 1, 1], [2, 0, 0, 1]]), np.array([3.0, 4.0, -1.0, 0.5])
    got = {}
    for lib, ids, vals in torch_and_tricycle(indices, values):
        s = lib.sparse_coo_tensor(ids, vals, (2, 3))  # cell (1, 0) stored twice: 3 in all
        norms = [lib.native_norm(s), lib.native_norm(s, 1), lib.native_norm(s, float("inf"))]
        norms += [
            lib.native_norm(s, 3, [1, 0], False, None),
            lib.native_norm(s, None, [], False, None),
        ]
        got[lib] = [float(n) for n in norms]
        for args in ((2, [1], False, None), (2, [0, 1], True, None)):
            with pytest.raises(RuntimeError, match="norm_sparse"):
                lib.native_norm(s, *args)
        with pytest.raises(NotImplementedError):
            lib.native_norm(vals)
    np.testing.assert_allclose(got[tc], got[torch], rtol=1e-6)


# ------------------------------------------------------------------ svd_lowrank, pca_lowrank
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_lowrank_of_a_sparse_matrix_as_torch(layout):
    """torch takes a sparse matrix; tricycle's docstring said it had none and refused it."""
    dense = np.random.default_rng(2).standard_normal((7, 4))
    dense[np.abs(dense) < 0.6] = 0
    spectra = {}
    for lib, A in torch_and_tricycle(dense):
        s = A.to_sparse() if layout == "coo" or lib is torch else A.to_sparse_csr()
        if lib is tc:
            s.requires_grad_()
        _, S, _ = lib.svd_lowrank(s, q=4)  # q = n: exact, whatever the random draw
        _, P, _ = lib.pca_lowrank(s, q=4)
        spectra[lib] = np.concatenate([S.detach().numpy() if lib is torch else S.array, P.array
                                       if lib is tc else P.numpy()])  # fmt: skip
    np.testing.assert_allclose(spectra[tc], spectra[torch], rtol=1e-10)
    S.sum().backward()  # the gradient reaches the stored values
    assert s.values().grad.shape == s.values().shape


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_lobpcg_of_a_sparse_matrix_as_torch(layout):
    """torch.lobpcg takes a sparse A (and B); tricycle's refused it with a TypeError."""
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    A = Q @ np.diag(np.arange(1.0, 13.0)) @ Q.T
    A[np.abs(A) < 0.05] = 0  # still symmetric: the same cells on both sides
    eigenvalues = {}
    for lib, a, b in torch_and_tricycle(A, 2 * np.eye(12)):
        a, b = (a.to_sparse(), b.to_sparse()) if layout == "coo" else (a.to_sparse_csr(), None)
        E, _ = lib.lobpcg(a, k=2, B=b)
        eigenvalues[lib] = E.numpy() if lib is torch else E.array
    expected = np.linalg.eigvalsh(A)[-2:][::-1] / (2 if layout == "coo" else 1)
    np.testing.assert_allclose(eigenvalues[torch], expected, rtol=1e-6)
    np.testing.assert_allclose(eigenvalues[tc], expected, rtol=1e-6)
