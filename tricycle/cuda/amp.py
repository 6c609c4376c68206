"""torch.cuda.amp, the older names of torch.amp's on "cuda", which nanoGPT's train.py and many
tutorials use (``from torch.cuda.amp import GradScaler, autocast``): ``GradScaler`` is
``tricycle.amp.GradScaler("cuda", ...)`` and ``autocast`` is ``tricycle.amp.autocast("cuda",
...)``, float16 by default. Without a GPU both warn and disable themselves, as torch's, so
``GradScaler(enabled=(dtype == 'float16'))`` is a no-op on the CPU. ``custom_fwd`` and
``custom_bwd`` are ``tricycle.amp``'s on "cuda" (``tricycle.amp_custom``), deprecated as
torch's: they warn (FutureWarning) first."""

import warnings

import numpy as np

from tricycle import amp as tricycle_amp
from tricycle import amp_custom, amp_scaler


class GradScaler(amp_scaler.GradScaler):
    """torch.cuda.amp.GradScaler: ``tricycle.amp.GradScaler("cuda", ...)``."""

    _stacklevel = 3  # past this __init__ to the user's line

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True):  # fmt: skip
        super().__init__("cuda", init_scale, growth_factor, backoff_factor,
                         growth_interval, enabled)  # fmt: skip


class autocast(tricycle_amp.autocast):  # noqa: N801 - torch's name
    """torch.cuda.amp.autocast: ``tricycle.amp.autocast("cuda", ...)``, float16 by default."""

    _stacklevel = 3  # past this __init__ to the user's line

    def __init__(self, enabled: bool = True, dtype=np.float16, cache_enabled: bool = True):
        super().__init__("cuda", dtype, enabled, cache_enabled)


def _deprecated(name: str) -> str:
    return (f"`torch.cuda.amp.{name}(args...)` is deprecated. Please use "
            f"`torch.amp.{name}(args..., device_type='cuda')` instead.")  # fmt: skip


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: warns, then ``tricycle.amp.custom_fwd(device_type="cuda")``."""
    warnings.warn(_deprecated("custom_fwd"), FutureWarning, stacklevel=2)
    return amp_custom.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """torch.cuda.amp.custom_bwd: warns, then ``tricycle.amp.custom_bwd(device_type="cuda")``."""
    warnings.warn(_deprecated("custom_bwd"), FutureWarning, stacklevel=2)
    return amp_custom.custom_bwd(bwd, device_type="cuda")
