"""The layout of docs/layout.md: the engine loads alone, and every module stays one readable
concern."""

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_tensor_loads_the_engine_alone():
    code = (
        "import sys, tricycle.tensor\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('tricycle'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    modules = done.stdout.split()
    assert len(modules) <= 18, modules  # the package, base (3), engine (14 with backward's walk,
    # torch's Tensor methods in five (tensor_torch's shapes, tensor_math's pointwise math and
    # statistics, tensor_extra's grad_fn and more, tensor_inplace's writes, tensor_rest's rest)
    # and rebase, their writes into an op's output)
    assert not [m for m in modules if m.startswith("tricycle.backends")], modules
    assert "numba" not in done.stdout and "cupy" not in done.stdout


def test_no_module_is_over_600_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "tricycle").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 600
    }
    assert not long, long


def _below_the_applications() -> list[Path]:
    """The files of the math, the engine and the base (the layers of .importlinter's first
    contract below the parallel layer, but the backends): the modules issue 39 holds to
    formulas only, with tricycle.nn's catalogue."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"].split("\n")
    names = [n.strip() for layer in layers[2:] for n in layer.split(":") if n.strip()]
    assert "layers" in names and "graph" in names and "train" not in names, names
    files = [ROOT / "tricycle" / f"{name}.py" for name in names if name != "backends"]
    files = [f for f in files if f.exists()] + sorted((ROOT / "tricycle" / "nn").glob("*.py"))
    assert len(files) > 40, files
    return files


def test_no_math_module_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in _below_the_applications()
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert not long, long


def test_the_math_holds_no_device_code():
    """Only backend.py, the one door to cupy, calls cupy or reaches into its CUDA and cuBLAS
    modules; the math asks the backends (tricycle.dispatch) for anything a device does."""
    reach = {"cuda", "cublas", "_core"}
    found = []
    for path in _below_the_applications():
        if path.name == "backend.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if (call and node.func.attr == "cupy") or (
                isinstance(node, ast.Attribute) and node.attr in reach
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


# a number measured on some machine: a time in ms/us/ns, "~3 min", "about 0.1 s", a rate
# (tokens/s, GB/s, GFLOP) or "N times faster": these belong in benchmarks/README.md
MEASURED = re.compile(
    r"\d[\d.,]*\s?(?:ms|µs|us|ns)\b"
    r"|(?:~|about |around |roughly |in )\d[\d.,]*\s?(?:s|seconds?|min|minutes?|hours?)\b"
    r"|\d[\d.,]*\s?[kMG]?\s?(?:tokens|samples|steps|images|it)/s\b"
    r"|\d[\d.,]*\s?(?:GB|MB|GiB|MiB)/s|\d[\d.,]*\s?[GT]FLOP"
    r"|\d[\d.,]*\s?(?:x|times|%)\s(?:faster|slower|as fast|the speed|the time)"
    r"|(?:faster|slower) by \d",
    re.IGNORECASE,
)


def _docstrings_and_comments(source: str):
    """(line, text) of every docstring and comment of a module's source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if (doc := ast.get_docstring(node, clean=False)) is not None:
                yield node.body[0].lineno, doc
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_no_measured_number_in_a_docstring_or_comment():
    files = [*(ROOT / "tricycle").rglob("*.py"), *(ROOT / "tricycle_datasets").rglob("*.py"),
             ROOT / "train_smol_gpt.py", ROOT / "inference.py"]  # fmt: skip
    found = [
        f"{path.relative_to(ROOT)}:{line}: {match.group()!r}"
        for path in files
        for line, text in _docstrings_and_comments(path.read_text(encoding="utf-8"))
        for match in MEASURED.finditer(text)
    ]
    assert not found, found


def test_the_measured_number_check_finds_them():
    source = (
        '"""Ran in ~3 min on 2 cores (~6k tokens/s)."""\n'
        "x = 1  # np.issubdtype is ~10x slower, and dtype.name costs ~5 us\n"
        'def f():\n    """Threads spin for about 0.1 s; 3 to 7 times slower."""\n'
    )
    found = [m.group() for _, text in _docstrings_and_comments(source)
             for m in MEASURED.finditer(text)]  # fmt: skip
    assert found == ["~3 min", "6k tokens/s", "about 0.1 s", "7 times slower", "10x slower",
                     "5 us"]  # fmt: skip
    shapes = "(N, 4H) and (B, T, 3 H D); a timeout of 600 s; SHA-256s; 4 MiB of weights"
    assert not MEASURED.findall(shapes)
