"""Threads on the CPU: importing changes nothing, a run sets the threads of the compiled
kernels and BLAS and puts them back, many Python threads may train at once with the numbers
of one after the other, and Ctrl-C stops training at the first press."""

import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tricycle.activation import GeLU
from tricycle.apps.cpu import threads_per_process
from tricycle.functions import Softmax
from tricycle.layers import Dense, LayerNorm, Sequential
from tricycle.loss import CrossEntropy
from tricycle.optimisers import AdamW
from tricycle.tensor import no_grad, to_tensor

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, timeout: float = 120, **env_vars) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repository root, under ``env_vars``."""
    env = {k: v for k, v in os.environ.items() if k != "TRICYCLE_THREADS"}
    env.update(env_vars, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


# ====================================================================== nothing at import
def test_importing_tricycle_changes_nothing():
    """After importing every tricycle module (the backends included) and multiplying, numpy's
    BLAS has the same threads and settings, the process the same threads, SIGINT the same
    handler."""
    run = _python("""
        import importlib, os, pkgutil, signal
        import numpy as np
        from threadpoolctl import threadpool_info

        def state():
            return threadpool_info(), len(os.listdir("/proc/self/task")), signal.getsignal(2)

        before = state()
        import tricycle
        for module in pkgutil.walk_packages(tricycle.__path__, "tricycle."):
            if "backends.cuda" not in module.name:  # cupy: absent here
                importlib.import_module(module.name)
        a = np.ones((300, 300), dtype=np.float32)
        a @ a
        after = state()
        assert after[0] == before[0] and after[2] == before[2], (before, after)
        assert after[1] == before[1], (before[1], after[1])
        print("unchanged")
    """)
    assert run.stdout.split() == ["unchanged"], run.stderr


def test_a_run_sets_the_threads_and_puts_blas_back():
    # numpy's BLAS takes the run's thread count and gets its own back; the BLAS that the
    # kernels' np.dot calls from their threads (scipy's) stays single-threaded throughout
    run = _python("""
        import os
        import numpy as np
        from threadpoolctl import threadpool_info
        from tricycle.apps.cpu import cpu_threads
        from tricycle.backends.cpu import thread_count

        def blas(numpys):
            here = os.path.dirname(np.__file__)
            return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
                    and (i["filepath"].startswith(here) or "numpy.libs" in i["filepath"]) == numpys]

        before = blas(True)
        with cpu_threads(1):
            inside = blas(True), thread_count()
        kernels = blas(False)
        print(inside[0] == [1] * len(before), inside[1], blas(True) == before,
              len(kernels) > 0 and set(kernels) == {1})
    """)
    assert run.stdout.split() == ["True", "1", "True", "True"], run.stderr


def test_a_kernel_that_multiplies_runs_numpys_blas_on_one_thread_and_puts_it_back():
    # where the kernels call numpy's own OpenBLAS (blas.py), it is set to one thread while a
    # kernel that multiplies runs, and to the user's count again after
    run = _python("""
        import numpy as np
        from threadpoolctl import threadpool_limits
        from tricycle.backends.cpu import blas, gemm

        library = blas.library()
        threads = blas._bound["threads"]
        seen, set_threads = [], threads.set
        if library == "numpy":
            threads.set = lambda n: (seen.append(n), set_threads(n))
        a = np.ones((512, 512), dtype=np.float32)
        with threadpool_limits(2, user_api="blas"):
            product = gemm.matmul(a, a)
            after = threads.get() if library == "numpy" else 2
        print(library, seen, after, bool((product == 512).all()))
    """)
    library, *rest = run.stdout.split(maxsplit=1)
    expected = "[1, 2] 2 True" if library == "numpy" else "[] 2 True"
    assert library in ("numpy", "scipy") and rest == [expected + "\n"], run.stderr


def test_the_kernels_multiply_through_scipys_blas_where_numpy_has_no_openblas():
    # where numpy's BLAS is not an OpenBLAS with 64-bit integers, gemm_into goes through a
    # shim to numba's own entry (scipy's library): the products and the LSTM as numpy's
    run = _python("""
        import threadpoolctl
        import numpy as np

        class NoLibraries:
            lib_controllers = []

        threadpoolctl.ThreadpoolController.select = lambda self, **kwargs: NoLibraries()
        from tricycle.backends.cpu import blas, gemm, recurrent
        from tricycle.nn.recurrent import recurrence_forward

        rng = np.random.default_rng(0)
        checks = []
        for dtype in (np.float32, np.float64):
            a, b = rng.standard_normal((300, 200)).astype(dtype), rng.standard_normal((200, 90))
            b = b.astype(dtype)
            checks.append(np.allclose(gemm.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4))
            checks.append(np.allclose(gemm.matmul(a.T.copy().T, b.T.copy().T), a @ b, 1e-4, 1e-4))
        T, N, H = 3, 4, 128
        xg = rng.standard_normal((T, N, 4 * H)); w = rng.standard_normal((4 * H, H)) * 0.1
        h0, c0 = rng.standard_normal((N, H)), rng.standard_normal((N, H))
        states, _ = recurrent.lstm_recurrence_forward(np, "lstm", xg, w, None, h0, c0)
        reference, _ = recurrence_forward(np, "lstm", xg, w, None, h0, c0)
        checks.append(np.allclose(states, reference, rtol=1e-10, atol=1e-12))
        print(blas.library(), all(checks))
    """)
    assert run.stdout.split() == ["scipy", "True"], run.stderr


def test_thread_count_comes_from_the_environment_and_is_shared_between_processes(monkeypatch):
    monkeypatch.delenv("TRICYCLE_THREADS", raising=False)
    assert threads_per_process(3) == 3
    assert threads_per_process(None) is None
    monkeypatch.setenv("TRICYCLE_THREADS", "2")
    assert threads_per_process(None) == 2
    monkeypatch.delenv("TRICYCLE_THREADS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert threads_per_process(None, processes_here=2) == max(1, cores // 2)
    for wrong in ("abc", "0", "-2", "1.5"):  # a usage error, in one line
        monkeypatch.setenv("TRICYCLE_THREADS", wrong)
        with pytest.raises(SystemExit, match=rf"TRICYCLE_THREADS='{wrong}': expected a whole"):
            threads_per_process(None)


# ====================================================================== many Python threads
def _train(seed: int, steps: int = 4) -> list[np.ndarray]:
    """A small model with every kind of fused op, trained a few steps in float64; its
    parameters afterwards."""
    rng = np.random.default_rng(seed)
    model = Sequential(Dense(48, 96), GeLU(), LayerNorm(96), Dense(96, 48))
    for p in model.parameters():
        p.array = rng.normal(size=p.shape) * 0.1
    optimiser = AdamW(learning_rate=1e-2)
    x = to_tensor(rng.normal(size=(64, 48)), dtype=np.float64)
    y = to_tensor(rng.integers(0, 48, size=64), dtype=int)
    for _ in range(steps):
        logits = model(x)
        loss = CrossEntropy()(y, logits) + Softmax()(logits).mean()
        loss.backward()
        model.update(optimiser)
    return [p.array.copy() for p in model.parameters()]


def _in_threads(*tasks):
    results, errors = [None] * len(tasks), []

    def run(i):
        try:
            results[i] = tasks[i]()
        except BaseException as error:  # noqa: BLE001 -- reported below
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers)
    assert errors == []
    return results


def test_two_threads_train_as_one_after_the_other():
    """Two models trained at once in two Python threads end with the same numbers as trained
    one after the other (the compiled kernels run one parallel launch at a time)."""
    expected = [_train(0), _train(1)]
    together = _in_threads(lambda: _train(0), lambda: _train(1))
    for want, got in zip(expected, together):
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)


TWO_THREADS = """
    import threading, numpy as np
    from tricycle.layers import Dense, LayerNorm
    from tricycle.tensor import to_tensor
    def loop():
        d, n = Dense(256, 256), LayerNorm(256)
        x = to_tensor(np.random.rand(64, 256))
        for _ in range(200):
            n(d(x)).sum().backward(); d.zero_grad(); n.zero_grad()
    ts = [threading.Thread(target=loop) for _ in range(3)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print("finished")
"""


def test_python_threads_training_at_once_never_abort_or_deadlock():
    run = _python(TWO_THREADS)
    assert run.stdout.split() == ["finished"], run.stderr[-2000:]


def test_no_grad_in_one_thread_leaves_another_training():
    """Thread A sits in no_grad() over and over while thread B trains: every one of B's
    gradients is there and equal to a run with no other thread."""
    expected = _train(2)
    stop = threading.Event()

    def evaluate():
        model = Dense(8, 8)
        while not stop.is_set():
            with no_grad():
                model(to_tensor(np.ones((2, 8))))

    evaluator = threading.Thread(target=evaluate)
    evaluator.start()
    try:
        (runs,) = _in_threads(lambda: [_train(2) for _ in range(3)])
    finally:
        stop.set()
        evaluator.join()
    for got in runs:
        for w, g in zip(expected, got):
            np.testing.assert_array_equal(g, w)


# ====================================================================== Ctrl-C
CTRL_C = """
    import signal, sys, numpy as np
    # the test's own process may ignore or block SIGINT (a child inherits both): start clean
    print("SIGINT was", signal.getsignal(signal.SIGINT),
          "blocked:", signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}}),
          file=sys.stderr, flush=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tricycle.layers import Dense, LayerNorm
    from tricycle.tensor import to_tensor
    layer, norm = Dense(512, 512), LayerNorm(512)
    x = to_tensor(np.random.rand(256, 512))
    expected = x.array @ layer.weights.array
    norm(layer(x)).sum().backward()  # the first step compiles the kernels (or loads them)
    layer.zero_grad()
    for _ in range({caught}):
        try:
            print("ready", flush=True)
            while True:
                norm(layer(x)).sum().backward()
                layer.zero_grad()
        except KeyboardInterrupt:
            assert np.allclose(x.array @ layer.weights.array, expected, rtol=1e-4)
            print("caught", flush=True)
    print("ready", flush=True)
    while True:
        norm(layer(x)).sum().backward()
        layer.zero_grad()
"""


def test_ctrl_c_stops_training_at_the_first_press():
    """SIGINT during training raises KeyboardInterrupt within seconds, every time (4 presses
    caught by the program, then one that ends it)."""
    presses = 4
    env = {k: v for k, v in os.environ.items() if k != "TRICYCLE_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CTRL_C.format(caught=presses))],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue = queue.Queue()  # the program's output, read without blocking the test
    reader = threading.Thread(target=lambda: [lines.put(line.strip()) for line in process.stdout])
    reader.daemon = True
    reader.start()
    try:
        for press in range(presses + 1):
            assert lines.get(timeout=90) == "ready"
            time.sleep(random.uniform(0.05, 0.2))
            process.send_signal(signal.SIGINT)
            if press < presses:
                try:  # within seconds, even on a loaded 2-core machine
                    assert lines.get(timeout=5) == "caught"
                except queue.Empty:
                    process.kill()
                    pytest.fail(f"press {press} not caught: {process.stderr.read()[-2000:]}")
        assert process.wait(timeout=15) != 0
        stderr = process.stderr.read()
        assert "KeyboardInterrupt" in stderr
        assert "Exception ignored" not in stderr
    finally:
        process.kill()
        process.wait()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_tricycle_never_installs_a_sigint_handler():
    run = _python("""
        import signal
        import tricycle as tc
        before = signal.getsignal(signal.SIGINT)
        x = tc.randn(64, 64, requires_grad=True)
        tc.softmax(x @ x).sum().backward()
        print(signal.getsignal(signal.SIGINT) is before)
    """)
    assert run.stdout.split() == ["True"], run.stderr
