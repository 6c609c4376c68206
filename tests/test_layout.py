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
