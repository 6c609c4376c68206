"""Shared test settings: hypothesis profiles and the backends every op test runs on."""

import os
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from tricycle import backend, dispatch
from tricycle.random import manual_seed

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    """Bytecode written, even where the environment says not to (``PYTHONDONTWRITEBYTECODE``):
    the suite starts many Python processes (its workers, the scripts, the pages' blocks), and
    each would compile the package's modules from source again (``benchmarks/README.md``).

    In each of pytest-xdist's workers: numpy's BLAS on the worker's share of the cores (one
    thread when there are as many workers as cores). Its threads spin for a while after every
    product (``tricycle/backends/cpu/compile.py``), on the cores the other workers want
    (``benchmarks/README.md``, the suite's time); 14 workers on 16 cores each ran 16. Test
    processes of their own keep their settings."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the workers and every subprocess
    sys.dont_write_bytecode = False
    if _threads_per_worker():
        from threadpoolctl import threadpool_limits  # noqa: PLC0415 - only in the workers

        threadpool_limits(_threads_per_worker(), user_api="blas")


BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param(
        "cupy",
        id="cupy",
        marks=pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU"),
    ),
]


@pytest.fixture(params=BACKENDS)
def xp(request):
    """The array module to run a test on: numpy always, cupy when a GPU is present."""
    return np if request.param == "numpy" else backend.cupy()


@pytest.fixture
def cp():
    """cupy, for the GPU tests (each skips without a GPU)."""
    return backend.cupy()


@pytest.fixture
def poisoned(cp):
    """Fill every new device allocation with 0xFF bytes (NaN in every float type)."""
    pool = cp.get_default_memory_pool()

    def malloc(size):
        memory = pool.malloc(size)
        if size:
            memory.memset_async(0xFF, size)
        return memory

    cp.cuda.set_allocator(malloc)
    try:
        yield
    finally:
        cp.cuda.set_allocator(pool.malloc)


@pytest.fixture
def rng():
    """A generator with a fresh seed, printed so that a failure can be replayed."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"[seed {seed}]", end=" ")
    return np.random.default_rng(seed)


@pytest.fixture(params=["kernels", "references"])
def kernel_or_reference(request):
    """Run a fused-op test through the kernels the dispatch chooses (the CPU backend's where
    numba is there) and through the reference formulas alone."""
    if request.param == "references":
        with dispatch.references():
            yield
    else:
        yield


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same tricycle seed (initialisers, factories, dropout), so a
    test's outcome does not depend on which tests ran before it."""
    manual_seed(0)


@pytest.fixture(autouse=True)
def _print_options_restored():
    """A course run in-process (``np.set_printoptions(precision=3)``, ``torch.
    set_printoptions(2)`` under tricycle: numpy's options) leaves numpy's print options as
    they were, and torch's (its run under torch) as torch's defaults: later tests compare
    printed numbers."""
    options = np.get_printoptions()
    yield
    if np.get_printoptions() != options:
        np.set_printoptions(**options)
    torch = sys.modules.get("torch")
    printing = getattr(getattr(torch, "_tensor_str", None), "PRINT_OPTS", None)
    if printing is not None and vars(printing) != _TORCH_PRINTING:
        torch.set_printoptions(profile="default", sci_mode=None)


_TORCH_PRINTING = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                   "sci_mode": None}  # torch's default print options  # fmt: skip


def _threads_per_worker() -> int | None:
    """A pytest-xdist worker's share of the cores (None outside a pool of workers)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


_SHARE = _threads_per_worker()


@pytest.fixture(autouse=True)
def _torch_on_its_share_of_the_cores():
    """torch, the oracle, on the worker's share of the cores as numpy's BLAS is (above), once
    a test has imported it: on two workers of two cores each torch ran two threads, and its
    small convolutions waited on each other's cores many times over."""
    torch = sys.modules.get("torch") if _SHARE else None
    if torch is not None and torch.get_num_threads() != _SHARE:
        torch.set_num_threads(_SHARE)
    yield


@pytest.fixture(autouse=True)
def _matplotlib_settings_restored():
    """A course run in-process (fast.ai's ``mpl.rcParams['figure.constrained_layout.use'] =
    True``) leaves matplotlib's settings as its rc file has them: the training run's loss plot,
    drawn in a later test, would warn that its layout changed."""
    yield
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None and dict(matplotlib.rcParams) != _matplotlib_file_settings():
        matplotlib.rc_file_defaults()


def _matplotlib_file_settings() -> dict:
    """matplotlib's settings as ``rc_file_defaults`` restores them (its rc file's, but the
    backend's, which it keeps)."""
    matplotlib = sys.modules["matplotlib"]
    return {**matplotlib.rcParamsOrig, "backend": matplotlib.rcParams["backend"]}


@pytest.fixture(autouse=True)
def _float32_products_restored():
    """A script run in-process (nanoGPT's ``torch.backends.cuda.matmul.allow_tf32 = True``,
    build-nanogpt's ``set_float32_matmul_precision('high')``) leaves TF32 off behind it,
    torch's and tricycle's: later tests compare float32 products on a GPU."""
    yield
    from tricycle import precision  # noqa: PLC0415

    if precision.get_float32_matmul_precision() != "highest":  # allow_tf32 off too: one switch
        precision.set_float32_matmul_precision("highest")
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_float32_matmul_precision() != "highest":
        torch.set_float32_matmul_precision("highest")  # allow_tf32 off too: one switch


def pytest_terminal_summary(terminalreporter):
    """The skipped tests, one line per reason with its count (a green run fits one screen;
    ``pytest -rs`` lists every one)."""
    reasons = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    if reasons and "s" not in (terminalreporter.config.option.reportchars or ""):
        terminalreporter.write_sep("-", f"{sum(reasons.values())} skipped, by reason")
        for reason, count in reasons.most_common():
            terminalreporter.write_line(f"{count:5d}  {reason}")
