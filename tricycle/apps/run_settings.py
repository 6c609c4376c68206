"""Where a training run's settings come from: a new run's from the flags, a resumed run's from
its checkpoint (with the changes --resume allows), a fine-tuned run's architecture from its
pretrained model. Each is checked here, at the boundary: a mistake is one line, naming it.

``settle`` is the whole of it, the first stage of ``tricycle-train``: what it returns, a
``RunPlan``, is everything the run decided before any data or model is loaded."""

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tricycle.apps.checkpoint import CheckpointError
from tricycle.apps.pretrained import fine_tuning_config, load_pretrained, pretrained_weights
from tricycle.apps.runs import RunDirectory, _tokeniser_from_text, check_config_fits
from tricycle.apps.step import precision_for
from tricycle.apps.train_flags import CONFIG_FLAGS, DEFAULTS, build_config, resume_settings
from tricycle.backend import cupy_available
from tricycle.configs import GPTConfig
from tricycle.parallel.distributed import SameOnEveryRank
from tricycle_datasets.run_data import DATASETS


@dataclass
class RunPlan:
    """What a run decided before loading anything: its ``config`` and ``settings`` (the
    flags', or the resumed run's) and its precision ``policy``; on --resume its
    ``checkpoint`` and the changes ``applied`` to it; on --init-from the pretrained
    ``weights`` (a new run's) and ``tokeniser``; with --overwrite, the old run's files it
    ``replaces``, removed only once the new run starts writing (``tricycle.apps.train``), so
    that a mistake found while loading loses nothing."""

    config: GPTConfig
    settings: dict
    policy: Any = None
    checkpoint: dict | None = None
    applied: list[str] = field(default_factory=list)
    weights: dict | None = None
    tokeniser: Any = None
    replaces: list[str] = field(default_factory=list)

    @property
    def recorded_data(self) -> dict | None:
        """The identity of the data the resumed run trained on (None: a new run)."""
        if self.checkpoint is None:
            return None
        run = self.checkpoint["run"]
        return run.get("data") or {"data_sha256": run.get("data_sha256")}  # older runs'


def settle(args, run_dir: RunDirectory, main: bool) -> RunPlan:
    """The run's settings, checked: a new run's (``new_run``, ``main``: this process holds
    ``run_dir``) or a resumed one's (``resumed_run``), a pretrained model's architecture and
    weights (``init_from``), and the device (a GPU config without a GPU trains on the CPU,
    unless --device says so)."""
    checkpoint, applied, weights, tokeniser, replaces = None, [], None, None, []
    if args.resume:
        checkpoint, config, settings, applied = resumed_run(args, run_dir)
    else:
        config, settings, replaces = new_run(args, run_dir, main)
    if settings["init_from"] is not None:
        (weights, tokeniser), config = init_from(args, settings["init_from"], config, checkpoint)
    if config.device == "gpu" and args.device is None and not cupy_available():
        print("no GPU found: training on the CPU (pass --device to choose)", file=sys.stderr)
        config.device = "cpu"
    try:
        policy = precision_for(settings["precision"], config.device)
    except ValueError as error:
        raise SameOnEveryRank(f"tricycle-train: {error}") from None
    return RunPlan(config, settings, policy, checkpoint, applied, weights, tokeniser, replaces)


def new_run(args, run_dir: RunDirectory, main: bool) -> tuple[GPTConfig, dict, list[str]]:
    """(config, settings, the files of another run it replaces) of a new run in ``run_dir``:
    another run's files are refused without --overwrite (``main``: this process holds the
    directory)."""
    existing = run_dir.existing_files() if main else []
    if existing and not args.overwrite and not run_dir.checkpoint.is_file():
        raise SystemExit(
            f"--out-dir {run_dir.path} already holds a run that stopped before its first "
            f"checkpoint ({', '.join(existing)}): pass --overwrite to start it again, or "
            "another --out-dir"
        )
    if existing and not args.overwrite:
        raise SystemExit(
            f"--out-dir {run_dir.path} already holds a run ({', '.join(existing)}): pass "
            "--resume to continue it, --overwrite to replace it, or another --out-dir"
        )
    settings = {k: getattr(args, k) if getattr(args, k) is not None else v
                for k, v in DEFAULTS.items()}  # fmt: skip
    return build_config(args), settings, existing


def resumed_run(args, run_dir: RunDirectory) -> tuple[dict, GPTConfig, dict, list[str]]:
    """(checkpoint, config, settings, the changes applied) of the run that --resume
    continues: its own, with the flags that may change applied; the others refused."""
    try:
        checkpoint = run_dir.load_state()
    except CheckpointError as error:
        raise SystemExit(f"--resume: {error}") from None
    run = checkpoint.get("run")
    try:
        config, applied = resume_settings(args, run)
        check_config_fits(config, checkpoint.get("model"))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SameOnEveryRank(f"--resume: {run_dir.checkpoint} is not a run this version of "
                         f"tricycle-train can resume ({error})") from None  # fmt: skip
    settings = run["settings"]
    if settings["dataset"] not in DATASETS and args.dataset is None:
        raise SameOnEveryRank(
            f"--resume: the run trained on the file {settings['dataset']}; name it again "
            "with --dataset (a checkpoint alone never decides which file is read)"
        )
    settings.update(dataset=args.dataset or settings["dataset"],
                    precision=args.precision or settings["precision"])  # fmt: skip
    settings.setdefault("data_order", DEFAULTS["data_order"])  # a run from before the flag
    settings.setdefault("init_from", None)
    if config.steps < checkpoint["step"]:
        raise SameOnEveryRank(
            f"--resume: --steps {config.steps} is before the run's step "
            f"{checkpoint['step']}: nothing to train; pass --steps above it to go on"
        )
    return checkpoint, config, settings, applied


def init_from(args, name: str, config: GPTConfig, checkpoint) -> tuple[tuple, GPTConfig]:
    """((weights, tokeniser), config) of --init-from: a new run takes the pretrained model's
    architecture into ``config`` and its weights, in tricycle's names; a resumed one keeps
    its config and recorded tokeniser (weights None: they are the checkpoint's)."""
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
    return (pretrained_weights(model, config), tokeniser), config
