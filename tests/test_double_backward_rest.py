"""Double backward (``create_graph=True``) of the ops helper rounds left refusing it, against
torch in float64: first and second derivatives of the losses built through
``loss_reduction.reduced`` (each reduction), cross-entropy's options and ``nll_loss``,
``cumsum``/``cumprod``/``prod`` (with zeros), ``sort``/``max``/``min``/``median`` with
indices, average and adaptive pooling, ``F.embedding``, dropout, and the memo of the rebuilt
ops (``second_order_fused``: per thread, forgotten when a walk ends)."""

import threading

import numpy as np
import pytest

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    constant,
    drawn,
    exercise,
    first_and_second,
    lib_of,
    rules_met,
)
from tests.test_double_backward_final import FINAL_SLOPES
from tricycle import (
    backend,
    second_order_function,
    second_order_fused,
    second_order_linear,
    second_order_losses,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:reduction. .mean. divides:UserWarning")  # kl_div


def values_of(pair):
    return pair[0] if isinstance(pair, tuple) else pair.values


# name -> (function of the inputs giving a scalar, input shapes, (low, high) of the values)
CASES = {
    "cumsum": (lambda x: (lib_of(x).cumsum(x, 1) ** 3).sum(), [(3, 4)], (-1, 1)),
    "sort": (
        lambda x: (values_of(lib_of(x).sort(x, 1, descending=True)) ** 3 * x).sum(),
        [(3, 4)],
        (-1, 1),
    ),
    "max_min_median": (
        lambda x: (
            values_of(lib_of(x).max(x, 1)) ** 3
            + values_of(lib_of(x).min(x, 0, keepdim=True)).sum()
            * values_of(lib_of(x).median(x, 1)) ** 2
        ).sum(),
        [(3, 5)],
        (-1, 1),
    ),
    "embedding": (
        lambda w: (F_of(w).embedding(constant(w, [[0, 2], [2, 3]]), w, padding_idx=3) ** 3).sum(),
        [(4, 3)],
        (-1, 1),
    ),
    "avg_pool1d": (lambda x: (F_of(x).avg_pool1d(x, 2) ** 3).sum(), [(2, 2, 5)], (-1, 1)),
    "avg_pool2d": (
        lambda x: (
            (F_of(x).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False) ** 3).sum()
            + (F_of(x).avg_pool2d(x, 2, 1, 1) ** 2 * F_of(x).avg_pool2d(x, 2, 1, 1)).sum()
            + (F_of(x).avg_pool2d(x, 2, divisor_override=3) ** 3).sum()
        ),
        [(1, 2, 5, 4)],
        (-1, 1),
    ),
    "adaptive_pools": (
        lambda x: (
            (F_of(x).adaptive_avg_pool2d(x, (2, 3)) ** 3).sum()
            + (F_of(x).adaptive_max_pool2d(x, 2) ** 3).sum()
        ),
        [(1, 2, 5, 5)],
        (-1, 1),
    ),
    "dropout_eval": (
        lambda x: (F_of(x).dropout(x, 0.5, training=False) ** 3).sum(),
        [(3, 4)],
        (-1, 1),
    ),
}


def attention(q, k, v, **options):
    if not isinstance(q, torch.Tensor):
        return tricycle.nn.functional.scaled_dot_product_attention(q, k, v, **options)
    # torch's math kernel: its fused CPU kernel has no double backward
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        return F_of(q).scaled_dot_product_attention(q, k, v, **options)


MASK = np.array([[True, False, True], [True, True, False], [False, True, True]])
CASES.update(
    {
        "cumprod_prod": (
            lambda x: (
                (lib_of(x).cumprod(x, 1) ** 2).sum()
                + (lib_of(x).prod(x, 1) ** 2).sum()
                + lib_of(x).prod(x * x) * 3
            ),
            [(3, 5)],
            (-1.5, 1.5),
        ),
        "sdpa": (
            lambda q, k, v: (
                (attention(q, k, v) ** 3).sum()
                + (attention(q * k, k, v, is_causal=True) ** 2).sum()
                + (attention(q, k * v, v, attn_mask=constant(q, MASK)) ** 2).sum()
                + (
                    attention(q, k, v, attn_mask=constant(q, MASK * 0.5 - 0.2), scale=0.3) ** 2
                ).sum()
            ),
            [(2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4)],
            (-1, 1),
        ),
    }
)


def probabilities(x):
    return lib_of(x).sigmoid(x)


def reductions(loss):
    """``loss(reduction)`` for each reduction, the "none" one weighted, added up."""
    return lambda *xs: sum(
        (loss(*xs, reduction=r) * (1.0 if r != "none" else 0.5)).sum() * (k + 1)
        for k, r in enumerate(("mean", "sum", "none"))
    )


LABELS = [0, 2, 1, 2]


def class_weights(x):  # (torch differentiates no class weights)
    return constant(x, [0.5, 2.0, 1.5])


LOSSES = {
    "l1_loss": (
        reductions(lambda x, y, reduction: F_of(x).l1_loss(x * x, y, reduction=reduction) ** 2),
        [(4, 3), (4, 3)],
    ),
    "smooth_l1_loss": (
        reductions(
            lambda x, y, reduction: (
                F_of(x).smooth_l1_loss(x * y, y, reduction=reduction, beta=0.5) ** 2
                + F_of(x).smooth_l1_loss(x, y * y, reduction=reduction, beta=0.0)
            )
        ),
        [(4, 3), (4, 3)],
    ),
    "huber_loss": (
        reductions(
            lambda x, y, reduction: (
                F_of(x).huber_loss(x * y, y, reduction=reduction, delta=0.4) ** 2
            )
        ),
        [(4, 3), (4, 3)],
    ),
    "binary_cross_entropy": (
        reductions(
            lambda x, y, reduction: (
                F_of(x).binary_cross_entropy(
                    probabilities(x), probabilities(y), reduction=reduction
                )
                ** 2
                + F_of(x).binary_cross_entropy(
                    probabilities(x * y),
                    probabilities(x),
                    lib_of(x).tensor(np.arange(1.0, 4.0), device=x.device),
                    reduction=reduction,
                )
            )
        ),
        [(4, 3), (4, 3)],
    ),
    "binary_cross_entropy_with_logits": (
        reductions(
            lambda x, y, reduction: (
                F_of(x).binary_cross_entropy_with_logits(
                    x * 2,
                    probabilities(y),
                    reduction=reduction,
                    pos_weight=lib_of(x).tensor([0.5, 2.0, 1.5], device=x.device),
                )
                ** 2
                + F_of(x).binary_cross_entropy_with_logits(
                    x,
                    probabilities(x * y),
                    lib_of(x).tensor(np.arange(1.0, 4.0), device=x.device),
                    reduction=reduction,
                )
            )
        ),
        [(4, 3), (4, 3)],
    ),
    "kl_div": (
        reductions(
            lambda x, y, reduction: (
                F_of(x).kl_div(
                    F_of(x).log_softmax(x, -1), F_of(x).softmax(y, -1), reduction=reduction
                )
                ** 2
                + F_of(x).kl_div(
                    x * y, F_of(x).log_softmax(y, -1), reduction=reduction, log_target=True
                )
            )
        ),
        [(4, 3), (4, 3)],
    ),
    "kl_div_batchmean": (
        lambda x, y: (
            F_of(x).kl_div(
                F_of(x).log_softmax(x * y, -1), F_of(x).softmax(y, -1), reduction="batchmean"
            )
            ** 2
        ),
        [(4, 3), (4, 3)],
    ),
    "nll_loss": (
        reductions(
            lambda x, w, reduction: (
                F_of(x).nll_loss(
                    F_of(x).log_softmax(x * x, 1), constant(x, [0, 2, -100, 1]), reduction=reduction
                )
                ** 2
                + F_of(x).nll_loss(
                    x * w, constant(x, LABELS), class_weights(x), reduction=reduction
                )
            )
        ),
        [(4, 3), (3,)],
    ),
    "cross_entropy": (
        reductions(
            lambda x, w, reduction: (
                F_of(x).cross_entropy(
                    x * x,
                    constant(x, LABELS),
                    class_weights(x),
                    reduction=reduction,
                    label_smoothing=0.2,
                )
                ** 2
                + F_of(x).cross_entropy(x * x, constant(x, [1, -100, 0, 2]), reduction=reduction)
                ** 2
                + F_of(x).cross_entropy(
                    x * w, F_of(x).softmax(x, 1), reduction=reduction, label_smoothing=0.1
                )
                ** 2
            )
        ),
        [(4, 3), (3,)],
    ),
    "cross_entropy_spatial": (
        lambda x: (
            F_of(x).cross_entropy(x * x, constant(x, [[0, 2], [1, 1]]), label_smoothing=0.1) ** 2
            + F_of(x).cross_entropy(x * x, constant(x, [[0, 2], [1, 1]])) ** 2
        ),
        [(2, 3, 2)],
    ),
}
CASES.update({name: (fn, shapes, (-1, 1)) for name, (fn, shapes) in LOSSES.items()})


@pytest.mark.parametrize("name, fn, values, weights", list(drawn(CASES)), ids=sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name, fn, values, weights):
    assert_first_and_second_as_torchs(fn, values, weights)


@pytest.mark.parametrize("zeros", [[(0, 1)], [(0, 1), (0, 3)], [(1, 0), (2, 4)]])
def test_cumprod_and_prod_with_zeros_as_torchs(zeros):
    (values,) = arrays((3, 5), low=-1.5, high=1.5)
    for at in zeros:
        values[at] = 0.0
    assert_first_and_second_as_torchs(
        lambda x: (lib_of(x).cumprod(x, 1) ** 2).sum() + (lib_of(x).prod(x, 1) * x[:, 0]).sum(),
        [values],
        arrays((3, 5), low=-1, high=1, seed=1),
    )


def test_multihead_attention_as_torchs():
    """nn.MultiheadAttention with torch's weights: the input's gradient (create_graph) and
    the gradients of its weighted sum, of the input and of every weight."""
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    ours = tricycle.nn.MultiheadAttention(4, 2, batch_first=True).double()
    tricycle.nn.from_torch(ours, theirs.state_dict())
    x_values, w = arrays((2, 3, 4), (2, 3, 4), low=-1, high=1)
    mask = np.triu(np.ones((3, 3), bool), 1)
    results = []
    for lib, module in ((tricycle, ours), (torch, theirs)):
        x = lib.tensor(x_values, requires_grad=True)
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            y = module(x, x * 2, x, attn_mask=lib.tensor(mask), need_weights=False)[0]
        (g,) = lib.autograd.grad((y**3).sum(), x, create_graph=True)
        (g * lib.tensor(w)).sum().backward()
        grads = {n: np.asarray(p.grad) for n, p in module.named_parameters()}
        if lib is tricycle:  # torch's layout: q, k, v stacked, weights (out, in)
            qkv = [f"{n}_projection" for n in "qkv"]
            grads = {
                "in_proj_weight": np.concatenate([grads[f"{n}.weights"].T for n in qkv]),
                "in_proj_bias": np.concatenate([grads[f"{n}.bias"] for n in qkv]),
                "out_proj.weight": grads["out_projection.weights"].T,
                "out_proj.bias": grads["out_projection.bias"],
            }
        results.append([g.detach().numpy(), x.grad.numpy()] + [grads[n] for n in sorted(grads)])
    assert len(results[0]) == len(results[1]) == 6
    for a, b in zip(*results):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


def test_dropout_second_derivative_is_the_mask_of_the_first():
    """Dropout's mask cannot be drawn as torch's: its first and second derivatives through
    x^3 are 3 x^2 m and 6 x m g with the mask m it drew (0 or 1 / (1 - p))."""
    x = tricycle.tensor(arrays((4, 5), low=-1, high=1)[0], requires_grad=True)
    w = arrays((4, 5), seed=1)[0]
    tricycle.manual_seed(0)
    y = tricycle.nn.functional.dropout(x, 0.25)
    mask = y.detach().numpy() / x.detach().numpy()
    (g,) = tricycle.autograd.grad((y**3).sum(), x, create_graph=True)
    (g * tricycle.tensor(w)).sum().backward()
    a = x.detach().numpy()
    assert set(np.round(np.unique(mask), 12)) <= {0.0, round(1 / 0.75, 12)}
    np.testing.assert_allclose(g.detach().numpy(), 3 * (a * mask) ** 2 * mask, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 6 * a * mask**3 * w, rtol=1e-12)


def test_every_rule_here_is_exercised(monkeypatch):
    """Each rule of ``second_order_linear`` and ``second_order_losses`` (and each loss's
    slope), and the rebuilt sdpa, prod and cumprod, is met by one of the cases above."""
    used = rules_met(monkeypatch, second_order_losses.SLOPES)
    exercise(CASES)
    tricycle.manual_seed(0)
    x = tricycle.ones(3, requires_grad=True)
    tricycle.autograd.grad(
        (tricycle.nn.functional.dropout(x, 0.5) ** 2).sum(), x, create_graph=True
    )

    def fn(x):
        Cube, Exp, Scaled = functions(tricycle)
        return (Cube.apply(x) + Exp.apply(x) + Scaled.apply(x, x, 2)).sum()

    first_and_second(tricycle, fn, arrays((3,)), arrays((3,)))
    keys = dict(second_order_linear.KEYS, **second_order_losses.KEYS, **second_order_function.KEYS)
    last = {"hinge_embedding", "margin_ranking", "soft_margin"}  # test_double_backward_last's
    last |= set(FINAL_SLOPES)  # and test_double_backward_final's, with its Functions' pieces
    keys.pop("function_piece")
    keys.update({name: name for name in second_order_losses.SLOPES if name not in last})
    keys.update({name: second_order_fused.KEYS[name] for name in ("sdpa", "prod", "cumprod")})
    assert len(keys) == 6 + 1 + 1 + 7 + 3
    assert not {name for name, key in keys.items() if key not in used}


def layer_norm_walk(seen: list):
    x = tricycle.tensor(arrays((3, 4), low=-1, high=1)[0], requires_grad=True)
    w = tricycle.tensor(arrays((4,))[0], requires_grad=True)
    y = (tricycle.nn.functional.layer_norm(x, (4,), w) ** 3).sum()
    gx, gw = tricycle.autograd.grad(y, (x, w), create_graph=True)
    seen.append(getattr(second_order_fused._last, "entry", None))
    (gx.sum() + gw.sum()).backward()
    return gx.detach().numpy(), x.grad.numpy()


def test_the_rebuilt_ops_memo_is_per_thread_and_forgotten_after_the_walk():
    """The gradients of a rebuilt op's inputs are kept only between its inputs' rules: when
    the walk ends the memo (and the rebuilt graph it holds) is gone, and another thread's
    walk has its own."""
    seen = []
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(layer_norm_walk(seen))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    mine = layer_norm_walk(seen)
    assert seen == [None] * 5
    assert getattr(second_order_fused._last, "entry", None) is None
    assert len(results) == 4
    for result in results:
        for a, b in zip(result, mine):
            np.testing.assert_array_equal(a, b)


def functions(lib):
    """Two Functions written with the library's ops: x^3 saving its input, exp saving its
    output, and one two-input product whose gradient broadcasts."""

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return dy * 3 * x**2

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensors
            return dy * y

    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, s, power):
            ctx.save_for_backward(x, s)
            ctx.power = power
            return x * s**power

        @staticmethod
        def backward(ctx, dy):
            x, s = ctx.saved_tensors
            ds = dy * x * ctx.power * s ** (ctx.power - 1)  # (3, 4): s (4,) broadcast to it
            return dy * s**ctx.power, ds, None

    return Cube, Exp, Scaled


def test_custom_functions_written_with_ops_are_differentiable_as_torchs():
    def fn(x, s):
        Cube, Exp, Scaled = functions(lib_of(x))
        return (Cube.apply(x) * Exp.apply(x * s)).sum() + (Scaled.apply(x, s, 3) ** 2).sum()

    assert_first_and_second_as_torchs(
        fn, arrays((3, 4), (4,), low=-1, high=1), arrays((3, 4), (4,), low=-1, high=1, seed=1)
    )


def test_a_function_whose_backward_returns_arrays_is_differentiable_once_as_torchs():
    """torch's @once_differentiable: the first derivative comes (create_graph=True), and the
    second raises when it is asked for."""
    from torch.autograd.function import once_differentiable

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @once_differentiable
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return torch.tensor(dy.numpy() * 2 * x.numpy())

    class SquareByArrays(tricycle.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensors
            return dy.numpy() * 2 * x.numpy()  # raw arrays: no graph

    (values,) = arrays((3,))
    firsts = []
    for lib, square in ((tricycle, SquareByArrays), (torch, Square)):
        x = lib.tensor(values, requires_grad=True)
        (g,) = lib.autograd.grad((square.apply(x) * x).sum(), x, create_graph=True)
        firsts.append(g.detach().numpy())
        with pytest.raises(RuntimeError, match="differentiate twice"):
            g.sum().backward()
    np.testing.assert_allclose(firsts[0], firsts[1], rtol=1e-12)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """Every case above with cupy arrays (the rules compute with the arrays' module)."""
    assert_on_a_gpu_as_on_the_host(drawn(CASES))
