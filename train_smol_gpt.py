"""Train a GPT language model, with validation, checkpoints and exact resumption.

    python train_smol_gpt.py                     # CPUConfig on Python's stdlib: minutes on a CPU
    python train_smol_gpt.py --config shakespeare-char --dataset shakespeare-char --device gpu
    python train_smol_gpt.py --dataset notes.txt --steps 2000
    python train_smol_gpt.py --out-dir runs/cpu --resume     # continue exactly where it stopped
    python train_smol_gpt.py --config shakespeare-char --dataset shakespeare-char --device gpu \
        --precision bf16 --max-seconds 300 --data-dir data    # time-boxed, offline text

Everything lands in --out-dir (default runs/<config>):

    model.pkl        the pickled GPT: `python inference.py runs/cpu/model.pkl`
    tokeniser.json   the tokeniser (inference.py finds it beside the model)
    checkpoint.npz   safe checkpoint (arrays + JSON, no code runs on load): parameters,
                     optimiser state, step, data-sampler and dropout RNG states
    config.json      the run's settings
    metrics.jsonl    one JSON line per step: step, loss, val_loss, lr, grad_norm, tokens_per_s,
                     wall_time (seconds of training, evaluation included), skipped_steps
    loss.png         the loss curves, if matplotlib is installed

A resumed run replays exactly on the CPU: its losses equal those of a run that was never
interrupted. On a GPU it replays the same batches and dropout masks, but kernels that add
with atomics make the sums differ in the last bits.
--precision picks the policy (tricycle/precision.py): fp32 (default), tf32 (GPU), fp16 (float16
forward from float32 master weights, dynamic loss scaling: a step whose gradients overflow is
skipped and the scale lowered; the count is in the progress bar and metrics), bf16 (GPU).
On a GPU the loss is read back every --log-interval steps only, so the host runs ahead of the
device; metrics.jsonl still has one line per step.

A NaN or infinite loss stops training with an error naming the step; the last checkpoint,
written before the divergence, is kept.
"""

import argparse
import ctypes
import ctypes.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

try:  # optional: lets --threads set the BLAS thread count after numpy has loaded
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

from tricycle.backend import cupy, cupy_available
from tricycle.checkpoint import (
    CheckpointError,
    atomic_write_text,
    load_state,
    save_pickle,
    save_state,
)
from tricycle.configs import CONFIGS, GPTConfig, get_config
from tricycle.dataset import CausalLMDataset
from tricycle.layers import Dropout
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import (
    AdamW,
    clip_factor,
    decay_all_matrices,
    decay_matrices,
    grad_norm,
)
from tricycle.precision import Precision
from tricycle.random import manual_seed
from tricycle.scheduler import CosineSchedule
from tricycle.tensor import no_grad
from tricycle_datasets import TextFile
from tricycle_datasets.python_code import PythonCode
from tricycle_datasets.shakespeare import Shakespeare, ShakespeareChar

DATASETS = ("python-code", "shakespeare", "shakespeare-char")
CHECKPOINT, MODEL, TOKENISER, METRICS = (
    "checkpoint.npz",
    "model.pkl",
    "tokeniser.json",
    "metrics.jsonl",
)


class TrainingDiverged(RuntimeError):
    """The loss (or gradient norm) stopped being a finite number."""


# ------------------------------------------------------------------ command line


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a GPT (see the module docstring for the files it writes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--config", default="cpu", choices=sorted(CONFIGS), help="base config")
    parser.add_argument(
        "--dataset",
        default="python-code",
        help=f"one of {', '.join(DATASETS)}, or the path of a UTF-8 .txt file",
    )
    add = parser.add_argument
    add("--steps", type=int, help="optimiser steps in total (config's if unset)")
    add("--batch-size", type=int, help="sequences per micro-batch")
    add("--gradient-accumulation-steps", type=int, help="micro-batches per optimiser step")
    add("--context-window", type=int, help="tokens per sequence")
    add("--vocab-size", type=int, help="BPE vocabulary size")
    add("--device", choices=["cpu", "gpu"], help="where to train (config's if unset)")
    add("--lr", type=float, help="peak learning rate")
    add("--min-lr", type=float, help="final learning rate of the cosine schedule")
    add("--warmup", type=int, help="linear warm-up steps")
    add("--weight-decay", type=float, help="AdamW weight decay")
    add("--grad-clip", type=float, help="clip gradients to this global norm (0: off)")
    add("--dropout", type=float, help="dropout probability")
    add("--eval-interval", type=int, help="validate (and checkpoint) every this many steps")
    add("--eval-steps", type=int, help="validation batches per evaluation")
    add(
        "--eval-protocol",
        choices=["sequential", "random"],
        help="validation windows: the same ones in order, or fresh random ones (nanoGPT)",
    )
    add("--max-bytes", type=int, default=4_000_000, help="size of the python-code corpus")
    add("--out-dir", type=Path, help="output directory (default runs/<config>)")
    add("--resume", action="store_true", help="continue from --out-dir's checkpoint")
    add("--stop-after", type=int, help="stop (with a checkpoint) after this many steps")
    add("--seed", type=int, default=1337, help="seeds initialisation, data order and dropout")
    add(
        "--threads",
        type=int,
        help="BLAS threads (default: all cores). Small models on a busy machine can run "
        "several times faster on 1 (needs threadpoolctl; or set OPENBLAS_NUM_THREADS)",
    )
    add(
        "--precision",
        default="fp32",
        choices=["fp32", "tf32", "fp16", "bf16"],
        help="fp32; tf32 matmuls (GPU); fp16 with loss scaling; bf16 (GPU)",
    )
    add("--max-seconds", type=float, help="stop (with a checkpoint) after this much training time")
    add("--data-dir", type=Path, help="folder with tinyshakespeare.txt (else $TRICYCLE_DATA_DIR)")
    add(
        "--log-interval",
        type=int,
        help="read the loss back every N steps (default: 1 on CPU, 10 on GPU)",
    )
    add("--sample-tokens", type=int, default=200, help="tokens to sample at the end")
    add("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.out_dir is None:
        args.out_dir = Path("runs") / args.config
    return args


def build_config(args) -> GPTConfig:
    """The named config with the command line's overrides."""
    overrides = {
        "steps": args.steps,
        "batch_size": args.batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "context_window": args.context_window,
        "vocab_size": args.vocab_size,
        "device": args.device,
        "max_learning_rate": args.lr,
        "min_learning_rate": args.min_lr,
        "warmup_steps": args.warmup,
        "weight_decay": args.weight_decay,
        "grad_clip": args.grad_clip,
        "dropout": args.dropout,
        "eval_interval": args.eval_interval,
        "eval_steps": args.eval_steps,
        "eval_protocol": args.eval_protocol,
    }
    config = get_config(args.config, **{k: v for k, v in overrides.items() if v is not None})
    if config.min_learning_rate > config.max_learning_rate:  # e.g. only --lr was lowered
        config.min_learning_rate = config.max_learning_rate / 10
    config.warmup_steps = min(config.warmup_steps, config.steps)  # e.g. a short --steps
    return config


def load_corpus(dataset: str, config: GPTConfig, max_bytes: int, data_dir=None):
    """The tokenised corpus; for characters, ``config.vocab_size`` becomes the charset's size.
    ``data_dir`` (the Shakespeare datasets): where tinyshakespeare.txt is, for offline runs."""
    if dataset == "python-code":
        corpus = PythonCode(config.vocab_size, max_bytes=max_bytes)
    elif dataset == "shakespeare":
        corpus = Shakespeare(config.vocab_size, data_dir=data_dir)
    elif dataset == "shakespeare-char":
        corpus = ShakespeareChar(data_dir=data_dir)
        config.vocab_size = corpus.vocab_size
    elif Path(dataset).is_file():
        corpus = TextFile(dataset, config.vocab_size)
    else:
        raise SystemExit(f"--dataset {dataset!r} is neither one of {DATASETS} nor a file")
    return corpus


# ------------------------------------------------------------------ performance


def tune_cpu_allocator() -> None:
    """Keep freed memory in the process (glibc), so each step reuses it instead of asking the
    kernel for fresh zeroed pages: ~10% faster training on CPU. A no-op elsewhere."""
    libc_name = ctypes.util.find_library("c")
    if sys.platform != "linux" or libc_name is None:
        return
    try:
        libc = ctypes.CDLL(libc_name)
        M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum: 32 MiB
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(M_TOP_PAD, 256 << 20)
    except (OSError, AttributeError):
        pass


# ------------------------------------------------------------------ training


def make_precision(name: str, device: str) -> Precision:
    """The precision policy for ``--precision`` on ``device``; clear errors where it cannot run."""
    if device != "gpu" and name in ("tf32", "bf16"):
        raise SystemExit(
            f"--precision {name} needs a GPU (--device gpu): TF32 is a tensor-core mode and "
            "numpy has no fast bfloat16 matmul; use fp32 or fp16 on the CPU"
        )
    return Precision(name)


def training_step(
    model, optimiser, loss_fn, batches, config: GPTConfig, step: int, precision=None, sync=True
) -> dict:
    """One optimiser step over ``gradient_accumulation_steps`` micro-batches.

    Without ``precision``: float32, gradient clipping and the update as plain library calls
    (reads the loss and the norm back every step). With a ``Precision`` policy the forward
    runs in its dtype, the policy seeds backward with its loss scale and does unscale, clip
    and update (skipping the update on overflow); with ``sync=False`` the returned loss and
    norm stay device arrays (no host synchronisation; see ``settle``).
    """
    optimiser.step()
    accumulation = config.gradient_accumulation_steps
    if precision is not None:
        total = 0.0
        for _ in range(accumulation):
            inputs, targets = next(batches)  # (B, T) ids each
            loss = loss_fn(targets, model(inputs, precision=precision))  # float32 loss
            precision.backward(loss / accumulation if accumulation > 1 else loss)
            total = total + loss.array  # summed on the device
        precision.last_norm = None
        precision.step(optimiser, model, max_norm=config.grad_clip)
        result = {"loss": total / accumulation, "grad_norm": precision.last_norm}
        return settle(result, step, precision) if sync else result
    total = 0.0
    for _ in range(accumulation):
        inputs, targets = next(batches)  # (B, T) ids each
        loss = loss_fn(targets, model(inputs))
        (loss / accumulation).backward()  # gradients add up over the micro-batches
        total += float(loss)
    loss = total / accumulation
    if not math.isfinite(loss):
        raise TrainingDiverged(f"the training loss is {loss} at step {step}")
    named = model.named_parameters()
    norm = grad_norm(named) if config.grad_clip else None
    if norm is not None and not math.isfinite(norm):
        raise TrainingDiverged(f"the gradient norm is {norm} at step {step}")
    # clipping scales the gradients inside AdamW's step, with no pass of its own
    multiplier = None if norm is None else clip_factor(norm, config.grad_clip)
    optimiser.update(named, grad_multiplier=multiplier)
    model.zero_grad()
    return {"loss": loss, "grad_norm": norm}


def settle(result: dict, step: int, precision=None) -> dict:
    """``result`` with its loss and norm as Python floats; raises TrainingDiverged on a
    non-finite loss, or a non-finite norm without loss scaling (with scaling an inf norm is
    a skipped step, counted by the scaler)."""
    loss = float(result["loss"])
    norm = None if result["grad_norm"] is None else float(result["grad_norm"])
    if not math.isfinite(loss):
        raise TrainingDiverged(f"the training loss is {loss} at step {step}")
    scaled = precision is not None and precision.scaler is not None
    if norm is not None and not math.isfinite(norm) and not scaled:
        raise TrainingDiverged(f"the gradient norm is {norm} at step {step}")
    return {**result, "loss": loss, "grad_norm": norm}


def evaluate(
    model, dataset, loss_fn, n_batches: int, precision=None, protocol: str = "sequential"
) -> float:
    """Mean validation loss over ``n_batches`` batches, without a graph (summed on the
    device, read back once). ``protocol`` "sequential": the first windows in order, the same
    every time (each token once, if n_batches covers the split); "random": fresh random
    windows each time, as nanoGPT's ``estimate_loss``."""
    model.eval()
    total, n = 0.0, 0
    if protocol == "random":
        batches = (next(dataset) for _ in range(n_batches))
    else:
        batches = dataset.iterate_sequential(max_batches=n_batches)
    with no_grad():
        for inputs, targets in batches:
            total = total + loss_fn(targets, model(inputs, precision=precision)).array
            n += 1
    model.train()
    return float(total) / n


def rng_states(model, train_data) -> dict:
    """Every random state training consumes: the data sampler's and each Dropout's."""
    dropouts = [layer for layer in model.layers() if isinstance(layer, Dropout)]
    return {
        "data": train_data.rng.bit_generator.state,
        "dropout": [layer.rng.bit_generator.state for layer in dropouts],
    }


def restore_rng_states(model, train_data, states: dict) -> None:
    train_data.rng.bit_generator.state = states["data"]
    dropouts = [layer for layer in model.layers() if isinstance(layer, Dropout)]
    for layer, state in zip(dropouts, states["dropout"], strict=True):
        layer.rng.bit_generator.state = state


def save_checkpoint(out_dir: Path, model, optimiser, train_data, step: int, extra: dict) -> None:
    """The safe checkpoint, then the pickled model, each written atomically."""
    state = {
        "step": step,  # the next step to run
        "model": model.state_dict(),
        "optimiser": optimiser.state_dict(),
        "rng": rng_states(model, train_data),
        **extra,
    }
    save_state(out_dir / CHECKPOINT, state)
    save_pickle(model, out_dir / MODEL)


def train(args) -> dict:
    """Run (or resume) training as ``args`` say; returns a summary of the run."""
    tune_cpu_allocator()
    out_dir: Path = args.out_dir
    checkpoint = None
    if args.resume:
        try:
            checkpoint = load_state(out_dir / CHECKPOINT)
        except CheckpointError as error:
            raise SystemExit(f"--resume: {error}") from None
        config = GPTConfig.from_dict(checkpoint["config"])  # the run's own settings...
        config.steps = args.steps or config.steps  # ...except how long, and where, to run
        config.device = args.device or config.device
        dataset, seed = checkpoint["dataset"], checkpoint["seed"]
    else:
        config, dataset, seed = build_config(args), args.dataset, args.seed
    if config.device == "gpu" and args.device is None and not cupy_available():
        print("no GPU found: training on the CPU (pass --device to choose)", file=sys.stderr)
        config.device = "cpu"

    corpus = load_corpus(dataset, config, args.max_bytes, args.data_dir)
    policy = make_precision(args.precision, config.device)
    # fp32 on the CPU keeps the plain step (bit-for-bit as before); everything else the policy
    use_policy = config.device == "gpu" or policy.mode != "fp32"
    np.random.seed(seed)  # the datasets' shuffling
    manual_seed(seed)  # model initialisation and dropout seeds
    model = GPT(config)
    optimiser = AdamW(
        learning_rate=config.max_learning_rate,
        betas=(config.beta1, config.beta2),
        eps=config.eps,
        weight_decay=config.weight_decay,
        decay_filter=decay_all_matrices if config.decay_embeddings else decay_matrices,
    )
    schedule = CosineSchedule(
        config.max_learning_rate, config.min_learning_rate, config.steps, config.warmup_steps
    )
    loss_fn = CrossEntropy()
    train_data = CausalLMDataset(
        corpus.train_tokens, config.vocab_size, config.batch_size, config.context_window, seed
    ).batch()
    valid_data = _validation_set(corpus, config)

    start, wall_before = 0, 0.0
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimiser.load_state_dict(checkpoint["optimiser"])
        restore_rng_states(model, train_data, checkpoint["rng"])
        start, wall_before = checkpoint["step"], checkpoint["wall_time"]
        if policy.scaler is not None and "scaler" in checkpoint:
            policy.scaler.load_state_dict(checkpoint["scaler"])
    if config.device == "gpu":
        model.to_gpu()
        train_data = train_data.to_gpu()  # batches arrive as GPU tensors (same sampler)
        valid_data = valid_data and valid_data.to_gpu()

    out_dir.mkdir(parents=True, exist_ok=True)
    corpus.tokeniser.save(out_dir / TOKENISER)
    run_info = {
        "config": config.to_dict(),
        "dataset": dataset,
        "seed": seed,
        "precision": policy.mode,
    }
    atomic_write_text(out_dir / "config.json", json.dumps(run_info, indent=2) + "\n")
    metrics_path = out_dir / METRICS
    _truncate_metrics(metrics_path, start)

    print(
        f"{type(config).__name__}: {model.num_parameters():,} parameters, "
        f"{len(corpus.train_tokens):,} training tokens from {dataset!r}, "
        f"{config.tokens_per_step:,} tokens per step, steps {start}..{config.steps}",
        file=sys.stderr,
    )
    stop = config.steps if args.stop_after is None else min(config.steps, start + args.stop_after)
    log_interval = args.log_interval or (10 if config.device == "gpu" else 1)
    print(f"precision: {policy!r}, loss read back every {log_interval} steps", file=sys.stderr)
    t0 = time.perf_counter()
    val_loss, last, pending, done = None, {}, [], start
    bar = tqdm(range(start, stop), initial=start, total=config.steps, disable=args.no_progress)

    def wall() -> float:
        return wall_before + time.perf_counter() - t0

    def flush() -> None:
        """Read back the pending steps' losses (one sync), check them, write their metrics."""
        nonlocal last
        if not pending:
            return
        skipped = policy.scaler.skipped_steps if policy.scaler is not None else 0
        with open(metrics_path, "a") as f:
            for record in pending:
                settled = settle(record, record["step"] - 1, policy if use_policy else None)
                record.update(loss=settled["loss"], grad_norm=settled["grad_norm"])
                record["skipped_steps"] = skipped
                f.write(json.dumps(record) + "\n")
        last = pending[-1]
        pending.clear()
        postfix = {"loss": f"{last['loss']:.3f}", "tok_s": f"{last['tokens_per_s']:,.0f}"}
        if policy.scaler is not None:
            postfix.update(skipped=skipped, scale=f"{policy.scaler.scale:g}")
        bar.set_postfix(**postfix)

    saved = checkpoint is not None

    def diverged(error) -> SystemExit:
        bar.close()
        kept = f"; the last checkpoint ({out_dir / CHECKPOINT}) is kept" if saved else ""
        return SystemExit(f"training diverged: {error}{kept}")

    with policy:  # TF32 matmuls for the duration, when the policy asks for them
        for step in bar:
            step_start = time.perf_counter()
            optimiser.learning_rate = schedule(step)
            if config.device == "gpu":  # dropout masks on the GPU come from cupy's generator
                cupy().random.seed(seed * 1_000_003 + step)
            try:
                if use_policy:
                    result = training_step(
                        model, optimiser, loss_fn, train_data, config, step, policy, sync=False
                    )
                else:
                    result = training_step(model, optimiser, loss_fn, train_data, config, step)
            except TrainingDiverged as error:
                raise diverged(error) from None
            done = step + 1
            # on a GPU this is host time: the device is waited for only at read-backs, so
            # single steps vary; their mean over a log interval is the true rate
            pending.append(
                {
                    "step": done,
                    "loss": result["loss"],
                    "val_loss": None,
                    "lr": optimiser.learning_rate,
                    "grad_norm": result["grad_norm"],
                    "tokens_per_s": config.tokens_per_step / (time.perf_counter() - step_start),
                    "wall_time": wall(),
                }
            )
            val_loss = None
            if valid_data is not None and (done % config.eval_interval == 0 or done == stop):
                val_loss = evaluate(
                    model, valid_data, loss_fn, config.eval_steps, policy, config.eval_protocol
                )
                pending[-1].update(val_loss=val_loss, wall_time=wall())
            out_of_time = args.max_seconds is not None and wall() >= args.max_seconds
            checkpointing = done % config.eval_interval == 0 or done == stop or out_of_time
            if done % log_interval == 0 or val_loss is not None or checkpointing:
                try:
                    flush()  # before any checkpoint: a diverged model is never saved
                except TrainingDiverged as error:
                    raise diverged(error) from None
            if val_loss is not None:
                tqdm.write(
                    f"step {done}: train loss {last['loss']:.4f}, val loss {val_loss:.4f}, "
                    f"{last['wall_time']:.1f} s",
                    file=sys.stderr,
                )
            if checkpointing:
                extra = {**run_info, "wall_time": wall()}
                if policy.scaler is not None:
                    extra["scaler"] = policy.scaler.state_dict()
                save_checkpoint(out_dir, model, optimiser, train_data, done, extra)
                saved = True
            if out_of_time:
                tqdm.write(f"--max-seconds {args.max_seconds:g}: stopping after step {done}",
                           file=sys.stderr)  # fmt: skip
                stop = done
                break
        flush()
    bar.close()

    _plot_losses(metrics_path, out_dir / "loss.png")
    summary = {
        "steps": stop,
        "precision": policy.mode,
        "skipped_steps": policy.scaler.skipped_steps if policy.scaler is not None else 0,
        "loss": last.get("loss"),
        "val_loss": val_loss,
        "wall_time": wall_before + time.perf_counter() - t0,
        "out_dir": str(out_dir),
    }
    if args.sample_tokens and stop == config.steps:
        summary["sample"] = sample(model, corpus, args.sample_tokens, seed)
        print(f"\n----- sample -----\n{summary['sample']}\n------------------")
    print(json.dumps({k: v for k, v in summary.items() if k != "sample"}), file=sys.stderr)
    return summary


def sample(model, corpus, n_tokens: int, seed: int) -> str:
    """Text continuing the first line of the validation set."""
    valid_text = corpus.tokeniser.decode(corpus.valid_tokens[:200])
    prompt_text = valid_text.split("\n", 1)[0] + "\n"
    prompt = corpus.tokeniser.encode(prompt_text)[-model.config.context_window :]
    tokens = model.generate(
        prompt,
        n_tokens,
        temperature=0.8,
        top_k=50,
        rng=np.random.default_rng(seed),
        vocab_limit=corpus.tokeniser.n_tokens,  # BPE may learn fewer ids than vocab_size
    )
    return corpus.tokeniser.decode(tokens)


def _validation_set(corpus, config: GPTConfig):
    if len(corpus.valid_tokens) <= config.context_window:
        print("warning: the validation text is too short: no validation loss", file=sys.stderr)
        return None
    return CausalLMDataset(
        corpus.valid_tokens, config.vocab_size, config.batch_size, config.context_window, 0
    ).batch()


def _truncate_metrics(path: Path, start: int) -> None:
    """Keep the metrics of steps before ``start`` (a resumed run rewrites what followed)."""
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line)["step"] <= start]
    atomic_write_text(path, "".join(line + "\n" for line in kept))


def _plot_losses(metrics_path: Path, png_path: Path) -> None:
    """loss.png from the metrics, when matplotlib is installed (it is optional)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional dependency

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt  # noqa: PLC0415
    except ImportError:
        return
    records = [json.loads(line) for line in metrics_path.read_text().splitlines() if line]
    steps = [r["step"] for r in records]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [r["loss"] for r in records], label="train", alpha=0.7)
    val = [(r["step"], r["val_loss"]) for r in records if r["val_loss"] is not None]
    if val:
        ax.plot(*zip(*val), "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.threads is None:
        return train(args)
    if threadpool_limits is None:
        raise SystemExit("--threads needs threadpoolctl (pip install threadpoolctl)")
    with threadpool_limits(limits=args.threads, user_api="blas"):
        return train(args)


if __name__ == "__main__":
    main()
