"""Inputs at the library's boundary: constants meeting tensors (one dtype rule), optimiser
settings checked when set, integer tensors given to fused ops, 0-d tensors, and the one
gradient-norm rule."""

import math

import numpy as np
import pytest

from tests.helpers import check_grads
from tricycle import ops
from tricycle.activation import GeLU
from tricycle.backends.cuda.optimiser import adam_state
from tricycle.binary import constant
from tricycle.functions import LogSoftmax, Softmax
from tricycle.layers import Dense, LayerNorm, RMSNorm
from tricycle.loss import BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from tricycle.optimisers import SGD, Adam, AdamW, global_norm, grad_norm
from tricycle.precision import GradScaler
from tricycle.tensor import Tensor, to_tensor

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


# ====================================================================== constants
@pytest.mark.parametrize(
    "value, dtype",
    [
        (2, F32),
        (2.5, F32),
        (True, F32),
        (np.float64(2.0), F32),  # numpy scalars and 0-d arrays count as numbers, as in torch
        (np.array(2.0), F32),
        ([1, 2, 3], F32),  # data with no dtype of its own takes the tensor's
        ([[0.5, 1.5, 2.5]], F32),
        (np.ones(3, dtype=np.float64), F64),  # an array keeps its dtype: numpy's promotion
        (np.ones(3, dtype=np.int64), F64),
        (np.ones(3, dtype=np.float16), F32),
    ],
)
def test_a_constant_meets_a_float32_tensor_as_numpy_says(value, dtype):
    x = to_tensor([1.0, 2.0, 3.0])
    assert (x + value).dtype == dtype
    assert (value * x).dtype == dtype
    assert ops.where(x.array > 1, x, value).dtype == dtype


def test_a_constant_meets_an_integer_tensor_as_torch_says():
    ids = to_tensor([1, 2, 3], dtype=np.int32)
    assert (ids + 1).dtype == np.int32
    assert (ids + [1, 2, 3]).dtype == np.int32
    assert (ids * 2.5).dtype == F32  # a float with integers: torch's default float
    assert (2.5 - ids).dtype == (ids / 2).dtype == (ids / ids).dtype == F32
    assert constant([0.5, 1.5, 2.5], ids).dtype == F32


def test_constants_need_no_gradient_and_comparisons_take_any():
    x = to_tensor([1.0, 2.0, 3.0])
    c = constant([1, 2, 3], x)
    assert not c.requires_grad and c.dtype == F32
    assert constant(x, x) is x
    np.testing.assert_array_equal((x < [2, 2, 2]).array, [True, False, False])
    np.testing.assert_array_equal((x @ [1, 1, 1]).array, 6.0)


def test_losses_take_lists_and_arrays_as_targets():
    y_pred = to_tensor([[0.5, 1.5], [2.0, -1.0]])
    assert MeanSquaredError()([[0.0, 1.0], [2.0, 0.0]], y_pred).dtype == F32
    assert BinaryCrossEntropy()(np.array([[1, 0], [0, 1]]), y_pred).dtype == F32
    loss = CrossEntropy()([1, 0], y_pred)  # integer labels stay integer class ids
    assert loss.dtype == F32 and np.isfinite(loss.item())


# ====================================================================== optimiser settings
OPTIMISERS = [
    pytest.param(lambda **kw: SGD(**{"learning_rate": 0.1, **kw}), id="SGD"),
    pytest.param(Adam, id="Adam"),
    pytest.param(AdamW, id="AdamW"),
]
BAD = [
    ("learning_rate", math.nan, ValueError),
    ("learning_rate", math.inf, ValueError),
    ("learning_rate", -1e-3, ValueError),
    ("learning_rate", "3e-4", TypeError),
    ("weight_decay", -0.1, ValueError),
    ("weight_decay", math.nan, ValueError),
]


@pytest.mark.parametrize("make", OPTIMISERS)
@pytest.mark.parametrize("setting, value, error", BAD)
def test_bad_settings_raise_when_made_and_when_assigned(make, setting, value, error):
    optimiser = make()
    name = type(optimiser).__name__
    message = rf"{name}: {setting} must be .*got {value!r}"
    with pytest.raises(error, match=message):
        make(**{setting: value})
    before = getattr(optimiser, setting)
    with pytest.raises(error, match=message):
        setattr(optimiser, setting, value)
    assert getattr(optimiser, setting) == before


@pytest.mark.parametrize("make", [Adam, AdamW])
@pytest.mark.parametrize(
    "betas, error",
    [((1.0, 0.999), ValueError), ((0.9, -0.1), ValueError), ((0.9,), ValueError),
     ((math.nan, 0.9), ValueError), (0.9, TypeError), (("0.9", 0.9), TypeError)],
)  # fmt: skip
def test_betas_must_lie_in_zero_one(make, betas, error):
    with pytest.raises(error, match=r"betas must be two numbers in \[0, 1\)"):
        make(betas=betas)
    optimiser = make()
    with pytest.raises(error, match=f"{type(optimiser).__name__}: betas"):
        optimiser.betas = betas
    assert optimiser.betas == (0.9, 0.999)


def test_good_settings_are_kept_and_schedules_may_set_the_learning_rate():
    optimiser = AdamW(learning_rate=np.float32(1e-3), betas=[0.8, 0.95], weight_decay=0)
    assert optimiser.betas == (0.8, 0.95)
    optimiser.learning_rate = 0.0
    optimiser.learning_rate = 5e-4
    assert optimiser.learning_rate == 5e-4
    with pytest.raises(ValueError, match="StochasticGradientDescent: momentum"):
        SGD(0.1, momentum=-0.5)


def test_adam_state_is_made_once_and_counted_per_parameter():
    state, w = {}, np.ones(3, dtype=np.float32)
    assert [adam_state(np, w, state) for _ in range(3)] == [1, 2, 3]
    assert state["exp_avg"].shape == state["exp_avg_sq"].shape == w.shape
    layer, optimiser = Dense(3, 2), AdamW()
    for _ in range(2):
        layer(to_tensor(np.ones((4, 3)))).sum().backward()
        layer.update(optimiser)
    assert {s["step"] for s in optimiser.state.values()} == {2}


# ====================================================================== integer inputs
INTEGER_OPS = [
    ("Softmax", lambda x: Softmax()(x)),
    ("LogSoftmax", lambda x: LogSoftmax()(x)),
    ("GeLU", lambda x: GeLU()(x)),
    ("LayerNorm", lambda x: LayerNorm(4)(x)),
    ("RMSNorm", lambda x: RMSNorm(4)(x)),
    ("CrossEntropy", lambda x: CrossEntropy()(to_tensor([1, 2], dtype=int), x)),
]


@pytest.mark.parametrize("op, call", INTEGER_OPS, ids=[op for op, _ in INTEGER_OPS])
def test_fused_ops_name_themselves_for_integer_input(op, call):
    x = Tensor(np.arange(8).reshape(2, 4))
    with pytest.raises(TypeError, match=rf"{op}.*floating tensor, got dtype int64"):
        call(x)


# ====================================================================== 0-d tensors
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_of_a_0d_tensor_has_a_gradient(approximate):
    check_grads(GeLU(approximate), 0.7)
    x = to_tensor(0.5, dtype=np.float64)
    GeLU(approximate)(x).backward()
    assert x.grad.shape == ()


# ====================================================================== gradient norm
def test_grad_norm_is_one_rule_on_every_path():
    """Each gradient's squares add up in float32 (float64 for float64 gradients); grad_norm,
    global_norm and the loss scaler's unscale agree."""
    rng = np.random.default_rng(0)
    grads = [rng.normal(size=shape).astype(np.float32) for shape in [(3, 4), (5,), ()]]
    params = [Tensor(np.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = Tensor(g, requires_grad=False)
    expected = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
    assert grad_norm(params) == pytest.approx(expected, rel=1e-6)
    on_device = grad_norm(params, sync=False)
    assert on_device.shape == () and on_device.dtype == F32
    assert global_norm([g.astype(np.float64) for g in grads]).dtype == F64
    assert float(global_norm([])) == 0.0
    scaled = [g * 4 for g in grads]
    _, norm = GradScaler(init_scale=4.0).unscale(scaled)
    assert float(norm) == pytest.approx(expected, rel=1e-6)


# ====================================================================== misuse, named
@pytest.mark.parametrize(
    "data, dtype, fragment",
    [
        ([300], np.int8, "the value 300 does not fit int8"),
        ([-1], np.uint8, "the value -1 does not fit uint8"),
        (np.array([300]), np.int8, "the value 300 does not fit int8"),
        ([np.nan], int, "NaN or infinite values cannot become int64"),
    ],
)
def test_a_cast_to_integers_refuses_values_the_dtype_cannot_hold(data, dtype, fragment):
    """numpy's cast would wrap 300 to 44 in int8 and NaN to the smallest int64."""
    with pytest.raises(ValueError, match=fragment):
        to_tensor(data, dtype=dtype)
    assert to_tensor(np.array([2.7, -3.0]), dtype=int).array.tolist() == [2, -3]  # truncates


@pytest.mark.parametrize("other", ["x", None, object()])
def test_an_operator_with_a_non_number_names_the_op(other):
    x = to_tensor(np.ones((2, 3)))
    for op, apply in (("add", lambda: x + other), ("mul", lambda: other * x),
                      ("<", lambda: x < other), ("matmul", lambda: x @ other)):  # fmt: skip
        with pytest.raises(TypeError, match=rf"^{op}: a tensor of shape \(2, 3\) met "):
            apply()


def test_only_a_one_element_tensor_is_a_number():
    x = to_tensor(np.ones((2, 3)))
    for read in (x.item, lambda: float(x), lambda: int(x)):
        with pytest.raises(ValueError, match=r"6 elements \(shape \(2, 3\)\) is not a number"):
            read()
    one = to_tensor([[2.5]])
    assert (one.item(), float(one), int(one)) == (2.5, 2.5, 2)


@pytest.mark.parametrize("start, end, shape", [(2, -1, (2, 3)), (0, 5, (2, 3, 4)),
                                               (-5, -1, (2, 3, 4)), (1, -1, (3,))])  # fmt: skip
def test_flatten_refuses_axes_out_of_range(start, end, shape):
    """A modulo would wrap axis 2 of a 2-D input to axis 0 and flatten everything."""
    from tricycle.nn import Flatten

    with pytest.raises(ValueError, match=rf"cannot merge axes {start}\.\.{end} of a tensor"):
        Flatten(start, end)(to_tensor(np.ones(shape)))
    assert Flatten(-2)(to_tensor(np.ones((2, 3, 4)))).shape == (2, 12)


def test_masked_fill_names_a_mask_that_does_not_broadcast():
    x = to_tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"masked_fill: the mask's shape \(2,\) does not"):
        ops.masked_fill(x, np.array([True, False]), 0.0)
    out = ops.masked_fill(x, [[True, False, True]], 0.0)  # a list of booleans is a mask
    assert out.array.tolist() == [[0.0, 1.0, 0.0]] * 2


def test_gpt_names_ragged_ids_and_caches_that_do_not_fit():
    from tricycle.configs import DebugConfig
    from tricycle.models import GPT

    model = GPT(DebugConfig(vocab_size=64))
    with pytest.raises(ValueError, match="the rows given differ in length"):
        model([[1, 2, 3], [1]])
    with pytest.raises(ValueError, match="the prompt must be a .batch, tokens. array"):
        model.generate([[1, 2, 3], [1]], 2)
    ids = np.array([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"expected 2 KV caches .* got 1"):
        model(ids, model.new_caches(2)[:1])
    with pytest.raises(ValueError, match=r"hold batch 1, .* need batch 2"):
        model(ids, model.new_caches(1))
    assert model(ids, model.new_caches(2)).shape == (2, 2, 64)


def test_the_accelerators_step_without_an_optimiser_says_so():
    from tricycle.apps.accelerator import Accelerator

    accelerator = Accelerator(device="cpu")
    accelerator.prepare(Dense(2, 2))
    with pytest.raises(RuntimeError, match="no optimiser was prepared"):
        accelerator.optimiser_step()
