"""tricycle.multiprocessing (torch.multiprocessing): Python's multiprocessing under torch's
module, the sharing strategies, and ``spawn`` starting its ranks through mpiexec: two ranks
running an all_reduce and a DDP step equal to one process on the whole batch, a script's own
``main`` spawned as PyTorch's DDP tutorials do, an exception in rank 1, a nonzero exit and a
signal, ``join=False``, and the refusals. Each test starts one spawn at most; the functions
the ranks run are this module's (spawn pickles them: they must be importable)."""

import importlib.util
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tricycle
import tricycle.distributed as dist
import tricycle.multiprocessing as mp
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle.apps import launch
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

ROOT = Path(__file__).resolve().parents[1]


def _has_mpi() -> bool:
    try:
        launch.find_mpiexec()
    except launch.LaunchError:
        return False
    return importlib.util.find_spec("mpi4py") is not None


needs_mpi = pytest.mark.skipif(
    not _has_mpi(), reason="needs mpiexec and mpi4py (pip install tricycle-dl[distributed])"
)


@pytest.fixture(autouse=True)
def short_waits(monkeypatch):
    """A hung rank ends the job within a minute, not ten."""
    monkeypatch.setenv("TRICYCLE_DIST_TIMEOUT", "60")


# ====================================================================== what the ranks run
def batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 4)).astype(np.float32), rng.normal(size=(8, 2)).astype(np.float32)


def ddp_steps(model, x, y, steps: int = 2) -> dict:
    """Two SGD steps of a torch-style loop: the parameters after them, by name."""
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {n.removeprefix("module."): p.array.copy() for n, p in model.named_parameters()}


def net():
    manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def all_reduce_and_ddp(rank: int, world_size: int, out: str) -> None:
    """A rank of PyTorch's DDP example: its half of the batch; rank 0 writes what it saw."""
    dist.init_process_group("gloo")
    total = tricycle.tensor([rank + 1.0, 10.0 * rank])
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    x, y = batch()
    half = slice(rank * 4, rank * 4 + 4)
    params = ddp_steps(dist.DistributedDataParallel(net()), x[half], y[half])
    seen = [None] * world_size
    dist.all_gather_object(seen, {"rank": dist.get_rank(), "pid": os.getpid(), "params": params})
    if rank == 0:
        Path(out).write_bytes(pickle.dumps({"sum": total.array, "ranks": seen}))
    dist.destroy_process_group()


def raise_in_rank_1(rank: int) -> None:
    dist.init_process_group("gloo")
    dist.barrier()
    if rank == 1:
        raise ValueError(f"rank {rank} meets a bad value")
    dist.barrier()  # rank 0 waits here for rank 1, until the parent ends it


def end_badly(rank: int, how: str) -> None:
    if how == "exit":
        sys.exit(3)
    os.kill(os.getpid(), signal.SIGKILL)


def wait_for(rank: int, go: str, out: str) -> None:
    """Wait (10 s at most) until the test lets the rank finish, then say who ran."""
    for _ in range(500):
        if Path(go).exists():
            break
        time.sleep(0.02)
    Path(out, f"rank{rank}").write_text(str(os.getpid()))


# ====================================================================== the names
def test_torch_multiprocessing_names_are_here():
    torch_mp = pytest.importorskip("torch.multiprocessing")
    assert set(torch_mp.__all__) <= set(mp.__all__)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException"):
        assert hasattr(torch_mp, name) and hasattr(mp, name)
    assert mp.Process is multiprocessing.Process and mp.Queue is multiprocessing.Queue
    assert mp.Pool is multiprocessing.Pool and mp.cpu_count() == multiprocessing.cpu_count()
    assert mp.get_context("spawn").get_start_method() == "spawn"
    assert tricycle.multiprocessing is mp
    # the sharing strategies: torch's choices and default, a bad one refused as torch's
    assert mp.get_all_sharing_strategies() == torch_mp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == torch_mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy(torch_mp.get_sharing_strategy())
    with pytest.raises(AssertionError, match="invalid sharing strategy 'shm'"):
        mp.set_sharing_strategy("shm")
    with pytest.raises(AssertionError):
        torch_mp.set_sharing_strategy("shm")


def test_the_exceptions_are_torch_s():
    torch_mp = pytest.importorskip("torch.multiprocessing")
    for ours, theirs in (
        (mp.ProcessRaisedException("trace", 1, 42),
         torch_mp.ProcessRaisedException("trace", 1, 42)),
        (mp.ProcessExitedException("x", 0, 7, -9, "SIGKILL"),
         torch_mp.ProcessExitedException("x", 0, 7, -9, "SIGKILL")),
    ):  # fmt: skip
        back = pickle.loads(pickle.dumps(ours))  # they cross processes as torch's do
        for error in (ours, back):
            assert isinstance(error, mp.ProcessException) and isinstance(error, Exception)
            assert str(error) == str(theirs) and error.msg == theirs.msg
            assert (error.error_index, error.error_pid) == (theirs.error_index, theirs.error_pid)
            for name in ("exit_code", "signal_name"):
                assert getattr(error, name, None) == getattr(theirs, name, None)
    with pytest.warns(UserWarning, match="renamed to ProcessContext"):
        assert isinstance(mp.SpawnContext(None, "unused", 0), mp.ProcessContext)


def test_a_tensor_crosses_a_queue_in_shared_memory():
    queue = mp.Queue()
    x = tricycle.tensor([[1.0, 2.0], [3.0, 4.0]])
    queue.put(x)
    got = queue.get(timeout=10)
    assert isinstance(got, Tensor) and got.is_shared() and x.is_shared()
    np.testing.assert_array_equal(got.array, x.array)
    got.array[0, 0] = 9.0
    assert x.array[0, 0] == 9.0  # one memory, as torch's (tests/test_shared_memory.py)


# ====================================================================== spawn
@needs_mpi
def test_two_ranks_all_reduce_and_take_the_ddp_step_of_one_process(tmp_path):
    out = tmp_path / "seen.pkl"
    assert mp.spawn(all_reduce_and_ddp, args=(2, str(out)), nprocs=2, join=True) is None
    got = pickle.loads(out.read_bytes())
    np.testing.assert_array_equal(got["sum"], [3.0, 10.0])  # 1 + 2, 0 + 10
    assert [seen["rank"] for seen in got["ranks"]] == [0, 1]
    assert len({seen["pid"] for seen in got["ranks"]} | {os.getpid()}) == 3
    x, y = batch()
    whole = ddp_steps(net(), x, y)
    for seen in got["ranks"]:
        assert set(seen["params"]) == set(whole)
        for name, value in whole.items():
            np.testing.assert_allclose(seen["params"][name], value, rtol=1e-5, atol=1e-6)


SCRIPT = """
import sys
import tricycle
import tricycle.distributed as dist
import tricycle.multiprocessing as mp


def main(rank, world_size):
    dist.init_process_group("gloo")
    t = tricycle.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if rank == 0:  # one rank prints: the two ranks' lines could interleave
        print(f"rank {rank} of {dist.get_world_size()}/{world_size}: {t.item():g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(int(sys.argv[1]),), nprocs=int(sys.argv[1]), join=True)
    print("joined")
"""


@needs_mpi
def test_a_script_spawns_its_own_main_as_pytorch_s_ddp_tutorials_do(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), "2"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["rank 0 of 2/2: 3", "joined"]


@needs_mpi
def test_an_exception_in_rank_1_comes_back_with_its_traceback():
    started = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException) as raised:
        mp.spawn(raise_in_rank_1, nprocs=2)
    error = raised.value
    assert error.error_index == 1 and isinstance(error.error_pid, int)
    assert error.msg.startswith("\n\n-- Process 1 terminated with the following error:\n")
    assert "Traceback (most recent call last)" in error.msg
    assert "in raise_in_rank_1" in error.msg
    assert error.msg.rstrip().endswith("ValueError: rank 1 meets a bad value")
    assert time.monotonic() - started < 30  # rank 0, waiting for rank 1, was ended


@pytest.mark.parametrize("how", ["exit", "signal"])
def test_a_nonzero_exit_and_a_signal_come_back_as_exits(how):
    context = mp.start_processes(end_badly, args=(how,), nprocs=1, join=False)
    assert isinstance(context, mp.ProcessContext)
    (pid,) = context.pids()
    assert isinstance(pid, int) and pid != os.getpid()
    with pytest.raises(mp.ProcessExitedException) as raised:
        context.join()
    error = raised.value
    assert (error.error_index, error.error_pid) == (0, pid)
    if how == "exit":
        assert (error.exit_code, error.signal_name) == (3, None)
        assert str(error) == "process 0 terminated with exit code 3"
    else:
        assert (error.exit_code, error.signal_name) == (-signal.SIGKILL, "SIGKILL")
        assert str(error) == "process 0 terminated with signal SIGKILL"
    assert context.join() is True  # done: joining again is harmless, as torch's


@needs_mpi
def test_join_false_returns_the_context_whose_join_waits(tmp_path):
    go = tmp_path / "go"
    context = mp.spawn(wait_for, args=(str(go), str(tmp_path)), nprocs=2, join=False)
    pids = context.pids()
    assert len(set(pids)) == 2 and all(isinstance(pid, int) for pid in pids)
    assert context.join(timeout=0.05) is False
    go.touch()
    assert context.join(timeout=60) is True
    assert context.join() is True
    assert [int((tmp_path / f"rank{r}").read_text()) for r in range(2)] == pids
    assert not context.directory.exists()  # the ranks' records, removed once joined


def test_daemonic_ranks_are_ended_at_the_parent_s_exit(tmp_path):
    spawning = importlib.import_module("tricycle.multiprocessing.spawn")  # (spawn: the call)
    go = tmp_path / "never"
    context = mp.spawn(wait_for, args=(str(go), str(tmp_path)), join=False, daemon=True)
    context.pids()  # started
    spawning._at_exit(context, daemon=True)  # what atexit runs
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with signal SIGTERM"):
        context.join()
    assert not (tmp_path / "rank0").exists()


# ====================================================================== refusals
def test_without_mpiexec_more_than_one_process_is_refused(monkeypatch, tmp_path):
    monkeypatch.delenv("TRICYCLE_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no mpiexec on the PATH
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nor beside Python
    match = r"start_processes: nprocs=2 starts the ranks with mpiexec: no mpiexec .*pip install"
    with pytest.raises(RuntimeError, match=match):
        mp.spawn(end_badly, args=("exit",), nprocs=2)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="start_processes: nprocs must be an integer >= 0"):
        mp.spawn(end_badly, nprocs=-1)
    with pytest.raises(TypeError, match="start_processes: nprocs must be an integer"):
        mp.spawn(end_badly, nprocs=2.0)
    with pytest.raises(ValueError, match="cannot find context for 'threads'"):
        mp.start_processes(end_badly, start_method="threads")
    with pytest.raises((pickle.PicklingError, AttributeError)):  # as torch's spawn: pickled
        mp.spawn(lambda rank: None, nprocs=1)
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        assert mp.spawn(end_badly, nprocs=0, start_method="fork") is None
    assert mp.start_processes(end_badly, nprocs=0, join=False).join() is True
