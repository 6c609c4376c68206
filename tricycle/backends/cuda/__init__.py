"""Fused CUDA kernels for cupy arrays, with the same signatures as the xp functions they replace.

Each fused op in tricycle is a pure array function written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``). On a GPU the same op may run as one CUDA kernel from here:
each module registers its kernels with ``tricycle.dispatch`` (``@dispatch.register(op,
"cuda", dtypes=..., applies=...)``), and the op's owner asks ``dispatch.choose(op,
reference, *arrays)`` for the kernel that fits its arrays. The xp version stays the
reference the kernel is tested against (tests/test_kernels.py).

One module per kernel family launches its own CUDA C file (``softmax.py`` -> ``softmax.cu``,
and so on; ``launch.py`` holds what they share: the dispatch test, compilation, launch
shapes). Sources are compiled by NVRTC through ``cupy.RawModule`` on first use, one template
instantiation at a time, and cached: in this process by (file, instantiation, device), and on
disk by CuPy's kernel cache. cupy comes only from ``tricycle.backend.cupy()``; importing this
package on a machine without CUDA imports nothing from cupy and prints nothing.

``enable_flash_sdp`` and the other switches of ``tricycle.backends.sdp`` are torch.backends.
cuda's attention flags, kept here by name (flags only: see that module).

Supported storage types: float32, float16 and bfloat16 (``ml_dtypes.bfloat16`` arrays); all
arithmetic is float32 (matrix products on tensor cores accumulate in float32). Set the
environment variable ``TRICYCLE_DISABLE_KERNELS`` (to anything non-empty) to force the xp
versions, e.g. to benchmark or debug them: ``dispatch.choose`` reads it, on every call.
"""

from tricycle.backends.cuda import deferred  # noqa: F401 - registers the "check_range" setting
from tricycle.backends.cuda.add import add as add_kernel
from tricycle.backends.cuda.add import add_arrays, add_enabled
from tricycle.backends.cuda.attention import (
    attention_backward,
    attention_enabled,
    attention_forward,
)
from tricycle.backends.cuda.cast import multi_cast, multi_cast_enabled, widen, widen_enabled
from tricycle.backends.cuda.catalogue import compile_all, instantiations
from tricycle.backends.cuda.cross_entropy import cross_entropy_backward, cross_entropy_forward
from tricycle.backends.cuda.dropout import dropout as dropout_kernel
from tricycle.backends.cuda.dropout import dropout_enabled, seed_array
from tricycle.backends.cuda.embedding import embedding_backward
from tricycle.backends.cuda.extremes import fold_extremes, fold_extremes_enabled
from tricycle.backends.cuda.gelu import (
    bias_gelu_backward,
    bias_gelu_forward,
    gelu_backward,
    gelu_forward,
    is_tanh_gelu,
)
from tricycle.backends.cuda.gemm import column_sums, gemm, gemm_enabled
from tricycle.backends.cuda.launch import adam_enabled, enabled, owns
from tricycle.backends.cuda.norm import (
    layer_norm_backward,
    layer_norm_forward,
    rms_norm_backward,
    rms_norm_forward,
)
from tricycle.backends.cuda.optimiser import (
    adam_hyper,
    adam_update,
    adamw_multi_step,
    adamw_step,
    clip_multiplier,
    optimiser_update,
)
from tricycle.backends.cuda.sdpa import sdpa_applies
from tricycle.backends.cuda.settings import device_scope, matmul, switch_tf32, tf32_state
from tricycle.backends.cuda.softmax import softmax_backward, softmax_forward
from tricycle.backends.sdp import (  # noqa: F401 - torch.backends.cuda's attention switches
    allow_fp16_bf16_reduction_math_sdp,
    can_use_cudnn_attention,
    can_use_efficient_attention,
    can_use_flash_attention,
    cudnn_sdp_enabled,
    enable_cudnn_sdp,
    enable_flash_sdp,
    enable_math_sdp,
    enable_mem_efficient_sdp,
    flash_sdp_enabled,
    fp16_bf16_reduction_math_sdp_allowed,
    is_flash_attention_available,
    math_sdp_enabled,
    mem_efficient_sdp_enabled,
    preferred_blas_library,
    preferred_linalg_library,
)

__all__ = [
    "add_arrays",
    "add_enabled",
    "add_kernel",
    "adam_enabled",
    "adam_hyper",
    "adam_update",
    "adamw_multi_step",
    "adamw_step",
    "attention_backward",
    "attention_enabled",
    "attention_forward",
    "bias_gelu_backward",
    "bias_gelu_forward",
    "clip_multiplier",
    "column_sums",
    "compile_all",
    "cross_entropy_backward",
    "cross_entropy_forward",
    "device_scope",
    "dropout_enabled",
    "dropout_kernel",
    "embedding_backward",
    "enabled",
    "fold_extremes",
    "fold_extremes_enabled",
    "gelu_backward",
    "gelu_forward",
    "gemm",
    "gemm_enabled",
    "instantiations",
    "is_tanh_gelu",
    "layer_norm_backward",
    "layer_norm_forward",
    "matmul",
    "multi_cast",
    "multi_cast_enabled",
    "optimiser_update",
    "owns",
    "rms_norm_backward",
    "rms_norm_forward",
    "sdpa_applies",
    "softmax_backward",
    "seed_array",
    "softmax_forward",
    "switch_tf32",
    "tf32_state",
    "widen",
    "widen_enabled",
]
