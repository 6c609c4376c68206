"""The harness of the tests whose file is also the program of two ranks under mpiexec
(test_fsdp, test_dcp, test_p2p, test_pipelining, test_tensor_parallel,
test_torch_distributed, test_torch_sync_batch_norm).

The pytest side calls ``run_ranks(__file__, out)`` (or ``ranks_findings(__file__, tmp_path)``,
which returns what the ranks wrote): ``mpiexec -n 2 python <the test file> OUT``
with one thread a rank and a 60 s deadline on every collective (a hung rank ends the job with
a message instead of the test's timeout), and asserts that every rank succeeded. The file's
``if __name__ == "__main__"`` block runs its ranks' program inside ``fail_together()``; that
program ends with ``write_from_rank_0(seen, out)``: every rank's findings gathered to rank 0,
which pickles them to OUT, and the process group ended. The test then compares them with one
process on the whole batch.
"""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import tricycle.distributed as dist
from tests.test_distributed import AS_ROOT, mpiexec
from tricycle import backend

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_SECONDS = "60"  # $TRICYCLE_DIST_TIMEOUT of the ranks: a collective's longest wait


def needs_gpus(n: int):
    """Skip a test unless this machine has ``n`` CUDA GPUs (one a rank)."""
    count = backend.cupy().cuda.runtime.getDeviceCount() if backend.cupy_available() else 0
    return pytest.mark.skipif(count < n, reason=f"needs {n} CUDA GPUs")


@pytest.fixture(autouse=True)
def alone():
    """Each test of a file that imports this starts without a process group and leaves none."""
    dist.destroy_process_group()
    yield
    dist.destroy_process_group()


@pytest.fixture
def world_of_one():
    """A world of one (``init_process_group("gloo")``) for the test; none before or after."""
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


def run_ranks(script: str, out, ranks: int = 2, timeout: float = 120.0, args=()):
    """Run the test file ``script`` as the program of ``ranks`` ranks under mpiexec, with
    ``out`` (then ``args``) as its arguments; assert that it succeeded (the ranks' stderr
    otherwise) and return the CompletedProcess."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, **AS_ROOT, PYTHONPATH=path, TRICYCLE_DIST_TIMEOUT=DEADLINE_SECONDS)
    env.update(OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1")  # one thread per rank
    command = [mpiexec(), "-n", str(ranks), sys.executable, script, str(out), *map(str, args)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


def ranks_findings(script: str, tmp_path, args=()):
    """``run_ranks`` with OUT ``tmp_path / "ranks.pkl"``: what rank 0 wrote there (the
    ranks' findings, as ``write_from_rank_0`` pickled them)."""
    out = Path(tmp_path) / "ranks.pkl"
    run_ranks(script, out, args=args)
    return pickle.loads(out.read_bytes())


def by_key(everything: list) -> dict:
    """The ranks' findings (dicts with the same keys) as one dict of lists indexed by rank."""
    return {key: [seen[key] for seen in everything] for key in everything[0]}


def write_from_rank_0(seen, out, arrange=None) -> None:
    """The end of a ranks' program: every rank's ``seen`` (picklable) gathered to rank 0,
    which pickles the list (indexed by rank; ``arrange(list)`` where given) to ``out``; then
    every rank waits for that and ends the process group."""
    everything = [None] * dist.get_world_size()
    dist.all_gather_object(everything, seen)
    if dist.get_rank() == 0:
        result = everything if arrange is None else arrange(everything)
        Path(out).write_bytes(pickle.dumps(result))
    dist.barrier()
    dist.destroy_process_group()
