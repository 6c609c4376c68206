"""torch's global switches (``tricycle.torch_flags``): anomaly detection (a NaN gradient is
a RuntimeError naming the op and the input, as torch's; off, backward gives the NaN; the
context managers put the setting back), ``is_inference_mode_enabled`` inside and outside
``inference_mode`` blocks (nested, as a decorator, in another thread), the default device,
``set_warn_always`` and ``set_flush_denormal``, against torch's answers."""

import threading

import pytest

import tricycle as tc

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),  # sqrt'(0)
    pytest.mark.filterwarnings("ignore:Error detected in:UserWarning"),  # torch's anomaly note
    pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled:UserWarning"),
]


def nan_backward(lib):
    """A graph whose backward makes a NaN: sqrt's gradient at 0 times 0."""
    x = lib.tensor([0.0, 4.0], requires_grad=True)
    (lib.sqrt(x) * lib.tensor([0.0, 1.0])).sum().backward()
    return x


def test_anomaly_detection_names_the_op_as_torch():
    assert tc.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    assert bool(tc.tensor(float("nan")) != tc.tensor(float("nan")))
    with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="nan values"):
        nan_backward(torch)
    with tc.autograd.detect_anomaly():
        assert tc.is_anomaly_enabled() and tc.is_anomaly_check_nan_enabled()
        with pytest.raises(
            RuntimeError, match=r"Function 'sqrt'.* returned nan values in its 0th output"
        ):
            nan_backward(tc)
    assert not tc.is_anomaly_enabled()
    x = nan_backward(tc)  # off: the NaN is the gradient, as torch's
    assert str(x.grad.numpy().tolist()) == str(nan_backward(torch).grad.tolist())


def test_set_detect_anomaly_and_set_anomaly_enabled():
    tc.autograd.set_detect_anomaly(True)
    try:
        assert tc.is_anomaly_enabled()
    finally:
        tc.autograd.set_detect_anomaly(False)
    assert not tc.is_anomaly_enabled()
    with tc.autograd.set_detect_anomaly(True, check_nan=False):
        assert tc.is_anomaly_enabled() and not tc.is_anomaly_check_nan_enabled()
        nan_backward(tc)  # no NaN check
    assert not tc.is_anomaly_enabled() and tc.is_anomaly_check_nan_enabled()
    tc.set_anomaly_enabled(True)
    try:
        with pytest.raises(RuntimeError, match="nan values"):
            nan_backward(tc)
    finally:
        tc.set_anomaly_enabled(False)

    @tc.autograd.detect_anomaly()
    def run():
        return tc.is_anomaly_enabled()

    assert run() and not tc.is_anomaly_enabled()
    with pytest.raises(TypeError, match="set_anomaly_enabled"):
        tc.set_anomaly_enabled("yes")


def test_is_inference_mode_enabled_as_torch():
    for lib in (tc, torch):
        assert not lib.is_inference_mode_enabled()
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
            with lib.inference_mode(False):
                assert not lib.is_inference_mode_enabled()
            assert lib.is_inference_mode_enabled()
        assert not lib.is_inference_mode_enabled()

        @lib.inference_mode()
        def inside():
            return lib.is_inference_mode_enabled()

        assert inside() and not lib.is_inference_mode_enabled()
    seen = []
    with tc.inference_mode():
        thread = threading.Thread(target=lambda: seen.append(tc.is_inference_mode_enabled()))
        thread.start()
        thread.join()
    assert seen == [False]  # per thread, as torch's


def test_default_device_warn_always_and_flush_denormal():
    assert str(tc.get_default_device()) == str(torch.get_default_device()) == "cpu"
    assert tc.get_default_device().type == "cpu"
    assert tc.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    tc.set_warn_always(True)
    try:
        assert tc.is_warn_always_enabled()
    finally:
        tc.set_warn_always(False)
    assert not tc.is_warn_always_enabled()
    assert tc.set_flush_denormal(True) is False and tc.set_flush_denormal(False) is False
    with pytest.raises(TypeError, match="set_flush_denormal"):
        tc.set_flush_denormal(1.5)
