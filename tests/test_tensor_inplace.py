"""The torch.Tensor methods that write into a tensor or make one (``tricycle.tensor_inplace``):
the in-place methods against PyTorch and their rule (off the graph only), ``.data`` (the same
array, no gradient; assignment on a leaf only), the random fills' statistics and seeds, the
casts without a gradient, ``to``'s spellings, ``new_*`` and the errors. The differentiable
casts (``float()``, ``to(dtype)``) are in tests/test_tensor_torch.py's table."""

import operator

import numpy as np
import pytest

import tricycle
from tricycle.tensor import Tensor, no_grad

torch = pytest.importorskip("torch")


# ====================================================================== in place
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("add_", (2.0,), {"alpha": 0.5}),
        ("sub_", (np.arange(4.0),), {}),
        ("sub_", (1.5,), {"alpha": 2}),
        ("mul_", (np.arange(4.0),), {}),
        ("div_", (np.array([1.0, 2.0, 4.0, -8.0]),), {}),
        ("div_", (3,), {}),
        ("clamp_", (-0.5, 0.5), {}),
        ("clamp_", (), {"max": 0.1}),
        ("clamp_", (), {"min": -0.2}),
    ],
)
def test_in_place_arithmetic_matches_torch(name, args, kwargs):
    values = np.random.default_rng(0).normal(size=(3, 4))
    ours, theirs = Tensor(values.copy(), requires_grad=False), torch.tensor(values)
    array = ours.array
    torch_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    assert getattr(ours, name)(*args, **kwargs) is ours
    getattr(theirs, name)(*torch_args, **kwargs)
    assert ours.array is array  # written into, as torch's
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-15)


def test_in_place_methods_write_off_the_graph():
    w = Tensor(np.ones(3))  # a parameter: requires grad
    with no_grad():  # as torch: initialising a parameter
        assert w.add_(2, alpha=0.5) is w
        w.mul_(Tensor(np.array([1.0, 2.0, 3.0]))).masked_fill_(np.array([True, False, False]), 0)
    np.testing.assert_array_equal(w.array, [0, 4, 6])
    array = w.array
    with no_grad():
        w.fill_(Tensor(np.array(2.5))).copy_(np.array([1, 2, 3]))
        w.zero_()
    assert w.array is array and w.array.sum() == 0 and w.requires_grad  # the same memory
    constant = Tensor(np.zeros((2, 3)), requires_grad=False)
    constant[0] = 1.0  # no gradient: writable outside no_grad too
    # a constant value (a value in a graph makes it join the graph: tests/test_rebase.py)
    constant[constant.array == 0] = Tensor(np.array(2.0), requires_grad=False)
    constant.copy_(constant * 2).add_(np.ones(3))  # a broadcast value
    np.testing.assert_array_equal(constant.array, [[3, 3, 3], [5, 5, 5]])
    with no_grad():
        y = w * 2  # made under no_grad: no graph, writable
    y.fill_(1)
    (w * Tensor(np.ones(3))).sum().backward()  # a parameter written in place still trains
    np.testing.assert_array_equal(w.grad.array, [1, 1, 1])


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.add_(1),
        lambda t: t.sub_(1),
        lambda t: t.mul_(2),
        lambda t: t.div_(2),
        lambda t: t.clamp_(0, 1),
        lambda t: t.normal_(),
        lambda t: t.uniform_(),
        lambda t: t.fill_(0),
        lambda t: t.zero_(),
        lambda t: t.copy_(np.zeros(3)),
        lambda t: t.masked_fill_(np.ones(3, bool), 0),
        lambda t: t.__setitem__(0, 1.0),
    ],
)
def test_in_place_on_the_graph_is_refused(write):
    """A parameter outside no_grad, and an op's output under no_grad (its backward needs its
    values). Outside no_grad, the arithmetic forms and masked_fill_ rebase an op's output
    (tests/test_rebase.py); the fills and writes of values refuse it."""
    w = Tensor(np.ones(3))
    with pytest.raises(RuntimeError, match="requires grad: .*no_grad.*functional"):
        write(w)  # a parameter outside no_grad
    y = w * 2
    with no_grad(), pytest.raises(RuntimeError, match="made by an op in a graph"):
        write(y)  # its backward needs its values, under no_grad too
    np.testing.assert_array_equal(y.array, [2, 2, 2])
    z = w * 2
    try:
        write(z)
    except RuntimeError as error:  # the fills, the writes of values
        assert "made by an op in a graph" in str(error)
        np.testing.assert_array_equal(z.array, [2, 2, 2])
    else:  # rebased: z is the new node, and the product its input
        assert z.args[0].args[0] is w and z.args[0].array is not z.array


def test_augmented_assignment_on_a_constant_writes_into_it_as_torchs():
    """``x op= y`` on a leaf that requires no grad is torch's ``x.op_(y)``: written into, so a
    parameter it was detached from takes the values (the hand-written step of rasbt's
    logistic regression: ``tmp = w.detach(); tmp -= lr * w.grad``), as do the tensors sharing
    its memory (``w.data``, a row of a matrix, another name); the next step's gradients are
    torch's. Where torch refuses (integers += a float, ``/=``, a value broadcast larger, a
    constant a recorded op reads) the name is rebound to the result, as before."""
    x = np.random.default_rng(1).normal(size=(5, 2)).astype(np.float32)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    results = []
    for lib in torch, tricycle:
        w, b = lib.zeros(2, 1, requires_grad=True), lib.zeros(1, requires_grad=True)
        for _ in range(3):
            p = lib.sigmoid(lib.mm(lib.tensor(x), w) + b).view(-1)
            cost = -(lib.tensor(y) * lib.log(p) + (1 - lib.tensor(y)) * lib.log(1 - p)).sum()
            cost.backward()
            tmp = w.detach()
            tmp -= 0.5 * w.grad
            tmp = b.data
            tmp += -0.5 * b.grad
            grads = w.grad.clone(), b.grad.clone()
            w.grad.zero_(), b.grad.zero_()
        m = lib.zeros(2, 3)
        row, same = m[1], m
        row += lib.ones(3)
        same *= 2
        same /= 4
        n = lib.arange(3)
        alias = n
        n += 2
        n *= 3
        results.append([cost, w, b, *grads, m, alias])
    for ours, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), 1e-5, 1e-6)
    n, alias, v = tricycle.arange(3), None, tricycle.zeros(3)
    alias, u = n, v
    n += 0.5  # torch refuses each of these three
    alias /= 2
    v += tricycle.ones(2, 3)
    assert n.dtype == np.float32 and alias.dtype == np.float32 and v.shape == (2, 3)
    np.testing.assert_array_equal(tricycle.arange(3).numpy(), [0, 1, 2])
    assert u.shape == (3,) and not u.numpy().any()
    w, x = tricycle.ones(3, requires_grad=True), tricycle.full((3,), 2.0)
    y = (w * x).sum()
    x += 1  # read by y's backward (torch's refuses to run): rebound, w's gradient right
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2, 2, 2])


def test_requires_grad_as_torch():
    x = Tensor(np.zeros(3), requires_grad=False)
    assert x.requires_grad_() is x and x.requires_grad
    assert not x.requires_grad_(False).requires_grad
    y = Tensor(np.ones(2)) * 3
    assert y.requires_grad_(True) is y
    with pytest.raises(ValueError, match="requires_grad_"):
        y.requires_grad_(False)
    with pytest.raises(TypeError, match="a float or complex dtype"):
        Tensor(np.zeros(2, np.int64)).requires_grad_()


# ====================================================================== random fills
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_fills_have_their_distributions_and_repeat_under_a_seed(dtype):
    x = Tensor(np.zeros((200, 50), dtype), requires_grad=False)  # 10,000 draws
    array = x.array
    tricycle.manual_seed(3)
    assert x.normal_(1.5, 2.0) is x and x.array is array and x.dtype == dtype
    first = x.array.copy()
    assert abs(first.mean() - 1.5) < 0.1 and abs(first.std() - 2.0) < 0.1  # 5 standard errors
    tricycle.manual_seed(3)
    np.testing.assert_array_equal(x.normal_(1.5, 2.0).array, first)  # the seed repeats it
    assert not np.array_equal(x.normal_(1.5, 2.0).array, first)  # the next draw differs
    x.uniform_(-1.0, 3.0)
    assert x.array.min() >= -1 and x.array.max() <= 3
    assert abs(x.array.mean() - 1.0) < 0.06 and abs(x.array.var() - 16 / 12) < 0.06
    drawn = x.uniform_(generator=np.random.default_rng(7)).array.copy()  # U(0, 1)
    expected = np.random.default_rng(7).uniform(0, 1, x.shape).astype(dtype)
    np.testing.assert_array_equal(drawn, expected)
    w = Tensor(np.zeros(4, dtype))  # a parameter, under no_grad: torch's initialisation
    with no_grad():
        w.normal_(std=0.02)
    assert w.requires_grad and 0 < np.abs(w.array).max() < 0.2


# ====================================================================== .data
def test_data_shares_the_array_without_a_gradient():
    w = Tensor(np.arange(3.0))
    data = w.data
    assert data.array is w.array and not data.requires_grad and data.args is None
    y = (w * 2).data  # an op's output: the values, off the graph
    np.testing.assert_array_equal(y.array, [0, 2, 4])
    assert not y.requires_grad
    data.add_(1)  # torch's idiom: w.data.add_(...) writes into w, no gradient recorded
    np.testing.assert_array_equal(w.array, [1, 2, 3])
    assert w.requires_grad


def test_data_assignment_replaces_a_leaf_s_array_off_the_graph():
    w = Tensor(np.ones(3))
    old = w.data
    new = np.full((2, 2), 5.0)
    w.data = new  # a new shape too, as torch's
    assert w.array is new and w.requires_grad and w.args is None
    np.testing.assert_array_equal(old.array, [1, 1, 1])  # rebound: nothing written into
    (w * w).sum().backward()  # it trains with its new values
    np.testing.assert_array_equal(w.grad.array, np.full((2, 2), 10.0))
    w.data = Tensor(np.zeros(2, np.float32))
    assert w.dtype == np.float32 and w.shape == (2,)
    constant = Tensor(np.zeros(2), requires_grad=False)
    constant.data = np.arange(4)  # no gradient: any numeric dtype
    assert constant.dtype == np.int64


@pytest.mark.parametrize(
    ("target", "value", "error", "match"),
    [
        (lambda: Tensor(np.ones(3)) * 2, np.zeros(3), RuntimeError, "made by an op in a graph"),
        (lambda: Tensor(np.ones(3)), [1.0, 2.0], TypeError, "Tensor.data: value"),
        (lambda: Tensor(np.ones(3)), np.zeros(3, int), TypeError, "Tensor.data: value's dtype"),
        (lambda: Tensor(np.ones(3)), np.array(["a"]), TypeError, "Tensor.data"),
    ],
)
def test_bad_data_assignments_are_refused(target, value, error, match):
    tensor = target()
    array = tensor.array
    with pytest.raises(error, match=match):
        tensor.data = value
    assert tensor.array is array


# ====================================================================== casts, to, new tensors
def test_int_and_bool_casts_match_torch():
    values = np.array([[1.7, -2.2, 0.0], [0.4, 3.9, -0.6]])
    x, tx = Tensor(values), torch.tensor(values)
    for name in ("int", "bool", "long", "half", "double"):
        out, expected = getattr(x, name)(), getattr(tx, name)()
        assert str(expected.dtype) == f"torch.{out.dtype}".replace("bool_", "bool")
        np.testing.assert_array_equal(out.array, expected.numpy())
    assert not x.int().requires_grad and not x.bool().requires_grad


def test_to_takes_devices_dtypes_and_tensors():
    x = Tensor(np.ones((2, 3)))
    for same in (x.to("cpu"), x.to(device="cpu"), x.to("CPU"), x.to(np.float64), x.to(x)):
        assert same is x  # nothing to change: itself, as torch's
    assert x.cpu() is x and x.to(dtype=float) is x
    copied = x.to(np.float64, copy=True)
    assert copied is not x and copied.array is not x.array
    assert x.to("cpu", np.float32).dtype == np.float32 and x.to(int).dtype == np.int64
    assert x.to(Tensor(np.zeros(1, np.float16))).dtype == np.float16
    ids = x.to(np.int32)
    assert ids.dtype == np.int32 and not ids.requires_grad
    assert x.to(dtype=np.float32, non_blocking=True).dtype == np.float32


def test_type_names_and_casts_as_torchs():
    values = np.array([[1.7, -2.2, 0.0], [0.4, 3.9, -0.6]])
    x, tx = Tensor(values.astype(np.float32)), torch.tensor(values, dtype=torch.float32)
    for name in ("float", "double", "half", "long", "int", "bool"):  # the names torch gives
        assert getattr(x, name)().type() == getattr(tx, name)().type().replace("torch", "tricycle")
    assert x.type() == "tricycle.FloatTensor"
    for dtype in ("float64", "int64", "int32", "bool"):  # torch's dtype names, as the casts
        out, expected = x.type(getattr(tricycle, dtype)), tx.type(getattr(torch, dtype))
        assert str(expected.dtype) == f"torch.{out.dtype}".replace("bool_", "bool")
        np.testing.assert_array_equal(out.array, expected.numpy())
    assert x.type(np.float32) is x and x.type(tricycle.float32) is x  # nothing to change
    named = x.type("tricycle.LongTensor")
    assert named.dtype == np.int64 and named.device == "cpu"
    np.testing.assert_array_equal(named.array, tx.type("torch.LongTensor").numpy())
    # the quickstart's count of right answers: (pred.argmax(1) == y).type(torch.float).sum()
    hits = (x.argmax(1) == Tensor(np.array([0, 1]))).type(tricycle.float).sum()
    expected = (tx.argmax(1) == torch.tensor([0, 1])).type(torch.float).sum()
    assert hits.item() == expected.item() and type(hits.item()) is type(expected.item())
    # a cast to a float keeps the gradient, sent back in the source's dtype, as torch's
    leaf, tleaf = Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (leaf.type(tricycle.float32) * 3).sum().backward()
    (tleaf.type(torch.float32) * 3).sum().backward()
    assert leaf.grad.dtype == np.float64
    np.testing.assert_array_equal(leaf.grad.array, tleaf.grad.numpy())


def test_a_one_element_integer_tensor_indexes_a_sequence_as_torchs():
    classes = ["zero", "one", "two"]
    for value, dtype in [(2, np.int64), (1, np.int32), (True, np.bool_), (0, np.uint8)]:
        ours, theirs = Tensor(np.array(value, dtype)), torch.tensor(np.array(value, dtype))
        assert classes[ours] == classes[theirs] and operator.index(ours) == int(value)
        assert type(operator.index(ours)) is int
    logits = Tensor(np.array([[0.1, 0.7, 0.2]]))
    assert classes[logits[0].argmax(0)] == "one" and classes[Tensor(np.array([2]))] == "two"
    for bad in (Tensor(np.array(1.0)), Tensor(np.array([1, 2]))):  # torch raises TypeError too
        with pytest.raises(TypeError, match="Tensor.__index__: only a one-element integer"):
            classes[bad]
    assert np.arange(5)[Tensor(np.array([1, 3]))].tolist() == [1, 3]  # numpy's fancy index


def test_reversed_flips_the_first_axis_as_torchs():
    """``reversed(x)`` is torch's ``x.flip(0)``, a tensor with its gradient (d2l's
    bidirectional RNN: ``self.b_rnn(reversed(inputs))``); a 0-d tensor is itself."""
    torch = pytest.importorskip("torch")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours, theirs = tricycle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, want = reversed(ours), reversed(theirs)
    np.testing.assert_array_equal(out.numpy(), want.detach().numpy())
    weights = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    (out * tricycle.tensor(weights)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    scalar = tricycle.tensor(2.0)
    assert reversed(scalar) is scalar


def test_new_tensors_take_this_tensors_dtype_and_device():
    x = Tensor(np.ones((2, 2), dtype=np.float64))
    zeros, ones = x.new_zeros(2, 3), x.new_ones((4,), requires_grad=True)
    assert zeros.shape == (2, 3) and zeros.dtype == np.float64 and not zeros.requires_grad
    assert ones.requires_grad and ones.dtype == np.float64 and ones.array.sum() == 4
    full = x.new_full((3,), 7, dtype=np.int64)
    assert full.dtype == np.int64 and full.tolist() == [7, 7, 7] and full.device == "cpu"
    data = np.array([1.0, 2.0])
    made = x.new_tensor(data)
    data[0] = 5  # a copy
    assert made.tolist() == [1.0, 2.0] and made.dtype == np.float64
    assert Tensor(np.ones(2, np.float32)).new_tensor([1, 2]).dtype == np.float32
    assert x.new_zeros(0, 3).shape == (0, 3)  # an empty tensor, as torch's


# ====================================================================== errors
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda t: t.new_zeros(-1, 2), ValueError, r"Tensor.new_zeros: size .*\(-1, 2\)"),
        (lambda t: t.new_ones((3, -2)), ValueError, "Tensor.new_ones: size"),
        (lambda t: t.new_full((-1,), 1.0), ValueError, "Tensor.new_full: size"),
        (lambda t: t.new_zeros(2.5), TypeError, "Tensor.new_zeros"),
        (lambda t: t.to(np.float32, np.float64), TypeError, "Tensor.to: device"),
        (lambda t: t.to("float32"), ValueError, "Tensor.to: device"),
        (lambda t: t.to(object()), TypeError, "Tensor.to: device"),
        (lambda t: t.to(str), TypeError, "Tensor.to"),
        (lambda t: t.to("cpu", copy=1), TypeError, "Tensor.to: copy"),
        (lambda t: t.normal_(std=-1.0), ValueError, "Tensor.normal_: std"),
        (lambda t: t.normal_(float("nan")), ValueError, "Tensor.normal_: mean"),
        (lambda t: t.uniform_(1.0, 0.0), ValueError, "Tensor.uniform_: to"),
        (lambda t: t.uniform_(generator=1), TypeError, "Tensor.uniform_: generator"),
        (lambda t: t.long().normal_(), TypeError, "Tensor.normal_: dtype"),
        (lambda t: t.clamp_(), ValueError, "Tensor.clamp"),
        (lambda t: t.long().div_(2), TypeError, "Tensor.div_"),
        (lambda t: t.type("torch.FloatTensor"), TypeError, "Tensor.type: dtype must be a dtype"),
        (lambda t: t.type("tricycle.Float"), TypeError, "Tensor.type: dtype .*'tricycle.Float'"),
        (lambda t: t.type(str), TypeError, "Tensor.type"),
        (lambda t: t.type(np.float32, non_blocking=1), TypeError, "Tensor.type: non_blocking"),
    ],
)
def test_bad_arguments_name_the_method(call, error, match):
    x = Tensor(np.zeros((2, 3)), requires_grad=False)
    with pytest.raises(error, match=match):
        call(x)


def test_bad_in_place_values_are_refused():
    ids = Tensor(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="Tensor.add_"):
        ids.add_(0.5)  # torch: a float result cannot go into an integer tensor
    x = Tensor(np.zeros((2, 3)), requires_grad=False)
    with pytest.raises(ValueError, match=r"Tensor.copy_: into shape \(2, 3\)"):
        x.copy_(np.zeros(4))
    with pytest.raises(ValueError, match="item"):
        x.fill_(Tensor(np.zeros(2)))


# ====================================================================== multinomial, bfloat16
def test_multinomial_draws_each_id_as_often_as_its_weight():
    weights = np.array([[0.0, 1.0, 3.0, 4.0], [5.0, 0.0, 0.0, 5.0]])  # any positive sum
    tricycle.manual_seed(0)
    ids = Tensor(weights, requires_grad=False).multinomial(4000, replacement=True)
    assert ids.shape == (2, 4000) and ids.dtype == np.int64 and not ids.requires_grad
    for row, drawn in zip(weights, ids.numpy()):
        counts = np.bincount(drawn, minlength=4)
        assert counts[row == 0].sum() == 0  # a weight of 0 is never drawn
        expected = 4000 * row / row.sum()  # within 5 standard errors of each count
        assert (np.abs(counts - expected) <= 5 * np.sqrt(expected + 1)).all()
    tricycle.manual_seed(0)  # the seed repeats it
    again = Tensor(weights, requires_grad=False).multinomial(4000, replacement=True)
    np.testing.assert_array_equal(again.numpy(), ids.numpy())


def test_multinomial_without_replacement_draws_distinct_ids_by_weight():
    weights = Tensor(np.array([0.7, 0.2, 0.1, 0.0]), requires_grad=False)
    tricycle.manual_seed(1)
    firsts = []
    for _ in range(2000):
        ids = weights.multinomial(3).tolist()  # (3,): every id of positive weight, once
        assert sorted(ids) == [0, 1, 2]
        firsts.append(ids[0])
    counts = np.bincount(firsts, minlength=3)  # the first draw: as with replacement
    assert (np.abs(counts - 2000 * np.array([0.7, 0.2, 0.1])) < 5 * np.sqrt(2000 * 0.25)).all()
    one_hot = Tensor(np.eye(3)[[2, 0]], requires_grad=False)  # greedy sampling: the one id
    assert one_hot.multinomial(1).tolist() == [[2], [0]]
    drawn = weights.multinomial(2, generator=np.random.default_rng(5)).tolist()
    assert drawn == weights.multinomial(2, generator=np.random.default_rng(5)).tolist()


@pytest.mark.parametrize(
    ("weights", "args", "error", "match"),
    [
        (np.ones(3), (0,), ValueError, "Tensor.multinomial: num_samples"),
        (np.array([1.0, 0.0, 0.0]), (2,), ValueError, "2 or more weights > 0"),
        (np.zeros((2, 3)), (1, True), ValueError, "1 or more weights > 0"),
        (np.array([1.0, -1.0]), (1,), ValueError, "non-negative"),
        (np.array([1.0, np.nan]), (1,), ValueError, "finite"),
        (np.ones((2, 2, 2)), (1,), ValueError, r"\(K,\) or \(N, K\)"),
        (np.ones(3), (1, 1), TypeError, "Tensor.multinomial: replacement"),
    ],
)
def test_bad_multinomial_arguments_name_the_method(weights, args, error, match):
    with pytest.raises(error, match=match):
        Tensor(weights, requires_grad=False).multinomial(*args)


def test_bfloat16_casts_as_torch_and_sends_the_gradient_back_in_the_source_dtype():
    from tricycle import backend, casting

    assert casting.bfloat16 is backend.bfloat16  # one lookup, in the engine's layer
    pytest.importorskip("ml_dtypes")
    values = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    x = Tensor(values)
    out = x.bfloat16()
    assert out.dtype == backend.bfloat16() and x.to(backend.bfloat16()).dtype == out.dtype
    expected = torch.tensor(values).bfloat16().float().numpy()
    np.testing.assert_array_equal(out.array.astype(np.float32), expected)  # the same rounding
    (out.float() * 3).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.array, np.full((3, 4), 3, np.float32))


def test_bfloat16_without_ml_dtypes_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # as if not installed
    with pytest.raises(ImportError, match=r"Tensor.bfloat16 needs the ml_dtypes package"):
        Tensor(np.ones(2)).bfloat16()
    from tricycle.casting import bfloat16

    with pytest.raises(ImportError, match=r"Precision\('bf16'\) needs the ml_dtypes"):
        bfloat16()


def test_to_nothing_is_the_tensor_itself_as_torchs():
    """``x.to()`` and ``x.to(None)`` change nothing and return ``x``, as torch's (d2l's
    ``predict_step(batch, device=None)``); with ``copy=True``, a copy."""
    torch = pytest.importorskip("torch")
    x, t = Tensor(np.arange(3.0)), torch.arange(3.0)
    assert x.to() is x and x.to(None) is x and t.to() is t and t.to(None) is t
    copied = x.to(None, copy=True)
    assert copied is not x and np.array_equal(copied.array, x.array)
