"""Where a training run's settings come from: a new run's from the flags, a resumed run's from
its checkpoint (with the changes --resume allows), a fine-tuned run's architecture from its
pretrained model. Each is checked here, at the boundary: a mistake is one line, naming it."""

from pathlib import Path

from tricycle.apps.checkpoint import CheckpointError
from tricycle.apps.corpora import DATASETS, data_differences
from tricycle.apps.pretrained import fine_tuning_config, load_pretrained, pretrained_weights
from tricycle.apps.runs import RunDirectory, _tokeniser_from_text, check_config_fits
from tricycle.apps.train_flags import CONFIG_FLAGS, DEFAULTS, build_config, resume_settings
from tricycle.configs import GPTConfig


def new_run(args, run_dir: RunDirectory, main: bool) -> tuple[GPTConfig, dict]:
    """(config, settings) of a new run in ``run_dir``, whose files of another run are removed
    with --overwrite and refused without (``main``: this process holds the directory)."""
    existing = run_dir.existing_files() if main else []
    if existing and not args.overwrite:
        raise SystemExit(
            f"--out-dir {run_dir.path} already holds a run ({', '.join(existing)}): pass "
            "--resume to continue it, --overwrite to replace it, or another --out-dir"
        )
    for name in existing:  # --overwrite: nothing of the old run may outlive it
        (run_dir / name).unlink()
    settings = {k: getattr(args, k) if getattr(args, k) is not None else v
                for k, v in DEFAULTS.items()}  # fmt: skip
    return build_config(args), settings


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
    return checkpoint, config, settings, applied


def check_resumed_data(identity: dict, checkpoint: dict, dataset: str) -> None:
    """Refuse data (``identity``: ``TrainingData.identity``) other than the resumed run's."""
    run = checkpoint["run"]
    recorded = run.get("data") or {"data_sha256": run.get("data_sha256")}
    differences = data_differences(identity, recorded)
    if differences:
        raise SystemExit(f"--resume: the data of --dataset {dataset} are not those the run "
                         f"trained on: {'; '.join(differences)}")  # fmt: skip


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
