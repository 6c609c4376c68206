"""torch's functions that build a tensor out of others (``tricycle.torch_construction``) and
their Tensor methods: values and the gradients of every input against torch in float64, on
fixed cases and random shapes (hypothesis), against finite differences (``vander``, whose
backward torch 2.13 cannot run: it fails on an in-place write), the dtypes, the names at the
top level, ``empty_strided``'s strides, and bad arguments refused, naming the function."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
from tests.helpers import check_grads
from tests.test_torch_shapes import assert_as_torch, normal
from tricycle import torch_construction

torch = pytest.importorskip("torch")

A, M, V = normal(2, 3, 4), normal(3, 4, seed=1), normal(5, seed=2)

CASES = [
    ("diagflat", lambda x: tc.diagflat(x), lambda x: torch.diagflat(x), [V]),
    ("diagflat matrix below", lambda x: tc.diagflat(x, -2), lambda x: torch.diagflat(x, -2), [M]),
    ("diag_embed", lambda x: tc.diag_embed(x), lambda x: torch.diag_embed(x), [A]),
    ("diag_embed dims", lambda x: tc.diag_embed(x, 1, 0, 2),
     lambda x: torch.diag_embed(x, 1, 0, 2), [M]),
    ("diag_embed below", lambda x: tc.diag_embed(x, -2, -1, 0),
     lambda x: torch.diag_embed(x, -2, -1, 0), [A]),
    ("block_diag", lambda x, y, z: tc.block_diag(x, y, z),
     lambda x, y, z: torch.block_diag(x, y, z), [normal(), V, M]),
    ("block_diag one", lambda x: tc.block_diag(x), lambda x: torch.block_diag(x), [M]),
    ("kron", lambda x, y: tc.kron(x, y), lambda x, y: torch.kron(x, y), [M, A]),
    ("kron vector", lambda x, y: tc.kron(x, y), lambda x, y: torch.kron(x, y), [V, M[:2]]),
    ("tensordot", lambda x, y: tc.tensordot(x, y), lambda x, y: torch.tensordot(x, y),
     [A, normal(3, 4, 5)]),
    ("tensordot lists", lambda x, y: tc.tensordot(x, y, ([1, 2], [1, 0])),
     lambda x, y: torch.tensordot(x, y, ([1, 2], [1, 0])), [A, normal(4, 3, 5)]),
    ("tensordot 0", lambda x, y: tc.tensordot(x, y, 0), lambda x, y: torch.tensordot(x, y, 0),
     [M, V]),
    ("tensordot one pair", lambda x, y: tc.tensordot(x, y, dims=([0], [1])),
     lambda x, y: torch.tensordot(x, y, dims=([0], [1])), [M, normal(2, 3)]),
    ("cartesian_prod", lambda x, y, z: tc.cartesian_prod(x, y, z),
     lambda x, y, z: torch.cartesian_prod(x, y, z), [V, V[:2], V[:3]]),
    ("cartesian_prod one", lambda x: tc.cartesian_prod(x), lambda x: torch.cartesian_prod(x),
     [V]),
    ("combinations", lambda x: tc.combinations(x), lambda x: torch.combinations(x), [V]),
    ("combinations 3 replaced", lambda x: tc.combinations(x, 3, True),
     lambda x: torch.combinations(x, 3, True), [V[:3]]),
    ("combinations too many", lambda x: tc.combinations(x, 3), lambda x: torch.combinations(x, 3),
     [V[:2]]),
]  # fmt: skip


@pytest.mark.parametrize("name, ours, theirs, arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, ours, theirs, arrays):
    assert_as_torch(ours, theirs, *arrays)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3),
       st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())  # fmt: skip
def test_random_shapes_match_torch_and_finite_differences(shape_a, shape_b, data):
    seed = data.draw(st.integers(0, 99))
    a, b = normal(*shape_a, seed=seed), normal(*shape_b, seed=seed + 1)
    assert_as_torch(lambda x, y: tc.kron(x, y), lambda x, y: torch.kron(x, y), a, b)
    dims = data.draw(st.integers(0, 2))
    c = normal(*shape_a[len(shape_a) - min(dims, len(shape_a)) :], *shape_b, seed=seed + 2)
    dims = min(dims, len(shape_a))
    assert_as_torch(lambda x, y: tc.tensordot(x, y, dims), lambda x, y: torch.tensordot(x, y, dims),
                    a, c)  # fmt: skip
    offset = data.draw(st.integers(-2, 2))
    assert_as_torch(lambda x: tc.diag_embed(x, offset), lambda x: torch.diag_embed(x, offset), a)
    check_grads(lambda x, y: tc.kron(x, y), a, b)
    check_grads(lambda x: tc.diag_embed(x, offset, 0, -1) * 2.0, a)


def test_vander_is_torchs_and_its_gradient_the_finite_differences():
    x = V.copy()
    x[1] = 0.0  # powers of 0: products, so the gradient at 0 is finite
    for args in [(), (3,), (3, True), (1,), (0,), (7, True)]:
        got, want = tc.vander(tc.tensor(x), *args), torch.vander(torch.tensor(x), *args)
        assert got.shape == tuple(want.shape) and got.dtype == np.float64
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        if got.size:
            check_grads(lambda v, args=args: tc.vander(v, *args), x)
    got, want = tc.vander(tc.tensor([1, 2, 3]), 4), torch.vander(torch.tensor([1, 2, 3]), 4)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert tc.vander(tc.ones(3, dtype=np.float32)).dtype == np.float32


def test_the_dtypes_and_empty_results_are_torchs():
    got = tc.block_diag(tc.tensor(1), tc.tensor([1.0, 2.0]), tc.ones(2, 2, dtype=np.int64))
    want = torch.block_diag(torch.tensor(1), torch.tensor([1.0, 2.0]), torch.ones(2, 2).long())
    assert got.dtype == want.numpy().dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = tc.Tensor(M, requires_grad=True, dtype=np.float32)
    got = tc.block_diag(x, tc.ones(1, dtype=np.float64))
    assert got.dtype == np.float64
    got.sum().backward()
    assert x.grad.dtype == np.float32 and np.all(x.grad.numpy() == 1)
    assert tc.combinations(tc.tensor([1.0, 2.0]), 0).shape == (0,)
    assert tc.combinations(tc.tensor([1.0, 2.0]), 3).shape == (0, 3)
    assert tc.cartesian_prod(tc.tensor([1, 2]), tc.tensor([3])).dtype == np.int64


def test_empty_strided_has_the_strides_asked():
    for size, stride in [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((4,), (0,)), ((2, 0), (1, 2)),
                         ((), ())]:  # fmt: skip
        got, want = tc.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert got.shape == tuple(want.shape) and got.stride() == want.stride()
        assert got.dtype == np.float32
    x = tc.empty_strided((4,), (0,), dtype=tc.float64, requires_grad=True)
    assert x.dtype == np.float64 and x.requires_grad and x.storage_offset() == 0


def test_the_methods_are_torchs_and_the_names_are_the_modules():
    x, t = tc.Tensor(M, requires_grad=True, dtype=np.float64), torch.tensor(M)
    for call in ("diagflat(1)", "diag_embed()", "kron(x)"):
        got, want = eval(f"x.{call}", {"x": x}), eval(f"x.{call}", {"x": t})
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=call)
    names = ("diagflat diag_embed block_diag kron tensordot vander cartesian_prod combinations "
             "empty_strided")  # fmt: skip
    for name in names.split():
        function = getattr(tc, name)  # or complex_functions' route of complex tensors around it
        assert getattr(function, "__wrapped__", function) is getattr(torch_construction, name), name
        assert name in tc.__all__, name


ERRORS = [
    (lambda: tc.diagflat([1.0]), TypeError, "diagflat: input must be a Tensor"),
    (lambda: tc.diag_embed(tc.tensor(1.0)), ValueError, "diag_embed: input's shape"),
    (lambda: tc.diag_embed(tc.ones(3), 0, 0, -2), ValueError, "diag_embed: dim2"),
    (lambda: tc.block_diag(), TypeError, "block_diag: tensors"),
    (lambda: tc.block_diag(tc.ones(1, 1, 1)), ValueError, r"block_diag: tensors\[0\]'s shape"),
    (lambda: tc.kron(tc.ones(2), tc.ones(2), out=tc.ones(4)), TypeError, "kron: out="),
    (lambda: tc.tensordot(tc.ones(2, 3), tc.ones(2, 3), 1), ValueError, "tensordot: dims"),
    (lambda: tc.tensordot(tc.ones(2, 3), tc.ones(3), 2), ValueError, "tensordot: dims"),
    (lambda: tc.tensordot(tc.ones(2, 3), tc.ones(3), ([1, 0], [0])), ValueError, "tensordot"),
    (lambda: tc.tensordot(tc.ones(2, 3), tc.ones(3), "x"), TypeError, "tensordot: dims"),
    (lambda: tc.vander(tc.ones(2, 2)), ValueError, "vander: x's shape"),
    (lambda: tc.vander(tc.ones(2), -1), ValueError, "vander: N"),
    (lambda: tc.cartesian_prod(tc.ones(2, 2)), ValueError, "cartesian_prod: tensors' shapes"),
    (lambda: tc.combinations(tc.ones(2), -1), ValueError, "combinations: r"),
    (lambda: tc.combinations(tc.ones(2, 2)), ValueError, "combinations: input's shape"),
    (lambda: tc.empty_strided((2, 3), (1,)), ValueError, "empty_strided: stride"),
    (lambda: tc.empty_strided((2,), (-1,)), ValueError, "empty_strided: size and stride"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call()
