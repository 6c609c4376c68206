"""The data a training run reads: ``tricycle_datasets.run_data`` (``load``, one call for all of
it), under the name it had in the applications."""

from tricycle_datasets.run_data import (
    DATASETS,
    RunDataError,
    TrainingData,
    data_differences,
    data_sha256,
    load,
    load_corpus,
    load_data,
    load_shards,
    padded_vocab_size,
    retokenise,
    tokeniser_text,
    vocab_from_data,
)

__all__ = [
    "DATASETS",
    "RunDataError",
    "TrainingData",
    "data_differences",
    "data_sha256",
    "load",
    "load_corpus",
    "load_data",
    "load_shards",
    "padded_vocab_size",
    "retokenise",
    "tokeniser_text",
    "vocab_from_data",
]
