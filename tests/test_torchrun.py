"""torchrun's command line and environment under tricycle-run: a torch-style DDP script (reads
LOCAL_RANK, RANK, WORLD_SIZE; init_process_group("gloo", init_method="env://")) started with
torchrun's flags equals the same script under `tricycle-run -n 2` and one process on the whole
batch; every rank's variables; a restart after a deliberate failure (its error file as torch's
``record`` writes it, its log files); a bad flag as one line; ``python -m
tricycle.distributed.run``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_distributed import AS_ROOT, needs_mpi
from tricycle.apps import launch, torchrun
from tricycle.parallel import distributed as world_module
from tricycle.parallel import elastic_errors
from tricycle.parallel import torch_distributed as dist

ROOT = Path(__file__).resolve().parents[1]
VARIABLES = ["RANK", "LOCAL_RANK", "ROLE_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
             "ROLE_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
             "TORCHELASTIC_MAX_RESTARTS"]  # fmt: skip

DDP_SCRIPT = """
import json, os, sys
import tricycle as torch
import tricycle.distributed as dist
from tricycle.distributed.elastic.multiprocessing.errors import record
from tricycle.nn.parallel import DistributedDataParallel as DDP


@record
def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://")
    assert (dist.get_rank(), dist.get_world_size()) == (rank, world_size)
    assert dist.get_node_local_rank() == local_rank
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    y = x.sum(1, keepdim=True)
    mine = slice(rank * 8 // world_size, (rank + 1) * 8 // world_size)
    losses = []
    for _ in range(6):
        loss = torch.nn.functional.mse_loss(ddp(x[mine]), y[mine])
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())
    if rank == 0:
        params = [p.detach().numpy().tolist() for p in model.parameters()]
        with open(sys.argv[1], "w") as file:
            json.dump({"losses": losses, "params": params}, file)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""

ENV_SCRIPT = """
import os, sys
names = {names!r}
sys.stdout.write(" ".join(f"{{n}}={{os.environ.get(n)}}" for n in names) + "\\n")
"""

FAILS_ONCE = """
import os, sys
from tricycle.distributed.elastic.multiprocessing.errors import record


@record
def main():
    restart, rank = os.environ["TORCHELASTIC_RESTART_COUNT"], os.environ["RANK"]
    sys.stdout.write(f"rank {rank} attempt {restart}\\n")
    if restart == "0" and rank == "1":
        raise RuntimeError("deliberate failure on the first attempt")


if __name__ == "__main__":
    main()
"""


def tricycle_run(*args: str, module: str = "tricycle.apps.launch") -> subprocess.CompletedProcess:
    environment = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1")
    environment["TRICYCLE_DISABLE_KERNELS"] = "1"  # numpy's products: no kernels to load (the
    # launcher is tested here; every run of a comparison has the same setting)
    for name in VARIABLES:
        environment.pop(name, None)
    paths = [str(ROOT), environment.get("PYTHONPATH")]
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return subprocess.run([sys.executable, "-m", module, *args], env=environment,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip


def variables(stdout: str) -> list[dict]:
    """Each rank's line of ENV_SCRIPT as a dict, by rank."""
    lines = [dict(word.split("=", 1) for word in line.split()) for line in stdout.splitlines()]
    return sorted(lines, key=lambda found: int(found["RANK"]))


# ====================================================================== a torch-style DDP script
@needs_mpi
def test_a_torch_ddp_script_under_torchrun_s_flags_equals_tricycle_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(DDP_SCRIPT)
    results = {}
    for name, flags in [("torchrun", ["--standalone", "--nproc_per_node=2"]),
                        ("tricycle", ["-n", "2"]), ("one", ["--nproc-per-node", "1"])]:  # fmt: skip
        out = tmp_path / f"{name}.json"
        done = tricycle_run(*flags, str(script), str(out))
        assert done.returncode == 0, done.stderr
        results[name] = json.loads(out.read_text())
    assert results["torchrun"] == results["tricycle"]  # the same processes, the same numbers
    losses = results["torchrun"]["losses"]
    assert losses[-1] < 0.5 * losses[0]  # it learns
    np.testing.assert_allclose(losses, results["one"]["losses"], rtol=1e-5)  # the whole batch
    for two, one in zip(results["torchrun"]["params"], results["one"]["params"], strict=True):
        np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)


# ====================================================================== the environment
@needs_mpi
def test_every_rank_gets_torchrun_s_variables(tmp_path):
    script = tmp_path / "env.py"
    script.write_text(ENV_SCRIPT.format(names=VARIABLES + ["PMI_RANK", "OMPI_COMM_WORLD_RANK"]))
    done = tricycle_run("--standalone", "--nproc_per_node=2", "--max-restarts=0", str(script))
    assert done.returncode == 0, done.stderr
    ranks = variables(done.stdout)
    assert len(ranks) == 2
    for rank, found in enumerate(ranks):
        mpi = found["PMI_RANK"] if found["PMI_RANK"] != "None" else found["OMPI_COMM_WORLD_RANK"]
        assert found["RANK"] == found["LOCAL_RANK"] == found["ROLE_RANK"] == mpi == str(rank)
        sizes = [found[n] for n in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "ROLE_WORLD_SIZE")]
        assert sizes == ["2", "2", "2"]
        assert (found["GROUP_RANK"], found["GROUP_WORLD_SIZE"]) == ("0", "1")
        assert found["MASTER_ADDR"] == "127.0.0.1" and 0 < int(found["MASTER_PORT"]) < 65536
        assert len(found["TORCHELASTIC_RUN_ID"]) == 32  # --standalone: a fresh id
        restarts = (found["TORCHELASTIC_RESTART_COUNT"], found["TORCHELASTIC_MAX_RESTARTS"])
        assert restarts == ("0", "0")
    shared = ("MASTER_PORT", "TORCHELASTIC_RUN_ID")
    assert [ranks[0][n] for n in shared] == [ranks[1][n] for n in shared]
    # without --standalone: torchrun's static rendezvous (port 29500, run id "none"), and one
    # process gets the same variables without mpiexec
    done = tricycle_run("--master_port", "29400", "--rdzv_id", "job7", str(script))
    (alone,) = variables(done.stdout)
    assert (alone["RANK"], alone["WORLD_SIZE"], alone["LOCAL_RANK"]) == ("0", "1", "0")
    assert (alone["MASTER_PORT"], alone["TORCHELASTIC_RUN_ID"]) == ("29400", "job7")
    # --no_python: a command, not a script, gets them too (a module, -m: the same wrapper)
    echo = "echo RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE"
    done = tricycle_run("--nproc-per-node=2", "--no-python", "sh", "-c", echo)
    found = [(v["RANK"], v["LOCAL_RANK"], v["WORLD_SIZE"]) for v in variables(done.stdout)]
    assert found == [("0", "0", "2"), ("1", "1", "2")]


@needs_mpi  # the dry run names mpiexec: without MPI it says how to install it
def test_the_variables_match_the_dry_run_and_python_m_tricycle_distributed_run(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    line = ["-n", "2", "--dry-run", str(script), "--steps", "3"]
    one, two = tricycle_run(*line), tricycle_run(*line, module="tricycle.distributed.run")
    assert one.returncode == two.returncode == 0 and one.stdout == two.stdout
    words = one.stdout.split()
    for pair in ["WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2", "MASTER_PORT=29500",
                 "TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_RESTART_COUNT=0"]:  # fmt: skip
        assert pair in words
    wrapper = [sys.executable, "-m", "tricycle.apps.torchrun", "--kind", "script"]
    assert words[-12:] == [*wrapper, "--redirects", "0", "--tee", "0", str(script), "--steps", "3"]


def test_get_node_local_rank_reads_local_rank_as_torch_s(monkeypatch):
    torch_dist = pytest.importorskip("torch.distributed")
    monkeypatch.setattr(world_module, "_world", None)  # before init (another test's may live)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert dist.get_node_local_rank() == torch_dist.get_node_local_rank() == 3
    assert dist.get_node_local_rank(fallback_rank=1) == torch_dist.get_node_local_rank(1) == 3
    monkeypatch.delenv("LOCAL_RANK")
    assert dist.get_node_local_rank(fallback_rank=1) == torch_dist.get_node_local_rank(1) == 1
    with pytest.raises(RuntimeError):
        torch_dist.get_node_local_rank()
    with pytest.raises(RuntimeError, match="not been initialized"):
        dist.get_node_local_rank()


# ====================================================================== restarts and records
@needs_mpi
def test_a_failed_run_restarts_with_the_count_and_writes_torch_s_error_file(tmp_path):
    script = tmp_path / "fails_once.py"
    script.write_text(FAILS_ONCE)
    logs = tmp_path / "logs"
    done = tricycle_run("--nproc_per_node=2", "--max_restarts=1", "--log_dir", str(logs),
                        "--redirects", "1", "--rdzv_id", "job", str(script))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # --redirects 1: each rank's stdout went to its file
    said = [line for line in done.stderr.splitlines() if line.startswith("tricycle-run:")]
    assert said == [
        "tricycle-run: attempt 0 failed with status 1; rank 1: RuntimeError: deliberate "
        "failure on the first attempt; restarting (1 of 1)"
    ]
    (run_dir,) = logs.iterdir()  # torchrun's layout: <log_dir>/<run_id>_<random>/attempt_<k>/
    assert run_dir.name.startswith("job_")
    attempts = {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()}
    assert attempts == {f"attempt_{k}/{r}/stdout.log" for k in (0, 1) for r in (0, 1)} | {
        "attempt_0/1/error.json"
    }
    for k in (0, 1):
        for r in (0, 1):
            assert (
                run_dir / f"attempt_{k}/{r}/stdout.log"
            ).read_text() == f"rank {r} attempt {k}\n"
    error = json.loads((run_dir / "attempt_0/1/error.json").read_text())["message"]
    assert error["message"] == "RuntimeError: deliberate failure on the first attempt"
    assert "raise RuntimeError" in error["extraInfo"]["py_callstack"]
    # no restarts left: the status of the failure, and --tee 3 shows the output as well
    done = tricycle_run("-n", "2", "--tee", "3", "--log-dir", str(logs), str(script))
    assert done.returncode != 0
    assert sorted(done.stdout.splitlines()) == ["rank 0 attempt 0", "rank 1 attempt 0"]
    assert done.stderr.splitlines()[-1].startswith("tricycle-run: attempt 0 failed with status")


def test_record_writes_the_error_file_as_torch_s_does(tmp_path, monkeypatch):
    errors = pytest.importorskip("torch.distributed.elastic.multiprocessing.errors")

    def fails():
        raise ValueError("bad value 3")

    found = {}
    for name, record in [("tricycle", elastic_errors.record), ("torch", errors.record)]:
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / f"{name}.json"))
        with pytest.raises(ValueError, match="bad value 3"):
            record(fails)()
        found[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert found["tricycle"].keys() == found["torch"].keys() == {"message"}
    mine, theirs = found["tricycle"]["message"], found["torch"]["message"]
    assert mine["message"] == theirs["message"] == "ValueError: bad value 3"
    assert mine["extraInfo"].keys() == theirs["extraInfo"].keys()
    assert abs(int(mine["extraInfo"]["timestamp"]) - int(theirs["extraInfo"]["timestamp"])) < 60
    # sys.exit(0) inside returns None, a value is returned, nothing written without the variable
    monkeypatch.delenv("TORCHELASTIC_ERROR_FILE")
    assert elastic_errors.record(lambda: sys.exit(0))() is None
    assert elastic_errors.record(lambda x: x + 1)(2) == 3
    with pytest.raises(SystemExit):
        elastic_errors.record(lambda: sys.exit(3))()


# ====================================================================== mistakes
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nnodes=2"], "--nnodes=2: tricycle-run starts the processes of one machine"),
        (["--nnodes", "1:4"], "mpiexec -f hosts"),
        (["--node_rank=1"], "--node_rank=1: one machine (--nnodes=1) is rank 0"),
        (["--nproc_per_node=two"], "--nproc_per_node=two: a number >= 1, `gpu`, `cpu` or"),
        (["--nproc_per_node=0"], "--nproc_per_node=0: a number >= 1"),
        (["-n", "2", "--nproc_per_node=3"], "-n 2 and --nproc_per_node=3 disagree"),
        (["--no_python", "-m"], "don't use both the --no_python flag and the --module flag"),
        (["--redirects", "7"], "--redirects=7: 0 (none), 1 (stdout), 2 (stderr), 3 (both)"),
        (["--tee", "0:x"], "--tee=0:x: 0 (none)"),
        (["--max_restarts=-1"], "--max_restarts=-1: out of range"),
        (["--monitor_interval=0"], "--monitor_interval=0.0: must be > 0 seconds"),
        (["--rdzv_endpoint=host:port"], "--rdzv_endpoint=host:port: must be host or host:port"),
        (["--start_method=thread"], "argument --start_method/--start-method: invalid choice"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--max_restarts", "x"], "argument --max_restarts/--max-restarts: invalid int value"),
        (["--no-python"], "no such program: "),
    ],
)
def test_a_bad_flag_is_one_line(args, message, tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("")
    try:
        status = launch.main([*args, str(script)])
    except SystemExit as ending:  # argparse's own mistakes
        status = ending.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_nproc_per_node_counts_cpus_or_gpus(monkeypatch):
    monkeypatch.setattr(torchrun.backend, "cupy_available", lambda: False)
    cores = os.cpu_count() or 1
    assert torchrun._processes(None, "cpu") == torchrun._processes(None, "auto") == cores
    assert torchrun._processes(None, None) == 1 and torchrun._processes(3, None) == 3
    assert torchrun._processes(2, "2") == 2
    with pytest.raises(torchrun.FlagError, match="gpu: no CUDA GPU"):
        torchrun._processes(None, "gpu")
    assert torchrun._std("redirects", "0:3,1:1", 1) == 1 == torchrun._std("tee", "1", 5)
    assert torchrun._std("redirects", "0:3", 1) == 0


def test_help_names_torchrun_s_flags(capsys):
    with pytest.raises(SystemExit):
        launch.main(["--help"])
    text = capsys.readouterr().out
    flags = "--nproc_per_node --nproc-per-node --standalone --max_restarts --log_dir --redirects"
    flags += " --tee --no_python --run_path --nnodes --rdzv_backend --master_port"
    for flag in flags.split():
        assert flag in text
