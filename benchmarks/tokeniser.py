"""BPE tokeniser speed: ours (pure Python, and through tiktoken) vs tiktoken vs HF tokenizers.

    python benchmarks/tokeniser.py                        # this Python's stdlib sources
    python benchmarks/tokeniser.py --text big.txt --vocab-size 8192 --rounds 5
    python benchmarks/tokeniser.py --quick                # a smoke test on 200 KB

Encoding, single-threaded, the same merges everywhere (ours, trained on --train-bytes of the
text, handed to tiktoken as mergeable ranks and to HF tokenizers as a byte-level BPE):

    ours, cold       BPETokeniser.encode in pure Python, its chunk cache empty
    ours, warm       the same, the cache filled by the previous round (steady state)
    ours, tiktoken   BPETokeniser.encode with tiktoken installed (its default on long text)
    tiktoken         tiktoken.Encoding.encode_ordinary with our split pattern
    HF tokenizers    tokenizers.Tokenizer.encode with our split pattern and merges

Ids must equal ours (checked: tiktoken exactly; HF applies merges by pair, not by rank of
the merged bytes, so rare chunks may differ and the share of equal ids is printed). Then
training: ours (numpy/Python, one thread) vs HF's BpeTrainer (RAYON_NUM_THREADS=1), same
vocabulary size. Rounds interleave the encoders; the table shows each one's best round and
the median of per-round ratios to tiktoken. Optional packages missing are skipped.
"""

import argparse
import os
import statistics
import sys
import sysconfig
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF tokenizers: one thread, like the others

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.bpe import _tiktoken_gpt2_pattern  # noqa: E402
from tricycle.hf_tokeniser import bytes_to_unicode  # noqa: E402
from tricycle.tokeniser import GPT2_SPLIT_PATTERN, BPETokeniser  # noqa: E402

try:
    import tiktoken
except ImportError:
    tiktoken = None
try:
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers
except ImportError:
    tokenizers = None


def stdlib_text(max_bytes: int) -> str:
    """The stdlib's top-level .py sources, up to max_bytes."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(root.glob("*.py")):
        if size >= max_bytes:
            break
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text.encode())
    return "".join(parts)


def hf_tokenizer(ours: BPETokeniser):
    """A HF tokenizers Tokenizer with our merges and our split pattern."""
    to_char = bytes_to_unicode()  # GPT-2's printable stand-ins for bytes
    spell = [("".join(to_char[b] for b in token)) for token in ours._vocab[: len(ours._ranks)]]
    vocab = {token: i for i, token in reversed(list(enumerate(spell)))}
    merges = [(spell[a], spell[b]) for a, b in ours.merges]
    tokenizer = tokenizers.Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(tokenizers.Regex(_tiktoken_gpt2_pattern()), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", type=Path, help="a UTF-8 file (default: stdlib sources)")
    parser.add_argument("--max-bytes", type=int, default=8_000_000, help="text to encode")
    parser.add_argument("--train-bytes", type=int, default=2_000_000, help="text to train on")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 KB, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_bytes, args.train_bytes, args.rounds, args.vocab_size = 200_000, 100_000, 1, 512

    if args.text:
        text = args.text.read_text(encoding="utf-8")[: args.max_bytes]
    else:
        text = stdlib_text(args.max_bytes)
    n_mb = len(text.encode()) / 1e6
    train_text = text[: args.train_bytes]
    print(f"text: {n_mb:.2f} MB; vocab {args.vocab_size} trained on {len(train_text):,} chars")

    # ------------------------------------------------------------------ training
    seconds, ours = timed(lambda: BPETokeniser(args.vocab_size).train(train_text))
    print(f"training, ours: {seconds:.2f} s")
    if tokenizers is not None:

        def hf_train():
            tokenizer = tokenizers.Tokenizer(models.BPE())
            tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            trainer = trainers.BpeTrainer(
                vocab_size=args.vocab_size,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False,
            )
            tokenizer.train_from_iterator([train_text], trainer)

        seconds_hf, _ = timed(hf_train)
        ratio = seconds / seconds_hf
        print(f"training, HF tokenizers (1 thread): {seconds_hf:.2f} s (ours takes {ratio:.1f}x)")

    # ------------------------------------------------------------------ encoders
    reference = None

    def pure_cold():
        ours._cache.clear()  # an empty cache (the tiktoken encoder, built once, is kept)
        ours.accelerate = False
        return ours.encode(text)

    def pure_warm():
        ours.accelerate = False
        return ours.encode(text)

    def via_tiktoken():
        ours.accelerate = True
        return ours.encode(text)

    encoders = {"ours, cold": pure_cold, "ours, warm": pure_warm}
    if tiktoken is not None:
        encoders["ours, tiktoken"] = via_tiktoken
        encoding = tiktoken.Encoding(
            "bench", pat_str=_tiktoken_gpt2_pattern(), mergeable_ranks=ours._ranks,
            special_tokens={},
        )  # fmt: skip
        encoders["tiktoken"] = lambda: encoding.encode_ordinary(text)
    if tokenizers is not None:
        hf = hf_tokenizer(ours)
        encoders["HF tokenizers"] = lambda: hf.encode(text).ids

    times: dict[str, list[float]] = {name: [] for name in encoders}
    agreement: dict[str, float] = {}
    assert GPT2_SPLIT_PATTERN == ours.pattern
    for _ in range(args.rounds):
        for name, encode in encoders.items():
            seconds, ids = timed(encode)
            times[name].append(seconds)
            ids = np.asarray(ids)
            if reference is None:
                reference = ids
            same = len(ids) == len(reference) and np.array_equal(ids, reference)
            agreement[name] = 1.0 if same else _share_equal(ids, reference)

    base = "tiktoken" if "tiktoken" in times else "ours, warm"
    print(f"\nencoding {n_mb:.2f} MB, single-threaded, best of {args.rounds}:")
    print(f"{'encoder':<16} {'MB/s':>8} {'vs ' + base:>14}   ids equal to ours")
    for name, runs in times.items():
        ratio = statistics.median(b / t for b, t in zip(times[base], runs))
        print(f"{name:<16} {n_mb / min(runs):8.2f} {ratio:13.2f}x   {agreement[name]:.4%}")
    if tiktoken is not None and agreement["tiktoken"] != 1.0:
        raise SystemExit("tiktoken's ids differ from ours")


def _share_equal(ids: np.ndarray, reference: np.ndarray) -> float:
    n = min(len(ids), len(reference))
    return float(np.mean(ids[:n] == reference[:n])) if n else 0.0


if __name__ == "__main__":
    main()
