"""The deadline keeper (tricycle/parallel/deadline.py) and the marks of the host's waits
(tricycle/waits.py): a host blocked past the deadline ends the process with a message naming
the rank and what it waited for, without any device call from the keeper; a wait with its
own limit (NCCL's teardown) ends the process quietly. On one GPU: a kernel that never ends,
then a read-back, ends within the deadline."""

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tricycle import backend, waits
from tricycle.backends.cuda import capture
from tricycle.parallel import distributed
from tricycle.parallel.deadline import DeadlineKeeper
from tricycle.parallel.engines import _NCCLEngine

ROOT = Path(__file__).resolve().parents[1]


def run_script(code: str, timeout: float = 60.0, **env):
    """Run ``code`` in a fresh Python; returns (CompletedProcess, seconds)."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return done, time.monotonic() - start


# ====================================================================== the marks
def test_a_wait_is_marked_while_it_lasts_and_nested_waits_restore_the_outer_one():
    ended = waits.ended()
    with waits.waiting("outer"):
        with waits.waiting("inner", 2.0):
            assert ("inner", 2.0) in [(what, limit) for _, what, limit in waits.open_waits()]
        assert "outer" in [what for _, what, _ in waits.open_waits()]
        assert "inner" not in [what for _, what, _ in waits.open_waits()]
    assert "outer" not in [what for _, what, _ in waits.open_waits()]
    assert waits.ended() == ended + 2


def test_each_thread_has_its_own_mark():
    inside, release = threading.Event(), threading.Event()

    def other():
        with waits.waiting("the other thread's wait"):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    with waits.waiting("this thread's wait"):
        whats = sorted(what for _, what, _ in waits.open_waits())
    release.set()
    thread.join()
    assert whats == ["the other thread's wait", "this thread's wait"]


# ====================================================================== the keeper
class FakeWorld:
    timeout = 3600.0  # the thread never acts in these tests: overdue() is asked directly

    def overdue(self, message, limited):  # pragma: no cover - never reached
        raise AssertionError(message)


def test_the_keeper_names_the_wait_and_the_collective_it_is_stuck_behind():
    keeper = DeadlineKeeper(FakeWorld())
    keeper.world.timeout = 5.0
    try:
        keeper.queued("the NCCL all-reduce of gradient bucket 3")
        keeper.queued("the NCCL all-reduce of gradient bucket 4")  # the oldest is named
        with waits.waiting("a read-back from the GPU"):
            assert keeper.overdue(time.monotonic() + 1.0) is None  # within the deadline
            message, limited = keeper.overdue(time.monotonic() + 6.0)
        assert message.startswith("timed out after 5 s in a read-back from the GPU, behind "
                                  "the NCCL all-reduce of gradient bucket 3 (queued ")  # fmt: skip
        assert not limited
        # that read-back ended: the collectives before it are done and no longer named
        with waits.waiting("a synchronisation"):
            message, _ = keeper.overdue(time.monotonic() + 6.0)
        assert message == "timed out after 5 s in a synchronisation"
        with waits.waiting("a teardown", 0.5):  # its own limit, not the timeout
            message, limited = keeper.overdue(time.monotonic() + 1.0)
        assert (message, limited) == ("timed out after 0.5 s in a teardown", True)
    finally:
        keeper.stop()


def test_a_host_blocked_past_the_deadline_ends_the_process_with_the_message():
    """A world of one: the blocked 'read-back' (a sleep) never returns; the keeper thread
    ends the process at the deadline, naming the rank, the wait and the collective."""
    done, seconds = run_script(
        """
        import time
        from tricycle import waits
        from tricycle.parallel import distributed
        world = distributed.init(timeout=1)
        world.watch_device("the collectives of the captured step")
        with waits.waiting("a read-back from the GPU"):
            time.sleep(60)
        print("not reached")
        """
    )
    assert done.returncode != 0
    assert "not reached" not in done.stdout
    assert ("tricycle.parallel.distributed: rank 0 of 1: timed out after 1 s in a read-back "
            "from the GPU, behind the collectives of the captured step") in done.stderr  # fmt: skip
    assert seconds < 15


def test_a_teardown_past_its_own_limit_ends_the_process_quietly():
    done, seconds = run_script(
        """
        import time
        from tricycle import waits
        from tricycle.parallel import distributed
        distributed.init(timeout=600)
        print("the run's last line", flush=True)
        with waits.waiting("NCCL's teardown", 0.5):
            time.sleep(60)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "the run's last line" in done.stdout
    assert "rank 0: timed out after 0.5 s in NCCL's teardown; leaving it to" in done.stderr
    assert seconds < 15


# ====================================================================== one GPU
SPIN = r"""
import sys, time
import cupy as cp
from tricycle import backend
from tricycle.parallel import distributed
world = distributed.init(gpu=sys.argv[1] == "nccl")
spin = cp.RawKernel(r'''
extern "C" __global__ void spin(volatile int* flag) {
    while (*flag == 0) { __nanosleep(1000); }  // nobody ever sets it
}''', "spin")
flag, x = cp.zeros(1, dtype=cp.int32), cp.ones(4, dtype=cp.float32)
if sys.argv[1] == "nccl":  # a world of one starts NCCL at its first collective of GPU arrays
    world.wait(world.start_all_reduce(x), "a first all-reduce")
spin((1,), (1,), (flag,))
if sys.argv[1] == "nccl":  # a collective queued behind it, then the step waits for it
    world.wait(world.start_all_reduce(x), "an all-reduce")
print("queued", time.time(), flush=True)
backend.to_host_array(x)  # blocks for ever: the keeper must end the process
print("not reached", flush=True)
"""


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_a_read_back_behind_a_kernel_that_never_ends_is_caught():
    """TRICYCLE_DIST_TIMEOUT=5: the process ends within 10 s, with the message, although
    its main thread is blocked inside the driver (a device-to-host copy behind a collective).
    The keeper starts with NCCL: a world without it has no peer to wait for."""
    engine = "nccl"
    if backend.nccl() is None:
        pytest.skip("no NCCL")
    environment = dict(os.environ, PYTHONPATH=str(ROOT), TRICYCLE_DIST_TIMEOUT="5")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SPIN, engine], env=environment,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    end = time.time()
    queued = float(done.stdout.split("queued ")[1].split()[0])
    assert done.returncode != 0
    assert "not reached" not in done.stdout
    assert "rank 0 of 1: timed out after 5 s in a read-back from the GPU" in done.stderr
    if engine == "nccl":
        assert "behind NCCL all-reduce of 16 bytes" in done.stderr
    assert end - queued < 10, (end - queued, time.monotonic() - start, done.stderr)


# ====================================================================== NCCL's side, faked
class FakeNCCL:
    """The few names of ``cupy.cuda.nccl`` the engine uses."""

    NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64, NCCL_BFLOAT16, NCCL_SUM = 6, 7, 8, 9, 0
    NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_INT64 = 0, 1, 2, 4


class FakeCommunicator:
    """Records the marks open while a collective is made, and what the teardown did."""

    def __init__(self, error=None):
        self.seen, self.error, self.destroyed, self.comm = [], error, False, 0

    def allReduce(self, *args):  # noqa: N802 - CuPy's name
        self.seen.append([(what, limit) for _, what, limit in waits.open_waits()])
        self.ops = getattr(self, "ops", []) + [args[4]]

    def check_async_error(self):
        if self.error:
            raise RuntimeError(self.error)

    def destroy(self):
        self.seen.append([(what, limit) for _, what, limit in waits.open_waits()])
        self.destroyed = True


def fake_cupy():
    class Event:
        def __init__(self, disable_timing=False):
            pass

        def record(self, stream=None):
            pass

    class Stream:
        ptr = 1

        def __init__(self, non_blocking=False, priority=None):
            self.priority = priority

        def wait_event(self, event):
            pass

    runtime = SimpleNamespace(deviceGetStreamPriorityRange=lambda: (0, -5))
    return SimpleNamespace(cuda=SimpleNamespace(Event=Event, Stream=Stream, runtime=runtime))


def fake_array(n: int = 4):
    dtype = np.dtype(np.float32)
    return SimpleNamespace(data=SimpleNamespace(ptr=8), size=n, nbytes=4 * n, dtype=dtype)


def test_an_nccl_call_is_a_marked_wait_and_names_the_collective_for_later_waits():
    keeper = DeadlineKeeper(FakeWorld())
    try:
        comm, errors = FakeCommunicator(), []
        engine = _NCCLEngine(fake_cupy(), FakeNCCL, comm, keeper, errors.append)
        assert engine.stream.priority == -5  # the highest: collectives before backward's blocks
        request = engine.all_reduce(fake_array())
        assert comm.seen == [[("NCCL all-reduce of 16 bytes", None)]]  # timed while it runs
        assert not request.needs_progress  # backward's hooks never query its event
        keeper.world.timeout = 5.0
        with waits.waiting("a read-back from the GPU"):
            message, _ = keeper.overdue(time.monotonic() + 6.0)
        assert "behind NCCL all-reduce of 16 bytes" in message
        assert not engine.captured and not errors
        comm.error = "unhandled system error: a peer vanished"
        engine.all_reduce(fake_array())
        assert errors == ["NCCL failed: unhandled system error: a peer vanished"]
    finally:
        keeper.stop()


def test_the_mean_is_ncclavg_or_a_sum_scaled_on_nccls_stream():
    """DataParallel's buckets are averaged in NCCL's own kernel (ncclAvg, NCCL >= 2.10);
    an older NCCL sums, then scales on the collective's stream."""
    comm = FakeCommunicator()
    recent = SimpleNamespace(**vars(FakeNCCL), get_version=lambda: 22703)
    engine = _NCCLEngine(fake_cupy(), recent, comm, None, None, ranks=2)
    engine.all_reduce(fake_array(), mean=True)
    engine.all_reduce(fake_array())
    assert comm.ops == [4, FakeNCCL.NCCL_SUM]  # ncclAvg is 4 in nccl.h

    class Scaled:  # records the in-place scaling the fallback does
        data, size, nbytes, dtype = SimpleNamespace(ptr=8), 4, 16, np.dtype(np.float32)

        def __imul__(self, factor):
            self.factor = factor
            return self

    comm, old = FakeCommunicator(), SimpleNamespace(**vars(FakeNCCL), get_version=lambda: 20807)
    cupy = fake_cupy()
    cupy.cuda.Stream.__enter__ = cupy.cuda.Stream.__exit__ = lambda *args: None
    engine, array = _NCCLEngine(cupy, old, comm, None, None, ranks=4), Scaled()
    engine.all_reduce(array, mean=True)
    assert comm.ops == [FakeNCCL.NCCL_SUM] and array.factor == 0.25


def test_a_collective_recorded_in_a_graph_keeps_the_communicator_to_the_process_exit():
    comm = FakeCommunicator()
    engine = _NCCLEngine(fake_cupy(), FakeNCCL, comm, None, None)
    capture.start(capture.Recording())
    try:
        engine.all_reduce(fake_array())
    finally:
        capture.stop()
    assert engine.captured
    references = sys.getrefcount(comm)
    distributed._close_nccl(engine)
    assert not comm.destroyed  # NCCL's destroy would wait for the graph to be freed
    assert sys.getrefcount(comm) == references + 1  # and never freed: no destroy at exit


def test_the_teardown_is_a_wait_with_its_own_limit(monkeypatch):
    monkeypatch.setattr(distributed, "_nccl_function", lambda name: None)  # no real NCCL
    comm = FakeCommunicator()
    engine = _NCCLEngine(fake_cupy(), FakeNCCL, comm, None, None)
    distributed._close_nccl(engine)
    assert comm.destroyed
    assert comm.seen == [[("NCCL's teardown (ncclCommFinalize, ncclCommDestroy)",
                           distributed.TEARDOWN_SECONDS)]]  # fmt: skip
