"""CUDA kernels built for the host: ``cuda_emulation.hpp`` (CUDA's threads, barriers, warp
collectives and the PTX the kernels use, emulated) and then the kernels' own source, compiled
by g++ with C++20 and ``ucontext.h`` (the CUDA threads' coroutines). The tests that run them skip
without such a g++."""

import shutil
import subprocess
from pathlib import Path

import pytest

HEADER = Path(__file__).resolve().parent / "cuda_emulation.hpp"


def _gxx(tmp: Path, source: str, name: str):
    path = tmp / f"{name}.cpp"
    path.write_text(source)
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-w", "-o", str(tmp / name), str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def build(tmp: Path, source: str, name: str) -> Path:
    """The executable ``tmp / name`` of ``source`` (kernels and a ``main``) after the header."""
    if (
        shutil.which("g++") is None
        or _gxx(tmp, "#include <concepts>\n#include <ucontext.h>\nint main(){}", "probe").returncode
    ):
        pytest.skip("needs g++ with C++20 and ucontext.h")
    built = _gxx(tmp, f'#include "{HEADER}"\n{source}', name)
    assert built.returncode == 0, f"the kernels do not compile on the host:\n{built.stderr[-4000:]}"
    return tmp / name
