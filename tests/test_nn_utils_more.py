"""torch.nn.utils, nn.init and torch.autograd names filled in against torch: the halves of
``clip_grad_norm_`` (``get_total_norm``, ``clip_grads_with_norm_``) and its deprecated name,
the BatchNorm fusions (a Linear's weights in tricycle's (in, out) layout), ``skip_init``,
``stateless.functional_call``, ``nn.init.dirac_`` / ``sparse_`` and
``tricycle.autograd.gradcheck``."""

import math

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
from tricycle import autograd
from tricycle.gradcheck import GradcheckError
from tricycle.nn import init
from tricycle.nn import utils as nn_utils
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def pairs(seed: int, *shapes):
    """Float64 arrays of ``shapes``, as tricycle Tensors and torch tensors."""
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=s) for s in shapes]
    return [Tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


# ---------------------------------------------------------------------- clipping
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    ours, theirs = pairs(norm_type == math.inf, (3, 4), (5,), (2, 2, 2))
    norm = nn_utils.get_total_norm(ours, norm_type)
    ref = torch.nn.utils.get_total_norm(theirs, norm_type)
    assert norm.shape == () and norm.item() == pytest.approx(ref.item(), rel=1e-12)
    params, torch_params = pairs(7, (3, 4), (5,), (2, 2, 2))
    for p, q, g, h in zip(params, torch_params, ours, theirs):
        p.grad, q.grad = g, h
    nn_utils.clip_grads_with_norm_(params, 0.5, norm)
    torch.nn.utils.clip_grads_with_norm_(torch_params, 0.5, ref)
    for p, q in zip(params, torch_params):
        np.testing.assert_allclose(p.grad.array, q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_is_deprecated_and_equals_clip_grad_norm_():
    ours, theirs = pairs(1, (4, 3), (3,))
    for p, q in zip(ours, theirs):
        p.grad, q.grad = Tensor(p.array * 10), q.detach() * 10
        p.requires_grad_(True)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        norm = nn_utils.clip_grad_norm(ours, 1.0)
    with pytest.warns(FutureWarning):
        ref = torch.nn.utils.clip_grad_norm(theirs, 1.0)
    assert norm.item() == pytest.approx(ref.item(), rel=1e-12)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.array, q.grad.numpy(), rtol=1e-12)


def test_total_norm_edges_and_errors():
    assert nn_utils.get_total_norm([]).item() == torch.nn.utils.get_total_norm([]).item() == 0
    with pytest.raises(RuntimeError, match="get_total_norm: .* cannot be clipped"):
        nn_utils.get_total_norm([Tensor(np.array([np.inf]))], error_if_nonfinite=True)
    with pytest.raises(TypeError, match=r"get_total_norm: parameters\[0\] is a ndarray"):
        nn_utils.get_total_norm([np.ones(2)])
    p = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    p.grad = Tensor(np.array([3.0, 4.0]))
    nn_utils.clip_grads_with_norm_([p], 1.0, 5.0)  # a plain number is a norm too
    np.testing.assert_allclose(p.grad.array, np.array([3.0, 4.0]) / (5 + 1e-6))
    with pytest.raises(TypeError, match="clip_grads_with_norm_: total_norm must be"):
        nn_utils.clip_grads_with_norm_([p], 1.0, "5")
    with pytest.raises(ValueError, match="clip_grads_with_norm_: max_norm must be"):
        nn_utils.clip_grads_with_norm_([p], -1.0, 5.0)


# ---------------------------------------------------------------------- fusion
def trained_batch_norm(ours, theirs, channels: int, affine: bool = True):
    """Both BatchNorms with the same non-trivial running statistics and affine weights."""
    rng = np.random.default_rng(channels)
    mean, var = rng.normal(size=channels), rng.uniform(0.5, 2.0, size=channels)
    ours.running_mean.array[...] = mean
    ours.running_var.array[...] = var
    theirs.running_mean.copy_(torch.tensor(mean))
    theirs.running_var.copy_(torch.tensor(var))
    if affine:
        gamma, beta = rng.normal(size=channels), rng.normal(size=channels)
        ours.gamma.array[...] = gamma
        ours.beta.array[...] = beta
        theirs.weight.data.copy_(torch.tensor(gamma))
        theirs.bias.data.copy_(torch.tensor(beta))
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("bias, affine", [(True, True), (False, True), (True, False)])
def test_fuse_conv_bn_eval_matches_torch(bias, affine):
    tricycle.manual_seed(0)
    torch.manual_seed(0)
    theirs = torch.nn.Conv2d(3, 4, 3, bias=bias).double().eval()
    ours = nn.Conv2d(3, 4, 3, bias=bias)
    ours.weights = nn.Parameter(Tensor(theirs.weight.detach().numpy().copy()))
    if bias:
        ours.bias = nn.Parameter(Tensor(theirs.bias.detach().numpy().copy()))
    ours.eval()
    bn, torch_bn = trained_batch_norm(
        nn.BatchNorm2d(4, affine=affine).double(),
        torch.nn.BatchNorm2d(4, affine=affine).double(),
        4,
        affine,
    )
    fused = nn_utils.fuse_conv_bn_eval(ours, bn)
    ref = torch.nn.utils.fuse_conv_bn_eval(theirs, torch_bn)
    np.testing.assert_allclose(fused.weights.array, ref.weight.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(fused.bias.array, ref.bias.detach().numpy(), rtol=1e-12)
    assert fused.bias.requires_grad == ref.bias.requires_grad
    assert isinstance(fused.weights, nn.Parameter) and fused is not ours
    x = np.random.default_rng(1).normal(size=(2, 3, 6, 6))
    np.testing.assert_allclose(
        fused(Tensor(x)).array, bn(ours(Tensor(x))).array, rtol=1e-9, atol=1e-12
    )


def test_fuse_conv_transpose_bn_weights_matches_torch():
    (w, b, mean, gamma, beta), (tw, tb, tmean, tgamma, tbeta) = pairs(
        3, (3, 5, 2, 2), (5,), (5,), (5,), (5,)
    )
    var, tvar = Tensor(np.linspace(0.5, 2, 5)), torch.linspace(0.5, 2, 5, dtype=torch.float64)
    fw, fb = nn_utils.fuse_conv_bn_weights(w, b, mean, var, 1e-3, gamma, beta, transpose=True)
    rw, rb = torch.nn.utils.fuse_conv_bn_weights(tw, tb, tmean, tvar, 1e-3, tgamma, tbeta, True)
    np.testing.assert_allclose(fw.array, rw.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(fb.array, rb.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("features", [4, 1])
def test_fuse_linear_bn_eval_matches_torch_in_our_layout(features):
    torch.manual_seed(0)
    theirs = torch.nn.Linear(3, 4).double().eval()
    ours = nn.Linear(3, 4)
    ours.weights = nn.Parameter(Tensor(theirs.weight.detach().numpy().T.copy()))  # (in, out)
    ours.bias = nn.Parameter(Tensor(theirs.bias.detach().numpy().copy()))
    ours.eval()
    bn, torch_bn = trained_batch_norm(
        nn.BatchNorm1d(features).double(), torch.nn.BatchNorm1d(features).double(), features
    )
    fused = nn_utils.fuse_linear_bn_eval(ours, bn)
    ref = torch.nn.utils.fuse_linear_bn_eval(theirs, torch_bn)
    np.testing.assert_allclose(fused.weights.array, ref.weight.detach().numpy().T, rtol=1e-12)
    np.testing.assert_allclose(fused.bias.array, ref.bias.detach().numpy(), rtol=1e-12)
    x = np.random.default_rng(2).normal(size=(5, 3))
    np.testing.assert_allclose(
        fused(Tensor(x)).array, ref(torch.tensor(x)).detach().numpy(), rtol=1e-9
    )


def test_fusion_errors():
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    with pytest.raises(AssertionError, match="fuse_conv_bn_eval: Fusion only for eval"):
        nn_utils.fuse_conv_bn_eval(conv, bn.eval())
    with pytest.raises(AssertionError, match="running_mean and bn.running_var must not be"):
        nn_utils.fuse_conv_bn_eval(conv.eval(), nn.BatchNorm2d(4, track_running_stats=False).eval())
    with pytest.raises(ValueError, match="the BatchNorm has 5 channels"):
        nn_utils.fuse_conv_bn_eval(conv.eval(), nn.BatchNorm2d(5).eval())
    with pytest.raises(AssertionError, match="linear.out_features=4 and bn.num_features=3"):
        nn_utils.fuse_linear_bn_eval(nn.Linear(2, 4).eval(), nn.BatchNorm1d(3).eval())
    with pytest.raises(ValueError, match="linear_w must be a 2-D Tensor"):
        nn_utils.fuse_linear_bn_weights(Tensor(np.ones(3)), None, *pairs(0, (3,), (3,))[0],
                                        1e-5, None, None)  # fmt: skip


# ---------------------------------------------------------------------- skip_init, stateless
def test_skip_init_builds_the_module_and_refuses_other_classes():
    layer = nn_utils.skip_init(nn.Linear, 6, 1, device="cpu")
    assert isinstance(layer, nn.Linear) and layer.weights.shape == (6, 1)
    with pytest.raises(RuntimeError, match="skip_init: Expected a Module; got <class 'int'>"):
        nn_utils.skip_init(int, 3)


def test_stateless_functional_call_warns_and_swaps_the_weights():
    layer = nn.Linear(3, 2)
    weights, bias = Tensor(np.ones((3, 2))), Tensor(np.zeros(2))
    x = Tensor(np.arange(6.0).reshape(2, 3))
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = nn_utils.stateless.functional_call(layer, {"weights": weights, "bias": bias}, x)
    np.testing.assert_allclose(out.array, x.array @ weights.array)
    theirs = torch.nn.Linear(3, 2).double()
    with pytest.warns(FutureWarning):
        ref = torch.nn.utils.stateless.functional_call(
            theirs, {"weight": torch.ones(2, 3, dtype=torch.float64),
                     "bias": torch.zeros(2, dtype=torch.float64)}, torch.tensor(x.array),
        )  # fmt: skip
    np.testing.assert_allclose(out.array, ref.detach().numpy())


# ---------------------------------------------------------------------- init
@pytest.mark.parametrize("shape, groups", [((4, 3, 3), 1), ((6, 2, 3, 3), 3), ((2, 4, 1, 3, 2), 2)])
def test_dirac_matches_torch(shape, groups):
    ours = init.dirac_(Tensor(np.full(shape, 7.0)), groups)
    ref = torch.nn.init.dirac_(torch.full(shape, 7.0, dtype=torch.float64), groups)
    np.testing.assert_array_equal(ours.array, ref.numpy())
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
    init.dirac_(conv.weights)  # the identity convolution
    x = Tensor(np.random.default_rng(0).normal(size=(1, 3, 5, 5)).astype(np.float32))
    np.testing.assert_allclose(conv(x).array, x.array, rtol=1e-6)


def test_dirac_errors():
    with pytest.raises(ValueError, match="nn.init.dirac_: tensor must be a Tensor of 3, 4 or 5"):
        init.dirac_(Tensor(np.ones((2, 2))))
    with pytest.raises(ValueError, match=r"dim 0 \(4\) must be divisible by groups=3"):
        init.dirac_(Tensor(np.ones((4, 2, 3))), 3)


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.9])
def test_sparse_zeros_as_many_as_torch_per_input(sparsity):
    torch.manual_seed(0)
    tricycle.manual_seed(0)
    ref = torch.nn.init.sparse_(torch.empty(20, 30, dtype=torch.float64), sparsity, std=0.5)
    theirs = (ref == 0).sum(0).numpy()  # torch's (out, in): zeros per input column
    ours = init.sparse_(Tensor(np.empty((30, 20))), sparsity, std=0.5)  # (in, out)
    np.testing.assert_array_equal((ours.array == 0).sum(1), theirs)
    laid = init.sparse_(Tensor(np.empty((20, 30))), sparsity, std=0.5, torch_layout=True)
    np.testing.assert_array_equal((laid.array == 0).sum(0), theirs)
    kept = laid.array[laid.array != 0]
    assert kept.std() == pytest.approx(0.5, rel=0.2) and abs(kept.mean()) < 0.2


def test_sparse_errors():
    with pytest.raises(ValueError, match="nn.init.sparse_: tensor must be a 2-D Tensor"):
        init.sparse_(Tensor(np.ones((2, 2, 2))), 0.5)
    with pytest.raises(ValueError, match="nn.init.sparse_: std must be"):
        init.sparse_(Tensor(np.ones((2, 2))), 0.5, std=-1.0)


# ---------------------------------------------------------------------- autograd.gradcheck
def test_autograd_gradcheck_as_torch():
    x = Tensor(np.random.default_rng(0).normal(size=(3, 4)), requires_grad=True)
    y = Tensor(
        np.random.default_rng(1).normal(size=(4,)), requires_grad=False
    )  # a constant: not checked
    assert autograd.gradcheck(lambda a, b, k: (a * b).tanh().sum(k), (x, y, 1))
    assert autograd.gradcheck(lambda a: (a.exp(), a.argmax()), x)  # integer outputs skipped
    tx = torch.tensor(x.array, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: (a.exp(), a.argmax()), tx)

    def wrong(a):  # a backward that is off by a factor of two
        return a * 2 - (a * 1).detach()

    def wrong_torch(a):
        return a * 2 - (a * 1).detach()

    assert autograd.gradcheck(wrong, x, raise_exception=False) is False
    assert torch.autograd.gradcheck(wrong_torch, tx, raise_exception=False) is False
    with pytest.raises(GradcheckError, match="differs from finite differences"):
        autograd.gradcheck(wrong, x)


def test_autograd_gradcheck_errors():
    x = Tensor(np.ones(3), requires_grad=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        autograd.gradcheck(lambda a: a * 2, (x,))
    x.requires_grad_(True)
    with pytest.raises(NotImplementedError, match="no forward-mode AD"):
        autograd.gradcheck(lambda a: a * 2, x, check_forward_ad=True)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['atoll'\]"):
        autograd.gradcheck(lambda a: a * 2, x, atoll=1.0)
    assert autograd.gradcheck(lambda a: a * 2, x, nondet_tol=0.0, fast_mode=True)
