"""Experiment trackers for ``Accelerator.log``: MLflow, Weights & Biases and TensorBoard, each
used only when asked for (``log_with=``) and imported only then; asking for one that is not
installed is an error that says how to install it. TensorBoard's is tricycle's own writer
(``tricycle.utils.tensorboard``), which needs no package."""

import importlib
import os


class MLflow:
    """Records metrics into an MLflow run (``mlflow.start_run``), in experiment ``project``."""

    def __init__(self, project: str, config: dict | None):
        self.mlflow = _import("mlflow")
        self.mlflow.set_experiment(project)
        self.mlflow.start_run()
        if config:
            self.mlflow.log_params(config)

    def log(self, record: dict, step: int) -> None:
        numbers = {k: float(v) for k, v in record.items()
                   if k != "step" and isinstance(v, (int, float))}  # fmt: skip
        self.mlflow.log_metrics(numbers, step=step)

    def finish(self) -> None:
        self.mlflow.end_run()


class WandB:
    """Records metrics into a Weights & Biases run of project ``project``."""

    def __init__(self, project: str, config: dict | None):
        self.wandb = _import("wandb")
        self.run = self.wandb.init(project=project, config=config or {})

    def log(self, record: dict, step: int) -> None:
        self.wandb.log({k: v for k, v in record.items() if k != "step"}, step=step)

    def finish(self) -> None:
        self.wandb.finish()


class TensorBoard:
    """Records into TensorBoard event files in ``<logging_dir>/<project>`` as Accelerate's
    tracker does: numbers with ``add_scalar``, strings with ``add_text``, dicts of numbers with
    ``add_scalars``, the config with ``add_hparams``; each ``log`` is flushed to disk."""

    def __init__(self, project: str, config: dict | None, logging_dir=None):
        if logging_dir is None:
            raise ValueError(
                "Accelerator: log_with='tensorboard' needs a project_dir to write its event "
                "files in"
            )
        # by name, when asked for, as the other trackers' packages: tricycle.utils reaches the
        # applications (its DataLoader is theirs), so a plain import would close a loop
        writer = importlib.import_module("tricycle.utils.tensorboard").SummaryWriter
        self.writer = writer(os.path.join(logging_dir, project))
        if config:
            self.writer.add_hparams(dict(config), metric_dict={})
            self.writer.flush()

    def log(self, record: dict, step: int) -> None:
        for name, value in record.items():
            if name == "step":
                continue
            if isinstance(value, (int, float)):
                self.writer.add_scalar(name, value, global_step=step)
            elif isinstance(value, str):
                self.writer.add_text(name, value, global_step=step)
            elif isinstance(value, dict):
                self.writer.add_scalars(name, value, global_step=step)
        self.writer.flush()

    def finish(self) -> None:
        self.writer.close()


TRACKERS = {"mlflow": MLflow, "wandb": WandB, "tensorboard": TensorBoard}


def make_trackers(log_with, project: str, config: dict | None, logging_dir=None) -> list:
    """The trackers named in ``log_with`` (a name or a list of names); TensorBoard's writes
    under ``logging_dir``."""
    names = [log_with] if isinstance(log_with, str) else list(log_with or ())
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(
            f"Accelerator: log_with must name trackers among {sorted(TRACKERS)}, got {unknown}"
        )
    return [
        TensorBoard(project, config, logging_dir)
        if name == "tensorboard"
        else TRACKERS[name](project, config)
        for name in names
    ]


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ImportError(
            f"Accelerator: log_with={name!r} needs the {name} package (pip install {name})"
        ) from error


__all__ = ["MLflow", "TensorBoard", "WandB", "make_trackers"]
