"""Test helpers: a gradient check for any Tensor function, on the library's ``gradcheck``.

``check_grads(f, *arrays)`` runs ``tricycle.gradcheck.gradcheck`` on float64 copies of the
arrays (every output element gets a distinct upstream gradient; each input's ``.grad`` is
compared with central finite differences) and returns ``f``'s output for further checks.
``same_on_host_and(xp, layer, run)`` runs a layer on the host, then on ``xp``'s device.
``made_once(tmp_path_factory, name, make)`` makes a costly directory (a trained run, a built
emulator) once for the whole session, however many pytest-xdist workers ask for it.
``DATA_DIR`` is where tests find tiny-shakespeare. ``one_thread(torch)`` runs a ported script
on one thread (torch's and the BLAS's), as the ports' small products need on a shared machine;
``run_main(script, folder, monkeypatch, name)`` runs one as ``__main__`` in its folder.
"""

import contextlib
import fcntl
import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tricycle import backend
from tricycle.gradcheck import gradcheck
from tricycle.tensor import Tensor

# $TRICYCLE_DATA_DIR when set, else ../shared/data beside the checkout
DATA_DIR = Path(
    os.environ.get("TRICYCLE_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


@contextlib.contextmanager
def one_thread(torch):
    """One thread for ``torch`` and for the BLAS (tricycle's, numpy's) while it lasts."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(threads)


def run_main(script: str, folder: Path, monkeypatch, name: str) -> tuple[str, dict]:
    """``script`` run as ``__main__`` (its file called ``name``) in ``folder``, the working
    directory while it runs: what it printed, and its globals at its end."""
    monkeypatch.chdir(folder)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(script, str(folder / name), "exec"), space)
    return out.getvalue(), space


def check_grads(f, *arrays, wrt=None, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0):
    """Assert that autodiff gradients of ``f`` match finite differences for inputs ``wrt``
    (all by default); every input is made float64. Returns ``f`` of the inputs."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    gradcheck(f, *arrays, wrt=wrt, rtol=rtol, atol=atol, seed=seed)
    return f(*[Tensor(a, requires_grad=False) for a in arrays])


def randn(*shape, seed=0, scale=1.0) -> np.ndarray:
    """Standard normal float64 numbers of ``shape`` (times ``scale``), from ``seed``."""
    return np.random.default_rng(seed).normal(size=shape) * scale


def as_float64(layer):
    """The layer with float64 parameters, for finite differences and exact comparisons."""
    for _, p in layer.named_parameters():
        p.array = p.array.astype(np.float64)
    return layer


def assert_grads_as_torch(ours, theirs, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Every parameter's gradient in layer ``ours`` equals that of the torch layer ``theirs``
    under the same name (after both have run backward)."""
    params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        expected = params[name].grad.detach().cpu().numpy()
        np.testing.assert_allclose(p.grad.array, expected, rtol=rtol, atol=atol, err_msg=name)


def same_on_host_and(xp, layer, run, rtol: float, atol: float) -> None:
    """``run(array_module)`` (a forward and backward through ``layer`` on inputs made with
    ``array_module``, returning the output Tensor) on the host, then with ``layer`` moved to
    ``xp``'s device: the outputs and every parameter gradient agree."""
    results = []
    for array_module in (np, xp):
        if array_module is not np:
            layer.to_gpu()
        out = run(array_module)
        grads = [backend.to_host_array(p.grad.array) for p in layer.parameters()]
        results.append([backend.to_host_array(out.array), *grads])
        layer.zero_grad()
    for ours, expected in zip(*results):
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol)


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The directory ``name``, filled by ``make(directory)`` once per session: under
    pytest-xdist, the first worker to ask makes it in the session's shared temporary folder
    while the others wait on a lock, and every later caller reads the same directory. A
    module fixture would otherwise run ``make`` once in each worker that gets one of the
    module's tests (``benchmarks/README.md``, the suite's time). Callers treat it as read-only
    (``shutil.copytree`` it to change it); a ``make`` that fails or skips leaves nothing made,
    so the next caller tries again and fails or skips the same way."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # one process: nothing to share
        directory = tmp_path_factory.mktemp(name)
        make(directory)
        return directory
    root = tmp_path_factory.getbasetemp().parent  # shared by this session's workers
    # named for this run too: a --basetemp given again keeps an earlier session's
    directory = root / f"{name}-{os.environ.get('PYTEST_XDIST_TESTRUNUID', '')}"
    done = directory.with_name(directory.name + ".done")
    with open(directory.with_name(directory.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            make(directory)
            done.touch()
    return directory
