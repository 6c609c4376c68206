"""A Hugging Face tokenizer's files read as ``PretrainedTokeniser``'s arguments: GPT-2's
``vocab.json`` + ``merges.txt``, and a ``tokenizer.json`` whose model is a BPE (its model,
added tokens, normalizer, pre-tokenizer, post-processor and decoder). What the reader does
not implement is one ``ValueError`` line naming the file and the field.
"""

import json
from pathlib import Path

from tricycle.hf_tokeniser_steps import flat_steps, template_prefix

# GPT-2's pattern in the syntax of the ``regex`` package (and of Hugging Face's ByteLevel)
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")  # digits one at a time
ADDED_OPTIONS = ("lstrip", "rstrip", "single_word")  # an added token's, as encode reads them


def gpt2_files(vocab_path, merges_path) -> dict:
    """GPT-2's files as arguments: ``vocab.json`` (token -> id; "<|...|>" tokens are special)
    and ``merges.txt`` ("left right" a line after a "#version" header)."""
    vocab = read_json(vocab_path)
    lines = Path(merges_path).read_text(encoding="utf-8").splitlines()
    merges = [merge_pair(line, merges_path, n) for n, line in enumerate(lines)
              if line and not line.startswith("#version")]  # fmt: skip
    special = {t: i for t, i in vocab.items() if t.startswith("<|") and t.endswith("|>")}
    vocab = {t: i for t, i in vocab.items() if t not in special}
    return {"vocab": vocab, "merges": merges, "special": special}


def tokenizer_json(path) -> dict:
    """A ``tokenizer.json`` whose model is a BPE as arguments."""
    data = read_json(path)
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        raise ValueError(f"{path}: model.type is {model.get('type')!r}; only BPE is read")
    for field in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(field):
            raise ValueError(f"{path}: model.{field}={model[field]!r} is not supported")
    merges = [tuple(m) if isinstance(m, list) else merge_pair(m, path, n)
              for n, m in enumerate(model.get("merges", []))]  # fmt: skip
    added = data.get("added_tokens", [])
    special = {t["content"]: t["id"] for t in added}
    try:
        pre_tokenizer = _pre_tokenizer(data.get("pre_tokenizer"))
        prefix_ids = template_prefix(data.get("post_processor"))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return dict(vocab={t: i for t, i in model.get("vocab", {}).items() if t not in special},
                merges=merges, special=special, prefix_ids=prefix_ids,
                ignore_merges=bool(model.get("ignore_merges")),
                normalizer=data.get("normalizer"), decoder=data.get("decoder"),
                byte_fallback=bool(model.get("byte_fallback")),
                unk_token=model.get("unk_token"), fuse_unk=bool(model.get("fuse_unk")),
                normalized_special=[t["content"] for t in added if t.get("normalized")],
                added_options={t["content"]: {k: True for k in ADDED_OPTIONS if t.get(k)}
                               for t in added},
                **pre_tokenizer)  # fmt: skip


def _pre_tokenizer(spec) -> dict:
    """The constructor's arguments for a pre-tokenizer: ByteLevel (with GPT-2's regex or
    none), a Split by a regex then ByteLevel (Llama 3, Qwen2), Metaspace, or none."""
    steps = flat_steps(spec, "pretokenizers", "pre_tokenizer")
    kinds = [step.get("type") for step in steps]
    if kinds == ["ByteLevel"]:
        regex = GPT2_PATTERN if steps[0].get("use_regex", True) else None
        return {"pattern": regex, "add_prefix_space": bool(steps[0].get("add_prefix_space"))}
    if kinds == ["Split", "ByteLevel"]:
        split, byte_level = steps
        if "Regex" not in (split.get("pattern") or {}) or split.get("invert"):
            raise ValueError("pre_tokenizer Split: only by a Regex, not inverted, is supported")
        if split.get("behavior") != "Isolated":
            raise ValueError(f"pre_tokenizer Split {split.get('behavior')!r} is not supported "
                             "(only Isolated)")  # fmt: skip
        if byte_level.get("use_regex", True) or byte_level.get("add_prefix_space"):
            raise ValueError("pre_tokenizer ByteLevel after a Split: use_regex and "
                             "add_prefix_space are not supported there")  # fmt: skip
        return {"pattern": split["pattern"]["Regex"]}
    if kinds in (["Metaspace"], []):
        return {"pattern": None, "byte_level": False, "metaspace": steps[0] if steps else None}
    raise ValueError(f"pre_tokenizer {' + '.join(map(repr, kinds))} is not supported (only "
                     "ByteLevel, Split + ByteLevel, Metaspace, or none)")  # fmt: skip


def merge_pair(line: str, path, n: int) -> tuple[str, str]:
    parts = line.split(" ")
    if len(parts) != 2:
        raise ValueError(f"{path}: merge {n} is {line!r}; expected two tokens and one space")
    return parts[0], parts[1]


def read_json(path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data
