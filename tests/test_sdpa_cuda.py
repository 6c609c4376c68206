"""The CUDA kernels of general attention (tricycle/backends/cuda/sdpa.py) against the reference.

The pair registered for "scaled_dot_product_attention" on "cuda" runs on cupy arrays of every
storage dtype; the reference (``tricycle.nn.sdpa``) runs in float64 with numpy on the very values
the kernels see (16-bit inputs and masks rounded first). Shapes are off every tile size and
cover what the reference covers: Tq != Tk, size-1 axes, grouped and shared key/value heads,
D != Dv, head dims that are padded, strided head views, key padding, boolean and additive
masks (with rows that see no key), causal, sliding windows, dropout. New device allocations
are poisoned with NaN bytes (tests/test_kernels.py's ``poisoned``), so an output element the
kernels forget to write fails. Every test skips without cupy and a CUDA device;
tests/test_sdpa_emulated.py runs the same kernels in float32 on the host.
"""

import numpy as np
import pytest

from tests.test_kernels import DTYPES, GPU, check, np_dtype, on_device, to_host
from tricycle import dispatch
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout
from tricycle.nn.sdpa import attention_bias, sdpa_backward, sdpa_forward

pytestmark = pytest.mark.skipif(not GPU, reason="no CUDA GPU")
OP = "scaled_dot_product_attention"
REFERENCE = (sdpa_forward, sdpa_backward)


# fmt: off
CASES = {  # (B, H, Hkv, Tq, Tk, D, Dv), causal, window, mask
    "one-token": ((1, 1, 1, 1, 1, 32, 32), False, None, "none"),
    "bert-padding": ((4, 4, 4, 47, 47, 32, 32), False, None, "padding"),
    "cross-bool-D7": ((2, 3, 3, 5, 70, 7, 7), False, None, "bool"),
    "causal-gqa": ((2, 8, 2, 130, 130, 64, 64), True, None, "none"),
    "causal-Tq>Tk-Dv20": ((1, 4, 2, 40, 9, 32, 20), True, None, "padding"),
    "decode-Tq1": ((3, 4, 1, 1, 300, 128, 128), True, None, "padding"),
    "window-additive-mqa": ((2, 4, 1, 100, 257, 48, 48), True, 17, "additive"),
    "window-both-ways-D96": ((1, 2, 2, 77, 77, 96, 96), False, 9, "none"),
    "D256-bool": ((1, 2, 1, 33, 50, 256, 200), False, None, "bool"),
    "long": ((1, 2, 2, 1000, 1000, 64, 64), True, None, "padding"),
}
# fmt: on


def make_mask(kind: str, rng, B, H, Tq, Tk):
    """None, or a mask of ``kind`` broadcastable to (B, H, Tq, Tk)."""
    if kind == "none":
        return None
    if kind == "padding":  # (B, 1, 1, Tk): key padding, key 0 always real
        padding = rng.random((B, Tk)) > 0.3
        padding[:, 0] = True
        return padding[:, None, None, :]
    if kind == "bool":  # (B, H, Tq, Tk), one query row that sees nothing
        mask = rng.random((B, H, Tq, Tk)) > 0.4
        mask[0, -1, Tq // 2] = False
        return mask
    bias = rng.normal(size=(H, Tq, Tk))  # additive (H, Tq, Tk), hidden keys, one empty row
    bias[rng.random(bias.shape) < 0.2] = -np.inf
    bias[0, 0] = -np.inf
    return bias


def case_arrays(cp, rng, case, dtype, transposed=True):
    """(device q, k, v, bias, dout) and their float64 references; q is a head view of a
    (B, Tq, H, D) array (as the encoder's) when ``transposed``."""
    (B, H, Hkv, Tq, Tk, D, Dv), _, _, kind = case
    if transposed:
        q, q_ref = on_device(cp, rng.normal(size=(B, Tq, H, D)), dtype)
        q, q_ref = q.transpose(0, 2, 1, 3), q_ref.transpose(0, 2, 1, 3)
    else:
        q, q_ref = on_device(cp, rng.normal(size=(B, H, Tq, D)), dtype)
    k, k_ref = on_device(cp, rng.normal(size=(B, Hkv, Tk, D)), dtype)
    v, v_ref = on_device(cp, rng.normal(size=(B, Hkv, Tk, Dv)), dtype)
    dout, dout_ref = on_device(cp, rng.normal(size=(B, H, Tq, Dv)), dtype)
    mask = make_mask(kind, rng, B, H, Tq, Tk)
    bias = bias_ref = None
    if mask is not None:
        rounded = attention_bias(np, mask, np.float64).astype(np_dtype(dtype))
        bias, bias_ref = cp.asarray(rounded), rounded.astype(np.float64)
    return (q, k, v, bias, dout), (q_ref, k_ref, v_ref, bias_ref, dout_ref)


def compare(cp, case, dtype, arrays, refs, dropout, label):
    (q, k, v, bias, dout), (q_ref, k_ref, v_ref, bias_ref, dout_ref) = arrays, refs
    (_, _, _, _, Tk, _, _), causal, window, _ = case
    forward, backward = dispatch.choose(OP, REFERENCE, q, k, v, bias)
    assert forward is not sdpa_forward, "the CUDA kernel is registered and chosen"
    scale = 0.8 / np.sqrt(q.shape[-1])
    out, saved = forward(cp, q, k, v, bias, causal, window, scale, dropout)
    out_ref, saved_ref = sdpa_forward(np, q_ref, k_ref, v_ref, bias_ref, causal, window, scale,
                                      dropout)  # fmt: skip
    check(cp, out, out_ref, dtype, f"sdpa out {label}")
    lse, lse_ref = saved[5], saved_ref[5]
    assert lse.dtype == np.float32 and lse.shape == lse_ref.shape
    assert (cp.asnumpy(cp.isposinf(lse)) == np.isinf(lse_ref)).all(), "empty rows: lse +inf"
    check(cp, lse, lse_ref, "float32", f"sdpa lse {label}", dtype_out="float32")

    grads = backward(cp, dout, saved)
    grads_ref = sdpa_backward(np, dout_ref, saved_ref)
    for name, got, ref in zip(("dq", "dk", "dv"), grads, grads_ref):
        if Tk == 1 and name != "dv":
            continue  # one key: the exact dq and dk are 0, the computed ones rounding noise
        check(cp, got, ref, dtype, f"sdpa {name} {label}")
    again = backward(cp, dout, saved)
    assert all(cp.array_equal(a, b) for a, b in zip(grads, again)), "not deterministic"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_sdpa_kernels_match_the_reference(cp, poisoned, rng, case, dtype):
    arrays, refs = case_arrays(cp, rng, case, dtype)
    compare(cp, case, dtype, arrays, refs, NO_DROPOUT, f"{case[0]} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["bert-padding", "window-additive-mqa", "causal-gqa"])
def test_sdpa_kernels_draw_the_reference_dropout_mask(cp, poisoned, rng, name, dtype):
    case = CASES[name]
    arrays, refs = case_arrays(cp, rng, case, dtype, transposed=False)
    dropout = AttentionDropout(0.2, int(rng.integers(2**32)))
    compare(cp, case, dtype, arrays, refs, dropout, f"{name} {dtype} dropout")


def test_a_seed_on_the_device_draws_the_same_mask(cp, rng):
    """``Dropout.step_seed`` gives a (1,) uint32 device array while a CUDA graph is captured."""
    case = CASES["bert-padding"]
    (q, k, v, bias, dout), _ = case_arrays(cp, rng, case, "float32")
    forward, _ = dispatch.choose(OP, REFERENCE, q, k, v, bias)
    seed = 12345
    on_host, _ = forward(cp, q, k, v, bias, False, None, None, AttentionDropout(0.3, seed))
    device_seed = cp.asarray(np.array([seed], dtype=np.uint32))
    from_device, _ = forward(cp, q, k, v, bias, False, None, None,
                            AttentionDropout(0.3, device_seed))  # fmt: skip
    assert cp.array_equal(on_host, from_device)


def test_the_reference_runs_where_the_kernels_do_not(cp):
    """float64, head dims past 256 and empty inputs stay with the reference."""
    x = cp.zeros((1, 2, 3, 32), dtype=np.float64)
    assert dispatch.choose(OP, REFERENCE, x, x, x) is REFERENCE
    wide = cp.zeros((1, 2, 3, 300), dtype=np.float32)
    assert dispatch.choose(OP, REFERENCE, wide, wide, wide) is REFERENCE
    empty = cp.zeros((1, 2, 0, 32), dtype=np.float32)
    assert dispatch.choose(OP, REFERENCE, empty, empty, empty) is REFERENCE


def test_either_half_takes_the_other_halfs_saved_state(cp, rng):
    """The kernels' forward feeds the reference's backward, and the reference's forward the
    kernels' backward (the saved tuples agree; the kernels keep lse in float32)."""
    case = CASES["window-additive-mqa"]
    (q, k, v, bias, dout), _ = case_arrays(cp, rng, case, "float32", transposed=False)
    forward, backward = dispatch.choose(OP, REFERENCE, q, k, v, bias)
    _, causal, window, _ = case
    _, saved = forward(cp, q, k, v, bias, causal, window, None, NO_DROPOUT)
    _, saved_ref = sdpa_forward(cp, q, k, v, bias, causal, window, None, NO_DROPOUT)
    expected = backward(cp, dout, saved)
    for got in (sdpa_backward(cp, dout, saved), backward(cp, dout, saved_ref)):
        for a, b, name in zip(got, expected, ("dq", "dk", "dv")):
            check(cp, a, to_host(cp, b), "float32", f"mixed halves {name}")


def test_the_encoder_attention_matches_the_cpu(cp):
    """A MultiHeadAttention layer with a key padding mask, forward and backward, on the GPU
    (the op dispatches to the kernels with strided head views) and on the CPU."""
    from tricycle import manual_seed
    from tricycle.nn.encoder import MultiHeadAttention
    from tricycle.tensor import Tensor

    generator = np.random.default_rng(0)
    x = generator.normal(size=(3, 21, 64)).astype(np.float32)
    padding = generator.random((3, 21)) > 0.3
    padding[:, 0] = True
    results = []
    for device in ("cpu", "gpu"):
        manual_seed(0)
        layer = MultiHeadAttention(64, 4, n_kv_heads=2)
        inputs = Tensor(x, requires_grad=True)
        if device == "gpu":
            layer.to_gpu()
            inputs = Tensor(cp.asarray(x), requires_grad=True)
        mask = padding if device == "cpu" else cp.asarray(padding)
        y = layer(inputs, padding=mask)
        (y * y).sum().backward()
        grads = [inputs.grad] + [p.grad for p in layer.parameters()]
        results.append([to_host(cp, t.array) if device == "gpu" else t.array for t in [y, *grads]])
    for cpu, gpu in zip(*results):  # float32 sums in other orders: scaled to each array
        np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-5 * float(np.abs(cpu).max()))
