"""Stream text from a trained GPT.

    tricycle-sample runs/cpu                       # a run directory: its checkpoint.npz
    tricycle-sample runs/cpu/checkpoint.npz --prompt "def parse(" --max-tokens 300 --top-k 40
    tricycle-sample model.pkl --max-tokens 0       # a pickle; 0: forever (Ctrl-C stops)

(``python -m tricycle.sample`` and ``python inference.py`` are the same program.)

**The safe way**: a run directory or its ``checkpoint.npz``, as ``tricycle-train`` writes it.
It holds the config, the tokeniser and the weights as arrays and JSON, with a checksum:
reading it runs no code from the file, and a corrupt file is an error, never a different
sample. **Pickles** (``model.pkl``, or a model saved with ``pickle.dump`` as in the README)
work too, but loading a pickle runs code from the file: only load pickles you trust. For a
pickle the tokeniser is ``--tokeniser PATH``, else ``tokeniser.json`` beside it, else, for a
model built from ``ShakespeareConfig`` (the README's script saves only the model), the
Shakespeare corpus's tokeniser. A tokeniser that does not belong to the model (another
vocabulary size, or not the one the run recorded) is refused, naming both files.
"""

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np

from tricycle.backend import cupy_available
from tricycle.checkpoint import CheckpointError, load_pickle, load_state
from tricycle.cli import nonnegative_float, nonnegative_int, positive_int, seed
from tricycle.configs import GPTConfig
from tricycle.models import GPT
from tricycle.tokeniser import StreamDecoder, load_tokeniser
from tricycle.training import RunDirectory, check_config_fits
from tricycle_datasets.shakespeare import Shakespeare


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tricycle-sample",
        description="Sample text from a trained GPT, streamed to stdout. Give a run "
        "directory or its checkpoint.npz (safe: no code in the file runs), or a pickle "
        "(model.pkl: loading a pickle RUNS CODE from the file; only load pickles you trust).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("model", type=Path, help="a run directory, a checkpoint.npz, or a pickled model")
    add("--prompt", default="\n", help="text to continue")
    add("--max-tokens", type=nonnegative_int, default=500, help="tokens to sample; 0: forever")
    add("--num-samples", type=positive_int, default=1, help="samples, one after the other")
    add("--temperature", type=nonnegative_float, default=0.8, help="0 means greedy")
    add("--top-k", type=positive_int, default=None, help="sample from the k likeliest")
    add("--seed", type=seed, default=None, help="makes sampling reproducible")
    add("--device", choices=["cpu", "gpu"], default="cpu")
    add("--tokeniser", type=Path, help="tokeniser file (default: the run's own)")
    return parser.parse_args(argv)


def load(path: Path, tokeniser_path: Path | None = None):
    """(model, tokeniser) from ``path``: a run directory, a checkpoint or a pickle."""
    if path.is_dir():
        if not (path / RunDirectory.CHECKPOINT).is_file() and (path / "model.pkl").is_file():
            raise SystemExit(
                f"tricycle-sample: {path} has no {RunDirectory.CHECKPOINT}; to load its pickle "
                f"(which runs code from the file), name it: {path / 'model.pkl'}"
            )
        path = path / RunDirectory.CHECKPOINT
    recorded = None  # the run's tokeniser, as its file's text
    if path.suffix == ".npz":
        model, recorded = load_checkpoint(path)
    elif path.suffix in (".pkl", ".pickle"):
        model = load_pickled(path)
    else:
        raise SystemExit(
            f"tricycle-sample: {path}: expected a run directory, a .npz checkpoint or a .pkl "
            "pickle (only files named as pickles are unpickled)"
        )
    if tokeniser_path is None and recorded is not None:
        tokeniser, source = _tokeniser_from_text(recorded, path), path
    else:
        source = tokeniser_path or _beside(model, path)
        if source is None:  # the README's ShakespeareConfig pickle
            return model, Shakespeare(model.config.vocab_size).tokeniser
        tokeniser = _read_tokeniser(source)
    if tokeniser.vocab_size != model.config.vocab_size:
        raise SystemExit(
            f"tricycle-sample: the tokeniser {source} ({type(tokeniser).__name__}, "
            f"{tokeniser.vocab_size} ids) does not belong to the model {path} (vocab_size "
            f"{model.config.vocab_size})"
        )
    if source != path and recorded is not None:
        if _sha256(source.read_text("utf-8")) != _sha256(recorded):
            raise SystemExit(
                f"tricycle-sample: the tokeniser {source} does not belong to the model "
                f"{path}: the run was trained with another tokeniser of the same size"
            )
    return model, tokeniser


def load_checkpoint(path: Path) -> tuple[GPT, str]:
    """The GPT in a training checkpoint, and the run's tokeniser (its file's text)."""
    try:
        state = load_state(path)
    except CheckpointError as error:
        raise SystemExit(f"tricycle-sample: {error}") from None
    run = state.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("config"), dict):
        raise SystemExit(f"tricycle-sample: {path} is not a training checkpoint (no config)")
    weights = state.get("model")
    try:
        config = GPTConfig.from_dict(run["config"])
        check_config_fits(config, weights)
        model = GPT(config)
        model.load_state_dict(weights)
    except (ValueError, TypeError, KeyError) as error:
        raise SystemExit(f"tricycle-sample: {path} does not hold a usable GPT: {error}") from None
    return model, run.get("tokeniser")


def load_pickled(path: Path) -> GPT:
    """The pickled GPT at ``path`` (this runs code from the file), with a clear error for
    anything else."""
    try:
        model = load_pickle(path)
    except CheckpointError as error:
        raise SystemExit(f"tricycle-sample: {error}") from None
    if not isinstance(model, GPT):
        raise SystemExit(f"tricycle-sample: {path} holds a {type(model).__name__}, not a GPT")
    return model


def _beside(model: GPT, path: Path) -> Path | None:
    """tokeniser.json beside ``path``, or None for the README's ShakespeareConfig model."""
    beside = path.parent / RunDirectory.TOKENISER
    if beside.is_file() or type(model.config).__name__ == "ShakespeareConfig":
        return beside if beside.is_file() else None
    raise SystemExit(
        f"tricycle-sample: no tokeniser found: pass --tokeniser PATH, or put "
        f"{RunDirectory.TOKENISER} beside {path}"
    )


def _read_tokeniser(path: Path):
    """The tokeniser file at ``path``."""
    try:
        return load_tokeniser(path)
    except (ValueError, OSError, KeyError) as error:
        raise SystemExit(f"tricycle-sample: {path}: not a readable tokeniser: {error}") from None


def _tokeniser_from_text(text, path: Path):
    if not isinstance(text, str):
        raise SystemExit(f"tricycle-sample: {path} has no tokeniser: pass --tokeniser PATH")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / RunDirectory.TOKENISER).write_text(text, encoding="utf-8")
        return _read_tokeniser(Path(folder) / RunDirectory.TOKENISER)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv=None) -> int:
    """The console entry point: sample, and return the exit status."""
    args = parse_args(argv)
    model, tokeniser = load(args.model, args.tokeniser)
    if args.device == "gpu":
        if not cupy_available():
            raise SystemExit("tricycle-sample: --device gpu, but no CUDA GPU is available")
        model.to_gpu()
    try:
        prompt = tokeniser.encode(args.prompt)
    except ValueError as error:
        raise SystemExit(f"tricycle-sample: --prompt: {error}") from None
    if len(prompt) == 0:
        raise SystemExit("tricycle-sample: the prompt must not be empty")
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
                prompt[None], n_tokens, args.temperature, args.top_k, rng, vocab_limit=n_known
            )
            for ids in stream:
                sys.stdout.write(decoder.push(int(ids[0])))
                sys.stdout.flush()
            sys.stdout.write(decoder.flush() + "\n")
    except KeyboardInterrupt:
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
