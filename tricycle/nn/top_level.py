"""torch's top-level aliases of functional ops (``torch.conv2d``, ``torch.layer_norm``,
``torch.dropout``, ``torch.kl_div``, ...), reached as ``tricycle.<name>``, with the signatures
torch gives them, which are ATen's and not always ``torch.nn.functional``'s:

- ``dropout``, ``alpha_dropout`` and ``feature_alpha_dropout`` take (input, p, train), all
  required; ``embedding`` takes (weight, indices, padding_idx=-1, ...): the table first, -1
  for no padding row; ``batch_norm`` and ``instance_norm`` take (input, weight, bias,
  running_mean, running_var, training / use_input_stats, momentum, eps, cudnn_enabled);
- the losses take ``reduction`` as ATen's int (0 "none", 1 "mean", 2 "sum"; 1 by default, so
  ``torch.kl_div`` is the elementwise mean), positionally after the loss's own arguments;
- ``adaptive_max_pool1d`` returns (out, indices); the pools take ``stride=[]`` for the kernel.

Each delegates to the ``tricycle.nn.functional`` op; ``cudnn_enable(d)`` is accepted and
changes nothing. The names F has with the same signature (``conv1d``, ``pixel_shuffle``,
``bilinear``, ...) are F's own functions, listed in ``tricycle/__init__.py``.
"""

from tricycle import checks
from tricycle.nn import functional as F
from tricycle.nn.alpha_dropout import alpha_dropout as _alpha_dropout
from tricycle.nn.alpha_dropout import feature_alpha_dropout as _feature_alpha_dropout
from tricycle.nn.channel_dropout import _dropout_nd
from tricycle.nn.shrinks import rrelu as _rrelu
from tricycle.tensor import Tensor

__all__ = [
    "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d", "batch_norm",
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss", "dropout",
    "dropout_", "embedding", "feature_alpha_dropout", "feature_alpha_dropout_",
    "feature_dropout", "feature_dropout_", "group_norm", "hinge_embedding_loss",
    "instance_norm", "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool2d",
    "max_pool3d", "poisson_nll_loss", "rrelu", "rrelu_", "selu", "triplet_margin_loss",
]  # fmt: skip

REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum: 0, 1, 2


def _reduction(op: str, reduction) -> str:
    """ATen's int reduction as F's name."""
    if isinstance(reduction, bool) or reduction not in (0, 1, 2):
        checks.fail(op, "reduction", "0 (none), 1 (mean) or 2 (sum), ATen's enum", reduction)
    return REDUCTIONS[reduction]


def _stride(stride):
    """torch's ``stride=[]`` (the kernel's) as None."""
    return None if isinstance(stride, list | tuple) and not stride else stride


# ---------------------------------------------------------------------- dropout
def dropout(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.dropout(input, p, train)``: ``F.dropout(input, p, training=train)``."""
    return F.dropout(input, p, train)


def alpha_dropout(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.alpha_dropout(input, p, train)``: ``F.alpha_dropout``."""
    return _alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.feature_alpha_dropout(input, p, train)``: ``F.feature_alpha_dropout``."""
    return _feature_alpha_dropout(input, p, train)


def feature_dropout(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.feature_dropout(input, p, train)``: whole channels of (N, C, ...) zeroed with
    probability ``p``, the rest scaled by 1 / (1 - p) (``F.dropout2d``'s, for any rank)."""
    return _dropout_nd("feature_dropout", input, p, train, False, None, None)


def dropout_(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.dropout_(input, p, train)``: ``dropout`` written into ``input``."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.alpha_dropout_(input, p, train)``: ``alpha_dropout`` written into ``input``."""
    return _alpha_dropout(input, p, train, inplace=True)


def feature_dropout_(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.feature_dropout_(input, p, train)``: ``feature_dropout`` written into ``input``."""
    return _dropout_nd("feature_dropout_", input, p, train, True, None, None)


def feature_alpha_dropout_(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's names
    """``torch.feature_alpha_dropout_(input, p, train)``: written into ``input``."""
    return _feature_alpha_dropout(input, p, train, inplace=True)


# ---------------------------------------------------------------------- activations, tables
def selu(input) -> Tensor:  # noqa: A002 - torch's name
    """``torch.selu(input)``: ``F.selu``."""
    return F.selu(input)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          generator=None) -> Tensor:  # fmt: skip
    """``torch.rrelu(input, lower, upper, training=False, generator=None)``: ``F.rrelu``, its
    slopes drawn from ``generator`` (a ``tricycle.Generator``) when given."""
    return _rrelu(input, lower, upper, training, rng=generator)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
           generator=None) -> Tensor:  # fmt: skip
    """``torch.rrelu_(input, lower, upper, training=False, generator=None)``: ``rrelu``
    written into ``input``, which is returned."""
    return input.copy_(rrelu(input, lower, upper, training, generator))


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:  # fmt: skip
    """``torch.embedding(weight, indices, padding_idx=-1, ...)``: the rows of ``weight``
    (V, E) at ``indices``; row ``padding_idx`` (-1: none, ATen's sentinel) gets no gradient.
    ``sparse`` is accepted (the gradient is dense); ``scale_grad_by_freq`` as F.embedding's."""
    checks.integer("torch.embedding", "padding_idx", padding_idx)
    padding_idx = None if padding_idx == -1 else padding_idx
    return F.embedding(indices, weight, padding_idx, None, 2.0, scale_grad_by_freq, sparse)


# ---------------------------------------------------------------------- normalisation
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5,  # noqa: A002
               cudnn_enable: bool = True) -> Tensor:  # fmt: skip
    """``torch.layer_norm``: ``F.layer_norm`` (``cudnn_enable`` changes nothing)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,  # noqa: A002
               cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """``torch.group_norm``: ``F.group_norm`` (``cudnn_enabled`` changes nothing)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training: bool,  # noqa: A002
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """``torch.batch_norm`` in ATen's argument order: ``F.batch_norm(input, running_mean,
    running_var, weight, bias, training, momentum, eps)``."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,  # noqa: A002
                  momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:  # fmt: skip
    """``torch.instance_norm`` in ATen's argument order: ``F.instance_norm``."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)  # fmt: skip


# ---------------------------------------------------------------------- pooling
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    """``torch.max_pool1d``: ``F.max_pool1d`` (``stride=[]``: the kernel's)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    """``torch.max_pool2d``: ``F.max_pool2d`` (``stride=[]``: the kernel's)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    """``torch.max_pool3d``: ``F.max_pool3d`` (``stride=[]``: the kernel's)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True) -> Tensor:  # fmt: skip
    """``torch.avg_pool1d``: ``F.avg_pool1d`` (``stride=[]``: the kernel's)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)  # fmt: skip


def adaptive_max_pool1d(input, output_size) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``torch.adaptive_max_pool1d``: (out, indices), as torch's."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# ---------------------------------------------------------------------- losses (int reductions)
def kl_div(input, target, reduction: int = 1, *, log_target: bool = False) -> Tensor:  # noqa: A002
    """``torch.kl_div``: ``F.kl_div`` with ATen's int reduction (1: the elementwise mean)."""
    how = _reduction("torch.kl_div", reduction)
    return F.kl_div(input, target, reduction=how, log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 1):
    """``torch.margin_ranking_loss``: ``F.margin_ranking_loss``, ATen's int reduction."""
    how = _reduction("torch.margin_ranking_loss", reduction)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=how)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 1) -> Tensor:  # noqa: A002
    """``torch.hinge_embedding_loss``: ``F.hinge_embedding_loss``, ATen's int reduction."""
    how = _reduction("torch.hinge_embedding_loss", reduction)
    return F.hinge_embedding_loss(input, target, margin, reduction=how)


def triplet_margin_loss(
    anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
    swap: bool = False, reduction: int = 1,
) -> Tensor:
    """``torch.triplet_margin_loss``: ``F.triplet_margin_loss``, ATen's int reduction."""
    how = _reduction("torch.triplet_margin_loss", reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=how)


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float,  # noqa: A002
                     reduction: int) -> Tensor:  # fmt: skip
    """``torch.poisson_nll_loss`` (every argument required, as ATen's): ``F.poisson_nll_loss``."""
    how = _reduction("torch.poisson_nll_loss", reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=how)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 1):
    """``torch.cosine_embedding_loss``: ``F.cosine_embedding_loss``, ATen's int reduction."""
    how = _reduction("torch.cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=how)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 1, zero_infinity: bool = False) -> Tensor:  # fmt: skip
    """``torch.ctc_loss``: ``F.ctc_loss``, ATen's int reduction."""
    how = _reduction("torch.ctc_loss", reduction)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, how, zero_infinity)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,  # noqa: A002
                                     reduction: int = 1) -> Tensor:  # fmt: skip
    """``torch.binary_cross_entropy_with_logits``: F's, ATen's argument order and int
    reduction."""
    how = _reduction("torch.binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=how,
                                              pos_weight=pos_weight)  # fmt: skip
