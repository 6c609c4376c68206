"""After ``pip install .`` into a fresh virtual environment, run from another directory, the
console entry points work: ``tricycle-train`` and ``tricycle-sample`` (help, a few training
steps, a sample). Nothing is downloaded: the new environment reuses this one's packages
through a ``.pth`` file, and pip builds without isolation and without an index."""

import importlib.metadata
import os
import re
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns(
    ".git", ".venv*", "venv", "runs", "data", "build", "dist", "*.egg-info", "__pycache__",
    ".pytest_cache", ".hypothesis", ".ruff_cache",
)  # fmt: skip


def build_requirement_met() -> tuple[bool, str]:
    """Whether this environment's setuptools is one the build system asks for (pip builds
    with it here, without isolation), and the requirement."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    wanted = re.search(r'requires = \["setuptools>=([\d.]+)"', pyproject).group(1)
    have = importlib.metadata.version("setuptools")
    major_minor = lambda text: tuple(int(n) for n in re.findall(r"\d+", text)[:2])  # noqa: E731
    return major_minor(have) >= major_minor(wanted), f"setuptools>={wanted} (have {have})"


def run(command, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    """(the venv's bin folder, an environment without this checkout on PYTHONPATH)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not available in this environment")
    met, requirement = build_requirement_met()
    if not met:
        pytest.skip(f"the build needs {requirement}: pip install -U setuptools")
    tmp = tmp_path_factory.mktemp("install")
    venv.create(tmp / "venv", system_site_packages=True, with_pip=False)
    packages = next((tmp / "venv" / "lib").glob("python*/site-packages"))
    (packages / "base.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    shutil.copytree(ROOT, tmp / "source", ignore=IGNORED)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p and Path(p).resolve() != ROOT),
        "TRICYCLE_CACHE_DIR": str(tmp / "cache"),
        "OPENBLAS_NUM_THREADS": "1",
        "TRICYCLE_THREADS": "1",
        # the entry points are under test, not the kernels (their own tests): an installed
        # copy would compile them afresh, as its sources sit at a new path
        "TRICYCLE_DISABLE_KERNELS": "1",
    }
    python = tmp / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    run([*pip, "--no-index", str(tmp / "source")], cwd=tmp, env=env)
    (tmp / "elsewhere").mkdir()
    return tmp / "venv" / "bin", env


def test_the_entry_points_run_after_pip_install(installed, tmp_path):
    bin_dir, env = installed
    where = run([str(bin_dir / "python"), "-c", "import tricycle; print(tricycle.__file__)"],
                cwd=tmp_path, env=env).stdout  # fmt: skip
    assert str(bin_dir.parent) in where  # the installed copy, not the checkout
    assert "--resume" in run([str(bin_dir / "tricycle-train"), "--help"], tmp_path, env).stdout
    assert "--top-k" in run([str(bin_dir / "tricycle-sample"), "--help"], tmp_path, env).stdout
    (tmp_path / "text.txt").write_text("".join(f"line {i % 17} of the text\n" for i in range(800)))
    trained = run(
        [str(bin_dir / "tricycle-train"), "--config", "debug", "--dataset", "text.txt",
         "--steps", "3", "--eval-interval", "3", "--eval-steps", "1", "--out-dir", "run",
         "--no-progress", "--sample-tokens", "5"],
        tmp_path, env,
    )  # fmt: skip
    assert "----- sample -----" in trained.stdout
    module = run([str(bin_dir / "python"), "-m", "tricycle.sample", "run", "--prompt", "line",
                  "--max-tokens", "5", "--seed", "0"], tmp_path, env)  # fmt: skip
    script = run([str(bin_dir / "tricycle-sample"), "run", "--prompt", "line", "--max-tokens",
                  "5", "--seed", "0"], tmp_path, env)  # fmt: skip
    assert script.stdout == module.stdout and script.stdout.startswith("line")
