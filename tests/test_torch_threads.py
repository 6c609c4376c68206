"""torch's thread settings on tricycle (``tricycle.apps.threads``): ``set_num_threads`` sets
the threads of numpy's BLAS (read back through threadpoolctl) and of the CPU kernels, and
``get_num_threads`` answers it; ``set_num_interop_threads`` may be called once, as torch's;
bad numbers are torch's RuntimeErrors. Each test puts the settings back."""

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import tricycle as tc
from tricycle import dispatch
from tricycle.apps import threads

torch = pytest.importorskip("torch")


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.fixture
def restored(monkeypatch):
    """The module's numbers and BLAS's and the kernels' threads put back after the test."""
    monkeypatch.setattr(threads, "_threads", None)
    monkeypatch.setattr(threads, "_interop_threads", None)
    kernels = None
    if dispatch.available("cpu"):
        from tricycle.backends.cpu import compile as cpu_compile

        kernels = cpu_compile._settings["threads"]
    with threadpool_limits(limits=None):  # records BLAS's counts and restores them on exit
        yield
    if kernels is not None:
        cpu_compile._settings["threads"] = kernels


def test_get_num_threads_is_blass_before_any_setting(restored):
    assert tc.get_num_threads() == max(blas_threads())


def test_set_num_threads_sets_blas_and_the_kernels(restored):
    tc.set_num_threads(1)
    assert tc.get_num_threads() == 1 and blas_threads() == [1] * len(blas_threads())
    if dispatch.available("cpu"):
        from tricycle.backends.cpu import thread_count

        assert thread_count() == 1
    torch_before = torch.get_num_threads()
    torch.set_num_threads(1)
    assert torch.get_num_threads() == tc.get_num_threads()
    torch.set_num_threads(torch_before)


def test_interop_threads_are_set_once_as_torchs(restored):
    assert tc.get_num_interop_threads() >= 1
    tc.set_num_interop_threads(3)
    assert tc.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="set_num_interop_threads: cannot set"):
        tc.set_num_interop_threads(2)


@pytest.mark.parametrize("name", ["set_num_threads", "set_num_interop_threads"])
@pytest.mark.parametrize(("bad", "match"), [(0, "a positive integer"), (1.5, "expects an int")])
def test_bad_numbers_are_torchs_runtime_errors(restored, name, bad, match):
    with pytest.raises(RuntimeError, match=match):
        getattr(torch, name)(bad)
    with pytest.raises(RuntimeError, match=f"{name}: expects {match.removeprefix('expects ')}"):
        getattr(tc, name)(bad)
