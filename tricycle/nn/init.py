"""``torch.nn.init`` under its names (``import tricycle.nn.init``): functions that fill a
tensor in place with values drawn for it, as a model's ``_init_weights`` calls them::

    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weights, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    model.apply(_init_weights)

Each writes into the tensor's array (``Tensor.copy_``/``fill_`` under ``no_grad()``, as
torch's run under ``torch.no_grad()``), keeps its dtype and device (numpy or cupy), and
returns it. Random values are drawn on the host from tricycle's generator
(``tricycle.manual_seed`` repeats them) or from the numpy ``generator`` given.

Fans. torch reads a weight as (out, in, *kernel): fan_in = in * kernel size, fan_out = out *
kernel size. tricycle's ``Linear`` (``Dense``) stores its weights as (in, out), the
transpose, so a 2-D tensor is read here as (in, out): fan_in = size(0), fan_out = size(1),
and ``kaiming_uniform_(linear.weights)`` draws as torch's does for the same layer. A tensor
of 3 or more axes is read in torch's layout, which tricycle's convolutions keep. For a 2-D
tensor in torch's (out, in) layout (``Embedding``'s (num, dim) weights, the recurrent layers'
``weight_ih_l0``...) pass ``torch_layout=True``. ``orthogonal_`` and ``eye_`` need no rule:
the transpose of what they draw for torch's layout is what they draw for ours.
"""

import math
import warnings

import numpy as np

from tricycle import backend, checks
from tricycle import random as tricycle_random
from tricycle.tensor import Tensor, no_grad

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")  # fmt: skip
_NONLINEARITIES = (*_LINEAR, "tanh", "relu", "leaky_relu", "selu")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The gain torch recommends for ``nonlinearity``: 1 for linear layers and sigmoid, 5/3
    for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (``param`` is the
    slope, 0.01 by default) and 3/4 for selu."""
    checks.one_of(_NONLINEARITIES)("calculate_gain", "nonlinearity", nonlinearity)
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else checks.real("calculate_gain", "param", param)
        return math.sqrt(2.0 / (1 + slope**2))
    return {"tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4}[nonlinearity]


def _calculate_fan_in_and_fan_out(tensor, torch_layout: bool = False) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: (in, out) for a 2-D tensor, torch's (out, in, *kernel)
    for more axes or with ``torch_layout`` (see the module's doc)."""
    shape = tuple(tensor.shape)
    checks.boolean("_calculate_fan_in_and_fan_out", "torch_layout", torch_layout)
    if len(shape) < 2:
        raise ValueError(f"nn.init: fans need a tensor of 2 or more axes, got shape {shape}")
    if len(shape) == 2 and not torch_layout:  # Dense: (in, out)
        return shape[0], shape[1]
    kernel = math.prod(shape[2:])
    return shape[1] * kernel, shape[0] * kernel


def _calculate_correct_fan(tensor, mode: str, torch_layout: bool = False) -> int:
    """fan_in or fan_out (``mode``) of ``tensor``."""
    checks.one_of(("fan_in", "fan_out"))("nn.init.kaiming", "mode", mode)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, torch_layout)
    return fan_in if mode == "fan_in" else fan_out


def _target(op: str, tensor) -> Tensor:
    """``tensor``, checked to be a floating Tensor that random values can fill."""
    if not isinstance(tensor, Tensor):
        checks.fail(f"nn.init.{op}", "tensor", "a Tensor", tensor, TypeError)
    if not backend.is_float(tensor.dtype):
        checks.fail(f"nn.init.{op}", "tensor's dtype", "floating", tensor.dtype, TypeError)
    return tensor


def _fill(tensor: Tensor, values) -> Tensor:
    """Write the host array or number ``values`` into ``tensor``, off the graph."""
    with no_grad():
        return tensor.copy_(values) if isinstance(values, np.ndarray) else tensor.fill_(values)


# ---------------------------------------------------------------------- plain draws
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Values drawn from U(a, b)."""
    _target("uniform_", tensor)
    a, b = checks.number_of(a), checks.number_of(b)
    checks.real("nn.init.uniform_", "a", a)
    checks.real("nn.init.uniform_", "b", b, low=a)
    rng = tricycle_random.given_or_ours("nn.init.uniform_", generator)
    return _fill(tensor, rng.uniform(a, b, size=tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Values drawn from N(mean, std^2)."""
    _target("normal_", tensor)
    mean, std = checks.number_of(mean), checks.number_of(std)
    checks.real("nn.init.normal_", "mean", mean)
    checks.non_negative("nn.init.normal_", "std", std)
    rng = tricycle_random.given_or_ours("nn.init.normal_", generator)
    return _fill(tensor, rng.normal(mean, std, size=tensor.shape))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:  # fmt: skip
    """Values drawn from N(mean, std^2) truncated to [a, b] (absolute bounds, as torch's):
    draws outside are drawn again, which gives the truncated distribution exactly."""
    _target("trunc_normal_", tensor)
    mean, std, a, b = map(checks.number_of, (mean, std, a, b))
    checks.real("nn.init.trunc_normal_", "mean", mean)
    checks.positive("nn.init.trunc_normal_", "std", std)
    checks.real("nn.init.trunc_normal_", "b", b, low=checks.real("nn.init.trunc_normal_", "a", a))
    phi = [0.5 * (1 + math.erf((bound - mean) / std / math.sqrt(2))) for bound in (a, b)]
    kept = phi[1] - phi[0]  # the share of draws that land in [a, b]
    if kept < 1e-3:
        raise ValueError(f"nn.init.trunc_normal_: [{a}, {b}] holds a share {kept:.2g} of "
                         f"N({mean}, {std}^2): bring the bounds nearer the mean")  # fmt: skip
    rng, n = tricycle_random.given_or_ours("nn.init.trunc_normal_", generator), tensor.numel()
    values = np.empty(0)
    while values.size < n:  # mostly one round: each draws enough for what is missing
        size = min(int((n - values.size) / kept * 1.1) + 16, 1 << 22)
        draws = rng.normal(mean, std, size=size)
        values = np.concatenate([values, draws[(draws >= a) & (draws <= b)]])
    return _fill(tensor, values[:n].reshape(tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """``val`` everywhere."""
    if not isinstance(tensor, Tensor):
        checks.fail("nn.init.constant_", "tensor", "a Tensor", tensor, TypeError)
    return _fill(tensor, checks.real("nn.init.constant_", "val", checks.number_of(val)))


def ones_(tensor: Tensor) -> Tensor:
    """Ones everywhere."""
    return constant_(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    """Zeros everywhere."""
    return constant_(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal) in a 2-D tensor."""
    if not isinstance(tensor, Tensor) or tensor.ndim != 2:
        checks.fail("nn.init.eye_", "tensor", "a 2-D Tensor", getattr(tensor, "shape", tensor))
    return _fill(tensor, np.eye(*tensor.shape))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix times ``gain``, as torch's: the Q of the QR decomposition
    of a normal matrix of (size(0), the rest), signs fixed by R's diagonal so that Q is
    drawn uniformly; its rows (or its columns, when taller than wide) are orthonormal."""
    _target("orthogonal_", tensor)
    checks.real("nn.init.orthogonal_", "gain", gain)
    if tensor.ndim < 2:
        checks.fail("nn.init.orthogonal_", "tensor", "of 2 or more axes", tensor.shape)
    if not tensor.numel():
        return tensor
    rows = tensor.shape[0]
    flat = tricycle_random.given_or_ours("nn.init.orthogonal_", generator).normal(
        0.0, 1.0, size=(rows, tensor.numel() // rows)
    )
    wide = rows < flat.shape[1]
    q, r = np.linalg.qr(flat.T if wide else flat)  # q: (long, short), orthonormal columns
    q *= np.sign(np.diag(r))
    return _fill(tensor, (q.T if wide else q).reshape(tensor.shape) * gain)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta in a convolution's (out, in, *kernel) weights of 1 to 3 spatial axes:
    a one at the kernel's centre linking output channel d of each of the ``groups`` to input
    channel d, zeros elsewhere, so that the convolution passes its input through (as many
    channels as both sides have)."""
    if not isinstance(tensor, Tensor) or tensor.ndim not in (3, 4, 5):
        checks.fail("nn.init.dirac_", "tensor", "a Tensor of 3, 4 or 5 axes (out, in, *kernel)",
                    getattr(tensor, "shape", tensor))  # fmt: skip
    checks.positive_int("nn.init.dirac_", "groups", groups)
    out, inputs, *kernel = tensor.shape
    if out % groups:
        raise ValueError(f"nn.init.dirac_: dim 0 ({out}) must be divisible by groups={groups}")
    per_group = out // groups
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in kernel)
    for g in range(groups):
        for d in range(min(per_group, inputs)):
            values[(g * per_group + d, d, *centre)] = 1.0
    return _fill(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None, *,
            torch_layout: bool = False) -> Tensor:  # fmt: skip
    """Martens' sparse initialisation of a 2-D weight: N(0, std^2) values, then in each input
    feature's weights a share ``sparsity`` of the output features, drawn at random, set to
    zero (ceil(sparsity * outputs) of them). The weight is read as (in, out), a ``Linear``'s
    layout, so each row gets its zeros; with ``torch_layout`` as torch's (out, in), so each
    column does, as torch's ``sparse_``."""
    _target("sparse_", tensor)
    if tensor.ndim != 2:
        checks.fail("nn.init.sparse_", "tensor", "a 2-D Tensor", tensor.shape)
    sparsity = checks.real("nn.init.sparse_", "sparsity", checks.number_of(sparsity))
    checks.boolean("nn.init.sparse_", "torch_layout", torch_layout)
    std = checks.non_negative("nn.init.sparse_", "std", checks.number_of(std))
    rng = tricycle_random.given_or_ours("nn.init.sparse_", generator)
    values = rng.normal(0.0, std, size=tensor.shape)
    by_input = values.T if torch_layout else values  # (in, out): a view, written through
    zeros = math.ceil(sparsity * by_input.shape[1])
    for row in by_input:
        row[rng.permutation(by_input.shape[1])[:zeros]] = 0.0
    return _fill(tensor, values)


# ---------------------------------------------------------------------- scaled by the fans
def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None, *,
                    torch_layout: bool = False) -> Tensor:  # fmt: skip
    """Glorot's U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (fans: the module's doc)."""
    bound = math.sqrt(3.0) * _xavier_std("xavier_uniform_", tensor, gain, torch_layout)
    return uniform_(tensor, -bound, bound, generator) if tensor.numel() else tensor


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None, *,
                   torch_layout: bool = False) -> Tensor:  # fmt: skip
    """Glorot's N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    std = _xavier_std("xavier_normal_", tensor, gain, torch_layout)
    return normal_(tensor, 0.0, std, generator) if tensor.numel() else tensor


def _xavier_std(op: str, tensor, gain: float, torch_layout: bool) -> float:
    _target(op, tensor)
    checks.non_negative(f"nn.init.{op}", "gain", gain)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor, torch_layout)
    return gain * math.sqrt(2.0 / max(fan_in + fan_out, 1))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None, *,
                     torch_layout: bool = False) -> Tensor:  # fmt: skip
    """He's U(-bound, bound), bound = gain * sqrt(3 / fan) with ``calculate_gain(nonlinearity,
    a)`` and ``mode``'s fan (fans: the module's doc); torch's Linear and Conv layers start
    with ``a=math.sqrt(5)``, a bound of 1 / sqrt(fan_in)."""
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity,
                                          torch_layout)  # fmt: skip
    return uniform_(tensor, -bound, bound, generator) if tensor.numel() else tensor


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None, *,
                    torch_layout: bool = False) -> Tensor:  # fmt: skip
    """He's N(0, std^2), std = gain / sqrt(fan), as ``kaiming_uniform_``."""
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity, torch_layout)
    return normal_(tensor, 0.0, std, generator) if tensor.numel() else tensor


def _kaiming_std(op: str, tensor, a, mode: str, nonlinearity: str, torch_layout: bool):
    _target(op, tensor)
    fan = _calculate_correct_fan(tensor, mode, torch_layout)
    return calculate_gain(nonlinearity, a) / math.sqrt(max(fan, 1))


def _deprecated(new_name: str):
    """torch's deprecated ``nn.init.<name>`` (no trailing underscore): ``<name>_`` with
    torch's FutureWarning."""
    method, old_name = globals()[new_name], new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)  # fmt: skip
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: ``{new_name}`` under torch's old name."
    return deprecated_init


_OLD_NAMES = ("uniform_ normal_ constant_ eye_ dirac_ xavier_uniform_ xavier_normal_ "
              "kaiming_uniform_ kaiming_normal_ orthogonal_ sparse_").split()  # fmt: skip
uniform, normal, constant, eye, dirac, xavier_uniform, xavier_normal = map(
    _deprecated, _OLD_NAMES[:7]
)
kaiming_uniform, kaiming_normal, orthogonal, sparse = map(_deprecated, _OLD_NAMES[7:])

__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_",
    "normal_", "ones_", "orthogonal_", "sparse_", "trunc_normal_", "uniform_",
    "xavier_normal_", "xavier_uniform_", "zeros_", "constant", "dirac", "eye",
    "kaiming_normal", "kaiming_uniform", "normal", "orthogonal", "sparse", "uniform",
    "xavier_normal", "xavier_uniform",
]  # fmt: skip
