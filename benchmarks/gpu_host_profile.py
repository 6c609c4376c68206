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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


from gpt_train import gpu_setup  # noqa: E402

from train_smol_gpt import training_step  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402


def main(precision: str = "bf16", steps: int = 10) -> None:
    cp = cupy()
    config, model, optimiser, policy, inputs, targets = gpu_setup(precision, steps + 3)
    on_gpu = iter(zip(inputs, targets))
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
