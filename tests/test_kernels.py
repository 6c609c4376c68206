"""Every CUDA kernel in tricycle/backends/cuda against its xp reference.

Inputs are fresh random arrays of several shapes, including rows and sequence lengths that are
not multiples of any tile or block size. The reference runs the library's own pure xp function
(the one the kernel replaces) in float64 with numpy, on the very values the kernel sees (16-bit
inputs are rounded first). Errors are ||out - ref|| / ||ref||, bounded by what the storage
precision allows. Every allocation made during a kernel call is poisoned with NaN bytes, so an
output element the kernel forgot to write fails the test.

GPU tests skip cleanly without cupy and a CUDA device. ``test_sources_compile_with_nvcc`` needs
only nvcc: it checks every kernel instantiation on a machine without a GPU.
"""

import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tricycle import backend
from tricycle.activation import gelu_backward, gelu_forward
from tricycle.attention import attention_backward, attention_forward
from tricycle.backends import cuda as kernels
from tricycle.backends.cuda.attention import uses_tensor_cores
from tricycle.functions import softmax_backward, softmax_forward
from tricycle.layers import (
    Dense,
    layer_norm_backward,
    layer_norm_forward,
    rms_norm_backward,
    rms_norm_forward,
)
from tricycle.loss import cross_entropy_backward, cross_entropy_forward
from tricycle.optimisers import _adam_update
from tricycle.precision import Precision
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

GPU = backend.cupy_available()
gpu = pytest.mark.skipif(not GPU, reason="no CUDA GPU")

# relative-error bounds per storage dtype (float32 arithmetic inside every kernel); "tf32":
# float32 storage with products on TF32 operands (10 mantissa bits, as cuBLAS's TF32)
TOLERANCE = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 1e-2, "tf32": 5e-3}


def _dtypes():
    names = ["float32", "float16"]
    try:
        import ml_dtypes  # noqa: F401

        names.append("bfloat16")
    except ImportError:
        pass
    return names


DTYPES = _dtypes()


def np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def on_device(cp, array, dtype="float32"):
    """(device array in ``dtype``, the float64 values it holds) for the reference."""
    rounded = np.asarray(array).astype(np_dtype(dtype))
    return cp.asarray(rounded), rounded.astype(np.float64)


def to_host(cp, array):
    return cp.asnumpy(array).astype(np.float64)


def check(cp, out, ref, dtype, what, dtype_out=None, floor=0.0):
    """Assert out (device) matches ref (float64) within the dtype's bound, relative to ref's
    norm or ``floor`` if that is larger (the scale at which the dtype rounds the result, where
    ref is small by cancellation); returns the error."""
    expected_dtype = np_dtype(dtype_out or dtype)
    assert out.dtype == expected_dtype, f"{what}: dtype {out.dtype}, expected {expected_dtype}"
    got = to_host(cp, out)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    finite = np.isfinite(ref)
    bad = ~np.isfinite(got) & finite
    assert not bad.any(), f"{what}: {bad.sum()} non-finite (unwritten?) elements of {got.size}"
    scale = max(np.linalg.norm(ref[finite]), floor)
    err = np.linalg.norm(got[finite] - ref[finite])
    err = err / scale if scale > 0 else err
    print(f"{what} [{dtype}] {tuple(ref.shape)}: rel err {err:.2e}")
    assert err < TOLERANCE[dtype], f"{what} [{dtype}] {ref.shape}: relative error {err:.3e}"
    return err


# ====================================================================== no GPU needed
def test_import_does_not_import_cupy():
    code = (
        "import sys, tricycle.backends.cuda, tricycle.precision; assert 'cupy' not in sys.modules"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_enabled_is_false_for_numpy():
    # (TRICYCLE_DISABLE_KERNELS is read by dispatch.choose alone: tests/test_dispatch.py)
    x = np.ones((2, 3), dtype=np.float32)
    assert not kernels.enabled(x)
    assert not kernels.enabled()
    assert not kernels.attention_enabled(np.ones((1, 2, 96), np.float32), 1)
    assert not kernels.owns((x, x))


@pytest.mark.build
@pytest.mark.skipif(
    GPU or shutil.which("nvcc") is None, reason="needs nvcc; on a GPU the NVRTC tests cover it"
)
def test_sources_compile_with_nvcc():
    """Every instantiation that the launchers use compiles for sm_90, without spills (device
    code only, one nvcc per source file, all at once)."""
    by_file = collections.defaultdict(list)
    for file, name, args in kernels.instantiations():
        by_file[file].append(f"{name}<{', '.join(args)}>" if args else name)
    with tempfile.TemporaryDirectory() as tmp:
        compiles = {}
        for file, expressions in by_file.items():
            refs = ",\n".join(f"(void*)&{e}" for e in expressions)
            path = Path(tmp) / f"check_{file}"
            path.write_text(f"{kernels.launch.source(file)}\nvoid* refs[] = {{\n{refs}}};\n")
            compiles[file] = subprocess.Popen(
                ["nvcc", "-std=c++17", "-arch=sm_90", "--cubin", str(path), "-o", os.devnull,
                 "-Xptxas", "-v"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
        for file, process in compiles.items():
            _, stderr = process.communicate()
            assert process.returncode == 0, f"{file}:\n{stderr[-4000:]}"
            spills = [
                line
                for line in stderr.splitlines()
                if "spill" in line and " 0 bytes spill stores" not in line
            ]
            assert not spills, f"{file} spills registers: {spills[:3]}"


# ====================================================================== softmax
SOFTMAX_SHAPES = [
    (1, 1),
    (3, 7),
    (5, 33),
    (64, 256),
    (17, 1000),
    (9, 1025),
    (4, 5000),
    (2, 3, 4099),
]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES)
def test_softmax(cp, poisoned, rng, shape, dtype):
    x, x_ref = on_device(cp, rng.normal(scale=3.0, size=shape), dtype)
    y = kernels.softmax_forward(cp, x)
    y_ref = softmax_forward(np, x_ref)
    check(cp, y, y_ref, dtype, "softmax_forward")

    dy, dy_ref = on_device(cp, rng.normal(size=shape), dtype)
    dx = kernels.softmax_backward(cp, y, dy)
    # the reference backward uses the kernel's own (rounded) y, as the op would
    dx_ref = softmax_backward(np, to_host(cp, y), dy_ref)
    check(cp, dx, dx_ref, dtype, "softmax_backward")
    assert cp.array_equal(dx, kernels.softmax_backward(cp, y, dy)), "not deterministic"


@gpu
def test_softmax_handles_minus_infinity_rows(cp):
    x = cp.asarray([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0]], dtype=np.float32)
    y = cp.asnumpy(kernels.softmax_forward(cp, x))
    np.testing.assert_allclose(y, softmax_forward(np, cp.asnumpy(x)), rtol=1e-6)


# ====================================================================== layer norm, RMS norm
# at least 3 columns: with 1 (or 2) the exact layer-norm gradient is 0 and a relative error
# compares rounding noise with rounding noise
NORM_SHAPES = [(1, 3), (3, 5), (7, 384), (2, 3, 1000), (5, 2049), (300, 64), (3, 7000)]


@gpu
@pytest.mark.parametrize("param_dtype", ["float32", "same"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", NORM_SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm(cp, poisoned, rng, shape, dtype, param_dtype, bias):
    p_dtype = dtype if param_dtype == "same" else "float32"
    if dtype == "float32" and param_dtype == "same":
        pytest.skip("same as float32 parameters")
    cols = shape[-1]
    x, x_ref = on_device(cp, rng.normal(loc=0.5, scale=2.0, size=shape), dtype)
    gamma, gamma_ref = on_device(cp, rng.normal(loc=1.0, size=cols), p_dtype)
    beta, beta_ref = on_device(cp, rng.normal(size=cols), p_dtype) if bias else (None, None)

    y, mean, rstd = kernels.layer_norm_forward(cp, x, gamma, beta, 1e-5)
    y_ref, mean_ref, rstd_ref = layer_norm_forward(np, x_ref, gamma_ref, beta_ref, 1e-5)
    check(cp, y, y_ref, dtype, "layer_norm y")
    check(cp, mean, mean_ref, "float32", "layer_norm mean")
    check(cp, rstd, rstd_ref, "float32", "layer_norm rstd")

    dy, dy_ref = on_device(cp, rng.normal(size=shape), dtype)
    dx, dgamma, dbeta = kernels.layer_norm_backward(cp, dy, x, gamma, mean, rstd)
    dx_ref, dgamma_ref, dbeta_ref = layer_norm_backward(
        np, dy_ref, x_ref, gamma_ref, mean_ref, rstd_ref
    )
    # dx = rstd (g dy - mean(g dy) - xhat mean(g dy xhat)) cancels on a short row: bounded
    # at the scale of its terms
    check(cp, dx, dx_ref, dtype, "layer_norm dx",
          floor=np.linalg.norm(dy_ref * gamma_ref * rstd_ref))  # fmt: skip
    # dgamma and dbeta are float32 sums of the (exactly known) rounded inputs: their bound is
    # that of their own storage dtype
    check(cp, dgamma, dgamma_ref, p_dtype, "layer_norm dgamma")
    check(cp, dbeta, dbeta_ref, p_dtype, "layer_norm dbeta")
    again = kernels.layer_norm_backward(cp, dy, x, gamma, mean, rstd)
    assert all(cp.array_equal(a, b) for a, b in zip(again, (dx, dgamma, dbeta)))


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", NORM_SHAPES)
def test_rms_norm(cp, poisoned, rng, shape, dtype):
    cols = shape[-1]
    x, x_ref = on_device(cp, rng.normal(loc=0.5, scale=2.0, size=shape), dtype)
    gamma, gamma_ref = on_device(cp, rng.normal(loc=1.0, size=cols))
    y, rstd = kernels.rms_norm_forward(cp, x, gamma, 1e-6)
    y_ref, rstd_ref = rms_norm_forward(np, x_ref, gamma_ref, 1e-6)
    check(cp, y, y_ref, dtype, "rms_norm y")
    check(cp, rstd, rstd_ref, "float32", "rms_norm rstd")

    dy, dy_ref = on_device(cp, rng.normal(size=shape), dtype)
    dx, dgamma = kernels.rms_norm_backward(cp, dy, x, gamma, rstd)
    dx_ref, dgamma_ref = rms_norm_backward(np, dy_ref, x_ref, gamma_ref, rstd_ref)
    check(cp, dx, dx_ref, dtype, "rms_norm dx")
    check(cp, dgamma, dgamma_ref, dtype, "rms_norm dgamma", dtype_out="float32")


# ====================================================================== add
ADD_SHAPES = [(1,), (7,), (1000,), (3, 7, 129), (16, 64, 768)]


def _rounded_sum(a_ref, b_ref, dtype):
    """What the kernel computes: the float32 sum, rounded once to the storage dtype."""
    return (a_ref.astype(np.float32) + b_ref.astype(np.float32)).astype(np_dtype(dtype))


@gpu
@pytest.mark.parametrize("row", [False, True], ids=["same-shape", "row"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ADD_SHAPES)
def test_add(cp, poisoned, rng, shape, dtype, row):
    a, a_ref = on_device(cp, rng.normal(size=shape), dtype)
    b, b_ref = on_device(cp, rng.normal(size=shape[-1:] if row else shape), dtype)
    assert kernels.add_enabled(a, b)
    want = _rounded_sum(a_ref, b_ref, dtype)
    got = kernels.add_arrays(a, b)
    assert got.dtype == a.dtype and np.array_equal(cp.asnumpy(got), want)
    in_place = kernels.add_arrays(a, b, out=a)  # Dense's bias add
    assert in_place is a and np.array_equal(cp.asnumpy(a), want)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_add_off_the_vector_alignment_and_where_it_does_not_apply(cp, rng, dtype):
    """Views one element into their buffers take the one-element path; other dtypes, shapes
    and layouts fall back to cupy's add with its broadcasting and promotion."""
    flat, flat_ref = on_device(cp, rng.normal(size=2 * 4097), dtype)
    a, b = flat[1:4097].reshape(64, 64), flat[4098:].reshape(64, 64)
    a_ref, b_ref = flat_ref[1:4097].reshape(64, 64), flat_ref[4098:].reshape(64, 64)
    assert np.array_equal(cp.asnumpy(kernels.add_arrays(a, b)), _rounded_sum(a_ref, b_ref, dtype))
    column = cp.ones((64, 1), dtype=a.dtype)
    wider = cp.ones(64, dtype=np.float64)
    for other in (a.T, column, wider):
        assert not kernels.add_enabled(a, other)
        assert np.array_equal(cp.asnumpy(kernels.add_arrays(a, other)), cp.asnumpy(a + other))


@gpu
def test_residual_adds_and_summed_gradients_use_the_add_kernel(cp, rng):
    """x + f(x): the forward add and the two gradient paths summed in backward, on the GPU,
    equal the numpy run (float32: the kernel's sum is the exact float32 sum)."""
    x0 = rng.normal(size=(8, 32)).astype(np.float32)
    results = []
    for device in ("cpu", "gpu"):
        manual_seed(0)
        layer = Dense(32, 32)
        x = Tensor(x0.copy())
        if device == "gpu":
            layer.to_gpu()
            x = x.to_gpu()
        y = x + layer(x)
        (y * y).sum().backward()
        results.append([backend.to_host_array(t.array) for t in (y, x.grad, layer.weights.grad)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ====================================================================== GeLU
GELU_SHAPES = [(1,), (1000,), (3, 7, 129), (4096, 1536)]


@gpu
@pytest.mark.parametrize("approximate", [False, "tanh"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", GELU_SHAPES)
def test_gelu(cp, poisoned, rng, shape, dtype, approximate):
    """Far in the negative tail gelu(x) = x Phi(x) is 1 + erf (or 1 + tanh) close to 0, which
    float32 rounds at the scale of x (dy for the gradient): the bound is relative to that."""
    x, x_ref = on_device(cp, rng.normal(scale=2.0, size=shape), dtype)
    y = kernels.gelu_forward(cp, x, approximate)
    y_ref = gelu_forward(np, x_ref, approximate)
    floor = np.linalg.norm(x_ref)
    check(cp, y, y_ref, dtype, f"gelu_forward {approximate}", floor=floor)
    dy, dy_ref = on_device(cp, rng.normal(size=shape), dtype)
    dx = kernels.gelu_backward(cp, x, dy, approximate)
    dx_ref = gelu_backward(np, x_ref, dy_ref, approximate)
    check(cp, dx, dx_ref, dtype, f"gelu_backward {approximate}", floor=np.linalg.norm(dy_ref))


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_on_a_view_off_the_vector_alignment(cp, rng, dtype):
    """A view starting one element into its buffer takes the one-element path (the vector
    kernels need every pointer aligned to four elements)."""
    flat, flat_ref = on_device(cp, rng.normal(size=4097), dtype)
    x, x_ref = flat[1:].reshape(64, 64), flat_ref[1:].reshape(64, 64)
    check(cp, kernels.gelu_forward(cp, x, "tanh"), gelu_forward(np, x_ref, "tanh"), dtype, "gelu")


@gpu
@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 515), (64, 516)])  # rows of 515: one element at a time
def test_bias_gelu(cp, poisoned, rng, dtype, approximate, shape):
    x, x_ref = on_device(cp, rng.normal(size=shape), dtype)
    b, b_ref = on_device(cp, rng.normal(size=shape[-1]), dtype)
    y = kernels.bias_gelu_forward(cp, x, b, approximate)
    check(cp, y, gelu_forward(np, x_ref + b_ref, approximate), dtype, "bias_gelu_forward")
    dy, dy_ref = on_device(cp, rng.normal(size=shape), dtype)
    dx, db = kernels.bias_gelu_backward(cp, x, b, dy, approximate)
    dx_ref = gelu_backward(np, x_ref + b_ref, dy_ref, approximate)
    check(cp, dx, dx_ref, dtype, "bias_gelu dx")
    check(cp, db, to_host(cp, dx).sum(axis=0), dtype, "bias_gelu dbias")


@gpu
@pytest.mark.parametrize("approximate", [False, True])
def test_dense_gelu_matches_the_two_layers(cp, rng, approximate):
    """The MLP's first half with Dense's bias added inside GeLU's kernel (``dense_gelu``): the
    output and every gradient equal those of the Dense and GeLU layers run one after the other."""
    from tricycle.activation import GeLU, dense_gelu
    from tricycle.layers import Dense
    from tricycle.tensor import Tensor

    manual_seed(0)
    layer = Dense(48, 80)
    layer.bias.array[...] = rng.normal(size=80)
    layer.to_gpu()
    x_host = rng.normal(size=(3, 7, 48)).astype(np.float32)
    dy = cp.asarray(rng.normal(size=(3, 7, 80)).astype(np.float32))
    results = []
    for fused in (True, False):
        x = Tensor(cp.asarray(x_host), requires_grad=True)
        y = dense_gelu(layer, x, approximate) if fused else GeLU(approximate)(layer(x))
        assert (y.name == "bias_gelu") == fused
        y.backward(dy)
        results.append([y.array, x.grad.array, layer.weights.grad.array, layer.bias.grad.array])
        layer.zero_grad()
    for name, got, want in zip(("y", "dx", "dW", "db"), *results):
        check(cp, got, to_host(cp, want), "float32", f"dense_gelu {name}")


# ====================================================================== cross-entropy
CE_SHAPES = [(1, 2), (7, 5), (33, 65), (100, 1024), (16, 5000), (3, 50257), (2, 50304), (4, 6, 11)]


@gpu
@pytest.mark.parametrize("ignore_index", [None, -100])
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", CE_SHAPES)
def test_cross_entropy(cp, poisoned, rng, shape, dtype, label_dtype, ignore_index):
    logits, logits_ref = on_device(cp, rng.normal(scale=2.0, size=shape), dtype)
    labels_host = rng.integers(0, shape[-1], size=shape[:-1]).astype(label_dtype)
    if ignore_index is not None:
        labels_host[rng.random(shape[:-1]) < 0.3] = ignore_index
    labels = cp.asarray(labels_host)

    loss, saved = kernels.cross_entropy_forward(cp, logits, labels, ignore_index)
    loss_ref, saved_ref = cross_entropy_forward(np, logits_ref, labels_host, ignore_index)
    assert kernels.owns(saved)
    (peak, log_sum, count), (peak_ref, log_sum_ref, count_ref) = saved, saved_ref
    assert loss.dtype == np.float32
    # each row's loss is logsumexp - logit: float32 rounds it to about eps * |logsumexp|, a
    # large relative error of a loss near 0 (a row with one dominant logit); bound it so
    lse_scale = max(1.0, float(np.abs(peak_ref + log_sum_ref).max(initial=0.0)))
    loss_error = abs(float(loss) - float(loss_ref))
    assert loss_error <= TOLERANCE[dtype] * max(abs(float(loss_ref)), lse_scale), (
        f"cross_entropy loss [{dtype}]: {float(loss)} against {float(loss_ref)}"
    )
    check(cp, peak, peak_ref, dtype, "cross_entropy peak", dtype_out="float32")
    # log_sum alone can be ~1e-5 (one dominant logit), where float32's absolute rounding is a
    # large relative error: the quantity that matters is the log-sum-exp, peak + log_sum
    check(cp, peak + log_sum, peak_ref + log_sum_ref, dtype, "cross_entropy logsumexp",
          dtype_out="float32")  # fmt: skip
    assert float(count) == float(count_ref)

    dloss = cp.asarray(0.75, dtype=np.float32)
    dlogits = kernels.cross_entropy_backward(cp, dloss, logits, labels, saved, ignore_index)
    dlogits_ref = cross_entropy_backward(np, 0.75, logits_ref, labels_host, saved_ref, ignore_index)
    # softmax - onehot cancels where one logit dominates (1 - p is tiny): float32 rounds each
    # counted row at the scale of its probabilities, 0.75 / count, so that is the floor
    rows = max(float(count_ref), 1.0)
    check(cp, dlogits, dlogits_ref, dtype, "cross_entropy dlogits", floor=0.75 * rows**0.5 / rows)


@gpu
def test_cross_entropy_all_ignored_and_bad_labels(cp):
    logits = cp.asarray(np.random.default_rng(0).normal(size=(4, 9)), dtype=np.float32)
    labels = cp.full(4, -1, dtype=np.int64)
    loss, saved = kernels.cross_entropy_forward(cp, logits, labels, -1)
    assert float(loss) == 0.0 and float(saved[2]) == 0.0
    dlogits = kernels.cross_entropy_backward(cp, 1.0, logits, labels, saved, -1)
    assert float(cp.abs(dlogits).max()) == 0.0
    bad = cp.asarray([0, 1, 9, 2])  # 9 is out of range and not ignored: NaN, never garbage
    loss, _ = kernels.cross_entropy_forward(cp, logits, bad)
    assert np.isnan(float(loss))


@gpu
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "float32"])
def test_cast_output_leaves_16_bit_logits_to_the_cross_entropy_kernel(cp, rng, dtype):
    """Mixed precision hands 16-bit logits to the loss on a GPU (no float32 copy): the loss and
    the logits' gradient are those of the float32 copy the CPU path makes."""
    from tricycle.loss import CrossEntropy
    from tricycle.precision import cast
    from tricycle.tensor import Tensor

    policy = Precision("fp16" if dtype == "float16" else "bf16")
    logits = cp.asarray(rng.normal(scale=3.0, size=(4, 7, 301)).astype(np_dtype(dtype)))
    labels = cp.asarray(rng.integers(0, 301, size=(4, 7)))
    results = []
    for direct in (True, False):
        x = Tensor(logits, requires_grad=True)
        y = policy.cast_output(x) if direct else cast(x, np.float32)
        assert (y is x) == direct
        loss = CrossEntropy()(labels, y)
        loss.backward()
        results.append((float(loss.array), x.grad.array))
    (loss_direct, grad_direct), (loss_copy, grad_copy) = results
    assert loss_direct == pytest.approx(loss_copy, rel=1e-6)
    assert grad_direct.dtype == grad_copy.dtype == np_dtype(dtype)
    check(cp, grad_direct, to_host(cp, grad_copy), dtype, "cross-entropy gradient, 16-bit logits")


# ====================================================================== embedding backward
@gpu
@pytest.mark.parametrize("id_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab,dim,n", [(10, 4, 1), (65, 384, 16384), (1000, 33, 777)])
def test_embedding_backward(cp, rng, vocab, dim, n, dtype, id_dtype):
    ids_host = rng.integers(0, vocab, size=n).astype(id_dtype)
    dout, dout_ref = on_device(cp, rng.normal(size=(n, dim)), dtype)
    dweights = kernels.embedding_backward(cp, dout, cp.asarray(ids_host), vocab)
    ref = np.zeros((vocab, dim))
    np.add.at(ref, ids_host, dout_ref)
    # float32 accumulation of rounded inputs: float32 bounds whatever the input dtype
    check(cp, dweights, ref, "float32", "embedding_backward", dtype_out="float32")


@gpu
def test_embedding_backward_gives_the_same_bits_every_run(cp, rng):
    """Many tokens share each row (a character vocabulary): the rows are summed in token
    order, so a seeded run repeats exactly. Ids out of range add nothing."""
    ids = cp.asarray(rng.integers(-2, 67, size=8192))
    dout = cp.asarray(rng.normal(size=(8192, 96)).astype(np.float32))
    runs = [cp.asnumpy(kernels.embedding_backward(cp, dout, ids, 65)) for _ in range(3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])
    ids_host, ref = cp.asnumpy(ids), np.zeros((65, 96))
    kept = (ids_host >= 0) & (ids_host < 65)
    np.add.at(ref, ids_host[kept], cp.asnumpy(dout)[kept])
    np.testing.assert_allclose(runs[0], ref, rtol=1e-4, atol=1e-4)


# ====================================================================== AdamW
def _adamw_reference(w, g, m, v, lr, b1, b2, eps, step, wd, mult=1.0):
    """torch.optim.AdamW's math in float64 (what tricycle.optimisers implements)."""
    g = g * mult
    w = w * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    w = w - lr / (1 - b1**step) * m / (np.sqrt(v) / np.sqrt(1 - b2**step) + eps)
    return w, m, v


@gpu
def test_adam_update_matches_the_optimiser(cp, rng):
    w_host = rng.normal(size=(129, 77)).astype(np.float32)
    w = cp.asarray(w_host)
    w_ref = cp.asarray(w_host)
    state, state_ref = {}, {}
    for _ in range(4):
        g = cp.asarray(rng.normal(size=w_host.shape).astype(np.float32))
        kernels.adam_update(cp, w, g, state, 3e-3, 0.9, 0.95, 1e-8)
        _adam_update(cp, w_ref, g, state_ref, 3e-3, 0.9, 0.95, 1e-8)
    assert state["step"] == state_ref["step"] == 4
    check(cp, w, to_host(cp, w_ref), "float32", "adam_update w")
    check(cp, state["exp_avg_sq"], to_host(cp, state_ref["exp_avg_sq"]), "float32", "adam v")


@gpu
@pytest.mark.parametrize("mult", [None, 0.25, float("nan")])
def test_adamw_multi_step(cp, rng, mult):
    sizes = [(1,), (1000,), (65536 + 7,), (300, 700), (3,)]
    decays = [0.0, 0.1, 0.0, 0.1, 0.05]
    host = [[rng.normal(size=s) for s in sizes] for _ in range(4)]
    host[3] = [np.abs(a) for a in host[3]]  # exp_avg_sq >= 0
    w, g, m, v = ([cp.asarray(a.astype(np.float32)) for a in arrays] for arrays in host)
    multiplier = None if mult is None else cp.asarray(mult, dtype=np.float32)
    hyper = cp.asarray(kernels.adam_hyper(1e-2, 0.9, 0.99, 1e-8, 7), dtype=np.float32)
    kernels.adamw_multi_step(w, g, m, v, hyper, decays, multiplier)
    for i in range(len(sizes)):
        hw, hg, hm, hv = (h[i].astype(np.float32).astype(np.float64) for h in host)
        if mult is not None and np.isnan(mult):  # skipped step: untouched
            np.testing.assert_array_equal(to_host(cp, w[i]), hw)
            continue
        rw, rm, rv = _adamw_reference(
            hw, hg, hm, hv, 1e-2, 0.9, 0.99, 1e-8, 7, decays[i], 1.0 if mult is None else mult
        )
        check(cp, w[i], rw, "float32", f"adamw_multi w {sizes[i]}")
        check(cp, m[i], rm, "float32", f"adamw_multi m {sizes[i]}")
        check(cp, v[i], rv, "float32", f"adamw_multi v {sizes[i]}")


@gpu
def test_adamw_kernels_take_one_minus_beta_in_float64(cp, rng):
    """1 - b1 and 1 - b2 are the float64 ones, as torch's (float32's 1 - 0.999f is 0.00099998713,
    not 0.001f): a first step's moments are exactly (1 - b1) g and (1 - b2) g^2 in float32,
    for the one-tensor kernel and the multi-tensor one (whose numbers ``adam_hyper`` gives)."""
    g = rng.normal(size=1000).astype(np.float32)
    want_m, want_v = np.float32(1 - 0.9) * g, np.float32(1 - 0.999) * g * g
    state = {}
    kernels.adam_update(cp, cp.zeros(1000, np.float32), cp.asarray(g), state, 1e-3, 0.9, 0.999,
                        1e-8)  # fmt: skip
    m, v = [cp.zeros(1000, np.float32)], [cp.zeros(1000, np.float32)]
    hyper = cp.asarray(kernels.adam_hyper(1e-3, 0.9, 0.999, 1e-8, 1), dtype=np.float32)
    kernels.adamw_multi_step([cp.zeros(1000, np.float32)], [cp.asarray(g)], m, v, hyper)
    for got_m, got_v in ((state["exp_avg"], state["exp_avg_sq"]), (m[0], v[0])):
        np.testing.assert_array_equal(cp.asnumpy(got_m), want_m)
        np.testing.assert_array_equal(cp.asnumpy(got_v), want_v)


@gpu
def test_clip_multiplier(cp, rng):
    grads_host = [rng.normal(size=s) * 100 for s in [(5,), (70000,), (33, 3)]]
    grads = [cp.asarray(g.astype(np.float32)) for g in grads_host]
    scale = cp.asarray(64.0, dtype=np.float32)
    norm, mult = kernels.clip_multiplier(cp, grads, 1.0, scale)
    true_norm = np.sqrt(
        sum((g.astype(np.float32).astype(np.float64) ** 2).sum() for g in grads_host)
    )
    true_norm /= 64.0
    assert float(norm) == pytest.approx(true_norm, rel=1e-5)
    assert float(mult) == pytest.approx(min(1.0, 1.0 / (true_norm + 1e-6)) / 64.0, rel=1e-5)
    grads[1][123] = cp.inf
    _, mult = kernels.clip_multiplier(cp, grads, 1.0, scale)
    assert np.isnan(float(mult))


@gpu
def test_optimiser_update_matches_adamw(cp, rng, monkeypatch):
    from tricycle.optimisers import AdamW
    from tricycle.tensor import Tensor

    shapes = {"embedding.weights": (50, 16), "dense.weights": (16, 8), "dense.bias": (8,)}
    params = {
        n: Tensor(cp.asarray(rng.normal(size=s).astype(np.float32))) for n, s in shapes.items()
    }
    ref = {n: Tensor(p.array.copy()) for n, p in params.items()}
    fused, plain = AdamW(1e-2, weight_decay=0.1), AdamW(1e-2, weight_decay=0.1)
    for _ in range(3):
        grads = {n: cp.asarray(rng.normal(size=s).astype(np.float32)) for n, s in shapes.items()}
        for n in shapes:
            params[n].grad = Tensor(grads[n], requires_grad=False)
            ref[n].grad = Tensor(grads[n].copy(), requires_grad=False)
        assert fused.fused_update(list(params.items()))
        with monkeypatch.context() as m:
            m.setenv("TRICYCLE_DISABLE_KERNELS", "1")
            plain.update(list(ref.items()))
    for n in shapes:
        check(cp, params[n].array, to_host(cp, ref[n].array), "float32", f"optimiser_update {n}")


# ====================================================================== attention
ATTENTION_SHAPES = [  # (B, T, H, D): T deliberately off the 32/64/128-row tiles
    (1, 1, 1, 32),
    (2, 17, 3, 32),
    (1, 1, 2, 64),
    (2, 64, 2, 64),
    (3, 100, 6, 64),
    (1, 130, 2, 128),
    (2, 256, 6, 64),
    (1, 300, 1, 128),
    (1, 1000, 2, 64),
    (1, 1024, 2, 128),
]
# "auto": tensor cores where they apply (16-bit, D 64/128); "cuda_cores": forced off
ATTENTION_PATHS = ["auto", "cuda_cores"]


def _attention_path(dtype, D, path):
    """The forward's ``tensor_cores`` argument; skips combinations that repeat another."""
    tensor_cores = uses_tensor_cores(np_dtype(dtype), D)
    if path == "cuda_cores" and not tensor_cores:
        pytest.skip("the automatic choice is the CUDA-core path already")
    return None if path == "auto" else False


@gpu
@pytest.mark.parametrize("path", ATTENTION_PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ATTENTION_SHAPES)
def test_attention(cp, poisoned, rng, shape, dtype, path):
    B, T, H, D = shape
    E = H * D
    tensor_cores = _attention_path(dtype, D, path)
    qkv, qkv_ref = on_device(cp, rng.normal(size=(B, T, 3 * E)), dtype)
    assert kernels.attention_enabled(qkv, H)
    out, saved = kernels.attention_forward(cp, qkv, H, tensor_cores=tensor_cores)
    assert kernels.owns(saved)
    assert saved[-1] == (tensor_cores is None and uses_tensor_cores(qkv.dtype, D))
    out_ref, saved_ref = attention_forward(np, qkv_ref, H)
    check(cp, out, out_ref, dtype, f"attention out {shape} {path}")

    # the log-sum-exp (base 2) matches the reference probabilities' normaliser
    lse = to_host(cp, saved[2])
    q, k = (qkv_ref.reshape(B, T, 3, H, D)[:, :, i].transpose(0, 2, 1, 3) for i in (0, 1))
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(D) + np.triu(np.full((T, T), -np.inf), 1)
    lse_ref = np.log2(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1)) + scores.max(-1) * (
        1 / np.log(2)
    )
    # relative to the scale the scores are rounded at: a score q.k can cancel to near 0 (at
    # T = 1 the lse is the one score), while its products are rounded at |q|.|k|
    rounded_at = np.abs(q) @ np.abs(k).swapaxes(-1, -2) / np.sqrt(D) / np.log(2)
    check(cp, saved[2], lse_ref, "float32" if dtype == "float32" else dtype, "attention lse",
          dtype_out="float32", floor=np.linalg.norm(rounded_at.max(-1)))  # fmt: skip
    assert lse.shape == (B, H, T)

    dout, dout_ref = on_device(cp, rng.normal(size=(B, T, E)), dtype)
    dqkv = kernels.attention_backward(cp, dout, saved)
    dqkv_ref = attention_backward(np, dout_ref, saved_ref)
    for i, part in enumerate("qkv"):
        if T == 1 and part != "v":
            continue  # one key: the exact dq and dk are 0, the computed ones rounding noise
        got = dqkv.reshape(B, T, 3, E)[:, :, i]
        check(cp, cp.ascontiguousarray(got), dqkv_ref.reshape(B, T, 3, E)[:, :, i], dtype,
              f"attention d{part} {shape} {path}")  # fmt: skip
    assert cp.array_equal(dqkv, kernels.attention_backward(cp, dout, saved)), "not deterministic"


@gpu
@pytest.mark.parametrize("path", ATTENTION_PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape", [(2, 17, 3, 32), (3, 100, 6, 64), (1, 300, 1, 128), (2, 129, 2, 64)]
)
def test_attention_dropout(cp, poisoned, rng, shape, dtype, path):
    """The kernels draw numpy's mask (tricycle.dropout_mask) in forward and both backwards."""
    B, T, H, D = shape
    E = H * D
    tensor_cores = _attention_path(dtype, D, path)
    seed = int(rng.integers(2**32))
    qkv, qkv_ref = on_device(cp, rng.normal(size=(B, T, 3 * E)), dtype)
    out, saved = kernels.attention_forward(cp, qkv, H, 0.2, seed, tensor_cores=tensor_cores)
    out_ref, saved_ref = attention_forward(np, qkv_ref, H, 0.2, seed)
    check(cp, out, out_ref, dtype, f"dropout attention out {shape} {path}")
    dout, dout_ref = on_device(cp, rng.normal(size=(B, T, E)), dtype)
    dqkv = kernels.attention_backward(cp, dout, saved)
    dqkv_ref = attention_backward(np, dout_ref, saved_ref)
    for i, part in enumerate("qkv"):
        got = cp.ascontiguousarray(dqkv.reshape(B, T, 3, E)[:, :, i])
        check(cp, got, dqkv_ref.reshape(B, T, 3, E)[:, :, i], dtype,
              f"dropout attention d{part} {shape} {path}")  # fmt: skip


def chosen_attention_forward(xp, qkv, n_heads):
    """The forward that the op ``causal_attention`` runs for ``qkv`` (through the dispatch)."""
    from tricycle import attention, dispatch

    reference = (attention.attention_forward, attention.attention_backward)
    heads = attention.split_heads(qkv, n_heads)
    return dispatch.choose("attention", reference, *heads)[0](xp, qkv, n_heads)


# TF32 (float32 inputs, tensor cores) only under a TF32 policy; T off the 64-row tiles
TF32_SHAPES = [(1, 1, 1, 64), (2, 17, 3, 64), (2, 100, 2, 64), (1, 130, 2, 128), (1, 300, 1, 128)]


@gpu
@pytest.mark.parametrize("dropout", [0.0, 0.2])
@pytest.mark.parametrize("shape", TF32_SHAPES)
def test_attention_tf32(cp, poisoned, rng, shape, dropout):
    """Float32 attention runs on TF32 tensor cores inside ``Precision("tf32")`` (TF32-sized
    errors), and on CUDA cores outside it (float32-sized errors): never TF32 silently."""
    B, T, H, D = shape
    E = H * D
    seed = int(rng.integers(2**32))
    qkv, qkv_ref = on_device(cp, rng.normal(size=(B, T, 3 * E)), "float32")
    dout, dout_ref = on_device(cp, rng.normal(size=(B, T, E)), "float32")
    out_ref, saved_ref = attention_forward(np, qkv_ref, H, dropout, seed)
    dqkv_ref = attention_backward(np, dout_ref, saved_ref)
    assert not uses_tensor_cores(np.dtype(np.float32), D)
    for policy, label in ((Precision("tf32"), "tf32"), (Precision("fp32"), "float32")):
        with policy:
            assert uses_tensor_cores(np.dtype(np.float32), D) == (label == "tf32")
            out, saved = kernels.attention_forward(cp, qkv, H, dropout, seed)
        assert saved[-1] == (label == "tf32"), "TF32 exactly under the TF32 policy"
        what = f"attention {label} p={dropout} {shape}"
        check(cp, out, out_ref, label, f"{what} out", dtype_out="float32")
        dqkv = kernels.attention_backward(cp, dout, saved)  # follows the forward's choice
        for i, part in enumerate("qkv"):
            if T == 1 and part != "v":
                continue  # one key: the exact dq and dk are 0, the computed ones rounding noise
            got = cp.ascontiguousarray(dqkv.reshape(B, T, 3, E)[:, :, i])
            check(cp, got, dqkv_ref.reshape(B, T, 3, E)[:, :, i], label, f"{what} d{part}",
                  dtype_out="float32")  # fmt: skip


@gpu
def test_attention_tf32_is_used_by_the_tf32_policy_in_a_model(cp, rng):
    """The library's attention op picks the TF32 kernels inside the policy and not outside."""
    qkv = cp.asarray(rng.normal(size=(2, 70, 3 * 128)).astype(np.float32))
    with Precision("tf32"):
        _, saved_tf32 = chosen_attention_forward(cp, qkv, 2)
    _, saved_fp32 = chosen_attention_forward(cp, qkv, 2)
    assert kernels.owns(saved_tf32) and saved_tf32[-1]
    assert kernels.owns(saved_fp32) and not saved_fp32[-1]


# ====================================================================== multi-tensor cast
@gpu
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "float32"])
def test_multi_cast(cp, poisoned, rng, dtype):
    shapes = [(384, 1152), (1152,), (1,), (0,), (65, 384), (3, 5, 7), (50000,)]
    arrays = [cp.asarray(rng.normal(size=s).astype(np.float32)) for s in shapes]
    assert kernels.multi_cast_enabled(arrays, np_dtype(dtype))
    casts = kernels.multi_cast(arrays, np_dtype(dtype))
    for a, c in zip(arrays, casts):
        assert c.shape == a.shape and c.dtype == np_dtype(dtype)
        assert c.data.ptr % 128 == 0, "views start 128-byte aligned"
        assert cp.array_equal(c, a.astype(np_dtype(dtype))), f"multi_cast {a.shape}"
    assert not kernels.multi_cast_enabled(arrays, np.float32)  # only to 16 bits


@gpu
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "float32"])
def test_widen_is_astype_and_is_the_cast_gradient(cp, poisoned, rng, dtype):
    """The backward of mixed precision's casts: 16-bit gradients widened to float32 exactly."""
    from tricycle.precision import cast_all
    from tricycle.tensor import Tensor

    for shape in [(384, 1152), (1,), (0,), (3, 5, 7), (50001,)]:
        a = cp.asarray(rng.normal(size=shape).astype(np_dtype(dtype)))
        assert kernels.widen_enabled(a)
        wide = kernels.widen(a)
        assert wide.dtype == np.float32 and wide.shape == a.shape
        assert cp.array_equal(wide, a.astype(np.float32)), f"widen {shape}"
    assert not kernels.widen_enabled(a[::2])  # strided: astype takes it
    weights = [Tensor(cp.asarray(rng.normal(size=s).astype(np.float32))) for s in [(7, 3), (5,)]]
    for w, c in zip(weights, cast_all(weights, np_dtype(dtype))):
        seed = cp.asarray(rng.normal(size=w.shape).astype(np_dtype(dtype)))
        c.backward(seed)  # the cast node's back_fn: 16-bit gradient -> float32
        assert w.grad.dtype == np.float32
        assert cp.array_equal(w.grad.array, seed.astype(np.float32))


# ====================================================================== gemm
@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 5, 3), (1000, 384, 1152), (33, 1, 65)])
def test_gemm(cp, poisoned, rng, dtype, transpose_a, transpose_b, mkn):
    m, k, n = mkn
    a, a_ref = on_device(cp, rng.normal(size=(k, m) if transpose_a else (m, k)), dtype)
    b, b_ref = on_device(cp, rng.normal(size=(n, k) if transpose_b else (k, n)), dtype)
    assert kernels.gemm_enabled(a, b)
    out = kernels.gemm(a, b, transpose_a, transpose_b)
    ref = (a_ref.T if transpose_a else a_ref) @ (b_ref.T if transpose_b else b_ref)
    check(cp, out, ref, dtype, f"gemm {mkn} T{transpose_a:d}{transpose_b:d}")
    written = cp.full((m, n), np.nan, dtype=a.dtype)
    assert kernels.gemm(a, b, transpose_a, transpose_b, out=written) is written
    check(cp, written, ref, dtype, "gemm into out")


@gpu
def test_gemm_follows_the_tf32_policy_and_column_sums(cp, rng):
    a = cp.asarray(rng.normal(size=(512, 512)).astype(np.float32))
    ref = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(a).astype(np.float64)
    full = np.abs(cp.asnumpy(kernels.gemm(a, a)) - ref).max() / np.abs(ref).max()
    with Precision("tf32"):
        tf32 = np.abs(cp.asnumpy(kernels.gemm(a, a)) - ref).max() / np.abs(ref).max()
    assert full < 1e-6 < tf32 < 5e-3, (full, tf32)  # TF32 keeps 10 mantissa bits
    sums = kernels.column_sums(a)
    np.testing.assert_allclose(cp.asnumpy(sums), cp.asnumpy(a).sum(0), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="inner sizes differ"):
        kernels.gemm(a[:, :3].copy(), a)
    assert not kernels.gemm_enabled(a.astype(np.float64), a.astype(np.float64))
    # an F-contiguous operand is read as the transpose of a C-contiguous one; other strided
    # operands are copied
    b = cp.asarray(rng.normal(size=(512, 96)).astype(np.float32))
    for x, y in ((a.T, b), (b.T, a), (b.T, b), (a[:, ::2], a[::2]), (a[::2, ::3].T, b[::2])):
        assert kernels.gemm_enabled(x, y)
        np.testing.assert_allclose(
            cp.asnumpy(kernels.gemm(x, y)), cp.asnumpy(x) @ cp.asnumpy(y), rtol=1e-4, atol=1e-3
        )


@gpu
def test_attention_rejects_unsupported_head_dims(cp):
    qkv = cp.zeros((1, 4, 3 * 48), dtype=np.float32)
    assert not kernels.attention_enabled(qkv, 1)  # D = 48
    with pytest.raises(ValueError, match="head dim"):
        kernels.attention_forward(cp, qkv, 1)


# ====================================================================== compile everything
@gpu
def test_every_instantiation_compiles_with_nvrtc():
    assert kernels.compile_all() == len(kernels.instantiations())


# ====================================================================== wiring
@gpu
def test_wired_functions_dispatch_to_the_kernels(cp, rng, monkeypatch):
    """The library's ops get the CUDA kernels from the dispatch on cupy (same numbers as with
    them off, when the references run)."""
    from tricycle import activation, dispatch, functions, layers, loss
    from tricycle.tensor import Tensor

    x = cp.asarray(rng.normal(size=(6, 40, 3 * 128)).astype(np.float32))
    g = cp.asarray(rng.normal(size=3 * 128).astype(np.float32))
    labels = cp.asarray(rng.integers(0, 3 * 128, size=(6, 40)))
    registered = {
        "softmax": (kernels.softmax_forward, kernels.softmax_backward),
        "layer_norm": (kernels.layer_norm_forward, kernels.layer_norm_backward),
        "rms_norm": (kernels.rms_norm_forward, kernels.rms_norm_backward),
        "gelu": (kernels.gelu_forward, kernels.gelu_backward),
        "bias_gelu": (kernels.bias_gelu_forward, kernels.bias_gelu_backward),
        "cross_entropy": (kernels.cross_entropy_forward, kernels.cross_entropy_backward),
    }
    for name, pair in registered.items():
        assert dispatch.choose(name, None, x) == pair, name
    calls = {
        "softmax": lambda: functions.Softmax()(Tensor(x)).array,
        "layer_norm": lambda: layers.layer_norm(Tensor(x), Tensor(g), Tensor(g), 1e-5).array,
        "rms_norm": lambda: layers.rms_norm(Tensor(x), Tensor(g), 1e-6).array,
        "gelu": lambda: activation.GeLU("tanh")(Tensor(x)).array,
        "bias_gelu": lambda: activation.bias_gelu(Tensor(x), Tensor(g), True).array,
        "cross_entropy": lambda: loss.CrossEntropy()(labels, Tensor(x)).array,
        "attention": lambda: chosen_attention_forward(cp, x, 2)[0],
    }
    for name, call in calls.items():
        with_kernels = call()
        monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")
        without = call()
        monkeypatch.delenv("TRICYCLE_DISABLE_KERNELS")
        check(cp, with_kernels, to_host(cp, without), "float32", f"wired {name}")
    saved = chosen_attention_forward(cp, x, 2)[1]
    assert kernels.owns(saved)  # the op went through the kernel


@gpu
def test_gpt_training_step_matches_with_and_without_kernels(cp, monkeypatch):
    """A whole GPT forward + backward + AdamW step on the GPU, kernels on vs off."""
    from tricycle.configs import DebugConfig
    from tricycle.loss import CrossEntropy
    from tricycle.models import GPT
    from tricycle.optimisers import AdamW

    config = DebugConfig(
        embedding_dim=128, n_heads=2, n_layers=2, context_window=64, vocab_size=300, dropout=0.0
    )
    rng = np.random.default_rng(0)
    batch = rng.integers(0, 300, size=(4, 64))
    targets = cp.asarray(rng.integers(0, 300, size=(4, 64)))
    results = {}
    for mode in ("kernels", "xp"):
        if mode == "xp":
            monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")
        manual_seed(0)
        model = GPT(config).to_gpu()
        optimiser = AdamW(learning_rate=1e-3, weight_decay=0.1)
        losses = []
        for _ in range(3):
            optimiser.step()
            loss = CrossEntropy()(targets, model(cp.asarray(batch)))
            losses.append(float(loss.array))
            loss.backward()
            model.update(optimiser)
        results[mode] = (losses, [cp.asnumpy(p.array) for p in model.parameters()])
    monkeypatch.delenv("TRICYCLE_DISABLE_KERNELS")
    (loss_k, params_k), (loss_x, params_x) = results["kernels"], results["xp"]
    print("losses with kernels", loss_k, "without", loss_x)
    np.testing.assert_allclose(loss_k, loss_x, rtol=1e-4)
    for a, b in zip(params_k, params_x):
        # Adam's first steps are nearly sign(g) * lr: allow for gradients at rounding level
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
