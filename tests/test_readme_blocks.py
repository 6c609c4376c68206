"""Every ```python block of README.md and of the manual's pages (docs/*.md) runs as written,
alone, as its own script.

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
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPTIONAL = ("sklearn", "torch", "cupy", "matplotlib")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block."""
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.M | re.S):
        blocks.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return blocks


BLOCKS = [  # (page, first line, code)
    (page.relative_to(ROOT).as_posix(), line, code)
    for page in PAGES
    for line, code in python_blocks(page.read_text(encoding="utf-8"))
]
# the pages whose blocks we know: (blocks at least, "# Long-running" ones, "# Needs a CUDA GPU")
EXPECTED = {
    "README.md": (1, 0, 0),
    "docs/gpu.md": (4, 0, 0),
    "docs/training.md": (4, 1, 0),
    "docs/how-it-works.md": (13, 0, 1),
    "docs/nn.md": (12, 0, 0),
    "docs/pytorch.md": (10, 0, 0),
    "docs/accelerate.md": (6, 0, 1),
    "docs/distributed-runtime.md": (1, 0, 0),
    "docs/first-run.md": (2, 1, 0),
    "docs/pretrained.md": (3, 1, 0),
}


def markers(page: str) -> tuple[int, int, int]:
    codes = [code for name, _, code in BLOCKS if name == page]
    return (
        len(codes),
        sum(code.startswith("# Long-running") for code in codes),
        sum(code.startswith("# Needs a CUDA GPU") for code in codes),
    )


@pytest.mark.parametrize("page", EXPECTED)
def test_the_pages_have_the_blocks_we_expect(page):
    """No block of a known page lost, and none newly marked (a marked block may skip)."""
    blocks, long_running, gpu = markers(page)
    assert blocks >= EXPECTED[page][0] and (long_running, gpu) == EXPECTED[page][1:]


@pytest.mark.parametrize("page", [page.relative_to(ROOT).as_posix() for page in PAGES])
def test_no_code_is_left_outside_a_block(page):
    """A lost opening fence turns a block into prose, and its closing fence opens a block of
    the prose after it: neither runs, and the page still builds. So no line outside a block
    begins as a Python import does."""
    inside, stray = False, []
    for number, text in enumerate((ROOT / page).read_text(encoding="utf-8").splitlines(), 1):
        if text.startswith("```"):
            inside = not inside
        elif not inside and re.match(r"(import|from) [\w.]+( import|$)", text):
            stray.append(f"{page}:{number}: {text}")
    assert not inside and not stray, "\n".join(stray) or f"{page}: a block is never closed"


def test_markers_are_on_first_lines_only():
    for page, line, code in BLOCKS:
        for marker in ("# Long-running", "# Needs a CUDA GPU"):
            assert marker not in code or code.startswith(marker), (page, line)


@pytest.mark.parametrize(
    ("page", "line", "code"), BLOCKS, ids=[f"{page}:{line}" for page, line, _ in BLOCKS]
)
def test_readme_block_runs_alone(page, line, code, tmp_path):
    if code.startswith("# Needs a CUDA GPU") and not backend.cupy_available():
        pytest.skip("needs a CUDA GPU")
    for module in OPTIONAL:
        imported = re.search(rf"^(import|from) {module}\b", code, flags=re.M)  # top level
        if imported and importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    if "tricycle_datasets.shakespeare" in code and not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip(f"needs {DATA_DIR}/tinyshakespeare.txt (set TRICYCLE_DATA_DIR)")
    script = tmp_path / f"{Path(page).stem}_line_{line}.py"
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
    assert result.returncode == 0, f"{page}: the block at line {line} failed:\n{result.stderr}"


def test_data_dir_honours_the_environment(tmp_path):
    code = "from helpers import DATA_DIR; print(DATA_DIR)"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "TRICYCLE_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path)
    env.pop("TRICYCLE_DATA_DIR")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(ROOT.parent / "shared" / "data")
