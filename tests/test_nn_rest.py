"""torch.nn's, torch.nn.functional's, torch.nn.init's and torch.func's remaining names on
tricycle (``tricycle.nn.modules_rest``, ``functional_rest``, ``utils.memory_format``,
``nn.init``'s deprecated names, ``tricycle.func_more``, the recurrent base classes and
``autograd.gradgradcheck``): values and gradients against torch in float64, the others
against finite differences, torch's warnings and errors."""

import warnings

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads
from tricycle import autograd, func
from tricycle.nn import init

torch = pytest.importorskip("torch")
NEEDS_LINEAR_CROSS_ENTROPY = pytest.mark.skipif(
    not hasattr(torch.nn, "LinearCrossEntropyLoss"),
    reason="torch before 2.13 has no linear cross entropy",
)


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def pair(*arrays):
    """Each array as a torch and a tricycle leaf that require grad (float64)."""
    ours = [tc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.detach().numpy(), rtol=tol,
                               atol=tol)  # fmt: skip


# ---------------------------------------------------------------------- modules
def test_container_holds_its_modules_and_warns_as_torch():
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        box = nn.Container(first=nn.Linear(2, 3), second=nn.ReLU())
    assert [n for n, _ in box.named_parameters()] == ["first.weights", "first.bias"]
    assert isinstance(box.second, nn.ReLU)


def test_nll_loss_2d_is_nll_loss_with_torch_positional_arguments():
    logp = np.log(np.random.default_rng(1).dirichlet(np.ones(4), size=(2, 3, 5)))  # (N, H, W, C)
    logp = logp.transpose(0, 3, 1, 2).copy()  # (N, C, H, W)
    target = np.random.default_rng(2).integers(0, 4, size=(2, 3, 5))
    target[0, 0, 0] = 1
    weight = np.array([0.5, 1.0, 2.0, 1.5])
    for args in ((), (weight,), (weight, None, 1), (None, None, -100, None, "sum")):
        with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
            ours = nn.NLLLoss2d(*[tc.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            theirs = torch.nn.NLLLoss2d(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                          for a in args])  # fmt: skip
        assert isinstance(ours, nn.NLLLoss)
        (x,), (tx,) = pair(logp)
        out, expected = ours(x, tc.tensor(target)), theirs(tx, torch.tensor(target))
        close(out, expected)
        out.backward()
        expected.backward()
        close(x.grad, tx.grad)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8])
def test_cross_map_lrn2d_forward_as_torch(size):
    x = normal(2, 7, 3, 2, seed=size)
    ours = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)(tc.tensor(x))
    close(ours, torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)(torch.tensor(x)))
    default = nn.CrossMapLRN2d(size)(tc.tensor(x))
    close(default, torch.nn.CrossMapLRN2d(size)(torch.tensor(x)))


def test_cross_map_lrn2d_gradient_is_its_forward_s():
    """torch's hand-written backward is not the derivative of its forward (torch's own
    gradcheck fails it): tricycle's is, checked against finite differences."""
    lrn = nn.CrossMapLRN2d(3, alpha=0.3, beta=0.75, k=2.0)
    check_grads(lambda x: lrn(x), normal(2, 5, 2, 2))
    check_grads(lambda x: nn.CrossMapLRN2d(4, 0.5, 0.5, 1.0)(x), normal(1, 6, 2, 1, seed=3))


def test_cross_map_lrn2d_refuses_what_torch_refuses():
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        nn.CrossMapLRN2d(3)(tc.randn(2, 5, 3))
    with pytest.raises((TypeError, ValueError), match="size"):
        nn.CrossMapLRN2d(0)


@NEEDS_LINEAR_CROSS_ENTROPY
@pytest.mark.parametrize("out_features", [(), (2,), (2, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_cross_entropy_loss_as_torch(out_features, bias):
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(5, 4, out_features=out_features, bias=bias,
                                             label_smoothing=0.1, dtype=torch.float64)  # fmt: skip
    ours = nn.LinearCrossEntropyLoss(5, 4, out_features=out_features, bias=bias,
                                     label_smoothing=0.1)  # fmt: skip
    ours.linear.weights.array = theirs.linear.weight.detach().numpy().T.copy()
    if bias:
        ours.linear.bias.array = theirs.linear.bias.detach().numpy().copy()
    target = np.random.default_rng(0).integers(0, 4, size=(3, *out_features))
    (x,), (tx,) = pair(normal(3, 5))
    out, expected = ours(x, tc.tensor(target)), theirs(tx, torch.tensor(target))
    close(out, expected)
    out.backward()
    expected.backward()
    close(x.grad, tx.grad)
    close(ours.linear.weights.grad, theirs.linear.weight.grad.T)


@NEEDS_LINEAR_CROSS_ENTROPY
def test_linear_cross_entropy_functional_as_torch_with_probabilities_and_weights():
    rng = np.random.default_rng(4)
    (x, w, b), (tx, tw, tb) = pair(normal(6, 5), normal(3, 5, seed=1), normal(3, seed=2))
    probs = rng.dirichlet(np.ones(3), size=6)
    weight = np.array([1.0, 2.0, 0.5])
    out = F.linear_cross_entropy(x, w, tc.tensor(probs), linear_bias=b, weight=tc.tensor(weight))
    expected = torch.nn.functional.linear_cross_entropy(
        tx, tw, torch.tensor(probs), linear_bias=tb, weight=torch.tensor(weight)
    )
    close(out, expected)
    out.backward()
    expected.backward()
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        close(ours.grad, theirs.grad)
    labels = rng.integers(0, 3, size=6)
    labels[1] = 2
    kwargs = dict(reduction="none", ignore_index=2)
    close(F.linear_cross_entropy(x[0], w, tc.tensor(labels[0]), reduction="sum"),
          torch.nn.functional.linear_cross_entropy(tx[0], tw, torch.tensor(labels[0]),
                                                   reduction="sum"))  # fmt: skip
    expected = torch.nn.functional.linear_cross_entropy(tx, tw, torch.tensor(labels), **kwargs)
    close(F.linear_cross_entropy(x, w, tc.tensor(labels), **kwargs), expected)


def test_linear_cross_entropy_refuses_as_torch():
    x, w, t = tc.randn(2, 5), tc.randn(3, 5), tc.tensor([0, 1])
    with pytest.raises(RuntimeError, match="dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(tc.randn(2, 2, 5), w, t)
    with pytest.raises(RuntimeError, match="last dimensions \\(in_features\\), got 5 and 4"):
        F.linear_cross_entropy(x, tc.randn(3, 4), t)
    with pytest.raises(RuntimeError, match="linear_bias shape \\(3,\\)"):
        F.linear_cross_entropy(x, w, t, linear_bias=tc.randn(4))
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(tc.randn(5), tc.randn(3, 2, 5), tc.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified"):
        F.linear_cross_entropy(x, w, tc.randn(2, 3), ignore_index=1)
    with pytest.raises(RuntimeError, match="expected weight shape to be \\(3,\\)"):
        nn.LinearCrossEntropyLoss(5, 3, weight=tc.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing to be in range"):
        nn.LinearCrossEntropyLoss(5, 3, label_smoothing=1.5)


@NEEDS_LINEAR_CROSS_ENTROPY
def test_linear_cross_entropy_options_are_checked_as_torch_and_change_no_number():
    for bad in (dict(acc_policy="fast"), dict(chunking_method="rows"),
                dict(chunking_method="aspect_ratio:0"), dict(batch_chunk_size=0)):  # fmt: skip
        with pytest.raises(ValueError) as ours:
            nn.LinearCrossEntropyOptions(**bad)
        with pytest.raises(ValueError) as theirs:
            torch.nn.LinearCrossEntropyOptions(**bad)
        assert str(ours.value) == str(theirs.value)
    options = nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method="aspect_ratio:2")
    x, w, t = tc.tensor(normal(5, 4)), tc.tensor(normal(3, 4, seed=1)), tc.tensor([0, 2, 1, 1, 0])
    np.testing.assert_array_equal(
        F.linear_cross_entropy(x, w, t, options=options).numpy(),
        F.linear_cross_entropy(x, w, t).numpy(),
    )


def test_recurrent_layers_are_instances_of_torch_base_classes():
    for layer in (nn.RNN(3, 4), nn.GRU(3, 4), nn.LSTM(3, 4, proj_size=2)):
        assert isinstance(layer, nn.RNNBase) and not isinstance(layer, nn.RNNCellBase)
    for cell in (nn.RNNCell(3, 4), nn.GRUCell(3, 4), nn.LSTMCell(3, 4)):
        assert isinstance(cell, nn.RNNCellBase) and not isinstance(cell, nn.RNNBase)
    assert issubclass(nn.LSTM, nn.RNNBase) and issubclass(nn.GRUCell, nn.RNNCellBase)
    assert issubclass(torch.nn.LSTM, torch.nn.RNNBase)  # what the names mean in torch


# ---------------------------------------------------------------------- functional
def test_conv_tbc_as_torch():
    (x, w, b), (tx, tw, tb) = pair(normal(7, 2, 3), normal(3, 3, 4, seed=1), normal(4, seed=2))
    for pad in (0, 1, 2):
        for t in (x, w, b, tx, tw, tb):
            t.grad = None
        out, expected = F.conv_tbc(x, w, b, pad), torch.nn.functional.conv_tbc(tx, tw, tb, pad)
        assert out.shape == tuple(expected.shape)
        close(out, expected)
        seed = normal(*out.shape, seed=pad)
        (out * tc.tensor(seed)).sum().backward()
        (expected * torch.tensor(seed)).sum().backward()
        for ours, theirs in ((x, tx), (w, tw), (b, tb)):
            close(ours.grad, theirs.grad)
    with pytest.raises(RuntimeError, match="conv_tbc: expected input \\(T, B, C_in\\)"):
        F.conv_tbc(x, tc.randn(3, 2, 4), b)


def test_rrelu_in_place_writes_its_input():
    x = tc.tensor([-2.0, -1.0, 0.5, 3.0])
    tx = torch.tensor([-2.0, -1.0, 0.5, 3.0])
    assert F.rrelu_(x) is x
    torch.nn.functional.rrelu_(tx)
    close(x, tx, 1e-7)
    tc.manual_seed(0)
    x = tc.tensor(-np.ones(1000))
    F.rrelu_(x, 0.1, 0.3, training=True)
    slopes = -x.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01


def test_native_channel_shuffle_is_channel_shuffle():
    x = normal(2, 6, 3, 2)
    close(F.native_channel_shuffle(tc.tensor(x), 3),
          torch.nn.functional.native_channel_shuffle(torch.tensor(x), 3))  # fmt: skip


def attention_arguments(lib, mha, separate=False):
    """torch's MultiheadAttention's tensors as ``lib``'s leaves, in the functional's order."""
    names = ["q_proj_weight", "k_proj_weight", "v_proj_weight"] if separate else ["in_proj_weight"]
    names += ["in_proj_bias", "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"]
    params = dict(mha.named_parameters())
    leaves = {}
    for name in names:
        p = params.get(name)
        leaves[name] = None if p is None else lib.tensor(p.detach().numpy(), requires_grad=True)
    return leaves


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(add_bias_kv=True, masks=True),
        dict(add_zero_attn=True, average_attn_weights=False),
        dict(kdim=3, vdim=5, masks=True),
        dict(bias=False, causal=True),
        dict(unbatched=True, add_bias_kv=True),
    ],
)
def test_multi_head_attention_forward_as_torch(options):
    options = dict(options)
    masks, causal = options.pop("masks", False), options.pop("causal", False)
    unbatched = options.pop("unbatched", False)
    average = options.pop("average_attn_weights", True)
    E, H, L, S, N = 4, 2, 3, 5, 2
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **options)
    separate = not mha._qkv_same_embed_dim
    kdim, vdim = options.get("kdim", E), options.get("vdim", E)
    batch = () if unbatched else (N,)
    arrays = normal(L, *batch, E), normal(S, *batch, kdim, seed=1), normal(S, *batch, vdim, seed=2)
    extra = {}
    if masks:
        padding = np.random.default_rng(3).random((N, S)) < 0.3
        padding[:, 0] = False
        extra["key_padding_mask"] = padding
        extra["attn_mask"] = normal(L, S, seed=4)
    if causal:
        extra["attn_mask"] = np.triu(np.full((L, S), -np.inf), 1)
    results, leaves = [], []
    for lib, functional in ((tc, F), (torch, torch.nn.functional)):
        p = attention_arguments(lib, mha, separate)
        q, k, v = (lib.tensor(a) for a in arrays)
        out, weights = functional.multi_head_attention_forward(
            q, k, v, E, H, p.get("in_proj_weight"), p["in_proj_bias"], p["bias_k"],
            p["bias_v"], mha.add_zero_attn, 0.0, p["out_proj.weight"], p["out_proj.bias"],
            training=False, use_separate_proj_weight=separate,
            q_proj_weight=p.get("q_proj_weight"), k_proj_weight=p.get("k_proj_weight"),
            v_proj_weight=p.get("v_proj_weight"), average_attn_weights=average,
            is_causal=causal, **{key: lib.tensor(a) for key, a in extra.items()},
        )  # fmt: skip
        (out * lib.tensor(normal(*out.shape, seed=5))).sum().backward()
        results.append((out, weights))
        leaves.append(p)
    (out, weights), (expected, expected_weights) = results
    close(out, expected)
    close(weights, expected_weights)
    for name, theirs in leaves[1].items():
        if theirs is not None:
            close(leaves[0][name].grad, theirs.grad)


def test_multi_head_attention_forward_refuses_as_torch():
    mha = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64)
    p = attention_arguments(tc, mha)
    q = tc.tensor(normal(3, 2, 4))
    args = (p["in_proj_weight"], p["in_proj_bias"], None, None, False, 0.0,
            p["out_proj.weight"], p["out_proj.bias"])  # fmt: skip
    with pytest.raises(AssertionError, match="expecting embedding dimension of 8, but got 4"):
        F.multi_head_attention_forward(q, q, q, 8, 2, *args)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(q, q, q, 4, 2, *args, is_causal=True)
    with pytest.raises(NotImplementedError, match="static_k"):
        F.multi_head_attention_forward(q, q, q, 4, 2, *args, static_k=q)


def test_multi_head_attention_forward_draws_nothing_without_dropout():
    mha = torch.nn.MultiheadAttention(6, 3, dtype=torch.float64)
    p = attention_arguments(tc, mha)
    tc.manual_seed(1)
    before = tc.rand(3).numpy()
    tc.manual_seed(1)
    q = tc.tensor(normal(2, 1, 6))
    args = (p["in_proj_weight"], p["in_proj_bias"], None, None, False, 0.0,
            p["out_proj.weight"], p["out_proj.bias"])  # fmt: skip
    F.multi_head_attention_forward(q, q, q, 6, 3, *args)
    np.testing.assert_array_equal(tc.rand(3).numpy(), before)


# ---------------------------------------------------------------------- init and utils
@pytest.mark.parametrize(
    "name, args",
    [("uniform", (-0.5, 0.5)), ("normal", (0.0, 2.0)), ("constant", (0.3,)), ("eye", ()),
     ("dirac", ()), ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
     ("kaiming_normal", ()), ("orthogonal", ()), ("sparse", (0.5,))],
)  # fmt: skip
def test_deprecated_init_names_warn_and_fill_as_the_new_ones(name, args):
    shape = (3, 2, 3) if name == "dirac" else (4, 6)
    old, new = tc.empty(*shape), tc.empty(*shape)
    tc.manual_seed(5)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of "
                                           f"`nn.init.{name}_`"):  # fmt: skip
        assert getattr(init, name)(old, *args) is old
    tc.manual_seed(5)
    getattr(init, name + "_")(new, *args)
    np.testing.assert_array_equal(old.numpy(), new.numpy())
    assert getattr(init, name).__name__ == name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert hasattr(torch.nn.init, name)


def test_convert_weight_memory_format_returns_the_module_unchanged():
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU())
    x = tc.randn(1, 2, 5, 5)
    before = model(x).numpy()
    for convert in (nn.utils.convert_conv2d_weight_memory_format,
                    nn.utils.convert_conv3d_weight_memory_format):  # fmt: skip
        assert convert(model, getattr(tc, "channels_last", None)) is model
    np.testing.assert_array_equal(model(x).numpy(), before)
    with pytest.raises(TypeError, match="expected a module"):
        nn.utils.convert_conv2d_weight_memory_format(x, None)


# ---------------------------------------------------------------------- func and autograd
def test_jvp_and_linearize_as_torch():
    def f(x, y):
        return x.sin() * y, (x * y).sum()

    arrays = [normal(3, 2, seed=s) for s in range(4)]
    ours = [tc.tensor(a) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    out, product = func.jvp(f, tuple(ours[:2]), tuple(ours[2:]))
    expected, expected_product = torch.func.jvp(f, tuple(theirs[:2]), tuple(theirs[2:]))
    for a, b in zip(out + product, expected + expected_product):
        close(a, b)

    def g(x):
        return x.exp() * x.sum(), x.cos()

    out, product, aux = func.jvp(g, (ours[0],), (ours[1],), has_aux=True)
    expected, expected_product, expected_aux = torch.func.jvp(
        g, (theirs[0],), (theirs[1],), has_aux=True
    )
    for a, b in ((out, expected), (product, expected_product), (aux, expected_aux)):
        close(a, b)
    out, jvp_fn = func.linearize(lambda x: x.tanh() * 2, ours[0])
    expected, expected_fn = torch.func.linearize(lambda x: x.tanh() * 2, theirs[0])
    close(out, expected)
    for t, tt in zip(ours[1:], theirs[1:]):
        close(jvp_fn(t), expected_fn(tt))


def test_jvp_refuses_as_torch():
    x = tc.randn(3)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        func.jvp(lambda x: x, x, (x,))
    with pytest.raises(RuntimeError, match="same python structure"):
        func.jvp(lambda x: x, (x,), (x, x))
    with pytest.raises(RuntimeError, match="tangent:0 with shape \\(2,\\)"):
        func.jvp(lambda x: x, (x,), (tc.randn(2),))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        func.jvp(lambda x: x, (x,), (x,), has_aux=True)
    with pytest.raises(RuntimeError, match="tangent:0 with shape \\(2,\\)"):
        func.linearize(lambda x: x * 2, x)[1](tc.randn(2))


def test_functionalize_is_the_function_eagerly():
    def f(x):
        y = x.clone()
        y.add_(1.0)
        x.mul_(2.0)
        return y * 3

    x, tx = tc.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    close(func.functionalize(f)(x), torch.func.functionalize(f)(tx))
    close(x, tx)  # the input's mutation stays, as torch's
    close(func.functionalize(f, remove="mutations_and_views")(x), tx * 3 + 3)
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        func.functionalize(f, remove="views")
    with pytest.raises(RuntimeError, match="received invalid argument"):
        torch.func.functionalize(f, remove="views")


def test_replace_all_batch_norm_modules_uses_batch_statistics_as_torch():
    x = normal(6, 3)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(nn.BatchNorm1d(4)))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.Sequential(torch.nn.BatchNorm1d(4))).double()  # fmt: skip
    model[0].weights.array = theirs[0].weight.detach().numpy().T.copy()
    model[0].bias.array = theirs[0].bias.detach().numpy().copy()
    assert func.replace_all_batch_norm_modules_(model) is model
    torch.func.replace_all_batch_norm_modules_(theirs)
    for bn in (model[1], model[2][0]):
        assert bn.running_mean is None and bn.running_var is None
        assert not bn.track_running_stats
    assert theirs[1].running_mean is None
    model.eval()
    theirs.eval()
    close(model(tc.tensor(x)), theirs(torch.tensor(x)), 1e-6)


def test_gradgradcheck_checks_second_derivatives():
    x = tc.tensor(normal(3), requires_grad=True)
    assert autograd.gradgradcheck(lambda x: x.sin(), (x,))
    assert autograd.gradcheck(lambda x: x.sin(), (x,))
