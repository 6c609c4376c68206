"""A small U-Net (Ronneberger et al., 2015) as DDPM's noise predictor eps_theta(x_t, t).

The image goes down through levels of halving resolution and comes back up; at each level on
the way up, the features of the same level on the way down are concatenated (the skip
connections), so fine detail need not pass through the coarse middle. Every level holds a
residual block in which the step's embedding is added to the features::

    x (N, C_in, H, W) -> Conv 3x3                                        # (N, c_0, H, W)
      down, level l:   ResidualBlock(-> c_l) --------------------- skip_l
                       Conv 3x3 stride 2 (not on the last level)  # half the resolution
      middle:          ResidualBlock(c_L -> c_L)
      up, level l:     ResidualBlock(concat(h, skip_l) -> c_l)
                       nearest upsample x 2 (not on level 0)     # double the resolution
    -> GroupNorm -> SiLU -> Conv 3x3                                     # (N, C_in, H, W)

    ResidualBlock(x, e):  h = Conv(SiLU(GroupNorm(x)))
                          h = h + Dense(SiLU(e))[:, :, None, None]     # the step, per channel
                          h = Conv(SiLU(GroupNorm(h)))
                          return skip(x) + h        # skip: 1x1 conv when channels change

The step's embedding e is the sinusoidal ``timestep_embedding`` of t through a two-layer MLP.
"""

from tricycle import checks, ops
from tricycle.activation import SiLU
from tricycle.layers import Dense, Layer, Sequential
from tricycle.nn.conv import Conv2d
from tricycle.nn.diffusion import timestep_embedding
from tricycle.nn.group_norm import GroupNorm
from tricycle.nn.upsample import upsample_nearest
from tricycle.tensor import Tensor

__all__ = ["ResidualBlock", "UNet"]


class ResidualBlock(Layer):
    """Two 3x3 convolutions, each after GroupNorm and SiLU, with the step's embedding
    (N, time_dim) added per channel between them, around a skip connection (a 1x1 conv when
    ``in_channels != out_channels``): (N, in, H, W), (N, time_dim) -> (N, out, H, W)."""

    @checks.arguments(
        in_channels=checks.positive_int,
        out_channels=checks.positive_int,
        time_dim=checks.positive_int,
        num_groups=checks.positive_int,
    )
    def __init__(self, in_channels: int, out_channels: int, time_dim: int, num_groups: int = 8):
        self.in_channels, self.out_channels = in_channels, out_channels
        self.norm1 = GroupNorm(num_groups, in_channels)
        self.conv1 = Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_projection = Dense(time_dim, out_channels)
        self.norm2 = GroupNorm(num_groups, out_channels)
        self.conv2 = Conv2d(out_channels, out_channels, 3, padding=1)
        self.skip = Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None
        self.silu = SiLU()

    def forward(self, x: Tensor, time: Tensor) -> Tensor:
        h = self.conv1(self.silu(self.norm1(x)))  # (N, out, H, W)
        shift = self.time_projection(self.silu(time))  # (N, out)
        h = h + ops.reshape(shift, shift.shape + (1, 1))
        h = self.conv2(self.silu(self.norm2(h)))
        return (x if self.skip is None else self.skip(x)) + h

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}"


class UNet(Layer):
    """The U-Net of the module docstring: ``channels`` (c_0, ..., c_L) per level (the input's
    height and width must divide by 2^L), GroupNorm in ``num_groups`` groups throughout.
    ``model(x, t)`` takes images x (N, in_channels, H, W) and integer steps t (N,) and returns
    a tensor shaped as x (the predicted noise)."""

    @checks.arguments(
        in_channels=checks.positive_int,
        time_dim=checks.optional(checks.positive_int),
        num_groups=checks.positive_int,
    )
    def __init__(
        self,
        in_channels: int = 1,
        channels: tuple[int, ...] = (32, 64),
        time_dim: int | None = None,
        num_groups: int = 8,
    ):
        channels = tuple(channels)
        if not channels or not all(checks.is_integer(c) and c > 0 for c in channels):
            raise ValueError(f"UNet: channels must be positive integers, got {channels}")
        self.in_channels, self.channels = in_channels, channels
        self.embedding_dim = channels[0]
        time_dim = time_dim or 4 * channels[0]
        self.time_mlp = Sequential(
            Dense(self.embedding_dim, time_dim), SiLU(), Dense(time_dim, time_dim)
        )
        self.conv_in = Conv2d(in_channels, channels[0], 3, padding=1)
        previous = (channels[0],) + channels[:-1]
        self.down = [
            ResidualBlock(c_in, c, time_dim, num_groups) for c_in, c in zip(previous, channels)
        ]
        self.downsample = [Conv2d(c, c, 3, stride=2, padding=1) for c in channels[:-1]]
        self.middle = ResidualBlock(channels[-1], channels[-1], time_dim, num_groups)
        below = channels[1:] + (channels[-1],)  # the channels coming up into each level
        self.up = [ResidualBlock(b + c, c, time_dim, num_groups) for b, c in zip(below, channels)]
        self.norm_out = GroupNorm(num_groups, channels[0])
        self.conv_out = Conv2d(channels[0], in_channels, 3, padding=1)
        self.silu = SiLU()

    def forward(self, x: Tensor, t) -> Tensor:
        levels = len(self.channels)
        if (
            x.ndim != 4
            or x.shape[1] != self.in_channels
            or any(n % 2 ** (levels - 1) for n in x.shape[2:])
        ):
            raise ValueError(
                f"UNet: expected images (batch, {self.in_channels}, H, W) with H and W "
                f"divisible by {2 ** (levels - 1)}, got shape {x.shape}"
            )
        t = x.xp.asarray(t.array if isinstance(t, Tensor) else t)  # on x's device
        time = self.time_mlp(timestep_embedding(t, self.embedding_dim, dtype=x.dtype))  # (N, D)
        h, skips = self.conv_in(x), []
        for level in range(levels):
            h = self.down[level](h, time)
            skips.append(h)
            if level < levels - 1:
                h = self.downsample[level](h)
        h = self.middle(h, time)
        for level in reversed(range(levels)):
            h = self.up[level](ops.concatenate([h, skips[level]], axis=1), time)
            if level > 0:
                h = upsample_nearest(h, 2)
        return self.conv_out(self.silu(self.norm_out(h)))

    def extra_repr(self) -> str:
        return f"in_channels={self.in_channels}, channels={self.channels}"
