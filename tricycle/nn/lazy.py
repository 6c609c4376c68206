"""Layers whose input size is read from their first input, as PyTorch's lazy modules:
``nn.LazyLinear(out_features)`` is a ``Linear`` whose ``in_features`` is the last axis of
the first input it sees.

Until that first call its parameters are ``UninitializedParameter``s: Parameters holding an
empty array, so that ``parameters()`` lists them (as torch's does), ``to_gpu`` or ``double()``
set the device and dtype they will be made on, and printing or walking the model works. An op
on one raises a ValueError that says to call the layer first (torch's says the same); its
``data`` is an empty tensor, as torch's, so that an in-place initialisation written before the
first call (``layer.weight.data.normal_()``) runs and changes nothing. The
first call makes them in place: the same objects, now ``Parameter``s of shape (in, out) and
(out,), initialised as ``nn.Linear``'s, and the layer becomes a ``Dense`` (``nn.Linear``), as
torch's becomes a ``Linear``. ``UninitializedBuffer`` is the same for a buffer (no gradient),
which becomes a plain Tensor: the running statistics of ``tricycle.nn.lazy_conv``'s lazy
batch norms, beside its lazy convolutions.

Because the parameters are made in place, an optimizer built before the first call holds
them and updates them afterwards, as torch's does (torch's documentation still advises a
first call, a "dry run", before building the optimizer: then every parameter has its shape,
as the optimizer's settings per parameter may need).
"""

from collections.abc import Callable

import numpy as np

from tricycle import backend, checks
from tricycle.initialisers import init_xavier, init_zeros
from tricycle.layers import Dense
from tricycle.module import Parameter
from tricycle.tensor import Tensor, as_tensor

__all__ = ["LazyLinear", "UninitializedBuffer", "UninitializedParameter"]


class UninitializedParameter(Parameter):
    """torch's ``nn.UninitializedParameter``: a parameter whose shape is not known yet,
    holding an empty array (in the dtype and on the device it will be made in) until
    ``materialize`` makes it a ``Parameter`` of a given shape, in place."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, dtype=None):
        empty = np.zeros((0,), dtype=dtype or backend.DEFAULT_FLOAT)
        super().__init__(empty, requires_grad=requires_grad)

    def materialize(self, shape, values=None) -> Parameter:
        """Become, in place, a ``Parameter`` of ``shape``: ``values`` (an array of that shape,
        e.g. an initialiser's), or zeros, in this parameter's dtype and on its device."""
        shape = tuple(shape)
        values = np.zeros(shape) if values is None else backend.to_host_array(values)
        if values.shape != shape:
            raise ValueError(f"UninitializedParameter.materialize: values {values.shape} do "
                             f"not have the shape {shape}")  # fmt: skip
        device = self.array.device.id if self.on_gpu else None
        self.array = backend.move(values.astype(self.dtype), device)
        self.__class__ = Parameter  # the same object: whoever holds it holds the Parameter
        return self

    def new(self, *args, **kwargs):
        """An op on this parameter: a ValueError, since its shape is not known yet."""
        raise ValueError(
            "Attempted to use an uninitialized parameter (of a lazy layer such as "
            "nn.LazyLinear) in an op: call the layer on an input first (a dry run), which "
            "gives the parameter its shape"
        )

    @property
    def data(self) -> Tensor:
        """torch's: an empty tensor off the graph, the values being not made yet; so an
        in-place initialisation written before the first call (``layer.weight.data.normal_(0,
        0.01)``, as "Dive into Deep Learning"'s ``LinearRegression``) does nothing, as in
        torch, and the first call initialises the parameter."""
        return Tensor(self.array, requires_grad=False)

    @data.setter
    def data(self, values):
        Parameter.data.fset(self, values)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or ''} (dtype {self.dtype})>"


class UninitializedBuffer(UninitializedParameter):
    """torch's ``nn.UninitializedBuffer``: a buffer (a Tensor without gradient, such as batch
    norm's running statistics) whose shape is not known yet; ``materialize`` makes it, in
    place, a plain ``Tensor`` of that shape, as the layer it belongs to holds its buffers."""

    __slots__ = ()
    is_buffer = True

    def __init__(self, dtype=None):
        super().__init__(requires_grad=False, dtype=dtype)

    def materialize(self, shape, values=None) -> Tensor:
        """Become, in place, a ``Tensor`` of ``shape`` (``UninitializedParameter``'s)."""
        super().materialize(shape, values)
        self.__class__ = Tensor
        return self


class LazyLinear(Dense):
    """``nn.Linear`` whose ``in_features`` is the last axis of its first input, as
    ``torch.nn.LazyLinear(out_features, bias=True)``: until then ``weights`` and ``bias`` are
    ``UninitializedParameter``s; at the first call they become (in_features, out_features) and
    (out_features,) ``Parameter``s, initialised as ``Dense``'s (``initialiser``, by default
    Glorot uniform, and zeros), and the layer a ``Dense``."""

    cls_to_become = Dense

    @checks.arguments(
        out_features=checks.positive_int,
        bias=checks.boolean,
        initialiser=checks.optional(checks.function),
        name=checks.optional(checks.text),
    )
    def __init__(
        self,
        out_features: int,
        bias: bool = True,
        initialiser: Callable | None = None,
        name: str | None = None,
    ):
        self.from_size, self.to_size = 0, out_features  # in_features: 0 until the first call
        self.name, self.initialiser = name, initialiser
        self.weights = UninitializedParameter()
        self.weights.name = "weights"
        self.bias = UninitializedParameter() if bias else None
        if bias:
            self.bias.name = "bias"

    def forward(self, x: Tensor) -> Tensor:
        x = as_tensor(x)
        if x.ndim == 0 or x.shape[-1] == 0:
            raise ValueError(f"LazyLinear(-> {self.to_size}): expected an input whose last axis "
                             f"gives in_features (at least 1), got shape {x.shape}")  # fmt: skip
        self.from_size = x.shape[-1]
        shape = (self.from_size, self.to_size)
        if isinstance(self.weights, UninitializedParameter):
            self.weights.materialize(shape, (self.initialiser or init_xavier)(shape))
        elif self.weights.shape != shape:  # made by load_state_dict: it must fit the input
            raise ValueError(f"LazyLinear(-> {self.to_size}): loaded weights {self.weights.shape} "
                             f"do not fit an input of shape {x.shape}")  # fmt: skip
        if isinstance(self.bias, UninitializedParameter):
            self.bias.materialize((self.to_size,), init_zeros((self.to_size,)))
        del self.initialiser
        self.__class__ = self.cls_to_become  # from now on a Dense
        return self.forward(x)

    def extra_repr(self) -> str:
        """torch's: in_features is 0 until the first call."""
        return f"in_features=0, out_features={self.to_size}, bias={self.bias is not None}"
