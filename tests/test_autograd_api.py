"""tricycle.autograd as torch.autograd: custom ops (``Function``) against finite differences
and against the same Function written for torch; ``grad`` and ``backward`` against torch's,
with ``.grad`` left alone, unused inputs, several outputs and the engine's retain_graph."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import tricycle as tc
from tricycle import autograd
from tricycle.autograd import Function
from tricycle.tensor import Tensor


def leaf(array, xp=np) -> Tensor:
    """A float64 leaf of ``array`` (host data, or already on xp's device) on xp's device."""
    return Tensor(xp.asarray(array, dtype=np.float64), requires_grad=True)


def randn(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


# ------------------------------------------------------------------ custom Functions
class Exp(Function):
    """exp(x), backward from the saved output (no clamp)."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return dy * y


class MulAdd(Function):
    """a * b + a for a (N, C) and b (1, C): b's gradient comes back unsummed (N, C) and is
    summed to b's shape, as torch does."""

    calls = 0

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + a

    @staticmethod
    def backward(ctx, dout):
        MulAdd.calls += 1
        a, b = ctx.saved_tensors
        return dout * (b + 1), dout * a


class Scale(Function):
    """x * k for a number k, which gets no gradient (None)."""

    @staticmethod
    def forward(ctx, x, k=2.0):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, dout):
        return dout * ctx.k, None


class SinCos(Function):
    """(sin x, cos x): two outputs, one backward given both gradients."""

    seen = []

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, dsin, dcos):
        SinCos.seen.append((dsin, dcos))
        (x,) = ctx.saved_tensors
        return dsin * x.cos() - dcos * x.sin()


class MaxWithIndex(Function):
    """The max over the last axis and its index, marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        ids = x.array.argmax(axis=-1)  # (N,)
        values = Tensor(np.take_along_axis(x.array, ids[:, None], -1)[:, 0])
        index = Tensor(ids, requires_grad=False)
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(x, index)
        return values, index

    @staticmethod
    def backward(ctx, dvalues, dindex):
        x, index = ctx.saved_tensors
        assert dindex is not None and not dindex.array.any()  # materialized zeros
        dx = np.zeros_like(x.array)
        np.put_along_axis(dx, index.array[:, None], dvalues.array[:, None], -1)
        return dx  # an array does as well as a Tensor


@given(array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4), st.integers(0, 2**16))
def test_exp_matches_finite_differences(shape, seed):
    x = np.random.default_rng(seed).normal(size=shape)
    assert tc.gradcheck(Exp.apply, x)
    assert tc.gradcheck(lambda t: Exp.apply(t) * t, x)  # a diamond: x reaches twice


@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_two_inputs_match_finite_differences(n, c, seed):
    rng = np.random.default_rng(seed)
    assert tc.gradcheck(MulAdd.apply, rng.normal(size=(n, c)), rng.normal(size=(1, c)))


def test_several_outputs_match_finite_differences(xp):
    x = xp.asarray(randn(3, 4))
    assert tc.gradcheck(lambda t: SinCos.apply(t)[0] * 2 + SinCos.apply(t)[1] ** 2, x)
    sin, cos = SinCos.apply(leaf(x, xp))
    assert sin.close_to(xp.sin(x)) and cos.close_to(xp.cos(x))


def test_functions_match_the_same_functions_in_torch():
    torch = pytest.importorskip("torch")

    class TorchMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b + a

        @staticmethod
        def backward(ctx, dout):
            a, b = ctx.saved_tensors
            return dout * (b + 1), dout * a

    class TorchSinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, dsin, dcos):
            (x,) = ctx.saved_tensors
            return dsin * x.cos() - dcos * x.sin()

    a, b, w = randn(3, 4), randn(1, 4, seed=1), randn(3, 4, seed=2)
    ours = [leaf(a), leaf(b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    out = MulAdd.apply(*ours)
    sin, cos = SinCos.apply(out)
    (Exp.apply(sin) * leaf(w) + cos).sum().backward()
    out_t = TorchMulAdd.apply(*theirs)
    sin_t, cos_t = TorchSinCos.apply(out_t)
    (torch.exp(sin_t) * torch.tensor(w) + cos_t).sum().backward()
    np.testing.assert_allclose(out.array, out_t.detach().numpy(), rtol=1e-12)
    for mine, torch_tensor in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, torch_tensor.grad.numpy(), rtol=1e-10)


def test_backward_runs_once_per_pass_and_again_with_a_retained_graph():
    a, b = leaf(randn(2, 3)), leaf(randn(1, 3))
    MulAdd.calls = 0
    out = MulAdd.apply(a, b).sum()
    out.backward(retain_graph=True)
    assert MulAdd.calls == 1  # one backward gives both inputs their gradients
    first = b.grad.array.copy()
    out.backward()
    assert MulAdd.calls == 2
    np.testing.assert_allclose(b.grad.array, 2 * first)
    with pytest.raises(RuntimeError, match="freed"):
        out.backward()


def test_an_unused_output_gets_zeros_or_none():
    x = leaf(randn(3))
    SinCos.seen.clear()
    SinCos.apply(x)[0].sum().backward()
    (dsin, dcos), = SinCos.seen  # fmt: skip
    assert (dsin.array == 1).all() and (dcos.array == 0).all()

    class Lazy(SinCos):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return SinCos.forward(ctx, x)

        @staticmethod
        def backward(ctx, dsin, dcos):
            SinCos.seen.append((dsin, dcos))
            (x,) = ctx.saved_tensors
            return -dcos * x.sin()

    SinCos.seen.clear()
    x.grad = None
    Lazy.apply(x)[1].sum().backward()
    (dsin, dcos), = SinCos.seen  # fmt: skip
    assert dsin is None and (dcos.array == 1).all()
    np.testing.assert_allclose(x.grad.array, -np.sin(x.array))


def test_a_non_differentiable_output_and_a_number_input():
    x = leaf(randn(4, 5))
    values, index = MaxWithIndex.apply(x)
    assert values.requires_grad and not index.requires_grad
    assert (index.array == x.array.argmax(-1)).all()
    Scale.apply(values, 3.0).sum().backward()
    expected = np.zeros((4, 5))
    expected[np.arange(4), x.array.argmax(-1)] = 3.0
    np.testing.assert_array_equal(x.grad.array, expected)
    np.testing.assert_allclose(Scale.apply(x, k=0.5).array, x.array / 2)  # a keyword input


def test_setup_context_style_and_needs_input_grad():
    seen = []

    class Square(Function):
        @staticmethod
        def forward(x, k):
            return x * x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, dout):
            (x,) = ctx.saved_tensors
            return dout * 2 * x * ctx.k, None

    assert tc.gradcheck(lambda t: Square.apply(t, 3.0), randn(2, 3))
    Square.apply(leaf(randn(2)), 3.0)
    assert seen[-1] == (True, False)


def test_under_no_grad_apply_records_nothing():
    x = leaf(randn(3))
    with tc.no_grad():
        y = Exp.apply(x)
        sin, cos = SinCos.apply(x)
    for out in (y, sin, cos):
        assert not out.requires_grad and out.args is None
    constant = Exp.apply(Tensor(randn(3), requires_grad=False))
    assert not constant.requires_grad and constant.args is None


def test_what_backward_returns_is_checked():
    class TooMany(Exp):
        @staticmethod
        def backward(ctx, dy):
            return dy, dy

    class WrongShape(Exp):
        @staticmethod
        def backward(ctx, dy):
            return dy[:1]

    class NotAGradient(Exp):
        @staticmethod
        def backward(ctx, dy):
            return 1.0

    class GradientOfANumber(Scale):
        @staticmethod
        def backward(ctx, dout):
            return dout, dout

    x = leaf(randn(3))
    with pytest.raises(ValueError, match=r"TooMany.backward returned 2 gradient\(s\); expected 1"):
        TooMany.apply(x).sum().backward()
    with pytest.raises(ValueError, match=r"WrongShape.backward .* shape \(1,\) .* \(3,\)"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(TypeError, match="NotAGradient.backward returned float"):
        NotAGradient.apply(x).sum().backward()
    with pytest.raises(ValueError, match="GradientOfANumber.backward .* position 1"):
        GradientOfANumber.apply(x, 2.0).sum().backward()


def test_bad_forwards_and_calls_are_refused():
    class ReturnsAnArray(Function):
        @staticmethod
        def forward(ctx, x):
            return x.array

    x = leaf(randn(3))
    with pytest.raises(TypeError, match="ReturnsAnArray.forward returned ndarray"):
        ReturnsAnArray.apply(x)
    with pytest.raises(TypeError, match=r"Exp.apply\(...\)"):
        Exp()(x)
    with pytest.raises(TypeError, match="Scale.apply"):
        Scale.apply(x, factor=2.0)
    with pytest.raises(TypeError, match="save_for_backward: argument 0 is ndarray"):
        autograd.FunctionCtx(()).save_for_backward(x.array)


# ------------------------------------------------------------------ grad and backward
def mlp(x, w1, b1, w2):
    """A two-layer perceptron's squared output: x (N, I), w1 (I, H), b1 (H,), w2 (H, O)."""
    hidden = (x @ w1 + b1).tanh()
    return ((hidden @ w2) ** 2).sum(), hidden


def test_grad_matches_torch_and_leaves_grad_alone():
    torch = pytest.importorskip("torch")
    arrays = [randn(4, 3), randn(3, 5, seed=1), randn(5, seed=2), randn(5, 2, seed=3)]
    ours = [leaf(a) for a in arrays]
    unused = leaf(randn(2))
    sentinel = leaf(randn(3, 5)).detach()
    ours[1].grad = sentinel
    loss, hidden = mlp(*ours)
    hidden.retain_grad()
    grads = autograd.grad(loss, [*ours, hidden], retain_graph=True)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss_t, hidden_t = mlp(*theirs)
    expected = torch.autograd.grad(loss_t, [*theirs, hidden_t])
    for mine, torch_grad in zip(grads, expected):
        np.testing.assert_allclose(mine.array, torch_grad.numpy(), rtol=1e-10)
        assert not mine.requires_grad
    assert ours[1].grad is sentinel and all(t.grad is None for t in (ours[0], ours[2], hidden))

    with pytest.raises(RuntimeError, match="index 1 .* appears to not have been used"):
        autograd.grad(loss, [ours[0], unused], retain_graph=True)
    dx, none = autograd.grad(loss, [ours[0], unused], retain_graph=True, allow_unused=True)
    assert none is None
    np.testing.assert_allclose(dx.array, expected[0].numpy(), rtol=1e-10)
    _, zeros = autograd.grad(loss, (ours[0], unused), materialize_grads=True)
    assert zeros.shape == (2,) and not zeros.array.any()


def test_grad_of_several_outputs_with_grad_outputs(xp):
    arrays = [randn(4, 3), randn(3, 5, seed=1), randn(5, seed=2), randn(5, 2, seed=3)]
    ours = [leaf(a, xp) for a in arrays]
    loss, hidden = mlp(*ours)
    v = randn(4, 5, seed=4)
    grads = autograd.grad([loss, hidden], ours[1:3], grad_outputs=[None, xp.asarray(v)])
    # the same as one output: loss + sum(hidden * v)
    ours = [leaf(a, xp) for a in arrays]
    loss, hidden = mlp(*ours)
    (loss + (hidden * Tensor(xp.asarray(v))).sum()).backward()
    for mine, expected in zip(grads, ours[1:3]):
        assert mine.close_to(expected.grad, rtol=1e-10, atol=1e-12)


def test_backward_of_several_tensors_matches_torch():
    torch = pytest.importorskip("torch")
    arrays = [randn(4, 3), randn(3, 5, seed=1), randn(5, seed=2), randn(5, 2, seed=3)]
    v = randn(4, 5, seed=4)
    ours = [leaf(a) for a in arrays]
    loss, hidden = mlp(*ours)
    autograd.backward([loss, hidden], [None, Tensor(v)])  # one walk: the shared graph is freed once
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss_t, hidden_t = mlp(*theirs)
    torch.autograd.backward([loss_t, hidden_t], [None, torch.tensor(v)])
    for mine, torch_tensor in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, torch_tensor.grad.numpy(), rtol=1e-10)


def test_retain_graph_as_the_engine_has_it():
    x = leaf(randn(3))
    y = (Exp.apply(x) * x).sum()
    (first,) = autograd.grad(y, x, retain_graph=True)
    (again,) = autograd.grad(y, x)  # retain_graph defaults to False: this one frees the graph
    np.testing.assert_array_equal(first.array, again.array)
    with pytest.raises(RuntimeError, match="freed by an earlier backward"):
        autograd.grad(y, x)
    hidden = x * 3  # a wanted tensor whose own graph was freed: grad need not go below it
    (hidden * 2).sum().backward()
    (dhidden,) = autograd.grad((hidden**2).sum(), hidden)
    np.testing.assert_allclose(dhidden.array, 2 * hidden.array)
    x.grad = None
    z = (x * 2).sum()
    autograd.backward(z, retain_graph=True)
    autograd.backward(z)
    np.testing.assert_array_equal(x.grad.array, np.full(3, 4.0))
    with pytest.raises(RuntimeError, match="freed"):
        autograd.backward(z)


def test_gradients_handed_out_share_no_memory():
    x, w = leaf(randn(3)), leaf(randn(3))
    dx, dw = autograd.grad(x + w, [x, w])  # add's back_fns pass the one gradient on to both
    assert not np.shares_memory(dx.array, dw.array)
    dx.array += 1  # each is the caller's to change
    np.testing.assert_array_equal(dw.array, np.ones(3))


def test_grad_hooks_and_grad_modes():
    x = leaf(randn(3))
    x.register_hook(lambda g: g * 10)  # a tensor hook changes what grad returns, as torch's
    x.register_post_accumulate_grad_hook(lambda t: pytest.fail("no .grad is accumulated"))
    y = (x * x).sum()
    with tc.no_grad():  # as torch: grad differentiates a graph recorded before
        (dx,) = autograd.grad([y, y], [x])
    np.testing.assert_allclose(dx.array, 2 * 10 * 2 * x.array)
    assert x.grad is None
    assert autograd.no_grad is tc.no_grad and autograd.enable_grad is tc.enable_grad
    assert autograd.set_grad_enabled is tc.set_grad_enabled
    assert tc.autograd.Function is Function


def test_bad_arguments_are_refused():
    x = leaf(randn(3))
    y = (x * 2).sum()
    with pytest.raises(TypeError, match="create_graph"):
        autograd.grad(y, x, create_graph="yes")
    with pytest.raises(TypeError, match="create_graph"):
        autograd.backward(y, create_graph="yes")
    with pytest.raises(RuntimeError, match=r"inputs\[0\] .* does not require grad"):
        autograd.grad(y, Tensor(randn(3), requires_grad=False))
    with pytest.raises(RuntimeError, match="output 0 .* does not require grad"):
        autograd.grad(Tensor(randn(3), requires_grad=False).sum(), x)
    with pytest.raises(ValueError, match=r"gradient of output 0 has shape \(2,\)"):
        autograd.grad(y, x, grad_outputs=np.ones(2))
    with pytest.raises(ValueError, match=r"1 gradient\(s\) for 2 output"):
        autograd.backward([y, y], [None])
    with pytest.raises(TypeError, match=r"grad: inputs\[0\] must be a Tensor"):
        autograd.grad(y, [x.array])
    with pytest.raises(ValueError, match="allow_unused=False with materialize_grads=True"):
        autograd.grad(y, x, allow_unused=False, materialize_grads=True)


def test_tensor_backward_takes_torchs_keywords():
    """``Tensor.backward(gradient=..., retain_graph=None)`` as torch's (the keyword d2l's
    autograd section writes); ``create_graph`` must be a bool (its use: test_double_backward)."""
    torch = pytest.importorskip("torch")
    a, v = randn(4), randn(4, seed=1)
    ours, theirs = leaf(a), torch.tensor(a, requires_grad=True)
    y, y_t = ours * ours, theirs * theirs
    y.backward(gradient=Tensor(v), retain_graph=None)
    y_t.backward(gradient=torch.tensor(v), retain_graph=None)
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-12)
    y = (ours * 2).sum()
    with pytest.raises(TypeError, match="create_graph"):
        y.backward(create_graph="yes")
    with pytest.raises(TypeError, match="retain_graph"):
        y.backward(retain_graph=1)
    y.backward(create_graph=False)
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy() + 2, rtol=1e-12)
