"""The README's reading guide is what ``python tools/reading_guide.py`` prints: its line
counts are the files' lengths now, not when the guide was written."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import reading_guide  # noqa: E402


def test_the_readme_holds_the_guide_as_the_tool_prints_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert reading_guide.section() in readme, "run: python tools/reading_guide.py --write"


def test_the_guide_names_existing_files_and_counts_them():
    guide = reading_guide.guide()
    assert "<" not in guide  # every placeholder filled
    for path in reading_guide.FILES:
        assert (ROOT / path).is_file(), path
    total = sum(len((ROOT / p).read_text().splitlines()) for p in reading_guide.FILES)
    assert f"hold {total:,} lines ({len(reading_guide.FILES)} files" in guide


def test_the_tool_prints_the_guide():
    done = subprocess.run(
        [sys.executable, "tools/reading_guide.py"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == reading_guide.guide() + "\n"
