"""Train a GPT language model, with validation, checkpoints and exact resumption.

    tricycle-train                               # CPUConfig on Python's stdlib: minutes on a CPU
    tricycle-train --config shakespeare-char --dataset shakespeare-char --device gpu
    tricycle-train --dataset notes.txt --steps 2000
    tricycle-train --out-dir runs/cpu --resume   # continue exactly where it stopped

(``python -m tricycle.train`` and ``python train_smol_gpt.py`` are the same program.)
Everything lands in --out-dir (default runs/<config>); see ``tricycle.training.RunDirectory``
for the files. A resumed run replays exactly on the CPU: its losses equal those of a run
that was never interrupted. On a GPU it replays the same batches and dropout masks, but
kernels that add with atomics make the sums differ in the last bits. --precision picks the
policy (``tricycle.precision``); on a GPU the loss is read back every --log-interval steps
only, so the host runs ahead of the device. A NaN or infinite loss stops training with an
error naming the step; the last checkpoint, written before the divergence, is kept.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from tricycle import threads
from tricycle.backend import cupy_available
from tricycle.checkpoint import CheckpointError, atomic_write_text, load_state
from tricycle.configs import CONFIGS, GPTConfig, get_config
from tricycle.dataset import CausalLMDataset
from tricycle.models import GPT
from tricycle.optimisers import AdamW, decay_all_matrices, decay_matrices
from tricycle.scheduler import CosineSchedule
from tricycle.training import (
    RunDirectory,
    Trainer,
    TrainingDiverged,
    precision_for,
    tune_cpu_allocator,
)
from tricycle_datasets import TextFile
from tricycle_datasets.python_code import PythonCode
from tricycle_datasets.shakespeare import Shakespeare, ShakespeareChar

DATASETS = ("python-code", "shakespeare", "shakespeare-char")
# --flag: the GPTConfig field it overrides
CONFIG_FLAGS = {
    "steps": "steps", "batch_size": "batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "context_window": "context_window", "vocab_size": "vocab_size", "device": "device",
    "lr": "max_learning_rate", "min_lr": "min_learning_rate", "warmup": "warmup_steps",
    "weight_decay": "weight_decay", "grad_clip": "grad_clip", "dropout": "dropout",
    "eval_interval": "eval_interval", "eval_steps": "eval_steps",
    "eval_protocol": "eval_protocol",
}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tricycle-train",
        description="Train a GPT (see `python -m pydoc tricycle.train` for the files it writes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--config", default="cpu", choices=sorted(CONFIGS), help="base config")
    add("--dataset", default="python-code",
        help=f"one of {', '.join(DATASETS)}, or the path of a UTF-8 .txt file")  # fmt: skip
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
    add("--eval-protocol", choices=["sequential", "random"],
        help="validation windows: the same in order, or fresh random ones (nanoGPT)")  # fmt: skip
    add("--max-bytes", type=int, default=4_000_000, help="size of the python-code corpus")
    add("--out-dir", type=Path, help="output directory (default runs/<config>)")
    add("--resume", action="store_true", help="continue from --out-dir's checkpoint")
    add("--stop-after", type=int, help="stop (with a checkpoint) after this many steps")
    add("--seed", type=int, default=1337, help="seeds initialisation, data order and dropout")
    add("--threads", type=int, help="CPU threads (default: TRICYCLE_THREADS, else the cores)")
    add("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"],
        help="fp32; tf32 matmuls (GPU); fp16 with loss scaling; bf16 (GPU)")  # fmt: skip
    add("--max-seconds", type=float, help="stop (with a checkpoint) after this much training time")
    add("--data-dir", type=Path, help="folder with tinyshakespeare.txt (else $TRICYCLE_DATA_DIR)")
    add("--log-interval", type=int, help="read the loss every N steps (default: 1 CPU, 10 GPU)")
    add("--sample-tokens", type=int, default=200, help="tokens to sample at the end")
    add("--no-progress", action="store_true", help="no progress bar")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.out_dir is None:
        args.out_dir = Path("runs") / args.config
    return args


def build_config(args) -> GPTConfig:
    """The named config with the command line's overrides."""
    overrides = {field: getattr(args, flag) for flag, field in CONFIG_FLAGS.items()}
    config = get_config(args.config, **{k: v for k, v in overrides.items() if v is not None})
    if config.min_learning_rate > config.max_learning_rate:  # e.g. only --lr was lowered
        config.min_learning_rate = config.max_learning_rate / 10
    config.warmup_steps = min(config.warmup_steps, config.steps)  # e.g. a short --steps
    return config


def load_corpus(dataset: str, config: GPTConfig, max_bytes: int, data_dir=None):
    """The tokenised corpus; for characters, ``config.vocab_size`` becomes the charset's size.
    ``data_dir`` (the Shakespeare datasets): where tinyshakespeare.txt is, for offline runs."""
    if dataset == "python-code":
        return PythonCode(config.vocab_size, max_bytes=max_bytes)
    if dataset == "shakespeare":
        return Shakespeare(config.vocab_size, data_dir=data_dir)
    if dataset == "shakespeare-char":
        corpus = ShakespeareChar(data_dir=data_dir)
        config.vocab_size = corpus.vocab_size
        return corpus
    if Path(dataset).is_file():
        return TextFile(dataset, config.vocab_size)
    raise SystemExit(f"--dataset {dataset!r} is neither one of {DATASETS} nor a file")


def _start_cpu_threads(n: int | None) -> None:
    """Start tricycle's CPU thread pool (``n`` threads; None: its default). Importing the
    library starts nothing; a program that wants the threads says so, once."""
    threads.enable(n)


def train(args) -> dict:
    """Run (or resume) training as ``args`` say; returns a summary of the run."""
    tune_cpu_allocator()
    run_dir = RunDirectory(args.out_dir)
    checkpoint = None
    if args.resume:
        try:
            checkpoint = load_state(run_dir.checkpoint)
        except CheckpointError as error:
            raise SystemExit(f"--resume: {error}") from None
        run = checkpoint["run"]
        config = GPTConfig.from_dict(run["config"])  # the run's own settings...
        config.steps = args.steps or config.steps  # ...except how long, and where, to run
        config.device = args.device or config.device
        dataset, seed = run["dataset"], run["seed"]
    else:
        config, dataset, seed = build_config(args), args.dataset, args.seed
    if config.device == "gpu" and args.device is None and not cupy_available():
        print("no GPU found: training on the CPU (pass --device to choose)", file=sys.stderr)
        config.device = "cpu"

    corpus = load_corpus(dataset, config, args.max_bytes, args.data_dir)
    try:
        policy = precision_for(args.precision, config.device)
    except ValueError as error:
        raise SystemExit(f"--precision: {error}") from None
    np.random.seed(seed)  # model initialisation and dropout seeds
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
    batches = (config.vocab_size, config.batch_size, config.context_window)
    train_data = CausalLMDataset(corpus.train_tokens, *batches, seed).batch()
    valid_data = None
    if len(corpus.valid_tokens) > config.context_window:
        valid_data = CausalLMDataset(corpus.valid_tokens, *batches, 0).batch()
    else:
        print("warning: the validation text is too short: no validation loss", file=sys.stderr)
    if config.device == "gpu":
        model.to_gpu()
        train_data = train_data.to_gpu()  # batches arrive as GPU tensors (same generator)
        valid_data = valid_data and valid_data.to_gpu()
    trainer = Trainer(
        model, optimiser, train_data, policy=policy, schedule=schedule,
        accumulation_steps=config.gradient_accumulation_steps, max_norm=config.grad_clip,
        valid_data=valid_data, eval_interval=config.eval_interval, eval_steps=config.eval_steps,
        eval_protocol=config.eval_protocol, tokens_per_step=config.tokens_per_step, seed=seed,
    )  # fmt: skip
    if checkpoint is not None:
        try:
            trainer.load_state_dict(checkpoint)
        except (KeyError, ValueError, TypeError) as error:
            raise SystemExit(f"--resume: {run_dir.checkpoint} does not fit: {error}") from None

    run_info = {"config": config.to_dict(), "dataset": dataset, "seed": seed,
                "precision": policy.mode}  # fmt: skip
    with run_dir:
        corpus.tokeniser.save(run_dir / RunDirectory.TOKENISER)
        atomic_write_text(run_dir / RunDirectory.CONFIG, json.dumps(run_info, indent=2) + "\n")
        run_dir.restart_metrics(trainer.step)
        print(
            f"{type(config).__name__}: {model.num_parameters():,} parameters, "
            f"{len(corpus.train_tokens):,} training tokens from {dataset!r}, "
            f"{config.tokens_per_step:,} tokens per step, steps {trainer.step}..{config.steps}",
            file=sys.stderr,
        )
        log_interval = args.log_interval or (10 if config.device == "gpu" else 1)
        print(f"precision: {policy!r}, loss read back every {log_interval} steps", file=sys.stderr)
        bar = tqdm(initial=trainer.step, total=config.steps, disable=args.no_progress)

        def progress(record: dict) -> None:
            bar.update(record["step"] - bar.n)
            postfix = {"loss": f"{record['loss']:.3f}", "tok_s": f"{record['tokens_per_s']:,.0f}"}
            if policy.scaler is not None:
                postfix["skipped"] = record["skipped_steps"]
            bar.set_postfix(postfix)

        try:
            summary = trainer.fit(
                config.steps, run_dir=run_dir, metadata=run_info, log_interval=log_interval,
                max_seconds=args.max_seconds, stop_after=args.stop_after, on_record=progress,
                on_message=lambda text: tqdm.write(text, file=sys.stderr),
            )  # fmt: skip
        except (TrainingDiverged, CheckpointError) as error:
            bar.close()
            prefix = "training diverged" if isinstance(error, TrainingDiverged) else "error"
            raise SystemExit(f"{prefix}: {error}") from None
        bar.close()
    summary["out_dir"] = str(run_dir.path)
    _plot_losses(run_dir.metrics(), run_dir / "loss.png")
    if args.sample_tokens and summary["steps"] == config.steps:
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
        prompt, n_tokens, temperature=0.8, top_k=50, rng=np.random.default_rng(seed),
        vocab_limit=corpus.tokeniser.n_tokens,  # BPE may learn fewer ids than vocab_size
    )  # fmt: skip
    return corpus.tokeniser.decode(tokens)


def _plot_losses(records: list[dict], png_path: Path) -> None:
    """loss.png from the metrics, when matplotlib is installed (it is optional)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional dependency

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt  # noqa: PLC0415
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in records], [r["loss"] for r in records], label="train", alpha=0.7)
    val = [(r["step"], r["val_loss"]) for r in records if r.get("val_loss") is not None]
    if val:
        ax.plot(*zip(*val), "o-", label="validation")
    ax.set(xlabel="step", ylabel="cross-entropy loss")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)


def run(argv=None) -> dict:
    """Parse ``argv``, start the CPU threads and train; returns the summary (for tests and
    programs that call the CLI)."""
    args = parse_args(argv)
    _start_cpu_threads(args.threads)
    return train(args)


def main(argv=None) -> int:
    """The console entry point: train, and return the exit status."""
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
