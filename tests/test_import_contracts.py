"""What ``.importlinter`` cannot see: the scripts, which are modules and not packages, and
whether every corpus module of ``tricycle_datasets`` is placed in its contract."""

import ast
import configparser
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("train_smol_gpt.py", "inference.py")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (functions included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_the_scripts_are_thin_wrappers_of_the_applications():
    for script in SCRIPTS:
        modules = imported_modules(ROOT / script)
        ours = {m for m in modules if m.split(".")[0] not in sys.stdlib_module_names}
        assert ours and all(m.startswith("tricycle.apps.") for m in ours), (script, ours)


def test_nothing_imports_the_scripts():
    stems = {Path(script).stem for script in SCRIPTS}
    for package in ("tricycle", "tricycle_datasets"):
        for path in (ROOT / package).rglob("*.py"):
            reached = {m.split(".")[0] for m in imported_modules(path)} & stems
            assert not reached, (path, reached)


def test_every_corpus_module_is_in_the_corpora_contract():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:corpora"]["layers"]
    named = {name.strip() for line in layers.split("\n") for name in line.split(":")}
    modules = {
        f"tricycle_datasets.{path.stem}"
        for path in (ROOT / "tricycle_datasets").glob("*.py")
        if path.stem != "__init__"
    }
    assert modules <= named, modules - named
