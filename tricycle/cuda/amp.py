"""torch.cuda.amp, the older names of torch.amp's on "cuda", which nanoGPT's train.py and many
tutorials use (``from torch.cuda.amp import GradScaler, autocast``): ``GradScaler`` is
``tricycle.amp.GradScaler("cuda", ...)`` and ``autocast`` is ``tricycle.amp.autocast("cuda",
...)``, float16 by default. Without a GPU both warn and disable themselves, as torch's, so
``GradScaler(enabled=(dtype == 'float16'))`` is a no-op on the CPU."""

import numpy as np

from tricycle import amp as tricycle_amp
from tricycle import amp_scaler


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
