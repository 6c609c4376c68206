"""Other people's models: GPT-2 and the Llama family (Llama, Qwen2, Qwen3, Mistral) in the
Hugging Face layout, in and out.

A family is a ``model_type`` of ``config.json`` and the tricycle ``arch`` that builds it, with
two tables: how its config fields become a ``GPTConfig`` (and back: ``tricycle.hf_configs``),
and how its tensor names become the tricycle model's (``NAMES``, per arch: one row per
tricycle tensor, the Hugging Face tensors it is made of, and whether they are stored
transposed).

    GPT-2   Conv1D weights are already (in, out), as tricycle's Dense: nothing is transposed
            but an untied lm_head (an nn.Linear).
            c_attn is q|k|v side by side, as tricycle's qkv projection.
    Llama   nn.Linear weights are (out, in): transposed. q_proj|k_proj|v_proj are stacked
            into one qkv projection (their biases too, where Qwen2 or attention_bias has
            them), gate_proj|up_proj into SwiGLU's up projection. RoPE is the half-split
            form in both. Qwen2, Qwen3 and Mistral name their tensors as Llama; Qwen3's
            q_norm and k_norm (a gain of the head size each) are the attention's.

Anything a config says that the tricycle model cannot express (RoPE scaled by YaRN, a sliding
window shorter than the context, ...) is a one-line ``PretrainedError`` naming the file and
the field; a tensor that is missing, left over, of the wrong shape or not a float names the
file and the tensor. A bias-free GPT, which the Hugging Face GPT-2 cannot be, is exported
with zero biases: the same function. The models call ``resolve``, ``read_config``,
``model_type``, ``load_weights`` and ``write`` (``GPT.from_pretrained``,
``GPT.save_pretrained``); the files are ``tricycle.hf_files``'.
``token_ids`` reads a directory's bos/eos/pad ids, which ``write`` can write back.
"""

import json
from pathlib import Path

import numpy as np

from tricycle.configs import GPTConfig
from tricycle.hf_configs import hf_config, model_type, read_config
from tricycle.hf_files import (
    CONFIG,
    WEIGHTS,
    PretrainedError,
    Reader,
    read_json,
    resolve,
    safetensors_bytes,
    weight_files,
    write_directory,
)

__all__ = ["PretrainedError", "load_weights", "model_type", "read_config", "read_weights",
           "resolve", "token_ids", "write"]  # fmt: skip

# tricycle name: (Hugging Face names, stored transposed); "{i}" is the block's number
NAMES = {
    "gpt2": {
        "token_embedding.weights": (["wte.weight"], False),
        "position_embedding.weights": (["wpe.weight"], False),
        "blocks.{i}.layer_norm_1.gamma": (["h.{i}.ln_1.weight"], False),
        "blocks.{i}.layer_norm_1.beta": (["h.{i}.ln_1.bias"], False),
        "blocks.{i}.attention.qkv_projection.weights": (["h.{i}.attn.c_attn.weight"], False),
        "blocks.{i}.attention.qkv_projection.bias": (["h.{i}.attn.c_attn.bias"], False),
        "blocks.{i}.attention.out_projection.weights": (["h.{i}.attn.c_proj.weight"], False),
        "blocks.{i}.attention.out_projection.bias": (["h.{i}.attn.c_proj.bias"], False),
        "blocks.{i}.layer_norm_2.gamma": (["h.{i}.ln_2.weight"], False),
        "blocks.{i}.layer_norm_2.beta": (["h.{i}.ln_2.bias"], False),
        "blocks.{i}.mlp.up_projection.weights": (["h.{i}.mlp.c_fc.weight"], False),
        "blocks.{i}.mlp.up_projection.bias": (["h.{i}.mlp.c_fc.bias"], False),
        "blocks.{i}.mlp.down_projection.weights": (["h.{i}.mlp.c_proj.weight"], False),
        "blocks.{i}.mlp.down_projection.bias": (["h.{i}.mlp.c_proj.bias"], False),
        "layer_norm.gamma": (["ln_f.weight"], False),
        "layer_norm.beta": (["ln_f.bias"], False),
        "head.weights": (["lm_head.weight"], True),
    },
    "llama": {
        "token_embedding.weights": (["model.embed_tokens.weight"], False),
        "blocks.{i}.rms_norm_1.gamma": (["model.layers.{i}.input_layernorm.weight"], False),
        "blocks.{i}.attention.qkv_projection.weights": (
            [f"model.layers.{{i}}.self_attn.{x}_proj.weight" for x in "qkv"], True),
        "blocks.{i}.attention.qkv_projection.bias": (
            [f"model.layers.{{i}}.self_attn.{x}_proj.bias" for x in "qkv"], False),
        "blocks.{i}.attention.out_projection.weights": (
            ["model.layers.{i}.self_attn.o_proj.weight"], True),
        "blocks.{i}.attention.out_projection.bias": (
            ["model.layers.{i}.self_attn.o_proj.bias"], False),
        "blocks.{i}.attention.q_norm.gamma": (["model.layers.{i}.self_attn.q_norm.weight"], False),
        "blocks.{i}.attention.k_norm.gamma": (["model.layers.{i}.self_attn.k_norm.weight"], False),
        "blocks.{i}.rms_norm_2.gamma": (
            ["model.layers.{i}.post_attention_layernorm.weight"], False),
        "blocks.{i}.mlp.up_projection.weights": (
            [f"model.layers.{{i}}.mlp.{x}_proj.weight" for x in ("gate", "up")], True),
        "blocks.{i}.mlp.down_projection.weights": (
            ["model.layers.{i}.mlp.down_proj.weight"], True),
        "layer_norm.gamma": (["model.norm.weight"], False),
        "head.weights": (["lm_head.weight"], True),
    },
}  # fmt: skip
# Hugging Face names a file may hold that are not weights (causal masks, RoPE tables, the
# "transformer." prefix of GPT2LMHeadModel): dropped.
_BUFFERS = (".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq")
_PREFIXES = {"gpt2": "transformer.", "llama": ""}
GENERATION = "generation_config.json"  # generate's settings: the special ids it reads first
TOKEN_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id")


def token_ids(directory) -> dict[str, list[int]]:
    """{"bos_token_id", "eos_token_id", "pad_token_id": their ids} that ``directory``'s
    config.json and generation_config.json (which transformers' ``generate`` prefers) set:
    an id or a list of them (several end-of-text ids), each as a list; unset ones absent."""
    found = {}
    for path in (Path(directory) / CONFIG, Path(directory) / GENERATION):
        values = read_json(path) if path.is_file() else {}
        for field in TOKEN_FIELDS:
            value = values.get(field)
            if value is None:
                continue
            ids = value if isinstance(value, list) else [value]
            if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
                raise PretrainedError(f"{path}: {field}={value!r} is not an id or a list of ids")
            found[field] = ids
    return found


# ------------------------------------------------------------------ weights


def _rows(config: GPTConfig, ours: set[str]):
    """(tricycle name, Hugging Face names, transposed) for every tensor ``ours`` holds."""
    for pattern, (theirs, transposed) in NAMES[config.arch].items():
        blocks = range(config.n_layers) if "{i}" in pattern else [None]
        for i in blocks:
            name = pattern.format(i=i)
            if name in ours:
                yield name, [t.format(i=i) for t in theirs], transposed


def _widths(config: GPTConfig, theirs: list[str], width: int) -> list[int]:
    """The widths of the Hugging Face tensors stacked into one of ours ``width`` wide."""
    if len(theirs) == 3:  # q | k | v
        D = config.head_size
        return [config.n_heads * D, config.kv_heads * D, config.kv_heads * D]
    return [width // len(theirs)] * len(theirs)


def read_weights(directory, config: GPTConfig, shapes: dict[str, tuple]) -> dict:
    """{tricycle name: float32 C-contiguous array} for a model whose tensors have ``shapes``,
    read from ``directory``'s safetensors files. Every tensor is checked against the name
    map, its shape and its values (finite)."""
    directory = Path(directory)
    files = weight_files(directory)
    prefix = _PREFIXES[config.arch]
    stored = {name.removeprefix(prefix) if prefix else name: name for name in files}
    rows = list(_rows(config, set(shapes)))
    wanted = {t for _, theirs, _ in rows for t in theirs}
    if config.tie_weights:  # a tied head may be stored too: it is the token embedding
        wanted_extra = {"lm_head.weight"}
    else:
        wanted_extra = set()
    for short, name in stored.items():
        if short not in wanted and short not in wanted_extra and not short.endswith(_BUFFERS):
            raise PretrainedError(
                f"{files[name]}: tensor {name!r} is not part of a {config.arch} model of this "
                f"config (unexpected extra tensor)"
            )
    state = {}
    with Reader(files) as reader:
        for ours, theirs, transposed in rows:
            parts = []
            widths = _widths(config, theirs, shapes[ours][-1])
            for hf_name, width in zip(theirs, widths):
                if hf_name not in stored:
                    where = sorted({str(p) for p in files.values()})
                    raise PretrainedError(
                        f"{', '.join(where)}: tensor {prefix}{hf_name!r} is missing"
                    )
                expected = (*shapes[ours][:-1], width)
                expected = expected[::-1] if transposed else expected
                array = reader.read(stored[hf_name])
                if tuple(array.shape) != expected:
                    raise PretrainedError(
                        f"{files[stored[hf_name]]}: tensor {stored[hf_name]!r} has shape "
                        f"{tuple(array.shape)}, expected {expected} for this config.json"
                    )
                if not np.isfinite(array).all():
                    raise PretrainedError(
                        f"{files[stored[hf_name]]}: tensor {stored[hf_name]!r} holds NaN or inf"
                    )
                parts.append(array.T if transposed else array)
            merged = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)
            state[ours] = np.ascontiguousarray(merged, dtype=np.float32)
    return state


def load_weights(model, directory):
    """``model`` (a GPT or Llama of the directory's config) with the directory's weights:
    the float32 arrays ``read_weights`` checked become its tensors' arrays, uncopied. The
    model is returned in eval mode, as transformers' ``from_pretrained`` returns it: a
    pretrained model is mostly run, and GPT-2's dropout would change every forward
    (``model.train()`` before fine-tuning turns it back on)."""
    tensors = model.named_tensors()
    weights = read_weights(directory, model.config, {k: t.shape for k, t in tensors})
    for name, tensor in tensors:
        tensor.array = weights[name]
    return model.eval()


def write(directory, config: GPTConfig, state: dict[str, np.ndarray],
          token_ids: dict[str, list[int]] | None = None,
          kind: str | None = None) -> None:  # fmt: skip
    """Write ``state`` (a model's ``state_dict``) and ``config`` as a Hugging Face directory
    of model_type ``kind`` (that of the directory the model came from; None: its arch's);
    ``token_ids`` (``token_ids``' of that directory) go into config.json and
    generation_config.json, so that transformers' ``generate`` stops where it did."""
    tensors = {}
    prefix = _PREFIXES[config.arch]
    state = _with_zero_biases(config, state)
    for ours, theirs, transposed in _rows(config, set(state)):
        array = state[ours]
        widths = _widths(config, theirs, array.shape[-1])
        parts = np.split(array, np.cumsum(widths)[:-1], axis=-1) if len(theirs) > 1 else [array]
        for name, part in zip(theirs, parts):
            key = name if name == "lm_head.weight" else prefix + name
            tensors[key] = np.ascontiguousarray(part.T if transposed else part, dtype=np.float32)
    hidden = state["blocks.0.mlp.down_projection.weights"].shape[0]
    config_json = hf_config(config, hidden, kind)  # its errors come before anything is written
    ids = {field: v[0] if len(v) == 1 else v for field, v in (token_ids or {}).items()}
    data = safetensors_bytes(tensors)

    def fill(tmp: Path) -> None:
        (tmp / WEIGHTS).write_bytes(data)
        (tmp / CONFIG).write_text(_json({**config_json, **ids}), encoding="utf-8")
        if ids:
            (tmp / GENERATION).write_text(_json(ids), encoding="utf-8")

    write_directory(directory, fill)


def _with_zero_biases(config: GPTConfig, state: dict) -> dict:
    """``state`` of a GPT with bias=False given the zero biases (Dense) and betas (LayerNorm)
    that GPT-2 in the Hugging Face layout always has; any other state as it is."""
    if config.arch != "gpt2" or config.bias:
        return state
    zeros = {}
    for pattern in NAMES["gpt2"]:
        for i in range(config.n_layers) if "{i}" in pattern else [None]:
            name = pattern.format(i=i)
            stem, kind = name.rsplit(".", 1)
            if kind in ("bias", "beta") and name not in state:
                width = state[f"{stem}.{'weights' if kind == 'bias' else 'gamma'}"].shape[-1]
                zeros[name] = np.zeros(width, np.float32)
    return {**state, **zeros}


def _json(value: dict) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"
