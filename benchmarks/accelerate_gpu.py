"""The Accelerator loop against the training script's step on a GPU: the same losses, and
its tokens/s, eager and captured as a CUDA graph. One call:

    python benchmarks/accelerate_gpu.py          # GPT-2 124M, bf16, accumulation 4, 1 GPU
    tricycle-run -n 2 benchmarks/accelerate_gpu.py       # 2 GPUs (NCCL_NVLS_ENABLE=0 set)

1. **Losses.** ``--check-steps`` steps from the same weights on the same batches: the
   training script's step (``train_step`` through ``Trainer``) and the issue's loop
   (``backward``, ``clip_grad_norm_``, ``optimizer.step()``), both in --precision with
   accumulation --accumulation; prints both and their largest relative difference.
2. **Speed.** tokens/s over --steps steps after --warmup (the GPU synchronised at both ends,
   every step's loss read back, as the script's log does), in four settings: the script
   eager and captured (``Trainer(..., cuda_graph=...)``), the Accelerator loop eager, and
   ``Accelerator.captured_step``; prints the ratios Accelerator / script.

Every rank has --batch-size sequences per micro-batch; the loader is a ``tricycle.data
.DataLoader`` of the script's own windows, prepared with ``split_batches`` (each rank its
rows of the global batch, as the script), its batches copied through pinned memory.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tricycle import Accelerator  # noqa: E402
from tricycle.apps.training import Trainer  # noqa: E402
from tricycle.backend import cupy, cupy_available  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.data import DataLoader  # noqa: E402
from tricycle.dataset import CausalLMDataset  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.parallel import distributed  # noqa: E402
from tricycle.precision import Precision  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

GPT2 = dict(embedding_dim=768, n_heads=12, n_layers=12, context_window=1024, vocab_size=50304,
            activation_fn="gelu_tanh", dropout=0.0)  # fmt: skip
SMALL = dict(embedding_dim=384, n_heads=6, n_layers=6, context_window=256, vocab_size=1024,
             activation_fn="gelu_tanh", dropout=0.0)  # fmt: skip
TINY = dict(embedding_dim=32, n_heads=2, n_layers=2, context_window=16, vocab_size=64,
            dropout=0.0)  # fmt: skip
MODELS = {"gpt2": GPT2, "small": SMALL, "tiny": TINY}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=list(MODELS), default="gpt2")
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                        help="cpu: a smoke test of this script (fp32/fp16, no graphs)")  # fmt: skip
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--accumulation", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per micro-batch")
    parser.add_argument("--check-steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    return parser.parse_args()


class Setup:
    """The model, optimiser and data of one run, from seed 0 (the same on every call)."""

    def __init__(self, args, world):
        self.args, self.world = args, world
        self.config = GPTConfig(**MODELS[args.model])
        self.tokens = np.random.default_rng(0).integers(0, self.config.vocab_size, 2_000_000)
        self.global_batch = args.batch_size * world.world_size

    def model(self):
        manual_seed(0)
        return GPT(self.config), AdamW(learning_rate=3e-4, weight_decay=0.1)

    def script_data(self):
        """The script's windows: this rank's rows of each global batch, on the GPU."""
        c = self.config
        windows = CausalLMDataset(self.tokens, c.vocab_size, self.args.batch_size,
                                  c.context_window, seed=1, rank=self.world.rank,
                                  world_size=self.world.world_size).batch()  # fmt: skip
        return windows if self.world.device is None else windows.to_gpu(self.world.device)

    def loader(self):
        """The same windows through a DataLoader (split by rows when prepared)."""
        c = self.config
        windows = CausalLMDataset(self.tokens, c.vocab_size, self.global_batch, c.context_window,
                                  seed=1).batch()  # fmt: skip
        return DataLoader(windows, batch_size=None)

    def trainer(self, captured: bool):
        model, optimiser = self.model()
        if self.world.device is not None:
            model.to_gpu(self.world.device)
        self.world.broadcast_parameters(model)
        return Trainer(model, optimiser, self.script_data(), policy=Precision(self.args.precision),
                       accumulation_steps=self.args.accumulation, max_norm=1.0,
                       data_parallel=distributed.DataParallel(model, self.world),
                       cuda_graph=captured)  # fmt: skip

    def accelerated(self):
        """(accelerator, model, optimizer, loader): the issue's prepare."""
        accelerator = Accelerator(
            gradient_accumulation_steps=self.args.accumulation,
            mixed_precision=self.args.precision,
            split_batches=True,
            device=self.args.device,
        )
        model, optimiser = self.model()
        return (accelerator, *accelerator.prepare(model, optimiser, self.loader()))


def loop_steps(accelerator, model, optimizer, batches, n: int) -> list[float]:
    """``n`` steps of the issue's loop; each step's loss (mean over micro-batches, ranks)."""
    loss_fn, losses, micro = CrossEntropy(), [], []
    while len(losses) < n:
        inputs, targets = next(batches)
        loss = loss_fn(targets, model(inputs))
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(1.0)
        optimizer.step()
        optimizer.zero_grad()
        micro.append(loss.array)
        if accelerator.sync_grad:
            losses.append(accelerator.gather_for_metrics(sum(micro) / len(micro)))
            micro = []
    return losses


def synchronize() -> None:
    if cupy_available():
        cupy().cuda.Device().synchronize()


def free_memory() -> None:
    if cupy_available():
        cupy().get_default_memory_pool().free_all_blocks()


def timed(run_steps, args, tokens_per_step: int) -> float:
    """tokens/s of ``run_steps(n)`` over --steps steps after --warmup."""
    run_steps(args.warmup)
    synchronize()
    start = time.perf_counter()
    run_steps(args.steps)
    synchronize()
    return tokens_per_step * args.steps / (time.perf_counter() - start)


def main() -> None:
    args = parse_args()
    world = distributed.init(gpu=args.device == "gpu")
    setup = Setup(args, world)
    say = print if world.is_main else (lambda *a, **k: None)
    tokens_per_step = setup.global_batch * setup.config.context_window * args.accumulation
    say(f"{args.model}, {args.precision}, accumulation {args.accumulation}, "
        f"{world.world_size} process(es) on the {args.device}, "
        f"{tokens_per_step} tokens a step")  # fmt: skip

    # 1. losses
    trainer = setup.trainer(captured=False)
    with trainer.policy:
        script = [trainer.train_step().settle().loss for _ in range(args.check_steps)]
    del trainer
    accelerator, model, optimizer, loader = setup.accelerated()
    loop = loop_steps(accelerator, model, optimizer, iter(loader), args.check_steps)
    worst = max(abs(a - b) / abs(b) for a, b in zip(loop, script))
    say("losses, script:     " + " ".join(f"{v:.6f}" for v in script))
    say("losses, Accelerator: " + " ".join(f"{v:.6f}" for v in loop))
    say(f"largest relative difference {worst:.2e} ({'ok' if worst < 1e-2 else 'DIFFERENT'})")
    del accelerator, model, optimizer, loader

    # 2. speed
    rates = {}
    for captured in (False, True) if args.device == "gpu" else (False,):
        trainer = setup.trainer(captured)

        def script_steps(n, trainer=trainer):
            for _ in range(n):
                trainer.train_step().settle()

        with trainer.policy:
            rates[f"script {'captured' if captured else 'eager'}"] = timed(
                script_steps, args, tokens_per_step
            )
        del trainer, script_steps
        free_memory()
        accelerator, model, optimizer, loader = setup.accelerated()
        batches = iter(loader)
        if captured:
            step = accelerator.captured_step(max_norm=1.0)

            def accelerator_steps(n, step=step, batches=batches):
                for _ in range(n):
                    step(batches).settle()

        else:

            def accelerator_steps(n, parts=(accelerator, model, optimizer, batches)):
                loop_steps(*parts, n)

        rates[f"Accelerator {'captured' if captured else 'eager'}"] = timed(
            accelerator_steps, args, tokens_per_step
        )
        if captured and step.failure:
            say(f"(the Accelerator's step was not captured: {step.failure})")
        del accelerator, model, optimizer, loader, batches, accelerator_steps
        free_memory()
    for name, rate in rates.items():
        say(f"{name:22} {rate:10.0f} tokens/s")
    for mode in ("eager", "captured") if args.device == "gpu" else ("eager",):
        ratio = rates[f"Accelerator {mode}"] / rates[f"script {mode}"]
        say(f"Accelerator / script, {mode}: {ratio:.3f} (target >= 0.90)")
    world.finalize()


if __name__ == "__main__":
    main()
