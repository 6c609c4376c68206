"""Command-line helpers of the programs (``tricycle.apps.train``, ``tricycle.apps.sample``,
``tricycle.apps.evaluate``, ``tricycle.apps.launch``, ``tricycle_datasets.prepare``).

Argument types: each is a function from the argument's text to its value that raises
``argparse.ArgumentTypeError`` for a bad one, so the parser answers with the reason
(``--temperature: must be a finite number >= 0, got 'nan'``) instead of a traceback later, or
a run that silently misbehaves; ``Parser`` says a usage error in one line. Spellings:
``normalise`` accepts ``--name_with_underscores`` and other programs' names; ``settings_file``
reads settings from JSON.
"""

import argparse
import json
import math
import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage error is one line: the program, what is wrong and where
    the flags are listed, where argparse prints the usage of every flag above it (the training
    CLI's fills a screen, and the mistake is at its bottom). ``source``, while set, says where
    the arguments being parsed come from (a settings file), before the mistake."""

    source: str | None = None

    def error(self, message: str):
        from tricycle.parallel.distributed import launched_rank  # noqa: PLC0415 - errors only

        message = message if self.source is None else f"{self.source}: {message}"
        # under mpiexec every rank parses the same flags: rank 0 says it, the others end alike
        said = f"{self.prog}: error: {message} (--help lists the flags)\n"
        self.exit(2, None if launched_rank() else said)


class DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default after its help, unless the help says it or there is none."""

    def _get_help_string(self, action):
        if action.default is None or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


@contextmanager
def warnings_in_one_line(program: str):
    """Within the block, a warning is one line, ``program: warning: message``, instead of
    Python's two (the library's file and line, then the source line that warned): what the
    program's user can act on."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{program}: warning: {message}", file=file or sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


@contextmanager
def ends_in_one_line(program: str, sizes: str):
    """Within the block, running out of memory (a size with a zero too many: numpy's or
    CuPy's MemoryError) is one line naming the ``sizes`` to lower, and a reader of stdout that
    stops early (``| head``) ends the program quietly, as Python's own tools do."""
    try:
        yield
    except MemoryError as error:
        raise SystemExit(f"{program}: out of memory ({error}): lower {sizes}") from None
    except BrokenPipeError:  # stdout's reader is gone: flushing it again at exit would fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


@contextmanager
def shakespeare_in_one_line(program: str, data_dir):
    """Within the block, tiny-shakespeare that cannot be had (offline, no ``data_dir``) or
    read (an empty file, one that is not UTF-8 text) is one line naming --data-dir, and a
    warning (a copy that is not the official one) one line too."""
    from tricycle_datasets.shakespeare import NotAvailable  # noqa: PLC0415 - its users only

    try:
        with warnings_in_one_line(program):
            yield
    except NotAvailable as error:  # offline: one line, in this program's words
        raise SystemExit(f"{program}: {error.fix('--data-dir')}") from None
    except ValueError as error:
        if data_dir is None:
            raise SystemExit(f"{program}: {error} (pass --data-dir DIR holding "
                             "tinyshakespeare.txt)") from None  # fmt: skip
        raise SystemExit(f"{program}: --data-dir {data_dir}: {error}") from None


def unwritable_image(path: str, formats) -> str | None:
    """Why an image cannot be written at ``path`` in one of ``formats`` (extensions), or None:
    checked before a run that writes it only at its end."""
    target = Path(path)
    if target.is_dir():
        return f"{path}: is a directory, expected an image file such as {target / 'plot.png'}"
    if target.suffix[1:].lower() not in formats:
        return f"{path}: expected a file name ending in one of .{', .'.join(formats)}"
    folder = target.parent
    if not folder.is_dir():
        return f"{path}: its folder {folder} " + (
            "is not a directory" if folder.exists() else "does not exist"
        )
    writable = os.access(folder, os.W_OK | os.X_OK)
    if not writable or (target.exists() and not os.access(target, os.W_OK)):
        return f"{path}: not writable"
    return None


def _number(text: str, kind, what: str, ok) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if (kind is float and not math.isfinite(value)) or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (a count of steps, batches, tokens, threads...)."""
    return _number(text, int, "an integer >= 1", lambda v: v >= 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    return _number(text, int, "an integer >= 0", lambda v: v >= 0)


def seed(text: str) -> int:
    """A random seed: an integer in [0, 2**32) (what numpy's legacy seeding accepts)."""
    return _number(text, int, "an integer in [0, 2**32)", lambda v: 0 <= v < 2**32)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _number(text, float, "a finite number > 0", lambda v: v > 0)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    return _number(text, float, "a finite number >= 0", lambda v: v >= 0)


def probability(text: str) -> float:
    """A probability of dropping something: a number in [0, 1)."""
    return _number(text, float, "a number in [0, 1)", lambda v: 0 <= v < 1)


def boolean(text: str) -> bool:
    """true/false (also True/False, yes/no, 1/0), as nanoGPT's ``--bias=False``."""
    value = text.strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, got {text!r}")


unit_interval = probability  # [0, 1) too: Adam's betas, a share of the data


def normalise(argv: list[str], aliases: dict[str, str]) -> list[str]:
    """Options in the parser's spelling: ``--batch_size=8`` -> ``--batch-size=8``, and
    other programs' names to ours through ``aliases`` (nanoGPT's ``max_iters`` -> ``steps``)."""
    out = []
    for token in argv:
        name, eq, value = token.partition("=")
        if token.startswith("--") and name[2:].replace("_", "").replace("-", "").isalnum():
            key = name[2:].replace("-", "_")
            name = "--" + aliases.get(key, key).replace("_", "-")
        out.append(name + eq + value)
    return out


def settings_file(parser: argparse.ArgumentParser, path: Path, aliases: dict[str, str]
                  ) -> list[str]:  # fmt: skip
    """The settings in the JSON object at ``path`` as command-line tokens (``{"n_layer": 4}``
    -> ``--n-layer=4``), checked by ``parser``: an unknown name is a usage error. A settings
    file is data: nothing in it runs (nanoGPT's config files are Python)."""
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        parser.error(f"--config-file {path}: not a readable JSON file ({error})")
    if not isinstance(values, dict):
        parser.error(f"--config-file {path}: expected a JSON object of settings")
    switches = {a.dest for a in parser._actions if a.nargs == 0 and a.dest != "help"}
    tokens = []
    for key, value in values.items():
        if isinstance(value, bool) and aliases.get(key, key).replace("-", "_") in switches:
            tokens += [f"--{key}"] if value else []
        else:
            text = value if isinstance(value, str) else json.dumps(value)  # true, null
            tokens.append(f"--{key}={text}")
    tokens = normalise(tokens, aliases)
    parser.source = f"--config-file {path}"  # a bad value is the file's (a Parser says so)
    try:
        _, unknown = parser.parse_known_args(tokens)
    finally:
        parser.source = None
    if unknown or any(t.startswith("--config-file") for t in tokens):
        bad = [t.partition("=")[0] for t in unknown] or ["config_file"]
        parser.error(f"--config-file {path}: unknown settings {bad}")
    return tokens


def add_weights_flag(parser: argparse.ArgumentParser) -> None:
    """``--weights {best,last}``: which weights of a run directory a program reads (its
    lowest validation loss's, best.safetensors, or its last, model.safetensors)."""
    parser.add_argument(
        "--weights", choices=["best", "last"], default="best",
        help="for a run directory: its best weights (lowest validation loss, best.safetensors) "
        "or its last (model.safetensors)",
    )  # fmt: skip
