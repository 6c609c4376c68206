"""The layout of DESIGN.md: the engine loads alone, and every module stays one readable concern."""

import subprocess
import sys
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
    assert len(modules) <= 12, modules  # the package, base (3), engine (8 with backward's walk)
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
    import ast

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
