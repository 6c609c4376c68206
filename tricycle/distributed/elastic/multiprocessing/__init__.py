"""torch's ``torch.distributed.elastic.multiprocessing``: ``errors`` (``record``)."""
