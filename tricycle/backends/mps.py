"""torch.backends.mps's question, for a script that asks it (``elif
tricycle.backends.mps.is_available():``): tricycle has no Metal backend."""


def is_available() -> bool:
    """torch.backends.mps.is_available: False, tricycle runs on numpy (CPU) or CuPy (CUDA)."""
    return False


def is_built() -> bool:
    """torch.backends.mps.is_built: False, as ``is_available``."""
    return False
