"""``tricycle.gradcheck``: passes on every differentiable op of the library, and fails, naming
the input, the worst element and both values, on an op whose backward is wrong."""

import inspect

import numpy as np
import pytest

import tricycle as tc
from tricycle import binary, factories, indexing, ops, reduce, unary
from tricycle.activation import GLU, GeLU, LeakyReLU, ReLU, Swish
from tricycle.attention import causal_attention
from tricycle.einsum import Einsum
from tricycle.functions import LogSoftmax, Softmax
from tricycle.gradcheck import GradcheckError, gradcheck
from tricycle.layers import dense, dropout, embedding, layer_norm, rms_norm
from tricycle.loss import BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from tricycle.tensor import Tensor

RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.normal(size=shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


def away_from_zero(*shape):
    """Values in +-[0.3, 2]: kinks at 0 (abs, relu) are out of the finite differences' reach."""
    return RNG.uniform(0.3, 2.0, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


def distinct(*shape):
    """Values at least 0.05 apart, so max/min/maximum have one clear winner."""
    return RNG.permutation(np.arange(np.prod(shape))).reshape(shape) * 0.1 - 0.3


MASK = np.array([[True, False, True], [False, False, True]])
IDS = np.array([[0, 3, 1], [2, 2, 4]])

# (name, fn, inputs): fn takes Tensors (ints/bools stay constants), returns one Tensor
OPS = [
    # unary
    ("exp", unary.exp, [normal(2, 3)]),
    ("log", unary.log, [positive(2, 3)]),
    ("sqrt", unary.sqrt, [positive(2, 3)]),
    ("sin", unary.sin, [normal(2, 3)]),
    ("cos", unary.cos, [normal(2, 3)]),
    ("tanh", unary.tanh, [normal(2, 3)]),
    ("sigmoid", unary.sigmoid, [normal(2, 3)]),
    ("abs", unary.abs, [away_from_zero(2, 3)]),
    ("neg", unary.neg, [normal(2, 3)]),
    ("clip", lambda x: unary.clip(x, -0.25, 0.25), [distinct(2, 3) + 0.02]),
    ("add_scalar", lambda x: unary.add_scalar(x, 1.5), [normal(2, 3)]),
    ("sub_scalar", lambda x: unary.sub_scalar(x, 1.5), [normal(2, 3)]),
    ("rsub_scalar", lambda x: unary.rsub_scalar(x, 1.5), [normal(2, 3)]),
    ("mul_scalar", lambda x: unary.mul_scalar(x, -2.5), [normal(2, 3)]),
    ("div_scalar", lambda x: unary.div_scalar(x, -2.5), [normal(2, 3)]),
    ("rdiv_scalar", lambda x: unary.rdiv_scalar(x, 2.5), [away_from_zero(2, 3)]),
    ("pow_scalar", lambda x: unary.pow_scalar(x, 2.5), [positive(2, 3)]),
    ("rpow_scalar", lambda x: unary.rpow_scalar(x, 2.5), [normal(2, 3)]),
    ("maximum_scalar", lambda x: unary.maximum_scalar(x, 0.02), [distinct(2, 3)]),
    ("minimum_scalar", lambda x: unary.minimum_scalar(x, 0.02), [distinct(2, 3)]),
    # binary, with broadcasting
    ("add", binary.add, [normal(2, 3), normal(3)]),
    ("sub", binary.sub, [normal(2, 1), normal(3)]),
    ("mul", binary.mul, [normal(2, 3), normal(2, 1)]),
    ("div", binary.div, [normal(2, 3), away_from_zero(3)]),
    ("pow", binary.pow, [positive(2, 3), normal(3)]),
    ("maximum", binary.maximum, [distinct(2, 3), distinct(2, 3) + 0.05]),
    ("minimum", binary.minimum, [distinct(2, 3), distinct(2, 3) + 0.05]),
    ("clamp", binary.clamp, [distinct(2, 3), distinct(3) + 0.025, distinct(2, 1) + 0.075]),
    # reductions
    ("sum", lambda x: reduce.sum(x, axis=1), [normal(2, 3)]),
    ("mean", lambda x: reduce.mean(x, axis=(0, 1)), [normal(2, 3)]),
    ("max", lambda x: reduce.max(x, axis=0, keepdims=True), [distinct(2, 3)]),
    ("min", lambda x: reduce.min(x), [distinct(2, 3)]),
    ("var", lambda x: reduce.var(x, axis=-1, ddof=1), [normal(2, 3)]),
    ("cumsum", lambda x: reduce.cumsum(x, axis=1), [normal(2, 3)]),
    ("prod", lambda x: reduce.prod(x, axis=1), [normal(2, 3) * np.array([1, 0, 1])]),
    ("cumprod", lambda x: reduce.cumprod(x, axis=0), [normal(3, 2) * np.array([[1], [0], [1]])]),
    ("logsumexp", lambda x: reduce.logsumexp(x, axis=-1, keepdims=True), [normal(2, 3)]),
    # shapes and indexing
    ("reshape", lambda x: ops.reshape(x, (3, 2)), [normal(2, 3)]),
    ("transpose", lambda x: ops.transpose(x, (1, 2, 0)), [normal(2, 3, 2)]),
    ("swapaxes", lambda x: ops.swapaxes(x, 0, 2), [normal(2, 3, 2)]),
    ("expand_dims", lambda x: ops.expand_dims(x, 1), [normal(2, 3)]),
    ("squeeze", ops.squeeze, [normal(2, 1, 3)]),
    ("getitem", lambda x: ops.getitem(x, (np.array([0, 1, 0]), slice(1, None))), [normal(2, 3)]),
    ("concatenate", lambda a, b: ops.concatenate([a, b, a], axis=1), [normal(2, 3), normal(2, 1)]),
    ("cat", lambda a, b: ops.cat([a, b], axis=0), [normal(2, 3), normal(1, 3)]),
    ("stack", lambda a, b: ops.stack([a, b], axis=-1), [normal(2, 3), normal(2, 3)]),
    ("split", lambda x: ops.split(x, [1], axis=1)[1], [normal(2, 3)]),
    ("repeat", lambda x: ops.repeat(x, 2, axis=1), [normal(2, 3)]),
    ("permute", lambda x: ops.permute(x, 2, 0, 1), [normal(2, 3, 2)]),
    ("chunk", lambda x: ops.chunk(x, 2, axis=1)[1], [normal(2, 3)]),
    ("sort", lambda x: ops.sort(x, axis=-1, descending=True), [distinct(2, 3)]),
    ("topk", lambda x: ops.topk(x, 2, dim=-1, largest=False)[0], [distinct(2, 3)]),
    ("where", lambda a, b: ops.where(MASK, a, b), [normal(2, 3), normal(3)]),
    ("masked_fill", lambda x: ops.masked_fill(x, MASK, -1.0), [normal(2, 3)]),
    ("tril", lambda x: factories.tril(x, -1), [normal(3, 3)]),
    ("triu", lambda x: factories.triu(x, 1), [normal(2, 3, 4)]),
    (
        "scatter",
        lambda x, s: indexing.scatter(x, 1, [[2, 0], [1, 2]], s),
        [normal(2, 3), normal(2, 2)],
    ),
    (
        "scatter_add",
        lambda x, s: indexing.scatter_add(x, 1, IDS % 3, s),
        [normal(2, 3), normal(2, 3)],
    ),
    # einsum and matmul
    ("einsum", lambda a, b: Einsum("bij,jk->bki")(a, b), [normal(2, 3, 4), normal(4, 2)]),
    ("einsum trace", lambda a, b: Einsum("ii,->")(a, b), [normal(3, 3), normal()]),
    ("matmul", binary.matmul, [normal(2, 3, 4), normal(4, 2)]),
    ("matmul vector", lambda a, b: a @ b, [normal(4), normal(2, 4, 3)]),
    ("to", lambda x: x.to("cpu") * 2, [normal(2, 3)]),
    # fused ops
    ("softmax", Softmax(), [normal(2, 4)]),
    ("log_softmax", LogSoftmax(), [normal(2, 4)]),
    ("relu", ReLU(), [away_from_zero(2, 3)]),
    ("leaky_relu", LeakyReLU(0.1), [away_from_zero(2, 3)]),
    ("gelu", GeLU(), [normal(2, 3)]),
    ("gelu_tanh", GeLU(approximate=True), [normal(2, 3)]),
    ("silu", Swish(), [normal(2, 3)]),
    ("glu", GLU(3), [normal(2, 3)]),
    ("cross_entropy", lambda y: CrossEntropy()(IDS[0], y), [normal(3, 5)]),
    ("mean_squared_error", lambda y, t: MeanSquaredError()(t, y), [normal(2, 3), normal(2, 3)]),
    ("binary_cross_entropy", lambda z: BinaryCrossEntropy()(MASK, z), [normal(2, 3)]),
    ("dense", dense, [normal(2, 3), normal(3, 4), normal(4)]),
    ("layer_norm", layer_norm, [normal(2, 4), normal(4), normal(4)]),
    ("rms_norm", rms_norm, [normal(2, 4), normal(4)]),
    ("embedding", lambda w: embedding(IDS, w), [normal(5, 3)]),
    ("dropout", lambda x: dropout(x, 0.4, rng=np.random.default_rng(1)), [normal(4, 5)]),
    ("attention", lambda qkv: causal_attention(qkv, 2), [normal(2, 3, 12)]),
    ("attention dropout", lambda qkv: causal_attention(qkv, 2, 0.3, seed=5), [normal(1, 4, 6)]),
]


@pytest.mark.parametrize(("name", "fn", "inputs"), OPS, ids=[op[0] for op in OPS])
def test_gradcheck_passes_on_every_op(name, fn, inputs):
    assert gradcheck(fn, *inputs) is True


def test_the_op_list_covers_every_op_module():
    """A new public op in unary/binary/reduce/ops must be added to OPS above."""
    covered = {op[0] for op in OPS}
    # not ops: comparisons have no gradient; the rest build or feed ops
    not_differentiable = {
        "compare",
        "unbroadcast",
        "constant",
        "floated",
        "floats",
        "unary_op",
        "sigmoid_forward",
        "argsort",
    }
    for module in (unary, binary, reduce, ops):
        for name, value in vars(module).items():
            if (
                inspect.isfunction(value)
                and value.__module__ == module.__name__
                and not name.startswith("_")
                and name not in not_differentiable
            ):
                assert name in covered, f"{module.__name__}.{name} is not in the gradcheck list"


def square_with_a_wrong_backward(x: Tensor) -> Tensor:
    """x ** 2 whose backward forgets the factor 2: the kind of bug gradcheck exists for."""
    return Tensor(x.array**2, args=(x,), back_fns=(lambda dout: dout * x.array,), name="square")


def test_gradcheck_fails_on_a_wrong_backward_naming_input_element_and_values():
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    y = np.ones(3)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda a, b: square_with_a_wrong_backward(a) * b, x, y)
    message = str(info.value)
    assert "gradient of input 0 (shape (2, 3))" in message
    assert "at 6 of 6 element(s)" in message
    # the worst element is where |2x - x| * |weight| is largest; its values are named
    analytic, numeric = (float(v) for v in _values(message))
    assert numeric == pytest.approx(2 * analytic, rel=1e-6)
    index = tuple(int(k) for k in message.split("worst at index (")[1].split(")")[0].split(","))
    weights = np.random.default_rng(0).normal(size=(2, 3))
    assert index == np.unravel_index(np.argmax(np.abs(weights * x)), x.shape)
    assert analytic == pytest.approx(weights[index] * x[index], rel=1e-7)
    assert isinstance(info.value, AssertionError)  # reads as a failed assertion in tests


def test_gradcheck_allows_for_the_rounding_of_a_large_output():
    """x ** 8 + x ** 4 over 72 elements sums to about 2e4, which the finite differences can
    only resolve to about 1e-6: an element whose gradient is 1e-3 must not fail at atol 1e-7
    (hypothesis drew this input), while a backward that is wrong there still fails."""
    x = np.full((2, 3, 3, 4), 2.0)
    x[0, 0, 0, 1] = 0.125

    def diamond(t):
        y = t**4
        return y * y + t**4

    assert gradcheck(diamond, x, atol=1e-7, rtol=1e-5)
    with pytest.raises(GradcheckError, match="at 72 of 72"):
        gradcheck(lambda t: square_with_a_wrong_backward(t) * 1e4, x, atol=1e-7, rtol=1e-5)


def _values(message: str):
    analytic = message.split("analytic ")[1].split(",")[0]
    numeric = message.split("numeric ")[1].split(" ")[0]
    return analytic, numeric


def test_gradcheck_names_the_second_input_when_it_is_the_wrong_one():
    with pytest.raises(GradcheckError, match=r"gradient of input 1 \(shape \(3,\)\)"):
        gradcheck(lambda a, b: a * square_with_a_wrong_backward(b), normal(3), normal(3) + 2)


def test_gradcheck_reports_a_missing_gradient_as_zero():
    def detached(x):  # forward depends on x, backward says it does not
        return Tensor(x.array * 3.0, requires_grad=False)

    with pytest.raises(GradcheckError, match=r"analytic 0, numeric 0.377"):  # 3 * weight
        gradcheck(lambda x: detached(x) * 1.0, np.array([1.0]))


def test_gradcheck_wrt_checks_only_the_inputs_named():
    wrong = lambda a, b: a * square_with_a_wrong_backward(b)  # noqa: E731
    assert gradcheck(wrong, normal(3), normal(3), wrt=[0])
    with pytest.raises(ValueError, match="wrt=\\[2\\] names input 2"):
        gradcheck(wrong, normal(3), normal(3), wrt=[2])


def test_integer_inputs_and_constant_tensors_are_not_differentiated():
    labels = np.array([0, 2])
    assert gradcheck(lambda logits, y: CrossEntropy()(y, logits), normal(2, 3), labels)
    constant = Tensor(normal(3), requires_grad=False)
    calls = []

    def fn(a, b):
        calls.append(b.requires_grad)
        return a * b

    gradcheck(fn, normal(3), constant)
    assert calls[0] is False


def test_gradcheck_needs_float64_all_the_way():
    def to_float32(x):
        return Tensor(x.array.astype(np.float32), args=(x,), back_fns=(lambda dout: dout,))

    with pytest.raises(TypeError, match="returned dtype float32"):
        gradcheck(to_float32, normal(3))
    assert gradcheck(lambda x: x * tc.ones(3), normal(3))  # float32 constants promote: fine


def test_gradcheck_never_changes_the_callers_inputs():
    x = Tensor(normal(2, 2))
    before = x.array.copy()
    gradcheck(unary.exp, x)
    np.testing.assert_array_equal(x.array, before)
    assert x.grad is None


def test_gradcheck_with_nothing_to_check_says_so():
    with pytest.raises(ValueError, match="gradcheck: no input to check"):
        gradcheck(unary.exp, tc.randn(3, dtype="float64"))  # requires_grad=False: a constant
    assert gradcheck(unary.exp, tc.randn(3, dtype="float64", requires_grad=True))


def test_an_input_not_in_c_order_is_nudged_and_checked():
    """A transposed (Fortran-ordered) input: the finite differences reach it, so a wrong
    gradient is caught and a right one passes."""
    x = np.random.default_rng(0).normal(size=(3, 4)).T  # (4, 3), not C-contiguous
    assert gradcheck(lambda t: (t * t).sum(), x)
    with pytest.raises(GradcheckError):  # sum(t t) with half its gradient (2 t): caught
        gradcheck(lambda t: (t * t.detach()).sum(), x)
