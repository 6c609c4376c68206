"""Train a GPT language model, with validation, checkpoints and exact resumption.

    tricycle-train                               # CPUConfig on Python's stdlib: minutes on a CPU
    tricycle-train --config shakespeare-char --dataset shakespeare-char --device gpu
    tricycle-train --dataset notes.txt --steps 2000 --out-dir runs/notes
    tricycle-train --out-dir runs/notes --resume # continue exactly where it stopped

(``python -m tricycle.train`` and ``python train_smol_gpt.py`` are the same program; the loop
itself is ``tricycle.training``.) Everything lands in --out-dir (default runs/<config>): the
safe checkpoint.npz (what ``tricycle-sample`` and --resume read), model.pkl, tokeniser.json,
config.json and metrics.jsonl. A directory holding another run is never overwritten without
--overwrite, and one run at a time may use it.

--resume continues with the run's own settings and data: a setting given again with another
value is refused (listing the differences), except those that do not change what is learnt
(--steps, --device, --precision, evaluation and stopping flags), which are applied and
reported. The data must be the run's own: a built-in dataset is rebuilt and compared with the
recorded hash; a text file must be named again with --dataset (a checkpoint never decides
which file is read) and is compared too.

nanoGPT's settings (its train.py globals, as ``--name=value``) map onto these flags, which may
also be written with ``_`` for ``-``:

    n_layer, n_head, n_embd     --n-layer, --n-head, --n-embd
    block_size, vocab_size      --context-window, --vocab-size
    bias, dropout               --bias=true/false, --dropout
    max_iters, learning_rate    --steps, --lr
    warmup_iters, min_lr        --warmup, --min-lr
    lr_decay_iters              --lr-decay-iters (the learning rate stays at --min-lr after)
    beta1, beta2, weight_decay  --beta1, --beta2, --weight-decay
    grad_clip                   --grad-clip (0: off)
    batch_size                  --batch-size
    gradient_accumulation_steps --gradient-accumulation-steps
    eval_interval, eval_iters   --eval-interval, --eval-steps
    out_dir, init_from='resume' --out-dir, --resume
    dtype                       --precision fp32/tf32/fp16/bf16
    config file                 --config-file settings.json: a JSON object of these names (no
                                code runs); flags on the command line override it

Every GPTConfig field has a flag; an unknown name is a usage error.

A resumed run replays exactly on the CPU. Ctrl-C stops after the current step with a
checkpoint; a NaN or infinite loss stops with an error naming the step, keeping the last
checkpoint, and no checkpoint holding a non-finite value is ever written.
"""

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from tricycle import threads
from tricycle.backend import cupy_available
from tricycle.blocks import ACTIVATIONS
from tricycle.checkpoint import CheckpointError, atomic_write_text, load_state
from tricycle.cli import (
    boolean,
    nonnegative_float,
    nonnegative_int,
    normalise,
    positive_float,
    positive_int,
    probability,
    seed,
    settings_file,
    unit_interval,
)
from tricycle.configs import CONFIGS, GPTConfig, get_config
from tricycle.files import DirectoryLocked
from tricycle.random import manual_seed
from tricycle.training import (
    RunDirectory,
    TrainingDiverged,
    check_config_fits,
    gpt_trainer,
    precision_for,
    tune_cpu_allocator,
)
from tricycle_datasets import TextFile
from tricycle_datasets.python_code import PythonCode
from tricycle_datasets.shakespeare import Shakespeare, ShakespeareChar

DATASETS = ("python-code", "shakespeare", "shakespeare-char")
# the settings beside the config's fields, with their defaults
DEFAULTS = {"config": "cpu", "dataset": "python-code", "seed": 1337, "max_bytes": 4_000_000,
            "precision": "fp32", "lr_decay_iters": None}  # fmt: skip
# --flag: (type, the GPTConfig field it sets, help); every field has one
CONFIG_FLAGS = {
    "n_layer": (positive_int, "n_layers", "transformer blocks"),
    "n_head": (positive_int, "n_heads", "attention heads (must divide --n-embd)"),
    "n_embd": (positive_int, "embedding_dim", "embedding width"),
    "expansion_ratio": (positive_float, "expansion_ratio", "MLP width / embedding width"),
    "activation": (str, "activation_fn", f"MLP activation: {', '.join(sorted(ACTIVATIONS))}"),
    "bias": (boolean, "bias", "biases in Dense and LayerNorm layers (true/false)"),
    "tie_weights": (boolean, "tie_weights", "the head shares the token embedding"),
    "context_window": (positive_int, "context_window", "tokens per sequence"),
    "vocab_size": (positive_int, "vocab_size", "BPE vocabulary size (>= 256)"),
    "dropout": (probability, "dropout", "dropout probability"),
    "steps": (positive_int, "steps", "optimiser steps in total"),
    "batch_size": (positive_int, "batch_size", "sequences per micro-batch"),
    "gradient_accumulation_steps": (positive_int, "gradient_accumulation_steps",
                                    "micro-batches per optimiser step"),
    "lr": (positive_float, "max_learning_rate", "peak learning rate"),
    "min_lr": (nonnegative_float, "min_learning_rate", "final learning rate of the schedule"),
    "warmup": (nonnegative_int, "warmup_steps", "linear warm-up steps"),
    "weight_decay": (nonnegative_float, "weight_decay", "AdamW weight decay"),
    "decay_embeddings": (boolean, "decay_embeddings", "decay the embeddings too (nanoGPT)"),
    "beta1": (unit_interval, "beta1", "AdamW beta1"),
    "beta2": (unit_interval, "beta2", "AdamW beta2"),
    "eps": (positive_float, "eps", "AdamW epsilon"),
    "grad_clip": (nonnegative_float, "grad_clip", "clip gradients to this norm (0: off)"),
    "eval_interval": (positive_int, "eval_interval", "validate and checkpoint every N steps"),
    "eval_steps": (positive_int, "eval_steps", "validation batches per evaluation"),
    "eval_protocol": (str, "eval_protocol", "validation windows: sequential (the same, in "
                      "order) or random (fresh ones, as nanoGPT)"),
    "device": (str, "device", "where to train: cpu or gpu"),
}  # fmt: skip
CHOICES = {"activation": sorted(ACTIVATIONS), "eval_protocol": ["sequential", "random"],
           "device": ["cpu", "gpu"]}  # fmt: skip
# nanoGPT's names (train.py's globals) for the flags whose names differ; see the docstring
NANOGPT_NAMES = {"max_iters": "steps", "learning_rate": "lr", "warmup_iters": "warmup",
                 "block_size": "context_window", "eval_iters": "eval_steps",
                 "n_layers": "n_layer", "n_heads": "n_head", "embedding_dim": "n_embd"}  # fmt: skip
# config fields --resume may change (with --precision): they decide how long, how often and
# where, not what is learnt
RESUME_MAY_CHANGE = {"steps", "device", "eval_interval", "eval_steps", "eval_protocol"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tricycle-train",
        description="Train a GPT. Flags left out take the config's values (or, with --resume, "
        "the run's). Flags may be written with _ for - and with nanoGPT's names "
        "(--n_layer=4, --max_iters=2000, --learning_rate=1e-3, --block_size=128, ...). See "
        "`python -m pydoc tricycle.train` for the files, the resume rules and the mapping.",
    )
    add = parser.add_argument
    add("--config", choices=sorted(CONFIGS), help="base config (default: cpu)")
    add("--config-file", type=Path, help="a JSON object of settings ({\"n_layer\": 4, ...}); "
        "flags on the command line override it")  # fmt: skip
    add("--dataset", help=f"one of {', '.join(DATASETS)} (default: python-code), or a UTF-8 "
        "text file")  # fmt: skip
    for flag, (kind, _, text) in CONFIG_FLAGS.items():
        metavar = {positive_int: "N", nonnegative_int: "N", boolean: "{true,false}"}.get(kind)
        metavar = "X" if metavar is None and kind is not str else metavar
        add(f"--{flag.replace('_', '-')}", type=kind, choices=CHOICES.get(flag),
            metavar=metavar, help=text)  # fmt: skip
    add("--lr-decay-iters", type=positive_int, help="steps of the cosine decay (default: "
        "--steps); the learning rate stays at --min-lr after")  # fmt: skip
    add("--precision", choices=["fp32", "tf32", "fp16", "bf16"],
        help="fp32 (default); tf32 matmuls (GPU); fp16 with loss scaling; bf16 (GPU)")  # fmt: skip
    add("--seed", type=seed, help="seeds initialisation, data order and dropout (default 1337)")
    add("--max-bytes", type=positive_int, help="size of the python-code corpus (default 4e6)")
    add("--out-dir", type=Path, help="where the run's files go (default: runs/<config>)")
    add("--resume", action="store_true", help="continue the run in --out-dir")
    add("--overwrite", action="store_true", help="replace the run already in --out-dir")
    add("--stop-after", type=positive_int, help="stop (with a checkpoint) after N steps")
    add("--max-seconds", type=positive_float, help="stop (with a checkpoint) after this much "
        "training time")  # fmt: skip
    add("--threads", type=positive_int, help="CPU threads for BLAS and "
        "fused ops (default: TRICYCLE_THREADS, else BLAS's, at most 8); fewer while other "
        "processes keep cores busy")  # fmt: skip
    add("--data-dir", type=Path, help="folder with tinyshakespeare.txt (else $TRICYCLE_DATA_DIR)")
    add("--log-interval", type=positive_int, help="read the loss every N steps (1 CPU, 10 GPU)")
    add("--sample-tokens", type=nonnegative_int, default=200, help="tokens sampled at the end")
    add("--no-progress", action="store_true", help="no progress bar")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    argv = normalise(sys.argv[1:] if argv is None else list(argv), NANOGPT_NAMES)
    args = parser.parse_args(argv)
    if args.config_file is not None:  # the file's settings first: the command line wins
        file = settings_file(parser, args.config_file, NANOGPT_NAMES)
        args = parser.parse_args(file + argv)
    if args.out_dir is None:
        args.out_dir = Path("runs") / (args.config or DEFAULTS["config"])
    return args


def build_config(args) -> GPTConfig:
    """The named config with the command line's overrides."""
    overrides = {field: getattr(args, flag) for flag, (_, field, _) in CONFIG_FLAGS.items()}
    try:
        name = args.config or DEFAULTS["config"]
        config = get_config(name, **{k: v for k, v in overrides.items() if v is not None})
    except (ValueError, TypeError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    if config.min_learning_rate > config.max_learning_rate:  # e.g. only --lr was lowered
        config.min_learning_rate = config.max_learning_rate / 10
    config.warmup_steps = min(config.warmup_steps, config.steps)  # e.g. a short --steps
    if args.lr_decay_iters is not None and args.lr_decay_iters < config.warmup_steps:
        raise SystemExit(f"tricycle-train: --lr-decay-iters {args.lr_decay_iters} is shorter "
                         f"than the warm-up ({config.warmup_steps} steps)")  # fmt: skip
    return config


def resume_settings(args, run: dict) -> tuple[GPTConfig, list[str]]:
    """The resumed run's config, its own with the changes --resume may make applied, and
    those changes (to report); any other setting given with a different value is refused,
    listed."""
    config = GPTConfig.from_dict(run["config"])
    refused, applied = [], []
    for flag, (_, field, _) in CONFIG_FLAGS.items():
        value = getattr(args, flag)
        if value is None or value == getattr(config, field):
            continue
        change = f"--{flag.replace('_', '-')} {value} (the run's: {getattr(config, field)})"
        if field in RESUME_MAY_CHANGE:
            setattr(config, field, value)
            applied.append(change)
        else:
            refused.append(change)
    for flag in ("config", "seed", "max_bytes", "lr_decay_iters", "precision"):
        value, recorded = getattr(args, flag), run["settings"][flag]
        if value is not None and value != recorded:
            change = f"--{flag.replace('_', '-')} {value} (the run's: {recorded})"
            (applied if flag == "precision" else refused).append(change)
    if refused:
        raise SystemExit(
            f"--resume: these settings differ from the run in {args.out_dir}: "
            + "; ".join(refused)
            + ". Leave them out to continue the run as it was, or start a new run in another "
            "--out-dir."
        )
    config.warmup_steps = min(config.warmup_steps, config.steps)
    return config, applied


def load_corpus(dataset: str, config: GPTConfig, max_bytes: int, data_dir=None):
    """The tokenised corpus; for characters, ``config.vocab_size`` becomes the charset's size.
    ``data_dir`` (the Shakespeare datasets): where tinyshakespeare.txt is, for offline runs."""
    if dataset not in ("shakespeare-char",) and config.vocab_size < 256:
        raise SystemExit(f"--vocab-size {config.vocab_size}: a BPE vocabulary needs >= 256 ids")
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


def tokeniser_json(tokeniser) -> str:
    """The tokeniser's file contents (what ``tokeniser.save`` writes)."""
    with tempfile.TemporaryDirectory() as folder:
        tokeniser.save(Path(folder) / RunDirectory.TOKENISER)
        return (Path(folder) / RunDirectory.TOKENISER).read_text(encoding="utf-8")


def data_sha256(corpus, tokeniser_text: str) -> str:
    """A hash of what training reads: the tokeniser and the token ids of both splits."""
    digest = hashlib.sha256(tokeniser_text.encode("utf-8"))
    for tokens in (corpus.train_tokens, corpus.valid_tokens):
        digest.update(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())
    return digest.hexdigest()


def train(args) -> dict:
    """Run (or resume) training as ``args`` say, holding --out-dir's lock; returns a summary."""
    tune_cpu_allocator()
    run_dir = RunDirectory(args.out_dir)
    if args.resume and not run_dir.checkpoint.is_file():  # before the lock makes the folder
        raise SystemExit(
            f"--resume: no checkpoint in {run_dir.path} (no run, or one stopped before its "
            "first checkpoint: start it again with --overwrite)"
        )
    try:
        notes = run_dir.open()
    except DirectoryLocked as error:
        raise SystemExit(f"--out-dir: {error}") from None
    try:
        for note in notes:
            print(note, file=sys.stderr)
        return _train(args, run_dir)
    finally:
        run_dir.close()


def _train(args, run_dir: RunDirectory) -> dict:
    checkpoint, applied = None, []
    if args.resume:
        try:
            checkpoint = load_state(run_dir.checkpoint)
        except CheckpointError as error:
            raise SystemExit(f"--resume: {error}") from None
        run = checkpoint.get("run")
        try:
            config, applied = resume_settings(args, run)
            check_config_fits(config, checkpoint.get("model"))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise SystemExit(f"--resume: {run_dir.checkpoint} is not a run this version of "
                             f"tricycle-train can resume ({error})") from None  # fmt: skip
        settings = run["settings"]
        if settings["dataset"] not in DATASETS and args.dataset is None:
            raise SystemExit(
                f"--resume: the run trained on the file {settings['dataset']}; name it again "
                "with --dataset (a checkpoint alone never decides which file is read)"
            )
        settings.update(dataset=args.dataset or settings["dataset"],
                        precision=args.precision or settings["precision"])  # fmt: skip
        if config.steps < checkpoint["step"]:
            raise SystemExit(
                f"--resume: --steps {config.steps} is before the run's step "
                f"{checkpoint['step']}: nothing to train; pass --steps above it to go on"
            )
    else:
        existing = run_dir.existing_files()
        if existing and not args.overwrite:
            raise SystemExit(
                f"--out-dir {run_dir.path} already holds a run ({', '.join(existing)}): pass "
                "--resume to continue it, --overwrite to replace it, or another --out-dir"
            )
        for name in existing:  # --overwrite: nothing of the old run may outlive it
            (run_dir / name).unlink()
        config = build_config(args)
        settings = {k: getattr(args, k) if getattr(args, k) is not None else v
                    for k, v in DEFAULTS.items()}  # fmt: skip
        run = {}
    if config.device == "gpu" and args.device is None and not cupy_available():
        print("no GPU found: training on the CPU (pass --device to choose)", file=sys.stderr)
        config.device = "cpu"
    try:
        dataset = settings["dataset"]
        corpus = load_corpus(dataset, config, settings["max_bytes"], args.data_dir)
        policy = precision_for(settings["precision"], config.device)
    except (ValueError, OSError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    tokeniser_text = tokeniser_json(corpus.tokeniser)
    digest = data_sha256(corpus, tokeniser_text)
    if checkpoint is not None and digest != run["data_sha256"]:
        raise SystemExit(
            f"--resume: the data of --dataset {dataset} are not those the run trained on "
            f"(sha256 {digest[:12]}..., the run's {run['data_sha256'][:12]}...)"
        )
    for change in applied:
        print(f"--resume: applying {change}", file=sys.stderr)
    run = {"settings": settings, "config": config.to_dict(), "data_sha256": digest}
    manual_seed(settings["seed"])  # model initialisation and dropout seeds
    try:
        trainer = gpt_trainer(
            config, corpus.train_tokens, corpus.valid_tokens, policy=policy,
            seed=settings["seed"], decay_steps=settings["lr_decay_iters"],
        )  # fmt: skip
    except ValueError as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    if trainer.valid_data is None:
        print("warning: the validation text is too short: no validation loss", file=sys.stderr)
    if checkpoint is not None:
        try:
            trainer.load_state_dict(checkpoint)
        except (KeyError, ValueError, TypeError) as error:
            raise SystemExit(f"--resume: {run_dir.checkpoint} does not fit: {error}") from None
    if checkpoint is not None and trainer.step == config.steps:
        print(f"the run in {run_dir.path} is complete ({config.steps} steps)", file=sys.stderr)

    corpus.tokeniser.save(run_dir / RunDirectory.TOKENISER)
    atomic_write_text(run_dir / RunDirectory.CONFIG, json.dumps(run, indent=2) + "\n")
    if run_dir.restart_metrics(trainer.step):
        print(f"{run_dir / RunDirectory.METRICS}: dropped a torn line", file=sys.stderr)
    print(
        f"config {settings['config']}: {trainer.model.num_parameters():,} parameters, "
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
            config.steps, run_dir=run_dir, metadata={**run, "tokeniser": tokeniser_text},
            log_interval=log_interval, max_seconds=args.max_seconds, stop_after=args.stop_after,
            on_record=progress, on_message=lambda text: tqdm.write(text, file=sys.stderr),
        )  # fmt: skip
    except (TrainingDiverged, CheckpointError) as error:
        kind = "training diverged" if isinstance(error, TrainingDiverged) else "error"
        raise SystemExit(f"{kind}: {error}") from None
    finally:
        bar.close()
    summary["out_dir"] = str(run_dir.path)
    run_dir.plot_losses()
    if summary["ended"] == "interrupted":
        again = f"--out-dir {run_dir.path} --resume"
        again += "" if dataset in DATASETS else f" --dataset {dataset}"
        print(f"interrupted: saved {run_dir.checkpoint} at step {summary['steps']}; resume "
              f"with\n    tricycle-train {again}", file=sys.stderr)  # fmt: skip
    elif args.sample_tokens and summary["steps"] == config.steps:
        summary["sample"] = sample(trainer.model, corpus, args.sample_tokens, settings["seed"])
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


def run(argv=None) -> dict:
    """Parse ``argv``, start the CPU threads and train; returns the summary (for tests and
    programs that call the CLI)."""
    args = parse_args(argv)
    # importing the library starts no threads: the program asks for them, for the run only
    with threads.enabled(args.threads):
        return train(args)


def main(argv=None) -> int:
    """The console entry point: train; the exit status is 130 after Ctrl-C."""
    try:
        summary = run(argv)
    except KeyboardInterrupt:  # outside the loop (loading data), or a second Ctrl-C
        print("\ninterrupted: stopped without a new checkpoint", file=sys.stderr)
        return 130
    return 130 if summary["ended"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(main())
