"""Convolutions and batch norms whose channels are read from their first input, as PyTorch's
lazy modules: ``nn.LazyConv2d(out_channels, kernel_size)`` is a ``Conv2d`` whose
``in_channels`` is the channel axis of the first input it sees (axis 1, or 0 unbatched);
``nn.LazyConvTranspose1d/2d`` likewise, and ``nn.LazyBatchNorm1d/2d`` read ``num_features``.

As ``nn.LazyLinear`` (``tricycle.nn.lazy``): until the first call the parameters are
``UninitializedParameter``s (batch norm's running statistics ``UninitializedBuffer``s), which
``parameters()`` lists and ``to_gpu`` or ``double()`` give the device and dtype they will be
made in. The layer is built once with a stand-in channel count, so that every argument is
checked when it is made, as the concrete layer checks it; the first call builds the concrete
layer (``cls_to_become``) for the channels it reads, and the lazy layer becomes it in place:
its uninitialised tensors take the new layer's values (the same objects, so an optimizer
built before the first call holds them), its other attributes the new layer's, its class the
concrete one. The values are initialised as the concrete layer's are.
"""

from collections.abc import Callable

from tricycle import checks
from tricycle.layers import Layer
from tricycle.module import Parameter
from tricycle.nn.batch_norm import BatchNorm1d, BatchNorm2d
from tricycle.nn.conv import Conv1d, Conv2d
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from tricycle.nn.lazy import UninitializedBuffer, UninitializedParameter
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d",
    "LazyConvTranspose2d",
]  # fmt: skip


class _Lazy(Layer):
    """What the lazy layers share: ``uninitialise`` after the stand-in build, and a first
    ``forward`` that builds the concrete layer for the input and becomes it."""

    cls_to_become: type = Layer
    size_name = ""  # the attribute the first input gives: "in_channels", "num_features"

    def uninitialise(self, arguments: dict, tensors) -> None:
        """Keep ``arguments`` (all of the concrete layer's but the size) for the first call;
        the size 0 until then, and each of the attributes ``tensors`` that is set an
        uninitialised parameter (or buffer, if it needs no gradient) of its name."""
        self.lazy_arguments, self.lazy_tensors = arguments, tuple(tensors)
        setattr(self, self.size_name, 0)
        for name in tensors:
            made = getattr(self, name)
            if made is not None:
                tensor = UninitializedParameter() if made.requires_grad else UninitializedBuffer()
                tensor.name = made.name
                setattr(self, name, tensor)

    def read_size(self, x: Tensor) -> int:
        """The size the input gives (its channels), or a ValueError."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """Build the concrete layer for x's channels, become it, and run it on x."""
        x = as_tensor(x)
        made = self.cls_to_become(self.read_size(x), **self.lazy_arguments)
        # tensors a load_state_dict made before this call: kept, if they fit the input
        loaded = {n for n in self.lazy_tensors if type(vars(self)[n]) in (Parameter, Tensor)}
        for name in loaded:
            shape = vars(self)[name].shape
            if shape != vars(made)[name].shape:
                raise ValueError(f"{type(self).__name__}: the loaded {name} {shape} does not "
                                 f"fit the input's channels (shape {x.shape})")  # fmt: skip
        del self.lazy_arguments, self.lazy_tensors
        for name, value in vars(made).items():
            held = vars(self).get(name)
            if isinstance(held, UninitializedParameter):  # in place: whoever holds it keeps it
                held.materialize(value.shape, value.array)
            elif name not in loaded:
                setattr(self, name, value)
        self.__class__ = self.cls_to_become
        return self.forward(x)

    def _channels(self, x: Tensor, axis: int, groups: int) -> int:
        """x's size along ``axis`` (the channels), at least 1 and divisible by ``groups``."""
        channels = x.shape[axis]
        if channels < 1 or channels % groups:
            raise ValueError(
                f"{type(self).__name__}: the input's channels (axis {axis} of shape {x.shape}) "
                f"must be at least 1 and divisible by groups={groups}, got {channels}"
            )
        return channels


class _LazyConvolution(_Lazy):
    """The lazy convolutions and their transposes: ``in_channels`` from axis 1 of a batched
    input (N, C, *size) or axis 0 of an unbatched one (C, *size)."""

    size_name = "in_channels"

    def build(self, arguments: dict) -> None:
        """Build the concrete layer's stand-in (``groups`` input channels, no initialiser: it
        checks every argument as the concrete layer does), then ``uninitialise``."""
        out_channels, groups = arguments["out_channels"], arguments["groups"]
        if out_channels % groups:  # (the stand-in's message would name its in_channels too)
            raise ValueError(
                f"{type(self).__name__}: out_channels={out_channels} must be divisible by "
                f"groups={groups}"
            )
        stand_in = dict(arguments, initialiser=None) if "initialiser" in arguments else arguments
        self.cls_to_become.__init__(self, groups, **stand_in)
        self.uninitialise(arguments, ("weights", "bias"))

    def read_size(self, x: Tensor) -> int:
        n = self.n_dims
        if x.ndim not in (n + 1, n + 2):
            axes = "length" if n == 1 else "height, width"
            raise ValueError(
                f"{type(self).__name__}: expected input (batch, channels, {axes}) or unbatched "
                f"(channels, {axes}), whose channels give in_channels, got shape {x.shape}"
            )
        return self._channels(x, x.ndim - n - 1, self.groups)


class _LazyConv(_LazyConvolution):
    @checks.arguments(  # (groups before the stand-in takes it for its in_channels)
        out_channels=checks.positive_int,
        groups=checks.positive_int,
        initialiser=checks.optional(checks.function),
    )
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        initialiser: Callable | None = None,
    ):
        arguments = dict(
            out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
            dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode,
            initialiser=initialiser,
        )  # fmt: skip
        self.build(arguments)


class _LazyConvTranspose(_LazyConvolution):
    @checks.arguments(out_channels=checks.positive_int, groups=checks.positive_int)
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
    ):
        arguments = dict(
            out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
            output_padding=output_padding, groups=groups, bias=bias, dilation=dilation,
            padding_mode=padding_mode,
        )  # fmt: skip
        self.build(arguments)


class LazyConv1d(_LazyConv, Conv1d):
    """``nn.Conv1d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConv1d(out_channels, kernel_size, stride, padding, dilation, groups, bias,
    padding_mode)``: after the first call a ``Conv1d``."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """``nn.Conv2d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConv2d``: after the first call a ``Conv2d``."""

    cls_to_become = Conv2d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """``nn.ConvTranspose1d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConvTranspose1d(out_channels, kernel_size, stride, padding,
    output_padding, groups, bias, dilation)``: after the first call a ``ConvTranspose1d``."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """``nn.ConvTranspose2d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConvTranspose2d``: after the first call a ``ConvTranspose2d``."""

    cls_to_become = ConvTranspose2d


class _LazyBatchNorm(_Lazy):
    """The lazy batch norms: ``num_features`` from axis 1 of the input; ``gamma``, ``beta``
    uninitialised parameters and the running statistics uninitialised buffers until then."""

    size_name = "num_features"

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        arguments = dict(
            eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats
        )
        self.cls_to_become.__init__(self, 1, **arguments)  # the stand-in checks them all
        statistics = ("running_mean", "running_var") if track_running_stats else ()
        self.uninitialise(arguments, ("gamma", "beta") + statistics)

    def read_size(self, x: Tensor) -> int:
        if x.ndim not in self.n_dims:
            raise ValueError(
                f"{type(self).__name__}: expected input (batch, channels, ...) with "
                f"{' or '.join(map(str, self.n_dims))} dimensions, whose channels give "
                f"num_features, got shape {x.shape}"
            )
        return self._channels(x, 1, 1)


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """``nn.BatchNorm1d`` whose ``num_features`` is read from its first input (N, C) or
    (N, C, L), as ``torch.nn.LazyBatchNorm1d(eps, momentum, affine, track_running_stats)``:
    after the first call a ``BatchNorm1d``."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """``nn.BatchNorm2d`` whose ``num_features`` is read from its first input (N, C, H, W),
    as ``torch.nn.LazyBatchNorm2d``: after the first call a ``BatchNorm2d``."""

    cls_to_become = BatchNorm2d
