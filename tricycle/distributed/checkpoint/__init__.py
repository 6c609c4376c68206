"""``torch.distributed.checkpoint``: ``save``, ``load`` and their storage settings
(``tricycle.parallel.checkpoint_sharded``'s); ``.state_dict`` holds ``get_state_dict`` and
its kin."""

from tricycle.parallel.checkpoint_sharded import (
    CheckpointException,
    FileSystemReader,
    FileSystemWriter,
    load,
    save,
)

__all__ = ["CheckpointException", "FileSystemReader", "FileSystemWriter", "load", "save"]


def __getattr__(name: str):
    """``state_dict``, imported on first use, as torch's submodule is reached."""
    if name == "state_dict":
        import tricycle.distributed.checkpoint.state_dict  # noqa: PLC0415

        return tricycle.distributed.checkpoint.state_dict
    raise AttributeError(f"module 'tricycle.distributed.checkpoint' has no attribute {name!r}")
