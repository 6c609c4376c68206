"""``tricycle.futures`` against torch_futures (``Future``: ``wait``, ``value``, ``then``,
``add_done_callback``, ``set_result``, ``set_exception``, ``done``, completed from another
thread; ``collect_all``, ``wait_all``; the errors), ``tricycle.jit.fork`` returning that one
class; ``tricycle.utils.dlpack`` (round trips with torch, sharing memory; ``DLDeviceType``);
``tricycle.backends.mkldnn`` and ``.opt_einsum``'s switches and their defaults and refusals
against torch's on this machine."""

import threading
import time

import numpy as np
import pytest

import tricycle
import tricycle.backends.mkldnn as mkldnn
import tricycle.backends.opt_einsum as opt_einsum
import tricycle.futures as futures
import tricycle.jit
import tricycle.utils.dlpack as dlpack

torch = pytest.importorskip("torch")
torch_mkldnn = pytest.importorskip("torch.backends.mkldnn")
torch_opt_einsum = pytest.importorskip("torch.backends.opt_einsum")
torch_futures = pytest.importorskip("torch.futures")
torch_dlpack = pytest.importorskip("torch.utils.dlpack")


def story(lib) -> list:
    """What a script sees of a future's life: callbacks, chains, results and errors."""
    seen = []
    f = lib.Future()
    seen.append(f.done())
    f.add_done_callback(lambda done: seen.append(("callback", done.value())))
    doubled = f.then(lambda done: done.wait() * 2)
    broken = f.then(lambda done: 1 / 0)
    f.set_result(3)
    seen += [f.done(), f.wait(), f.value(), doubled.wait(), broken.done()]
    with pytest.raises(RuntimeError, match="ZeroDivisionError: division by zero") as error:
        broken.wait()
    seen.append(type(error.value).__name__)
    with pytest.raises(RuntimeError, match="Future can only be marked completed once"):
        f.set_result(4)
    failed = lib.Future()
    failed.set_exception(ValueError("bad"))
    for get in (failed.wait, failed.value):
        with pytest.raises(ValueError, match="bad"):
            get()
    with pytest.raises(AssertionError, match="not an Exception"):
        lib.Future().set_exception(3)
    late = []
    f.add_done_callback(lambda done: late.append(done.value() + 1))  # done: runs at once
    seen.append(late)
    a, b = lib.Future(), lib.Future()
    both = lib.collect_all([a, b])
    a.set_result(1)
    seen.append(both.done())
    b.set_result(torch.ones(2) if lib is torch_futures else tricycle.ones(2))
    seen += [both.done(), [x.wait() is y for x, y in zip(both.wait(), (a, b))]]
    seen.append([np.asarray(v).tolist() for v in lib.wait_all([a, b])])
    with pytest.raises(ValueError, match="bad"):
        lib.wait_all([a, failed])
    with pytest.raises(ValueError, match="bad"):
        lib.collect_all([a, failed]).wait()
    return seen


def test_a_futures_life_is_torchs():
    assert story(futures) == story(torch_futures)


def test_wait_blocks_until_another_thread_sets_the_result():
    f = futures.Future()
    order = []
    chained = f.then(lambda done: order.append("then") or done.value() + 1)

    def later():
        time.sleep(0.05)
        order.append("set")
        f.set_result(41)

    worker = threading.Thread(target=later)
    worker.start()
    assert chained.wait() == 42 and f.wait() == 41
    worker.join()
    assert order == ["set", "then"]
    assert futures.collect_all([]).wait() == [] and futures.wait_all([]) == []


def test_refusals():
    with pytest.raises(RuntimeError, match="not done yet"):
        futures.Future().value()
    with pytest.raises(TypeError, match="collect_all"):
        futures.collect_all([1])
    with pytest.raises(TypeError):
        torch_futures.collect_all([1])
    with pytest.raises(TypeError, match="then"):
        futures.Future().then(3)
    with pytest.warns(UserWarning, match="done callback raised"):
        broken = futures.Future()
        broken.add_done_callback(lambda done: 1 / 0)
        broken.set_result(1)  # torch logs the callback's error and goes on
    assert broken.wait() == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_jit_fork_returns_torch_futures_one_class():
    assert tricycle.jit.Future is futures.Future and torch.jit.Future is torch_futures.Future
    done = tricycle.jit.fork(lambda x: x * 2, 21)
    assert isinstance(done, futures.Future) and done.done()
    assert tricycle.jit.wait(done) == 42 and done.then(lambda f: f.value() + 1).wait() == 43
    failed = tricycle.jit.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed.wait()


def test_dlpack_round_trips_with_torch_sharing_memory():
    assert sorted(torch_dlpack.__all__) == sorted(set(dlpack.__all__) - {"to_dlpack"})
    assert {n: int(v) for n, v in dlpack.DLDeviceType.__members__.items()} == {
        n: int(v) for n, v in torch_dlpack.DLDeviceType.__members__.items()
    }
    x = tricycle.arange(6.0).reshape(2, 3)
    t = torch_dlpack.from_dlpack(dlpack.to_dlpack(x))
    t[0, 0] = 7.0
    assert x.array[0, 0] == 7.0
    back = dlpack.from_dlpack(torch.arange(4.0))
    np.testing.assert_array_equal(back.numpy(), [0, 1, 2, 3])
    assert x.array.__dlpack_device__()[0] == dlpack.DLDeviceType.kDLCPU
    assert dlpack.from_dlpack is tricycle.from_dlpack and tricycle.utils.dlpack is dlpack


def test_mkldnn_switches_as_torchs():
    assert mkldnn.is_available() is False and mkldnn.is_acl_available() is False
    assert (mkldnn.enabled, mkldnn.deterministic, mkldnn.VERBOSE_ON) == (
        torch_mkldnn.enabled,
        torch_mkldnn.deterministic,
        torch_mkldnn.VERBOSE_ON,
    )
    with mkldnn.flags():  # torch's: off inside, restored after
        assert (mkldnn.enabled, mkldnn.deterministic, mkldnn.allow_tf32) == (False, False, True)
    assert (mkldnn.enabled, mkldnn.allow_tf32) == (True, False)
    with mkldnn.flags(enabled=True, deterministic=True):
        assert mkldnn.enabled and mkldnn.deterministic
    assert not mkldnn.deterministic
    with mkldnn.verbose(mkldnn.VERBOSE_ON):
        assert tricycle.backends.mkldnn is mkldnn


def test_opt_einsum_switches_as_torchs_and_einsum_unchanged():
    ours, theirs = opt_einsum, torch_opt_einsum
    assert ours.is_available() == theirs.is_available()
    assert (ours.enabled, ours.strategy) == (theirs.enabled, theirs.strategy)
    assert (ours.get_opt_einsum() is None) == (theirs.get_opt_einsum() is None)
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=s).astype(np.float32) for s in ((3, 4), (4, 5), (5, 2))]
    before = tricycle.einsum("ij,jk,kl->il", *map(tricycle.tensor, arrays)).numpy()
    if not ours.is_available():
        for lib in (ours, theirs):
            with pytest.raises(ValueError, match="opt_einsum is not available"):
                lib.set_flags(True)
            with pytest.raises(ValueError, match="opt_einsum is not available"):
                lib.set_flags(None, "greedy")
    with ours.flags(enabled=False):
        assert ours.enabled is False
        during = tricycle.einsum("ij,jk,kl->il", *map(tricycle.tensor, arrays)).numpy()
    np.testing.assert_array_equal(before, during)  # the path is numpy's either way
    want = torch.einsum("ij,jk,kl->il", *map(torch.from_numpy, arrays)).numpy()
    np.testing.assert_allclose(before, want, rtol=1e-5, atol=1e-5)
