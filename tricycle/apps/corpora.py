"""The data a training run reads: ``tricycle_datasets.run_data``, under the name it had in
the applications."""

from tricycle_datasets.run_data import (  # noqa: F401 - the names importable here before
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
    vocab_from_data,
)
