"""``torch.nn.modules.linear``'s names: ``Linear`` (tricycle's ``Dense``, weights (in, out)),
``Identity``, ``Bilinear`` and ``LazyLinear``. torch's ``NonDynamicallyQuantizableLinear``
(the class of its attention's output projection, listed in safe-globals lists) is ``Linear``:
tricycle has no quantisation to keep it from."""

from tricycle.layers import Dense
from tricycle.nn.bilinear import Bilinear
from tricycle.nn.containers import Identity
from tricycle.nn.lazy import LazyLinear

Linear = NonDynamicallyQuantizableLinear = Dense

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear"]
