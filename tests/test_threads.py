"""tricycle.threads: the pool that runs fused ops' blocks and numpy's BLAS products."""

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tricycle import threads

needs_hook = pytest.mark.skipif(
    not threads.blas.hooked, reason="numpy's BLAS has no threading hook here (or 1 thread)"
)


def _product_case(seed: int, n: int = 384):
    """A product big enough for OpenBLAS to split over threads, and its float64 value."""
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    return a, b, a.astype(np.float64) @ b


def test_flag_spin_sees_a_set_from_another_thread():
    flag = threads._Flag()
    assert not flag.is_set()
    setter = threading.Timer(0.01, flag.set)
    setter.start()
    flag.wait()
    setter.join()
    assert flag.is_set()


@needs_hook
def test_blas_products_run_on_the_pool():
    a, b, expected = _product_case(0)
    calls = threads.blas.calls
    np.testing.assert_allclose(a @ b, expected, rtol=1e-4, atol=1e-3)
    assert threads.blas.calls > calls


@needs_hook
def test_blas_inside_blocks_runs_on_its_own_thread(monkeypatch):
    """A product inside a block is single-threaded (the other threads are busy with blocks):
    it never reaches the pool, which could deadlock, and its result is right."""
    monkeypatch.setattr(threads, "THREADS", 2)
    cases = [_product_case(seed) for seed in range(4)]
    out = [None] * len(cases)

    def block(rows):
        for i in range(rows.start, rows.stop):
            out[i] = cases[i][0] @ cases[i][1]

    calls = threads.blas.calls
    threads.run_blocks(block, [slice(i, i + 1) for i in range(len(cases))])
    assert threads.blas.calls == calls
    for (_, _, expected), product in zip(cases, out):
        np.testing.assert_allclose(product, expected, rtol=1e-4, atol=1e-3)
    a, b, expected = cases[0]  # and afterwards, products are parallel again
    np.testing.assert_allclose(a @ b, expected, rtol=1e-4, atol=1e-3)
    assert threads.blas.calls > calls


def test_run_concurrently_runs_its_tasks_at_once(monkeypatch):
    """Two tasks that each wait for the other finish only if they run at the same time; the
    results come back in the tasks' order, and a task's error reaches the caller."""
    monkeypatch.setattr(threads, "THREADS", 2)
    both = threading.Barrier(2, timeout=10)

    def task(value):
        both.wait()
        return value, threads.blas.threads()

    (first, first_blas), (second, second_blas) = threads.run_concurrently(
        lambda: task("dx"), lambda: task("dW")
    )
    assert (first, second) == ("dx", "dW")
    if threads.blas.hooked:  # each task's BLAS calls keep to its own thread
        assert first_blas == second_blas == 1

    def fails():
        raise ValueError("task failed")

    with pytest.raises(ValueError, match="task failed"):
        threads.run_concurrently(lambda: None, fails)


def test_products_from_several_threads_at_once():
    """Callers on other threads get helpers of their own (or wait for one): all finish and
    are right."""
    cases = [_product_case(seed, 256) for seed in range(3)]
    errors = []

    def multiply(a, b, expected):
        try:
            for _ in range(20):
                np.testing.assert_allclose(a @ b, expected, rtol=1e-4, atol=1e-3)
        except BaseException as error:  # noqa: BLE001 -- reported below
            errors.append(error)

    workers = [threading.Thread(target=multiply, args=case) for case in cases]
    for worker in workers:
        worker.start()
    multiply(*cases[0])
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers)
    assert errors == []


def _product_error(seed: int) -> float:
    a, b, expected = _product_case(seed)
    return float(np.abs(a @ b - expected).max())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_makes_its_own_helpers():
    a, b, _ = _product_case(1)
    a @ b  # the parent's helpers exist now
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_product_error, (1,)).get(timeout=60) < 1e-3


def _threads_in_subprocess(shown="threads.THREADS, threads.blas.hooked", **env_vars):
    """Run ``print(shown)`` after importing tricycle.threads, under ``env_vars``."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TRICYCLE_THREADS", "OPENBLAS_NUM_THREADS")
    }
    env.update(env_vars)
    code = f"from tricycle import threads; print({shown})"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_thread_count_comes_from_the_environment():
    """TRICYCLE_THREADS sets it (at most 8) and a bad value is an error naming the variable;
    with 1 thread, numpy's BLAS keeps its own threads."""
    assert _threads_in_subprocess(TRICYCLE_THREADS="3").stdout.split()[0] == "3"
    assert _threads_in_subprocess(TRICYCLE_THREADS="64").stdout.split()[0] == "8"
    assert _threads_in_subprocess(TRICYCLE_THREADS="1").stdout.split() == ["1", "False"]
    for bad in ["two", "0"]:
        run = _threads_in_subprocess(TRICYCLE_THREADS=bad)
        assert run.returncode != 0
        assert "TRICYCLE_THREADS" in run.stderr


def test_default_thread_count_follows_blas():
    """By default: as many threads as BLAS uses (at most 8) when the hook is there, else 1;
    one BLAS thread means one thread and no hook."""
    hookable = threads.blas.hookable
    expected = min(threads.blas.threads(), 8) if hookable else 1
    default = _threads_in_subprocess(OPENBLAS_NUM_THREADS=str(threads.blas.threads()))
    assert default.stdout.split() == [str(expected), str(hookable and expected > 1)]
    single = _threads_in_subprocess(OPENBLAS_NUM_THREADS="1")
    assert single.stdout.split() == ["1", "False"]


def test_hooked_blas_runs_on_at_most_the_pool_threads():
    """With the hook, BLAS runs on THREADS threads (capped at 8): more helpers, which each
    need the GIL to start, made a 16-core step more than twice as slow."""
    shown = "threads.blas.hooked, threads.blas.threads()"
    run = _threads_in_subprocess(shown, TRICYCLE_THREADS="2", OPENBLAS_NUM_THREADS="4")
    if run.stdout.split()[0] == "True":
        assert run.stdout.split() == ["True", "2"]
    else:  # no hook here: BLAS keeps its own setting
        assert run.stdout.split() == ["False", "4"]
