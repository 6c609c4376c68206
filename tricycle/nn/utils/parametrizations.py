"""torch.nn.utils.parametrizations: weight normalisation and spectral normalisation as
parametrizations (``tricycle.nn.utils.parametrize``), and their formulas, which torch's older
hooks (``tricycle.nn.utils.legacy_norms``) share.

``weight_norm(layer)`` writes the weight as a magnitude times a direction (Salimans and
Kingma, 2016)::

    w = g * v / ||v||          the norm over every axis but ``dim`` (torch's layout)

and trains ``g`` (``parametrizations.weight.original0``, shaped as w with 1 on every axis
but ``dim``) and ``v`` (``original1``, w's shape) instead of w. ``dim=0``, the default, is
torch's output axis: one magnitude per output unit (for a Linear, whose tricycle weights are
(in, out), the last axis of ``weights``: the parametrization works in torch's layout).
``dim=None`` (or -1, as torch reads it) takes the norm of the whole tensor.

``spectral_norm(layer)`` divides the weight by its largest singular value sigma (Miyato et
al., 2018), estimated by power iteration on the weight as a matrix W (torch's ``dim`` axis
first, the others flattened: (h, w)), with vectors u (h,) and v (w,) kept as buffers
(``parametrizations.weight.0._u``, ``_v``)::

    u <- normalize(W v),  v <- normalize(W^T u)     in training mode only, each forward
    sigma = u^T W v,      weight / sigma

u and v are constants to the gradient (as torch's: a clone of each). At registration, 15
iterations from random (tricycle's generator) unit vectors start them off. A 1-d weight is
normalised to unit length instead. ``dim`` defaults to 0, or 1 for the transposed
convolutions (their output channels), as torch's.

``orthogonal(layer)`` (``tricycle.nn.utils.orthogonal``) keeps a matrix orthogonal.
"""

from tricycle import backend, checks, random
from tricycle.einsum import einsum
from tricycle.module import Layer
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from tricycle.nn.more_losses import normalize
from tricycle.nn.utils import parametrize
from tricycle.nn.utils.orthogonal import orthogonal
from tricycle.tensor import Tensor, no_grad

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

POWER_ITERATIONS_AT_START = 15  # torch's


# ====================================================================== the formulas
def norm_dim(owner: str, dim, ndim: int) -> int:
    """torch's ``dim`` of a weight norm as an axis >= 0, or -1 for the whole tensor (None or
    -1, as torch reads them: -1 is not the last axis here)."""
    if dim is None or (checks.is_integer(dim) and dim == -1):
        return -1
    return checks.axis(owner, "dim", dim, ndim)


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every axis but ``dim``, keeping them as size 1 (torch's
    ``norm_except_dim(v, 2, dim)``); of the whole tensor (0-d) for ``dim`` -1."""
    if dim == -1:
        return (v * v).sum().sqrt()
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return (v * v).sum(axis=axes, keepdims=True).sqrt()  # (1, .., size of dim, .., 1)


def weight_norm_value(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """g * v / ||v|| (torch's ``_weight_norm(v, g, dim)``), differentiable in g and v."""
    return v * (g / norm_except_dim(v, dim))


def weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as the (h, w) matrix of spectral norm: axis ``dim`` first, the others
    flattened in order."""
    if dim != 0:
        weight = weight.permute(dim, *(a for a in range(weight.ndim) if a != dim))
    return weight.reshape(weight.shape[0], -1)


def normalized(a, eps: float):
    """a / max(||a||, eps): torch's ``F.normalize`` of a vector, on arrays."""
    xp = backend.array_module(a)
    return a / xp.maximum(xp.linalg.norm(a), eps)


def start_vectors(W, eps: float) -> tuple:
    """Random unit vectors u (h,) and v (w,) for the (h, w) array ``W``, in its dtype and on
    its device (drawn on the host from tricycle's generator)."""
    rng = random.generator()
    device = W.device.id if backend.is_cupy_array(W) else None
    return tuple(
        normalized(backend.move(rng.standard_normal(n).astype(W.dtype), device), eps)
        for n in W.shape
    )


def divided_by_sigma(weight: Tensor, W: Tensor, u, v) -> Tensor:
    """weight / (u^T W v) with u and v constants (copies: a later power iteration, before
    backward, must not change them), in W's dtype."""
    u, v = (Tensor(a.astype(W.dtype), requires_grad=False) for a in (u, v))  # copies
    return weight / einsum("i,ij,j->", u, W, v)


# ====================================================================== the layers
class _WeightNorm(Layer):
    """The weight-norm parametrization: forward(g, v) = g v / ||v||; right_inverse(w) =
    (||w||, w), the norms over every axis but ``dim`` (-1: the whole tensor)."""

    def __init__(self, dim: int = 0):
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _SpectralNorm(Layer):
    """The spectral-norm parametrization of ``weight`` (torch's layout): buffers ``_u`` and
    ``_v``, a power iteration per forward in training mode, then weight / sigma."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):  # fmt: skip
        owner = "spectral_norm"
        checks.positive_int(owner, "n_power_iterations", n_power_iterations)
        checks.positive(owner, "eps", eps)
        self.dim = checks.axis(owner, "dim", dim, weight.ndim, weight.shape)
        self.eps = float(eps)
        self.n_power_iterations = n_power_iterations
        if weight.ndim > 1:
            W = weight_matrix(weight, self.dim).array  # (h, w)
            u, v = start_vectors(W, self.eps)
            self._u = Tensor(u, requires_grad=False)  # (h,) buffer
            self._v = Tensor(v, requires_grad=False)  # (w,) buffer
            self.power_method(W, POWER_ITERATIONS_AT_START)

    def power_method(self, W, n_power_iterations: int) -> None:
        """``n_power_iterations`` steps u <- normalize(W v), v <- normalize(W^T u) on the
        (h, w) array ``W``, written into the buffers."""
        u, v = self._u.array, self._v.array
        for _ in range(n_power_iterations):
            u[...] = normalized(W @ v, self.eps)
            v[...] = normalized(W.T @ u, self.eps)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        W = weight_matrix(weight, self.dim)  # (h, w)
        if self.training:
            self.power_method(W.array, self.n_power_iterations)
        return divided_by_sigma(weight, W, self._u.array, self._v.array)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value

    def extra_repr(self) -> str:
        return f"dim={self.dim}, n_power_iterations={self.n_power_iterations}, eps={self.eps}"


# ====================================================================== the functions
def weight_norm(module: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """Weight normalisation of ``module``'s tensor ``name`` (torch's name; see the module's
    doc): ``original0`` is g, ``original1`` is v, new parameters (give them to the optimiser
    after this call). ``dim``: the axis of torch's layout that keeps its own magnitudes (0,
    the output axis, by default; None or -1: one magnitude). Returns ``module``."""
    owner = "weight_norm"
    weight = parametrize.torch_value(owner, module, name)
    dim = norm_dim(owner, dim, weight.ndim)
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


def spectral_norm(module: Layer, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Layer:  # fmt: skip
    """Spectral normalisation of ``module``'s tensor ``name`` (torch's name; see the
    module's doc): the weight divided by its largest singular value, estimated by
    ``n_power_iterations`` steps of power iteration per forward in training mode (none in
    evaluation mode), with the vectors in the buffers ``_u`` and ``_v``. ``dim``: the axis
    of torch's layout that is the matrix's rows (0, or 1 for a transposed convolution, when
    None). Returns ``module``."""
    owner = "spectral_norm"
    weight = parametrize.torch_value(owner, module, name)
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    with no_grad():
        parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    return parametrize.register_parametrization(module, name, parametrization)
