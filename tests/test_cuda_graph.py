"""The captured training step (tricycle.apps.cuda_graph) and the capture hooks
(tricycle.backends.cuda.capture).

On a GPU: a ``CapturedStep`` gives the same losses, gradient norms and parameters as
``train_step`` step after step (learning rate changing, clipping, loss scaling, gradient
accumulation), keeps range checks, and refuses what a replay would get wrong. On the CPU:
the hooks outside a capture, and the refusals that need no GPU.
"""

import numpy as np
import pytest

from tricycle import backend, precision
from tricycle.apps.cuda_graph import CapturedStep
from tricycle.apps.step import train_step
from tricycle.backends import cuda as kernels
from tricycle.backends.cuda import capture
from tricycle.configs import GPTConfig
from tricycle.dropout_mask import keep_mask
from tricycle.einsum import Einsum
from tricycle.layers import Dropout
from tricycle.models import build_model
from tricycle.optimisers import SGD, Adam, AdamW
from tricycle.parallel import distributed
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.precision import Precision
from tricycle.random import manual_seed
from tricycle.tensor import Tensor
from tricycle.training import gpt_trainer

gpu = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")

SMALL = dict(embedding_dim=64, n_heads=2, n_layers=2, context_window=16, vocab_size=61,
             batch_size=4, activation_fn="gelu_tanh")  # fmt: skip


def _model(seed: int = 0, **overrides):
    manual_seed(seed)
    model = build_model(GPTConfig(**{**SMALL, **overrides}))
    model.to_gpu()
    return model


def _batches(cp, n: int, seed: int = 1, vocab: int = 61, shape=(4, 16)):
    rng = np.random.default_rng(seed)
    return [
        (cp.asarray(rng.integers(0, vocab, shape)), cp.asarray(rng.integers(0, vocab, shape)))
        for _ in range(n)
    ]


# ====================================================================== CPU: the hooks
def test_hooks_outside_a_capture_run_at_once():
    calls = []
    assert capture.every_step(lambda: calls.append(1) or 7) == 7
    assert calls == [1] and not capture.capturing()
    capture.refuse("op", "why")  # nothing to refuse outside a capture


def test_a_recording_redoes_the_host_work_in_order():
    recording, order = capture.Recording(), []
    capture.start(recording)
    try:
        assert capture.capturing()
        with pytest.raises(RuntimeError, match="already capturing"):
            capture.start(capture.Recording())
        capture.every_step(lambda: order.append("a"))
        capture.every_step(lambda: order.append("b"))
    finally:
        capture.stop()
    assert order == ["a", "b"] and not capture.capturing()
    recording.refresh()
    recording.refresh()
    assert order == ["a", "b"] * 3


def test_on_replay_runs_only_before_replays():
    """``on_replay``: work the step already did, redone at each replay in its place among
    the other hooks; nothing outside a capture."""
    order = []
    capture.on_replay(lambda: order.append("never"))  # not capturing: nothing
    recording = capture.Recording()
    capture.start(recording)
    try:
        capture.on_replay(lambda: order.append("first"))
        capture.every_step(lambda: order.append("now"))
    finally:
        capture.stop()
    assert order == ["now"]
    recording.refresh()
    assert order == ["now", "first", "now"]


def test_a_seed_given_as_a_number_is_refused_while_capturing():
    """Outside a capture a step's seed is an int; inside one a kernel must read it from
    device memory, refilled at each replay: a plain number would repeat one mask."""
    layer = Dropout(0.1, seed=0)
    assert isinstance(layer.step_seed(), int)
    capture.start(capture.Recording())
    try:
        with pytest.raises(capture.CaptureError, match="dropout cannot run inside"):
            kernels.seed_array(12345)
    finally:
        capture.stop()


def test_captured_step_refuses_an_optimiser_without_a_fused_update():
    model = build_model(GPTConfig(**SMALL))
    for optimiser in (SGD(0.1), Adam(weight_decay=0.1)):
        with pytest.raises(capture.CaptureError, match="must be Adam or AdamW"):
            CapturedStep(model, optimiser)


def test_captured_step_refuses_a_model_on_the_cpu():
    with pytest.raises(ValueError, match="must all be on a GPU"):
        CapturedStep(build_model(GPTConfig(**SMALL)), AdamW())


def test_captured_step_takes_zero_over_a_fused_adamw_only():
    model, world = build_model(GPTConfig(**SMALL)), distributed.init()
    with pytest.raises(capture.CaptureError, match="alone or under ZeRO-1"):
        CapturedStep(model, ZeroRedundancyOptimiser(SGD(0.1), model, world))
    with pytest.raises(ValueError, match="must all be on a GPU"):  # the optimiser passed
        CapturedStep(model, ZeroRedundancyOptimiser(AdamW(), model, world))


# ====================================================================== GPU: replays
def _run(step_fn, model, optimiser, batches, policy, learning_rates, accumulation):
    losses, norms = [], []
    with policy:
        for i, lr in enumerate(learning_rates):
            optimiser.learning_rate = lr
            out = step_fn(iter(batches[i * accumulation : (i + 1) * accumulation])).settle()
            losses.append(out.loss)
            norms.append(out.grad_norm)
    params = {n: backend.cupy().asnumpy(p.array) for n, p in model.named_parameters()}
    return losses, norms, params


def _stepper(captured: bool, model, optimiser, policy=None, warmup_steps=2, **options):
    """The step under test: a CapturedStep, or the eager train_step with the same arguments."""
    if captured:
        return CapturedStep(model, optimiser, policy, warmup_steps=warmup_steps, **options)
    return lambda batches: train_step(model, optimiser, batches, policy, **options)


@gpu
@pytest.mark.parametrize("mode", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("accumulation", [1, 2])
def test_replays_match_eager_steps(mode, accumulation):
    """Eight steps, the learning rate changing every step, clipping at 0.5: the same losses,
    norms and parameters as train_step (fp16 with loss scaling, its scale starting at 2^16)."""
    cp = backend.cupy()
    batches = _batches(cp, 16)
    rates = [1e-3 * (1 + i) for i in range(8)]
    results = []
    for captured in (False, True):
        model = _model()
        optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
        policy = Precision(mode)
        options = dict(accumulation_steps=accumulation, max_norm=0.5)
        step_fn = _stepper(captured, model, optimiser, policy, **options)
        results.append(_run(step_fn, model, optimiser, batches, policy, rates, accumulation))
        if captured:
            assert step_fn.captured and step_fn.eager_steps == 2
            assert optimiser.step_count == 8
            assert all(s["step"] == 8 for s in optimiser.state.values())
    (eager_losses, eager_norms, eager), (graph_losses, graph_norms, graph) = results
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(graph_norms, eager_norms, rtol=1e-4)
    # the key bias's gradient is rounding noise (softmax ignores a constant per query) and
    # some backward kernels add with atomics, in any order: Adam's normalised steps move such
    # entries by up to ~lr apart in two eager runs too; a wrong step moves everything
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-4, atol=1e-4, err_msg=name)


@gpu
def test_replays_count_the_steps_of_the_optimiser_and_of_the_loss_scaler():
    """The host counts a replay redoes (``CapturedStep`` registers them, the eager step calls
    no hook): fp16 with a scale that starts at 1 and grows 2^6-fold after every good step
    until float16 gradients overflow (by 2^42 at the latest), then drops 2^10-fold: steps
    are skipped on the device and others are not. The scaler's whole state, the optimiser's
    count and the parameters equal the eager run's."""
    cp = backend.cupy()
    batches = _batches(cp, 8)
    states = []
    for captured in (False, True):
        model, optimiser = _model(), AdamW(learning_rate=1e-2)
        policy = Precision("fp16", init_scale=1.0, growth_factor=2.0**6, growth_interval=1,
                           backoff_factor=2.0**-10)  # fmt: skip
        step = _stepper(captured, model, optimiser, policy, warmup_steps=1, max_norm=1.0)
        skipped = [bool(step(iter([batch])).settle().skipped) for batch in batches]
        params = {n: cp.asnumpy(p.array) for n, p in model.named_parameters()}
        states.append((skipped, policy.scaler.state_dict(), optimiser.step_count, params))
    assert step.captured and step.eager_steps == 1
    (eager_skipped, eager_scaler, eager_count, eager), (skipped, scaler, count, graph) = states
    assert skipped == eager_skipped and any(skipped) and not all(skipped)
    assert scaler == eager_scaler and scaler["steps"] == 8 and count == eager_count == 8
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-4, atol=1e-4, err_msg=name)


@gpu
def test_outputs_stay_valid_after_later_replays():
    cp = backend.cupy()
    model = _model()
    step = CapturedStep(model, AdamW(learning_rate=1e-2), warmup_steps=1)
    outputs = [step(iter([batch])) for batch in _batches(cp, 5)]
    losses = [float(out.loss) for out in outputs]
    assert len(set(losses)) == 5  # each step's own loss, not the last one five times


@gpu
def test_a_batch_of_another_shape_runs_eagerly():
    """A last partial batch: an eager step between replays, counted like the others, and the
    replays after it go on from its parameters (as an eager run does)."""
    cp = backend.cupy()
    shapes = [(4, 16)] * 4 + [(2, 16)] + [(4, 16)] * 2
    batches = [_batches(cp, 1, seed=i, shape=s)[0] for i, s in enumerate(shapes)]
    losses = []
    for captured in (False, True):
        model, optimiser = _model(), AdamW(learning_rate=1e-2)
        step = _stepper(captured, model, optimiser, warmup_steps=1)
        losses.append([step(iter([batch])).settle().loss for batch in batches])
    assert step.captured and step.eager_steps == 2 and optimiser.step_count == 7
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


@gpu
def test_a_change_of_training_mode_or_of_trained_parameters_runs_eagerly():
    """The graph holds dropout as it was captured (training mode) and updates the parameters
    it saw trained: a step in eval mode, or with a parameter frozen, runs eagerly."""
    cp = backend.cupy()
    batches = _batches(cp, 7)
    losses = []
    for captured in (False, True):
        model, optimiser = _model(dropout=0.2), AdamW(learning_rate=1e-2)
        step = _stepper(captured, model, optimiser, warmup_steps=1)
        out, first = [], model.parameters()[0]
        for i, batch in enumerate(batches):
            if i == 3:  # a step without dropout
                model.eval()
            else:
                model.train()
            first.requires_grad = i != 5  # step 5 leaves one parameter alone
            out.append(step(iter([batch])).settle().loss)
        losses.append(out)
    assert step.captured and step.eager_steps == 3  # warm-up, eval mode, the frozen step
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


@gpu
def test_replaced_parameters_are_refused():
    cp = backend.cupy()
    model, optimiser = _model(), AdamW()
    step = CapturedStep(model, optimiser, warmup_steps=1)
    for batch in _batches(cp, 2):
        step(iter([batch]))
    model.load_state_dict(model.state_dict())  # in place: the graph still holds
    step(iter(_batches(cp, 1)))
    optimiser.load_state_dict(optimiser.state_dict())  # new moment arrays
    with pytest.raises(capture.CaptureError, match="was replaced since the graph was captured"):
        step(iter(_batches(cp, 1)))


@gpu
@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_dropout_replays_draw_the_masks_of_eager_steps(mode):
    """Attention and residual dropout under the graph: each replay draws new seeds from the
    layers' generators, in the eager step's order, so the run equals an eager one."""
    cp = backend.cupy()
    batches = _batches(cp, 6)
    results = []
    for captured in (False, True):
        model, optimiser = _model(dropout=0.2), AdamW(learning_rate=1e-2)
        policy = Precision(mode)
        step_fn = _stepper(captured, model, optimiser, policy, max_norm=1.0)
        results.append(_run(step_fn, model, optimiser, batches, policy, [1e-2] * 6, 1))
    assert step_fn.captured and step_fn.failure is None
    (eager_losses, _, eager), (graph_losses, _, graph) = results
    assert len(set(np.round(graph_losses, 6))) == 6  # a new mask (and batch) every step
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)  # the same masks
    # the key bias's noise (see test_replays_match_eager_steps) moves by up to ~lr = 1e-2 per
    # step apart; six steps move every parameter by up to 6e-2
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-4, atol=1e-3, err_msg=name)


@gpu
def test_a_step_that_cannot_be_captured_runs_eagerly_with_a_warning():
    """Head size 16 has no attention kernel: its products go through CuPy's cuBLAS bindings,
    which refuse to run during a capture. The step warns, puts back the counts the attempt
    advanced, and every step runs eagerly: the run equals an eager one."""
    cp = backend.cupy()
    batches = _batches(cp, 5)
    losses = []
    for captured in (False, True):
        model, optimiser = _model(embedding_dim=32), AdamW(learning_rate=1e-2)
        if captured:
            step = CapturedStep(model, optimiser, warmup_steps=1)
            with pytest.warns(RuntimeWarning, match="cannot be captured as a CUDA graph"):
                losses.append([step(iter([b])).settle().loss for b in batches])
        else:
            losses.append([train_step(model, optimiser, iter([b])).settle().loss for b in batches])
    assert not step.captured and step.failure and step.eager_steps == 5
    assert optimiser.step_count == 5 and all(s["step"] == 5 for s in optimiser.state.values())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_dropout_kernel_draws_the_reference_mask(dtype):
    cp = backend.cupy()
    dtype = precision.bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    x = cp.asarray(np.random.default_rng(0).normal(size=(3, 7, 129)).astype(np.float32))
    x = x.astype(dtype)
    out = kernels.dropout_kernel(x, 0.3, 987654321)
    rows, keys = cp.arange(21)[:, None], cp.arange(129)[None, :]
    mask = keep_mask(cp, 987654321, 0.3, rows, keys, np.float32).reshape(x.shape)
    reference = cp.asnumpy(x.astype(np.float32) * mask)
    got = cp.asnumpy(out.astype(np.float32))
    assert ((got == 0) == (reference == 0)).all()  # the same elements dropped
    np.testing.assert_allclose(got, reference, rtol=1e-2 if dtype.itemsize == 2 else 1e-6)
    kept = float((reference != 0).mean())
    assert 0.65 < kept < 0.75


@gpu
def test_a_label_out_of_range_in_a_replay_is_reported():
    cp = backend.cupy()
    step = CapturedStep(_model(), AdamW(), warmup_steps=1)
    for batch in _batches(cp, 3):
        step(iter([batch])).settle()
    x, y = _batches(cp, 1)[0]
    y[0, 0] = 61  # one past the vocabulary
    with pytest.raises(IndexError, match="must lie in"):
        step(iter([(x, y)])).settle()


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_2d_einsum_through_gemm_matches_matmul(dtype):
    """The tied head's products: (N, E) x (V, E)^T, and the transposed operands of its
    gradients (F-contiguous views), straight through cuBLAS."""
    cp = backend.cupy()
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.normal(size=(3, 5, 24)).astype(dtype))
    w = cp.asarray(rng.normal(size=(37, 24)).astype(dtype))
    a, b = Tensor(x), Tensor(w)
    out = Einsum("...e,ve->...v")(a, b)
    assert kernels.gemm_enabled(x.reshape(15, 24), w.T)  # F-contiguous: read as a transpose
    tol = 1e-5 if dtype == "float32" else 2e-2
    reference = cp.asnumpy(x.astype(np.float32)) @ cp.asnumpy(w.astype(np.float32)).T
    np.testing.assert_allclose(cp.asnumpy(out.array).astype(np.float32), reference, rtol=tol,
                               atol=tol)  # fmt: skip
    out.backward(cp.ones(out.shape, dtype=dtype))
    ones = np.ones((3, 5, 37), dtype=np.float32)
    dx = ones @ cp.asnumpy(w.astype(np.float32))
    np.testing.assert_allclose(cp.asnumpy(a.grad.array).astype(np.float32), dx, rtol=tol,
                               atol=tol)  # fmt: skip
    np.testing.assert_allclose(
        cp.asnumpy(b.grad.array).astype(np.float32),
        ones.reshape(15, 37).T @ cp.asnumpy(x.astype(np.float32)).reshape(15, 24),
        rtol=tol, atol=tol,
    )  # fmt: skip


@gpu
def test_a_trainer_with_cuda_graph_matches_one_without():
    """gpt_trainer's whole step (schedule, clipping, batches arriving as GPU Tensors)."""
    tokens = np.random.default_rng(0).integers(0, 61, 4000)
    config = GPTConfig(**SMALL, device="gpu", steps=8, warmup_steps=3, eval_interval=100)
    losses = []
    for cuda_graph in (False, True):
        manual_seed(0)
        world = distributed.init(gpu=True)  # a world of one, as train_smol_gpt.py makes
        trainer = gpt_trainer(config, tokens, world=world, cuda_graph=cuda_graph)
        losses.append([trainer.train_step().settle().loss for _ in range(8)])
    assert trainer._captured.captured
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


@gpu
@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_a_llama_replays_like_its_eager_steps(mode):
    """RoPE, SwiGLU, RMSNorm and grouped key/value heads under the graph."""
    cp = backend.cupy()
    batches = _batches(cp, 6)
    results = []
    for captured in (False, True):
        model = _model(arch="llama", n_kv_heads=1)
        optimiser, policy = AdamW(learning_rate=3e-3, weight_decay=0.1), Precision(mode)
        step_fn = _stepper(captured, model, optimiser, policy, max_norm=1.0)
        results.append(_run(step_fn, model, optimiser, batches, policy, [3e-3] * 6, 1))
    (eager_losses, _, eager), (graph_losses, _, graph) = results
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-4, atol=1e-4, err_msg=name)
