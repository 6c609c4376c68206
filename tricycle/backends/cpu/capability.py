"""torch.backends.cpu.get_cpu_capability: the widest vector instructions this CPU has, in
torch's words ("AVX512", "AVX2", "DEFAULT"; on ARM "SVE256" when its vectors are that wide,
else "DEFAULT"). Read from /proc/cpuinfo's flags (Linux; "DEFAULT" where it cannot be read);
tricycle's numba kernels are compiled for this CPU whatever it says."""

import platform
from pathlib import Path

AVX512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq"}  # what ATen's AVX512 kernels need


def _flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def get_cpu_capability() -> str:
    """The widest vector instructions: "AVX512", "AVX2", "SVE256" or "DEFAULT"."""
    flags = _flags()
    if platform.machine().lower() in ("x86_64", "amd64"):
        if AVX512 <= flags:
            return "AVX512"
        if {"avx2", "fma"} <= flags:
            return "AVX2"
    elif "sve" in flags and "sve2" in flags:
        return "SVE256"
    return "DEFAULT"
