"""The TF32 attention kernels of tricycle/backends/cuda/attention_mma.cu, run on the CPU.

``tests/cuda_emulation.hpp`` emulates the CUDA they use on the host (a coroutine per CUDA
thread, warp collectives through barriers, the mma.m16n8k8 TF32 fragment layouts of the PTX
ISA, cp.async copies that land late or early); g++ compiles the kernels' own source after it.
The forward and both backward kernels then run on shapes off the 64-row tiles, with and
without dropout, and must match the library's reference (``tricycle.attention``) within
TF32's error: the kernels' index arithmetic, fragment layouts, masks and staging are checked
without a GPU. What the emulation cannot check (timing, the real hardware's layouts, NVRTC)
the GPU tests in test_kernels.py do.
"""

import subprocess

import numpy as np
import pytest
from emulation import build

from tests.helpers import made_once
from tricycle.attention import attention_backward, attention_forward
from tricycle.backends.cuda import launch
from tricycle.backends.cuda.attention import TF32_TILES
from tricycle.dropout_mask import dropout_threshold

# the PTX wrappers that cuda_emulation.hpp defines for the host instead
EMULATED = (
    "unsigned int shared_address(",
    "void copy16_async(",
    "void copies_commit(",
    "void copies_wait_one(",
    "unsigned int tf32(",
    "void mma_tf32(",
)
TOLERANCE = 5e-3  # relative, as test_kernels.py's "tf32"

MAIN = """
int main(int argc, char** argv) {
    const int B = atoi(argv[1]), T = atoi(argv[2]), H = atoi(argv[3]), D = atoi(argv[4]);
    const unsigned seed = strtoul(argv[5], 0, 10), threshold = strtoul(argv[6], 0, 10);
    const float keep_scale = atof(argv[7]);
    EAGER = atoi(argv[8]);
    const int E = H * D;
    std::vector<float> qkv(B * T * 3 * E), dout(B * T * E), out(B * T * E, NAN),
        lse(B * H * T, NAN), delta(B * H * T, NAN), dqkv(B * T * 3 * E, NAN);
    FILE* f = fopen(argv[9], "rb");
    if (fread(qkv.data(), 4, qkv.size(), f) + fread(dout.data(), 4, dout.size(), f) !=
        qkv.size() + dout.size()) return 2;
    fclose(f);
    const float scale = 1.f / sqrtf((float)D), scale_log2 = 1.4426950408889634f * scale;
    const dim3 grid{(unsigned)((T + 63) / 64), (unsigned)(B * H), 1};
    if (D == 64) {
        LAUNCHES(64)
    } else {
        LAUNCHES(128)
    }
    f = fopen(argv[10], "wb");
    fwrite(out.data(), 4, out.size(), f);
    fwrite(lse.data(), 4, lse.size(), f);
    fwrite(dqkv.data(), 4, dqkv.size(), f);
    fclose(f);
    return emulation_errors ? 1 : 0;
}
"""
LAUNCHES = """
        launch(grid, 128, [&] {{ attention_tf32_forward_kernel<{D}, {forward}>(
            qkv.data(), out.data(), lse.data(), T, H, scale_log2, &seed, threshold,
            keep_scale); }});
        launch(grid, 128, [&] {{ attention_tf32_backward_dq_kernel<{D}, {dq}>(
            qkv.data(), out.data(), dout.data(), lse.data(), delta.data(), dqkv.data(), T, H,
            scale_log2, scale, &seed, threshold, keep_scale); }});
        launch(grid, 128, [&] {{ attention_tf32_backward_dkv_kernel<{D}, {dkv}>(
            qkv.data(), dout.data(), lse.data(), delta.data(), dqkv.data(), T, H, scale_log2,
            scale, &seed, threshold, keep_scale); }});
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
    launches = {
        d: LAUNCHES.format(
            D=d,
            forward=TF32_TILES[("forward", d)],
            dq=TF32_TILES[("backward_dq", d)],
            dkv=TF32_TILES[("backward_dkv", d)],
        )
        for d in (64, 128)
    }
    main = MAIN.replace("LAUNCHES(64)", launches[64]).replace("LAUNCHES(128)", launches[128])
    return f"{text}\n{main}"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """The compiled emulation of the three TF32 kernels (skips without a C++20 g++)."""
    source, name = emulation_source(), "attention_tf32"
    built = made_once(tmp_path_factory, "emulation", lambda tmp: build(tmp, source, name))
    return built / name  # built once per session, whichever workers run these tests


def relative_error(got, ref) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shape", "dropout", "eager"),
    [((2, 100, 2, 64), 0.0, False), ((1, 65, 1, 128), 0.0, True), ((1, 70, 2, 64), 0.2, False)],
    ids=["T100-D64", "T65-D128-copies-at-issue", "T70-D64-dropout"],
)
def test_tf32_attention_kernels_match_the_reference(emulator, tmp_path, shape, dropout, eager):
    B, T, H, D = shape
    E = H * D
    seed = 1234
    rng = np.random.default_rng(T)
    qkv = rng.normal(size=(B, T, 3 * E)).astype(np.float32)
    dout = rng.normal(size=(B, T, E)).astype(np.float32)
    (tmp_path / "in.bin").write_bytes(qkv.tobytes() + dout.tobytes())
    threshold = dropout_threshold(dropout) if dropout else 0
    run = subprocess.run(
        [str(emulator), str(B), str(T), str(H), str(D), str(seed), str(threshold),
         repr(1 / (1 - dropout)), str(int(eager)), str(tmp_path / "in.bin"),
         str(tmp_path / "out.bin")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, f"emulation reported errors:\n{run.stderr[-2000:]}"
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float32)
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
    print(shape, dropout, {name: f"{e:.1e}" for name, e in errors.items()})
    assert all(e < TOLERANCE for e in errors.values()), errors  # NaN (unwritten) fails too
