"""tricycle-run: the launcher's command line and environment, `tricycle-run test` on this
machine and with MPI hidden, and a user's mistakes as one line."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_distributed import AS_ROOT, needs_mpi
from tricycle.apps import launch

ROOT = Path(__file__).resolve().parents[1]


def tricycle_run(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ, **AS_ROOT, **env)
    paths = [str(ROOT), environment.get("PYTHONPATH")]
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return subprocess.run([sys.executable, "-m", "tricycle.apps.launch", *args], env=environment,
                          capture_output=True, text=True, timeout=150, cwd=ROOT)  # fmt: skip


def test_the_console_script_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    scripts = text.split("[project.scripts]")[1].split("\n[")[0]
    assert 'tricycle-run = "tricycle.apps.launch:main"' in scripts.splitlines()


@needs_mpi
def test_the_checks_pass_on_this_machine():
    done = tricycle_run("test")
    assert done.returncode == 0, done.stdout + done.stderr
    names = [line[5:].split(":")[0] for line in done.stdout.splitlines()[:-1]]
    assert names == ["MPI", "mpi4py", "GPUs seen", "NCCL", "numba", "2-process all-reduce"]
    assert "ok   2-process all-reduce: 1 + 2 = 3 over MPI" in done.stdout


def test_the_checks_name_mpi_when_it_is_missing():
    done = tricycle_run("test", TRICYCLE_MPIEXEC=str(ROOT / "no-such-mpiexec"))
    assert done.returncode == 1
    assert f"FAIL MPI: TRICYCLE_MPIEXEC={ROOT / 'no-such-mpiexec'} is not an executable" in (
        done.stdout
    )
    assert "--   2-process all-reduce: not tried: it needs MPI and mpi4py" in done.stdout
    broken = "MPI" if importlib.util.find_spec("mpi4py") else "MPI, mpi4py"  # [test] alone
    assert done.stderr == f"tricycle-run test: broken: {broken}\n"


def test_no_mpiexec_on_the_path_nor_beside_python(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("TRICYCLE_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(launch.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(launch.LaunchError, match="no mpiexec on the PATH or beside"):
        launch.find_mpiexec()
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert launch.main(["-n", "2", str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tricycle-run: no mpiexec on the PATH") and err.count("\n") == 1


def test_the_command_and_the_environment_it_adds(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    mpiexec = tmp_path / "mpiexec"  # a dry run only names it: any executable will do
    mpiexec.write_text("#!/bin/sh\n")
    mpiexec.chmod(0o755)
    done = tricycle_run("-n", "2", "--dry-run", str(script), "--steps", "3",
                        NCCL_NVLS_ENABLE="1", TRICYCLE_THREADS="",
                        TRICYCLE_MPIEXEC=str(mpiexec))  # fmt: skip
    assert f"TRICYCLE_THREADS={max(1, (os.cpu_count() or 1) // 2)}" in done.stdout  # "": unset
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert "NCCL_NVLS_ENABLE=0" not in words  # the user's own setting is kept
    rank = [sys.executable, "-m", "tricycle.apps.torchrun", "--kind", "script"]  # torchrun's
    rank += ["--redirects", "0", "--tee", "0"]  # variables set on each rank: test_torchrun.py
    assert words[-14:] == ["-n", "2", *rank, str(script), "--steps", "3"]
    assert launch.environment(2, {})["NCCL_NVLS_ENABLE"] == "0"
    cores = os.cpu_count() or 1
    assert launch.environment(2, {})["TRICYCLE_THREADS"] == str(max(1, cores // 2))
    one = tricycle_run("--dry-run", "-m", "tricycle.train", "--help")
    assert one.stdout.split()[-4:] == [sys.executable, "-m", "tricycle.train", "--help"]


@needs_mpi
def test_a_script_runs_on_two_processes(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text(  # the rank as MPICH or Open MPI names it; one write a line (print
        # writes its parts one by one: two processes' lines would interleave)
        "import os, sys\n"
        "rank = os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK'))\n"
        "sys.stdout.write(f\"rank {rank} {os.environ['NCCL_NVLS_ENABLE']} {sys.argv[1:]}\\n\")\n"
    )
    done = tricycle_run("-n", "2", str(script), "a", "--b")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"rank {r} 0 ['a', '--b']" for r in range(2)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-n", "2", "no_such_script.py"], "tricycle-run: no such script: no_such_script.py"),
        (["-n", "0", "x.py"], "argument -n/--processes: must be an integer >= 1, got '0'"),
        ([], "name a script to run"),
        (["-n", "2", "-m", "no_such_module"], "tricycle-run: no such module: no_such_module"),
        (["test", "--all"], "tricycle-run: `test` takes no arguments, got --all"),
    ],
)
def test_a_mistake_is_one_line_not_a_traceback(args, message):
    done = tricycle_run(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_root_may_run_open_mpi(monkeypatch):
    """Open MPI's mpiexec refuses root (a container) unless told; the launcher tells it, where
    the user has not said otherwise."""
    monkeypatch.setattr(launch.os, "geteuid", lambda: 0)
    env = launch.environment(2, {})
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert launch.environment(2, {"OMPI_ALLOW_RUN_AS_ROOT": "0"})["OMPI_ALLOW_RUN_AS_ROOT"] == "0"
    monkeypatch.setattr(launch.os, "geteuid", lambda: 1000)
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in launch.environment(2, {})


def test_a_failed_check_names_the_line_that_says_why(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        "import sys\nprint('----', file=sys.stderr)\n"
        "print('mpiexec has detected an attempt to run as root.', file=sys.stderr)\n"
        "print('-' * 20, file=sys.stderr)\nsys.exit(1)\n"
    )
    with pytest.raises(subprocess.SubprocessError, match="status 1: mpiexec has detected"):
        launch._output([sys.executable, str(script)])
