"""Backends: faster kernels for the fused ops, registered in ``tricycle.dispatch``.

``cpu``: the fused ops as plain loops compiled by numba. ``cuda``: CUDA C kernels through
CuPy, cuBLAS, deferred range checks and capture hooks. A backend imports only the engine's
array helpers and the base, never the math or anything above it; the dispatch imports a
backend by name the first time an op asks for a kernel on its device. ``mps`` answers
torch.backends.mps's ``is_available()`` for a PyTorch script (no Metal backend: False), and
``cudnn`` holds torch.backends.cudnn's switches (``cudnn.benchmark = True``), which change
nothing: tricycle calls no cuDNN. ``tricycle.backends.cuda``, the CUDA kernels, is imported
the first time it is named (``tricycle.backends.cuda.matmul.allow_tf32 = True``, torch's
TF32 switch; ``tricycle.backends.cuda.enable_flash_sdp(False)`` and the other attention
switches of ``sdp``), never by ``import tricycle``; ``tricycle.backends.cpu`` likewise
(``get_cpu_capability()``). ``mkldnn`` and ``opt_einsum`` hold torch.backends.mkldnn's and
.opt_einsum's switches (``mkldnn.is_available()`` False; what ``opt_einsum``'s change: see it).
"""

import importlib

from tricycle.backends import cudnn, mkldnn, mps, opt_einsum  # noqa: F401 - torch.backends' names


def __getattr__(name: str):
    """``tricycle.backends.cuda`` and ``.cpu`` on first use, as torch.backends.cuda is reached
    from ``import torch`` alone."""
    if name in ("cuda", "cpu"):
        return importlib.import_module(f"tricycle.backends.{name}")
    raise AttributeError(f"module 'tricycle.backends' has no attribute {name!r}")
