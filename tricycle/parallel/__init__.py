"""Data parallelism: ``distributed`` (the world of processes over MPI and NCCL, gradient
buckets reduced during backward), ``zero`` (ZeRO-1: AdamW's state sharded over ranks) and
``torch_distributed`` (torch.distributed's calls and ``DistributedDataParallel`` on the
world, also ``tricycle.parallel.DistributedDataParallel``)."""


def __getattr__(name: str):
    """``DistributedDataParallel``, imported on first use (importing the package loads no
    engine)."""
    if name == "DistributedDataParallel":
        from tricycle.parallel.torch_distributed import DistributedDataParallel  # noqa: PLC0415

        return DistributedDataParallel
    raise AttributeError(f"module 'tricycle.parallel' has no attribute {name!r}")
