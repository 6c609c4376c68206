"""Every ```python block of README.md runs as written, alone, as its own script.

Each block runs in a fresh interpreter in a temporary directory, with the checkout on
PYTHONPATH, tiny-shakespeare from $TRICYCLE_DATA_DIR (or ../shared/data) and a temporary cache
(no network). Markers on a block's first line: "# Long-running" blocks read STEPS from the
environment and run with STEPS=2; "# Needs a CUDA GPU" blocks run only where cupy sees a GPU.
Blocks that import an optional package that is not installed (sklearn, torch) are skipped.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DATA_DIR

from tricycle import backend

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPTIONAL = ("sklearn", "torch", "cupy", "matplotlib")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block."""
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.M | re.S):
        blocks.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return blocks


BLOCKS = python_blocks(README)


def test_the_readme_has_the_blocks_we_expect():
    assert len(BLOCKS) >= 14
    assert sum(code.startswith("# Long-running") for _, code in BLOCKS) == 1
    assert sum(code.startswith("# Needs a CUDA GPU") for _, code in BLOCKS) == 1


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line {n}" for n, _ in BLOCKS])
def test_readme_block_runs_alone(line, code, tmp_path):
    if code.startswith("# Needs a CUDA GPU") and not backend.cupy_available():
        pytest.skip("needs a CUDA GPU")
    for module in OPTIONAL:
        imported = re.search(rf"^(import|from) {module}\b", code, flags=re.M)  # top level
        if imported and importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    if "tricycle_datasets.shakespeare" in code and not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip(f"needs {DATA_DIR}/tinyshakespeare.txt (set TRICYCLE_DATA_DIR)")
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRICYCLE_DATA_DIR": str(DATA_DIR),
        "TRICYCLE_CACHE_DIR": str(tmp_path / "cache"),
        "STEPS": "2",
    }
    result = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, f"README block at line {line} failed:\n{result.stderr}"


def test_data_dir_honours_the_environment(tmp_path):
    code = "from helpers import DATA_DIR; print(DATA_DIR)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "TRICYCLE_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path)
    env.pop("TRICYCLE_DATA_DIR")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(ROOT.parent / "shared" / "data")
