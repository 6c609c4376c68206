"""Backends: faster kernels for the fused ops, registered in ``tricycle.dispatch``.

``cpu``: the fused ops as plain loops compiled by numba. ``cuda``: CUDA C kernels through
CuPy, cuBLAS, deferred range checks and capture hooks. A backend imports only the engine's
array helpers and the base, never the math or anything above it; the dispatch imports a
backend by name the first time an op asks for a kernel on its device. ``mps`` answers
torch.backends.mps's ``is_available()`` for a PyTorch script (no Metal backend: False), and
``cudnn`` holds torch.backends.cudnn's switches (``cudnn.benchmark = True``), which change
nothing: tricycle calls no cuDNN.
"""

from tricycle.backends import cudnn, mps  # noqa: F401 - as torch.backends.cudnn and .mps
