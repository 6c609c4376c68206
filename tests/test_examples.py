"""The examples as a newcomer meets them: --help without the optional packages, one line
naming what to install or which flag to pass, and the same number from the same seed."""

import os
import sys
from pathlib import Path

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


BAD_ARGUMENTS = [
    ("char_lstm", ["--steps", "-1"], "--steps"), ("char_lstm", ["--lr", "nan"], "--lr"),
    ("char_lstm", ["--dropout", "1"], "--dropout"), ("char_lstm", ["--bptt", "0"], "--bptt"),
    ("digits_cnn", ["--epochs", "0"], "--epochs"), ("digits_cnn", ["--seed", "x"], "--seed"),
    ("bert_mlm", ["--n-heads", "3"], "--n-heads 3"), ("bert_mlm", ["--context", "2"], "--context"),
    ("bert_mlm", ["--pretrain-batch", "1"], "--pretrain-batch"),
    ("bert_mlm", ["--finetune-lr", "0"], "--finetune-lr"),
    ("diffusion_digits", ["--ema", "1"], "--ema"),
    ("diffusion_digits", ["--channels", "0"], "--channels"),
    ("diffusion_digits", ["--channels", "3"], "--channels: each must be a multiple of 8"),
    ("diffusion_digits", ["--channels", "8,5"], "--channels: each must be a multiple of 8"),
    ("diffusion_digits", ["--channels", "8,16,32,64,128"], "--channels: at most 4 levels"),
    ("diffusion_digits", ["--sample-steps", "2000"], "--sample-steps"),
]  # fmt: skip


@pytest.mark.parametrize(("example", "argv", "named"), BAD_ARGUMENTS)
def test_a_bad_argument_to_an_example_is_one_line(example, argv, named, capsys):
    """Checked as the argument is read, before any data or training: one line naming the flag
    (the library would raise deep inside the run, with a traceback)."""
    module = pytest.importorskip(f"examples.{example}")
    with pytest.raises(SystemExit) as done:
        module.main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and " error: " in err and named in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_char_lstm_says_when_the_streams_do_not_fit_the_text(capsys):
    if not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip("needs tinyshakespeare.txt (set TRICYCLE_DATA_DIR)")
    with pytest.raises(SystemExit) as done:
        char_lstm.main(["--data-dir", str(DATA_DIR), "--batch-size", "100000"])
    assert str(done.value.code).startswith("char_lstm.py: 100000 streams (--batch-size) of")


@pytest.fixture
def play(monkeypatch, tmp_path) -> Path:
    """A directory whose tinyshakespeare.txt is 10,000 lines of a made-up play (tokenised into
    a cache of this test's own), and no background compilation by the examples."""
    lines = (f"{('ROMEO', 'JULIET')[i % 2]}: line {i} of a play, said aloud." for i in range(10**4))
    (tmp_path / "tinyshakespeare.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    for example in ("char_lstm", "bert_mlm", "diffusion_digits"):
        module = pytest.importorskip(f"examples.{example}")
        monkeypatch.setattr(module, "precompile", lambda *args: None)
    return tmp_path


def _one_line(run) -> str:
    """The message of the SystemExit that ``run()`` ends with: one line."""
    with pytest.raises(SystemExit) as done:
        run()
    message = str(done.value.code)
    assert done.value.code not in (0, None) and "\n" not in message, message
    assert "Traceback" not in message
    return message


def _not_trained(monkeypatch, bert_mlm) -> None:
    """Training the BERT fails the test: the checks come before it."""

    def trained(*args, **kwargs):
        raise AssertionError("the check came after training started")

    monkeypatch.setattr(bert_mlm, "train_steps", trained)


@pytest.mark.parametrize("example", ["char_lstm", "bert_mlm"])
@pytest.mark.parametrize(
    ("content", "said"),
    [(b"", {"char_lstm": "the training part of the corpus is empty",
            "bert_mlm": "tiny-shakespeare has 0 lines"}),
     (b"\xff\xfeROMEO\n", {"char_lstm": "not UTF-8 text", "bert_mlm": "not UTF-8 text"})],
    ids=["empty", "binary"],
)  # fmt: skip
def test_a_bad_tinyshakespeare_is_one_line_naming_data_dir(example, content, said, play):
    """An empty file or one that is not UTF-8 text: the library's one line, prefixed with the
    script's name and the flag (it raised a ValueError with a traceback)."""
    module = pytest.importorskip(f"examples.{example}")
    (play / "tinyshakespeare.txt").write_bytes(content)
    message = _one_line(lambda: module.main(["--data-dir", str(play)]))
    assert message.startswith(f"{example}.py: --data-dir {play}: ") and said[example] in message


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["--test-lines", "100000000"], "--test-lines 100000000 lines of each class: at most "),
     (["--finetune-examples", "100000000"],
      "--finetune-examples 100000000 lines of each class: at most "),
     (["--python-bytes", "1000"], "--python-bytes 1000: the Python files that fit hold ")],
)  # fmt: skip
def test_bert_checks_its_counts_against_the_lines_before_training(argv, said, play, monkeypatch):
    """More lines than the data holds (numpy's "Cannot take a larger sample than population",
    after the whole pre-training for --finetune-examples): one line naming the flag, the value
    and how many there are, before any training."""
    bert_mlm = pytest.importorskip("examples.bert_mlm")
    _not_trained(monkeypatch, bert_mlm)
    message = _one_line(lambda: bert_mlm.main(["--data-dir", str(play), *argv]))
    assert message.startswith(f"bert_mlm.py: {said}")


def _unwritable(monkeypatch, folder: Path) -> None:
    """``folder`` read-only to the examples' check (a test run as root may write anywhere)."""
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: Path(path) != folder
                        and access(path, mode, **kw))  # fmt: skip


@pytest.mark.parametrize(("example", "flag"), [("bert_mlm", "--plot"),
                                               ("diffusion_digits", "--out")])  # fmt: skip
@pytest.mark.parametrize(
    ("where", "said"),
    [("missing/x.png", "its folder"), ("a-file/x.png", "is not a directory"),
     (".", "is a directory"), ("x.unknownext", "expected a file name ending in one of ."),
     ("read-only/x.png", "not writable")],
)  # fmt: skip
def test_an_output_path_is_checked_at_start(example, flag, where, said, tmp_path, monkeypatch,
                                            capsys):  # fmt: skip
    """Written after the whole run, the image's path is checked as the flags are read: one
    line naming the flag (matplotlib raised at the end, with a traceback)."""
    pytest.importorskip("matplotlib")
    module = pytest.importorskip(f"examples.{example}")
    (tmp_path / "a-file").write_text("")
    (tmp_path / "read-only").mkdir()
    _unwritable(monkeypatch, tmp_path / "read-only")
    path = str(tmp_path / where)
    with pytest.raises(SystemExit) as done:
        module.main([flag, path])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f" error: {flag} {path}: " in err and said in err, err


def test_char_lstm_out_of_memory_is_one_line(play):
    char_lstm_ = pytest.importorskip("examples.char_lstm")
    message = _one_line(lambda: char_lstm_.main(["--data-dir", str(play),
                                                 "--hidden-size", "100000000000000"]))  # fmt: skip
    assert message.startswith("char_lstm.py: out of memory (Unable to allocate ")
    assert message.endswith("lower --hidden-size, --embedding-dim, --num-layers, --batch-size "
                            "or --bptt")  # fmt: skip


def test_bert_out_of_memory_is_one_line(play, monkeypatch):
    bert_mlm = pytest.importorskip("examples.bert_mlm")
    _not_trained(monkeypatch, bert_mlm)
    message = _one_line(lambda: bert_mlm.main(["--data-dir", str(play),
                                               "--context", "1000000000000"]))  # fmt: skip
    assert message.startswith("bert_mlm.py: out of memory (Unable to allocate ")
    assert "lower --context, " in message


def test_diffusion_out_of_memory_is_one_line(play, monkeypatch):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    example = pytest.importorskip("examples.diffusion_digits")
    cnn = example.load_examples()
    monkeypatch.setattr(cnn, "train", lambda *args, **kwargs: (None, 1.0))  # no judge: fast
    argv = ["--batch-size", "100000000000000000", "--out", str(play / "s.png")]
    message = _one_line(lambda: example.main(argv))
    assert message.startswith("diffusion_digits.py: out of memory (Unable to allocate ")
    assert message.endswith("lower --batch-size, --samples or --channels")


def test_char_lstm_compiles_ahead_what_its_run_calls(monkeypatch, capsys):
    """``small_steps``, which ``precompile`` runs in the background, calls every CPU kernel
    of the run's steps, evaluations and sample with the same argument types: recorded in this
    process, none run (a recorded kernel's outputs are zeros), so nothing is compiled here."""
    cpu_compile = pytest.importorskip("tricycle.backends.cpu.compile")
    if not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip("needs tinyshakespeare.txt (set TRICYCLE_DATA_DIR)")
    argv = ["--data-dir", str(DATA_DIR), "--steps", "1", "--eval-interval", "1",
            "--hidden-size", "128", "--num-layers", "2"]  # fmt: skip
    monkeypatch.setattr(char_lstm, "precompile", lambda *args: None)
    corpus = char_lstm.ShakespeareChar

    def shorter(**kwargs):  # 8,192 characters to validate on: the same calls, fewer of them
        text = corpus(**kwargs)
        text.valid_tokens = text.valid_tokens[:8192]
        return text

    monkeypatch.setattr(char_lstm, "ShakespeareChar", shorter)
    _check_ahead(cpu_compile, lambda: char_lstm.small_steps(char_lstm.parse_args(argv), 65),
                 lambda: char_lstm.main(argv))  # fmt: skip


def test_digits_compiles_ahead_what_its_run_calls(monkeypatch):
    """As for the LSTM: ``small_steps`` calls the kernels of the run's training and evaluation
    with the same argument types (recorded here, none run)."""
    pytest.importorskip("sklearn")
    cpu_compile = pytest.importorskip("tricycle.backends.cpu.compile")
    _fewer_digits(monkeypatch, digits_cnn)
    _check_ahead(cpu_compile, digits_cnn.small_steps, lambda: digits_cnn.train(epochs=1))


def test_diffusion_compiles_ahead_what_its_run_calls(monkeypatch, tmp_path):
    """As for the others: ``small_steps`` calls the kernels of the run's U-Net training and
    sampling, and of the judging CNN's training and labels, with the same argument types
    (recorded here, none run)."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    cpu_compile = pytest.importorskip("tricycle.backends.cpu.compile")
    example = pytest.importorskip("examples.diffusion_digits")
    cnn = example.load_examples()  # the module the example trains its judge with
    _fewer_digits(monkeypatch, cnn)
    monkeypatch.setattr(example, "precompile", lambda *args: None)
    argv = ["--steps", "2", "--samples", "4", "--sample-steps", "2", "--channels", "8,16",
            "--batch-size", "4", "--classifier-epochs", "1"]  # fmt: skip
    argv += ["--out", str(tmp_path / "s.png")]
    _check_ahead(cpu_compile, lambda: example.small_steps(example.parse_args(argv), cnn),
                 lambda: example.main(argv))  # fmt: skip


def _fewer_digits(monkeypatch, module) -> None:
    """``module.load_digits_split`` with a fifth of the training images: the same calls, 5x
    fewer."""
    split = module.load_digits_split

    def small_split(seed):
        x_train, x_test, y_train, y_test = split(seed)
        return x_train[:256], x_test, y_train[:256], y_test

    monkeypatch.setattr(module, "load_digits_split", small_split)


def _check_ahead(cpu_compile, small_steps, run) -> None:
    """The kernels and argument types that ``run()`` calls are among ``small_steps()``'s."""
    ahead, run = _recorded(cpu_compile, small_steps), _recorded(cpu_compile, run)
    assert run and run <= ahead, sorted(d.py_func.__name__ for d, _ in run - ahead)


def _recorded(cpu_compile, run) -> set:
    """The (kernel, argument types) that ``run()`` calls, none of them run (their outputs are
    zeros): precompile's recording, in this process."""
    cpu_compile._recorded[:] = [[]]
    try:
        run()
    finally:
        calls, cpu_compile._recorded[:] = cpu_compile._recorded[0], []
    return {(d, cpu_compile._signature(d, [d.typeof_pyval(a) for a in arguments]))
            for d, arguments in calls}  # fmt: skip
