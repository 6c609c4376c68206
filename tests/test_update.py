"""The optimiser update (tricycle/update.py) without a precision policy, and a CPU training
step that runs nothing of capture or of the deferred checks.

``update(optimiser, parameters, max_norm, scaler)`` is what ``Precision.step`` did: the
numbers must be the same, bit for bit, with and without a scaler, clipping or not, with a
fused-update optimiser (AdamW) and one without (SGD), and on a skipped step.
"""

import sys

import numpy as np
import pytest

from tests.test_precision import _loss, _model_and_data
from tricycle import dispatch, graph, precision
from tricycle.apps.cuda_graph import CapturedStep
from tricycle.apps.step import train_step
from tricycle.backends.cuda import capture, deferred
from tricycle.clipping import clip_factor, clip_multiplier, grad_norm
from tricycle.grad_scaler import GradScaler
from tricycle.layers import Dense, Embedding, Sequential
from tricycle.optimisers import SGD, AdamW
from tricycle.precision import Precision
from tricycle.tensor import Tensor
from tricycle.update import StepResult, update


def _by_hand(optimiser, params, max_norm, scaler):
    """The update spelled out from its pieces, as ``Precision.step`` computed it on the CPU:
    the unscaled norm, the clipping factor and the unscaling folded into one multiplier for
    ``optimiser.update``, no update on a non-finite norm, the scaler told, gradients zeroed."""
    if scaler is None and max_norm <= 0:
        optimiser.update(params)
        norm, skipped = None, False
    else:
        inv_scale = 1.0 if scaler is None else 1.0 / scaler.scale
        norm = grad_norm(params) * inv_scale
        skipped = not np.isfinite(norm)
        if not skipped:
            clip = (clip_factor(norm, max_norm) or 1.0) if max_norm > 0 else 1.0
            multiplier = inv_scale * clip
            optimiser.update(params, grad_multiplier=None if multiplier == 1.0 else multiplier)
        if scaler is not None:
            scaler.update(np.asarray(skipped))
    for _, p in params:
        p.grad = None
    return StepResult(norm, skipped)


def _run(mode, make_optimiser, max_norm, how, steps=4):
    """``steps`` updates of a small model, ``how`` ("update", "policy": ``Precision.step``,
    "by hand"): (norms, skipped, parameters, scaler state)."""
    x, labels, params = _model_and_data()
    policy = Precision(mode, init_scale=2.0**10) if mode == "fp16" else Precision(mode)
    optimiser = make_optimiser()
    norms, skips = [], []
    for _ in range(steps):
        optimiser.step()
        policy.backward(_loss(policy, x, labels, params))
        if how == "policy":
            result = policy.step(optimiser, params, max_norm=max_norm)
        elif how == "update":
            result = update(optimiser, params, max_norm=max_norm, scaler=policy.scaler)
        else:
            result = _by_hand(optimiser, params, max_norm, policy.scaler)
        assert isinstance(result, StepResult)
        assert all(p.grad is None for _, p in params)  # zeroed either way
        norms.append(result.norm)
        skips.append(result.skipped)
    scaler = None if policy.scaler is None else policy.scaler.state_dict()
    return norms, skips, [p.array.copy() for _, p in params], scaler


@pytest.mark.parametrize("mode", ["fp32", "fp16"])
@pytest.mark.parametrize("max_norm", [0.0, 0.05])
@pytest.mark.parametrize(
    "make_optimiser", [lambda: AdamW(learning_rate=1e-2), lambda: SGD(0.1)], ids=["adamw", "sgd"]
)
def test_update_alone_is_the_policys_step_bit_for_bit(mode, max_norm, make_optimiser):
    """``update`` with the policy's scaler, ``Precision.step`` and the update by hand: the
    same norms, skips, parameters and scaler state, bit for bit."""
    ours = _run(mode, make_optimiser, max_norm, "update")
    for how in ("policy", "by hand"):
        theirs = _run(mode, make_optimiser, max_norm, how)
        assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3] == theirs[3], how
        for a, b in zip(ours[2], theirs[2]):
            np.testing.assert_array_equal(a, b, err_msg=how)
    if max_norm or mode == "fp16":  # the norm was needed: reported, unscaled, and it clips
        assert all(norm > 0 for norm in ours[0])
        if max_norm:
            assert min(ours[0]) > max_norm
    else:
        assert ours[0] == [None] * 4
    assert ours[1] == [False] * 4
    before = _model_and_data()[2]
    assert not np.array_equal(ours[2][0], before[0][1].array)  # it did update


def test_update_unscales_and_clips_as_the_formula_says():
    """One SGD step: w - lr * g * min(1, c / (||g / s|| + 1e-6)) / s, g the scaled gradient."""
    _, _, params = _model_and_data()
    scaler = GradScaler(init_scale=8.0)
    rng = np.random.default_rng(1)
    before = {n: p.array.copy() for n, p in params}
    grads = {n: (8.0 * rng.normal(size=p.shape)).astype(np.float32) for n, p in params}
    for n, p in params:
        p.grad = Tensor(grads[n].copy(), requires_grad=False)
    norm, skipped = update(SGD(learning_rate=0.1), params, max_norm=0.5, scaler=scaler)
    expected_norm = np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
    assert skipped is False and norm == pytest.approx(expected_norm / 8.0, rel=1e-6)
    multiplier = 0.5 / (norm + 1e-6) / 8.0
    for n, p in params:
        np.testing.assert_allclose(p.array, before[n] - 0.1 * grads[n] * multiplier, rtol=1e-6)
    assert scaler.steps == 1 and scaler.scale == 8.0 and scaler.skipped_steps == 0


def test_an_inf_gradient_skips_the_update_and_backs_the_scale_off():
    results = []
    for how in ("update", "policy", "by hand"):
        _, _, params = _model_and_data()
        policy = Precision("fp16", init_scale=2.0**12)
        before = [p.array.copy() for _, p in params]
        for _, p in params:
            grad = np.ones(p.shape, dtype=np.float32)
            grad[0, 0] = np.inf
            p.grad = Tensor(grad, requires_grad=False)
        optimiser = AdamW(learning_rate=1e-2)
        if how == "policy":
            norm, skipped = policy.step(optimiser, params, max_norm=1.0)
        elif how == "update":
            norm, skipped = update(optimiser, params, max_norm=1.0, scaler=policy.scaler)
        else:
            norm, skipped = _by_hand(optimiser, params, 1.0, policy.scaler)
        assert skipped is True and norm == np.inf
        for (_, p), old in zip(params, before):
            np.testing.assert_array_equal(p.array, old)  # not updated
            assert p.grad is None
        assert optimiser.state == {}  # no moment was made: the optimiser never ran
        results.append(policy.scaler.state_dict())
    assert results[0] == results[1] == results[2]
    assert results[0] == {"scale": 2.0**11, "good_steps": 0, "skipped_steps": 1, "steps": 1}


def test_no_gradients_no_update():
    _, _, params = _model_and_data()
    assert update(SGD(0.1), params, max_norm=1.0, scaler=GradScaler()) == (None, False)


def test_a_negative_threshold_is_refused():
    with pytest.raises(ValueError, match="update: max_norm"):
        update(SGD(0.1), [], max_norm=-1.0)


def test_the_old_names_are_the_new_objects():
    """Every import of ``tricycle.precision`` keeps working: the moved names are the same."""
    assert precision.GradScaler is GradScaler and precision.StepResult is StepResult
    assert precision.clip_multiplier is clip_multiplier


# ====================================================================== a CPU step
def _gpt_like(vocab=11, width=8, seed=0):
    from tricycle.random import manual_seed

    manual_seed(seed)
    return Sequential(Embedding(vocab, width), Dense(width, vocab))


def _batches(vocab=11, n=3, seed=2):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, vocab, (2, 5)), rng.integers(0, vocab, (2, 5))) for _ in range(n)]


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"a CPU step called {name}")

    return refused


def test_a_cpu_step_runs_nothing_of_capture_or_of_the_deferred_checks(monkeypatch):
    """Not a function of the CUDA backend runs in a CPU step (capture and the deferred checks
    live there), and its ids and labels are checked by the reference, ``tricycle.ranges``."""
    monkeypatch.setattr(graph, "read_back_hooks", [])  # no check deferred in this process
    for name in ("every_step", "on_replay", "recording", "capturing", "keep", "refuse"):
        monkeypatch.setattr(capture, name, _refuse(f"capture.{name}"))
    for name in ("check_range", "raise_pending_errors", "checks_pending"):
        monkeypatch.setattr(deferred, name, _refuse(f"deferred.{name}"))
    model, optimiser = _gpt_like(), AdamW(learning_rate=1e-2)
    policy = Precision("fp16", init_scale=2.0**8)
    batches = iter(_batches())
    called = set()  # the files of every Python function the steps call

    def profile(frame, event, arg):
        if event == "call":
            called.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        outs = [train_step(model, optimiser, batches, policy, max_norm=1.0).settle(step)
                for step in range(3)]  # fmt: skip
    finally:
        sys.setprofile(None)
    for out in outs:
        assert np.isfinite(out.loss) and np.isfinite(out.grad_norm) and out.skipped is False
    assert optimiser.step_count == 3 and policy.scaler.steps == 3
    cuda = sorted(name for name in called if "tricycle/backends/cuda/" in name)
    assert not cuda, cuda
    assert any(name.endswith("tricycle/ranges.py") for name in called)


def test_a_deferred_check_still_raises_when_a_cpu_step_is_settled():
    """With the CUDA backend's check as the CPU's "check_range" setting too, under
    ``defer_checks(True)``, the CPU defers as a GPU does: a label out of range is raised by
    ``settle`` (through the read-back hooks), not taken for a divergence."""
    model, optimiser = _gpt_like(), AdamW(learning_rate=1e-2)
    [(x, y)] = _batches(n=1)
    y[0, 0] = -3  # numpy wraps a negative row index: the step computes, with a wrong label
    dispatch.add("check_range", "cpu", deferred.check_range, dtypes=())
    try:
        with deferred.defer_checks(True):
            out = train_step(model, optimiser, iter([(x, y)]))
    finally:
        dispatch.remove("check_range", "cpu")
    assert deferred.checks_pending()
    with pytest.raises(IndexError, match=r"CrossEntropy: labels must lie in \[0, 11\)"):
        out.settle(0)
    assert not deferred.checks_pending()
    assert np.isfinite(train_step(model, optimiser, iter(_batches(n=1))).settle(1).loss)


def test_a_captured_step_redoes_the_counts_first_and_last():
    """What ``CapturedStep`` records around ``train_step`` (here on the CPU, into a recording
    of the host hooks alone): the optimiser's ``step()`` first in every replay, as the step
    does it first, and the loss scaler's count last; the eager run counted each once."""
    step = object.__new__(CapturedStep)  # its constructor wants a GPU; the hooks do not
    step.model, step.optimiser = _gpt_like(), AdamW(learning_rate=1e-2)
    step.policy = Precision("fp16", init_scale=2.0**8)
    step.options = dict(loss_fn=None, accumulation_steps=1, max_norm=1.0, data_parallel=None)
    step._inputs = _batches(n=1)
    recording = capture.Recording()
    capture.start(recording)
    try:
        step._recorded_step()
    finally:
        capture.stop()
    assert [sink for _, sink in recording.refreshes] == [None, None]
    assert [fn for fn, _ in recording.refreshes] == [
        step.optimiser.step,
        step.policy.scaler.count_update,
    ]
    assert step.optimiser.step_count == 1 and step.policy.scaler.steps == 1
    recording.refresh()  # what a replay redoes on the host
    assert step.optimiser.step_count == 2 and step.policy.scaler.steps == 2
