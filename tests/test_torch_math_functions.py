"""torch's remaining top-level math, indexing and random functions on tricycle
(``tricycle.torch_math``, ``torch_indexing``, ``torch_random``) and the Tensor methods they
call (``tensor_torch``, ``indexing``, ``reduce``'s prod, cumprod and logsumexp): values and
the gradients of every input against torch in float64, the products' gradients against
finite differences on random shapes with zeros, the random draws by their statistics and by
seed, and bad arguments refused, naming the function."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle as tc
from tricycle import reduce

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def with_zeros(*shape, seed=0):
    """Values with zeros among them: one in row 0, two in row 1 (the products' hard cases)."""
    a = normal(*shape, seed=seed)
    a[0, 1] = 0.0
    a[1, 0] = a[1, -1] = 0.0
    return a


def both(*arrays):
    """The arrays as tricycle and torch leaves that require gradients (float64)."""
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


def ids(values):
    return tc.tensor(values), torch.tensor(values)


I_SCATTER = ids([[2, 0, 1, 0], [1, 2, 0, 2]])  # (2, 4) into (3, 4) along dim 0: no repeats
I_ADD = ids([[2, 0, 2], [0, 1, 0]])  # (2, 3) along dim 1 of (3, 4): repeats add up
I_SELECT = ids([2, 0, 2])

# (name, tricycle call, torch call, inputs): values and gradients of every input
DIFFERENTIABLE = [
    ("std", lambda a: tc.std(a), lambda a: torch.std(a), [normal(3, 4)]),
    ("std dim keepdim", lambda a: tc.std(a, 1, keepdim=True),
     lambda a: torch.std(a, 1, keepdim=True), [normal(3, 4)]),
    ("std correction 0", lambda a: tc.std(a, (0, 1), correction=0),
     lambda a: torch.std(a, (0, 1), correction=0), [normal(3, 4)]),
    ("std unbiased=False", lambda a: tc.std(a, 0, False), lambda a: torch.std(a, 0, False),
     [normal(3, 4)]),
    ("std(x, False)", lambda a: tc.std(a, False), lambda a: torch.std(a, False), [normal(3, 4)]),
    ("var dim", lambda a: tc.var(a, dim=1), lambda a: torch.var(a, dim=1), [normal(3, 4)]),
    ("var correction", lambda a: tc.var(a, dim=0, correction=0, keepdim=True),
     lambda a: torch.var(a, dim=0, correction=0, keepdim=True), [normal(3, 4)]),
    ("logsumexp", lambda a: tc.logsumexp(a, 1), lambda a: torch.logsumexp(a, 1), [normal(3, 4)]),
    ("logsumexp dims keepdim", lambda a: tc.logsumexp(a, (0, 2), keepdim=True),
     lambda a: torch.logsumexp(a, (0, 2), keepdim=True), [normal(2, 3, 4)]),
    ("logsumexp large", lambda a: tc.logsumexp(a * 1000, -1),
     lambda a: torch.logsumexp(a * 1000, -1), [normal(3, 4)]),
    ("prod", lambda a: tc.prod(a), lambda a: torch.prod(a), [normal(3, 4)]),
    ("prod dim", lambda a: tc.prod(a, 1), lambda a: torch.prod(a, 1), [normal(3, 4)]),
    ("prod zeros", lambda a: tc.prod(a, 1, keepdim=True),
     lambda a: torch.prod(a, 1, keepdim=True), [with_zeros(3, 4)]),
    ("prod zeros dim 0", lambda a: tc.prod(a, 0), lambda a: torch.prod(a, 0), [with_zeros(3, 4)]),
    ("cumprod", lambda a: tc.cumprod(a, 1), lambda a: torch.cumprod(a, 1), [normal(3, 4)]),
    ("cumprod dim 0", lambda a: tc.cumprod(a, 0), lambda a: torch.cumprod(a, 0), [normal(3, 4)]),
    ("cumprod zeros", lambda a: tc.cumprod(a, 1), lambda a: torch.cumprod(a, 1),
     [with_zeros(3, 5)]),
    ("amax", lambda a: tc.amax(a, 1), lambda a: torch.amax(a, 1), [normal(3, 4)]),
    ("amin all keepdim", lambda a: tc.amin(a, keepdim=True),
     lambda a: torch.amin(a, keepdim=True), [normal(3, 4)]),
    ("amax ties", lambda a: tc.amax(a.clamp(max=0.5), 1),
     lambda a: torch.amax(a.clamp(max=0.5), 1), [normal(3, 4) + 1]),
    ("maximum", lambda a, b: tc.maximum(a, b), lambda a, b: torch.maximum(a, b),
     [normal(3, 4), normal(4, seed=1)]),
    ("minimum ties", lambda a, b: tc.minimum(a, b), lambda a, b: torch.minimum(a, b),
     [np.ones((2, 3)), np.array([1.0, 0.0, 2.0])]),
    ("sign", lambda a: tc.sign(a) * a, lambda a: torch.sign(a) * a, [normal(3, 4)]),
    ("round", lambda a: tc.round(a * 3), lambda a: torch.round(a * 3), [normal(3, 4)]),
    ("round decimals", lambda a: tc.round(a, decimals=2) + a,
     lambda a: torch.round(a, decimals=2) + a, [normal(3, 4)]),
    ("floor", lambda a: tc.floor(a * 3), lambda a: torch.floor(a * 3), [normal(3, 4)]),
    ("ceil", lambda a: tc.ceil(a * 3), lambda a: torch.ceil(a * 3), [normal(3, 4)]),
    ("trunc", lambda a: tc.trunc(a * 3), lambda a: torch.trunc(a * 3), [normal(3, 4)]),
    ("cdist", lambda a, b: tc.cdist(a, b), lambda a, b: torch.cdist(a, b),
     [normal(4, 3), normal(5, 3, seed=1)]),
    ("cdist batched p=1", lambda a, b: tc.cdist(a, b, p=1),
     lambda a, b: torch.cdist(a, b, p=1), [normal(2, 4, 3), normal(1, 5, 3, seed=1)]),
    ("cdist p=3", lambda a, b: tc.cdist(a, b, 3.0), lambda a, b: torch.cdist(a, b, 3.0),
     [normal(4, 3), normal(5, 3, seed=1)]),
    ("cdist p=inf", lambda a, b: tc.cdist(a, b, float("inf")),
     lambda a, b: torch.cdist(a, b, float("inf")), [normal(4, 3), normal(5, 3, seed=1)]),
    ("diag of a vector", lambda a: tc.diag(a), lambda a: torch.diag(a), [normal(3)]),
    ("diag above", lambda a: tc.diag(a, 1), lambda a: torch.diag(a, 1), [normal(3)]),
    ("diag below", lambda a: tc.diag(a, -2), lambda a: torch.diag(a, -2), [normal(3)]),
    ("diag of a matrix", lambda a: tc.diag(a), lambda a: torch.diag(a), [normal(3, 4)]),
    ("diag of a matrix below", lambda a: tc.diag(a, -1), lambda a: torch.diag(a, -1),
     [normal(3, 4)]),
    ("diagonal", lambda a: tc.diagonal(a, 1, 2, 0), lambda a: torch.diagonal(a, 1, 2, 0),
     [normal(3, 2, 4)]),
    ("diagonal past the end", lambda a: tc.diagonal(a, 5), lambda a: torch.diagonal(a, 5),
     [normal(3, 4)]),
    ("scatter", lambda a, s: tc.scatter(a, 0, I_SCATTER[0], s),
     lambda a, s: torch.scatter(a, 0, I_SCATTER[1], s), [normal(3, 4), normal(2, 4, seed=1)]),
    ("scatter value", lambda a: tc.scatter(a, 0, I_SCATTER[0], value=2.5),
     lambda a: torch.scatter(a, 0, I_SCATTER[1], value=2.5), [normal(3, 4)]),
    ("scatter a number", lambda a: tc.scatter(a, 0, I_SCATTER[0], -1.0),
     lambda a: torch.scatter(a, 0, I_SCATTER[1], -1.0), [normal(3, 4)]),
    ("scatter_add", lambda a, s: tc.scatter_add(a, 1, I_ADD[0], s),
     lambda a, s: torch.scatter_add(a, 1, I_ADD[1], s), [normal(3, 4), normal(2, 3, seed=1)]),
    ("scatter reduce add", lambda a, s: tc.scatter(a, 1, I_ADD[0], s, reduce="add"),
     lambda a, s: torch.scatter_add(a, 1, I_ADD[1], s), [normal(3, 4), normal(2, 3, seed=1)]),
    ("index_select", lambda a: tc.index_select(a, 1, I_SELECT[0]),
     lambda a: torch.index_select(a, 1, I_SELECT[1]), [normal(3, 4)]),
    ("repeat_interleave", lambda a: tc.repeat_interleave(a, 2, 1),
     lambda a: torch.repeat_interleave(a, 2, 1), [normal(3, 4)]),
    ("repeat_interleave counts", lambda a: tc.repeat_interleave(a, tc.tensor([1, 0, 2])),
     lambda a: torch.repeat_interleave(a, torch.tensor([1, 0, 2])), [normal(3)]),
    ("roll", lambda a: tc.roll(a, (1, -2), (0, 1)), lambda a: torch.roll(a, (1, -2), (0, 1)),
     [normal(3, 4)]),
    ("roll flat", lambda a: tc.roll(a, 5), lambda a: torch.roll(a, 5), [normal(3, 4)]),
    ("flip", lambda a: tc.flip(a, (0, 2)), lambda a: torch.flip(a, (0, 2)), [normal(2, 3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs", "arrays"), DIFFERENTIABLE,
                         ids=[case[0] for case in DIFFERENTIABLE])  # fmt: skip
def test_values_and_gradients_match_torch(name, ours, theirs, arrays):
    xs, ts = both(*arrays)
    out, expected = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = normal(*expected.shape, seed=9)
    out.backward(weights)
    expected.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_products_and_logsumexp_match_finite_differences_with_zeros(shape, data):
    a = np.random.default_rng(data.draw(st.integers(0, 99))).normal(size=shape)
    a[a < -0.8] = 0.0  # zeros, some rows with several
    axis = data.draw(st.sampled_from([None, *range(len(shape))]))
    assert tc.gradcheck(lambda x: reduce.prod(x, axis), a, atol=1e-6)
    assert tc.gradcheck(lambda x: reduce.cumprod(x, axis), a, atol=1e-6)
    assert tc.gradcheck(lambda x: reduce.logsumexp(x, axis, keepdims=True), a)
    expected = torch.cumprod(torch.tensor(a).reshape(-1) if axis is None else torch.tensor(a),
                             0 if axis is None else axis)  # fmt: skip
    np.testing.assert_allclose(tc.Tensor(a).cumprod(axis).numpy(), expected.numpy())


def test_the_tensor_methods_are_torchs_and_the_functions_call_them():
    from tricycle import torch_indexing, torch_math, torch_random

    x = tc.Tensor(normal(3, 4), requires_grad=True, dtype=np.float64)
    t = torch.tensor(normal(3, 4))
    for call in ("logsumexp(1)", "prod(0)", "prod()", "cumprod(1)", "std()", "diagonal()",
                 "diag()", "count_nonzero(0)", "maximum(x)", "minimum(x)", "amax(0)",
                 "index_select(1, idx)", "roll(1, 0)", "flip(0)"):  # fmt: skip
        got = eval(f"x.{call}", {"x": x, "idx": I_SELECT[0]})
        want = eval(f"x.{call}", {"x": t, "idx": I_SELECT[1]})
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, err_msg=call)
    for module, names in ((torch_math, "std var logsumexp prod cumprod amax amin sign round "
                           "floor ceil trunc cdist count_nonzero maximum minimum"),
                          (torch_indexing, "index_select scatter scatter_add diag diagonal "
                           "nonzero unique repeat_interleave roll flip"),
                          (torch_random, "bernoulli normal randint_like Generator")):  # fmt: skip
        for name in names.split():
            function = getattr(tc, name)  # or complex_functions' route of complex tensors around it
            assert getattr(function, "__wrapped__", function) is getattr(module, name), name
            assert name in tc.__all__ and name in dir(tc), name
    assert x.logsumexp(1).name == "logsumexp" and x.scatter.__name__ == "scatter"


def test_var_keeps_numpys_meaning_unless_a_call_names_torchs_keywords():
    x = tc.arange(4.0)
    assert tc.var(x).item() == pytest.approx(1.25)  # numpy's ddof 0, as tricycle.var was
    assert tc.var(x, ddof=1).item() == pytest.approx(torch.var(torch.arange(4.0)).item())
    assert tc.var(x, dim=0).item() == pytest.approx(torch.var(torch.arange(4.0)).item())
    assert tc.var(x, dim=0, unbiased=False).item() == pytest.approx(1.25)


def test_logsumexp_of_minus_infinity_and_of_integers_is_torchs():
    row = [-np.inf, -np.inf]
    np.testing.assert_array_equal(tc.logsumexp(tc.tensor([row]), 1).numpy(), [-np.inf])
    out = tc.logsumexp(tc.tensor([[1, 2], [3, 4]]), 1)
    expected = torch.logsumexp(torch.tensor([[1, 2], [3, 4]]), 1)
    assert out.dtype == np.float32 and expected.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)


def test_prod_and_cumprod_take_a_dtype_and_integers():
    x = tc.tensor([[1, 2], [3, 4]])
    assert tc.prod(x).item() == 24 and tc.prod(x).dtype == np.int64
    assert tc.prod(x, 1, dtype=tc.float64).dtype == np.float64
    np.testing.assert_array_equal(tc.cumprod(x, 0).numpy(), [[1, 2], [3, 8]])
    np.testing.assert_array_equal(tc.prod(tc.zeros(2, 0), 1).numpy(), [1.0, 1.0])


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_nonzero_count_nonzero_and_unique_match_torch(dim):
    a = np.array([[0, 3, 3, 1], [2, 0, 3, 1], [0, 3, 3, 1]])
    x, t = tc.tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(tc.count_nonzero(x, dim).numpy(), torch.count_nonzero(t, dim))
    ours = tc.unique(x, return_inverse=True, return_counts=True, dim=dim)
    theirs = torch.unique(t, return_inverse=True, return_counts=True, dim=dim)
    for got, want in zip(ours, theirs):
        assert got.dtype == np.int64 and got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(tc.unique(x, dim=dim).numpy(), torch.unique(t, dim=dim))
    np.testing.assert_array_equal(tc.nonzero(x).numpy(), torch.nonzero(t))
    for got, want in zip(tc.nonzero(x, as_tuple=True), torch.nonzero(t, as_tuple=True)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert tc.nonzero(tc.tensor(5)).shape == tuple(torch.nonzero(torch.tensor(5)).shape)
    assert len(tc.nonzero(tc.tensor(5), as_tuple=True)) == 1
    np.testing.assert_array_equal(tc.repeat_interleave(tc.tensor([2, 0, 1])).numpy(), [0, 0, 2])


def test_scatter_from_a_larger_src_writes_the_index_shaped_part():
    """torch writes the part of src the index covers, but its backward fails on a larger
    src: the gradient is checked against finite differences."""
    index, torch_index = I_SCATTER[0][:, :3], I_SCATTER[1][:, :3]
    a, s = normal(3, 4), normal(3, 4, seed=1)
    out = tc.scatter(tc.Tensor(a, dtype=np.float64), 0, index, tc.Tensor(s, dtype=np.float64))
    expected = torch.scatter(torch.tensor(a), 0, torch_index, torch.tensor(s))
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert tc.gradcheck(lambda x, y: tc.scatter(x, 0, index, y), a, s)
    assert tc.gradcheck(lambda x, y: tc.scatter_add(x, 1, I_ADD[0], y), a, s)


def test_scatter_in_place_and_the_gradient_of_an_overwritten_input():
    z = tc.zeros(2, 3)
    assert z.scatter_(1, tc.tensor([[2], [0]]), 7.0) is z
    np.testing.assert_array_equal(z.numpy(), [[0, 0, 7], [7, 0, 0]])
    z.scatter_add_(1, tc.tensor([[2, 2]]), tc.ones(1, 2))
    np.testing.assert_array_equal(z.numpy(), [[0, 0, 9], [7, 0, 0]])
    w = tc.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="scatter_: cannot write in place"):
        w.scatter_(0, tc.tensor([0]), 1.0)


def test_bernoulli_draws_with_its_probabilities_and_repeats_under_a_seed():
    p = tc.tensor([0.0, 0.25, 0.5, 1.0], dtype=tc.float64).reshape(4, 1).expand(4, 20000)
    tc.manual_seed(0)
    draws = tc.bernoulli(p)
    assert draws.dtype == np.float64 and draws.shape == (4, 20000) and not draws.requires_grad
    np.testing.assert_allclose(draws.numpy().mean(1), [0.0, 0.25, 0.5, 1.0], atol=0.015)
    tc.manual_seed(0)
    np.testing.assert_array_equal(tc.bernoulli(p).numpy(), draws.numpy())
    assert set(np.unique(tc.bernoulli(tc.zeros(1000), 0.5).numpy())) == {0.0, 1.0}
    x = tc.zeros(20000)
    assert x.bernoulli_(0.3) is x and abs(x.numpy().mean() - 0.3) < 0.015
    g = tc.Generator().manual_seed(3)
    again = tc.Generator().manual_seed(3)
    assert tc.equal(tc.bernoulli(p, generator=g), tc.bernoulli(p, generator=again))


def test_normal_draws_by_mean_and_std_and_repeats_under_a_seed():
    tc.manual_seed(1)
    x = tc.normal(2.0, 3.0, (200000,))
    assert x.dtype == np.float32 and x.shape == (200000,) and not x.requires_grad
    assert abs(x.numpy().mean() - 2.0) < 0.03 and abs(x.numpy().std() - 3.0) < 0.03
    tc.manual_seed(1)
    assert tc.equal(tc.normal(2.0, 3.0, (200000,)), x)
    mean = tc.tensor([[-5.0], [5.0]], dtype=tc.float64, requires_grad=True)
    std = tc.tensor([0.5, 1.0, 2.0], dtype=tc.float64)
    draws = tc.normal(mean, std.reshape(3, 1, 1).expand(3, 1, 40000))  # (3, 2, 40000)
    assert draws.shape == (3, 2, 40000) and draws.dtype == np.float64 and not draws.requires_grad
    np.testing.assert_allclose(draws.numpy().mean(-1), [[-5, 5]] * 3, atol=0.05)
    np.testing.assert_allclose(draws.numpy().std(-1), [[0.5] * 2, [1.0] * 2, [2.0] * 2], rtol=0.03)
    assert tc.normal(mean, 1.0).shape == (2, 1) and tc.normal(0.0, std).shape == (3,)
    assert tc.normal(0.0, 1.0, (2,), requires_grad=True).requires_grad


def test_randint_like_has_the_input_shape_dtype_and_range():
    x = tc.zeros(4, 500)
    draws = tc.randint_like(x, 3)
    assert draws.shape == x.shape and draws.dtype == np.float32
    assert set(np.unique(draws.numpy())) == {0.0, 1.0, 2.0}
    draws = tc.randint_like(x, -2, 2, dtype=tc.long)
    assert draws.dtype == np.int64 and set(np.unique(draws.numpy())) == {-2, -1, 0, 1}
    assert torch.randint_like(torch.zeros(2), 3).dtype == torch.float32  # as torch's


def test_generator_is_a_numpy_generator_with_torchs_methods():
    g = tc.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed() and g.device.type == "cpu"
    assert tc.Generator("cuda:1").device == "cuda:1"  # draws stay on the host
    first = tc.rand(3, generator=g)
    assert tc.equal(tc.rand(3, generator=tc.Generator()), first)  # the default seed repeats
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    state = g.get_state()
    a = tc.randn(4, generator=g)
    g.set_state(state)
    assert tc.equal(tc.randn(4, generator=g), a)
    tc.manual_seed(7)
    assert tc.equal(tc.randn(4), a)  # the same numbers as tricycle's own generator
    assert tc.randperm(5, generator=tc.Generator().manual_seed(2)).shape == (5,)
    seed = g.seed()
    assert g.initial_seed() == seed and isinstance(seed, int)


def test_default_dtype_and_bfloat16():
    assert tc.get_default_dtype() is tc.float32 and tc.tensor([1.0]).dtype == tc.float32
    tc.set_default_dtype(tc.float32)
    with pytest.raises(ValueError, match="set_default_dtype: d must be float32"):
        tc.set_default_dtype(tc.float64)



def test_bfloat16_is_ml_dtypes_or_an_error_that_says_so():
    try:
        import ml_dtypes  # noqa: F401, PLC0415
    except ImportError:
        with pytest.raises(ImportError, match="ml_dtypes"):
            tc.bfloat16  # noqa: B018
        return
    assert tc.zeros(2, dtype=tc.bfloat16).dtype.name == "bfloat16"
    assert tc.ones(2).to(tc.bfloat16).dtype == np.dtype(tc.bfloat16)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: tc.std(x, out=x), TypeError, "std: out= is not supported"),
        (lambda x: tc.logsumexp([1.0], 0), TypeError, "logsumexp: input must be a Tensor"),
        (lambda x: tc.std(x, unbiased=True, correction=0), TypeError, "std: unbiased"),
        (lambda x: tc.maximum(x, 1.0), TypeError, "maximum: other must be a Tensor"),
        (lambda x: tc.round(x, decimals=0.5), TypeError, "round: decimals must be"),
        (lambda x: tc.cdist(x, tc.ones(2, 5)), ValueError, "cdist: the shapes of x1 and x2"),
        (lambda x: tc.cdist(x, x, 0.5), ValueError, "cdist: p must be a number >= 1"),
        (lambda x: tc.diag(tc.ones(2, 2, 2)), ValueError, "diag: expected a vector"),
        (lambda x: tc.diagonal(x, 0, 1, -1), ValueError, "diagonal: dim2 must be an axis other"),
        (
            lambda x: tc.scatter(x, 0, tc.tensor([[3]]), 1.0),
            IndexError,
            r"scatter: index must lie in \[0, 3\)",
        ),
        (lambda x: tc.scatter(x, 1, tc.tensor([[-1]]), 1.0), IndexError, "got index in"),
        (lambda x: tc.scatter(x, 0, tc.tensor([0]), 1.0), ValueError, "scatter: index shape"),
        (
            lambda x: tc.scatter(x, 0, tc.tensor([[0, 1]]), tc.ones(1, 1)),
            ValueError,
            "scatter: src's shape",
        ),
        (
            lambda x: tc.scatter(x, 0, tc.tensor([[0]]), tc.ones(1, 1, dtype=tc.float64)),
            TypeError,
            "scatter: src's dtype",
        ),
        (lambda x: tc.scatter(x, 0, tc.tensor([[0.5]]), 1.0), TypeError, "scatter: index"),
        (lambda x: tc.scatter(x, 0, tc.tensor([[0]])), TypeError, "scatter: give src"),
        (
            lambda x: tc.scatter(x, 0, tc.tensor([[0]]), 1.0, reduce="multiply"),
            ValueError,
            "scatter: reduce must be None or 'add'",
        ),
        (lambda x: tc.scatter_add(x, 0, tc.tensor([[0]]), 1.0, out=x), TypeError, "out="),
        (lambda x: tc.repeat_interleave(tc.ones(2, 2)), ValueError, "counts alone must be 1-D"),
        (lambda x: tc.repeat_interleave(x, 2, 0, output_size=5), ValueError, "output_size=5"),
        (lambda x: tc.unique(x, dim=2), ValueError, "unique: dim must be"),
        (lambda x: tc.bernoulli(x), ValueError, r"probabilities must lie in \[0, 1\]"),
        (lambda x: tc.bernoulli(tc.tensor([1, 0])), TypeError, "bernoulli: dtype must be"),
        (lambda x: tc.bernoulli(tc.zeros(2), tc.ones(3)), ValueError, "bernoulli: p's shape"),
        (lambda x: tc.normal(0.0, 1.0), TypeError, "normal: of a number mean and std, give size"),
        (lambda x: tc.normal(0.0, -1.0, (2,)), ValueError, "normal: std must be"),
        (lambda x: tc.normal(x, x - 5), ValueError, "normal: std must be >= 0 everywhere"),
        (lambda x: tc.normal(tc.tensor([1]), 1.0), TypeError, "normal: mean's dtype"),
        (lambda x: tc.normal(x, 1.0, (2,)), TypeError, "normal: size, dtype, device"),
        (lambda x: tc.normal(x, tc.ones(4)), ValueError, "normal: the shapes of mean and std"),
        (lambda x: tc.randint_like(x), TypeError, "randint_like: give high"),
        (lambda x: tc.Generator().manual_seed(-1), ValueError, "Generator.manual_seed: seed"),
        (lambda x: tc.Generator("tpu"), ValueError, "Generator: device"),
    ],
)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    x = tc.tensor([[0.5, 2.0, 1.0], [1.0, 0.0, 3.0], [4.0, 1.0, 0.0]])
    with pytest.raises(error, match=message):
        call(x)
