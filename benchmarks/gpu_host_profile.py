"""Where a GPU training step spends its host (Python) time: cProfile over a few steps.

    python benchmarks/gpu_host_profile.py bf16      # or fp32, tf32, fp16

The GPT of ``benchmarks/gpt_train.py --device gpu``. At this size on an H100 a step is bound
by host time (``benchmarks/cuda_graph_probe.py`` compares host and GPU time), so the host
functions with the most time are where speed is won. Steps run without synchronisation.
"""

import cProfile
import pstats
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from gpt_train import GPU_CONFIG, batches  # noqa: E402

from train_smol_gpt import make_precision, training_step  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402


def main(precision: str = "bf16", steps: int = 10) -> None:
    cp = cupy()
    config = GPTConfig(**GPU_CONFIG, activation_fn="gelu_tanh", grad_clip=1.0)
    data = batches(config, steps + 3)
    np.random.seed(0)
    model = GPT(config).to_gpu()
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    policy = make_precision(precision, "gpu")
    on_gpu = iter(zip(cp.asarray(data[0]), cp.asarray(data[1])))
    profile = cProfile.Profile()
    with policy:
        for step in range(steps + 3):
            if step == 3:
                cp.cuda.Device().synchronize()
                profile.enable()
            training_step(model, optimiser, CrossEntropy(), on_gpu, config, step, policy, False)
        profile.disable()
        cp.cuda.Device().synchronize()
    stats = pstats.Stats(profile)
    print(f"{precision}: host seconds over {steps} steps, by own time")
    stats.sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main(*sys.argv[1:2])
