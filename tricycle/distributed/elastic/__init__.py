"""torch's ``torch.distributed.elastic``: its ``multiprocessing.errors.record`` alone (the
launcher, ``tricycle-run``, restarts a failed job itself)."""
