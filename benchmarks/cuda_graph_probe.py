"""What CUDA graph capture can do for tricycle on CuPy, measured (issue 5's investigation).

    python benchmarks/cuda_graph_probe.py

1. ``cupy.matmul`` inside ``Stream.begin_capture()``: does CuPy allow it?
2. The same GEMM called on cuBLAS directly (``cupy_backends`` bindings, bypassing CuPy's
   capture check) plus one of our RawKernels (GeLU), captured and replayed: does replay give
   the eager result, and how long does it take against eager launches?
3. How much of a whole training step is host time: the time ``training_step`` takes to
   enqueue its work (the GPU idle at its start) against the GPU time of the step (CUDA
   events). A graph removes host time; it only pays where host time exceeds GPU time.
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


from gpt_train import gpu_setup  # noqa: E402

from train_smol_gpt import training_step  # noqa: E402
from tricycle import kernels  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402


def gemm(cp, a, b, c) -> None:
    """c = a @ b (float32, row-major) straight through cuBLAS: C^T = B^T A^T column-major."""
    from cupy_backends.cuda.libs import cublas  # noqa: PLC0415 - only on the GPU machine

    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    (m, k), n = a.shape, b.shape[1]
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    cublas.sgemm(handle, 0, 0, n, m, k, one.ctypes.data, b.data.ptr, n, a.data.ptr, k,
                 zero.ctypes.data, c.data.ptr, n)  # fmt: skip


def probe_capture(cp) -> None:
    rng = np.random.default_rng(0)
    a = cp.asarray(rng.normal(size=(16384, 384)), dtype=cp.float32)
    b = cp.asarray(rng.normal(size=(384, 1536)), dtype=cp.float32)
    c = cp.empty((16384, 1536), dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)

    with stream:  # 1. cupy.matmul under capture
        stream.begin_capture()
        try:
            cp.matmul(a, b, out=c)
            outcome = "allowed"
        except Exception as error:  # noqa: BLE001 - the message is the result
            outcome = f"{type(error).__name__}: {error}"
        finally:
            stream.end_capture()
    print(f"1. cupy.matmul during capture: {outcome}")

    gelu_out = cp.empty_like(c)
    expected = kernels.gelu_forward(cp, cp.matmul(a, b), True)

    def work():
        gemm(cp, a, b, c)
        gelu_out[...] = kernels.gelu_forward(cp, c, True)  # allocates: needs a capture-safe pool

    cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    with stream:
        work()  # warm up (compiles, allocates the cuBLAS workspace)
        stream.synchronize()
        try:
            stream.begin_capture()
            work()
            graph = stream.end_capture()
        except Exception as error:  # noqa: BLE001
            print(f"2. direct cuBLAS + RawKernel capture failed: {type(error).__name__}: {error}")
            return
        gelu_out.fill(0)
        graph.launch(stream)
        stream.synchronize()
        error = float(cp.abs(gelu_out - expected).max() / cp.abs(expected).max())
        timings = {}
        for name, fn in (("eager", work), ("graph replay", lambda: graph.launch(stream))):
            fn()
            stream.synchronize()
            start = time.perf_counter()
            for _ in range(50):
                fn()
            stream.synchronize()
            timings[name] = (time.perf_counter() - start) / 50 * 1e6
    print(f"2. direct cuBLAS GEMM + GeLU kernel captured: replay max rel. error {error:.1e}; "
          + ", ".join(f"{k} {v:.1f} us" for k, v in timings.items()))  # fmt: skip
    cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)


def probe_host_time(cp, precision: str = "tf32", steps: int = 10) -> None:
    config, model, optimiser, policy, inputs, targets = gpu_setup(precision, steps + 3)
    batches_on_gpu = iter(zip(inputs, targets))
    host, device = [], []
    with policy:
        for step in range(steps + 3):
            cp.cuda.Device().synchronize()
            begin, end = cp.cuda.Event(), cp.cuda.Event()
            begin.record()
            start = time.perf_counter()
            training_step(model, optimiser, CrossEntropy(), batches_on_gpu, config, step, policy,
                          False)  # fmt: skip
            enqueued = time.perf_counter() - start
            end.record()
            end.synchronize()
            if step >= 3:
                host.append(enqueued * 1e3)
                device.append(cp.cuda.get_elapsed_time(begin, end))
    print(f"3. {precision} training step: host enqueue {np.median(host):.2f} ms, "
          f"GPU time {np.median(device):.2f} ms (median of {steps})")  # fmt: skip


if __name__ == "__main__":
    cp = cupy()
    probe_capture(cp)
    for precision in ("tf32", "bf16"):
        probe_host_time(cp, precision)
