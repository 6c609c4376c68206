"""check_finite: one global norm clears a healthy model; a non-finite norm names the culprit,
or is cleared when it only overflowed float32. BatchLoss: the recorded forward of evaluation
gives the eager losses."""

import numpy as np
import pytest

from tricycle.apps.step import TrainingDiverged
from tricycle.apps.validation import check_finite
from tricycle.layers import Dense, Sequential
from tricycle.optimisers import AdamW, global_norm


def model_and_optimiser():
    model = Sequential(Dense(3, 4), Dense(4, 2))
    optimiser = AdamW(learning_rate=1e-3)
    for p in model.parameters():
        optimiser.state[id(p)] = {"exp_avg": np.zeros_like(p.array), "step": 1}
    return model, optimiser


def test_a_finite_model_passes():
    """The global norm of the parameters and slots is finite (float64's norm of the same
    arrays): the fast path clears the model, and leaves every array as it was."""
    model, optimiser = model_and_optimiser()
    arrays = [p.array for p in model.parameters()]
    arrays += [s["exp_avg"] for s in optimiser.state.values()]
    before = [a.copy() for a in arrays]
    expected = np.sqrt(sum((a.astype(np.float64) ** 2).sum() for a in arrays))
    assert expected > 0
    assert float(global_norm(arrays)) == pytest.approx(expected, rel=1e-6)
    assert check_finite(model, optimiser) is None
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_parameter_is_named(bad):
    model, _ = model_and_optimiser()
    name, p = list(model.named_parameters())[1]
    p.array[0, ...] = bad
    with pytest.raises(TrainingDiverged, match=f"parameter {name} holds inf or NaN"):
        check_finite(model)


def test_a_non_finite_optimiser_slot_is_named():
    model, optimiser = model_and_optimiser()
    key = next(iter(optimiser.state))
    optimiser.state[key]["exp_avg"][...] = np.nan
    with pytest.raises(TrainingDiverged, match=f"optimiser exp_avg of {key} holds inf"):
        check_finite(model, optimiser)


def test_huge_finite_values_overflow_the_norm_but_pass():
    model, _ = model_and_optimiser()
    for p in model.parameters():
        p.array[...] = np.float32(3e38)  # the sum of squares is inf in float32
    arrays = [p.array for p in model.parameters()]
    assert all(a.dtype == np.float32 for a in arrays)
    assert float(global_norm(arrays)) == np.inf  # so the per-array fallback runs
    assert check_finite(model) is None  # and clears the overflow
    for a in arrays:
        np.testing.assert_array_equal(a, np.float32(3e38))  # unchanged


# ------------------------------------------------------------------ the recorded forward
# on a GPU, a head size the attention kernels have (CuPy's own products cannot be recorded)
GPU_CONFIG = dict(embedding_dim=64, n_heads=2, n_layers=2, context_window=16, vocab_size=61,
                  dropout=0.0, activation_fn="gelu_tanh")  # fmt: skip


def _gpt_and_data(config=None, batch_size=4):
    from tests.distributed_worker import CONFIG
    from tricycle.configs import DebugConfig
    from tricycle.dataset import CausalLMDataset
    from tricycle.models import GPT
    from tricycle.random import manual_seed

    config = CONFIG if config is None else config
    manual_seed(0)
    model = GPT(DebugConfig(**config))
    ids = np.random.default_rng(0).integers(0, config["vocab_size"], size=2000)
    data = CausalLMDataset(ids, config["vocab_size"], batch_size, config["context_window"],
                           seed=1).batch()  # fmt: skip
    return model, data


def _losses(model, data, batch_loss, n_batches=5):
    from tricycle.apps.validation import evaluate

    return [evaluate(model, data, n_batches, batch_loss=batch_loss, protocol=protocol)
            for protocol in ("sequential", "random", "sequential")]  # fmt: skip


def test_a_recording_batch_loss_runs_eagerly_on_the_cpu():
    from tricycle.apps.validation import BatchLoss
    from tricycle.loss import CrossEntropy
    from tricycle.precision import Precision

    model, data = _gpt_and_data()
    eager = _losses(model, data.shuffle(1), None)
    recording = BatchLoss(model, Precision(), CrossEntropy(), record=True)
    assert _losses(model, data.shuffle(1), recording) == eager
    assert recording.record is False  # no graph runner on the CPU


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_the_recorded_forward_gives_the_eager_losses_and_follows_the_parameters(mode):
    """On a GPU the batches of one shape replay one recorded forward: the same losses as the
    eager forward, bit for bit; parameters updated in place are seen; a last partial batch
    runs eagerly; parameters replaced elsewhere are recorded anew."""
    from tricycle import backend

    if not backend.cupy_available():
        pytest.skip("no CUDA GPU")
    from tricycle.apps.validation import BatchLoss, evaluate
    from tricycle.loss import CrossEntropy
    from tricycle.precision import Precision

    model, data = _gpt_and_data(GPU_CONFIG)
    model.to_gpu(0)
    data = data.to_gpu(0)
    policy = Precision(mode)
    recorded = BatchLoss(model, policy, CrossEntropy(), record=True)
    with policy:
        for _ in range(2):
            eager = _losses(model, data.shuffle(2), BatchLoss(model, policy, CrossEntropy()))
            assert _losses(model, data.shuffle(2), recorded) == eager
            assert recorded._run is not None and recorded._run.graph is not None
            for p in model.parameters():  # in place, as the optimiser updates them
                p.array *= 0.9
        n = len(data)  # every window: the last batch is a partial one, run eagerly
        whole = [evaluate(model, data, n, policy, batch_loss=b)
                 for b in (BatchLoss(model, policy, CrossEntropy()), recorded)]  # fmt: skip
        assert whole[0] == whole[1]
        graph = recorded._run
        for p in model.parameters():  # replaced, as load_state_dict or to_gpu may
            p.array = p.array.copy()
        assert _losses(model, data.shuffle(3), recorded) == _losses(
            model, data.shuffle(3), BatchLoss(model, policy, CrossEntropy())
        )
        assert recorded._run is not graph
