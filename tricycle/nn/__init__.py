"""The layer catalogue, under the names PyTorch's (and MyTorch's) users look for::

    import tricycle.nn as nn
    import tricycle.nn.functional as F

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    loss = nn.CrossEntropyLoss()(model(x), labels)

``nn.Module`` is tricycle's ``Layer`` (parameters, ``state_dict``, ``train``/``eval``,
``to_gpu`` found by walking attributes: a subclass writes ``forward`` only); ``nn.Linear`` is
``Dense`` (weights (in, out): the transpose of PyTorch's (out, in)); ``nn.GELU`` is ``GeLU``.
The general layers live in ``tricycle.layers`` and ``tricycle.activation`` (the seed's names,
which stay); the modules of this package hold the rest of the catalogue, one concern each:
convolution, pooling, the norms, recurrent layers, the containers (``Identity``,
``ModuleList``, ``ModuleDict``), attention in general (``sdpa``) and torch's
``MultiheadAttention``, a BERT encoder, a U-Net and diffusion, and the activations
(``activations``: ELU, Softplus, PReLU, ...) and losses (``more_losses``: BCELoss, ...) that
``tricycle.activation`` and ``tricycle.nn.losses`` lack. Their old names
(``tricycle.conv``, ...) still import: see ``tricycle/__init__.py``.
"""

from tricycle.activation import GLU, GeLU, LeakyReLU, ReLU, SiLU, SwiGLU, Swish
from tricycle.functions import Sigmoid, Tanh
from tricycle.layers import Dense, Dropout, Embedding, Layer, LayerNorm, RMSNorm, Sequential
from tricycle.module import Parameter
from tricycle.module_hooks import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from tricycle.nn import functional, grad, init, modules, parallel, utils  # noqa: F401 (grad: torch.nn.grad)
from tricycle.nn.activations import (
    CELU,
    ELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    Softplus,
    Softsign,
    Tanhshrink,
    Threshold,
)
from tricycle.nn.adaptive_max_pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d
from tricycle.nn.adaptive_pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d
from tricycle.nn.adaptive_softmax import AdaptiveLogSoftmaxWithLoss
from tricycle.nn.alpha_dropout import AlphaDropout, FeatureAlphaDropout
from tricycle.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from tricycle.nn.bilinear import Bilinear
from tricycle.nn.buffer import Buffer
from tricycle.nn.channel_dropout import Dropout1d, Dropout2d, Dropout3d
from tricycle.nn.containers import Identity, ModuleDict, ModuleList
from tricycle.nn.conv import Conv1d, Conv2d, Conv3d, Flatten
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from tricycle.nn.ctc import CTCLoss
from tricycle.nn.data_parallel import DataParallel
from tricycle.nn.distance_loss import TripletMarginWithDistanceLoss
from tricycle.nn.embedding_bag import EmbeddingBag
from tricycle.nn.fold import Fold, Unfold
from tricycle.nn.fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d
from tricycle.nn.group_norm import GroupNorm
from tricycle.nn.instance_norm import InstanceNorm1d, InstanceNorm2d
from tricycle.nn.layers3d import (
    AdaptiveAvgPool3d,
    AdaptiveMaxPool3d,
    ConvTranspose3d,
    InstanceNorm3d,
    LazyBatchNorm3d,
    LazyConv3d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    MaxUnpool3d,
)
from tricycle.nn.lazy import LazyLinear, UninitializedBuffer, UninitializedParameter
from tricycle.nn.lazy_conv import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyConv1d,
    LazyConv2d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
)
from tricycle.nn.likelihood_losses import GaussianNLLLoss, PoissonNLLLoss
from tricycle.nn.losses import (
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from tricycle.nn.lp_pooling import LPPool1d, LPPool2d, LPPool3d
from tricycle.nn.margin_losses import (
    HingeEmbeddingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from tricycle.nn.modules_rest import (
    Container,
    CrossMapLRN2d,
    LinearCrossEntropyLoss,
    LinearCrossEntropyOptions,
    NLLLoss2d,
)
from tricycle.nn.more_losses import (
    BCELoss,
    CosineEmbeddingLoss,
    CosineSimilarity,
    MarginRankingLoss,
    PairwiseDistance,
)
from tricycle.nn.multihead import MultiheadAttention
from tricycle.nn.norms_more import ChannelShuffle, LocalResponseNorm
from tricycle.nn.padding_layers import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from tricycle.nn.parameter_containers import ParameterDict, ParameterList
from tricycle.nn.pooling import AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from tricycle.nn.pooling3d import AvgPool3d, MaxPool3d
from tricycle.nn.recurrent import GRU, LSTM, RNN, RNNBase
from tricycle.nn.recurrent_cell_layers import GRUCell, LSTMCell, RNNCell, RNNCellBase
from tricycle.nn.reshapes import PixelShuffle, PixelUnshuffle, Unflatten
from tricycle.nn.shrinks import Hardshrink, RReLU, Softshrink
from tricycle.nn.softmaxes import LogSoftmax, Softmax, Softmax2d, Softmin
from tricycle.nn.sync_batch_norm import SyncBatchNorm
from tricycle.nn.torch_weights import from_torch, to_torch
from tricycle.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tricycle.nn.unpooling import MaxUnpool1d, MaxUnpool2d
from tricycle.nn.upsample import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

Module = Layer
Linear = Dense
GELU = GeLU

__all__ = [
    "GELU", "GLU", "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d",
    "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv1d",
    "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss", "Dense", "Dropout",
    "Embedding", "Flatten", "GeLU", "GroupNorm", "HuberLoss", "Identity", "InstanceNorm1d",
    "InstanceNorm2d", "KLDivLoss", "L1Loss", "Layer", "LayerNorm", "LeakyReLU", "Linear",
    "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d", "Module", "ModuleDict", "ModuleList",
    "MultiheadAttention", "NLLLoss", "Parameter", "RMSNorm", "ReLU", "Sequential", "SiLU",
    "Sigmoid", "SmoothL1Loss", "Softmax", "SwiGLU", "Swish", "Tanh", "Upsample",
    "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "from_torch", "functional", "init", "parallel", "to_torch", "utils",
    # more activations (tricycle.nn.activations)
    "CELU", "ELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "PReLU", "ReLU6",
    "SELU", "Softmax2d", "Softmin", "Softplus", "Softsign", "Tanhshrink", "Threshold",
    # more losses, similarities and distances (tricycle.nn.more_losses)
    "BCELoss", "CosineEmbeddingLoss", "CosineSimilarity", "MarginRankingLoss",
    "PairwiseDistance",
    # margin and likelihood losses, CTC (tricycle.nn.margin_losses, likelihood_losses, ctc)
    "CTCLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss",
    "TripletMarginLoss",
    # padding, reshaping, parameter containers, Bilinear, Fold (tricycle.nn.padding_layers, ...)
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "Unflatten",
    "PixelShuffle", "PixelUnshuffle", "ParameterDict", "ParameterList", "Bilinear", "Fold",
    "Unfold",
    # vision and lazy layers (tricycle.nn.adaptive_max_pooling, unpooling, embedding_bag, lazy)
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "EmbeddingBag", "LazyLinear", "MaxUnpool1d",
    "MaxUnpool2d", "UninitializedParameter",
    # lazy convolutions and batch norms (tricycle.nn.lazy_conv)
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "UninitializedBuffer",
    # channel-wise dropout (tricycle.nn.channel_dropout)
    "Dropout1d", "Dropout2d", "Dropout3d",
    # torch's Transformer family (tricycle.nn.transformer)
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer",
    # torch's global module hooks (torch.nn.modules.module's: tricycle.nn.modules.module too)
    "modules", "register_module_forward_hook", "register_module_forward_pre_hook",
    "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
    # torch's DataParallel, on one device (tricycle.nn.data_parallel)
    "DataParallel",
    # 3-D convolution, batch norm and pooling; power-average pooling (tricycle.nn.pooling3d, ...)
    "AvgPool3d", "BatchNorm3d", "Conv3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool3d",
    # 3-D layers, shrinks, alpha dropout, LRN, Buffer (tricycle.nn.layers3d, shrinks, ...)
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AlphaDropout", "Buffer", "ChannelShuffle",
    "ConvTranspose3d", "FeatureAlphaDropout", "Hardshrink", "InstanceNorm3d", "LazyBatchNorm3d",
    "LazyConv3d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LocalResponseNorm", "MaxUnpool3d", "RReLU", "Softshrink",
    "TripletMarginWithDistanceLoss",
    # SyncBatchNorm, the adaptive softmax, fractional max pooling (tricycle.nn.sync_batch_norm, ...)
    "AdaptiveLogSoftmaxWithLoss", "FractionalMaxPool2d", "FractionalMaxPool3d", "SyncBatchNorm",
    # the recurrent bases, deprecated and legacy modules (tricycle.nn.recurrent, modules_rest)
    "Container", "CrossMapLRN2d", "LinearCrossEntropyLoss", "NLLLoss2d", "RNNBase", "RNNCellBase",
    "LinearCrossEntropyOptions",
]  # fmt: skip
