"""torch's low-level top-level functions (``tricycle.nn.native``: ``native_*`` norms and
dropout, ``constant_pad_nd``, ``convolution``, ``grid_sampler``, ``affine_grid_generator``,
``max_pool1d_with_indices``, ``norm_except_dim``, ``empty_permuted``): values and gradients
against torch's on the same inputs (float64), the saved statistics' shapes and whether they
take gradients, and torch's errors."""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def compare(ours, theirs, arrays, grads=(), rtol=1e-7, atol=1e-9):
    """Run ``ours`` on tricycle tensors and ``theirs`` on torch's of ``arrays``: outputs equal,
    and the gradients of the first output's weighted sum wrt the arrays at ``grads``."""
    xs = [tc.Tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    out, expected = ours(*xs), theirs(*ts)
    outs = out if isinstance(out, tuple) else (out,)
    expecteds = expected if isinstance(expected, tuple) else (expected,)
    assert len(outs) == len(expecteds)
    for o, e in zip(outs, expecteds):
        assert o.shape == tuple(e.shape)
        np.testing.assert_allclose(o.numpy(), e.detach().numpy(), rtol=rtol, atol=atol)
    if grads:
        weights = normal(*expecteds[0].shape, seed=9)
        (outs[0] * tc.Tensor(weights)).sum().backward()
        (expecteds[0] * torch.tensor(weights)).sum().backward()
        for i in grads:
            np.testing.assert_allclose(xs[i].grad.numpy(), ts[i].grad.numpy(), rtol=1e-6,
                                       atol=1e-8)  # fmt: skip
    return outs, expecteds


def test_native_batch_norm_in_and_out_of_training():
    x, w, b = normal(4, 3, 5), normal(3, seed=1), normal(3, seed=2)
    for training in (True, False):
        rm, rv = tc.Tensor(normal(3, seed=3)), tc.Tensor(np.abs(normal(3, seed=4)) + 0.5)
        trm, trv = torch.tensor(rm.numpy()), torch.tensor(rv.numpy())
        outs, _ = compare(
            lambda x, w, b: tc.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5),
            lambda x, w, b: torch.native_batch_norm(x, w, b, trm, trv, training, 0.1, 1e-5),
            [x, w, b],
            grads=(0, 1, 2),
        )
        np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)
        np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)
        assert not outs[1].requires_grad and not outs[2].requires_grad
    compare(lambda x: tc.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-3),
            lambda x: torch.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-3),
            [normal(6, 2)], grads=(0,))  # fmt: skip


def test_native_layer_norm_and_group_norm():
    x = normal(2, 3, 4)
    compare(lambda x, w, b: tc.native_layer_norm(x, [3, 4], w, b, 1e-5),
            lambda x, w, b: torch.native_layer_norm(x, [3, 4], w, b, 1e-5),
            [x, normal(3, 4, seed=1), normal(3, 4, seed=2)], grads=(0, 1, 2))  # fmt: skip
    compare(
        lambda x: tc.native_layer_norm(x, (4,), None, None, 1e-3),
        lambda x: torch.native_layer_norm(x, (4,), None, None, 1e-3),
        [x],
        grads=(0,),
    )
    x = normal(2, 6, 5)
    outs, _ = compare(lambda x, w, b: tc.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5),
                      lambda x, w, b: torch.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5),
                      [x, normal(6, seed=1), normal(6, seed=2)], grads=(0, 1, 2))  # fmt: skip
    assert outs[1].shape == outs[2].shape == (2, 3) and outs[2].requires_grad
    # the statistics take gradients, as torch's
    xt, tt = tc.Tensor(x), torch.tensor(x, requires_grad=True)
    _, mean, rstd = tc.native_group_norm(xt, None, None, 2, 6, 5, 3, 1e-5)
    _, tmean, trstd = torch.native_group_norm(tt, None, None, 2, 6, 5, 3, 1e-5)
    (mean.sum() + 2 * rstd.sum()).backward()
    (tmean.sum() + 2 * trstd.sum()).backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-6, atol=1e-9)
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        tc.native_group_norm(tc.Tensor(x), None, None, 2, 6, 4, 3, 1e-5)


def test_native_dropout_mask_and_scaling():
    x = tc.Tensor(normal(40, 50), requires_grad=True)
    out, mask = tc.native_dropout(x, 0.3, True)
    assert mask.dtype == tc.bool and abs(mask.numpy().mean() - 0.7) < 0.03
    np.testing.assert_allclose(out.numpy(), x.numpy() * mask.numpy() / 0.7)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / 0.7)
    _, mask = tc.native_dropout(x, 0.3, None)  # None is training, as torch's
    assert not mask.numpy().all()
    out, mask = tc.native_dropout(x, 0.3, False)
    _, tmask = torch.native_dropout(torch.tensor(x.numpy()), 0.3, False)
    assert mask.numpy().all() and tmask.all() and np.array_equal(out.numpy(), x.numpy())
    out, mask = tc.native_dropout(x, 1.0, True)
    assert not out.numpy().any() and not mask.numpy().any()


def test_native_norm_is_refused_as_torch_refuses_dense_inputs():
    with pytest.raises(NotImplementedError):
        torch.native_norm(torch.ones(3))
    with pytest.raises(NotImplementedError, match="vector_norm"):
        tc.native_norm(tc.ones(3))


@pytest.mark.parametrize("p, dim", [(2, 0), (3, 1), (2, 2), (1, -1)])
def test_norm_except_dim(p, dim):
    compare(lambda v: tc.norm_except_dim(v, p, dim), lambda v: torch.norm_except_dim(v, p, dim),
            [normal(3, 4, 5)], grads=(0,))  # fmt: skip


def test_constant_pad_nd_and_its_errors():
    x = normal(2, 3, 5)
    for pad, value in [([1, 2], 0), ([1, -2, 0, 1], 3.5), ([0, 0, 2, 1, 1, 0], -1)]:
        compare(lambda x: tc.constant_pad_nd(x, pad, value),
                lambda x: torch.constant_pad_nd(x, pad, value), [x], grads=(0,))  # fmt: skip
    for pad, match in [([1, 2, 3], "must be even"), ([1] * 8, "no more than twice")]:
        with pytest.raises(RuntimeError, match=match):
            torch.constant_pad_nd(torch.tensor(x), pad)
        with pytest.raises(RuntimeError, match=match):
            tc.constant_pad_nd(tc.Tensor(x), pad)
    with pytest.raises(RuntimeError):
        tc.constant_pad_nd(tc.Tensor(x), [-3, -3])


@pytest.mark.parametrize(
    "x_shape, w_shape, stride, padding, dilation, transposed, output_padding, groups",
    [
        ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
        ((1, 2, 6, 5), (3, 2, 3, 2), [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
        ((2, 3, 5), (3, 2, 3), [2], [1], [1], True, [1], 1),
        ((1, 2, 4, 3), (2, 3, 2, 2), [2, 1], [0, 1], [1, 1], True, [1, 0], 1),
        ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), [1, 1, 1], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1),
    ],
)
def test_convolution(x_shape, w_shape, stride, padding, dilation, transposed, output_padding,
                     groups):  # fmt: skip
    args = (stride, padding, dilation, transposed, output_padding, groups)
    bias = normal(w_shape[1] * groups if transposed else w_shape[0], seed=2)
    compare(lambda x, w, b: tc.convolution(x, w, b, *args),
            lambda x, w, b: torch.convolution(x, w, b, *args),
            [normal(*x_shape), normal(*w_shape, seed=1), bias], grads=(0, 1, 2))  # fmt: skip


@pytest.mark.parametrize("mode, padding", [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2)])
def test_grid_sampler_with_atens_int_modes(mode, padding):
    grid = np.random.default_rng(1).uniform(-1.2, 1.2, (2, 3, 4, 2))
    for align in (False, True):
        for ours, theirs in [(tc.grid_sampler, torch.grid_sampler),
                             (tc.grid_sampler_2d, torch.grid_sampler_2d)]:  # fmt: skip
            compare(lambda x, g: ours(x, g, mode, padding, align),
                    lambda x, g: theirs(x, g, mode, padding, align), [normal(2, 3, 5, 6), grid],
                    grads=(0,))  # fmt: skip
    grid3 = np.random.default_rng(2).uniform(-1, 1, (1, 2, 2, 3, 3))
    compare(lambda x, g: tc.grid_sampler_3d(x, g, mode, padding, False),
            lambda x, g: torch.grid_sampler_3d(x, g, mode, padding, False),
            [normal(1, 2, 3, 4, 5), grid3], grads=(0,))  # fmt: skip
    with pytest.raises(ValueError, match="interpolation_mode"):
        tc.grid_sampler(tc.Tensor(normal(2, 3, 5, 6)), tc.Tensor(grid), 5, padding, False)
    with pytest.raises(RuntimeError, match="5-D"):
        tc.grid_sampler_3d(tc.Tensor(normal(2, 3, 5, 6)), tc.Tensor(grid), mode, padding, False)


def test_affine_grid_generator_and_max_pool1d_with_indices():
    for size, align in [([2, 1, 3, 4], False), ([2, 3, 2, 2, 3], True)]:
        theta = normal(2, len(size) - 2, len(size) - 1)
        compare(
            lambda t: tc.affine_grid_generator(t, size, align),
            lambda t: torch.affine_grid_generator(t, size, align),
            [theta],
            grads=(0,),
        )
    for args in [(3,), (2, 1, 1), (3, 2, 1, 2, True)]:
        compare(
            lambda x: tc.max_pool1d_with_indices(x, *args),
            lambda x: torch.max_pool1d_with_indices(x, *args),
            [normal(2, 3, 9)],
            grads=(0,),
        )


def test_empty_permuted_lays_out_memory_as_torchs():
    for size, layout in [((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,))]:
        ours, theirs = tc.empty_permuted(size, layout), torch.empty_permuted(size, layout)
        assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    x = tc.empty_permuted((2, 3), (1, 0), dtype=tc.float64, requires_grad=True)
    assert x.dtype == tc.float64 and x.requires_grad and x.is_leaf
    for layout, match in [((0, 2), "does not match"), ((0, 2, 2), "Duplicate")]:
        with pytest.raises(RuntimeError, match=match):
            torch.empty_permuted((2, 3, 4), layout)
        with pytest.raises(RuntimeError, match=match):
            tc.empty_permuted((2, 3, 4), layout)


def test_rrelu_inplace_writes_its_input_as_torchs():
    a = normal(3, 4)
    for training in (False, True):
        x, t = tc.tensor(a), torch.tensor(a)
        assert tc.nn.functional.rrelu(x, 0.1, 0.3, training, inplace=True) is x
        assert torch.nn.functional.rrelu(t, 0.1, 0.3, training, inplace=True) is t
        if not training:
            np.testing.assert_allclose(x.numpy(), t.numpy())
        else:  # each negative element scaled by its own slope in [0.1, 0.3]
            slopes = x.numpy()[a < 0] / a[a < 0]
            assert np.all((slopes >= 0.1) & (slopes <= 0.3))
            assert np.array_equal(x.numpy()[a >= 0], a[a >= 0])
    # an op's output written in place: the gradient flows through the rrelu, as torch's
    w, tw = tc.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    h, th = w * 2, tw * 2
    assert tc.nn.functional.rrelu(h, inplace=True) is h
    torch.nn.functional.rrelu(th, inplace=True)
    h.sum().backward()
    th.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())
