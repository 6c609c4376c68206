"""The rest of torch's Tensor methods (``tricycle.tensor_rest``, ``torch_strided``,
``torch_bitwise``), against torch: ``as_strided`` (values, a shared view, gradients of
overlapping windows against torch and finite differences, bounds), ``as_strided_``,
``as_strided_scatter`` (both gradients), ``slice_inverse``, ``dim_order``, the shifts
(``<<``/``>>`` with wide counts and negatives, a number on the left, floats refused),
``nonzero_static``, ``hash_tensor``, the in-place bitwise ops and ``addmm_``, the random
fills (seeding, moments), ``map2_``, ``module_load``, ``as_subclass``, ``resize``, and torch's
answers and errors for what tricycle has not (sparse, quantized, complex, devices)."""

import warnings

import numpy as np
import pytest
from helpers import check_grads

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def pair(array):
    return (tc.Tensor(array, requires_grad=True, dtype=np.float64),
            torch.tensor(array, requires_grad=True, dtype=torch.float64))  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "size", "stride", "offset"),
    [
        ((6,), (4, 3), (1, 1), None),
        ((3, 4), (2, 2), (4, 1), 5),
        ((2, 3, 2), (3, 4), (2, 1), 1),
        ((5,), (2, 3), (0, 1), 2),
        ((4, 4), (4,), (5,), None),
    ],  # fmt: skip
)
def test_as_strided_values_and_gradients_as_torch(shape, size, stride, offset):
    a = normal(*shape)
    x, t = pair(a)
    ours, theirs = x.as_strided(size, stride, offset), t.as_strided(size, stride, offset)
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    weights = normal(*size, seed=1)
    ours.backward(weights)
    theirs.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    check_grads(lambda v: tc.as_strided(v, size, stride, offset) * tc.tensor(weights), a)


def test_as_strided_of_a_view_reads_its_storage_and_shares_memory():
    a = normal(4, 5)
    x, t = tc.tensor(a)[1:, 2:], torch.tensor(a)[1:, 2:]
    assert x.storage_offset() == t.storage_offset() == 7
    np.testing.assert_array_equal(x.as_strided((2, 2), (5, 1)).numpy(),
                                  t.as_strided((2, 2), (5, 1)).numpy())  # fmt: skip
    y = tc.zeros(6)
    windows = y.as_strided((2, 3), (3, 1))
    windows.array[0, 0] = 5.0  # a view: writes reach y, as torch's
    assert y.tolist()[0] == 5.0
    # the gradient of a view of a view lands in the view's own places
    x, t = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = x.t()[1:].as_strided((3, 2), (1, 6)), t.t()[1:].as_strided((3, 2), (1, 6))
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    ours.sum().backward(), theirs.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_as_strided_errors():
    x = tc.zeros(2, 3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.as_strided((3, 3), (3, 1))
    with pytest.raises(RuntimeError, match="negative strides"):
        x.as_strided((2,), (-1,))
    with pytest.raises(RuntimeError, match="mismatch"):
        x.as_strided((2, 2), (1,))
    with pytest.raises(TypeError, match="as_strided"):
        tc.as_strided(np.zeros(3), (1,), (1,))


def test_as_strided_in_place():
    x, t = tc.arange(6.0), torch.arange(6.0)
    assert x.as_strided_((2, 2), (2, 1), 1) is x
    t.as_strided_((2, 2), (2, 1), 1)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


@pytest.mark.parametrize(
    ("shape", "size", "stride", "offset"),
    [((3, 4), (2, 2), (4, 1), 5), ((6,), (3,), (2,), None), ((2, 3), (3,), (1,), 2)],
)
def test_as_strided_scatter_as_torch(shape, size, stride, offset):
    a, s = normal(*shape), normal(*size, seed=2)
    (x, t), (y, u) = pair(a), pair(s)
    ours = tc.as_strided_scatter(x, y, size, stride, offset)
    theirs = torch.as_strided_scatter(t, u, size, stride, offset)
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    weights = normal(*shape, seed=3)
    ours.backward(weights)
    theirs.backward(torch.tensor(weights))
    np.testing.assert_array_equal(y.grad.numpy(), u.grad.numpy())
    # the input's gradient is the output's outside the view, by finite differences; torch
    # 2.13 gives it the gradient inside the view (as src's): the two are complements
    np.testing.assert_array_equal(x.grad.numpy() + t.grad.numpy(), weights)
    check_grads(lambda v, w: tc.as_strided_scatter(v, w, size, stride, offset) ** 2, a, s)
    # a transposed input keeps its layout, as torch's clone
    ours = tc.tensor(a).t().as_strided_scatter(tc.tensor(s), size, stride, offset)
    theirs = torch.tensor(a).t().as_strided_scatter(torch.tensor(s), size, stride, offset)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_slice_inverse_and_dim_order_as_torch():
    base = np.arange(12.0).reshape(3, 4)
    x, t = tc.tensor(base)[:, 1:3], torch.tensor(base)[:, 1:3]  # a written slice of a base
    ours = x.slice_inverse(tc.zeros(3, 4, dtype=np.float64), 1, 1, 3)
    theirs = t.slice_inverse(torch.zeros(3, 4, dtype=torch.float64), 1, 1, 3)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours.numpy(), base)  # the whole the slice was cut from
    for make in (lambda lib: lib.zeros(2, 3, 4), lambda lib: lib.zeros(2, 3, 4).permute(2, 0, 1),
                 lambda lib: lib.zeros(3, 4).t()):  # fmt: skip
        assert make(tc).dim_order() == make(torch).dim_order()
        assert make(tc).dim_order(ambiguity_check=True) == make(torch).dim_order(
            ambiguity_check=True
        )
    with pytest.raises(RuntimeError, match="unique"):
        tc.zeros(2, 1).dim_order(ambiguity_check=True)
    with pytest.raises(RuntimeError):
        torch.zeros(2, 1).dim_order(ambiguity_check=True)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_shifts_as_torch(dtype):
    values = np.array([1, -8, 5, 7, -1, 100], dtype=np.int64).astype(dtype)
    counts = np.array([1, 2, 3, 9, 64, 0], dtype=dtype)
    x, t = tc.tensor(values), torch.tensor(values)
    n, m = tc.tensor(counts), torch.tensor(counts)
    for ours, theirs in [(x << n, t << m), (x >> n, t >> m), (x << 3, t << 3), (x >> 2, t >> 2),
                         (2 << n[:3], 2 << m[:3]), (tc.bitwise_right_shift(x, n),
                                                    torch.bitwise_right_shift(t, m))]:  # fmt: skip
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    y, u = tc.tensor(values), torch.tensor(values)
    y.bitwise_left_shift_(1), u.bitwise_left_shift_(1)
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    assert (tc.tensor([True]) << 1).tolist() == (torch.tensor([True]) << 1).tolist()
    with pytest.raises(TypeError, match="bitwise_left_shift"):
        tc.tensor([1.5]) << 1


def test_in_place_bitwise_and_addmm_as_torch():
    a, b = np.array([12, 10, 7]), np.array([10, 6, 1])
    for name in ("bitwise_and_", "bitwise_or_", "bitwise_xor_"):
        x, t = tc.tensor(a), torch.tensor(a)
        assert getattr(x, name)(tc.tensor(b)) is x
        getattr(t, name)(torch.tensor(b))
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    x, t = tc.tensor(a), torch.tensor(a)
    x.bitwise_not_(), t.bitwise_not_()
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    c, m1, m2 = normal(2, 3), normal(2, 4, seed=1), normal(4, 3, seed=2)
    x, t = tc.tensor(c), torch.tensor(c)
    x.addmm_(tc.tensor(m1), tc.tensor(m2), beta=0.5, alpha=2.0)
    t.addmm_(torch.tensor(m1), torch.tensor(m2), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)


def test_nonzero_static_and_hash_tensor_as_torch():
    a = np.array([[0, 1, 2], [3, 0, 0]])
    for size, fill in [(2, -1), (5, -7), (0, -1)]:
        ours = tc.nonzero_static(tc.tensor(a), size=size, fill_value=fill)
        theirs = torch.nonzero_static(torch.tensor(a), size=size, fill_value=fill)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert str(ours.dtype) == "int64"
    for array in (normal(3, 5).astype(np.float32), np.arange(-7, 8).reshape(3, 5)):
        x, t = tc.tensor(array), torch.tensor(array)
        assert x.hash_tensor().tolist() == t.hash_tensor().tolist()
        assert tc.hash_tensor(x, 1).tolist() == torch.hash_tensor(t, 1).tolist()
        ours, theirs = x.hash_tensor(0, keepdim=True), t.hash_tensor(0, keepdim=True)
        assert ours.shape == tuple(theirs.shape) and ours.tolist() == theirs.tolist()


def test_random_fills_seeded_with_torchs_moments():
    def fill(name, *args, dtype=np.float64):
        tc.manual_seed(3)
        return getattr(tc.zeros(40000, dtype=dtype), name)(*args).numpy()

    for name, args in [
        ("cauchy_", (1.0, 2.0)),
        ("log_normal_", (0.5, 0.25)),
        ("geometric_", (0.3,)),
    ]:
        np.testing.assert_array_equal(fill(name, *args), fill(name, *args))  # seeded
    cauchy = fill("cauchy_", 1.0, 2.0)  # median 1, quartiles 1 -+ 2
    np.testing.assert_allclose(np.percentile(cauchy, [25, 50, 75]), [-1, 1, 3], atol=0.1)
    logs = np.log(fill("log_normal_", 0.5, 0.25))
    np.testing.assert_allclose([logs.mean(), logs.std()], [0.5, 0.25], atol=0.01)
    trials = fill("geometric_", 0.3, dtype=np.int64)
    assert trials.min() == 1 and trials.dtype == np.int64  # torch's counts the success
    np.testing.assert_allclose(trials.mean(), 1 / 0.3, rtol=0.03)
    t = torch.zeros(40000, dtype=torch.float64).geometric_(0.3)
    assert t.min() == 1 and abs(t.mean() - 1 / 0.3) < 0.1
    with pytest.raises(ValueError, match="sigma"):
        tc.zeros(3).cauchy_(0.0, 0.0)
    with pytest.raises(RuntimeError, match="cauchy_"):
        tc.zeros(3, requires_grad=True).cauchy_()


def test_map2_module_load_as_subclass_and_resize():
    a, b, c = normal(2, 3), normal(3, seed=1), normal(2, 3, seed=2)
    x, t = tc.tensor(a, dtype=np.float64), torch.tensor(a)
    x.map2_(
        tc.tensor(b, dtype=np.float64), tc.tensor(c, dtype=np.float64), lambda p, q, r: p * q - r
    )
    t.map2_(torch.tensor(b), torch.tensor(c), lambda p, q, r: p * q - r)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)
    w = tc.zeros(2, 3)
    loaded = w.module_load(tc.tensor(c))
    np.testing.assert_array_equal(w.numpy(), c.astype(np.float32))
    assert not loaded.requires_grad and w.module_load(tc.tensor(b), assign=True).shape == (3,)

    class Marked(tc.Tensor):
        pass

    x = tc.tensor(a, requires_grad=True)
    marked = x.as_subclass(Marked)
    assert type(marked) is Marked and marked.data_ptr() == x.data_ptr()
    (marked * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert tc.tensor(a).resize(3, 2).tolist() == torch.tensor(a).resize(3, 2).tolist()
    with pytest.warns(UserWarning, match="resize_as"):
        assert tc.tensor(a).resize_as(tc.zeros(6)).shape == (6,)
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="7 elements"):
        warnings.simplefilter("ignore")
        tc.tensor(a).resize(7)
    x = tc.tensor(a)
    assert x.is_set_to(x) and not x.is_set_to(x.view(6)) and not x.is_set_to(tc.tensor(a))


def test_torchs_answers_for_what_tricycle_has_not():
    x, t = tc.zeros(2, 3), torch.zeros(2, 3)
    for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested",
                 "is_mkldnn", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia"):  # fmt: skip
        assert getattr(x, name) is getattr(t, name) is False
    for name in ("is_shared", "is_distributed", "dense_dim", "sparse_dim"):
        assert getattr(x, name)() == getattr(t, name)()
    assert x.output_nr == t.output_nr == 0 and str(x.grad_dtype) == "float32"
    assert x.dequantize() is x and x.conj_physical() is x and x.const_data_ptr() == x.data_ptr()
    assert x.record_stream(None) is None
    with pytest.warns(UserWarning, match="volatile"):
        assert x.volatile is False
    for name in ("indices", "values", "coalesce", "crow_indices", "col_indices", "smm"):
        with pytest.raises(RuntimeError):
            getattr(t, name)(*((t,) if name == "smm" else ()))
        with pytest.raises(RuntimeError, match=f"Tensor.{name}: expected a sparse tensor"):
            getattr(x, name)()
    for name in ("int_repr", "q_scale", "qscheme", "to_padded_tensor"):
        with pytest.raises(NotImplementedError):
            getattr(t, name)(*((0.0,) if name == "to_padded_tensor" else ()))
        with pytest.raises(NotImplementedError, match=f"Tensor.{name}"):
            getattr(x, name)()
    with pytest.raises(RuntimeError, match="reinforce"):
        t.reinforce(1)
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        x.reinforce(1)
    for name in ("cdouble", "cfloat", "chalf"):
        with pytest.raises(TypeError, match="no complex"):
            getattr(x, name)()
    with pytest.raises(RuntimeError, match="ipu"):
        x.ipu()


def test_set_contains_pos_complex_as_torch():
    a = normal(2, 3)
    x, t = tc.zeros(1, dtype=np.float64), torch.zeros(1, dtype=torch.float64)
    source, tsource = tc.tensor(a, dtype=np.float64), torch.tensor(a)
    assert x.set_(source) is x and x.data_ptr() == source.data_ptr()
    t.set_(tsource)
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    x.set_(source.storage(), 1, (2, 2), (1, 3))
    t.set_(tsource.untyped_storage(), 1, (2, 2), (1, 3))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x.set_().shape == tuple(t.set_().shape) == (0,)
    with pytest.raises(RuntimeError, match="set_"):
        tc.zeros(2, requires_grad=True).set_(source)
    y, u = tc.tensor(a), torch.tensor(a)
    assert (float(y[0, 1]) in y) is (float(u[0, 1]) in u) is True
    assert (7.5 in y) is (7.5 in u) is False
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in y  # noqa: B015
    np.testing.assert_array_equal((+y).numpy(), (+u).numpy())
    assert complex(tc.tensor(2.5)) == complex(torch.tensor(2.5)) == 2.5 + 0j
