"""Stream text from a trained GPT (or Llama).

    tricycle-sample runs/cpu                       # a run directory: its best weights
    tricycle-sample runs/cpu --weights last        # ... or its last (model.safetensors)
    tricycle-sample runs/cpu/model.safetensors --prompt "def parse(" --max-tokens 300 --top-k 40
    tricycle-sample model.pkl --max-tokens 0       # a pickle; 0: forever (Ctrl-C stops)

(``python -m tricycle.apps.sample`` and ``python inference.py`` are the same program.)

**The safe way**: a run directory or its weights files, as ``tricycle-train`` writes them: a
directory gives its best weights (``best.safetensors``, the lowest validation loss) unless
``--weights last`` asks for its last (``model.safetensors``); which file and step is logged
(a run of an earlier version: ``best.npz`` and ``checkpoint.npz``). They hold the config,
the tokeniser and the weights as arrays and JSON, with a checksum: reading them runs no code
from the file, and a corrupt file is an error, never a different sample. A Hugging Face
model directory is sampled as transformers' ``generate`` would: its tokeniser's prefix (a
BOS) before the prompt, and a sample ends at its eos_token_id. **Pickles**
(``model.pkl``, or a model saved with ``pickle.dump`` as in the README) work too, but loading
a pickle runs code from the file: only load pickles you trust. For a
pickle the tokeniser is ``--tokeniser PATH``, else ``tokeniser.json`` beside it, else, for a
model built from ``ShakespeareConfig`` (the README's script saves only the model), the
Shakespeare corpus's tokeniser. A tokeniser that does not belong to the model (more ids
than its vocabulary, or not the one the run recorded) is refused, naming both files.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from tricycle.apps.checkpoint import CheckpointError
from tricycle.apps.cli import (
    DefaultsHelp,
    Parser,
    add_weights_flag,
    ends_in_one_line,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    seed,
    warnings_in_one_line,
)
from tricycle.apps.pretrained import end_of_text_ids
from tricycle.apps.runs import load_model
from tricycle.backend import cupy_available
from tricycle.tokeniser import StreamDecoder
from tricycle_datasets.shakespeare import Shakespeare


def parse_args(argv=None) -> argparse.Namespace:
    parser = Parser(
        prog="tricycle-sample",
        description="Sample text from a trained GPT, streamed to stdout. Give a run "
        "directory or its model.safetensors (safe: no code in the file runs), or a pickle "
        "(model.pkl: loading a pickle RUNS CODE from the file; only load pickles you trust).",
        formatter_class=DefaultsHelp,
    )
    add = parser.add_argument
    add("model", type=Path, help="a run directory, its model.safetensors, a Hugging Face model "
        "directory, or a pickled model")  # fmt: skip
    add("--prompt", default="\n", help="text to continue (default: a new line)")
    add("--allow-special", action="store_true", help="read the tokeniser's special tokens "
        "spelt in --prompt (a chat template's <|im_start|>) as their ids, as transformers' "
        "tokeniser does (default: as text)")  # fmt: skip
    add("--max-tokens", type=nonnegative_int, default=500, help="tokens to sample; 0: forever")
    add("--num-samples", type=positive_int, default=1, help="samples, one after the other")
    add("--temperature", type=nonnegative_float, default=0.8, help="0 means greedy")
    add("--top-k", type=positive_int, default=None, help="sample from the k likeliest")
    add("--top-p", type=probability_mass, default=None, help="sample from the likeliest ids "
        "whose probability reaches p (nucleus sampling), in (0, 1]")  # fmt: skip
    add("--min-p", type=fraction, default=None, help="sample only from ids at least p times as "
        "likely as the likeliest, p in [0, 1]")  # fmt: skip
    add("--repetition-penalty", type=positive_float, default=1.0, help="divide the positive "
        "logits of ids already in the text by it (multiply the negative ones): > 1 repeats "
        "less")  # fmt: skip
    add("--seed", type=seed, default=None, help="makes sampling reproducible")
    add("--device", choices=["cpu", "gpu"], default="cpu", help="where the model runs: the CPU, "
        "or a CUDA GPU (pip install -e \".[gpu]\")")  # fmt: skip
    add("--tokeniser", type=Path, help="tokeniser file (default: the run's own)")
    add_weights_flag(parser)
    return parser.parse_args(argv)


def probability_mass(text: str) -> float:
    """--top-p: a number in (0, 1]."""
    return _number_in(text, "(0, 1]", lambda value: 0 < value <= 1)


def fraction(text: str) -> float:
    """--min-p: a number in [0, 1]."""
    return _number_in(text, "[0, 1]", lambda value: 0 <= value <= 1)


def _number_in(text: str, interval: str, inside) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not inside(value):  # NaN too
        raise argparse.ArgumentTypeError(f"must be a number in {interval}, got {text!r}")
    return value


def load(path: Path, tokeniser_path: Path | None = None, weights: str = "best"):
    """(model, tokeniser) from ``path``: a run directory, a checkpoint or a pickle (see
    ``tricycle.apps.runs.load_model``); for the README's pickle of a ``ShakespeareConfig``
    model with no tokeniser beside it, the Shakespeare corpus's tokeniser."""
    try:
        return load_model(
            path,
            tokeniser_path,
            default_tokeniser=_readme_tokeniser,
            weights=weights,
            say=lambda line: print(line, file=sys.stderr),
        )
    except CheckpointError as error:
        raise SystemExit(f"tricycle-sample: {error}") from None


def _readme_tokeniser(model):
    """The tokeniser of the README's script, which pickles only the model."""
    if type(model.config).__name__ != "ShakespeareConfig":
        return None
    return Shakespeare(model.config.vocab_size).tokeniser


@warnings_in_one_line("tricycle-sample")
@ends_in_one_line("tricycle-sample", "--num-samples or --max-tokens")
def main(argv=None) -> int:
    """The console entry point: sample, and return the exit status."""
    args = parse_args(argv)
    model, tokeniser = load(args.model, args.tokeniser, args.weights)
    if args.device == "gpu":
        if not cupy_available():
            raise SystemExit("tricycle-sample: --device gpu, but no CUDA GPU is available")
        model.to_gpu()
    try:
        allowed = args.allow_special and getattr(tokeniser, "special_ids", None)  # none: text
        prompt = tokeniser.encode(args.prompt, **({"allowed_special": "all"} if allowed else {}))
        stop = end_of_text_ids(args.model)
    except ValueError as error:
        raise SystemExit(f"tricycle-sample: --prompt: {error}") from None
    except CheckpointError as error:
        raise SystemExit(f"tricycle-sample: {error}") from None
    if len(prompt) == 0:
        raise SystemExit("tricycle-sample: the prompt must not be empty")
    # what transformers' tokeniser puts before a prompt (Llama 3's <|begin_of_text|>)
    prefix = np.array(getattr(tokeniser, "prefix_ids", ()), dtype=prompt.dtype)
    prompt = np.concatenate([prefix, prompt])
    n_tokens = args.max_tokens if args.max_tokens > 0 else sys.maxsize
    n_known = getattr(tokeniser, "n_tokens", None)  # ids the tokeniser can decode
    rng = np.random.default_rng(args.seed)
    try:
        for i in range(args.num_samples):
            if i:
                sys.stdout.write("---------------\n")
            sys.stdout.write(args.prompt)
            decoder = StreamDecoder(tokeniser)
            stream = model.stream(
                prompt[None], n_tokens, args.temperature, args.top_k, rng, vocab_limit=n_known,
                top_p=args.top_p, min_p=args.min_p, repetition_penalty=args.repetition_penalty,
            )  # fmt: skip
            for ids in stream:
                if int(ids[0]) in stop:  # the model's end of text, as transformers stops
                    break
                sys.stdout.write(decoder.push(int(ids[0])))
                sys.stdout.flush()
            sys.stdout.write(decoder.flush() + "\n")
    except KeyboardInterrupt:
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
