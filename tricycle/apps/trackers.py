"""Experiment trackers for ``Accelerator.log``: MLflow and Weights & Biases, each used only
when asked for (``log_with=``) and imported only then; asking for one that is not installed
is an error that says how to install it."""

import importlib


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


TRACKERS = {"mlflow": MLflow, "wandb": WandB}


def make_trackers(log_with, project: str, config: dict | None) -> list:
    """The trackers named in ``log_with`` (a name or a list of names)."""
    names = [log_with] if isinstance(log_with, str) else list(log_with or ())
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(
            f"Accelerator: log_with must name trackers among {sorted(TRACKERS)}, got {unknown}"
        )
    return [TRACKERS[name](project, config) for name in names]


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ImportError(
            f"Accelerator: log_with={name!r} needs the {name} package (pip install {name})"
        ) from error


__all__ = ["MLflow", "WandB", "make_trackers"]
