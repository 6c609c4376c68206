"""The picture of a run: every training run draws loss.png beside metrics.jsonl, says where,
and draws the whole run again when it is resumed."""

import numpy as np
import pytest
from matplotlib.image import imread

from tests.test_train import corpus, one_blas_thread, run  # noqa: F401 - fixtures
from tricycle.apps.plot import plot_losses


def drawn_pixels(path) -> np.ndarray:
    """(H, W, RGB) of a PNG, after checking it is one."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)[..., :3]


def coloured(image: np.ndarray, rgb: tuple) -> int:
    """Pixels within 0.15 of the colour ``rgb`` (0..1)."""
    return int((np.abs(image - np.asarray(rgb)).max(axis=-1) < 0.15).sum())


BLUE, ORANGE = (0.12, 0.47, 0.71), (1.0, 0.5, 0.05)  # matplotlib's tab:blue and tab:orange


def test_a_run_draws_its_losses_and_says_where(corpus, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "run"
    run(corpus, out, "--steps", "20", "--eval-interval", "10")
    picture = out / "loss.png"
    assert f"loss curve: {picture}" in capsys.readouterr().err
    image = drawn_pixels(picture)
    assert image.shape == (400, 700, 3)  # 7 x 4 inches at 100 dpi
    assert (image < 0.9).any(axis=-1).mean() > 0.02  # axes, labels and curves: not blank
    assert coloured(image, BLUE) > 100  # the training curve
    assert coloured(image, ORANGE) > 20  # the validation points


def test_a_resumed_run_draws_the_whole_run(corpus, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "run"
    run(corpus, out, "--steps", "20", "--eval-interval", "10", "--stop-after", "10")
    first = drawn_pixels(out / "loss.png")
    run(corpus, out, "--steps", "20", "--resume")
    assert "loss curve" in capsys.readouterr().err
    assert not np.array_equal(drawn_pixels(out / "loss.png"), first)  # steps 11-20 added


def test_the_log_scale_flag_draws_another_picture(corpus, tmp_path):  # noqa: F811
    run(corpus, tmp_path / "linear", "--steps", "10")
    run(corpus, tmp_path / "log", "--steps", "10", "--plot-log")
    linear = drawn_pixels(tmp_path / "linear" / "loss.png")
    log = drawn_pixels(tmp_path / "log" / "loss.png")
    assert linear.shape == log.shape and not np.array_equal(linear, log)


def test_plot_losses_draws_without_pyplot(tmp_path):
    """No pyplot: the program's matplotlib state (its backend, its figures) is untouched."""
    pyplot = pytest.importorskip("matplotlib.pyplot")
    figures = pyplot.get_fignums()
    records = [{"step": s, "loss": 5 / s, "val_loss": 5 / s if s % 5 == 0 else None}
               for s in range(1, 21)]  # fmt: skip
    plot_losses(records, tmp_path / "loss.png", log_scale=True)
    assert pyplot.get_fignums() == figures
    assert coloured(drawn_pixels(tmp_path / "loss.png"), ORANGE) > 20
