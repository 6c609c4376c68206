"""The data a training run reads, and what identifies it: the one call of ``tricycle-train``
into the corpora.

``load`` gives a run everything it reads: its corpus in its tokens (re-encoded by a
pretrained model's tokeniser for ``--init-from``), checked against the data a resumed run
recorded, the HellaSwag examples it is evaluated on and the prompt of its samples.
``load_data`` turns a run's ``dataset`` setting into a ``TrainingData``: one of the built-in
corpora (python-code, shakespeare, shakespeare-char), a UTF-8 text file, or a directory of
token shards made by ``python -m tricycle_datasets.prepare`` (memory-mapped, so larger than
memory). Its ``identity`` is recorded with the run, and ``data_differences`` compares it on
resume: a corpus by the hash of its tokeniser and token ids (``data_sha256``), a shard
directory by its index (the tokeniser's SHA-256, the inputs' fingerprint, the split sizes).
Errors are ValueErrors named after the settings of ``tricycle-train`` (``--dataset``,
``--vocab-size``, ``--data-order``); a ``RunDataError`` is one whose message is the whole line
(it names its flag).
"""

import dataclasses
import hashlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from tricycle.configs import GPTConfig
from tricycle_datasets import TextFile
from tricycle_datasets.hellaswag import read_examples, render_all
from tricycle_datasets.python_code import PythonCode
from tricycle_datasets.shakespeare import NotAvailable, Shakespeare, ShakespeareChar
from tricycle_datasets.shards import INDEX, ShardError, TokenShards, load_tokeniser, read_index

DATASETS = ("python-code", "shakespeare", "shakespeare-char")  # the built-in corpora

__all__ = [
    "DATASETS",
    "RunDataError",
    "TrainingData",
    "check_same_data",
    "data_differences",
    "data_sha256",
    "load",
    "load_corpus",
    "load_data",
    "load_shards",
    "padded_vocab_size",
    "retokenise",
    "sample_prompt",
    "tokeniser_text",
    "vocab_from_data",
]


class RunDataError(ValueError):
    """A run's data refused, in one line that names the flag (``--resume``,
    ``--eval-hellaswag``)."""


@dataclass
class TrainingData:
    """What a run trains on: its tokeniser and its file's text (``to_json()``: what the
    run records and hashes, serialised once); the splits for ``gpt_trainer`` (token
    ids, or shard loaders; ``valid`` None: no validation); what identifies the data (recorded,
    and compared on --resume); the number of training tokens; and the first line of the
    validation text (the samples' default prompt); the HellaSwag examples to evaluate on,
    rendered (``render_all``; None: none); the samples' prompt (None: no samples)."""

    tokeniser: Any
    tokeniser_file: str
    train: Any
    valid: Any
    identity: dict
    n_train_tokens: int
    first_line: str
    hellaswag: list | None = None
    prompt: str | None = None


def load(
    settings: dict,
    config: GPTConfig,
    data_dir=None,
    *,
    vocab_size_given: bool = True,
    tokeniser=None,
    recorded: dict | None = None,
    hellaswag=None,
    hellaswag_limit: int | None = None,
    sampling: bool = False,
    prompt: str | None = None,
) -> TrainingData:
    """Everything a run of ``settings`` and ``config`` reads, in its tokens, in one call: the
    corpus (``load_data``); with a pretrained ``tokeniser``, the corpus's text in its tokens
    (``retokenise``); with the identity ``recorded`` by a resumed run, refused unless the
    same data; with ``hellaswag`` (a JSONL file), its first ``hellaswag_limit`` examples
    rendered (``TrainingData.hellaswag``); with ``sampling``, the samples' prompt
    (``prompt``, else the validation text's first line), which the tokeniser must encode
    (``TrainingData.prompt``)."""
    if tokeniser is not None:  # the corpus's text as bytes (no merges to learn), re-encoded
        config, vocab_size_given = dataclasses.replace(config, vocab_size=256), True
    data = load_data(settings, config, data_dir, vocab_size_given)
    if tokeniser is not None:
        data = retokenise(data, tokeniser)
    if recorded is not None:
        check_same_data(data.identity, recorded, settings["dataset"])
    if hellaswag is not None:
        try:
            examples = read_examples(hellaswag, hellaswag_limit)
            data.hellaswag = render_all(data.tokeniser, examples)
        except (OSError, ValueError) as error:
            raise RunDataError(f"--eval-hellaswag {hellaswag}: {error}") from None
    if sampling:
        data.prompt = sample_prompt(data.tokeniser, prompt, data.first_line)
    return data


def sample_prompt(tokeniser, given: str | None, first_line: str) -> str:
    """The samples' prompt: ``given`` (--sample-prompt), else the validation text's
    ``first_line``; the tokeniser must encode it."""
    prompt = first_line if given is None else given
    try:
        tokeniser.encode(prompt)
    except ValueError as error:
        raise RunDataError(f"--sample-prompt: {error}") from None
    return prompt


def load_data(
    settings: dict, config: GPTConfig, data_dir=None, vocab_size_given: bool = True
) -> TrainingData:
    """The data of a run's ``settings`` (``dataset``, ``data_order``, ``seed``, ``max_bytes``):
    a shard directory (one with index.json) or a corpus (``load_corpus``). Where the data fix
    the vocabulary (a shard directory's tokeniser, a character set) and ``vocab_size_given``
    is False, ``config.vocab_size`` becomes theirs (``vocab_from_data``)."""
    dataset, order = settings["dataset"], settings["data_order"]
    if Path(dataset).is_dir() and (Path(dataset) / INDEX).is_file():
        return load_shards(Path(dataset), config, settings["seed"], order, vocab_size_given)
    if order != "random":
        raise ValueError(f"--data-order {order}: reading in order needs a directory of token "
                         "shards as --dataset (python -m tricycle_datasets.prepare)")  # fmt: skip
    corpus = load_corpus(dataset, config, settings["max_bytes"], data_dir, vocab_size_given)
    text = corpus.tokeniser.to_json()
    digest = data_sha256(corpus, text)
    valid_text = corpus.tokeniser.decode(corpus.valid_tokens[:200])
    return TrainingData(corpus.tokeniser, text, corpus.train_tokens, corpus.valid_tokens,
                        {"data_sha256": digest}, len(corpus.train_tokens),
                        opening_line(valid_text))  # fmt: skip


def load_shards(
    directory: Path, config: GPTConfig, seed: int, order: str, vocab_size_given: bool = True
) -> TrainingData:
    """A shard directory's data, identified by its index: the tokeniser's SHA-256 (checked
    against the file), the fingerprint of the inputs it was made from, and the split sizes.
    Its tokeniser's ids decide ``config.vocab_size`` unless ``vocab_size_given``."""
    try:
        index = read_index(directory)
        tokeniser = load_tokeniser(directory, index)
    except (ShardError, OSError, ValueError, KeyError) as error:
        raise ValueError(f"--dataset {directory}: {error}") from None
    vocab_from_data(config, tokeniser.n_tokens, vocab_size_given, f"--dataset {directory}")
    sizes = {name: sum(s["tokens"] for s in shards) for name, shards in index["splits"].items()}
    loader = partial(TokenShards, directory, vocab_size=config.vocab_size)
    train, valid = partial(loader, split="train", seed=seed, order=order), None
    if sizes["valid"] > config.context_window:
        valid = partial(loader, split="valid", seed=0)
    elif sizes["valid"] > 0:  # a split that was asked for, but cannot be evaluated
        raise ValueError(
            f"--dataset {directory}: its validation split has {sizes['valid']:,} tokens, fewer "
            f"than one window of --context-window {config.context_window:,} and its target: "
            "prepare the shards again with a larger --valid-fraction, or pass a "
            f"--context-window below {sizes['valid']:,}"
        )
    identity = {"tokeniser_sha256": index["tokeniser_sha256"],
                "inputs": index.get("settings", {}).get("inputs"),
                "train_tokens": sizes["train"], "valid_tokens": sizes["valid"]}  # fmt: skip
    first = "valid" if sizes["valid"] > 1 else "train"
    stream = TokenShards(directory, first, batch_size=1, context_window=1)
    text = tokeniser.decode(stream.read(np.array([0]), min(200, stream.n_tokens))[0])
    return TrainingData(tokeniser, tokeniser.to_json(), train, valid, identity,
                        sizes["train"], opening_line(text))  # fmt: skip


def opening_line(text: str) -> str:
    """The first line of ``text`` that is not blank, with its newline (the samples' default
    prompt: a validation text that opens with an empty line would prompt with nothing)."""
    line = next((line for line in text.split("\n") if line.strip()), "")
    return line + "\n"


def load_corpus(
    dataset: str, config: GPTConfig, max_bytes: int, data_dir=None, vocab_size_given=True
):
    """The tokenised corpus; for characters, the charset decides ``config.vocab_size`` unless
    ``vocab_size_given`` (``vocab_from_data``). ``data_dir`` (the Shakespeare datasets): where
    tinyshakespeare.txt is, for offline runs."""
    if dataset not in ("shakespeare-char",) and config.vocab_size < 256:
        raise ValueError(f"--vocab-size {config.vocab_size}: a BPE vocabulary needs >= 256 ids")
    if dataset == "python-code":
        return PythonCode(config.vocab_size, max_bytes=max_bytes)
    try:
        if dataset == "shakespeare":
            return Shakespeare(config.vocab_size, data_dir=data_dir)
        if dataset == "shakespeare-char":
            corpus = ShakespeareChar(data_dir=data_dir)
            vocab_from_data(config, corpus.vocab_size, vocab_size_given, f"--dataset {dataset}")
            return corpus
    except NotAvailable as error:  # the CLI's words: --data-dir, not the Python API's
        raise ValueError(f"--dataset {dataset}: {error.fix('--data-dir')}") from None
    if Path(dataset).is_file():
        return TextFile(dataset, config.vocab_size)
    if Path(dataset).is_dir():
        raise ValueError(
            f"--dataset {dataset}: a directory without {INDEX}, so not one of token shards "
            "(python -m tricycle_datasets.prepare makes them); name a text file inside it"
        )
    raise ValueError(f"--dataset {dataset!r}: no such file or directory, nor one of {DATASETS}")


def vocab_from_data(config: GPTConfig, n_ids: int, given: bool, what: str) -> None:
    """Data whose tokeniser is fixed (``n_ids`` ids: a shard directory's, a character set)
    decide the vocabulary: without a ``given`` vocab_size, ``config.vocab_size`` becomes
    ``n_ids`` rounded up to a multiple of 64 (as GPT-2's 50257 to 50304: the matmuls run
    faster, and sampling never draws the padding); a given one must hold every id."""
    if not given:
        config.vocab_size = padded_vocab_size(n_ids)
    elif config.vocab_size < n_ids:
        raise ValueError(
            f"{what}: its tokeniser has {n_ids:,} ids, more than --vocab-size "
            f"{config.vocab_size:,}: leave --vocab-size out (the model then takes "
            f"{padded_vocab_size(n_ids):,}, the ids rounded up to a multiple of 64) or pass "
            f"{n_ids:,} or more"
        )


def padded_vocab_size(n_ids: int, multiple: int = 64) -> int:
    """``n_ids`` rounded up to a multiple of ``multiple``."""
    return -(-n_ids // multiple) * multiple


def data_sha256(corpus, tokeniser_file: str) -> str:
    """A hash of what training reads: the tokeniser (its file's text) and the token ids of
    both splits."""
    digest = hashlib.sha256(tokeniser_file.encode("utf-8"))
    for tokens in (corpus.train_tokens, corpus.valid_tokens):
        digest.update(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())
    return digest.hexdigest()


def tokeniser_text(tokeniser) -> str:
    """The tokeniser's file text, the form runs record and compare: ``tokeniser.to_json()``
    (a name kept for the programs that import it)."""
    return tokeniser.to_json()


def check_same_data(identity: dict, recorded: dict, dataset: str) -> None:
    """Refuse data (``identity``: ``TrainingData.identity``) other than those a resumed run
    ``recorded`` (read from --dataset ``dataset``)."""
    differences = data_differences(identity, recorded)
    if differences:
        raise RunDataError(f"--resume: the data of --dataset {dataset} are not those the run "
                           f"trained on: {'; '.join(differences)}")  # fmt: skip


def data_differences(identity: dict, recorded: dict) -> list[str]:
    """How the data's ``identity`` differs from the run's ``recorded`` one (hashes cut short)."""

    def short(value):
        return f"{value[:12]}..." if isinstance(value, str) and len(value) > 12 else value

    return [
        f"{key} {short(identity.get(key))} (the run's: {short(recorded.get(key))})"
        for key in sorted(set(identity) | set(recorded))
        if identity.get(key) != recorded.get(key)
    ]


def retokenise(data: TrainingData, tokeniser) -> TrainingData:
    """The same text as ``data`` (a corpus: token arrays), encoded by ``tokeniser`` (a
    pretrained model's: ``tricycle-train --init-from``)."""
    if not isinstance(data.train, np.ndarray) or not isinstance(data.valid, np.ndarray):
        raise ValueError(
            "--init-from: a directory of token shards has its own tokeniser; give a text "
            "corpus or file as --dataset"
        )
    text = tokeniser.to_json()
    train, valid = (
        tokeniser.encode(data.tokeniser.decode(ids)) for ids in (data.train, data.valid)
    )
    digest = data_sha256(SimpleNamespace(train_tokens=train, valid_tokens=valid), text)
    return TrainingData(tokeniser, text, train, valid, {"data_sha256": digest}, len(train),
                        data.first_line)  # fmt: skip
