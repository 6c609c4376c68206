"""Data parallelism: ``distributed`` (the world of processes over MPI and NCCL, gradient
buckets reduced during backward) and ``zero`` (ZeRO-1: AdamW's state sharded over ranks)."""
