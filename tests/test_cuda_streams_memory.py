"""torch.cuda's streams, events, device properties, memory statistics, seeds and NVML
questions in ``tricycle.cuda``: on this machine (no GPU) each answers as torch's does without
CUDA; through a stand-in for cupy, each asks cupy what it should; on a GPU (skipped here, run
by the lead) streams, events, properties and the memory pool are checked on the device."""

import warnings

import numpy as np
import pytest

import tricycle as tc
from tricycle import backend
from tricycle.cuda import devices

needs_gpu = pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(backend, "cupy_available", lambda: False)


# ------------------------------------------------------------------ without a GPU
@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.current_stream(), lambda c: c.default_stream(),
        lambda c: c.get_device_properties(), lambda c: c.get_device_properties(0),
        lambda c: c.get_device_capability(), lambda c: c.mem_get_info(),
        lambda c: c.set_per_process_memory_fraction(0.5),
        lambda c: c.get_per_process_memory_fraction(), lambda c: c.init(),
        lambda c: c.ipc_collect(), lambda c: c.can_device_access_peer(0, 1),
        lambda c: c.get_sync_debug_mode(), lambda c: c.set_sync_debug_mode("warn"),
        lambda c: c.synchronize(),
    ],
)  # fmt: skip
def test_without_a_gpu_what_torch_asserts_raises_both_kinds(no_gpu, call):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU here")
    with pytest.raises(AssertionError):
        call(torch.cuda)
    with pytest.raises(AssertionError, match="no CUDA GPU is available"):
        call(tc.cuda)
    with pytest.raises(RuntimeError, match=r"tricycle\.cuda\.\w+: no CUDA GPU"):
        call(tc.cuda)


def test_without_a_gpu_the_other_answers_are_torchs(no_gpu):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU here")
    for name in ("get_arch_list", "is_initialized", "is_tf32_supported", "get_rng_state_all",
                 "memory_stats", "memory_allocated"):  # fmt: skip
        assert getattr(tc.cuda, name)() == getattr(torch.cuda, name)(), name
    assert tc.cuda.memory_stats() == {} and tc.cuda.get_arch_list() == []
    for module in (torch.cuda, tc.cuda):
        assert module.set_stream(None) is None and module.set_rng_state_all([]) is None
        with module.stream(None) as inside, module.StreamContext(None):
            assert inside is None
    for module, cpu_tensor in ((torch.cuda, torch.zeros(2)), (tc.cuda, tc.zeros(2))):
        with module.device(-1), module.device_of(cpu_tensor):
            pass  # a CPU tensor's "device": nothing changes
    with pytest.raises(RuntimeError, match="Stream: no CUDA GPU"):
        tc.cuda.Stream()
    with pytest.raises(RuntimeError, match="Event: no CUDA GPU"):
        tc.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="device: no CUDA GPU"):
        with tc.cuda.device(0):
            pass
    with pytest.raises(RuntimeError, match="reset_accumulated_memory_stats: no CUDA GPU"):
        tc.cuda.reset_accumulated_memory_stats()
    assert tc.cuda.OutOfMemoryError is tc.cuda.memory.HostOutOfMemoryError
    assert issubclass(tc.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    assert "Allocated memory" in tc.cuda.memory_summary()  # torch's raises a KeyError here
    assert "0 B" in tc.cuda.memory_summary(abbreviated=True)


def test_deprecated_names_warn_as_torchs(no_gpu):
    torch = pytest.importorskip("torch")
    for name in ("memory_cached", "max_memory_cached"):
        for module in (torch.cuda, tc.cuda):
            with pytest.warns(FutureWarning, match=f"{name}` has been renamed"):
                assert getattr(module, name)() == 0
    for name in ("reset_max_memory_allocated", "reset_max_memory_cached"):
        with pytest.warns(FutureWarning, match="now calls .*reset_peak_memory_stats"):
            with pytest.raises(RuntimeError, match="no CUDA GPU"):
                getattr(tc.cuda, name)()


def test_nvml_questions_without_pynvml_are_torchs(no_gpu, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(devices, "index", lambda op, device: 0)  # as if there were a GPU
    monkeypatch.setattr(tc.cuda.monitor, "index", lambda op, device: 0)
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # not importable
    for name in ("utilization", "temperature", "power_draw", "clock_rate", "memory_usage"):
        with pytest.raises(ModuleNotFoundError, match="nvidia-ml-py does not seem"):
            getattr(tc.cuda, name)()
    assert tc.cuda.list_gpu_processes() == "pynvml module not found, please install nvidia-ml-py"
    assert tc.cuda.list_gpu_processes() == torch.cuda.list_gpu_processes()


def test_the_generator_questions_are_the_one_generators():
    tc.cuda.manual_seed(5)
    assert tc.cuda.initial_seed() == tc.initial_seed() == 5
    state = tc.cuda.get_rng_state()
    np.testing.assert_array_equal(state.numpy(), tc.get_rng_state().numpy())
    first = tc.rand(3).numpy()
    tc.cuda.set_rng_state(state)
    np.testing.assert_array_equal(first, tc.rand(3).numpy())
    tc.cuda.seed_all()
    assert tc.cuda.initial_seed() != 5
    tc.cuda.set_rng_state_all([state])
    np.testing.assert_array_equal(first, tc.rand(3).numpy())
    with pytest.raises(TypeError, match="must be a uint8 Tensor"):
        tc.cuda.set_rng_state(tc.zeros(3))


# ------------------------------------------------------------------ through a stand-in for cupy
class FakeStream:
    def __init__(self, ptr=0x10, priority=0):
        self.ptr, self.priority, self.waited, self.done = ptr, priority, [], True

    def use(self):
        FakeCupy.current_stream = self

    def wait_event(self, event):
        self.waited.append(event)

    def synchronize(self):
        self.synchronized = True


class FakeEvent:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.timing, self.ptr, self.done, self.on = not disable_timing, 0x99, True, None

    def record(self, stream):
        self.on = stream


class FakeCupy:
    """What tricycle.cuda's streams, properties and memory questions read of cupy."""

    current_stream = None

    def __init__(self):
        FakeCupy.current_stream = FakeStream(ptr=0)
        self.device_now, self.limit = 0, 0
        properties = {"name": b"Fake H200", "major": 9, "minor": 0, "totalGlobalMem": 8 << 30,
                      "multiProcessorCount": 132, "integrated": 0, "warpSize": 32,
                      "l2CacheSize": 50 << 20, "uuid": bytes(range(16))}  # fmt: skip
        runtime = types_namespace(
            getDeviceCount=lambda: 2, getDevice=lambda: self.device_now,
            setDevice=lambda i: setattr(self, "device_now", i),
            getDeviceProperties=lambda i: properties,
            deviceGetStreamPriorityRange=lambda: (0, -5),
            deviceCanAccessPeer=lambda a, b: int(a != b), memGetInfo=lambda: (6 << 30, 8 << 30),
        )  # fmt: skip
        stream_class = lambda non_blocking=False, priority=0: FakeStream(0x20, priority)  # noqa: E731
        stream_class.null = FakeStream(ptr=0)
        self.cuda = types_namespace(
            runtime=runtime, Device=lambda i=None: Context(), Stream=stream_class,
            Event=FakeEvent, get_current_stream=lambda i=-1: FakeCupy.current_stream,
            get_elapsed_time=lambda a, b: 1.5, memory=types_namespace(OutOfMemoryError=MemoryError),
        )  # fmt: skip
        pool = types_namespace(
            used_bytes=lambda: 3 << 20, total_bytes=lambda: 5 << 20, free_bytes=lambda: 2 << 20,
            n_free_blocks=lambda: 4, get_limit=lambda: self.limit,
            set_limit=lambda fraction: setattr(self, "limit", int(fraction * (8 << 30))),
        )  # fmt: skip
        self.get_default_memory_pool = lambda: pool


def types_namespace(**kwargs):
    import types  # noqa: PLC0415

    return types.SimpleNamespace(**kwargs)


class Context:
    compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def fake(monkeypatch):
    cupy = FakeCupy()
    monkeypatch.setattr(backend, "cupy_available", lambda: True)
    monkeypatch.setattr(backend, "cupy", lambda: cupy)
    return cupy


def test_streams_and_events_ask_cupys(fake):
    side = tc.cuda.Stream(priority=-9)  # clamped to the GPU's range, as torch's
    assert side.cupy.priority == -5 and side.priority == -5 and side.cuda_stream == 0x20
    main = tc.cuda.current_stream()
    assert main == tc.cuda.default_stream() and main.cuda_stream == 0 and main != side
    side.wait_stream(main)
    assert isinstance(side.cupy.waited[-1], FakeEvent) and side.cupy.waited[-1].on is main.cupy
    with tc.cuda.stream(side) as inside:
        assert inside is side and tc.cuda.current_stream() == side
    assert tc.cuda.current_stream() == main  # put back
    with side:
        assert tc.cuda.current_stream() == side
    tc.cuda.set_stream(side)
    assert tc.cuda.current_stream() == side
    tc.cuda.set_stream(main)
    start, end = tc.cuda.Event(enable_timing=True), tc.cuda.Event(enable_timing=True)
    assert start.query() and start.cuda_event == 0  # made at its first record, as torch's
    start.record()
    end.record(side)
    assert end.cupy.on is side.cupy and start.elapsed_time(end) == 1.5
    end.wait(main)
    assert main.cupy.waited[-1] is end.cupy
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        tc.cuda.Event().elapsed_time(end)
    with pytest.raises(TypeError, match="expected a Stream"):
        tc.cuda.set_stream("side")


def test_properties_and_memory_ask_cupys(fake):
    properties = tc.cuda.get_device_properties(0)
    assert (properties.name, properties.major, properties.minor) == ("Fake H200", 9, 0)
    assert properties.total_memory == 8 << 30 and properties.multi_processor_count == 132
    assert properties.is_integrated is False and properties.warp_size == 32
    assert properties.uuid == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert "name='Fake H200', major=9, minor=0, total_memory=8192MB" in repr(properties)
    assert tc.cuda.get_device_capability("cuda:1") == (9, 0)
    assert tc.cuda.can_device_access_peer(0, 1) and not tc.cuda.can_device_access_peer(1, 1)
    assert tc.cuda.mem_get_info() == (6 << 30, 8 << 30)
    stats = tc.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == tc.cuda.memory_allocated() == 3 << 20
    assert stats["reserved_bytes.all.peak"] == tc.cuda.max_memory_reserved() == 5 << 20
    assert stats["inactive_split_bytes.all.current"] == 2 << 20
    assert set(stats) == set(tc.cuda.memory.MEMORY_STAT_KEYS)
    assert "3.00 MiB" in tc.cuda.memory_summary() and "5.00 MiB" in tc.cuda.memory_summary()
    assert tc.cuda.get_per_process_memory_fraction() == 1.0
    tc.cuda.set_per_process_memory_fraction(0.25)
    assert tc.cuda.get_per_process_memory_fraction() == 0.25
    with pytest.raises(TypeError, match="must be `float`"):
        tc.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5"):
        tc.cuda.set_per_process_memory_fraction(1.5)
    assert tc.cuda.OutOfMemoryError is MemoryError  # cupy's class, what allocations raise
    with tc.cuda.device(1):
        assert tc.cuda.current_device() == 1
    assert tc.cuda.current_device() == 0
    assert tc.cuda.is_tf32_supported() is True  # compute capability 9.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tc.cuda.set_sync_debug_mode("warn")
    assert tc.cuda.get_sync_debug_mode() == 1 and "kept" in str(caught[0].message)
    tc.cuda.set_sync_debug_mode(0)
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        tc.cuda.set_sync_debug_mode("loud")


# ------------------------------------------------------------------ on a GPU (the lead's run)
@needs_gpu
def test_on_a_gpu_ops_run_on_the_stream_set_and_events_time_them():
    cp = backend.cupy()
    side = tc.cuda.Stream()
    x = tc.randn(256, 256).to("cuda")
    start, end = tc.cuda.Event(enable_timing=True), tc.cuda.Event(enable_timing=True)
    side.wait_stream(tc.cuda.current_stream())
    with tc.cuda.stream(side):
        assert cp.cuda.get_current_stream().ptr == side.cuda_stream
        start.record()
        y = (x @ x).relu().sum()
        end.record()
    assert cp.cuda.get_current_stream().ptr == tc.cuda.current_stream().cuda_stream
    tc.cuda.current_stream().wait_stream(side)
    end.synchronize()
    assert end.query() and side.query() and start.elapsed_time(end) >= 0.0
    host = np.maximum(x.numpy() @ x.numpy(), 0).sum()
    np.testing.assert_allclose(float(y.numpy()), host, rtol=1e-3)
    high = tc.cuda.Stream(priority=-1)
    least, greatest = tc.cuda.streams._priority_range(cp)
    assert high.priority == max(greatest, -1)
    external = tc.cuda.ExternalStream(side.cuda_stream)
    assert external == side
    tc.cuda.synchronize()


@needs_gpu
def test_on_a_gpu_properties_and_memory_are_the_devices():
    cp = backend.cupy()
    properties = tc.cuda.get_device_properties()
    assert properties.name == tc.cuda.get_device_name() and properties.total_memory > 0
    assert properties.multi_processor_count > 0 and properties.warp_size == 32
    major, minor = tc.cuda.get_device_capability()
    assert (major, minor) == (properties.major, properties.minor)
    assert f"sm_{major}{minor}" in tc.cuda.get_arch_list() or major * 10 + minor > 90
    assert tc.cuda.is_tf32_supported() == (major >= 8) and tc.cuda.is_initialized()
    free, total = tc.cuda.mem_get_info()
    assert 0 < free <= total == properties.total_memory
    before = tc.cuda.memory_allocated()
    x = tc.zeros(1 << 20).to("cuda")  # 4 MiB
    stats = tc.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] - before >= 4 << 20
    assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    assert "Allocated memory" in tc.cuda.memory_summary()
    tc.cuda.set_per_process_memory_fraction(0.5)
    try:
        assert tc.cuda.get_per_process_memory_fraction() == pytest.approx(0.5, rel=1e-6)
        with pytest.raises(tc.cuda.OutOfMemoryError):
            cp.empty(int(total * 0.6), dtype=np.uint8)
    finally:
        cp.get_default_memory_pool().set_limit(size=0)
    del x
    tc.cuda.init()
    tc.cuda.ipc_collect()
    with tc.cuda.device(0):
        assert tc.cuda.current_device() == 0
    if tc.cuda.device_count() > 1:
        assert isinstance(tc.cuda.can_device_access_peer(0, 1), bool)


# ------------------------------------------------------------------ torch.backends' questions
def test_attention_switches_and_libraries_are_torchs_flags():
    torch = pytest.importorskip("torch")
    ours, theirs = tc.backends.cuda, torch.backends.cuda
    for kind in ("flash", "mem_efficient", "math", "cudnn"):
        assert getattr(ours, f"{kind}_sdp_enabled")() == getattr(theirs, f"{kind}_sdp_enabled")()
        getattr(ours, f"enable_{kind}_sdp")(False)
        assert getattr(ours, f"{kind}_sdp_enabled")() is False
        getattr(ours, f"enable_{kind}_sdp")(True)
    assert (
        ours.fp16_bf16_reduction_math_sdp_allowed() == theirs.fp16_bf16_reduction_math_sdp_allowed()
    )
    ours.allow_fp16_bf16_reduction_math_sdp(True)
    assert ours.fp16_bf16_reduction_math_sdp_allowed() is True
    ours.allow_fp16_bf16_reduction_math_sdp(False)
    with pytest.raises(TypeError, match="enable_flash_sdp: expected True or False"):
        ours.enable_flash_sdp(1)
    assert ours.is_flash_attention_available() is False
    assert not ours.can_use_flash_attention(None) and not ours.can_use_efficient_attention(None)
    with pytest.warns(UserWarning, match="can_use_cudnn_attention"):
        assert ours.can_use_cudnn_attention(None, debug=True) is False
    assert ours.preferred_linalg_library().name == theirs.preferred_linalg_library().name
    assert ours.preferred_blas_library().name == theirs.preferred_blas_library().name
    assert ours.preferred_linalg_library("default").name == "Default"
    with pytest.raises(RuntimeError, match="Unknown input value. Choose from: default"):
        ours.preferred_linalg_library("x")
    with pytest.raises(RuntimeError, match="Cannot set preferred backend to Magma"):
        ours.preferred_linalg_library("magma")


def test_cpu_capability_is_torchs():
    torch = pytest.importorskip("torch")
    assert tc.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
