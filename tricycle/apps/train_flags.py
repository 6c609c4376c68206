"""The training CLI's flags (``tricycle-train``, ``train_smol_gpt.py``): parsed once into
plain values, a ``GPTConfig`` and the settings beside it.

Every ``GPTConfig`` field has a flag (``CONFIG_FLAGS``); nanoGPT's names and ``_`` for ``-``
are accepted (``normalise``), and a JSON settings file (--config-file) is read as flags that
the command line overrides. ``resume_settings`` is what --resume may change and what it
refuses. See ``python -m pydoc tricycle.apps.train`` for the whole program.
"""

import argparse
import json
import re
import sys
from pathlib import Path

from tricycle.apps.cli import (
    Parser,
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
from tricycle.backend import cupy_available
from tricycle.blocks import ACTIVATIONS
from tricycle.configs import ARCHS, ATTENTION_BIASES, CONFIGS, GPTConfig, get_config
from tricycle.parallel.distributed import SameOnEveryRank
from tricycle_datasets.run_data import DATASETS


def json_object(text: str) -> dict:
    """A JSON object (--rope-scaling's); the config checks its fields."""
    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}")
    return value


# the settings beside the config's fields, with their defaults
DEFAULTS = {"config": "cpu", "dataset": "python-code", "seed": 1337, "max_bytes": 4_000_000,
            "precision": "fp32", "lr_decay_iters": None, "data_order": "random",
            "init_from": None}  # fmt: skip
# --flag: (type, the GPTConfig field it sets, help); every field has one
CONFIG_FLAGS = {
    "n_layer": (positive_int, "n_layers", "transformer blocks"),
    "n_head": (positive_int, "n_heads", "attention heads (must divide --n-embd, unless "
               "--head-dim is given)"),
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
    "rope_scaling": (json_object, "rope_scaling", "llama: RoPE slowed for a longer context, "
                     "a JSON object: {\"rope_type\": \"linear\", \"factor\": 2} or Llama 3.1's "
                     "\"llama3\" (factor, low_freq_factor, high_freq_factor, "
                     "original_max_position_embeddings)"),
    "attention_bias": (str, "attention_bias", "llama: attention biases: none, qkv (Qwen2's) "
                       "or all (q, k, v and the output)"),
    "head_dim": (positive_int, "head_dim", "llama: each attention head's size (default: "
                 "--n-embd / --n-head)"),
    "qk_norm": (boolean, "qk_norm", "llama: an RMSNorm on each query and key head (Qwen3's)"),
}  # fmt: skip
CHOICES = {"activation": sorted(ACTIVATIONS), "eval_protocol": ["sequential", "random"],
           "device": ["cpu", "gpu"], "arch": list(ARCHS),
           "attention_bias": list(ATTENTION_BIASES)}  # fmt: skip
# nanoGPT's names (train.py's globals) for the flags whose names differ; see the docstring
NANOGPT_NAMES = {"max_iters": "steps", "learning_rate": "lr", "warmup_iters": "warmup",
                 "block_size": "context_window", "eval_iters": "eval_steps",
                 "n_layers": "n_layer", "n_heads": "n_head", "embedding_dim": "n_embd",
                 "dtype": "precision"}  # fmt: skip
# nanoGPT's dtype values (torch's names) for --precision's
DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
# config fields --resume may change (with --precision): they decide how long, how often and
# where (a new --steps also moves the cosine decay's end, unless --lr-decay-iters is set)
RESUME_MAY_CHANGE = {"steps", "device", "eval_interval", "eval_steps", "eval_protocol"}
SAMPLE_TOKENS = 200  # --sample-tokens' default


def directory(text: str) -> Path:
    """--out-dir's path; an empty one (which would be the current directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (leave the flag out for runs/<config>)")
    return Path(text)


def precision(text: str) -> str:
    """--precision's value, nanoGPT's dtype names (``--dtype=bfloat16``) as ours ("bf16");
    the parser's choices judge the rest."""
    return DTYPES.get(text.strip().lower(), text)


def in_flags(message: str) -> str:
    """A config's error in the command line's words: each field it names as the flag that
    sets it (``embedding_dim=30`` -> ``--n-embd 30``), as the user typed them."""
    flags = {field: "--" + flag.replace("_", "-") for flag, (_, field, _) in CONFIG_FLAGS.items()}
    names = "|".join(sorted(map(re.escape, flags), key=len, reverse=True))

    def flag(match: re.Match) -> str:
        return flags[match[1]] + (" " if match[2] else "")

    return re.sub(rf"(?<![\w-])({names})(?!\w)(=?)", flag, message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    add("--precision", type=precision, choices=["fp32", "tf32", "fp16", "bf16"],
        help="fp32 (default); tf32 matmuls (GPU); fp16 with loss scaling; bf16 (GPU); "
        "nanoGPT's --dtype=float32/float16/bfloat16 too")  # fmt: skip
    add("--seed", type=seed, help="seeds initialisation, data order and dropout (default 1337)")
    add("--max-bytes", type=positive_int, help="size of the python-code corpus (default 4e6)")
    add("--out-dir", type=directory, help="where the run's files go (default: runs/<config>)")
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
    add("--sample-tokens", type=nonnegative_int, default=SAMPLE_TOKENS,
        help=f"tokens per sample (default {SAMPLE_TOKENS}; 0: no sample at the end)")  # fmt: skip
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


def parse_args(argv=None) -> argparse.Namespace:
    parser = build_parser()
    argv = normalise(sys.argv[1:] if argv is None else list(argv), NANOGPT_NAMES)
    args = parser.parse_args(argv)
    if args.config_file is not None:  # the file's settings first: the command line wins
        file = settings_file(parser, args.config_file, NANOGPT_NAMES)
        args = parser.parse_args(file + argv)
    # nanoGPT's init_from: 'scratch' (its default) is a new run, 'resume' is --resume; any
    # other value (a gpt2 name, a directory) is the model to fine-tune
    if args.init_from in ("scratch", "resume") and not Path(args.init_from).exists():
        args.resume, args.init_from = args.resume or args.init_from == "resume", None
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in --out-dir and --overwrite replaces it: "
                     "give one")  # fmt: skip
    if args.out_dir is not None and args.out_dir.exists() and not args.out_dir.is_dir():
        parser.error(f"--out-dir {args.out_dir}: a file, not a directory")
    if args.sample_interval is not None and args.sample_tokens == 0:
        parser.error("--sample-interval: samples need --sample-tokens >= 1")
    if args.device == "gpu" and not cupy_available():  # before the run's folder is touched
        parser.error("--device gpu: no CUDA GPU is available (cupy is not installed or sees no "
                     "device): install the GPU extra on a machine with a GPU, or pass --device "
                     "cpu")  # fmt: skip
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
        raise SameOnEveryRank(f"tricycle-train: {in_flags(str(error))}") from None
    if config.min_learning_rate > config.max_learning_rate:
        if args.min_lr is not None:  # asked for: never silently replaced
            raise SameOnEveryRank(
                f"tricycle-train: --min-lr {args.min_lr:g} is above --lr "
                f"{config.max_learning_rate:g}: the schedule decays from --lr to --min-lr"
            )
        config.min_learning_rate = config.max_learning_rate / 10  # only --lr was lowered
    if args.warmup is not None and args.warmup > config.steps:  # asked for: never clamped
        raise SameOnEveryRank(
            f"tricycle-train: --warmup {args.warmup} is longer than the run (--steps "
            f"{config.steps}): the learning rate would never reach --lr; give a shorter --warmup"
        )
    config.warmup_steps = min(config.warmup_steps, config.steps)  # the default, a short --steps
    if args.lr_decay_iters is not None and args.lr_decay_iters < config.warmup_steps:
        raise SameOnEveryRank(f"tricycle-train: --lr-decay-iters {args.lr_decay_iters} is shorter "
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
        raise SameOnEveryRank(
            f"--resume: these settings differ from the run in {args.out_dir}: "
            + "; ".join(refused)
            + ". Leave them out to continue the run as it was, or start a new run in another "
            "--out-dir."
        )
    config.warmup_steps = min(config.warmup_steps, config.steps)
    return config, applied
