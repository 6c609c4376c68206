"""The basic layers, on the ``Layer`` base class of ``tricycle.module``: Dense, LayerNorm,
RMSNorm and Dropout (and Embedding, ``tricycle.embedding_layer``'s, and Sequential,
``tricycle.sequential``'s, re-exported).

Dense is an einsum plus a bias. The fused ops come as llm.c-style pairs of array functions
written once against ``xp`` (numpy or cupy), the reference formulas:
``dropout_forward``/``_backward`` here, ``embedding_forward``/``_backward`` in
``tricycle.embedding_layer``, the norms' pairs in ``tricycle.norms``. Each Tensor op asks
``tricycle.dispatch`` once for a backend's kernels with the same signatures.

``Layer``, ``parameter``, ``shared_back_fns``, the embedding's and the norms' ops are
re-exported here, where they were first defined: ``from tricycle.layers import Layer,
layer_norm, embedding`` still works. Pickled models keep loading: the layer classes defined
elsewhere (``Embedding``, ``Sequential``) are pickled under this module's name, which
re-exports them.
"""

from collections.abc import Callable

import numpy as np

from tricycle import checks, dispatch, random
from tricycle.backend import check_same_device
from tricycle.einsum import einsum
from tricycle.embedding_layer import (  # noqa: F401 (re-exported: pickles name Embedding here)
    Embedding,
    embedding,
    embedding_backward,
    embedding_forward,
    padding_row,
)
from tricycle.fused import shared_back_fns  # noqa: F401 (re-exported)
from tricycle.initialisers import init_ones, init_xavier, init_zeros
from tricycle.module import Layer, parameter
from tricycle.norms import (  # noqa: F401 (the pairs re-exported)
    layer_norm,
    layer_norm_backward,
    layer_norm_forward,
    rms_norm,
    rms_norm_backward,
    rms_norm_forward,
)
from tricycle.sequential import Sequential  # noqa: F401 (re-exported: pickles name it here)
from tricycle.tensor import Tensor, as_tensor, check_float  # noqa: F401 (check_float as before)
from tricycle.unary import unary_op

# ====================================================================== Dense


def dense(x: Tensor, weights: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weights + bias`` over the last axis: the einsum ``...i,ij->...j`` plus a bias.

    (..., I), (I, J), (J,) -> (..., J). The einsum's runner makes the contraction one matrix
    product, and its derivatives are einsums too; the bias add's gradient sums over rows.
    """
    check_same_device("Dense", x.array, weights.array, *(() if bias is None else (bias.array,)))
    out = einsum("...i,ij->...j", x, weights)  # (..., J)
    return out if bias is None else out + bias


class Dense(Layer):
    """A fully connected layer: ``x @ weights + bias`` over the last axis.

    In einsum terms ``...i,ij->...j`` plus a bias (``dense``: one einsum, then the add).

    Args:
        from_size, to_size: input and output widths; ``weights`` has shape (from_size, to_size).
        bias: add a learnt bias (zeros at first) of shape (to_size,).
        initialiser: shape -> array for the weights (default Glorot uniform, drawn from
            tricycle's generator: see ``tricycle.manual_seed``).
        name: the name of the output tensors (default "dense").
    """

    torch_names = {"in_features": "from_size", "out_features": "to_size"}  # torch's keywords

    @checks.arguments(
        from_size=checks.positive_int,
        to_size=checks.positive_int,
        bias=checks.boolean,
        initialiser=checks.optional(checks.function),
        name=checks.optional(checks.text),
    )
    def __init__(
        self,
        from_size: int,
        to_size: int,
        bias: bool = True,
        initialiser: Callable | None = None,
        name: str | None = None,
    ):
        self.from_size, self.to_size = from_size, to_size
        self.name = name
        self.weights = parameter((initialiser or init_xavier)((from_size, to_size)), "weights")
        self.bias = parameter(init_zeros((to_size,)), "bias") if bias else None

    in_features = property(lambda self: self.from_size, doc="torch's name for from_size")
    out_features = property(lambda self: self.to_size, doc="torch's name for to_size")

    def forward(self, x: Tensor) -> Tensor:
        x = self.checked_input(x)
        out = dense(x, self.weights, self.bias)  # (..., to_size)
        out.name = self.name or "dense"
        return out

    def checked_input(self, x) -> Tensor:
        """``x`` as a Tensor whose last axis has ``from_size`` elements, or a ValueError."""
        x = as_tensor(x)
        if x.ndim == 0 or x.shape[-1] != self.from_size:
            raise ValueError(
                f"Dense({self.from_size} -> {self.to_size}): expected an input whose last axis "
                f"has size {self.from_size}, got shape {x.shape}"
            )
        return x

    def extra_repr(self) -> str:
        return f"from_size={self.from_size}, to_size={self.to_size}, bias={self.bias is not None}"


# ====================================================================== LayerNorm / RMSNorm


class LayerNorm(Layer):
    """Layer normalisation over the last axis: ``gamma`` ones, ``beta`` zeros, eps in the sqrt.
    The width is ``embedding_dim``, or torch's ``normalized_shape`` (that keyword, or a
    one-axis shape (E,) in its place); without ``elementwise_affine`` (torch's: DiT's adaLN
    norms) there is neither ``gamma`` nor ``beta``."""

    @checks.arguments(eps=checks.positive, elementwise_affine=checks.boolean, bias=checks.boolean)
    def __init__(self, embedding_dim: int | None = None, eps: float = 1e-5,
                 elementwise_affine: bool = True, *, bias: bool = True,
                 normalized_shape: int | tuple[int] | None = None):  # fmt: skip
        embedding_dim = _norm_width("LayerNorm", embedding_dim, normalized_shape)
        self.embedding_dim, self.eps = embedding_dim, eps
        self.gamma = parameter(init_ones((embedding_dim,)), "gamma") if elementwise_affine else None
        affine_bias = elementwise_affine and bias
        self.beta = parameter(init_zeros((embedding_dim,)), "beta") if affine_bias else None

    def forward(self, x: Tensor) -> Tensor:
        _check_width("LayerNorm", x, self.embedding_dim)
        gamma = self.gamma if self.gamma is not None else x.new_ones(self.embedding_dim)
        return layer_norm(x, gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        affine = "" if self.gamma is not None else ", elementwise_affine=False"
        return f"{self.embedding_dim}, eps={self.eps}{affine}, bias={self.beta is not None}"


class RMSNorm(Layer):
    """Root-mean-square normalisation over the last axis with a learnt gain ``gamma``; the
    width given as LayerNorm's."""

    @checks.arguments(eps=checks.positive)
    def __init__(self, embedding_dim: int | None = None, eps: float = 1e-6, *,
                 normalized_shape: int | tuple[int] | None = None):  # fmt: skip
        embedding_dim = _norm_width("RMSNorm", embedding_dim, normalized_shape)
        self.embedding_dim, self.eps = embedding_dim, eps
        self.gamma = parameter(init_ones((embedding_dim,)), "gamma")

    def forward(self, x: Tensor) -> Tensor:
        _check_width("RMSNorm", x, self.embedding_dim)
        return rms_norm(x, self.gamma, self.eps)

    def extra_repr(self) -> str:
        return f"{self.embedding_dim}, eps={self.eps}"


def _norm_width(owner: str, embedding_dim, normalized_shape) -> int:
    """The width a norm layer normalises, given once: as ``embedding_dim`` or as torch's
    ``normalized_shape``, an int or a one-axis shape (E,) (several axes: ``F.layer_norm``)."""
    if embedding_dim is not None and normalized_shape is not None:
        raise TypeError(
            f"{owner}: give the width once, as embedding_dim or normalized_shape; got "
            f"embedding_dim={embedding_dim!r}, normalized_shape={normalized_shape!r}"
        )
    name = "embedding_dim" if normalized_shape is None else "normalized_shape"
    width = embedding_dim if normalized_shape is None else normalized_shape
    if isinstance(width, tuple | list):  # torch's shape (torch.Size is a tuple)
        if len(width) != 1:
            raise ValueError(
                f"{owner}: normalises the last axis only: {name} must be an int or a "
                f"one-axis shape (E,), got {tuple(width)} (F.layer_norm normalises several axes)"
            )
        (width,) = width
    return checks.positive_int(owner, name, width)


def _check_width(op: str, x: Tensor, width: int) -> None:
    if x.ndim == 0 or x.shape[-1] != width:
        raise ValueError(f"{op}({width}): expected last axis of size {width}, got shape {x.shape}")


# ====================================================================== Dropout


def dropout_forward(xp, x, probability: float, rng):
    """x * mask, each mask element 0 with ``probability`` and 1 / (1 - probability) otherwise
    (inverted dropout: E[output] = x), drawn from ``rng`` (a numpy Generator; None: a fresh
    one). Returns (y, mask): the mask is what backward needs."""
    # random generators make only float32/64 numbers: draw in float32 for 16-bit arrays
    draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    mask = (rng or np.random.default_rng()).random(x.shape, dtype=draw)  # uniform in [0, 1)
    np.greater_equal(mask, probability, out=mask)  # keep with probability 1 - p
    mask *= 1.0 / (1.0 - probability)
    mask = xp.asarray(mask.astype(x.dtype, copy=False))
    return x * mask, mask


def dropout_backward(xp, dy, probability: float, mask):
    """dx = dy * mask, the forward's mask."""
    return dy * mask


def dropout(x: Tensor, probability: float, *, rng: np.random.Generator | None = None) -> Tensor:
    """Zero each element with ``probability`` and scale the rest by 1 / (1 - probability).

    The mask comes from ``rng`` (a numpy Generator; a fresh one if None). A backend may draw
    it its own way from ``rng``: on a GPU from a seed, never stored (``tricycle.dropout_mask``).
    """
    checks.probability("dropout", "probability", probability)
    xp = x.xp
    forward, backward = dispatch.choose("dropout", (dropout_forward, dropout_backward), x.array)
    out, saved = forward(xp, x.array, probability, rng)
    return unary_op(x, out, lambda dout: backward(xp, dout, probability, saved), "dropout")


class Dropout(Layer):
    """Inverted dropout; the identity in eval mode or when ``probability`` is 0.

    Args:
        probability: the chance of zeroing each element, in [0, 1); 0.5 by default, as
            PyTorch's.
        seed: seeds this layer's numpy generator; by default it is drawn from tricycle's
            generator, so ``tricycle.manual_seed`` makes training reproducible.
        inplace: accepted for PyTorch's code (``nn.Dropout(p, inplace=True)``) and changes
            nothing: the output is always a new array (the values and gradients of an
            in-place dropout with the same mask) and the input is left as it was.
        p: PyTorch's name for ``probability`` (``nn.Dropout(p=0.1)``), by keyword only.
    """

    inplace = False  # a class default: layers pickled before the argument still load

    @checks.arguments(
        probability=checks.probability,
        seed=checks.seed,
        inplace=checks.boolean,
        p=checks.probability,
    )
    def __init__(
        self,
        probability: float | None = None,
        seed: int | None = None,
        inplace: bool = False,
        *,
        p: float | None = None,
    ):
        if probability is not None and p is not None:
            raise TypeError(
                f"Dropout: got probability={probability} and p={p}: give one (p is PyTorch's name)"
            )
        probability = p if p is not None else probability
        self.probability = 0.5 if probability is None else probability
        self.rng = np.random.default_rng(random.draw_seed() if seed is None else seed)
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.probability == 0:
            return x
        return dropout(x, self.probability, rng=self.rng)

    @property
    def p(self) -> float:
        """PyTorch's name for ``probability``, which torch's code also sets (``drop.p = 0.1``)."""
        return self.probability

    @p.setter
    def p(self, value) -> None:
        self.probability = checks.probability("Dropout", "p", value)

    def draw_seed(self) -> int:
        """A 32-bit seed from this layer's generator, for a fused op that draws its own mask
        (attention dropout): it then resumes and reproduces like this layer's own masks."""
        return int(self.rng.integers(2**32))

    def step_seed(self, like=None):
        """``draw_seed`` for one step's fused op on the device of the array ``like``: an int,
        or what that device's backend makes of it ("step_seed": on a GPU, while a CUDA graph
        is captured, a device array that each replay refills with a fresh draw)."""
        return dispatch.choose("step_seed", lambda draw: draw(), like)(self.draw_seed)

    def extra_repr(self) -> str:
        return f"probability={self.probability}" + (", inplace=True" if self.inplace else "")
