"""The tensor-core attention kernels of tricycle/backends/cuda/attention_mma.cu, run on the CPU.

``tests/cuda_emulation.hpp`` emulates the CUDA they use on the host (a coroutine per CUDA
thread, warp collectives through barriers, the fragment layouts of mma.m16n8k8 on TF32 and of
mma.m16n8k16 and ldmatrix on 16-bit values from the PTX ISA, cp.async copies that land late or
early); g++ compiles the kernels' own source after it. The forward and both backward kernels
then run in both operand formats, TF32 (float32 storage) and bfloat16, on shapes off the
64-row tiles, with and without dropout, and must match the library's reference
(``tricycle.attention``, on the inputs as stored) within the format's error: the kernels'
index arithmetic, fragment layouts, masks and staging are checked without a GPU. What the
emulation cannot check (float16's conversions, timing, the real hardware's layouts, NVRTC) the
GPU tests in test_kernels.py do.
"""

import subprocess

import numpy as np
import pytest
from emulation import build

from tests.helpers import made_once
from tricycle.attention import attention_backward, attention_forward
from tricycle.backends.cuda import launch
from tricycle.backends.cuda.attention import TF32_TILES, TILES
from tricycle.dropout_mask import dropout_threshold

# the PTX wrappers that cuda_emulation.hpp defines for the host instead (each overload once)
EMULATED = (
    "unsigned int shared_address(",
    "void copy16_async(",
    "void copies_commit(",
    "void copies_wait_one(",
    "void ldmatrix_x4(",
    "void ldmatrix_x4_trans(",
    "unsigned int shared_load(",
    "void mma(",
    "void mma(",
    "void mma(",
    "unsigned int pack2(",
    "unsigned int pack2(",
    "unsigned int tf32(",
)
TOLERANCE = {"float": 5e-3, "bf16_t": 1e-2}  # relative, as test_kernels.py's tf32, bfloat16

MAIN = """
// float32 in and out; the kernels see the storage type S (bfloat16 rounds to nearest even)
template <typename S>
std::vector<S> stored(const std::vector<float>& x) {
    std::vector<S> s(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        if constexpr (std::is_same_v<S, float>) s[i] = x[i];
        else s[i].bits = (unsigned short)float_to_bits16<S>(x[i]);
    }
    return s;
}
template <typename S>
std::vector<float> floats(const std::vector<S>& s) {
    std::vector<float> x(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if constexpr (std::is_same_v<S, float>) x[i] = s[i];
        else x[i] = bits16_to_float<S>(s[i].bits);
    }
    return x;
}
template <typename S, int D, int FORWARD, int DQ, int DKV>
void run(int B, int T, int H, unsigned seed, unsigned threshold, float keep_scale,
         const std::vector<float>& qkv_in, const std::vector<float>& dout_in, FILE* f) {
    const int E = H * D;
    std::vector<S> qkv = stored<S>(qkv_in), dout = stored<S>(dout_in);
    std::vector<S> out = stored<S>(std::vector<float>(B * T * E, NAN));
    std::vector<S> dqkv = stored<S>(std::vector<float>(B * T * 3 * E, NAN));
    std::vector<float> lse(B * H * T, NAN), delta(B * H * T, NAN);
    const float scale = 1.f / sqrtf((float)D), scale_log2 = 1.4426950408889634f * scale;
    const dim3 grid{(unsigned)((T + 63) / 64), (unsigned)(B * H), 1};
    launch(grid, 128, [&] { attention_mma_forward_kernel<S, D, FORWARD>(
        qkv.data(), out.data(), lse.data(), T, H, scale_log2, &seed, threshold, keep_scale); });
    launch(grid, 128, [&] { attention_mma_backward_dq_kernel<S, D, DQ>(
        qkv.data(), out.data(), dout.data(), lse.data(), delta.data(), dqkv.data(), T, H,
        scale_log2, scale, &seed, threshold, keep_scale); });
    launch(grid, 128, [&] { attention_mma_backward_dkv_kernel<S, D, DKV>(
        qkv.data(), dout.data(), lse.data(), delta.data(), dqkv.data(), T, H, scale_log2,
        scale, &seed, threshold, keep_scale); });
    const std::vector<float> o = floats(out), d = floats(dqkv);
    fwrite(o.data(), 4, o.size(), f);
    fwrite(lse.data(), 4, lse.size(), f);
    fwrite(d.data(), 4, d.size(), f);
}

int main(int argc, char** argv) {
    const int B = atoi(argv[1]), T = atoi(argv[2]), H = atoi(argv[3]), D = atoi(argv[4]);
    const unsigned seed = strtoul(argv[5], 0, 10), threshold = strtoul(argv[6], 0, 10);
    const float keep_scale = atof(argv[7]);
    EAGER = atoi(argv[8]);
    const bool tf32 = atoi(argv[11]);
    const int E = H * D;
    std::vector<float> qkv(B * T * 3 * E), dout(B * T * E);
    FILE* f = fopen(argv[9], "rb");
    if (fread(qkv.data(), 4, qkv.size(), f) + fread(dout.data(), 4, dout.size(), f) !=
        qkv.size() + dout.size()) return 2;
    fclose(f);
    f = fopen(argv[10], "wb");
#define RUN(S, D, FORWARD, DQ, DKV) run<S, D, FORWARD, DQ, DKV>(B, T, H, seed, threshold, \\
                                                             keep_scale, qkv, dout, f)
    RUNS
    fclose(f);
    return emulation_errors ? 1 : 0;
}
"""


def without_function(text: str, head: str) -> str:
    """``text`` without the __device__ function whose signature contains ``head``."""
    start = text.rfind("__device__", 0, text.index(head))
    depth, quoted = 0, False
    for end in range(text.index("{", start), len(text)):
        char = text[end]
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "{}":
            depth += 1 if char == "{" else -1
            if depth == 0:
                return text[:start] + text[end + 1 :]
    raise ValueError(f"unbalanced braces after {head}")


def emulation_source() -> str:
    text = launch.source("attention_mma.cu").replace("asm volatile", "asm")  # common.cuh too
    for head in EMULATED:
        text = without_function(text, head)
    text = text.replace("extern __shared__ __align__(16) unsigned short mma_smem[];", "")
    text = text.replace("__align__(16)", "alignas(16)")
    runs = []
    for storage, tiles in (("float", TF32_TILES), ("bf16_t", TILES)):
        for d in (64, 128):
            kernels = ("forward", "backward_dq", "backward_dkv")
            streamed = ", ".join(str(tiles[(kernel, d)]) for kernel in kernels)
            tf32 = "" if storage == "float" else "!"
            runs.append(f"if ({tf32}tf32 && D == {d}) RUN({storage}, {d}, {streamed});")
    return f"{text}\n{MAIN.replace('RUNS', chr(10).join(runs))}"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """The compiled emulation of the three kernels in both formats (skips without a C++20 g++)."""
    source, name = emulation_source(), "attention_mma"
    built = made_once(tmp_path_factory, "emulation", lambda tmp: build(tmp, source, name))
    return built / name  # built once per session, whichever workers run these tests


def relative_error(got, ref) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 ``x`` rounded to bfloat16 (to nearest, ties even), as float32."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


@pytest.mark.slow
@pytest.mark.parametrize("storage", ["float", "bf16_t"], ids=["tf32", "bfloat16"])
@pytest.mark.parametrize(
    ("shape", "dropout", "eager"),
    [((2, 100, 2, 64), 0.0, False), ((1, 65, 1, 128), 0.0, True), ((1, 70, 2, 64), 0.2, False)],
    ids=["T100-D64", "T65-D128-copies-at-issue", "T70-D64-dropout"],
)
def test_attention_kernels_match_the_reference(emulator, tmp_path, shape, dropout, eager,
                                               storage):  # fmt: skip
    B, T, H, D = shape
    E = H * D
    seed = 1234
    rng = np.random.default_rng(T)
    qkv = rng.normal(size=(B, T, 3 * E)).astype(np.float32)
    dout = rng.normal(size=(B, T, E)).astype(np.float32)
    if storage == "bf16_t":  # the reference sees the inputs as the kernels do
        qkv, dout = bfloat16(qkv), bfloat16(dout)
    (tmp_path / "in.bin").write_bytes(qkv.tobytes() + dout.tobytes())
    threshold = dropout_threshold(dropout) if dropout else 0
    run = subprocess.run(
        [str(emulator), str(B), str(T), str(H), str(D), str(seed), str(threshold),
         repr(1 / (1 - dropout)), str(int(eager)), str(tmp_path / "in.bin"),
         str(tmp_path / "out.bin"), str(int(storage == "float"))],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, f"emulation reported errors:\n{run.stderr[-2000:]}"
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float32)
    assert got.size == B * T * E + B * H * T + B * T * 3 * E, "no kernels ran"
    out, lse, dqkv = np.split(got, [B * T * E, B * T * E + B * H * T])

    out_ref, saved = attention_forward(np, qkv.astype(np.float64), H, dropout, seed)
    dqkv_ref = attention_backward(np, dout.astype(np.float64), saved)
    q, k = (qkv.astype(np.float64).reshape(B, T, 3, H, D)[:, :, i].transpose(0, 2, 1, 3)
            for i in (0, 1))  # fmt: skip
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(D) + np.triu(np.full((T, T), -np.inf), 1)
    peak = scores.max(-1)
    lse_ref = (np.log(np.exp(scores - peak[..., None]).sum(-1)) + peak) / np.log(2)

    errors = {
        "out": relative_error(out.reshape(B, T, E), out_ref),
        "lse": relative_error(lse.reshape(B, H, T), lse_ref),
    }
    for i, part in enumerate("qkv"):
        errors[f"d{part}"] = relative_error(
            dqkv.reshape(B, T, 3, E)[:, :, i], dqkv_ref.reshape(B, T, 3, E)[:, :, i]
        )
    print(storage, shape, dropout, {name: f"{e:.1e}" for name, e in errors.items()})
    assert all(e < TOLERANCE[storage] for e in errors.values()), errors  # NaN fails too
