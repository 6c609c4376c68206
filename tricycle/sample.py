"""Stream text from a trained GPT.

    python inference.py model.pkl
    python inference.py runs/cpu/model.pkl --prompt "def parse(" --max-tokens 300 --top-k 40
    python inference.py model.pkl --max-tokens 0          # forever (Ctrl-C stops)

The model is a pickled ``tricycle.models.GPT`` (as ``train_smol_gpt.py`` or the README's
script writes it); a model trained on a GPU loads and samples on a CPU. Sampling uses the
model's KV cache, so each new token costs one position.

The tokeniser is found, in order: ``--tokeniser PATH``; ``tokeniser.json`` beside the model
(``train_smol_gpt.py`` saves it there); for a model built from ``ShakespeareConfig`` (the
README's toy script, which saves only the model), the Shakespeare corpus's own tokeniser.
Loading a pickle runs code from the file: only load models you trust.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from tricycle.backend import cupy_available
from tricycle.checkpoint import CheckpointError, load_pickle
from tricycle.models import GPT
from tricycle.tokeniser import StreamDecoder, load_tokeniser
from tricycle_datasets.shakespeare import Shakespeare

TOKENISER = "tokeniser.json"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tricycle-sample",
        description="Sample text from a pickled GPT, streamed to stdout.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("model", type=Path, help="the pickled model (model.pkl)")
    parser.add_argument("--prompt", default="\n", help="text to continue")
    parser.add_argument("--max-tokens", type=int, default=500, help="tokens to sample; 0: forever")
    parser.add_argument("--temperature", type=float, default=0.8, help="0 means greedy")
    parser.add_argument("--top-k", type=int, default=None, help="sample from the k likeliest")
    parser.add_argument("--seed", type=int, default=None, help="makes sampling reproducible")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--tokeniser", type=Path, help=f"tokeniser file (default: {TOKENISER})")
    return parser.parse_args(argv)


def load_model(path: Path) -> GPT:
    """The pickled GPT at ``path``, with a clear error for anything else."""
    try:
        model = load_pickle(path)
    except CheckpointError as error:
        raise SystemExit(f"inference: {error}") from None
    if not isinstance(model, GPT):
        raise SystemExit(f"inference: {path} holds a {type(model).__name__}, not a GPT")
    return model


def find_tokeniser(model: GPT, model_path: Path, explicit: Path | None):
    """The tokeniser for ``model`` (see the module docstring for where it is looked for)."""
    if explicit is not None:
        return load_tokeniser(explicit)
    beside = model_path.parent / TOKENISER
    if beside.is_file():
        return load_tokeniser(beside)
    if type(model.config).__name__ == "ShakespeareConfig":
        return Shakespeare(model.config.vocab_size).tokeniser
    raise SystemExit(
        f"inference: no tokeniser found: pass --tokeniser PATH, or put {TOKENISER} beside "
        f"{model_path}"
    )


def main(argv=None) -> int:
    """The console entry point: sample, and return the exit status."""
    args = parse_args(argv)
    model = load_model(args.model)
    tokeniser = find_tokeniser(model, args.model, args.tokeniser)
    if args.device == "gpu":
        if not cupy_available():
            raise SystemExit("inference: --device gpu, but no CUDA GPU is available")
        model.to_gpu()

    prompt = tokeniser.encode(args.prompt)
    if len(prompt) == 0:
        raise SystemExit("inference: the prompt must not be empty")
    n_tokens = args.max_tokens if args.max_tokens > 0 else sys.maxsize
    n_known = getattr(tokeniser, "n_tokens", None)  # ids the tokeniser can decode
    rng = np.random.default_rng(args.seed)

    sys.stdout.write(args.prompt)
    decoder = StreamDecoder(tokeniser)
    try:
        stream = model.stream(
            prompt[None], n_tokens, args.temperature, args.top_k, rng, vocab_limit=n_known
        )
        for ids in stream:
            sys.stdout.write(decoder.push(int(ids[0])))
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    sys.stdout.write(decoder.flush() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
