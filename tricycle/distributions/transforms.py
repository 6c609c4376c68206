"""torch's ``torch.distributions.transforms``: every transform by its name: the base
(``transform``: ``Transform``, ``ComposeTransform``), the elementwise ones
(``transforms_elementwise``: ``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``,
``TanhTransform``, ``SoftplusTransform``, ``PowerTransform``, ``AbsTransform``) and those over
the last axes (``transforms_shaped``: ``SoftmaxTransform``, ``StickBreakingTransform``,
``LowerCholeskyTransform``, ``IndependentTransform``, ``ReshapeTransform``). ``CatTransform``
and ``StackTransform`` are not here."""

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
    "ComposeTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
