"""torch.backends.mkldnn's switches, for a script that sets them: tricycle calls no oneDNN
(MKL-DNN): its host kernels are numpy's (BLAS) and numba's, so ``is_available()`` is False
and the switches hold what a script sets, changing nothing that tricycle computes. Their
defaults are torch's (``enabled`` True, ``deterministic`` False, ``allow_tf32`` False)."""

import contextlib

VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2  # torch's levels

enabled = True
deterministic = False
allow_tf32 = False
fp32_precision = "none"


def is_available() -> bool:
    """torch.backends.mkldnn.is_available: False, tricycle calls no oneDNN."""
    return False


def is_acl_available() -> bool:
    """torch.backends.mkldnn.is_acl_available: False (no oneDNN, so no Arm Compute Library)."""
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the switches given (None keeps one); returns the previous four, as torch's."""
    global enabled, deterministic, allow_tf32, fp32_precision
    before = (enabled, deterministic, allow_tf32, fp32_precision)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _allow_tf32 is not None:
        allow_tf32 = bool(_allow_tf32)
    if _fp32_precision is not None:
        fp32_precision = _fp32_precision
    return before


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """The switches set inside the block and restored after it (torch's defaults: oneDNN off
    inside, as torch's)."""
    before = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*before)


class verbose:
    """torch.backends.mkldnn.verbose(level): oneDNN's kernel log for a block; tricycle has no
    oneDNN kernels, so the block logs nothing."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return None if self.level == VERBOSE_OFF else self

    def __exit__(self, *exc) -> bool:
        return False
