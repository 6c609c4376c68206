"""Train a GPT language model, with validation, checkpoints and exact resumption.

    tricycle-train                               # CPUConfig on Python's stdlib: minutes on a CPU
    tricycle-train --config shakespeare-char --dataset shakespeare-char --device gpu
    tricycle-train --dataset notes.txt --steps 2000 --out-dir runs/notes
    tricycle-train --out-dir runs/notes --resume # continue exactly where it stopped

(``python -m tricycle.apps.train`` and ``python train_smol_gpt.py`` are the same program; the loop
itself is ``tricycle.apps.training``.) Everything lands in --out-dir (default runs/<config>): the
model.safetensors (the last weights) and checkpoint.npz (the training state beside them:
what --resume reads), best.safetensors (the weights of the lowest validation loss, with its
step: what the sample at the end, ``tricycle-sample`` and
``tricycle.evaluate`` read unless given --weights last), model.pkl, tokeniser.json,
config.json, metrics.jsonl and loss.png (the loss curves; --plot-log for a log scale). A
directory holding another run is never overwritten without --overwrite, and one run at a time
may use it.

Data: a built-in corpus, a UTF-8 text file, or a directory of token shards made by
``python -m tricycle_datasets.prepare`` (memory-mapped: corpora larger than memory; its
tokeniser is the run's, and --vocab-size must be at least its size). --data-order sequential
reads shards in order instead of at random offsets.

Evaluation and samples on the way: --eval-hellaswag FILE scores HellaSwag-style multiple
choice at each evaluation (hellaswag_acc, hellaswag_acc_norm in metrics.jsonl and the log);
--sample-interval N writes a sample of --sample-tokens tokens after --sample-prompt (default:
the first line of the validation text) every N steps. They are ``tricycle.apps.training.Hook``s
of the ``Trainer``.

--init-from gpt2|DIR fine-tunes a pretrained model (nanoGPT's flag): a Hugging Face model
directory (config.json, model.safetensors and its tokeniser's files) or a hub name, fetched
with huggingface_hub when online. The model's architecture, weights and tokeniser are
its own (--context-window may shorten its window); the text of --dataset (a corpus or a
text file) is encoded with its tokeniser; the training settings are --config's and the flags'.

--resume continues with the run's own settings and data: a setting given again with another
value is refused (listing the differences), except those that do not change what is learnt
(--steps, --device, --precision, evaluation, sampling and stopping flags), which are applied
and reported (name --eval-hellaswag and --sample-interval again to keep them). The data must
be the run's own: a built-in dataset is rebuilt and compared with the recorded hash; a text
file or shard directory must be named again with --dataset (a checkpoint never decides which
file is read) and is compared too (a shard directory by its index: the tokeniser's SHA-256,
the inputs' fingerprint and the split sizes).

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

Every GPTConfig field has a flag (--arch llama, --n-kv-heads, --rope-theta and
--ffn-multiple-of for the Llama-style model); an unknown name is a usage error.

A resumed run replays exactly on the CPU. Ctrl-C stops after the current step with a
checkpoint; a NaN or infinite loss stops with an error naming the step, keeping the last
checkpoint, and no checkpoint holding a non-finite value is ever written.

Data parallelism: ``mpiexec -n N tricycle-train ...`` (or ``python train_smol_gpt.py``) trains
on N processes (one GPU each with --device gpu, through NCCL), each on batch_size / N of every
global batch: the same global batch, and so the same run, as one process. Rank 0 alone holds
--out-dir and writes files and logs; checkpoints resume at any N that divides the batch.
--zero shards AdamW's state over the ranks (ZeRO-1).
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from tqdm import tqdm

from tricycle import backend
from tricycle.apps.checkpoint import CheckpointError, atomic_write_text
from tricycle.apps.cli import (
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
from tricycle.apps.corpora import (
    DATASETS,
    TrainingData,
    data_differences,
    load_data,
    retokenise,
)
from tricycle.apps.cpu import cpu_threads, threads_per_process, tune_cpu_allocator
from tricycle.apps.evaluate import hellaswag_hook, sample_hook, sample_text
from tricycle.apps.files import DirectoryLocked
from tricycle.apps.gpt_trainer import gpt_trainer
from tricycle.apps.precompile import precompile_gpt
from tricycle.apps.pretrained import fine_tuning_config, load_pretrained, pretrained_weights
from tricycle.apps.runs import (
    RunDirectory,
    _tokeniser_from_text,
    check_config_fits,
    read_weights,
    tokeniser_sha256,
    tokeniser_text,
)
from tricycle.apps.training import TrainingDiverged, precision_for
from tricycle.backend import cupy_available
from tricycle.blocks import ACTIVATIONS
from tricycle.capture import CaptureError
from tricycle.configs import ARCHS, CONFIGS, GPTConfig, get_config
from tricycle.parallel import distributed
from tricycle.random import manual_seed
from tricycle_datasets.hellaswag import read_examples

# the settings beside the config's fields, with their defaults
DEFAULTS = {"config": "cpu", "dataset": "python-code", "seed": 1337, "max_bytes": 4_000_000,
            "precision": "fp32", "lr_decay_iters": None, "data_order": "random",
            "init_from": None}  # fmt: skip
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
    "batch_size": (positive_int, "batch_size", "sequences per micro-batch (all processes)"),
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
    "arch": (str, "arch", "gpt2 (GPT) or llama (RoPE, grouped-query attention, SwiGLU)"),
    "n_kv_heads": (positive_int, "n_kv_heads", "llama: key/value heads (divides --n-head; "
                   "default: one per head)"),
    "rope_theta": (positive_float, "rope_theta", "llama: RoPE's base"),
    "ffn_multiple_of": (positive_int, "ffn_multiple_of", "llama: the SwiGLU width is rounded "
                        "up to a multiple of this"),
    "norm_eps": (positive_float, "norm_eps", "the norms' epsilon (default: 1e-5 for gpt2, "
                 "1e-6 for llama)"),
}  # fmt: skip
CHOICES = {"activation": sorted(ACTIVATIONS), "eval_protocol": ["sequential", "random"],
           "device": ["cpu", "gpu"], "arch": list(ARCHS)}  # fmt: skip
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
        "`python -m pydoc tricycle.apps.train` for the files, the resume rules and the mapping.",
    )
    add = parser.add_argument
    add("--config", choices=sorted(CONFIGS), help="base config (default: cpu)")
    add("--config-file", type=Path, help="a JSON object of settings ({\"n_layer\": 4, ...}); "
        "flags on the command line override it")  # fmt: skip
    add("--dataset", help=f"one of {', '.join(DATASETS)} (default: python-code), a UTF-8 "
        "text file, or a directory of token shards (tricycle_datasets.prepare)")  # fmt: skip
    add("--data-order", choices=["random", "sequential"], help="shards: windows at random "
        "offsets (default) or in order")  # fmt: skip
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
    add("--init-from", metavar="gpt2|DIR", help="fine-tune a pretrained model: a Hugging Face "
        "model directory, or a hub name (downloaded when online)")  # fmt: skip
    add("--overwrite", action="store_true", help="replace the run already in --out-dir")
    add("--stop-after", type=positive_int, help="stop (with a checkpoint) after N steps")
    add("--max-seconds", type=positive_float, help="stop (with a checkpoint) after this much "
        "training time")  # fmt: skip
    add("--threads", type=positive_int, help="CPU threads for the compiled kernels and BLAS "
        "(default: TRICYCLE_THREADS, else one per core, shared out between the processes "
        "that mpiexec starts on one machine)")  # fmt: skip
    add("--data-dir", type=Path, help="folder with tinyshakespeare.txt (else $TRICYCLE_DATA_DIR)")
    add("--log-interval", type=positive_int, help="read the loss every N steps (1 CPU, 10 GPU)")
    add("--sample-tokens", type=nonnegative_int, default=200, help="tokens per sample (0: no "
        "sample at the end)")  # fmt: skip
    add("--sample-interval", type=positive_int, help="write a sample every N steps")
    add("--sample-prompt", help="the samples' prompt (default: the first line of the "
        "validation text)")  # fmt: skip
    add("--eval-hellaswag", type=Path, metavar="FILE", help="score this HellaSwag JSONL file "
        "at each evaluation (hellaswag_acc, hellaswag_acc_norm)")  # fmt: skip
    add("--hellaswag-limit", type=positive_int, metavar="N", help="only its first N examples")
    add("--no-progress", action="store_true", help="no progress bar")
    add("--plot-log", action="store_true", help="draw loss.png with a log-scale loss axis")
    add("--zero", action="store_true",
        help="under mpiexec: shard AdamW's state over the processes (ZeRO-1)")  # fmt: skip
    add("--cuda-graph", choices=["auto", "on", "off"], default="auto", help="capture the "
        "training step as a CUDA graph after 2 steps and replay it (GPU); auto (default): on a "
        "GPU")  # fmt: skip
    return parser


def use_cuda_graph(choice: str, config: GPTConfig, world: distributed.World, zero: bool) -> bool:
    """--cuda-graph: "on", "off", or "auto": on a GPU (the captured step holds data
    parallelism's all-reduces and ZeRO-1's all-gathers; ``zero`` is kept for callers)."""
    if choice != "auto":
        return choice == "on"
    return config.device == "gpu"


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    argv = normalise(sys.argv[1:] if argv is None else list(argv), NANOGPT_NAMES)
    args = parser.parse_args(argv)
    if args.config_file is not None:  # the file's settings first: the command line wins
        file = settings_file(parser, args.config_file, NANOGPT_NAMES)
        args = parser.parse_args(file + argv)
    if args.sample_interval is not None and args.sample_tokens == 0:
        parser.error("--sample-interval: samples need --sample-tokens >= 1")
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
    for flag in (
        "config",
        "seed",
        "max_bytes",
        "lr_decay_iters",
        "precision",
        "data_order",
        "init_from",
    ):
        value, recorded = getattr(args, flag), run["settings"].get(flag, DEFAULTS[flag])
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


def hooks_for(args, data: TrainingData) -> list:
    """The run's hooks: HellaSwag at each evaluation, samples every --sample-interval steps."""
    hooks = []
    if args.eval_hellaswag is not None:
        try:
            examples = read_examples(args.eval_hellaswag, args.hellaswag_limit)
            hooks.append(hellaswag_hook(data.tokeniser, examples))
        except (OSError, ValueError) as error:
            raise SystemExit(f"--eval-hellaswag {args.eval_hellaswag}: {error}") from None
    if args.sample_interval is not None:
        hooks.append(sample_hook(data.tokeniser, args.sample_interval, sample_prompt(args, data),
                                 args.sample_tokens))  # fmt: skip
    return hooks


def sample_prompt(args, data: TrainingData) -> str:
    """--sample-prompt, else the first line of the validation text; checked: the tokeniser
    must encode it."""
    prompt = data.first_line if args.sample_prompt is None else args.sample_prompt
    try:
        data.tokeniser.encode(prompt)
    except ValueError as error:
        raise SystemExit(f"--sample-prompt: {error}") from None
    return prompt


def train(args) -> dict:
    """Run (or resume) training as ``args`` say, holding --out-dir's lock; returns a summary."""
    tune_cpu_allocator()
    run_dir = RunDirectory(args.out_dir)
    if args.resume and not run_dir.checkpoint.is_file():  # before the lock makes the folder
        raise SystemExit(
            f"--resume: no checkpoint in {run_dir.path} (no run, or one stopped before its "
            "first checkpoint: start it again with --overwrite)"
        )
    if not distributed.init().is_main:  # rank 0 alone holds the directory and writes to it
        return _train(args, run_dir)
    try:
        notes = run_dir.open()
    except DirectoryLocked as error:
        raise SystemExit(f"--out-dir: {error}") from None
    failed = True
    try:
        for note in notes:
            print(note, file=sys.stderr)
        summary = _train(args, run_dir)
        failed = False
        return summary
    finally:
        run_dir.close(failed)  # a run that failed before writing leaves no directory


def _train(args, run_dir: RunDirectory) -> dict:
    checkpoint, applied = None, []
    if args.resume:
        try:
            checkpoint = run_dir.load_state()
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
        settings.setdefault("data_order", DEFAULTS["data_order"])  # a run from before the flag
        settings.setdefault("init_from", None)
        if config.steps < checkpoint["step"]:
            raise SystemExit(
                f"--resume: --steps {config.steps} is before the run's step "
                f"{checkpoint['step']}: nothing to train; pass --steps above it to go on"
            )
    else:
        existing = run_dir.existing_files() if distributed.init().is_main else []
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
    pretrained = None  # (model, tokeniser) to start from, or (None, the run's) on resume
    if settings["init_from"] is not None:
        pretrained, config = _init_from(args, settings["init_from"], config, checkpoint)
    if config.device == "gpu" and args.device is None and not cupy_available():
        print("no GPU found: training on the CPU (pass --device to choose)", file=sys.stderr)
        config.device = "cpu"
    world = distributed.init(gpu=config.device == "gpu")  # one GPU per process
    main = world.is_main  # the one process that writes files and logs
    precompile_gpt(config, settings["precision"])  # the CPU kernels, while the data load
    dataset = settings["dataset"]
    try:
        given = checkpoint is not None or args.vocab_size is not None  # else the data decide
        vocab_size = config.vocab_size
        if pretrained is None:
            data = load_data(settings, config, args.data_dir, vocab_size_given=given)
        else:  # the corpus's text (as bytes: no merges to learn) in the model's tokens
            as_bytes = dataclasses.replace(config, vocab_size=256)
            data = load_data(settings, as_bytes, args.data_dir, vocab_size_given=True)
            data = retokenise(data, pretrained[1])
        policy = precision_for(settings["precision"], config.device)
    except (ValueError, OSError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    if checkpoint is not None:
        recorded = run.get("data") or {"data_sha256": run.get("data_sha256")}
        differences = data_differences(data.identity, recorded)
        if differences:
            raise SystemExit(f"--resume: the data of --dataset {dataset} are not those the run "
                             f"trained on: {'; '.join(differences)}")  # fmt: skip
    if config.vocab_size != vocab_size and main:
        print(f"vocabulary: {config.vocab_size:,} ids, the data's {data.tokeniser.n_tokens:,} "
              "rounded up to a multiple of 64 (--vocab-size sets it)", file=sys.stderr)  # fmt: skip
    hooks = hooks_for(args, data)
    for change in applied if main else ():
        print(f"--resume: applying {change}", file=sys.stderr)
    tokeniser = tokeniser_text(data.tokeniser)
    run = {"settings": settings, "config": config.to_dict(), "data": data.identity,
           "tokeniser_sha256": tokeniser_sha256(tokeniser),
           "world_size": world.world_size, "zero": args.zero}  # fmt: skip
    manual_seed(settings["seed"])  # model initialisation and dropout seeds
    try:
        trainer = gpt_trainer(
            config, data.train, data.valid, policy=policy, seed=settings["seed"],
            decay_steps=settings["lr_decay_iters"], world=world, zero=args.zero, hooks=hooks,
            cuda_graph=use_cuda_graph(args.cuda_graph, config, world, args.zero),
        )  # fmt: skip
    except (ValueError, CaptureError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    if pretrained is not None and pretrained[0] is not None:
        trainer.model.load_state_dict(pretrained_weights(pretrained[0], config))
    if trainer.valid_data is None and main:
        print("warning: the validation text is too short: no validation loss", file=sys.stderr)
    if checkpoint is not None:
        try:
            trainer.load_state_dict(checkpoint)
        except (KeyError, ValueError, TypeError) as error:
            raise SystemExit(f"--resume: {run_dir.checkpoint} does not fit: {error}") from None
    log_interval = args.log_interval or (10 if config.device == "gpu" else 1)
    if main:
        if checkpoint is not None and trainer.step == config.steps:
            print(f"the run in {run_dir.path} is complete ({config.steps} steps)",
                  file=sys.stderr)  # fmt: skip
        _start_run_files(run_dir, run, tokeniser, trainer)
        print(
            f"--config {settings['config']}, --arch {config.arch}: "
            f"{trainer.model.num_parameters():,} parameters, "
            f"{data.n_train_tokens:,} training tokens from {dataset!r}, "
            f"{config.tokens_per_step:,} tokens per step, steps {trainer.step}..{config.steps}, "
            f"world size {world.world_size}",
            file=sys.stderr,
        )
        print(f"precision: {policy!r}, loss read back every {log_interval} steps",
              file=sys.stderr)  # fmt: skip
        if args.zero:
            state_mib = trainer.optimiser.state_bytes() / 2**20
            print(f"ZeRO-1: AdamW state {state_mib:.1f} MiB on this rank", file=sys.stderr)
    bar = tqdm(initial=trainer.step, total=config.steps, disable=args.no_progress or not main)

    def progress(record: dict) -> None:
        bar.update(record["step"] - bar.n)
        postfix = {"loss": f"{record['loss']:.3f}", "tok_s": f"{record['tokens_per_s']:,.0f}"}
        if policy.scaler is not None:
            postfix["skipped"] = record["skipped_steps"]
        bar.set_postfix(postfix)

    try:
        summary = trainer.fit(
            config.steps, run_dir=run_dir, metadata={**run, "tokeniser": tokeniser},
            log_interval=log_interval, max_seconds=args.max_seconds, stop_after=args.stop_after,
            on_record=progress, on_message=lambda text: tqdm.write(text, file=sys.stderr),
            loss_plot="log" if args.plot_log else "linear",
        )  # fmt: skip
    except (TrainingDiverged, CheckpointError) as error:
        kind = "training diverged" if isinstance(error, TrainingDiverged) else "error"
        raise SystemExit(f"{kind}: {error}") from None
    finally:
        bar.close()
    world.finalize()
    summary["out_dir"] = str(run_dir.path)
    if config.device == "gpu":  # cupy's pool keeps what it was given: its high-water mark
        pool_bytes = backend.cupy().get_default_memory_pool().total_bytes()
        summary["gpu_pool_mib"] = round(pool_bytes / 2**20)
    if not main:
        return summary
    if summary["ended"] == "interrupted":
        again = f"--out-dir {run_dir.path} --resume"
        again += "" if dataset in DATASETS else f" --dataset {dataset}"
        print(f"interrupted: saved {run_dir.checkpoint} at step {summary['steps']}; resume "
              f"with\n    tricycle-train {again}", file=sys.stderr)  # fmt: skip
    elif args.sample_tokens and summary["steps"] == config.steps:
        model, weights = best_model(trainer, run_dir)
        summary["sample"] = sample_text(model, data.tokeniser, sample_prompt(args, data),
                                        args.sample_tokens, seed=settings["seed"])  # fmt: skip
        whence = ("the validation text's first line" if args.sample_prompt is None
                  else "--sample-prompt")  # fmt: skip
        print(f"sample: {args.sample_tokens} tokens after {whence}, from {weights}",
              file=sys.stderr)  # fmt: skip
        print(f"\n----- sample -----\n{summary['sample']}\n------------------")
    print(json.dumps({k: v for k, v in summary.items() if k != "sample"}), file=sys.stderr)
    return summary


def _init_from(args, name: str, config: GPTConfig, checkpoint) -> tuple[tuple, GPTConfig]:
    """((model, tokeniser), config) of --init-from: a new run takes the pretrained model's
    architecture into ``config``; a resumed one keeps its config and recorded tokeniser (its
    weights are the checkpoint's)."""
    if checkpoint is not None:
        text = checkpoint["run"]["tokeniser"]
        return (None, _tokeniser_from_text(text, Path(args.out_dir))), config
    try:
        model, tokeniser = load_pretrained(name)
        given = {field: getattr(args, flag) for flag, (_, field, _) in CONFIG_FLAGS.items()
                 if getattr(args, flag) is not None}  # fmt: skip
        config = fine_tuning_config(config, model.config, given)
    except (CheckpointError, ValueError) as error:
        raise SystemExit(f"--init-from {name}: {error}") from None
    return (model, tokeniser), config


def best_model(trainer, run_dir: RunDirectory):
    """The trained model with the run's best weights (best.safetensors, or a resumed
    layout-1 run's best.npz: its lowest validation loss) put back, for the sample at the
    end, and which weights they are, in words."""
    best, path = trainer.best, run_dir.weights("best")
    if best is None or best["step"] == trainer.step or path.stem != "best":
        return trainer.model, f"the last weights (step {trainer.step})"
    try:
        trainer.model.load_state_dict(read_weights(path)["model"])
    except (CheckpointError, KeyError, ValueError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    return trainer.model, (
        f"the best weights (step {best['step']}, val loss {best['val_loss']:.4f})"
    )


def _start_run_files(run_dir: RunDirectory, run: dict, tokeniser: str, trainer) -> None:
    """The run's tokeniser (its file's text) and config.json, and its metrics cut back to
    the trainer's step."""
    atomic_write_text(run_dir / RunDirectory.TOKENISER, tokeniser)
    atomic_write_text(run_dir / RunDirectory.CONFIG, json.dumps(run, indent=2) + "\n")
    if run_dir.restart_metrics(trainer.step):
        print(f"{run_dir / RunDirectory.METRICS}: dropped a torn line", file=sys.stderr)


def run(argv=None) -> dict:
    """Parse ``argv``, set the CPU threads for the run and train; returns the summary (for
    tests and programs that call the CLI)."""
    args = parse_args(argv)
    # importing the library changes no setting: the program asks, for the run only
    with cpu_threads(threads_per_process(args.threads, distributed.init().local_size)):
        return train(args)


def main(argv=None) -> int:
    """The console entry point: train; the exit status is 130 after Ctrl-C."""
    try:
        with distributed.fail_together():  # an error on one rank ends every rank at once
            summary = run(argv)
    except KeyboardInterrupt:  # outside the loop (loading data), or a second Ctrl-C
        print("\ninterrupted: stopped without a new checkpoint", file=sys.stderr)
        return 130
    return 130 if summary["ended"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(main())
