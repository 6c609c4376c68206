"""torch.nn.utils' older ``weight_norm`` and ``spectral_norm`` (deprecated by torch for the
parametrizations of ``tricycle.nn.utils.parametrizations``, but in much code), with their
``remove_weight_norm`` and ``remove_spectral_norm``.

They keep torch's names and layouts (torch's layout: a Linear's (out, in), see
``tricycle.nn.utils.parametrize``) on the layer itself:

- ``weight_norm(layer)``: parameters ``weight_g`` (1 on every axis but ``dim``) and
  ``weight_v`` (new ones: give them to the optimiser after this call);
- ``spectral_norm(layer)``: the parameter ``weight_orig`` (the weight's Parameter object,
  in torch's layout) and the buffers ``weight_u`` (h,) and ``weight_v`` (w,).

The formulas are the parametrizations' (``weight_norm_value``, ``divided_by_sigma``). The
layer's weight (``weights`` of a Linear, ``gamma`` of a norm) is computed from them at each
read (``tricycle.nn.utils.computed_attributes``), as torch's hook computes it before each
forward, with the same numbers; it cannot be assigned. Spectral norm's power iteration runs
as torch's older one does: once per call of the layer in training mode, in a forward
pre-hook, v first (v <- normalize(W^T u), then u <- normalize(W v)), from random unit
vectors without iterations at the start. (A weight read before the first call is computed
from those start vectors; torch's is the raw weight until then.)
"""

from tricycle import checks
from tricycle.module import Layer, Parameter
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from tricycle.nn.utils.computed_attributes import Computed, computed, eject, inject
from tricycle.nn.utils.parametrizations import (
    divided_by_sigma,
    norm_dim,
    norm_except_dim,
    normalized,
    start_vectors,
    weight_matrix,
    weight_norm_value,
)
from tricycle.nn.utils.parametrize import torch_attribute, torch_value
from tricycle.tensor import Tensor, no_grad

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]


class _Normed(Computed):
    """A weight computed from tensors named ``{name}_...`` on the layer, in torch's layout
    (transposed back to the layer's where that is the transpose)."""

    def __init__(self, attr: str, name: str, dim: int, transposed: bool):
        super().__init__(attr)
        self.name, self.dim, self.transposed = name, dim, transposed

    def __get__(self, layer, owner=None):
        if layer is None:
            return self
        value = self.value(layer)
        return value.T if self.transposed else value

    def value(self, layer) -> Tensor:
        raise NotImplementedError


class _WeightNormed(_Normed):
    origin = "weight_norm (from weight_g and weight_v)"

    def value(self, layer) -> Tensor:
        g, v = getattr(layer, f"{self.name}_g"), getattr(layer, f"{self.name}_v")
        return weight_norm_value(v, g, self.dim)


class _SpectralNormed(_Normed):
    origin = "spectral_norm (from weight_orig, weight_u and weight_v)"

    def value(self, layer) -> Tensor:
        weight = getattr(layer, f"{self.name}_orig")
        W = weight_matrix(weight, self.dim)  # (h, w)
        u, v = getattr(layer, f"{self.name}_u"), getattr(layer, f"{self.name}_v")
        return divided_by_sigma(weight, W, u.array, v.array)


class _PowerIteration:
    """The forward pre-hook of the older spectral norm: in training mode,
    ``n_power_iterations`` steps v <- normalize(W^T u), u <- normalize(W v), written into
    the buffers ``{name}_u`` and ``{name}_v``."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float):
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def __call__(self, layer, args) -> None:
        if not layer.training:
            return
        with no_grad():
            W = weight_matrix(getattr(layer, f"{self.name}_orig"), self.dim).array  # (h, w)
        u, v = getattr(layer, f"{self.name}_u").array, getattr(layer, f"{self.name}_v").array
        for _ in range(self.n_power_iterations):
            v[...] = normalized(W.T @ u, self.eps)
            u[...] = normalized(W @ v, self.eps)


def weight_norm(module: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """torch's older ``nn.utils.weight_norm``: ``module``'s tensor ``name`` becomes
    ``weight_g * weight_v / ||weight_v||`` (the norm over every axis but ``dim`` of torch's
    layout; None or -1: the whole tensor), with ``weight_g`` and ``weight_v`` new parameters
    of the layer. Returns ``module``."""
    owner = "weight_norm"
    weight = torch_value(owner, module, name)
    attr, transposed = torch_attribute(owner, module, name)
    dim = norm_dim(owner, dim, weight.ndim)
    with no_grad():
        g = norm_except_dim(weight, dim)
    setattr(module, f"{name}_g", Parameter(g.array.copy()))
    setattr(module, f"{name}_v", Parameter(weight.array.copy()))
    inject(module, _WeightNormed(attr, name, dim, transposed))
    return module


def remove_weight_norm(module: Layer, name: str = "weight") -> Layer:
    """Undo ``weight_norm``: the tensor is a plain (new) parameter again, holding the value
    the weight norm gives now. Returns ``module``."""
    descriptor = _find("remove_weight_norm", module, name, _WeightNormed)
    return _remove(module, descriptor, ("g", "v"))


def spectral_norm(module: Layer, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Layer:  # fmt: skip
    """torch's older ``nn.utils.spectral_norm``: ``module``'s tensor ``name`` becomes
    ``weight_orig / sigma`` (see the module's doc), ``dim`` the axis of torch's layout that
    is the matrix's rows (None: 0, or 1 for a transposed convolution). Returns ``module``."""
    owner = "spectral_norm"
    checks.positive_int(owner, "n_power_iterations", n_power_iterations)
    checks.positive(owner, "eps", eps)
    weight = torch_value(owner, module, name)
    attr, transposed = torch_attribute(owner, module, name)
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    dim = checks.axis(owner, "dim", dim, weight.ndim, weight.shape)
    if weight.ndim < 2:
        raise ValueError(f"{owner}: {type(module).__name__}.{attr} has shape {weight.shape}; "
                         "the older spectral_norm needs a weight of 2 or more axes")  # fmt: skip
    original = vars(module)[attr]
    with no_grad():
        u, v = start_vectors(weight_matrix(weight, dim).array, float(eps))  # (h,), (w,)
    if transposed:  # the Parameter object stays, its values in torch's layout
        original.array, original.grad = weight.array.copy(), None
    setattr(module, f"{name}_orig", original)
    module.register_buffer(f"{name}_u", u)
    module.register_buffer(f"{name}_v", v)
    inject(module, _SpectralNormed(attr, name, dim, transposed))
    module.register_forward_pre_hook(_PowerIteration(name, n_power_iterations, dim, float(eps)))
    return module


def remove_spectral_norm(module: Layer, name: str = "weight") -> Layer:
    """Undo ``spectral_norm``: the tensor is a plain (new) parameter again, holding
    ``weight_orig / sigma`` with the current u and v; the hook goes. Returns ``module``."""
    descriptor = _find("remove_spectral_norm", module, name, _SpectralNormed)
    hooks = vars(module).get("_hooks")
    for key, hook in list(getattr(hooks, "forward_pre", {}).items()):
        if isinstance(hook, _PowerIteration) and hook.name == name:
            hooks.discard("forward_pre", key)
    if hooks is not None and not hooks:
        del module._hooks  # the plain call path again, as a removed handle leaves it
    return _remove(module, descriptor, ("orig", "u", "v"))


def _find(owner: str, module, name: str, kind: type) -> _Normed:
    """The descriptor of ``kind`` for torch's tensor ``name`` of ``module``, or a ValueError."""
    checks.instance(Layer)(owner, "module", module)
    for descriptor in computed(module).values():
        if isinstance(descriptor, kind) and descriptor.name == name:
            return descriptor
    what = "weight_norm" if kind is _WeightNormed else "spectral_norm"
    raise ValueError(f"{owner}: no {what} of {name!r} in {type(module).__name__}")


def _remove(module: Layer, descriptor: _Normed, suffixes: tuple) -> Layer:
    """The computed weight's value now as a new parameter under its attribute; the tensors it
    was computed from leave the layer."""
    with no_grad():
        value = descriptor.value(module)
    value = value.array.T if descriptor.transposed else value.array
    for suffix in suffixes:
        delattr(module, f"{descriptor.name}_{suffix}")
    eject(module, descriptor.attr, Parameter(value.copy()))
    return module
