"""torch.cuda's questions to NVML (``utilization``, ``memory_usage``, ``temperature``,
``power_draw``, ``clock_rate``, ``list_gpu_processes``) and its synchronisation debug mode.

NVML comes from nvidia-ml-py (``pynvml``), loaded by name when asked, as torch loads it;
without it these raise torch's ModuleNotFoundError (``list_gpu_processes`` returns torch's
line instead). The sync debug mode is kept, but tricycle does not look at it: no op warns or
raises on a synchronising call (``set_sync_debug_mode`` says so once, with a UserWarning).
"""

import importlib
import warnings

from tricycle.cuda.devices import cupy, index

NO_PYNVML = "nvidia-ml-py does not seem to be installed or it can't be imported."
SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_sync_debug = {"mode": 0}


def _pynvml():
    try:
        return importlib.import_module("pynvml")  # loaded only when a question needs it
    except ImportError as error:
        raise ModuleNotFoundError(NO_PYNVML) from error


def _handle(op: str, device):
    """pynvml and the NVML handle of GPU ``device`` (the current one for None)."""
    number = index(op, device)
    nvml = _pynvml()
    nvml.nvmlInit()
    return nvml, nvml.nvmlDeviceGetHandleByIndex(number)


def utilization(device=None) -> int:
    """The percent of the last sample period in which a kernel ran on GPU ``device``."""
    nvml, handle = _handle("utilization", device)
    return int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)


def memory_usage(device=None) -> int:
    """The percent of the last sample period in which GPU ``device``'s memory was read or
    written."""
    nvml, handle = _handle("memory_usage", device)
    return int(nvml.nvmlDeviceGetUtilizationRates(handle).memory)


def temperature(device=None) -> int:
    """GPU ``device``'s temperature in degrees Celsius."""
    nvml, handle = _handle("temperature", device)
    return int(nvml.nvmlDeviceGetTemperature(handle, 0))  # NVML_TEMPERATURE_GPU


def power_draw(device=None) -> int:
    """GPU ``device``'s power draw in milliwatts."""
    nvml, handle = _handle("power_draw", device)
    return int(nvml.nvmlDeviceGetPowerUsage(handle))


def clock_rate(device=None) -> int:
    """GPU ``device``'s streaming-multiprocessor clock in MHz."""
    nvml, handle = _handle("clock_rate", device)
    return int(nvml.nvmlDeviceGetClockInfo(handle, 1))  # NVML_CLOCK_SM


def list_gpu_processes(device=None) -> str:
    """A line per process that uses GPU ``device``: its id and its memory in MB."""
    try:
        nvml, handle = _handle("list_gpu_processes", device)
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    lines = [f"GPU:{index('list_gpu_processes', device)}"]
    processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    for process in processes:
        lines.append(f"process {process.pid:>10d} uses {process.usedGpuMemory / 2**20:>12.3f} "
                     "MB GPU memory")  # fmt: skip
    if not processes:
        lines.append("no processes are running")
    return "\n".join(lines)


def set_sync_debug_mode(debug_mode) -> None:
    """Keep torch's sync debug mode ("default"/0, "warn"/1, "error"/2); tricycle does not
    act on it (a UserWarning says so when it is not "default"). No GPU raises, as torch's."""
    cupy("set_sync_debug_mode")
    if isinstance(debug_mode, str):
        if debug_mode not in SYNC_DEBUG_MODES:
            raise RuntimeError('invalid value of debug_mode, expected one of "default", '
                               f'"warn", "error", got {debug_mode!r}')  # fmt: skip
        debug_mode = SYNC_DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"set_sync_debug_mode: expected a str or an int, got {debug_mode!r}")
    if debug_mode != 0:
        message = "tricycle does not check its ops for synchronizing calls; the mode is kept"
        warnings.warn(f"tricycle.cuda.set_sync_debug_mode: {message}", UserWarning, stacklevel=2)
    _sync_debug["mode"] = min(max(debug_mode, 0), 2)


def get_sync_debug_mode() -> int:
    """The sync debug mode ``set_sync_debug_mode`` kept (0 at first)."""
    cupy("get_sync_debug_mode")
    return _sync_debug["mode"]
