"""Where a CPU training step goes: forward, backward, gradient norm and AdamW, tricycle
against PyTorch eager, side by side.

    python benchmarks/cpu_phases.py                 # gpt_train.py's CPU config, 30 steps each
    python benchmarks/cpu_phases.py --steps 50 --rounds 3 --threads 2

Both frameworks train the CPU GPT of gpt_train.py (``harness.CPU_GPT``: B=8, T=128, E=256,
4 heads, 4 layers, V=1024, gelu_tanh, float32) with AdamW and clipping at 1.0, on the same
random batches, in this one process; rounds alternate between them. tricycle's step is
``Precision("fp32").step``'s work split into its phases (the norm, then AdamW with the
clipping folded in); PyTorch's is ``torch_gpt.py``'s nanoGPT. Each phase is timed between
``perf_counter`` calls (the CPU has no asynchronous work) and the table shows each phase's
median over the timed steps of the best round (by step time), and the ratio ours / torch.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import CPU_GPT, batches, torch_or_none  # noqa: E402

from tricycle.apps.cpu import set_cpu_threads, tune_cpu_allocator  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW, clip_factor, grad_norm  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

PHASES = ("forward", "backward", "grad norm", "AdamW", "step")


def record(times: dict[str, list[float]], marks) -> None:
    """Add one step's phases to ``times``, from the ``perf_counter`` marks between them."""
    durations = [end - start for start, end in zip(marks, marks[1:])] + [marks[-1] - marks[0]]
    for phase, seconds in zip(PHASES, durations):
        times[phase].append(seconds)


def tricycle_steps(config: GPTConfig, data, warmup: int) -> dict[str, list[float]]:
    """Per-phase seconds of tricycle's training steps."""
    manual_seed(0)
    model, loss_fn = GPT(config), CrossEntropy()
    optimiser = AdamW(learning_rate=1e-3, betas=(config.beta1, config.beta2), weight_decay=0.1)
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for step, (inputs, targets) in enumerate(zip(*data)):
        t0 = time.perf_counter()
        optimiser.step()
        loss = loss_fn(targets, model(inputs))
        t1 = time.perf_counter()
        loss.backward()
        float(loss)
        t2 = time.perf_counter()
        named = model.named_parameters()
        norm = grad_norm(named)
        t3 = time.perf_counter()
        optimiser.update(named, grad_multiplier=clip_factor(norm, config.grad_clip))
        model.zero_grad()
        if step >= warmup:
            record(times, (t0, t1, t2, t3, time.perf_counter()))
    return times


def torch_steps(config: GPTConfig, data, warmup: int, threads: int, attention: str
                ) -> dict[str, list[float]]:  # fmt: skip
    """Per-phase seconds of nanoGPT's training steps in PyTorch (as gpt_train.py's worker)."""
    import torch  # noqa: PLC0415 - optional
    from torch_gpt import adamw, nano_gpt  # noqa: PLC0415

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nano_gpt(config, attention)
    optimiser = adamw(model, config, 1e-3)
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for step, (inputs, targets) in enumerate(zip(*data)):
        inputs, targets = torch.from_numpy(inputs), torch.from_numpy(targets)
        t0 = time.perf_counter()
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        t1 = time.perf_counter()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        loss.item()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        t3 = time.perf_counter()
        optimiser.step()
        if step >= warmup:
            record(times, (t0, t1, t2, t3, time.perf_counter()))
    return times


def medians_ms(times: dict[str, list[float]]) -> dict[str, float]:
    return {phase: 1e3 * statistics.median(values) for phase, values in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per framework")
    parser.add_argument("--threads", type=int, default=2, help="each framework's threads")
    parser.add_argument("--torch-attention", default="manual", choices=["manual", "sdpa"])
    args = parser.parse_args(argv)
    tune_cpu_allocator()
    set_cpu_threads(args.threads)
    config = GPTConfig(**CPU_GPT)
    data = batches(config, args.warmup + args.steps)
    runners = {"tricycle": tricycle_steps}
    if torch_or_none() is not None:
        runners["torch"] = torch_steps
    else:
        print("PyTorch is not installed: tricycle only")
    best: dict[str, dict[str, float]] = {}
    for round_ in range(args.rounds):
        order = list(runners) if round_ % 2 == 0 else list(runners)[::-1]
        for name in order:
            extra = (args.threads, args.torch_attention) if name == "torch" else ()
            result = medians_ms(runners[name](config, data, args.warmup, *extra))
            print(f"  round {round_ + 1} {name:9s} step {result['step']:7.1f} ms")
            if name not in best or result["step"] < best[name]["step"]:
                best[name] = result
    names = list(best)
    print(f"{'phase':10s}" + "".join(f"{name + ' ms':>14s}" for name in names)
          + ("   ours / torch" if len(names) == 2 else ""))  # fmt: skip
    for phase in PHASES:
        row = f"{phase:10s}" + "".join(f"{best[name][phase]:14.1f}" for name in names)
        if len(names) == 2:
            row += f"{best['tricycle'][phase] / best['torch'][phase]:15.2f}"
        print(row)


if __name__ == "__main__":
    main()
