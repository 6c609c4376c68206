"""The examples as a newcomer meets them: --help without the optional packages, one line
naming what to install or which flag to pass, and the same number from the same seed."""

import sys

import numpy as np
import pytest
from helpers import DATA_DIR

from tricycle_datasets import shakespeare
from tricycle_datasets.download import DownloadError

digits_cnn = pytest.importorskip("examples.digits_cnn")
char_lstm = pytest.importorskip("examples.char_lstm")


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Small products: one BLAS thread is fastest, and far faster on a busy machine."""
    try:  # installed with scikit-learn
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No tinyshakespeare.txt anywhere and no network."""

    def no_network(url, path, sha256):
        raise DownloadError(f"could not download {url} to {path}: no network")

    monkeypatch.setattr(shakespeare, "download", no_network)
    monkeypatch.delenv("TRICYCLE_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)


def test_digits_help_and_the_message_without_scikit_learn(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(SystemExit) as done:
        digits_cnn.main(["--help"])
    assert done.value.code == 0 and "--seed" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"needs scikit-learn .*pip install scikit-learn"):
        digits_cnn.main(["--epochs", "1"])


def test_digits_gives_the_same_model_twice_from_one_seed(monkeypatch):
    pytest.importorskip("sklearn")
    split = digits_cnn.load_digits_split

    def small_split(seed):  # a fifth of the training images: the same code, 5x faster
        x_train, x_test, y_train, y_test = split(seed)
        return x_train[:256], x_test, y_train[:256], y_test

    monkeypatch.setattr(digits_cnn, "load_digits_split", small_split)
    first, accuracy = digits_cnn.train(epochs=1, seed=3)
    second, again = digits_cnn.train(epochs=1, seed=3)
    assert accuracy == again
    for (name, a), (_, b) in zip(first.named_parameters(), second.named_parameters()):
        assert np.array_equal(a.array, b.array), name


def test_char_lstm_offline_names_its_flag(offline):
    with pytest.raises(SystemExit) as done:
        char_lstm.main([])
    message = str(done.value.code)
    assert message.startswith("char_lstm.py: tiny-shakespeare is not available offline")
    assert "--data-dir DIR" in message and "Shakespeare(" not in message
    with pytest.raises(SystemExit, match=r"--data-dir nowhere is not a directory"):
        char_lstm.main(["--data-dir", "nowhere"])


def test_char_lstm_gives_the_same_losses_twice_from_one_seed(capsys):
    if not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip("needs tinyshakespeare.txt (set TRICYCLE_DATA_DIR)")
    argv = ["--data-dir", str(DATA_DIR), "--steps", "2", "--hidden-size", "16",
            "--embedding-dim", "8", "--eval-interval", "2", "--dropout", "0.1",
            "--num-layers", "2"]  # fmt: skip
    first = char_lstm.main(argv)
    printed = capsys.readouterr().out
    assert char_lstm.main(argv) == first
    assert capsys.readouterr().out.split("\n")[2:] == printed.split("\n")[2:]  # the sample


def test_the_python_api_names_its_argument(offline):
    with pytest.raises(FileNotFoundError, match=r"Shakespeare\(\.\.\., data_dir=that_directory"):
        shakespeare.ShakespeareChar()
    with pytest.raises(FileNotFoundError, match=r"data_dir='nowhere' is not a directory"):
        shakespeare.ShakespeareChar(data_dir="nowhere")
