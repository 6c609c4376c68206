"""torch.backends.cuda's switches for scaled dot-product attention and its preferred
libraries, for a PyTorch script that sets or asks them (``torch.backends.cuda.
enable_flash_sdp(False)``). They are torch's flags, kept: tricycle's
``F.scaled_dot_product_attention`` runs its own kernel (or the math on the host) whatever they
say, and tricycle has no FlashAttention, memory-efficient or cuDNN attention library, so the
``is_*_available``/``can_use_*`` questions answer False, as torch's do without CUDA.
Reached as ``tricycle.backends.cuda.<name>``."""

import enum
import warnings

_enabled = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
            "fp16_bf16_reduction_math": False}  # fmt: skip


def _set(kind: str, enabled) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enable_{kind}_sdp: expected True or False, got {enabled!r}")
    _enabled[kind] = enabled


def enable_flash_sdp(enabled: bool) -> None:
    """Allow (or not) the flash attention kernel: a flag only."""
    _set("flash", enabled)


def flash_sdp_enabled() -> bool:
    return _enabled["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allow (or not) the memory-efficient attention kernel: a flag only."""
    _set("mem_efficient", enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _enabled["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    """Allow (or not) the math attention: a flag only."""
    _set("math", enabled)


def math_sdp_enabled() -> bool:
    return _enabled["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow (or not) cuDNN's attention: a flag only."""
    _set("cudnn", enabled)


def cudnn_sdp_enabled() -> bool:
    return _enabled["cudnn"]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Allow (or not) 16-bit reductions in the math attention: a flag only."""
    _set("fp16_bf16_reduction_math", enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _enabled["fp16_bf16_reduction_math"]


def is_flash_attention_available() -> bool:
    """False: tricycle has no FlashAttention library (its attention kernel is its own)."""
    return False


def _cannot(name: str, debug: bool) -> bool:
    if debug:
        warnings.warn(f"{name}: tricycle has no such attention library", UserWarning, stacklevel=3)
    return False


def can_use_flash_attention(params=None, debug: bool = False) -> bool:
    """False (see ``is_flash_attention_available``); ``debug`` warns why."""
    return _cannot("can_use_flash_attention", debug)


def can_use_efficient_attention(params=None, debug: bool = False) -> bool:
    """False: no memory-efficient attention library; ``debug`` warns why."""
    return _cannot("can_use_efficient_attention", debug)


def can_use_cudnn_attention(params=None, debug: bool = False) -> bool:
    """False: tricycle calls no cuDNN; ``debug`` warns why."""
    return _cannot("can_use_cudnn_attention", debug)


class LinalgBackend(enum.Enum):
    """torch's ``_LinalgBackend``."""

    Default = 0
    Cusolver = 1
    Magma = 2


class BlasBackend(enum.Enum):
    """torch's ``_BlasBackend``."""

    Default = 0
    Cublas = 1
    Cublaslt = 2


def _prefer(kind, backend, default):
    """``backend`` as one of ``kind``: tricycle's linear algebra runs through cupy (cuSOLVER,
    cuBLAS) whatever is preferred, so only the default's name is taken."""
    if backend is None:
        return default
    name = backend.name if isinstance(backend, kind) else str(backend).lower()
    names = {member.name.lower(): member for member in kind}
    if name.lower() not in names:
        raise RuntimeError(f"Unknown input value. Choose from: {', '.join(names)}.")
    if names[name.lower()] is not default:
        raise RuntimeError(f"Cannot set preferred backend to {names[name.lower()].name}: "
                           "tricycle's linear algebra runs through cupy's own choice")  # fmt: skip
    return default


def preferred_linalg_library(backend=None) -> LinalgBackend:
    """torch's preferred linear-algebra library: ``Default`` (cupy chooses); another raises."""
    return _prefer(LinalgBackend, backend, LinalgBackend.Default)


def preferred_blas_library(backend=None) -> BlasBackend:
    """torch's preferred BLAS library: ``Cublas`` (what cupy calls); another raises."""
    return _prefer(BlasBackend, backend, BlasBackend.Cublas)
