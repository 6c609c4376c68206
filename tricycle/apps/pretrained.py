"""Pretrained models in the applications: a Hugging Face model directory (or hub name) where
a run directory is expected, with its own tokeniser.

``is_model_dir`` tells a model directory (a ``config.json`` with a ``model_type``) from a
run directory (whose ``config.json`` is the run's); ``load_pretrained`` gives
(model, tokeniser), the model from ``GPT.from_pretrained`` and the tokeniser from the
directory's ``tokenizer.json`` or ``vocab.json`` + ``merges.txt``; ``end_of_text_ids`` its
eos ids, where the sampler stops; every problem is one
``CheckpointError`` line naming the file. The sampler and ``python -m tricycle.evaluate`` reach
it through ``tricycle.apps.runs.load_model``; ``tricycle-train --init-from`` through
``init_from``.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np

from tricycle.apps.checkpoint import CheckpointError
from tricycle.configs import GPTConfig
from tricycle.hf_files import CONFIG, PretrainedError, resolve
from tricycle.hf_tokeniser import FORMAT, PretrainedTokeniser
from tricycle.models import GPT
from tricycle.pretrained import token_ids
from tricycle.tokeniser import load_tokeniser as load_own_tokeniser

# the GPTConfig fields that describe the model (the rest describe its training)
ARCHITECTURE = ("embedding_dim", "context_window", "vocab_size", "n_heads", "n_layers",
                "expansion_ratio", "activation_fn", "tie_weights", "bias", "arch",
                "n_kv_heads", "rope_theta", "ffn_multiple_of", "norm_eps", "rope_scaling",
                "attention_bias", "head_dim", "qk_norm")  # fmt: skip


def is_model_dir(path) -> bool:
    """Whether ``path`` is a Hugging Face model directory: a config.json naming a
    model_type (a run's never does). Its weights are not asked for: loading names what is
    missing (no model.safetensors, only a pickle) better than a run directory's error."""
    path = Path(path)
    if not (path / CONFIG).is_file():
        return False
    try:
        return "model_type" in json.loads((path / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def load_pretrained(name_or_dir, tokeniser_path=None):
    """(model, tokeniser) of a model directory or hub name; ``tokeniser_path``: a
    tokenizer.json, or a directory holding the tokeniser's files, instead of the model's."""
    try:
        directory = resolve(name_or_dir)  # a hub name is downloaded into its cache
        model = GPT.from_pretrained(directory)
        source = Path(tokeniser_path or directory)
        if not source.exists():
            raise PretrainedError(f"{source}: no such file or directory (the tokeniser)")
        if source.is_file():
            tokeniser = PretrainedTokeniser.from_tokenizer_json(source)
        else:
            tokeniser = PretrainedTokeniser.from_dir(source)
    except (PretrainedError, ValueError, OSError) as error:
        raise CheckpointError(str(error)) from None
    if tokeniser.n_tokens > model.config.vocab_size:
        raise CheckpointError(
            f"the tokeniser {source} has {tokeniser.n_tokens} ids, more "
            f"than the model's vocab_size {model.config.vocab_size}"
        )
    return model, tokeniser


def end_of_text_ids(path) -> frozenset[int]:
    """The ids that end a text for the model directory ``path`` (its eos_token_id, as
    transformers' ``generate`` reads it); none for anything else (a run, a pickle)."""
    if not Path(path).is_dir() or not is_model_dir(path):
        return frozenset()
    try:
        return frozenset(token_ids(path).get("eos_token_id", []))
    except PretrainedError as error:
        raise CheckpointError(str(error)) from None


def load_tokeniser(path):
    """A run's tokeniser file: tricycle's own formats, or a pretrained model's tokeniser
    (``PretrainedTokeniser.save``'s format)."""
    try:
        is_theirs = json.loads(Path(path).read_text(encoding="utf-8")).get("format") == FORMAT
    except (AttributeError, UnicodeDecodeError, json.JSONDecodeError):
        is_theirs = False
    return PretrainedTokeniser.load(path) if is_theirs else load_own_tokeniser(path)


def fine_tuning_config(config: GPTConfig, pretrained: GPTConfig, given: dict) -> GPTConfig:
    """``config``'s training settings with ``pretrained``'s architecture. ``given``: the
    architecture fields set on the command line; each must agree with the model, except a
    shorter context window (the position embedding is cropped, as nanoGPT's
    ``crop_block_size``) and dropout (a training setting here)."""
    fields = {name: getattr(pretrained, name) for name in ARCHITECTURE}
    for name, value in given.items():
        if name == "context_window" and value <= pretrained.context_window:
            fields[name] = value
        elif name in fields and value != fields[name]:
            raise ValueError(
                f"--init-from: the pretrained model has {name}={fields[name]!r}, not {value!r}"
            )
    return dataclasses.replace(config, **fields)


def pretrained_weights(model: GPT, config: GPTConfig) -> dict[str, np.ndarray]:
    """The state dict of ``model`` for a copy with ``config``'s (maybe shorter) window."""
    state = model.state_dict()
    if "position_embedding.weights" in state:
        state["position_embedding.weights"] = state["position_embedding.weights"][
            : config.context_window
        ]
    return state
