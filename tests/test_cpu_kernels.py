"""The CPU backend's kernels (numba) against the reference formulas they replace.

Every kernel of the GPT path, forward and backward, against its reference: hypothesis draws
odd sizes, size-1 axes, any number of leading axes and non-contiguous inputs, in float32 and
float64. Then: the parallel variant gives the serial one's numbers bit for bit; two Python
threads calling kernels at once get the numbers of one after the other; without numba the
references run and one line says so; the first compilation says so, a cached one nothing.
"""

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tricycle import dispatch
from tricycle.activation import (
    bias_gelu_backward,
    bias_gelu_forward,
    gelu_backward,
    gelu_forward,
    swiglu_backward,
    swiglu_forward,
)
from tricycle.functions import (
    log_softmax_backward,
    log_softmax_forward,
    softmax_backward,
    softmax_forward,
)
from tricycle.layers import (
    embedding_backward,
    embedding_forward,
    layer_norm_backward,
    layer_norm_forward,
    rms_norm_backward,
    rms_norm_forward,
)
from tricycle.loss import cross_entropy_backward, cross_entropy_forward
from tricycle.optimisers import adam_step

numba = pytest.importorskip("numba")
compiler = pytest.importorskip("tricycle.backends.cpu.compile")

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


# ====================================================================== each op, run through a pair
def _softmax_like(forward, backward, rng, x, dtype):
    y = forward(np, x)
    return [y, backward(np, y, rng.standard_normal(x.shape).astype(dtype))]


def _layer_norm(forward, backward, rng, x, dtype, bias=True):
    gamma, beta = (rng.standard_normal(x.shape[-1]).astype(dtype) for _ in range(2))
    y, mean, rstd = forward(np, x, gamma, beta if bias else None, 1e-5)
    dy = rng.standard_normal(x.shape).astype(dtype)
    return [y, mean, rstd, *backward(np, dy, x, gamma, mean, rstd)]


def _rms_norm(forward, backward, rng, x, dtype):
    gamma = rng.standard_normal(x.shape[-1]).astype(dtype)
    y, rstd = forward(np, x, gamma, 1e-6)
    return [y, rstd, *backward(np, rng.standard_normal(x.shape).astype(dtype), x, gamma, rstd)]


def _gelu(forward, backward, rng, x, dtype, approximate):
    dy = rng.standard_normal(x.shape).astype(dtype)
    return [forward(np, x, approximate), backward(np, x, dy, approximate)]


def _bias_gelu(forward, backward, rng, x, dtype, approximate):
    bias = rng.standard_normal(x.shape[-1]).astype(dtype)
    dy = rng.standard_normal(x.shape).astype(dtype)
    return [forward(np, x, bias, approximate), *backward(np, x, bias, dy, approximate)]


def _swiglu(forward, backward, rng, x, dtype):
    x = np.concatenate([x, x[..., ::-1] * 0.5], axis=-1)  # (..., 2F)
    dy = rng.standard_normal(x.shape[:-1] + (x.shape[-1] // 2,)).astype(dtype)
    return [forward(np, x), backward(np, x, dy)]


def _cross_entropy(forward, backward, rng, x, dtype, ignore_index):
    labels = rng.integers(0, x.shape[-1], size=x.shape[:-1])
    if ignore_index is not None and labels.size:
        labels.reshape(-1)[::3] = ignore_index
    loss, saved = forward(np, x, labels, ignore_index)
    dlogits = backward(np, np.asarray(0.75, dtype), x, labels, saved, ignore_index)
    return [loss, *saved, dlogits]


def _embedding(forward, backward, rng, x, dtype):
    weights = x.reshape(-1, x.shape[-1])  # (V, E)
    ids = rng.integers(0, weights.shape[0], size=(3, 7))
    dout = rng.standard_normal((3, 7, weights.shape[1])).astype(dtype)
    return [forward(np, weights, ids), backward(np, dout, ids, weights.shape[0], dtype)]


CASES = {
    "softmax": ((softmax_forward, softmax_backward), _softmax_like, {}),
    "log_softmax": ((log_softmax_forward, log_softmax_backward), _softmax_like, {}),
    "layer_norm": ((layer_norm_forward, layer_norm_backward), _layer_norm, {}),
    "layer_norm no bias": ((layer_norm_forward, layer_norm_backward), _layer_norm, {"bias": False}),
    "rms_norm": ((rms_norm_forward, rms_norm_backward), _rms_norm, {}),
    "gelu": ((gelu_forward, gelu_backward), _gelu, {"approximate": False}),
    "gelu tanh": ((gelu_forward, gelu_backward), _gelu, {"approximate": "tanh"}),
    "bias_gelu": ((bias_gelu_forward, bias_gelu_backward), _bias_gelu, {"approximate": False}),
    "bias_gelu tanh": ((bias_gelu_forward, bias_gelu_backward), _bias_gelu, {"approximate": True}),
    "swiglu": ((swiglu_forward, swiglu_backward), _swiglu, {}),
    "cross_entropy": ((cross_entropy_forward, cross_entropy_backward), _cross_entropy,
                      {"ignore_index": None}),
    "cross_entropy ignore": ((cross_entropy_forward, cross_entropy_backward), _cross_entropy,
                             {"ignore_index": -1}),
    "embedding": ((embedding_forward, embedding_backward), _embedding, {}),
}  # fmt: skip


def run(case: str, pair, x, dtype, seed: int = 0):
    """The outputs of ``case`` (forward and backward) computed with ``pair``."""
    _, body, options = CASES[case]
    return body(*pair, np.random.default_rng(seed), x, dtype, **options)


def kernel_of(case: str, x):
    reference = CASES[case][0]
    pair = dispatch.choose(case.split()[0], reference, x)
    assert pair is not reference, f"no CPU kernel registered for {case}"
    return pair


def arranged(a, layout: str):
    """``a`` as a C-contiguous array, a view with a stride in its last axis, or Fortran order."""
    if layout == "strided":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return wide[..., ::2]
    return np.asfortranarray(a) if layout == "fortran" else a


def assert_close(ours, expected, dtype, what):
    tolerance = TOLERANCE[dtype]
    for i, (a, b) in enumerate(zip(ours, expected)):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, i, a.shape, b.shape, a.dtype)
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * scale, err_msg=what)


def test_every_op_here_has_a_cpu_kernel():
    registered = {kernel.op for kernel in dispatch.kernels(device="cpu")}
    assert {case.split()[0] for case in CASES} <= registered


# ====================================================================== against the references
@pytest.mark.parametrize("case", list(CASES))
@given(
    lead=st.lists(st.integers(1, 5), min_size=0, max_size=2).map(tuple),
    width=st.integers(1, 40),
    layout=st.sampled_from(["contiguous", "strided", "fortran"]),
    dtype=st.sampled_from([np.float32, np.float64]),
    scale=st.sampled_from([1.0, 6.0]),
    seed=st.integers(0, 2**16),
)
def test_kernel_matches_reference(case, lead, width, layout, dtype, scale, seed):
    rng = np.random.default_rng(seed)
    x = arranged((rng.standard_normal(lead + (width,)) * scale).astype(dtype), layout)
    assert_close(run(case, kernel_of(case, x), x, dtype), run(case, CASES[case][0], x, dtype),
                 dtype, case)  # fmt: skip


@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple),
    strided_grad=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
    decay=st.sampled_from([0.0, 0.1]),
    multiplier=st.sampled_from([1.0, 0.25]),
    seed=st.integers(0, 2**16),
)
def test_adam_step_matches_reference(shape, strided_grad, dtype, decay, multiplier, seed):
    """Three AdamW steps in place on w, m and v (the gradient may be a strided view)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape).astype(dtype)
    states = {name: [w.copy(), np.zeros_like(w), np.zeros_like(w)] for name in ("ours", "ref")}
    kernel = dispatch.choose("adam_step", adam_step, w, w, w, w)  # (w, grad, m, v) all like w
    assert kernel is not adam_step, "no CPU kernel registered for adam_step"
    for step in (1, 2, 3):
        grad = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
        grad = grad[..., ::2] if strided_grad else np.ascontiguousarray(grad[..., ::2])
        for name, step_fn in (("ours", kernel), ("ref", adam_step)):
            w_, m, v = states[name]
            step_fn(np, w_, grad, m, v, 0.9, 0.95, 1e-8, decay, 1e-2, step, multiplier)
    assert_close(states["ours"], states["ref"], dtype, "adam_step")


@pytest.mark.parametrize("case", ["softmax", "log_softmax", "cross_entropy"])
def test_huge_and_tiny_values(case):
    """Rows far from 0 (exp underflows, 1e4 apart) stay exact as in the references."""
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4], [-90.0, -200.0, -88.0]], np.float32)
    assert_close(run(case, kernel_of(case, x), x, np.float32), run(case, CASES[case][0], x,
                 np.float32), np.float32, case)  # fmt: skip


def test_gelu_tails():
    x = np.array([-40.0, -12.0, -5.0, -1e-3, 0.0, 1e-7, 3.0, 12.0, 40.0], np.float32)
    for case in ("gelu", "gelu tanh"):
        assert_close(run(case, kernel_of(case, x), x, np.float32),
                     run(case, CASES[case][0], x, np.float32), np.float32, case)  # fmt: skip


@pytest.mark.parametrize("case", [case for case in CASES if case != "embedding"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_infinities_come_out_where_the_reference_puts_them(case, dtype):
    """A NaN, +inf or -inf in a row (alone, or a row all -inf as a full mask gives): the
    kernel's NaN and infinities land where the reference's do, the rest as close as ever."""
    x = np.random.default_rng(3).standard_normal((7, 6)).astype(dtype)
    x[0, 2], x[1, 4], x[2, 0], x[3, :2], x[4] = np.nan, np.inf, -np.inf, -np.inf, -np.inf
    x[5, 1], x[5, 3] = np.inf, -np.inf
    with np.errstate(all="ignore"):
        ours = run(case, kernel_of(case, x), x, dtype)
        expected = run(case, CASES[case][0], x, dtype)
    for i, (a, b) in enumerate(zip(ours, expected)):
        a, b = np.asarray(a), np.asarray(b)
        for where in (np.isnan, np.isposinf, np.isneginf):
            np.testing.assert_array_equal(where(a), where(b), err_msg=f"{case} {i} {where}")
        finite = np.isfinite(b)
        scale = max(1.0, float(np.abs(b[finite]).max(initial=0.0)))
        tolerance = TOLERANCE[dtype]
        np.testing.assert_allclose(a[finite], b[finite], rtol=tolerance, atol=tolerance * scale)


# ====================================================================== exp and tanh in float32
def _elementwise(function):
    """A compiled loop applying the CPU backend's ``function`` (maths.exp, maths.tanh)."""

    @compiler.jit(cache=False)
    def apply(out, x):
        for i in range(x.size):
            out[i] = function(x[i])

    def call(x):
        out = np.empty_like(x)
        apply(out, x)
        return out

    return call


def test_float32_exp_is_within_a_few_units_in_the_last_place():
    from tricycle.backends.cpu.maths import exp  # noqa: PLC0415 - needs numba

    x = np.linspace(-110.0, 100.0, 400_001, dtype=np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, -87.0], np.float32)
    with np.errstate(over="ignore"):
        expected = np.exp(np.concatenate([x, specials]).astype(np.float64))
    ours = _elementwise(exp)(np.concatenate([x, specials]))
    normal = (expected > np.finfo(np.float32).tiny) & (expected < np.finfo(np.float32).max)
    relative = np.abs(ours[normal] - expected[normal]) / expected[normal]
    assert relative.max() < 5e-7  # float32's unit in the last place: 6e-8 to 1.2e-7
    assert np.all(ours[expected <= np.finfo(np.float32).tiny] <= np.finfo(np.float32).tiny)
    np.testing.assert_array_equal(ours[-8:-3], np.float32([np.nan, np.inf, 0, 1, 1]))
    assert np.isfinite(ours[-3]) and ours[-2] == np.inf  # e^88.72 < float32's max < e^88.73


def test_float32_tanh_is_within_a_few_units_in_the_last_place():
    from tricycle.backends.cpu.maths import tanh  # noqa: PLC0415 - needs numba

    specials = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 9.0, -40.0])
    x = np.concatenate([np.linspace(-12.0, 12.0, 400_001, dtype=np.float32), specials])
    ours, expected = _elementwise(tanh)(x), np.tanh(x.astype(np.float64))
    finite = np.isfinite(x)
    assert np.abs(ours[finite] - expected[finite]).max() < 4e-7
    assert np.abs(ours[finite]).max() <= 1.0  # saturates at +-1 exactly, never past
    np.testing.assert_array_equal(ours[-8:], np.float32([np.nan, 1, -1, 0, -0.0, 1e-30, 1, -1]))
    assert np.signbit(ours[-4]) and not np.signbit(ours[-5])


# ====================================================================== threads
@pytest.fixture
def parallel_always(monkeypatch):
    """Parallel kernels for any size (on a machine with more than one core)."""
    monkeypatch.setattr(compiler, "PARALLEL_MIN_SIZE", 0)
    if compiler.thread_count() < 2:
        pytest.skip("one thread: no parallel variant runs")


@pytest.mark.usefixtures("parallel_always")
@pytest.mark.parametrize("case", ["softmax", "layer_norm", "gelu tanh", "bias_gelu",
                                  "cross_entropy", "embedding"])  # fmt: skip
def test_on_threads_and_on_one_the_bits_are_the_same(case, monkeypatch):
    """One compiled function runs every range of tasks: cut over the threads or whole on the
    calling thread, each row is the same code on the same numbers."""
    x = np.random.default_rng(1).standard_normal((37, 5, 33)).astype(np.float32)
    pair = kernel_of(case, x)
    parallel = run(case, pair, x, np.float32)
    monkeypatch.setattr(compiler, "PARALLEL_MIN_SIZE", 2**62)
    for a, b in zip(parallel, run(case, pair, x, np.float32)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("tasks", [0, 1, 5, 64, 65, 1000])
@pytest.mark.parametrize("parts", [1, 2, 3, 8])
@pytest.mark.parametrize("grain", [1, 64])
def test_the_ranges_cover_the_tasks_in_order_at_multiples_of_the_grain(tasks, parts, grain):
    ranges = compiler._ranges(tasks, parts, grain)
    assert ranges[0][0] == 0 and ranges[-1][1] == tasks and len(ranges) <= parts
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # contiguous, in order
    assert all(first % grain == 0 and first < last for first, last in ranges[1:])


def test_an_error_on_a_thread_is_raised_in_the_caller_and_the_team_goes_on():
    def kernel(out, first, last):  # any callable runs on the team; this one fails past 4
        if last > 4:
            raise ValueError(f"tasks {first}..{last}")
        out[first:last] = 1

    out = np.zeros(8)
    with pytest.raises(ValueError, match="tasks 4..8"):
        compiler._team.run(kernel, (out,), [(0, 4), (4, 8)])
    compiler._team.run(kernel, (out,), [(0, 2), (2, 4)])
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 0, 0, 0, 0])


@pytest.mark.usefixtures("parallel_always")
def test_two_python_threads_get_the_numbers_of_one_after_the_other():
    """Both threads call parallel kernels at once (one waits while the other is inside): no
    abort, no deadlock, exactly the numbers of one after the other."""
    cases = ["softmax", "layer_norm", "bias_gelu tanh", "cross_entropy", "embedding"]
    x = np.random.default_rng(2).standard_normal((64, 9, 48)).astype(np.float32)

    def work(seed):
        return [out for case in cases for out in run(case, kernel_of(case, x), x, np.float32, seed)]

    expected = {seed: work(seed) for seed in (0, 1)}
    results, errors = {}, []

    def thread(seed):
        try:
            for _ in range(20):
                results[seed] = work(seed)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=thread, args=(seed,)) for seed in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and not any(t.is_alive() for t in threads)
    for seed in (0, 1):
        for a, b in zip(results[seed], expected[seed]):
            np.testing.assert_array_equal(a, b)


def test_set_threads_checks_its_argument():
    with pytest.raises(ValueError, match="integer >= 1"):
        compiler.set_threads(0)


# ====================================================================== processes
_BLOCK_NUMBA = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("numba blocked by the test")
sys.meta_path.insert(0, Block())
"""

_LAYER_NORM = """
import numpy as np
from tricycle import dispatch
from tricycle.layers import LayerNorm
from tricycle.tensor import Tensor
x = Tensor(np.linspace(-3, 2, 4 * 6, dtype=np.float32).reshape(4, 6))
y = LayerNorm(6)(x * x)
y.backward(np.cos(np.arange(24.0)).reshape(4, 6))
print(repr(float((y.array * np.arange(24).reshape(4, 6)).sum())), repr(float(x.grad.array.sum())))
print(dispatch.available("cpu"))
"""


def _python(code: str, **env):
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environment.pop("TRICYCLE_DISABLE_KERNELS", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, cwd=ROOT, timeout=300)  # fmt: skip


def test_without_numba_the_references_run_and_one_line_says_so():
    done = _python(_BLOCK_NUMBA + _LAYER_NORM)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tricycle: no cpu kernels"), done.stderr
    assert "reference formulas run" in lines[0]
    *values, available = done.stdout.split()
    assert available == "False"
    with_kernels = _python(_LAYER_NORM)  # the kernels' numbers: the same to rounding
    assert with_kernels.returncode == 0, with_kernels.stderr
    np.testing.assert_allclose(
        [float(v) for v in values], [float(v) for v in with_kernels.stdout.split()[:2]], rtol=1e-5
    )


def test_the_first_compilation_says_so_and_a_cached_one_is_silent(tmp_path):
    for run_number in (1, 2):
        done = _python(_LAYER_NORM, NUMBA_CACHE_DIR=str(tmp_path))
        assert done.returncode == 0, done.stderr
        if run_number == 1:
            lines = done.stderr.strip().splitlines()
            assert lines[0].startswith("tricycle: compiling the CPU kernels"), done.stderr
            assert lines[-1].startswith("tricycle: compiled ") and lines[-1].endswith(" s")
            assert len(lines) == 2
        else:
            assert done.stderr == ""


def test_a_kernels_cache_goes_stale_when_any_backend_module_changes(tmp_path):
    """A kernel inlines functions of other modules (maths.exp): its cache entry is stamped with
    the digest of every module of the backend, not its own file's."""
    import shutil

    from tricycle.backends.cpu import compile as compiled
    from tricycle.backends.cpu import norm

    folder = Path(compiled.__file__).parent
    kernel = norm.layernorm_forward
    kernel = getattr(kernel, "kernel", kernel)
    assert kernel._cache._impl.locator.get_source_stamp() == compiled.sources_digest()
    same, changed = tmp_path / "same", tmp_path / "changed"
    for copy in (same, changed):
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (changed / "maths.py").write_text((changed / "maths.py").read_text() + "\n# changed\n")
    assert compiled.sources_digest(str(same)) == compiled.sources_digest()
    assert compiled.sources_digest(str(changed)) != compiled.sources_digest()
