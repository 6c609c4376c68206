"""torch's functions that rearrange, join and split tensors (``tricycle.torch_shapes``) and
their Tensor methods: values and the gradients of every input against torch in float64, on
fixed cases and on random shapes (hypothesis), the gradients against finite differences, the
names at the top level, and bad arguments refused, naming the function."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
from tests.helpers import check_grads
from tricycle import torch_shapes

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def assert_as_torch(ours, theirs, *arrays, seed=9):
    """``ours`` and ``theirs`` of the arrays (float64 leaves): equal values (a tensor, or a
    tuple of them), then equal gradients of every input for one random output gradient."""
    xs = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    if isinstance(expected, tuple | list):
        assert isinstance(out, tuple) and len(out) == len(expected)
        assert [o.shape for o in out] == [tuple(e.shape) for e in expected]
        out = tc.cat([o.reshape(-1) for o in out]) if out else None
        expected = torch.cat([e.reshape(-1) for e in expected]) if expected else None
        if out is None:
            return
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=0)
    weights = normal(*expected.shape, seed=seed)
    out.backward(weights)
    expected.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


A, M, V = normal(2, 3, 4), normal(3, 4, seed=1), normal(5, seed=2)

CASES = [
    ("ravel", lambda x: tc.ravel(x), lambda x: torch.ravel(x), [A]),
    ("movedim", lambda x: tc.movedim(x, 0, -1), lambda x: torch.movedim(x, 0, -1), [A]),
    ("movedim two", lambda x: tc.movedim(x, (0, 1), (2, 0)),
     lambda x: torch.movedim(x, (0, 1), (2, 0)), [A]),
    ("moveaxis", lambda x: tc.moveaxis(x, [2, 0], [0, 1]),
     lambda x: torch.moveaxis(x, [2, 0], [0, 1]), [A]),
    ("swapdims", lambda x: tc.swapdims(x, 0, 2), lambda x: torch.swapdims(x, 0, 2), [A]),
    ("narrow", lambda x: tc.narrow(x, 2, -3, 2), lambda x: torch.narrow(x, 2, -3, 2), [A]),
    ("tile", lambda x: tc.tile(x, (2, 1, 3)), lambda x: torch.tile(x, (2, 1, 3)), [M]),
    ("unbind", lambda x: tc.unbind(x, 1), lambda x: torch.unbind(x, 1), [A]),
    ("msort", lambda x: tc.msort(x), lambda x: torch.msort(x), [A]),
    ("fliplr", lambda x: tc.fliplr(x), lambda x: torch.fliplr(x), [A]),
    ("flipud", lambda x: tc.flipud(x), lambda x: torch.flipud(x), [V]),
    *[(f"rot90 k={k}", lambda x, k=k: tc.rot90(x, k, (2, 0)),
       lambda x, k=k: torch.rot90(x, k, (2, 0)), [A]) for k in range(-2, 6)],
    ("rot90 default", lambda x: tc.rot90(x), lambda x: torch.rot90(x), [M]),
    ("broadcast_tensors", lambda x, y, z: tc.broadcast_tensors(x, y, z),
     lambda x, y, z: torch.broadcast_tensors(x, y, z), [M, normal(2, 1, 4), normal()]),
    ("hstack vectors", lambda x, y: tc.hstack([x, y]), lambda x, y: torch.hstack([x, y]),
     [V, V[:2]]),
    ("hstack", lambda x, y: tc.hstack((x, y)), lambda x, y: torch.hstack((x, y)), [A, A[:, :1]]),
    ("vstack", lambda x, y, z: tc.vstack([x, y, z]), lambda x, y, z: torch.vstack([x, y, z]),
     [M, M[0], M[:2]]),
    ("row_stack", lambda x, y: tc.row_stack([x, y]), lambda x, y: torch.row_stack([x, y]),
     [V, V]),
    ("dstack", lambda x, y: tc.dstack([x, y]), lambda x, y: torch.dstack([x, y]), [M, M]),
    ("dstack vectors", lambda x, y: tc.dstack([x, y]), lambda x, y: torch.dstack([x, y]),
     [V, V]),
    ("column_stack", lambda x, y, z: tc.column_stack([x, y, z]),
     lambda x, y, z: torch.column_stack([x, y, z]), [M[:, 0], M, normal(3, 1)]),
    ("tensor_split 3", lambda x: tc.tensor_split(x, 3, 2), lambda x: torch.tensor_split(x, 3, 2),
     [A]),
    ("tensor_split 5", lambda x: tc.tensor_split(x, 5, -1),
     lambda x: torch.tensor_split(x, 5, -1), [A]),
    ("tensor_split ids", lambda x: tc.tensor_split(x, [1, 3, 2, 9], 2),
     lambda x: torch.tensor_split(x, [1, 3, 2, 9], 2), [A]),
    ("tensor_split tensor", lambda x: tc.tensor_split(x, tc.tensor([0, 2]), 1),
     lambda x: torch.tensor_split(x, torch.tensor([0, 2]), 1), [M]),
    ("tensor_split 0-d", lambda x: tc.tensor_split(x, tc.tensor(2)),
     lambda x: torch.tensor_split(x, torch.tensor(2)), [V]),
    ("hsplit", lambda x: tc.hsplit(x, 3), lambda x: torch.hsplit(x, 3), [A]),
    ("hsplit vector", lambda x: tc.hsplit(x, [2]), lambda x: torch.hsplit(x, [2]), [V]),
    ("vsplit", lambda x: tc.vsplit(x, [1, 2]), lambda x: torch.vsplit(x, [1, 2]), [M]),
    ("dsplit", lambda x: tc.dsplit(x, 2), lambda x: torch.dsplit(x, 2), [A]),
]  # fmt: skip


@pytest.mark.parametrize("name, ours, theirs, arrays", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, ours, theirs, arrays):
    assert_as_torch(ours, theirs, *arrays)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_gives_torchs_shapes_one_tensor_or_a_tuple(name):
    ours, theirs = getattr(tc, name), getattr(torch, name)
    for shape in [(), (3,), (2, 3), (2, 3, 2), (1, 2, 3, 1)]:
        assert_as_torch(ours, theirs, normal(*shape))
    assert_as_torch(lambda x, y: ours(x, y), lambda x, y: theirs(x, y), normal(), V)
    assert_as_torch(lambda x, y: ours([x, y]), lambda x, y: theirs([x, y]), normal(), M)
    assert isinstance(ours([tc.ones(2)]), tuple) and not isinstance(ours(tc.ones(2)), tuple)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.data())
def test_random_shapes_match_torch_and_finite_differences(shape, data):
    a = normal(*shape, seed=data.draw(st.integers(0, 99)))
    n = len(shape)
    dim = data.draw(st.integers(-n, n - 1))
    sections = data.draw(st.integers(1, 5))
    k = data.draw(st.integers(-3, 5))
    source = data.draw(st.permutations(range(n)))[:2]
    destination = data.draw(st.permutations(range(n)))[:2]
    calls = [
        (lambda x: tc.tensor_split(x, sections, dim),
         lambda x: torch.tensor_split(x, sections, dim)),
        (lambda x: tc.rot90(x, k, (dim, (dim + 1) % n)),
         lambda x: torch.rot90(x, k, (dim, (dim + 1) % n))),
        (lambda x: tc.movedim(x, source, destination),
         lambda x: torch.movedim(x, source, destination)),
        (lambda x: tc.msort(x), lambda x: torch.msort(x)),
        (lambda x: tc.dstack([x, x]), lambda x: torch.dstack([x, x])),
        (lambda x: tc.column_stack([x, x]), lambda x: torch.column_stack([x, x])),
    ]  # fmt: skip
    for ours, theirs in calls:
        assert_as_torch(ours, theirs, a)
    check_grads(lambda x: tc.rot90(x, k, (dim, (dim + 1) % n)) * tc.tensor(2.0), a)
    check_grads(lambda x: tc.hstack([x, x * x]), a)


def test_broadcast_shapes_is_torchs_as_a_tuple():
    for shapes in [((2, 1), (3,), 1), ((5, 1, 4), (3, 1)), ((0, 1), (1, 3)), ((),)]:
        assert tc.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(RuntimeError, match=r"broadcast_shapes: shapes \[\(2,\), \(3,\)\]"):
        tc.broadcast_shapes((2,), (3,))
    with pytest.raises(TypeError, match="broadcast_shapes"):
        tc.broadcast_shapes((2.5,))


def test_the_methods_are_torchs_and_the_names_are_the_modules():
    x = tc.Tensor(A, requires_grad=True, dtype=np.float64)
    t = torch.tensor(A)
    for call in ("ravel()", "movedim(0, 2)", "moveaxis(1, 0)", "swapdims(0, 1)", "msort()",
                 "fliplr()", "flipud()", "rot90(1, (1, 2))", "tensor_split(2, 1)[1]",
                 "hsplit(3)[2]", "vsplit(2)[0]", "dsplit([1])[1]"):  # fmt: skip
        got, want = eval(f"x.{call}", {"x": x}), eval(f"x.{call}", {"x": t})
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=call)
    names = ("ravel movedim moveaxis swapdims narrow tile unbind msort fliplr flipud rot90 "
             "broadcast_shapes broadcast_tensors atleast_1d atleast_2d atleast_3d hstack vstack "
             "row_stack dstack column_stack tensor_split hsplit vsplit dsplit")  # fmt: skip
    for name in names.split():
        function = getattr(tc, name)  # or complex_functions' route of complex tensors around it
        assert getattr(function, "__wrapped__", function) is getattr(torch_shapes, name), name
        assert name in tc.__all__, name


ERRORS = [
    (lambda: tc.ravel(np.ones(3)), TypeError, "ravel: input must be a Tensor"),
    (lambda: tc.movedim(tc.ones(2, 3), (0, 1), 0), TypeError, "movedim: destination"),
    (lambda: tc.movedim(tc.ones(2, 3), (0, 0), (0, 1)), ValueError, "movedim: destination"),
    (lambda: tc.movedim(tc.ones(2, 3), 2, 0), ValueError, "movedim: source"),
    (lambda: tc.fliplr(tc.ones(3)), ValueError, r"fliplr: input's shape .* at least 2 axes"),
    (lambda: tc.flipud(tc.tensor(1.0)), ValueError, "flipud: input's shape"),
    (lambda: tc.rot90(tc.ones(2, 3), 1, (0, 0)), ValueError, "rot90: dims"),
    (lambda: tc.rot90(tc.ones(2, 3), 1, (0,)), TypeError, "rot90: dims"),
    (lambda: tc.rot90(tc.ones(3), 1), ValueError, "rot90: input's shape"),
    (lambda: tc.hstack(tc.ones(3)), TypeError, "hstack: tensors"),
    (lambda: tc.vstack([]), TypeError, "vstack: tensors"),
    (lambda: tc.hstack([tc.ones(3)], out=tc.ones(3)), TypeError, "hstack: out="),
    (lambda: tc.tensor_split(tc.ones(4), 0), ValueError, "tensor_split: indices_or_sections"),
    (lambda: tc.tensor_split(tc.ones(4), 1.5), TypeError, "tensor_split: indices_or_sections"),
    (lambda: tc.tensor_split(tc.ones(4), tc.tensor([[1]])), TypeError, "tensor_split"),
    (lambda: tc.hsplit(tc.ones(2, 5), 2), ValueError, "hsplit: indices_or_sections"),
    (lambda: tc.vsplit(tc.ones(4), 2), ValueError, "vsplit: input's shape"),
    (lambda: tc.dsplit(tc.ones(2, 4), 2), ValueError, "dsplit: input's shape"),
    (lambda: tc.broadcast_tensors(tc.ones(2), tc.ones(3)), RuntimeError, "broadcast_shapes"),
    (lambda: tc.atleast_2d(tc.ones(2), [1.0]), TypeError, r"atleast_2d: tensors\[1\]"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call()
