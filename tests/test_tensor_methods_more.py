"""torch's remaining Tensor methods (``tricycle.tensor_math``'s ``TorchMoreMethods``): the
in-place forms (``floor_`` ... ``eq_`` ... ``acosh_``, ``transpose_``, ``multiply_``) against
torch's on leaves and on an op's output (the gradient through the write, as torch's), and
refused on a leaf that requires grad, naming the method; the long names, ``isclose``,
``bincount``, ``cross``, ``svd``, ``prelu``, ``histogram`` as methods; ``mH``/``H``/
``adjoint`` (gradients), ``nbytes``, ``itemsize``, ``split_with_sizes``, ``is_same_size``,
``is_signed``, ``is_inference``, ``retains_grad``, ``get_device``, ``new_empty_strided``,
``resize_as_``, ``apply_``/``map_``, ``pin_memory`` (itself)."""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


IN_PLACE = [
    ("floor_", (), normal(3, 4) * 3),
    ("ceil_", (), normal(3, 4) * 3),
    ("round_", (), normal(3, 4) * 3),
    ("trunc_", (), normal(3, 4) * 3),
    ("sign_", (), normal(3, 4)),
    ("reciprocal_", (), normal(3, 4) + 5),
    ("rsqrt_", (), np.abs(normal(3, 4)) + 0.5),
    ("square_", (), normal(3, 4)),
    ("pow_", (3,), normal(3, 4)),
    ("clip_", (-0.5, 0.5), normal(3, 4)),
    ("tril_", (1,), normal(3, 4)),
    ("triu_", (-1,), normal(3, 4)),
    ("cumsum_", (1,), normal(3, 4)),
    ("cumprod_", (0,), normal(3, 4)),
    ("acosh_", (), np.abs(normal(3, 4)) + 1.1),
    ("arcsinh_", (), normal(3, 4)),
    ("atanh_", (), np.tanh(normal(3, 4))),
    ("negative_", (), normal(3, 4)),
    ("multiply_", (2.5,), normal(3, 4)),
    ("divide_", (4.0,), normal(3, 4)),
    ("subtract_", (1.5,), normal(3, 4)),
    ("true_divide_", (2.0,), normal(3, 4)),
    ("floor_divide_", (0.7,), normal(3, 4)),
]


@pytest.mark.parametrize("name, args, a", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_forms_as_torch(name, args, a):
    x, t = tc.tensor(a), torch.tensor(a)
    assert getattr(x, name)(*args) is x
    getattr(t, name)(*args)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
    leaf = tc.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Tensor\.\w+_: cannot write in place"):
        getattr(leaf, name)(*args)  # named by the method, or the one it is another name of


@pytest.mark.parametrize(
    "name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "less_equal_", "not_equal_"]
)
def test_comparisons_in_place_keep_the_dtype_as_torch(name):
    a, b = np.round(normal(3, 4)), np.round(normal(4, seed=1))
    x, t = tc.tensor(a), torch.tensor(a)
    getattr(x, name)(tc.tensor(b))
    getattr(t, name)(torch.tensor(b))
    assert x.dtype == np.float64
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_in_place_on_an_op_output_carries_the_gradient_as_torch():
    a = np.abs(normal(3, 4)) + 1.1
    x, t = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = x * 2, t * 2
    y.negative_().tril_()
    u.negative_().tril_()
    y.transpose_(0, 1)
    u.transpose_(0, 1)
    np.testing.assert_allclose(y.numpy(), u.detach().numpy(), rtol=1e-12)
    weights = normal(4, 3, seed=5)
    y.backward(weights)
    u.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_writes_in_place_and_addr_():
    a = normal(3, 4)
    x, t = tc.tensor(a), torch.tensor(a)
    x.index_reduce_(1, tc.tensor([0, 3]), tc.tensor(normal(3, 2, seed=1)), "amax")
    t.index_reduce_(1, torch.tensor([0, 3]), torch.tensor(normal(3, 2, seed=1)), "amax")
    x.addr_(tc.tensor(normal(3, seed=2)), tc.tensor(normal(4, seed=3)), alpha=0.5)
    t.addr_(torch.tensor(normal(3, seed=2)), torch.tensor(normal(4, seed=3)), alpha=0.5)
    x.swapdims_(0, 1)
    t.swapdims_(0, 1)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-12)
    i, j = tc.tensor([4, 6]), torch.tensor([4, 6])
    x, t = tc.tensor([12, 18, 7]), torch.tensor([12, 18, 7])
    x.gcd_(tc.tensor([8, 12, 14]))
    t.gcd_(torch.tensor([8, 12, 14]))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    np.testing.assert_array_equal(
        tc.tensor([3, 4]).lcm(i).numpy(), torch.tensor([3, 4]).lcm(j).numpy()
    )


def test_functions_as_methods_as_torch():
    a, b = normal(4, 3), normal(4, 3, seed=1)
    x, y, t, u = tc.tensor(a), tc.tensor(b), torch.tensor(a), torch.tensor(b)
    np.testing.assert_array_equal(x.isclose(x + 1e-9).numpy(), t.isclose(t + 1e-9).numpy())
    np.testing.assert_allclose(x.cross(y, dim=1).numpy(), t.cross(u, dim=1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.svd()[1].numpy(), t.svd()[1].numpy(), rtol=1e-10)
    counts = tc.tensor([0, 3, 3, 1]).bincount(minlength=6)
    np.testing.assert_array_equal(
        counts.numpy(), torch.tensor([0, 3, 3, 1]).bincount(minlength=6).numpy()
    )
    np.testing.assert_allclose(x.histogram(4)[0].numpy(), t.histogram(4)[0].numpy())
    weight = np.array([0.25])
    np.testing.assert_allclose(
        x.prelu(tc.tensor(weight)).numpy(), t.prelu(torch.tensor(weight)).numpy(), rtol=1e-12
    )


def test_transposes_and_sizes_as_torch():
    a = normal(2, 3, 4)
    x, t = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = x.mH * x.adjoint(), t.mH * t.adjoint()
    np.testing.assert_allclose(y.numpy(), u.detach().numpy())
    weights = normal(2, 4, 3, seed=1)
    y.backward(weights)
    u.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    m, n = tc.tensor(a[0]), torch.tensor(a[0])
    np.testing.assert_array_equal(m.H.numpy(), n.H.numpy())
    assert tc.tensor(2.0).H.item() == 2.0
    with pytest.raises(RuntimeError, match="Tensor.H"):
        _ = tc.tensor(a).H
    with pytest.raises(RuntimeError, match="Tensor.mH"):
        _ = tc.ones(3).mH
    for dtype, torch_dtype in [
        (np.float32, torch.float32),
        (np.int16, torch.int16),
        (np.bool_, torch.bool),
    ]:
        z, w = tc.zeros((3, 5), dtype=dtype), torch.zeros(3, 5, dtype=torch_dtype)
        assert (z.nbytes, z.itemsize, z.is_signed()) == (w.nbytes, w.itemsize, w.is_signed())
    assert (
        tc.zeros(2, dtype=np.uint8).is_signed()
        is torch.zeros(2, dtype=torch.uint8).is_signed()
        is False
    )


def test_split_with_sizes_and_queries_as_torch():
    a = normal(6, 2)
    ours, theirs = (
        tc.tensor(a).split_with_sizes([1, 0, 5]),
        torch.tensor(a).split_with_sizes([1, 0, 5]),
    )
    assert [p.shape for p in ours] == [tuple(p.shape) for p in theirs]
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    with pytest.raises(RuntimeError, match="split_with_sizes"):
        tc.tensor(a).split_with_sizes([2, 2])
    x, t = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    assert x.is_same_size(tc.ones((6, 2))) and not x.is_same_size(tc.ones(6))
    assert x.is_inference() is t.is_inference() is False
    assert x.get_device() == t.get_device() == -1
    y, u = x * 2, t * 2
    assert y.retains_grad is u.retains_grad is False
    y.retain_grad()
    u.retain_grad()
    assert y.retains_grad is u.retains_grad is True and x.retains_grad is t.retains_grad is False


def test_new_empty_strided_resize_as_apply_map_and_memory():
    x = tc.tensor(normal(2, 3))
    made = x.new_empty_strided((4, 5), (5, 1))
    assert made.shape == (4, 5) and made.dtype == x.dtype
    with pytest.raises(ValueError, match="new_empty_strided"):
        x.new_empty_strided((4, 5), (1,))
    y, u = tc.tensor(normal(6)), torch.tensor(normal(6))
    y.resize_as_(tc.ones((2, 3)))
    u.resize_as_(torch.ones(2, 3))
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    y, u = tc.tensor([1.0, -2.0, 3.0]), torch.tensor([1.0, -2.0, 3.0])
    y.apply_(lambda v: v * v + 1)
    u.apply_(lambda v: v * v + 1)
    y.map_(tc.tensor([10.0]), lambda v, w: v - w)
    u.map_(torch.tensor([10.0]), lambda v, w: v - w)
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    with pytest.raises(RuntimeError, match="Tensor.apply_"):
        tc.tensor([1.0], requires_grad=True).apply_(abs)
    assert x.pin_memory() is x and not x.is_pinned()
    assert not x.is_shared()  # share_memory_: tests/test_shared_memory.py
