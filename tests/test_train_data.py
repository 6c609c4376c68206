"""The data stage of ``tricycle-train``: ``tricycle_datasets.run_data.load``, one call that gives
a run its corpus, the HellaSwag examples and the samples' prompt, all in the run's tokens, and
refuses data other than a resumed run's."""

import numpy as np
import pytest

from tests.helpers import DATA_DIR
from tests.test_hellaswag import write_hellaswag_file
from tricycle.apps import corpora
from tricycle.configs import DebugConfig
from tricycle_datasets.hellaswag import read_examples, render
from tricycle_datasets.run_data import RunDataError, load, load_data, opening_line

SETTINGS = {"dataset": "shakespeare-char", "data_order": "random", "seed": 0, "max_bytes": 0}


def config():
    return DebugConfig(vocab_size=128)


def test_load_is_load_data_with_what_the_run_reads_beside_it(tmp_path):
    path = write_hellaswag_file(tmp_path / "hellaswag.jsonl")
    plain = load_data(SETTINGS, config(), DATA_DIR)
    data = load(SETTINGS, config(), DATA_DIR, hellaswag=path, hellaswag_limit=2, sampling=True)
    np.testing.assert_array_equal(data.train, plain.train)
    np.testing.assert_array_equal(data.valid, plain.valid)
    assert data.identity == plain.identity and data.first_line == plain.first_line
    # the examples, rendered in the run's tokens as the HellaSwag hook scores them
    examples = read_examples(path, 2)
    assert len(data.hellaswag) == 2
    for (rows, n_context, label), example in zip(data.hellaswag, examples):
        want_rows, want_context = render(data.tokeniser, example)
        assert n_context == want_context and label == example.label
        for row, want in zip(rows, want_rows, strict=True):
            np.testing.assert_array_equal(row, want)
    assert data.prompt == data.first_line  # no --sample-prompt: the validation's first line
    assert data.first_line.strip() and data.first_line.endswith("\n")  # not a blank one


def test_the_default_prompt_is_the_first_line_that_is_not_blank():
    assert opening_line("\n  \nROMEO:\nBut soft") == "ROMEO:\n"
    assert opening_line("x = 1\ny") == "x = 1\n"
    assert opening_line("\n\n") == "\n"  # none: a newline, as before
    assert load(SETTINGS, config(), DATA_DIR).prompt is None  # no samples: no prompt


def test_load_refuses_other_data_a_bad_prompt_and_a_missing_file(tmp_path):
    identity = load_data(SETTINGS, config(), DATA_DIR).identity
    load(SETTINGS, config(), DATA_DIR, recorded=identity)  # the same data pass
    other = {"data_sha256": "0" * 64}
    with pytest.raises(RunDataError, match="--resume: the data of --dataset shakespeare-char are "
                       "not those the run trained on: data_sha256 "):  # fmt: skip
        load(SETTINGS, config(), DATA_DIR, recorded=other)
    with pytest.raises(RunDataError, match="--sample-prompt: "):  # no such character
        load(SETTINGS, config(), DATA_DIR, sampling=True, prompt="\u2603")
    assert load(SETTINGS, config(), DATA_DIR, prompt="\u2603").prompt is None  # not sampling
    with pytest.raises(RunDataError, match="--eval-hellaswag .*missing.jsonl: "):
        load(SETTINGS, config(), DATA_DIR, hellaswag=tmp_path / "missing.jsonl")


def test_the_data_decide_the_vocabulary_unless_it_is_given():
    """A character set fixes the ids: the model's vocabulary becomes theirs, rounded up to a
    multiple of 64, unless given (then it must hold them)."""
    decided = config()
    data = load(SETTINGS, decided, DATA_DIR, vocab_size_given=False)
    n_ids = data.tokeniser.n_tokens
    assert decided.vocab_size == -(-n_ids // 64) * 64 and decided.vocab_size >= n_ids
    given = DebugConfig(vocab_size=n_ids - 1)
    with pytest.raises(ValueError, match=f"its tokeniser has {n_ids} ids, more than --vocab-size"):
        load(SETTINGS, given, DATA_DIR)


def test_the_applications_still_name_the_corpora_functions():
    assert corpora.load is load and corpora.load_data is load_data
