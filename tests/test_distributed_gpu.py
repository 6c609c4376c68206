"""Data parallelism's GPU paths on one GPU: a world of one reducing through NCCL anyway
(``reduce_alone``), so the code that two GPUs run (buckets forked onto NCCL's stream during
backward and joined before the update, ZeRO-1's all-gathers, both recorded in the captured
step) runs here and is compared with the eager step and with plain AdamW."""

import numpy as np
import pytest

from tricycle import backend
from tricycle.apps.cuda_graph import CapturedStep
from tricycle.apps.step import train_step
from tricycle.configs import GPTConfig
from tricycle.models import build_model
from tricycle.optimisers import AdamW
from tricycle.parallel import distributed
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.precision import Precision
from tricycle.random import manual_seed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU"),
]

SMALL = dict(embedding_dim=64, n_heads=2, n_layers=2, context_window=16, vocab_size=61,
             batch_size=4, activation_fn="gelu_tanh")  # fmt: skip
STEPS = 6


def _world():
    if backend.nccl() is None:
        pytest.skip("no NCCL")
    return distributed.init(gpu=True)


def test_buckets_on_a_gpu_default_to_ddps_25_mib():
    model = build_model(GPTConfig(**SMALL))
    world = _world()
    model.to_gpu(world.device)
    reducer = distributed.DataParallel(model, world, reduce_alone=True)
    assert reducer.sizes == (1 << 20, 25 << 20)  # (first, the others); 4 MiB on the host


def _losses_and_parameters(world, captured: bool, zero: bool, mode: str):
    cp = backend.cupy()
    manual_seed(0)
    model = build_model(GPTConfig(**SMALL))
    model.to_gpu(world.device)
    reducer = distributed.DataParallel(model, world, bucket_bytes=16 << 10,
                                       first_bucket_bytes=4 << 10, reduce_alone=True)  # fmt: skip
    optimiser = AdamW(learning_rate=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    if zero:
        optimiser = ZeroRedundancyOptimiser(optimiser, model, world)
    policy = Precision(mode)
    options = dict(max_norm=0.5, data_parallel=reducer)
    if captured:
        step = CapturedStep(model, optimiser, policy, warmup_steps=2, **options)
    else:
        def step(batches):
            return train_step(model, optimiser, batches, policy, **options)
    rng = np.random.default_rng(1)
    losses = []
    with policy:
        for _ in range(STEPS):
            batch = [(cp.asarray(rng.integers(0, 61, (4, 16))),
                      cp.asarray(rng.integers(0, 61, (4, 16))))]  # fmt: skip
            losses.append(step(iter(batch)).settle().loss)
    if captured:
        assert step.captured and step.eager_steps == 2, step.failure
    assert len(reducer.buckets) > 2  # several buckets, each its own all-reduce
    params = {n: cp.asnumpy(p.array) for n, p in model.named_parameters()}
    return losses, params


@pytest.mark.parametrize("mode", ["fp32", "bf16"])
@pytest.mark.parametrize("zero", [False, True], ids=["plain", "zero"])
def test_the_captured_data_parallel_step_replays_the_eager_one(mode, zero):
    world = _world()
    eager_losses, eager = _losses_and_parameters(world, False, zero, mode)
    graph_losses, graph = _losses_and_parameters(world, True, zero, mode)
    assert world._gpu.captured  # NCCL's collectives were recorded in the graph
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for name in eager:
        np.testing.assert_allclose(graph[name], eager[name], rtol=1e-4, atol=1e-4, err_msg=name)


def test_zero_steps_as_plain_data_parallelism_captured():
    world = _world()
    plain_losses, plain = _losses_and_parameters(world, True, False, "fp32")
    zero_losses, zero = _losses_and_parameters(world, True, True, "fp32")
    np.testing.assert_allclose(zero_losses, plain_losses, rtol=1e-6)
    for name in plain:
        np.testing.assert_allclose(zero[name], plain[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_world_of_one_starts_nccl_only_for_a_collective_of_gpu_arrays():
    """NCCL's start costs most of a second that a one-GPU run has no use for: moving the
    model, broadcasting it and averaging a loss start none; the first collective of GPU
    arrays (``reduce_alone``, ZeRO-1) starts it, and the sum is the array itself."""
    _world()  # skips without NCCL
    world = distributed.World(None, 600.0)  # a world of its own: NCCL not started by others
    world.start_gpu()
    cp = backend.cupy()
    model = build_model(GPTConfig(**SMALL))
    model.to_gpu(world.device)
    before = {n: cp.asnumpy(p.array) for n, p in model.named_parameters()}
    world.broadcast_parameters(model)
    loss = world.all_reduce(cp.asarray(2.5, dtype=cp.float32))
    assert world._gpu is None
    for name, param in model.named_parameters():
        np.testing.assert_array_equal(cp.asnumpy(param.array), before[name], err_msg=name)
    assert float(loss) == 2.5
    x = cp.arange(4, dtype=cp.float32)
    world.wait(world.start_all_reduce(x), "an all-reduce")
    assert world._gpu is not None
    np.testing.assert_array_equal(cp.asnumpy(x), [0, 1, 2, 3])
