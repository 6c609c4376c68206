"""torch.version's questions, answered for tricycle: ``tricycle.version.__version__`` and
``tricycle.version.cuda``, the CUDA runtime the GPU backend (cupy) runs on, as "12.4", or
None where there is none, as torch's CPU builds answer. Scripts print these in their
environment reports (``print(torch.version.cuda)``)."""

from tricycle import __version__, backend

hip = None  # no ROCm backend
debug = False
git_version = None  # an installed tricycle is not tied to a commit


def __getattr__(name: str):
    if name == "cuda":  # read when asked, not at import: it starts cupy
        return cuda_version()
    raise AttributeError(f"module 'tricycle.version' has no attribute {name!r}")


def cuda_version() -> str | None:
    """The CUDA runtime cupy uses, as "major.minor", or None without a usable GPU."""
    if not backend.cupy_available():
        return None
    number = backend.cupy().cuda.runtime.runtimeGetVersion()  # e.g. 12040
    return f"{number // 1000}.{number % 1000 // 10}"


__all__ = ["__version__", "cuda_version", "debug", "git_version", "hip"]
