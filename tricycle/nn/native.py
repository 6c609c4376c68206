"""torch's low-level top-level functions behind ``torch.nn.functional``
(``torch.native_layer_norm``, ``torch.convolution``, ``torch.grid_sampler``, ...), reached as
``tricycle.<name>``, with ATen's signatures and results, each built on tricycle's existing op:

- ``native_batch_norm``, ``native_layer_norm`` and ``native_group_norm`` return (output, mean,
  rstd) as torch's: the normalisation is F's; the statistics are torch's saved ones (batch
  norm: (C,), empty out of training; layer norm: the input's leading shape with ones for the
  normalised axes; group norm: (N, group), differentiable as torch's), the first two detached
  as torch's are;
- ``native_dropout(input, p, train)`` returns (output, mask): the bool mask of kept elements;
  ``train`` None is training, as torch's;
- ``constant_pad_nd``, ``convolution`` (ATen's one convolution: plain or transposed, 1-3 d),
  ``grid_sampler`` (and ``_2d``/``_3d``) with ATen's int modes, ``affine_grid_generator``,
  ``max_pool1d_with_indices``, ``norm_except_dim`` (weight norm's norm: over every axis but
  ``dim``; ``dim=-1`` the whole tensor's) and ``empty_permuted`` (a tensor whose memory is laid
  out in ``physical_layout``'s order);
- ``native_norm`` is torch's norm of a sparse COO tensor's entries (a dense input is refused,
  as torch refuses it, pointing to ``linalg.vector_norm``).
"""

import numpy as np

from tricycle import checks, random
from tricycle.linalg import vector_norm
from tricycle.nn import functional as F
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.torch_functions import empty

__all__ = [
    "affine_grid_generator", "constant_pad_nd", "convolution", "empty_permuted", "grid_sampler",
    "grid_sampler_2d", "grid_sampler_3d", "max_pool1d_with_indices", "native_batch_norm",
    "native_dropout", "native_group_norm", "native_layer_norm", "native_norm", "norm_except_dim",
]  # fmt: skip

INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")  # ATen's GridSamplerInterpolation
PADDING_MODES = ("zeros", "border", "reflection")  # ATen's GridSamplerPadding


def _detached(array) -> Tensor:
    """``array`` as a tensor that no gradient reaches (torch's saved statistics)."""
    return Tensor(array, requires_grad=False)


# ---------------------------------------------------------------------- normalisation
def native_batch_norm(input, weight, bias, running_mean, running_var, training: bool,  # noqa: A002
                      momentum: float, eps: float) -> tuple:  # fmt: skip
    """``torch.native_batch_norm``: (F.batch_norm's output, save_mean, save_invstd). In
    training the saved statistics are the batch's per-channel mean and 1 / sqrt(biased var +
    eps) (C,) (the running statistics updated as F's); out of training they are empty (0,)."""
    x = as_tensor(input)
    out = F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    xp, a = x.xp, x.array
    if not training:
        empty = xp.empty((0,), dtype=a.dtype)
        return out, _detached(empty), _detached(empty.copy())
    axes = (0,) + tuple(range(2, a.ndim))
    mean = a.mean(axis=axes)
    invstd = 1 / xp.sqrt(a.var(axis=axes) + eps)
    return out, _detached(mean.astype(a.dtype)), _detached(invstd.astype(a.dtype))


def native_layer_norm(input, normalized_shape, weight, bias, eps: float) -> tuple:  # noqa: A002
    """``torch.native_layer_norm``: (F.layer_norm's output, mean, rstd), the statistics of
    shape input.shape[:k] + (1,) * len(normalized_shape) (k the first normalised axis)."""
    x = as_tensor(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    out = F.layer_norm(x, shape, weight, bias, eps)
    xp, a = x.xp, x.array
    axes = tuple(range(a.ndim - len(shape), a.ndim))
    mean = a.mean(axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(a.var(axis=axes, keepdims=True) + eps)
    return out, _detached(mean.astype(a.dtype)), _detached(rstd.astype(a.dtype))


def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int,  # noqa: A002, N803
                      eps: float) -> tuple:  # fmt: skip
    """``torch.native_group_norm``: (F.group_norm's output, mean, rstd), the statistics
    (N, group), differentiable as torch's; ``N``, ``C`` and ``HxW`` must describe the input."""
    x = as_tensor(input)
    for name, value in (("N", N), ("C", C), ("HxW", HxW), ("group", group)):
        checks.non_negative_int("torch.native_group_norm", name, value)
    if x.ndim < 2 or x.shape[:2] != (N, C) or x.size != N * C * HxW:
        raise RuntimeError(f"torch.native_group_norm: expected input of N * C * HxW = {N} * "
                           f"{C} * {HxW} elements, (N, C, ...), got shape {x.shape}")  # fmt: skip
    out = F.group_norm(x, group, weight, bias, eps)
    grouped = x.reshape(N, group, -1)
    mean = grouped.mean(-1)
    var = ((grouped - mean.reshape(N, group, 1)) ** 2).mean(-1)
    return out, mean, (var + eps) ** -0.5


def native_norm(input, p=2, dim=None, keepdim: bool = False, dtype=None):  # noqa: A002
    """``torch.native_norm``: the ``p``-norm of a sparse COO tensor's entries (its coalesced
    values: repeated cells summed first, as torch's), a 0-d tensor. As torch's, ``dim`` may
    only name every axis, and ``keepdim=True`` and a ``dtype`` are refused; a dense input is
    refused too (``linalg.vector_norm`` is its norm)."""
    op = "torch.native_norm"
    if getattr(input, "is_sparse", False) is not True:
        raise NotImplementedError(f"{op}: torch computes it for sparse COO tensors only, "
                                  f"got {type(input).__name__}; use "
                                  "tricycle.linalg.vector_norm")  # fmt: skip
    if dim is not None:
        dims = [dim] if checks.is_integer(dim) else list(dim)
        axes = {checks.axis(op, "dim", d, input.ndim, input.shape) for d in dims}
        if dims and axes != set(range(input.ndim)):
            raise RuntimeError(f"{op}: norm_sparse currently only supports full reductions, "
                               f"so 'dim' must either be empty or contain all dimensions of "
                               f"the input, got {dim} for {input.ndim} dimensions")  # fmt: skip
    checks.boolean(op, "keepdim", keepdim)
    for name, given in (("keepdim=True", keepdim), ("'dtype' argument", dtype is not None)):
        if given:
            raise RuntimeError(f"{op}: norm_sparse currently does not support {name} (as "
                               "torch's)")  # fmt: skip
    values = input.coalesce()._values()
    return vector_norm(values, 2 if p is None else p)


def norm_except_dim(v, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's names
    """``torch.norm_except_dim``: weight norm's norm of v over every axis but ``dim``, shaped
    (1, ..., v.shape[dim], ..., 1); ``dim=-1`` is the norm of the whole tensor (a scalar),
    as torch's (not the last axis)."""
    v = as_tensor(v)
    checks.integer("torch.norm_except_dim", "dim", dim)
    if dim == -1:
        return vector_norm(v, pow)
    if not 0 <= dim < max(v.ndim, 1):
        raise IndexError(f"torch.norm_except_dim: dim {dim} out of range for shape {v.shape}")
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return vector_norm(v, pow, axes, keepdim=True)


# ---------------------------------------------------------------------- dropout
def native_dropout(input, p: float, train) -> tuple:  # noqa: A002 - torch's names
    """``torch.native_dropout``: (output, mask), the bool mask of the elements kept (each with
    probability 1 - p) and the output input * mask / (1 - p) (zeros for p = 1). Out of
    training (``train`` False; None is training) the input's copy and a mask of ones."""
    op = "torch.native_dropout"
    checks.real(op, "p", p, 0, 1)
    checks.boolean(op, "train", train, optional=True)
    x = as_tensor(input)
    check_float(op, x)
    xp = x.xp
    if train is False:
        return x * 1.0, Tensor(xp.ones(x.shape, dtype=bool), requires_grad=False)
    rng = np.random.default_rng(random.draw_seed())
    kept = xp.asarray(rng.random(x.shape) >= p)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    out = x * Tensor((kept * scale).astype(x.dtype), requires_grad=False)
    return out, Tensor(kept, requires_grad=False)


# ---------------------------------------------------------------------- padding, convolution
def constant_pad_nd(input, pad, value: float = 0) -> Tensor:  # noqa: A002 - torch's names
    """``torch.constant_pad_nd``: ``F.pad(input, pad, "constant", value)``, pads (negative:
    cropping) for the last axes first, with torch's errors."""
    x, pad = as_tensor(input), list(pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pad)} while the "
                           f"input has {x.ndim} dimensions.")  # fmt: skip
    for i in range(len(pad) // 2):
        if x.shape[-1 - i] + pad[2 * i] + pad[2 * i + 1] < 0:
            raise RuntimeError(f"torch.constant_pad_nd: pads {pad} leave axis {x.ndim - 1 - i} "
                               f"of shape {x.shape} with a negative size")  # fmt: skip
    return F.pad(x, pad, "constant", value)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool,  # noqa: A002
                output_padding, groups: int) -> Tensor:  # fmt: skip
    """``torch.convolution``: ATen's one convolution, F's ``conv{n}d`` or, ``transposed``,
    ``conv_transpose{n}d`` (n = 1, 2, 3 from the weight's dimensions)."""
    x, w = as_tensor(input), as_tensor(weight)
    n = w.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"torch.convolution: expected a weight of 3 to 5 dimensions "
                           f"(out, in / groups, *kernel), got shape {w.shape}")  # fmt: skip
    checks.boolean("torch.convolution", "transposed", transposed)
    stride, padding, dilation = (tuple(v) if isinstance(v, list | tuple) else v
                                 for v in (stride, padding, dilation))  # fmt: skip
    if transposed:
        conv = getattr(F, f"conv_transpose{n}d")
        out_pad = tuple(output_padding) if isinstance(output_padding, list | tuple) else (
            output_padding)  # fmt: skip
        return conv(x, w, bias, stride, padding, out_pad, groups, dilation)
    return getattr(F, f"conv{n}d")(x, w, bias, stride, padding, dilation, groups)


# ---------------------------------------------------------------------- sampling, pooling
def _enum(op: str, name: str, names: tuple, value) -> str:
    """ATen's int enum as F's name."""
    if isinstance(value, bool) or not checks.is_integer(value) or not 0 <= value < len(names):
        checks.fail(op, name, f"an int in 0..{len(names) - 1} ({', '.join(names)})", value)
    return names[value]


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                 align_corners: bool) -> Tensor:  # fmt: skip
    """``torch.grid_sampler``: ``F.grid_sample`` with ATen's int modes (interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    op = "torch.grid_sampler"
    mode = _enum(op, "interpolation_mode", INTERPOLATION_MODES, interpolation_mode)
    padding = _enum(op, "padding_mode", PADDING_MODES, padding_mode)
    checks.boolean(op, "align_corners", align_corners)
    return F.grid_sample(input, grid, mode, padding, align_corners)


def _grid_sampler_nd(n: int):
    def sampler(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                align_corners: bool) -> Tensor:  # fmt: skip
        x = as_tensor(input)
        if x.ndim != n + 2:
            raise RuntimeError(f"torch.grid_sampler_{n}d: expected a {n + 2}-D input "
                               f"(N, C, *{n} spatial), got shape {x.shape}")  # fmt: skip
        return grid_sampler(x, grid, interpolation_mode, padding_mode, align_corners)

    sampler.__name__ = sampler.__qualname__ = f"grid_sampler_{n}d"
    sampler.__doc__ = f"``torch.grid_sampler_{n}d``: ``grid_sampler`` of a {n + 2}-D input."
    return sampler


grid_sampler_2d, grid_sampler_3d = _grid_sampler_nd(2), _grid_sampler_nd(3)


def affine_grid_generator(theta, size, align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: ``F.affine_grid(theta, size, align_corners)``."""
    checks.boolean("torch.affine_grid_generator", "align_corners", align_corners)
    return F.affine_grid(theta, list(size), align_corners)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False) -> tuple:  # fmt: skip
    """``torch.max_pool1d_with_indices``: (out, indices) of ``F.max_pool1d`` (``stride=[]``:
    the kernel's)."""
    stride = None if isinstance(stride, list | tuple) and not stride else stride
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices=True)  # fmt: skip


# ---------------------------------------------------------------------- construction
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:  # fmt: skip
    """``torch.empty_permuted``: a tensor of ``size`` whose memory holds its axes in the order
    ``physical_layout`` (outermost first): ``empty(physical sizes).permute(inverse)``, with
    torch's strides (zeros, as ``tricycle.empty``'s)."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")  # fmt: skip
    if sorted(order) != list(range(len(order))):
        raise RuntimeError(f"Duplicate dim not allowed (or out of range): physical_layout "
                           f"{order} for {len(size)} dims")  # fmt: skip
    memory = empty(*[size[d] for d in order], dtype=dtype, layout=layout, device=device,
                   pin_memory=pin_memory)  # fmt: skip
    array = memory.array.transpose(tuple(int(i) for i in np.argsort(order)))
    return memory.new(array, requires_grad=requires_grad)
