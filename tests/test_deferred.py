"""Range checks of ids: the reference (tricycle/ranges.py), made at the op, is what the math
runs on the CPU; the CUDA backend's check (tricycle/backends/cuda/deferred.py), which the
math asks ``tricycle.dispatch`` for on a GPU, records the ids' extremes on the device and
raises at the next read-back, never a host synchronisation at the op.

The deferred path is backend-agnostic: the backend's ``check_range`` under
``defer_checks(True)`` runs it on numpy, so the mechanism (the folded (min, max) pairs, the
messages, the reset, the read-back hooks) is tested here without a GPU. The GPU tests check
the CUDA kernel against the xp fold, that a check never waits for the device (a long-running
kernel is still in flight when the op returns), and that bad ids or labels reach an
IndexError naming the op without touching memory outside their arrays.
"""

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import backend, dispatch, graph, ranges
from tricycle.backends import cuda as kernels
from tricycle.backends.cuda import deferred
from tricycle.layers import Embedding
from tricycle.loss import CrossEntropy
from tricycle.tensor import Tensor, to_tensor

GPU = backend.cupy_available()
gpu = pytest.mark.skipif(not GPU, reason="no CUDA GPU")
EMPTY = [np.iinfo(np.int64).max, np.iinfo(np.int64).min]


@pytest.fixture(autouse=True)
def _no_pending_errors():
    """Each test starts and ends with nothing recorded (pending errors are process-wide)."""
    _drain()
    yield
    _drain()


def _drain():
    try:
        deferred.raise_pending_errors()
    except IndexError:
        pass


def empty_pairs(xp, n=1):
    return xp.asarray(np.tile(np.asarray(EMPTY, dtype=np.int64), (n, 1)))


# ====================================================================== the CPU: eager
@pytest.mark.parametrize("check_range", [ranges.check_range, deferred.check_range])
def test_cpu_checks_raise_at_the_op(check_range):
    """The reference, and the backend's check on numpy arrays (eager unless told to defer)."""
    with pytest.raises(
        IndexError, match=r"Emb: ids must lie in \[0, 5\) in a table, got ids in \[-2, 3\]"
    ):
        check_range(np.array([[3, -2], [0, 1]]), 5, op="Emb", context="in a table")
    check_range(np.array([0, 4]), 5, op="Emb")  # in range: nothing
    check_range(np.zeros((0, 3), dtype=int), 5, op="Emb")  # empty: nothing
    check_range(np.array([-100, -100]), 5, op="CE", ignore=-100)  # all ignored
    with pytest.raises(
        IndexError,
        match=r"CE: labels must lie in \[0, 5\) or -100 \(ignored\), got labels in \[1, 7\]",
    ):
        check_range(np.array([1, -100, 7]), 5, op="CE", what="labels", ignore=-100)
    assert not deferred.checks_pending()


def test_layers_raise_at_the_op_on_the_cpu():
    with pytest.raises(IndexError, match=r"Embedding: ids must lie in \[0, 5\).*\[0, 6\]"):
        Embedding(5, 2)(np.array([0, 6]))
    with pytest.raises(IndexError, match=r"CrossEntropy: labels .*\[0, 3\).*\[-1, 2\]"):
        CrossEntropy()(np.array([2, -1]), Tensor(np.zeros((2, 3))))
    assert not deferred.checks_pending()


def test_the_math_asks_dispatch_and_runs_the_reference_on_numpy(monkeypatch):
    """The math's checks on numpy arrays run ``ranges.check_range`` (the CPU's "check_range"
    setting is the reference) and raise at the op; nothing is recorded, no read-back hook is
    added. On a GPU the setting is the backend's deferring check, kernels on or off."""
    calls, check_range = [], ranges.check_range

    def reference(ids, size, **where):
        calls.append((ids.tolist(), size, where["op"]))
        return check_range(ids, size, **where)

    monkeypatch.setattr(ranges, "check_range", reference)
    monkeypatch.setattr(graph, "read_back_hooks", [])
    with pytest.raises(IndexError, match=r"Embedding: ids must lie in \[0, 5\).*\[0, 6\]"):
        Embedding(5, 2)(np.array([0, 6]))
    with pytest.raises(IndexError, match=r"CrossEntropy: labels .*\[0, 3\).*\[1, 3\]"):
        CrossEntropy()(np.array([3, 1]), Tensor(np.zeros((2, 3))))
    CrossEntropy(ignore_index=-1)(np.array([2, -1]), Tensor(np.zeros((2, 3))))  # in range
    assert calls == [([0, 6], 5, "Embedding"), ([3, 1], 3, "CrossEntropy"),
                     ([2, -1], 3, "CrossEntropy")]  # fmt: skip
    assert graph.read_back_hooks == [] and not deferred.checks_pending()
    if not dispatch.available("cuda"):
        pytest.skip("the CUDA backend does not import here")
    monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")  # a setting: never turned off
    with dispatch.references():
        assert dispatch.setting("check_range", "cuda", None) is deferred.check_range
        assert dispatch.setting("check_range", "cpu", reference) is reference


# ====================================================================== the deferred path, on numpy
@given(
    batches=st.lists(
        st.lists(st.integers(-(2**40), 2**40), min_size=0, max_size=20), min_size=1, max_size=4
    ),
    ignore=st.sampled_from([None, -100, 3]),
    dtype=st.sampled_from([np.int64, np.int32]),
)
def test_fold_extremes_is_the_min_and_max_of_the_counted_ids(batches, ignore, dtype):
    pairs = empty_pairs(np, 3)
    counted = []
    for batch in batches:
        ids = np.asarray(batch, dtype=np.int64).astype(dtype)  # int32 wraps big ids: fine
        ranges.fold_extremes(np, ids, pairs, 1, ignore)
        counted += [int(i) for i in ids if ignore is None or i != ignore]
    expected = [min(counted), max(counted)] if counted else EMPTY
    assert pairs[1].tolist() == expected
    assert pairs[0].tolist() == pairs[2].tolist() == EMPTY  # other rows untouched


def test_deferred_checks_raise_at_the_next_read_back():
    with deferred.defer_checks():
        deferred.check_range(np.array([0, 7]), 5, op="Emb", context="for a vocabulary of size 5")
        deferred.check_range(np.array([-3, 1]), 5, op="Emb", context="for a vocabulary of size 5")
        deferred.check_range(np.array([1, 2]), 4, op="CE", what="labels")  # fine
        assert deferred.checks_pending()
    with pytest.raises(IndexError) as caught:
        deferred.raise_pending_errors()
    message = str(caught.value)
    # the extremes over both calls since the last read, the op, the bound, and why it is late
    assert "Emb: ids must lie in [0, 5) for a vocabulary of size 5, got ids in [-3, 7]" in message
    assert "CE" not in message
    assert "raised at the next read-back" in message
    assert not deferred.checks_pending()
    deferred.raise_pending_errors()  # read and reset: raised once


def test_deferred_checks_start_afresh_after_each_read():
    with deferred.defer_checks():
        deferred.check_range(np.array([9]), 5, op="Emb")
        deferred.check_range(np.array([0, 3]), 4, op="CE")
    with pytest.raises(IndexError, match=r"Emb: .*\[9, 9\]"):
        deferred.raise_pending_errors()
    with deferred.defer_checks():
        deferred.check_range(np.array([2]), 5, op="Emb")  # the bad 9 is forgotten
        deferred.check_range(np.array([4]), 4, op="CE")  # CE's earlier [0, 3] is forgotten
    with pytest.raises(
        IndexError, match=r"CE: ids must lie in \[0, 4\), got ids in \[4, 4\]"
    ) as caught:
        deferred.raise_pending_errors()
    assert "Emb" not in str(caught.value)


def test_tensor_read_backs_raise_pending_errors():
    loss = to_tensor(1.5)
    for read in (float, lambda t: t.item(), lambda t: t.numpy(), int):
        with deferred.defer_checks():
            deferred.check_range(np.array([5]), 5, op="Emb")
        with pytest.raises(IndexError, match=r"Emb: ids must lie in \[0, 5\)"):
            read(loss)
        assert read(loss) in (1, 1.5)  # reported once


def test_many_sites_grow_the_ledger():
    with deferred.defer_checks():
        for size in range(1, 40):
            deferred.check_range(np.array([size - 1]), size, op=f"op{size}")  # in range
        deferred.check_range(np.array([31]), 31, op="op31")  # out of range at a late row
    with pytest.raises(IndexError) as caught:
        deferred.raise_pending_errors()
    assert str(caught.value).splitlines()[0] == "op31: ids must lie in [0, 31), got ids in [30, 31]"


def test_defer_checks_is_per_thread_and_restored():
    seen = {}

    def other():
        try:
            deferred.check_range(np.array([8]), 5, op="Emb")
        except IndexError:
            seen["raised"] = True

    with deferred.defer_checks():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        deferred.check_range(np.array([8]), 5, op="Emb")  # this thread defers
    assert seen == {"raised": True}  # the other thread kept the eager CPU default
    with pytest.raises(IndexError, match=r"\[8, 8\]"):
        deferred.raise_pending_errors()
    with pytest.raises(IndexError):  # eager again after the block
        deferred.check_range(np.array([8]), 5, op="Emb")


def test_check_range_is_safe_from_many_threads():
    def work(i):
        for _ in range(50):
            with deferred.defer_checks():
                deferred.check_range(np.array([i, 1]), 100, op=f"t{i % 3}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert deferred.checks_pending()
    deferred.raise_pending_errors()  # all in range
    with deferred.defer_checks():
        deferred.check_range(np.array([100]), 100, op="t1")
    with pytest.raises(IndexError, match=r"t1: .*got ids in \[100, 100\]"):
        deferred.raise_pending_errors()


# ====================================================================== GPU
def _busy(cp, seconds=0.5):
    """Keep the current stream busy for ``seconds`` (one thread spinning on the global timer)."""
    spin = cp.RawKernel(SPIN, "spin")
    spin((1,), (1,), (np.uint64(seconds * 1e9),))


SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""


@gpu
@pytest.mark.parametrize("ignore", [None, -100])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("n", [1, 31, 1000, 1 << 20])
def test_fold_extremes_kernel_matches_the_xp_fold(cp, monkeypatch, ignore, dtype, n):
    rng = np.random.default_rng(n)
    high = 255 if dtype is np.uint8 else 2**31 - 1
    ids_host = rng.integers(0 if dtype is np.uint8 else -high, high, size=n).astype(dtype)
    if ignore is not None and dtype is not np.uint8:
        ids_host[rng.random(n) < 0.5] = ignore
    for start in (EMPTY, [-5, 5]):  # a fresh pair, and one that has seen ids already
        pairs = cp.asarray(np.asarray([EMPTY, start, EMPTY], np.int64))
        reference = cp.asnumpy(pairs)
        assert kernels.fold_extremes_enabled(cp.asarray(ids_host), pairs)
        kernels.fold_extremes(cp.asarray(ids_host), pairs, 1, ignore)
        ranges.fold_extremes(np, ids_host, reference, 1, ignore)
        with monkeypatch.context() as m:  # the xp fold on cupy (kernels off) agrees too
            m.setenv("TRICYCLE_DISABLE_KERNELS", "1")
            pairs_xp = cp.asarray(np.asarray([EMPTY, start, EMPTY], np.int64))
            ranges.fold_extremes(cp, cp.asarray(ids_host), pairs_xp, 1, ignore)
            assert cp.asnumpy(pairs_xp).tolist() == reference.tolist()
        got = cp.asnumpy(pairs)
        name = np.dtype(dtype).name
        print(f"fold_extremes n={n} {name} ignore={ignore}: {got[1]} vs {reference[1]}")
        assert got.tolist() == reference.tolist()


@gpu
def test_gpu_checks_never_wait_for_the_device(cp):
    layer = Embedding(50, 50).to_gpu()
    loss_fn = CrossEntropy()
    ids = cp.asarray(np.array([[1, 2, 60], [3, -4, 5]]))
    labels = cp.asarray(np.array([[1, 2, 3], [4, 50, 6]]))
    # warm up: compile every kernel on the way, make the check sites' device pairs
    loss_fn(cp.asarray(np.ones((2, 3), int)), layer(cp.asarray(np.ones((2, 3), int))))
    deferred.raise_pending_errors()  # in range: nothing raised
    cp.cuda.get_current_stream().synchronize()
    stream = cp.cuda.get_current_stream()
    _busy(cp)
    logits = layer(ids)  # bad ids: recorded, no error, no wait
    loss = loss_fn(labels, logits)  # bad labels too
    assert not stream.done, "a range check waited for the device"
    assert deferred.checks_pending()
    with pytest.raises(IndexError) as caught:
        float(loss)
    message = str(caught.value)
    print(message)
    assert (
        "Embedding: ids must lie in [0, 50) for a vocabulary of size 50, got ids in [-4, 60]"
        in message
    )
    assert (
        "CrossEntropy: labels must lie in [0, 50) for logits with 50 classes, got labels in [1, 50]"
        in message
    )


@gpu
def test_gpu_checks_defer_with_the_kernels_off(cp, monkeypatch):
    """``TRICYCLE_DISABLE_KERNELS`` turns the fold's kernel off (the xp fold runs on cupy),
    never the deferral: bad ids and labels raise at the read-back, not at the op."""
    monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")
    layer = Embedding(50, 8).to_gpu()
    logits = layer(cp.asarray([[0, 50], [-2, 3]]))  # (2, 2, 8): recorded, no error
    loss = CrossEntropy()(cp.asarray([[1, 8], [9, 2]]), logits)  # labels of 8 classes
    assert deferred.checks_pending()
    with pytest.raises(IndexError) as caught:
        loss.item()
    message = str(caught.value)
    assert (
        "Embedding: ids must lie in [0, 50) for a vocabulary of size 50, got ids in [-2, 50]"
        in message
    )
    assert (
        "CrossEntropy: labels must lie in [0, 8) for logits with 8 classes, got labels in [1, 9]"
        in message
    )
    assert not deferred.checks_pending()


@gpu
def test_gpu_checks_can_be_made_eager(cp):
    layer = Embedding(50, 8).to_gpu()
    with deferred.defer_checks(False):
        with pytest.raises(IndexError, match=r"Embedding: .*\[0, 50\).*got ids in \[0, 50\]"):
            layer(cp.asarray([0, 50]))
    assert not deferred.checks_pending()


@gpu
def test_bad_ids_stay_inside_their_arrays_until_reported(cp):
    """A GPT step with an out-of-range token id and label runs to the end (the kernels skip
    or NaN them, never touching memory outside their arrays), then the read raises."""
    from tricycle.configs import DebugConfig
    from tricycle.models import GPT
    from tricycle.optimisers import AdamW

    config = DebugConfig(
        embedding_dim=64, n_heads=2, n_layers=1, context_window=16, vocab_size=40, dropout=0.0
    )
    model = GPT(config).to_gpu()
    optimiser = AdamW(learning_rate=1e-3)
    tokens = cp.asarray(np.array([[1, 2, 3, 999]]))
    targets = cp.asarray(np.array([[2, 3, -7, 4]]))
    optimiser.step()
    loss = CrossEntropy()(targets, model(tokens))
    loss.backward()
    model.update(optimiser)
    cp.cuda.get_current_stream().synchronize()  # no illegal address: the device is fine
    with pytest.raises(IndexError) as caught:
        loss.item()
    message = str(caught.value)
    print(message)
    assert "Embedding: ids must lie in [0, 40)" in message and "[1, 999]" in message
    assert "CrossEntropy: labels must lie in [0, 40)" in message and "[-7, 4]" in message
    assert np.isnan(float(loss.array))  # the bad label's row: NaN, never garbage


@gpu
def test_embedding_backward_kernel_skips_ids_out_of_range(cp):
    dout = cp.ones((4, 3), dtype=np.float32)
    dweights = kernels.embedding_backward(cp, dout, cp.asarray([0, 5, -1, 2]), 5)
    expected = np.zeros((5, 3), np.float32)
    expected[[0, 2]] = 1
    np.testing.assert_array_equal(cp.asnumpy(dweights), expected)


@gpu
def test_a_training_step_reports_bad_ids_when_its_loss_is_settled(cp):
    """``StepOutput.settle`` raises the deferred IndexError (before the divergence guard
    could mistake the NaN loss of a bad label for a diverging run): settle must run the
    read-back hooks (``graph.before_read_back``) first; a TrainingDiverged here means it
    does not."""
    from tricycle.apps.training import train_step
    from tricycle.configs import DebugConfig
    from tricycle.models import GPT
    from tricycle.optimisers import AdamW

    config = DebugConfig(
        embedding_dim=64, n_heads=2, n_layers=1, context_window=16, vocab_size=40, dropout=0.0
    )
    model = GPT(config).to_gpu()
    batch = (cp.asarray(np.array([[1, 2, 3, 4]])), cp.asarray(np.array([[2, 3, 40, 5]])))
    result = train_step(model, AdamW(learning_rate=1e-3), iter([batch]), max_norm=1.0)
    assert deferred.checks_pending()
    with pytest.raises(IndexError, match=r"CrossEntropy: labels must lie in \[0, 40\).*\[2, 40\]"):
        result.settle(0)
