"""dispatch.choose: what it returns, and that what it remembers never outlives a change."""

import numpy as np
import pytest

from tricycle import dispatch

OP = "test_dispatch_op"  # an op no backend registers


def reference(x):
    return x


def kernel(x):
    return x


@pytest.fixture(autouse=True)
def _clean():
    dispatch.remove(OP, "cpu")
    yield
    dispatch.remove(OP, "cpu")


def test_the_reference_without_a_kernel_and_the_kernel_once_registered():
    x = np.ones(3, np.float32)
    assert dispatch.choose(OP, reference, x) is reference
    dispatch.add(OP, "cpu", kernel, dtypes=("float32",))  # after a decision was remembered
    assert dispatch.choose(OP, reference, x) is kernel
    assert dispatch.choose(OP, reference, x.astype(np.float64)) is reference  # not its dtype
    assert dispatch.choose(OP, reference, x, x.astype(np.float64)) is reference  # every array's
    dispatch.remove(OP, "cpu")
    assert dispatch.choose(OP, reference, x) is reference


def test_applies_is_asked_on_every_call():
    dispatch.add(OP, "cpu", kernel, applies=lambda x: x.ndim == 2)
    assert dispatch.choose(OP, reference, np.ones((2, 2))) is kernel
    assert dispatch.choose(OP, reference, np.ones(2)) is reference
    assert dispatch.choose(OP, reference, np.ones((3, 3))) is kernel


def test_none_entries_are_skipped_and_the_latest_registration_wins():
    def newer(x):
        return x

    dispatch.add(OP, "cpu", kernel, applies=lambda *arrays: len(arrays) == 1)
    x = np.ones(2)
    assert dispatch.choose(OP, reference, x, None) is kernel
    assert dispatch.choose(OP, reference, None, None) is reference
    dispatch.add(OP, "cpu", newer)
    assert dispatch.choose(OP, reference, x, None) is newer


def test_kernels_off_by_the_environment_or_the_context(monkeypatch):
    x = np.ones(2)
    assert dispatch.kernel_for(OP, x) is None  # none registered
    dispatch.add(OP, "cpu", kernel)
    assert dispatch.choose(OP, reference, x) is kernel
    assert dispatch.kernel_for(OP, x) is kernel
    monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")  # read on every call
    assert dispatch.choose(OP, reference, x) is reference
    assert dispatch.kernel_for(OP, x) is None
    monkeypatch.delenv("TRICYCLE_DISABLE_KERNELS")
    with dispatch.references():
        assert dispatch.choose(OP, reference, x) is reference
    assert dispatch.choose(OP, reference, x) is kernel


def test_a_setting_is_the_registered_one_whatever_the_dtypes_and_never_turned_off(monkeypatch):
    assert dispatch.setting(OP, "cpu", reference) is reference
    dispatch.add(OP, "cpu", kernel, dtypes=())
    assert dispatch.setting(OP, "cpu", reference) is kernel
    monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")  # a setting changes no formula
    with dispatch.references():
        assert dispatch.setting(OP, "cpu", reference) is kernel


def test_the_gpu_settings_are_registered_for_cuda_alone():
    if not dispatch.available("cuda"):
        pytest.skip("the CUDA backend does not import here")
    for op in ("tf32", "tf32_enabled", "check_range"):
        assert dispatch.setting(op, "cuda", None) is not None
        assert dispatch.setting(op, "cpu", reference) is reference
