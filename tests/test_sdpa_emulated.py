"""The general attention kernels of tricycle/backends/cuda/sdpa.cu, run on the CPU.

``tests/cuda_emulation.hpp`` emulates the CUDA the kernels use on the host (a coroutine per
CUDA thread, barriers, shuffles through per-warp slots); g++ compiles the kernels' own source
(after common.cuh, as NVRTC sees it) with a small driver that launches the forward and both
backward kernels in float32. Each case then compares the output, the log-sum-exp and the
three gradients with the library's reference (``tricycle.nn.sdpa``, float64) on odd shapes: Tq
!= Tk, size-1 axes, grouped key/value heads, D != Dv, strided q, key padding, boolean and
additive masks (rows that see no key included), causal, sliding windows, dropout. The four
padded head dims compiled here cover every thread layout of the kernels (a row per thread
with fewer than 32 values, with 32, and shared by 2 and 8 threads, with 16-row key tiles).
What the emulation cannot check (16-bit storage, timing, NVRTC) tests/test_sdpa_cuda.py does
on a GPU.
"""

import subprocess

import numpy as np
import pytest
from emulation import build

from tests.helpers import made_once
from tricycle.backends.cuda import launch
from tricycle.backends.cuda.sdpa import padded_head_dim, rows_per_block
from tricycle.dropout_mask import AttentionDropout, dropout_threshold
from tricycle.nn.sdpa import attention_bias, sdpa_backward, sdpa_forward

EMULATED_DIMS = (8, 32, 64, 256)  # padded head dims DP compiled for the emulation
TOLERANCE = 2e-5  # relative, float32 arithmetic

MAIN = r"""
int main(int argc, char** argv) {
    int a = 1;
    const int B = atoi(argv[a++]), H = atoi(argv[a++]), Hkv = atoi(argv[a++]);
    const int Tq = atoi(argv[a++]), Tk = atoi(argv[a++]), D = atoi(argv[a++]);
    const int Dv = atoi(argv[a++]), DP = atoi(argv[a++]), causal = atoi(argv[a++]);
    const int window = atoi(argv[a++]), has_bias = atoi(argv[a++]);
    const unsigned seed = strtoul(argv[a++], 0, 10), threshold = strtoul(argv[a++], 0, 10);
    const float scale = atof(argv[a++]), keep_scale = atof(argv[a++]);
    long long n[5], st[13];  // buffer sizes of q, k, v, bias, dout; strides
    for (int i = 0; i < 5; ++i) n[i] = atoll(argv[a++]);
    for (int i = 0; i < 13; ++i) st[i] = atoll(argv[a++]);
    const char* in_path = argv[a++];
    const char* out_path = argv[a++];

    std::vector<std::vector<float>> in(5);
    FILE* f = fopen(in_path, "rb");
    for (int i = 0; i < 5; ++i) {
        in[i].resize(n[i]);
        if (fread(in[i].data(), 4, n[i], f) != (size_t)n[i]) return 2;
    }
    fclose(f);
    const float *q = in[0].data(), *k = in[1].data(), *v = in[2].data(), *bias = in[3].data(),
                *dout = in[4].data();
    const long long rows = (long long)B * H * Tq, key_rows = (long long)B * Hkv * Tk;
    std::vector<float> out(rows * Dv, NAN), lse(rows, NAN), delta(rows, NAN), dq(rows * D, NAN),
        dk(key_rows * D, NAN), dv(key_rows * Dv, NAN);
    const float scale_log2 = 1.4426950408889634f * scale;
#define STRIDES st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8], st[9], st[10], \
    st[11], st[12], H, Hkv, Tq, Tk, D, Dv
#define RUN(DPV)                                                                              \
    if (DP == DPV) {                                                                          \
        const unsigned br = SdpaShape<DPV>::BR;                                               \
        const dim3 queries{(unsigned)(B * H), (Tq + br - 1) / br, 1};                         \
        const dim3 keys{(unsigned)(B * Hkv), (Tk + br - 1) / br, 1};                          \
        launch(queries, 128, [&] { sdpa_forward_kernel<float, DPV>(q, k, v, bias,             \
            out.data(), lse.data(), STRIDES, scale_log2, causal, window, has_bias, &seed,     \
            threshold, keep_scale); });                                                       \
        launch(queries, 128, [&] { sdpa_backward_dq_kernel<float, DPV>(q, k, v, bias,         \
            out.data(), dout, lse.data(), delta.data(), dq.data(), STRIDES, scale_log2, scale, \
            causal, window, has_bias, &seed, threshold, keep_scale); });                      \
        launch(keys, 128, [&] { sdpa_backward_dkv_kernel<float, DPV>(q, k, v, bias, dout,     \
            lse.data(), delta.data(), dk.data(), dv.data(), STRIDES, scale_log2, scale,       \
            causal, window, has_bias, &seed, threshold, keep_scale); });                      \
    }
    DIMS
    f = fopen(out_path, "wb");
    for (const auto* x : {&out, &lse, &dq, &dk, &dv}) fwrite(x->data(), 4, x->size(), f);
    fclose(f);
    return emulation_errors ? 1 : 0;
}
"""


def emulation_source() -> str:
    text = launch.source("sdpa.cu").replace("asm volatile", "asm")  # common.cuh too
    text = text.replace("__shared__ __align__(16)", "alignas(16) __shared__")
    main = MAIN.replace("DIMS", " ".join(f"RUN({dp})" for dp in EMULATED_DIMS))
    return f"{text}\n{main}"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """The compiled emulation of the three kernels (skips without a C++20 g++)."""
    source = emulation_source()
    built = made_once(tmp_path_factory, "sdpa_emulation", lambda tmp: build(tmp, source, "sdpa"))
    return built / "sdpa"  # built once per session, whichever workers run these tests


def make_mask(kind: str, rng, B, H, Tq, Tk):
    """None, or a mask of ``kind`` broadcastable to (B, H, Tq, Tk)."""
    if kind == "none":
        return None
    if kind == "padding":  # (B, 1, 1, Tk), every row keeps a key
        padding = rng.random((B, Tk)) > 0.3
        padding[:, 0] = True
        return padding[:, None, None, :]
    if kind == "boolean":  # (B, H, Tq, Tk), one query row sees nothing
        mask = rng.random((B, H, Tq, Tk)) > 0.4
        mask[0, -1, Tq // 2] = False
        return mask
    # additive (H, Tq, Tk) floats with hidden keys, and one row that sees nothing
    bias = rng.normal(size=(H, Tq, Tk))
    bias[rng.random(bias.shape) < 0.2] = -np.inf
    bias[0, 0] = -np.inf
    return bias


def strided(array: np.ndarray, transposed: bool):
    """(the flat buffer, the (B, H, T) strides in elements) of a (B, H, T, D) array, laid out
    as (B, T, H, D) (a head view of a projection, as the encoder's) when ``transposed``."""
    B, H, T, D = array.shape
    if not transposed:
        return array.ravel(), (H * T * D, T * D, D)
    return array.transpose(0, 2, 1, 3).ravel(), (T * H * D, D, H * D)


def relative_error(got, ref) -> float:
    scale = np.linalg.norm(ref)
    return float(np.linalg.norm(got - ref) / scale) if scale else float(np.abs(got).max())


# fmt: off
CASES = {  # (B, H, Hkv, Tq, Tk, D, Dv), causal, window, mask, dropout, q transposed
    "cross-padding-D7": ((2, 3, 3, 5, 7, 7, 7), False, None, "padding", 0.0, True),
    "causal-Tq>Tk-gqa-Dv20": ((1, 4, 2, 9, 4, 32, 20), True, None, "none", 0.0, False),
    "window-causal-mqa-additive-dropout": ((2, 2, 1, 37, 45, 40, 40), True, 6, "additive", 0.3,
                                           True),
    "window-boolean-D130": ((1, 2, 2, 20, 33, 130, 7), False, 5, "boolean", 0.0, False),
    "size-1-D5": ((1, 1, 1, 1, 1, 5, 5), False, None, "none", 0.0, False),
    "long-keys-dropout-gqa": ((1, 3, 1, 3, 70, 64, 64), False, None, "padding", 0.2, False),
}
# fmt: on


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_sdpa_kernels_match_the_reference(emulator, tmp_path, case):
    (B, H, Hkv, Tq, Tk, D, Dv), causal, window, kind, p, transposed = case
    dp = padded_head_dim(D, Dv)
    assert dp in EMULATED_DIMS and rows_per_block(dp) >= 16
    rng = np.random.default_rng(Tq * 100 + Tk)
    q = rng.normal(size=(B, H, Tq, D)).astype(np.float32)
    k = rng.normal(size=(B, Hkv, Tk, D)).astype(np.float32)
    v = rng.normal(size=(B, Hkv, Tk, Dv)).astype(np.float32)
    dout = rng.normal(size=(B, H, Tq, Dv)).astype(np.float32)
    mask = make_mask(kind, rng, B, H, Tq, Tk)
    bias = attention_bias(np, mask, np.float32)
    scale = 0.7 / np.sqrt(D)
    seed = int(rng.integers(2**32))
    dropout = AttentionDropout(p, seed)

    q_flat, q_strides = strided(q, transposed)
    buffers = [q_flat, k.ravel(), v.ravel()]
    strides = [*q_strides, Hkv * Tk * D, Tk * D, D, Hkv * Tk * Dv, Tk * Dv, Dv]
    if bias is None:
        buffers.append(np.zeros(1, np.float32))
        strides += [0, 0, 0, 0]
    else:
        full = np.broadcast_to(bias.reshape((1,) * (4 - bias.ndim) + bias.shape), (B, H, Tq, Tk))
        buffers.append(np.ascontiguousarray(bias).ravel())
        strides += [s // 4 for s in full.strides]  # 0 on the broadcast axes
    buffers.append(dout.ravel())
    (tmp_path / "in.bin").write_bytes(b"".join(b.astype(np.float32).tobytes() for b in buffers))
    threshold = dropout_threshold(p) if p else 0
    arguments = [B, H, Hkv, Tq, Tk, D, Dv, dp, int(causal), window or 0, int(bias is not None),
                 seed, threshold, repr(float(scale)), repr(1 / (1 - p)),
                 *(b.size for b in buffers), *strides, tmp_path / "in.bin",
                 tmp_path / "out.bin"]  # fmt: skip
    run = subprocess.run([str(emulator), *map(str, arguments)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, f"emulation failed ({run.returncode}):\n{run.stderr[-2000:]}"
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float32).astype(np.float64)
    sizes = [B * H * Tq * Dv, B * H * Tq, B * H * Tq * D, B * Hkv * Tk * D, B * Hkv * Tk * Dv]
    out, lse, dq, dk, dv = np.split(got, np.cumsum(sizes)[:-1])

    f64 = [x.astype(np.float64) for x in (q, k, v)]
    bias64 = None if mask is None else attention_bias(np, mask, np.float64)
    out_ref, saved = sdpa_forward(np, *f64, bias64, causal, window, scale, dropout)
    lse_ref = saved[5]
    dq_ref, dk_ref, dv_ref = sdpa_backward(np, dout.astype(np.float64), saved)

    hidden = np.isinf(lse_ref).ravel()
    assert (np.isposinf(lse) == hidden).all(), "the rows that see no key get lse +inf"
    if kind in ("boolean", "additive"):
        assert hidden.any(), "the case has a row that sees no key"
    errors = {
        "out": relative_error(out, out_ref.ravel()),
        "lse": relative_error(lse[~hidden], lse_ref.ravel()[~hidden]),
        "dq": relative_error(dq, dq_ref.ravel()),
        "dk": relative_error(dk, dk_ref.ravel()),
        "dv": relative_error(dv, dv_ref.ravel()),
    }
    print({name: f"{e:.1e}" for name, e in errors.items()})
    assert all(e < TOLERANCE for e in errors.values()), errors  # NaN (unwritten) fails too
