"""Every ```python block of docs/first-run.md runs alone, as its own script, as the README's
do (tests/test_readme_blocks.py): "# Long-running" blocks with STEPS=2."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme_blocks import python_blocks

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = python_blocks((ROOT / "docs" / "first-run.md").read_text(encoding="utf-8"))


def test_the_page_has_its_blocks():
    assert len(BLOCKS) == 2 and BLOCKS[0][1].startswith("# Long-running")


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line {n}" for n, _ in BLOCKS])
def test_block_runs_alone(line, code, tmp_path):
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRICYCLE_CACHE_DIR": str(tmp_path / "cache"),
           "TRICYCLE_OFFLINE": "1", "STEPS": "2"}  # fmt: skip
    done = subprocess.run([sys.executable, "block.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, f"docs/first-run.md line {line} failed:\n{done.stderr}"
    if "draw(" in code:
        assert (tmp_path / "micrograd.svg").is_file()
        assert "a | () float32 | data 2 | grad 6" in done.stdout
    else:
        assert "best.safetensors, the run's best: step 2" in done.stdout
