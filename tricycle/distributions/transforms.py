"""torch's ``torch.distributions.transforms``: every transform by its name: the base
(``transform``: ``Transform``, ``ComposeTransform``), the elementwise ones
(``transforms_elementwise``: ``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``,
``TanhTransform``, ``SoftplusTransform``, ``PowerTransform``, ``AbsTransform``) and those over
the last axes (``transforms_shaped``: ``SoftmaxTransform``, ``StickBreakingTransform``,
``LowerCholeskyTransform``, ``IndependentTransform``, ``ReshapeTransform``) and the rest
(``transforms_more``: ``CatTransform``, ``StackTransform``, ``CorrCholeskyTransform``,
``PositiveDefiniteTransform``, ``CumulativeDistributionTransform``)."""

from tricycle.distributions.transform import ComposeTransform, Transform, identity_transform
from tricycle.distributions.transforms_elementwise import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
)
from tricycle.distributions.transforms_more import (
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    PositiveDefiniteTransform,
    StackTransform,
)
from tricycle.distributions.transforms_shaped import (
    IndependentTransform,
    LowerCholeskyTransform,
    ReshapeTransform,
    SoftmaxTransform,
    StickBreakingTransform,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
