"""``tricycle.signal.windows`` and ``tricycle.utils.benchmark`` against torch's.

The windows: every window's values against torch's for lengths 0 to 9, both ``sym``, both
float dtypes and a few parameters (hypothesis draws them), the leaf's ``requires_grad``, and
the bad arguments torch refuses refused with torch's kind of error. The benchmark: the same
statement timed by both libraries on one deterministic clock (it advances a fixed step per
run of the statement, so every time is exact) gives equal times, statistics, block sizes and
tables; on the real clock the structure holds and every time is positive (no thresholds).
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
from tricycle.signal import windows
from tricycle.utils import benchmark

torch = pytest.importorskip("torch")
twindows = pytest.importorskip("torch.signal.windows")
tbenchmark = pytest.importorskip("torch.utils.benchmark")

# (name, its parameters): every window of torch.signal.windows
WINDOWS = [
    ("bartlett", {}),
    ("blackman", {}),
    ("cosine", {}),
    ("exponential", {}),
    ("exponential", {"tau": 2.5}),
    ("gaussian", {}),
    ("gaussian", {"std": 0.7}),
    ("general_cosine", {"a": [0.46, 0.3, 0.24]}),
    ("general_cosine", {"a": (1.0,)}),
    ("general_hamming", {}),
    ("general_hamming", {"alpha": 0.6}),
    ("hamming", {}),
    ("hann", {}),
    ("kaiser", {}),
    ("kaiser", {"beta": 0.0}),
    ("kaiser", {"beta": 4.5}),
    ("nuttall", {}),
]
DTYPES = [(None, None), (tc.float64, torch.float64), (tc.float32, torch.float32)]


@pytest.mark.parametrize(("name", "parameters"), WINDOWS)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize(("ours_dtype", "torch_dtype"), DTYPES)
def test_windows_equal_torchs(name, parameters, sym, ours_dtype, torch_dtype):
    for m in range(10):
        ours = getattr(windows, name)(m, sym=sym, dtype=ours_dtype, **parameters)
        theirs = getattr(twindows, name)(m, sym=sym, dtype=torch_dtype, **parameters)
        assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)[6:]
        tolerance = 1e-12 if torch_dtype == torch.float64 else 1e-6
        np.testing.assert_allclose(ours.array, theirs.numpy(), atol=tolerance, rtol=tolerance)
        assert not ours.requires_grad


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(2, 40),
    sym=st.booleans(),
    beta=st.floats(0, 20),
    std=st.floats(0.1, 10),
    tau=st.floats(0.1, 10),
    center=st.floats(-5, 45),
)
def test_windows_parameters_equal_torchs(m, sym, beta, std, tau, center):
    cases = [
        ("kaiser", {"beta": beta, "sym": sym}),
        ("gaussian", {"std": std, "sym": sym}),
        ("exponential", {"tau": tau, "sym": sym}),
        ("exponential", {"tau": tau, "center": center, "sym": False}),
        ("general_hamming", {"alpha": beta / 20, "sym": sym}),
    ]
    for name, parameters in cases:
        ours = getattr(windows, name)(m, dtype=tc.float64, **parameters).array
        theirs = getattr(twindows, name)(m, dtype=torch.float64, **parameters).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_window_leaf_requires_grad_and_reached_from_tricycle():
    window = tc.signal.windows.hann(5, requires_grad=True)
    assert window.requires_grad and window.dtype == np.float32
    (window * window).sum().backward()
    np.testing.assert_allclose(window.grad, 2 * window.array)
    assert windows.hann(4, layout=tc.strided).shape == (4,)
    # the periodic window is the symmetric one of one point more, without its last
    np.testing.assert_allclose(windows.blackman(6, sym=False).array,
                               windows.blackman(7).array[:6], atol=1e-7)  # fmt: skip


BAD = [
    ("hann", (-1,), {}),
    ("hann", (3,), {"dtype": "int64"}),
    ("hann", (3,), {"dtype": "float16"}),
    ("hann", (2.5,), {}),
    ("exponential", (4,), {"center": 1.0}),
    ("exponential", (4,), {"tau": 0.0}),
    ("gaussian", (4,), {"std": -1.0}),
    ("kaiser", (4,), {"beta": -1.0}),
    ("general_cosine", (4,), {"a": 3}),
    ("general_cosine", (4,), {"a": []}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), BAD)
def test_bad_window_arguments_refused_as_torch_refuses_them(name, args, kwargs):
    torch_kwargs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - its kind is what is compared
        getattr(twindows, name)(*args, **torch_kwargs)
    ours_kwargs = {k: getattr(tc, v) if k == "dtype" else v for k, v in kwargs.items()}
    with pytest.raises(theirs.type, match=name):
        getattr(windows, name)(*args, **ours_kwargs)


def test_window_refuses_another_layout():
    with pytest.raises(ValueError, match="hann: layout"):
        windows.hann(3, layout="sparse_coo")


# ---------------------------------------------------------------------- benchmark
STEP = 2.0**-10  # seconds per run of the statement on the deterministic clock: exact in binary


def clocked(module, **labels):
    """A Timer of ``module`` whose clock advances STEP per run of its statement."""
    runs = [0]
    return module.Timer("runs[0] += 1", globals={"runs": runs}, timer=lambda: runs[0] * STEP,
                        setup="pass", **labels)  # fmt: skip


def statistics(m):
    return (m.number_per_run, m.raw_times, m.times, m.mean, m.median, m.iqr, m.title,
            m.label, m.sub_label, m.description, m.num_threads, m.stmt)  # fmt: skip


def test_timeit_equals_torchs_on_one_clock():
    ours = clocked(benchmark, label="add", sub_label="int").timeit(300)
    theirs = clocked(tbenchmark, label="add", sub_label="int").timeit(300)
    assert statistics(ours) == statistics(theirs)
    assert ours.times == [STEP] and ours.raw_times == [300 * STEP]
    assert _masked(repr(ours)) == _masked(repr(theirs))


def test_blocked_autorange_equals_torchs_on_one_clock():
    calls = []
    ours = clocked(benchmark).blocked_autorange(lambda n, t: calls.append((n, t)),
                                                min_run_time=0.05)  # fmt: skip
    theirs = clocked(tbenchmark).blocked_autorange(min_run_time=0.05)
    assert statistics(ours) == statistics(theirs)
    assert calls == [(ours.number_per_run, t) for t in ours.raw_times]
    assert sum(ours.raw_times) >= 0.05
    assert _masked(repr(ours)) == _masked(repr(theirs))
    # merge: one measurement per task, per-run times, as torch's
    merged = benchmark.Measurement.merge([ours, ours])
    merged_torch = tbenchmark.Measurement.merge([theirs, theirs])
    assert [statistics(m) for m in merged] == [statistics(m) for m in merged_torch]


def test_statistics_and_warnings_equal_torchs():
    raw = [3.0, 1.0, 2.0, 10.0, 2.5, 2.2, 1.7]
    spec = benchmark.TaskSpec("f()", "pass", label="f")
    ours = benchmark.Measurement(2, raw, spec)
    theirs = tbenchmark.Measurement(2, raw, tbenchmark.TaskSpec("f()", "pass", label="f"))
    for name in ("mean", "median", "iqr", "significant_figures", "has_warnings"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12), name
    assert ours.meets_confidence(2.0) == theirs.meets_confidence(2.0)
    assert _masked(repr(ours)) == _masked(repr(theirs))
    assert "WARNING: Interquartile range" in repr(ours)
    for t in (3e-10, 4e-8, 2e-5, 0.5, 7.0):
        assert benchmark.select_unit(t) == tbenchmark.select_unit(t)
    assert benchmark.trim_sigfig(3.14159, 2) == pytest.approx(tbenchmark.trim_sigfig(3.14159, 2))


def test_compare_table_holds_torchs_cells():
    def measurements(module):
        out = []
        for sub in ("int", "float"):
            for description in ("small", "large"):
                timer = clocked(module, label="add", sub_label=sub, description=description)
                out.append(timer.timeit(100 if description == "small" else 3000))
        return out

    ours = str(benchmark.Compare(measurements(benchmark)))
    compare = tbenchmark.Compare(measurements(tbenchmark))
    theirs = str(compare)
    for word in ("add", "small", "large", "int", "float", "1 threads", "Times are in"):
        assert word in ours
    assert _numbers(ours) == _numbers(theirs)
    assert ours.splitlines()[0].startswith("[") and ours.splitlines()[0].endswith("]")


def test_reached_as_torchs_attributes():
    assert tc.utils.benchmark is benchmark and tc.signal.windows is windows
    assert tc.utils.model_zoo.load_url is tc.hub.load_state_dict_from_url


def test_real_clock_structure_and_refusals(capsys):
    timer = benchmark.Timer("tricycle.ones(4) * x", setup="x = tricycle.ones(4)",
                            description="mul")  # fmt: skip
    m = timer.blocked_autorange(min_run_time=0.01)
    assert m.number_per_run >= 1 and m.times and all(t > 0 for t in m.times)
    assert m.median > 0 and m.mean > 0 and m.iqr >= 0
    single = timer.timeit(20)
    assert len(single.times) == 1 and single.times[0] > 0
    compare = benchmark.Compare([m])
    compare.trim_significant_figures()
    compare.colorize()
    compare.highlight_warnings()
    compare.print()
    assert "mul" in capsys.readouterr().out
    for call in (timer.repeat, timer.autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            call()
    with pytest.raises(ValueError, match="language"):
        benchmark.Timer("pass", language="c++")
    with pytest.raises(ValueError, match="global_setup"):
        benchmark.Timer("pass", global_setup="int x;")
    with pytest.raises(ValueError, match="Compare"):
        benchmark.Compare([1.0])


def _masked(text: str) -> str:
    """A repr without its object address and module path, which differ by library."""
    return "\n".join(re.sub(r"<.* at 0x[0-9a-f]+>", "<Measurement>", line)
                     for line in text.splitlines())  # fmt: skip


def _numbers(table: str) -> list[float]:
    """The cells of a table, in order (the threads' count aside)."""
    return [float(n) for line in table.splitlines() if "|" in line
            for n in re.findall(r"\d+\.\d+|\d+", line.split("|", 1)[1])]  # fmt: skip
