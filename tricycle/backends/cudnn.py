"""torch.backends.cudnn's switches, for a script that sets them (``cudnn.benchmark = True``,
``cudnn.deterministic = True``): tricycle calls no cuDNN (its convolutions are einsums and
its own kernels), so the switches hold what a script sets and change nothing that tricycle
computes. Their defaults are torch's on a machine without cuDNN, where ``is_available()``
is False and ``version()`` is None, as here."""

enabled = True  # torch's: cuDNN used where it is available
benchmark = False  # torch's: autotune each convolution's algorithm on its first call
benchmark_limit = None  # torch's on a machine without cuDNN
deterministic = False  # torch's: pick only deterministic algorithms
allow_tf32 = True  # torch's: TF32 in cuDNN's convolutions (tricycle's is a precision policy)


def is_available() -> bool:
    """torch.backends.cudnn.is_available: False, tricycle calls no cuDNN."""
    return False


def version() -> None:
    """torch.backends.cudnn.version: None, as torch's where cuDNN is not available."""
    return None
