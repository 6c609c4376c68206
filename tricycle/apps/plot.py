"""The picture of a run: its loss curve, drawn into a PNG beside its metrics.

A learner would rather look than read: ``Trainer.fit`` draws ``loss.png`` from the run's
``metrics.jsonl`` (the training loss at every step, the validation loss where it was measured)
when it stops, however it stops, so that a resumed run's picture holds the whole run.

It draws with matplotlib's ``Figure`` and its Agg canvas directly, never through ``pyplot``:
no window, no global figure registry, no backend switched for the program that trains.
"""

import importlib
import threading
from pathlib import Path

from tricycle.apps.files import atomic_write

__all__ = ["plot_losses", "import_in_background"]
MODULES = ("matplotlib.backends.backend_agg", "matplotlib.figure", "matplotlib.ticker")
_importing: threading.Thread | None = None  # once a process


def import_in_background() -> None:
    """Start importing matplotlib's drawing modules on a thread of their own, so that the
    picture drawn when a run stops does not wait for the import (it takes longer than the
    drawing). The import lock makes ``plot_losses`` wait for an import
    still under way; a missing matplotlib is ``plot_losses``' ImportError, as before."""
    global _importing
    if _importing is not None:
        return

    def load() -> None:
        try:
            for name in MODULES:
                importlib.import_module(name)
        except ImportError:
            pass

    _importing = threading.Thread(target=load, name="tricycle-plot-import", daemon=True)
    _importing.start()


def plot_losses(records: list[dict], path, log_scale: bool = False, title: str = "") -> Path:
    """Draw the losses of ``records`` (metrics.jsonl's dicts: ``step``, ``loss``,
    ``val_loss``) into the PNG ``path``, atomically; ``log_scale`` puts the loss axis on a log
    scale (where the loss falls by orders of magnitude). Returns the path. Raises ImportError
    without matplotlib."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - slow import
    from matplotlib.figure import Figure  # noqa: PLC0415
    from matplotlib.ticker import ScalarFormatter  # noqa: PLC0415

    train = [(r["step"], r["loss"]) for r in records if r.get("loss") is not None]
    valid = [(r["step"], r["val_loss"]) for r in records if r.get("val_loss") is not None]
    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)  # the figure's canvas: renders to pixels, no window
    ax = figure.add_subplot()
    if train:
        ax.plot(*zip(*train), label="train", color="tab:blue", linewidth=1.2)
    if valid:
        ax.plot(*zip(*valid), "o-", label="validation", color="tab:orange", markersize=4)
    if log_scale:
        ax.set_yscale("log")
        plain = ScalarFormatter()  # 3, 4, 6 rather than 3x10^0: losses span one decade or two
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
    ax.set(xlabel="step", ylabel="cross-entropy loss (nats per token)", title=title)
    ax.grid(True, alpha=0.3)
    if train or valid:
        ax.legend()
    figure.tight_layout()
    path = Path(path)
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png")
    return path
