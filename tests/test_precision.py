"""Precision policies and dynamic loss scaling (tricycle/precision.py).

The loss-scaling logic runs on numpy here (CPU CI); the TF32 switch and the fused path are
checked on a GPU when there is one.
"""

import numpy as np
import pytest

from tricycle import backend
from tricycle.activation import ReLU
from tricycle.einsum import Einsum
from tricycle.loss import CrossEntropy
from tricycle.optimisers import SGD, AdamW
from tricycle.precision import GradScaler, Precision, cast, cast_all, describe, is_floating
from tricycle.tensor import Tensor

gpu = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")


# ---------------------------------------------------------------------- the policy object
def test_modes_and_dtypes():
    assert Precision().mode == "fp32" and not Precision().mixed
    assert Precision("float32").compute_dtype == np.float32
    tf32 = Precision("tf32")
    assert tf32.tf32 and tf32.compute_dtype == np.float32 and tf32.scaler is None
    fp16 = Precision("fp16")
    assert fp16.compute_dtype == np.float16 and fp16.mixed and isinstance(fp16.scaler, GradScaler)
    assert Precision("fp16", loss_scaling=False).scaler is None
    with pytest.raises(ValueError, match="Precision: mode must be one of .fp32."):
        Precision("fp8")


def test_bf16_mode_uses_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    policy = Precision("bf16")
    assert policy.compute_dtype == np.dtype(ml_dtypes.bfloat16)
    assert policy.scaler is None  # float32's exponent range: no scaling needed by default
    assert is_floating(policy.compute_dtype)


def test_context_is_a_no_op_without_gpu_and_nests():
    policy = Precision("tf32")
    with policy as entered, policy:
        assert entered is policy
    assert "precision=tf32" in describe(policy)


# ---------------------------------------------------------------------- casting
def test_cast_is_differentiable_and_returns_grad_in_source_dtype():
    x = Tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    y = cast(x, np.float16)
    assert y.dtype == np.float16 and y.args == (x,)
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.array, 2 * x.array, rtol=1e-3)


def test_bf16_cast_flows_gradients_or_raises_clearly():
    """bfloat16 (numpy kind 'V') must either carry gradients or fail loudly, never silently."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = Tensor(np.linspace(-1, 1, 4, dtype=np.float32))
    try:
        y = cast(x, ml_dtypes.bfloat16)
    except TypeError as error:
        assert "bfloat16" in str(error)
        return
    (y * y).sum().backward()
    assert x.grad is not None and x.grad.dtype == np.float32


def test_cast_passes_through_same_dtype_and_integers():
    x = Tensor(np.ones(3, dtype=np.float32))
    assert cast(x, np.float32) is x
    ids = np.arange(4)
    assert cast(ids, np.float16) is ids
    assert Precision("fp16").cast(np.ones(2, np.float32)).dtype == np.float16


def test_cast_all_matches_cast_and_is_differentiable(xp):
    """On a GPU one kernel casts every tensor; the values and gradients are those of cast."""
    rng = np.random.default_rng(0)
    tensors = [Tensor(xp.asarray(rng.normal(size=s).astype(np.float32))) for s in [(4, 3), (5,)]]
    ids = Tensor(xp.arange(3), requires_grad=False)
    casts = cast_all([*tensors, ids, tensors[0]], np.float16)
    assert casts[2] is ids and casts[3] is casts[0]  # integers pass; one cast per tensor
    for t, c in zip(tensors, casts):
        assert c.dtype == np.float16 and c.args == (t,)
        np.testing.assert_array_equal(Tensor(c.array).numpy(), t.numpy().astype(np.float16))
    (casts[0].sum() * 2 + (casts[1] * casts[1]).sum()).backward()
    assert tensors[0].grad.dtype == np.float32
    np.testing.assert_allclose(tensors[0].grad.numpy(), 2.0)
    np.testing.assert_allclose(tensors[1].grad.numpy(), 2 * tensors[1].numpy(), rtol=1e-3)


# ---------------------------------------------------------------------- GradScaler
def test_scaler_backs_off_on_overflow_and_counts_skips():
    scaler = GradScaler(init_scale=1024.0, growth_interval=3)
    grads = [np.full(4, np.inf, dtype=np.float32), np.ones(3, dtype=np.float32)]
    found_inf, _ = scaler.unscale(grads)
    assert bool(found_inf)
    scaler.update(found_inf)
    assert scaler.scale == 512.0 and scaler.skipped_steps == 1


def test_scaler_nan_counts_as_overflow():
    scaler = GradScaler(init_scale=8.0)
    found_inf, _ = scaler.unscale([np.array([1.0, np.nan], dtype=np.float32)])
    assert bool(found_inf)


def test_scaler_grows_after_interval_of_good_steps():
    scaler = GradScaler(init_scale=4.0, growth_factor=2.0, growth_interval=3)
    for step in range(7):
        found_inf, _ = scaler.unscale([np.ones(5, dtype=np.float32)])
        assert not bool(found_inf)
        scaler.update(found_inf)
        expected = 4.0 * 2 ** ((step + 1) // 3)
        assert scaler.scale == expected, step
    assert scaler.skipped_steps == 0 and scaler.steps == 7


def test_overflow_resets_the_growth_counter():
    scaler = GradScaler(init_scale=16.0, growth_interval=2)
    good, bad = [np.ones(2, np.float32)], [np.array([np.inf], np.float32)]
    for grads in (good, bad, good, good):
        found_inf, _ = scaler.unscale([g.copy() for g in grads])
        scaler.update(found_inf)
    # good (count 1), bad (halve to 8, count 0), good (1), good (2 -> grow to 16)
    assert scaler.scale == 16.0 and scaler.skipped_steps == 1


def test_unscale_divides_in_place_and_reports_the_unscaled_norm():
    scaler = GradScaler(init_scale=4.0)
    g = np.array([12.0, 16.0], dtype=np.float32)  # scaled norm 20, true norm 5
    found_inf, norm = scaler.unscale([g])
    assert not bool(found_inf)
    np.testing.assert_allclose(g, [3.0, 4.0])
    assert float(norm) == pytest.approx(5.0)


def test_unscale_clips_to_max_norm():
    scaler = GradScaler(init_scale=2.0)
    g = np.array([6.0, 8.0], dtype=np.float32)  # true norm 5
    _, norm = scaler.unscale([g], max_norm=1.0)
    assert float(norm) == pytest.approx(5.0)
    np.testing.assert_allclose(np.linalg.norm(g), 1.0, rtol=1e-5)


def test_loss_grad_is_the_scale():
    scaler = GradScaler(init_scale=256.0)
    seed = scaler.loss_grad(Tensor(np.float32(3.0)))
    assert float(seed) == 256.0


def test_scaler_state_dict_round_trip():
    scaler = GradScaler(init_scale=64.0, growth_interval=5)
    found_inf, _ = scaler.unscale([np.array([np.inf], np.float32)])
    scaler.update(found_inf)
    other = GradScaler()
    other.load_state_dict(scaler.state_dict())
    assert other.scale == 32.0 and other.skipped_steps == 1 and other.steps == 1


def test_bad_scaler_arguments_raise():
    with pytest.raises(ValueError):
        GradScaler(init_scale=0)
    with pytest.raises(ValueError):
        GradScaler(growth_interval=0)


# ---------------------------------------------------------------------- the training step
def _model_and_data(seed=0, n=64, d=8, classes=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    w1 = Tensor(rng.normal(scale=0.3, size=(d, 16)).astype(np.float32), name="w1")
    w2 = Tensor(rng.normal(scale=0.3, size=(16, classes)).astype(np.float32), name="w2")
    return x, labels, [("w1", w1), ("w2", w2)]


def _loss(policy, x, labels, params):
    (_, w1), (_, w2) = params
    h = Einsum("nd,dh->nh")(policy.cast(Tensor(x, requires_grad=False)), policy.cast(w1))
    h = ReLU()(h)
    logits = Einsum("nh,hc->nc")(h, policy.cast(w2))
    return CrossEntropy()(labels, policy.cast_output(logits))


def test_skipped_step_leaves_parameters_and_lowers_the_scale():
    x, labels, params = _model_and_data()
    policy = Precision("fp16", init_scale=2.0**16)
    before = [p.array.copy() for _, p in params]
    for _, p in params:
        p.grad = Tensor(np.full(p.shape, np.inf, dtype=np.float32), requires_grad=False)
    norm, skipped = policy.step(SGD(learning_rate=0.1), params)
    assert skipped is True and norm == np.inf
    for (_, p), old in zip(params, before):
        np.testing.assert_array_equal(p.array, old)
        assert p.grad is None
    assert policy.scaler.scale == 2.0**15 and policy.scaler.skipped_steps == 1


def test_scaled_step_equals_the_unscaled_step():
    x, labels, params = _model_and_data()
    _, _, reference = _model_and_data()
    fp32 = Precision()
    scaled = Precision("fp32", loss_scaling=True, init_scale=1024.0)
    norms = []
    for policy, ps in ((fp32, reference), (scaled, params)):
        loss = _loss(policy, x, labels, ps)
        policy.backward(loss)
        norm, skipped = policy.step(AdamW(learning_rate=1e-2), ps, max_norm=1.0)
        assert skipped is False and np.isfinite(norm)
        norms.append(norm)
    assert norms[0] == pytest.approx(norms[1], rel=1e-5)  # the norm is reported unscaled
    for (_, a), (_, b) in zip(params, reference):
        np.testing.assert_allclose(a.array, b.array, rtol=1e-5, atol=1e-7)


def test_mixed_precision_training_converges_like_float32():
    results = {}
    for mode in ("fp32", "fp16"):
        x, labels, params = _model_and_data(seed=1)
        policy = Precision(mode)
        optimiser = AdamW(learning_rate=3e-2, weight_decay=0.0)
        losses = []
        for _ in range(60):
            optimiser.step()
            loss = _loss(policy, x, labels, params)
            losses.append(float(loss.array))
            policy.backward(loss)
            policy.step(optimiser, params, max_norm=1.0)
        results[mode] = losses
    assert results["fp32"][-1] < 0.5 * results["fp32"][0]
    assert results["fp16"][-1] == pytest.approx(results["fp32"][-1], abs=0.05)


# ---------------------------------------------------------------------- GPU: TF32 switch
@gpu
def test_tf32_context_sets_and_restores_cupy_state():
    from tricycle import precision
    from tricycle.backends.cuda import settings

    before = settings.tf32_state()
    with Precision("tf32"):
        assert precision.tf32_enabled()
        assert settings.tf32_state() == settings.TF32_ON
    assert settings.tf32_state() == before


def test_tf32_switch_does_nothing_without_a_gpu(monkeypatch):
    from tricycle import precision

    monkeypatch.setattr(backend, "cupy_available", lambda: False)
    assert precision.switch_tf32(True) is None
    assert precision.tf32_enabled() is False
    with Precision("tf32") as policy:
        assert policy._saved == [None]
    assert policy._saved == []


@gpu
def test_tf32_matmul_error_is_tf32_sized():
    cp = backend.cupy()
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=(512, 512)).astype(np.float32) for _ in range(2))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    ga, gb = cp.asarray(a), cp.asarray(b)

    def error(out):
        return np.linalg.norm(cp.asnumpy(out) - exact) / np.linalg.norm(exact)

    plain = error(ga @ gb)
    with Precision("tf32"):
        tf32 = error(ga @ gb)
        batched = error(cp.matmul(ga[None], gb[None])[0])
    assert plain < 1e-5
    assert 1e-5 < tf32 < 2e-3
    assert batched < 2e-3  # batched products follow the cuBLAS math mode


def _gpu_twins():
    """(cupy, x, labels, params, reference): the data and two identical models on the GPU."""
    cp = backend.cupy()
    x, labels, params = _model_and_data()
    _, _, reference = _model_and_data()
    for _, p in params + reference:
        p.array = cp.asarray(p.array)
    return cp, cp.asarray(x), cp.asarray(labels), params, reference


@gpu
def test_an_optimiser_without_a_fused_update_uses_the_kernels_norm_on_gpu():
    """SGD has no fused update: ``Precision.step`` updates through the arrays with the norm
    the kernels already computed, and matches the step with the kernels off."""
    cp, x, labels, params, reference = _gpu_twins()
    norms = []
    for kernels_on, ps in ((True, params), (False, reference)):
        policy = Precision("fp32", loss_scaling=True, init_scale=512.0)
        with pytest.MonkeyPatch.context() as mp:
            if not kernels_on:
                mp.setenv("TRICYCLE_DISABLE_KERNELS", "1")
            policy.backward(_loss(policy, x, labels, ps))
            norm, skipped = policy.step(SGD(learning_rate=0.1), ps, max_norm=0.5)
        assert skipped is False and isinstance(norm, float) and norm > 0.5  # it clips
        norms.append(norm)
    assert norms[0] == pytest.approx(norms[1], rel=1e-5)
    for (_, a), (_, b) in zip(params, reference):
        np.testing.assert_allclose(cp.asnumpy(a.array), cp.asnumpy(b.array), rtol=1e-5, atol=1e-7)


@gpu
def test_fused_step_matches_the_array_step_on_gpu():
    cp, x, labels, params, reference = _gpu_twins()
    for kernels_on, ps in ((True, params), (False, reference)):
        policy = Precision("fp32", loss_scaling=True, init_scale=512.0)
        optimiser = AdamW(learning_rate=1e-2, weight_decay=0.1)
        with pytest.MonkeyPatch.context() as mp:
            if not kernels_on:
                mp.setenv("TRICYCLE_DISABLE_KERNELS", "1")
            for _ in range(3):
                optimiser.step()
                loss = _loss(policy, x, labels, ps)
                policy.backward(loss)
                _, skipped = policy.step(optimiser, ps, max_norm=0.5)
                assert not bool(skipped)
    for (_, a), (_, b) in zip(params, reference):
        np.testing.assert_allclose(cp.asnumpy(a.array), cp.asnumpy(b.array), rtol=1e-4, atol=1e-6)
