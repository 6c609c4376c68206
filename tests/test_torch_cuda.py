"""``tricycle.cuda`` (torch.cuda's questions about GPUs) and ``tricycle.utils.data``
(torch.utils.data's import path): without a GPU as torch answers without one; with one
through a stand-in for cupy, which shows what each function asks ``tricycle.backend``."""

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import tricycle as tc
import tricycle.data
from tricycle import backend

ROOT = Path(__file__).resolve().parents[1]


def run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_without_a_gpu_it_answers_as_torch_does(monkeypatch):
    monkeypatch.setattr(backend, "cupy_available", lambda: False)
    assert tc.cuda.is_available() is False and tc.cuda.device_count() == 0
    for call in (tc.cuda.current_device, tc.cuda.synchronize, tc.cuda.get_device_name,
                 tc.cuda.reset_peak_memory_stats):  # fmt: skip
        with pytest.raises(RuntimeError, match=rf"tricycle.cuda.{call.__name__}: no CUDA GPU"):
            call()
    # the memory in use: none, as torch's say (a script printing its peak runs on the CPU)
    assert tc.cuda.memory_allocated() == tc.cuda.max_memory_allocated() == 0
    assert tc.cuda.memory_reserved() == tc.cuda.max_memory_reserved() == 0
    assert tc.cuda.empty_cache() is None  # nothing cached: nothing to do, as torch's
    # torch.accelerator's questions, as pytorch/examples ask them: tricycle.cuda answers
    assert tc.accelerator is tc.cuda and tc.accelerator.is_available() is False
    assert tc.accelerator.current_accelerator() is None
    assert tc.accelerator.current_accelerator(check_available=True) is None


def test_it_agrees_with_torch_on_this_machine():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() != tc.cuda.is_available():
        pytest.skip("torch and cupy see different GPUs here")
    assert tc.cuda.device_count() == torch.cuda.device_count()


def test_manual_seed_seeds_the_one_generator():
    tc.cuda.manual_seed(3)
    first = tc.randn(4).numpy()
    tc.cuda.manual_seed_all(3)
    second = tc.randn(4).numpy()
    tc.manual_seed(3)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, tc.randn(4).numpy())


class FakeCupy:
    """What tricycle.cuda reads of cupy: two GPUs, a current one, memory pools."""

    def __init__(self):
        self.current, self.synchronized, self.freed = 0, [], []
        runtime = types.SimpleNamespace(
            getDeviceCount=lambda: 2,
            getDevice=lambda: self.current,
            getDeviceProperties=lambda i: {"name": f"Fake GPU {i}".encode()},
        )
        self.cuda = types.SimpleNamespace(runtime=runtime, Device=self.device)

    def device(self, index=None):
        """cupy.cuda.Device(index): a context that makes GPU ``index`` current; ``Device()``
        is the current one, to synchronize."""
        fake = self

        class Device:
            def synchronize(self):
                fake.synchronized.append(fake.current)

            def __enter__(self):
                self.previous, fake.current = fake.current, index

            def __exit__(self, *exc):
                fake.current = self.previous

            def use(self):
                fake.current = index

        return Device()

    def get_default_memory_pool(self):
        held = {0: 3 << 20, 1: 5 << 20}  # each GPU's: what arrays use, and 1 MiB cached
        return types.SimpleNamespace(
            free_all_blocks=lambda: self.freed.append(f"device {self.current}"),
            used_bytes=lambda: held[self.current] - (1 << 20),
            total_bytes=lambda: held[self.current],
        )

    def get_default_pinned_memory_pool(self):
        return types.SimpleNamespace(free_all_blocks=lambda: self.freed.append("pinned"))


def test_with_gpus_each_question_goes_through_the_backend(monkeypatch):
    fake = FakeCupy()
    monkeypatch.setattr(backend, "cupy_available", lambda: True)
    monkeypatch.setattr(backend, "cupy", lambda: fake)
    monkeypatch.setattr(backend, "_cupy", fake)  # backend.synchronize's
    assert tc.cuda.is_available() and tc.cuda.device_count() == 2
    assert tc.cuda.current_device() == 0
    device = tc.accelerator.current_accelerator()  # torch.accelerator's, as torch's with a GPU
    assert device == "cuda" and (device.type, device.index) == ("cuda", None)
    tc.accelerator.set_device_index(1)
    assert tc.accelerator.current_device_index() == tc.cuda.current_device() == 1
    tc.accelerator.set_device_index(0)
    assert tc.cuda.get_device_name() == "Fake GPU 0" and tc.cuda.get_device_name(1) == "Fake GPU 1"
    assert tc.cuda.get_device_name("cuda:1") == "Fake GPU 1"
    tc.cuda.synchronize()
    tc.cuda.synchronize("cuda:1")
    assert fake.synchronized == [0, 1] and fake.current == 0  # the current GPU is put back
    tc.cuda.empty_cache()
    assert fake.freed == ["device 0", "pinned"]
    # the memory questions ask cupy's pool on the GPU asked about, as torch.cuda's
    assert tc.cuda.memory_allocated() == 2 << 20 and tc.cuda.memory_allocated(1) == 4 << 20
    assert tc.cuda.max_memory_allocated("cuda:1") == tc.cuda.memory_reserved(1) == 5 << 20
    tc.cuda.reset_peak_memory_stats(1)
    assert fake.freed[-1] == "device 1" and fake.current == 0
    with pytest.raises(ValueError, match="tricycle.cuda.synchronize: expected a GPU"):
        tc.cuda.synchronize("cpu")
    with pytest.raises(ValueError, match=r"get_device_name: GPU 2 does not exist \(2 seen\)"):
        tc.cuda.get_device_name(2)
    with pytest.raises(ValueError, match="device must be 'cpu', 'gpu', 'cuda'"):
        tc.cuda.get_device_name("tpu")
    torch = pytest.importorskip("torch")
    assert tc.cuda.get_device_name(torch.device("cuda", 1)) == "Fake GPU 1"


def test_cuda_names_the_current_gpu_as_torchs_does(monkeypatch):
    """"cuda" (and ``.cuda()``) is the current GPU: 0, or the one a data-parallel rank made
    current (``distributed.init(gpu=True)``), not always GPU 0; "cuda:N" is GPU N."""
    fake = FakeCupy()
    monkeypatch.setattr(backend, "_cupy", None)  # cupy not in use: GPU 0
    assert backend.parse_device("cuda") == backend.parse_device("gpu") == 0
    monkeypatch.setattr(backend, "_cupy", fake)
    fake.current = 1  # rank 1 of a data-parallel run
    assert backend.parse_device("cuda") == backend.parse_device("gpu") == 1
    assert backend.parse_device("cuda:0") == 0 and backend.parse_device(0) == 0
    assert backend.parse_device("cpu") is None
    monkeypatch.setattr(backend, "cupy_available", lambda: True)
    monkeypatch.setattr(backend, "cupy", lambda: fake)
    tc.cuda.set_device(0)  # torch.cuda.set_device(local_rank)
    assert tc.cuda.current_device() == backend.parse_device("cuda") == 0
    with pytest.raises(ValueError, match="set_device: GPU 2 does not exist"):
        tc.cuda.set_device("cuda:2")


def test_importing_it_imports_no_cupy_and_the_package_reaches_it_as_an_attribute():
    result = run(
        "import sys, tricycle\n"
        "import tricycle.cuda\n"
        "assert 'cupy' not in sys.modules\n"
        "import tricycle.cuda_graph\n"
        "assert tricycle.cuda.__name__ == 'tricycle.cuda', tricycle.cuda\n"
        "assert tricycle.cuda_graph.__name__ == 'tricycle.cuda_graph'\n"
        "import tricycle.backends.cuda as kernels\n"
        "assert kernels.__name__ == 'tricycle.backends.cuda' and tricycle.cuda.is_available\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_torch_utils_data_names_are_tricycle_datas():
    from tricycle.utils.data import DataLoader, Dataset, TensorDataset, random_split

    assert DataLoader is tricycle.data.DataLoader and Dataset is tricycle.data.Dataset
    assert TensorDataset is tricycle.data.TensorDataset
    assert random_split is tricycle.data.random_split
    assert tc.utils.data.__all__ == tricycle.data.__all__ and "data" in dir(tc.utils)
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4))
    assert [len(inputs) for inputs, _ in batches] == [4, 2]
    np.testing.assert_array_equal(np.asarray(batches[1][1]), [4, 5])
    with pytest.raises(AttributeError, match="tricycle.utils' has no attribute 'cpp_extension'"):
        tc.utils.cpp_extension  # noqa: B018


def test_utils_data_loads_on_first_use():
    result = run(
        "import sys, tricycle, tricycle.utils\n"
        "assert 'tricycle.data' not in sys.modules\n"
        "loader = tricycle.utils.data.DataLoader\n"
        "assert loader is sys.modules['tricycle.data'].DataLoader\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


def test_backends_cuda_matmul_allow_tf32_as_torchs():
    """nanoGPT's ``torch.backends.cuda.matmul.allow_tf32 = True`` after ``import torch``
    alone: the kernels' package loads on first use (never at import), the flag reads back
    as torch's; on a GPU it is the TF32 switch of float32 products, and False restores it."""
    result = run(
        "import sys, tricycle\n"
        "assert 'tricycle.backends.cuda' not in sys.modules\n"
        "matmul = tricycle.backends.cuda.matmul\n"
        "print(matmul.allow_tf32, matmul.allow_bf16_reduced_precision_reduction)"
    )
    assert result.returncode == 0, result.stderr
    pytest.importorskip("torch")
    theirs = run(
        "import torch\n"
        "matmul = torch.backends.cuda.matmul\n"
        "print(matmul.allow_tf32, matmul.allow_bf16_reduced_precision_reduction)"
    )  # torch's defaults, in a process of its own as ours
    assert result.stdout == theirs.stdout == "False True\n"
    from tricycle.precision import (  # noqa: PLC0415
        get_float32_matmul_precision,
        set_float32_matmul_precision,
        tf32_enabled,
    )

    gpu = backend.cupy_available()
    matmul = tc.backends.cuda.matmul
    matmul.allow_tf32 = True
    assert matmul.allow_tf32 is True and tf32_enabled() == gpu
    assert get_float32_matmul_precision() == "high"  # torch's: one switch
    with pytest.raises(TypeError, match="allow_tf32: expected True or False, got 1"):
        matmul.allow_tf32 = 1
    set_float32_matmul_precision("highest")
    assert tf32_enabled() is False and matmul.allow_tf32 is False
    set_float32_matmul_precision("medium")
    assert matmul.allow_tf32 is True and tf32_enabled() == gpu
    matmul.allow_tf32 = False
    assert tf32_enabled() is False and get_float32_matmul_precision() == "highest"


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_memory_questions_follow_the_arrays_on_a_gpu():
    """Llama's notebook prints ``torch.cuda.max_memory_allocated()`` after generating."""
    tc.cuda.reset_peak_memory_stats()
    before = tc.cuda.memory_allocated()
    x = tc.zeros(16, 1 << 20, device="cuda")  # 64 MiB of float32
    assert tc.cuda.memory_allocated() - before >= 64 << 20
    assert tc.cuda.max_memory_allocated() >= tc.cuda.memory_allocated()
    del x
    assert tc.cuda.memory_allocated() - before < 64 << 20
    assert tc.cuda.max_memory_allocated() >= before + (64 << 20)  # the peak, held
    tc.cuda.reset_peak_memory_stats()
    assert tc.cuda.max_memory_allocated() < before + (64 << 20)
