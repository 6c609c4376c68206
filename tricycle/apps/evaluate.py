"""Evaluate a trained GPT: HellaSwag-style multiple choice, and text samples.

    python -m tricycle.apps.evaluate runs/gpt2 --hellaswag hellaswag_val.jsonl
    python -m tricycle.apps.evaluate runs/gpt2/model.safetensors       # downloads the val set

Multiple choice, as in Karpathy's GPT-2 reproduction: each ending is appended to the context
(with a leading space) and scored by the model's cross-entropy on the ending's tokens only.
"acc" picks the ending with the lowest *summed* loss, "acc_norm" the lowest *mean* loss per
token (which does not favour short endings). Endings of many examples go through the model
together, right-padded to one length; a causal model never sees the padding, and the padding
is masked out of the losses. No graph is built.

`evaluate_hellaswag` scores a share of the examples (with `rank`/`world_size`, each rank
scores every world_size-th example: the caller sums the counts over the ranks, as the
training hook does); `sample_text`
writes a sample. During training, `hellaswag_hook` and `sample_hook` make them
`tricycle.apps.training.Hook`s of a `Trainer` (`tricycle-train --eval-hellaswag`,
`--sample-interval`).

MODEL (command line) is a run directory (its best weights, `best.safetensors`; `--weights
last`: its `model.safetensors`; a run of an earlier version: `best.npz`, `checkpoint.npz`), one
of those files (safe: no code runs on load)
or a pickled `model.pkl` (loading a pickle runs code from the file: only trusted ones), read
by `tricycle.apps.runs.load_model` as `tricycle-sample` reads it: GPT or Llama, with the run's
own tokeniser (or `--tokeniser`).
"""

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tricycle.apps.checkpoint import CheckpointError
from tricycle.apps.cli import (
    DefaultsHelp,
    Parser,
    add_weights_flag,
    ends_in_one_line,
    positive_int,
    warnings_in_one_line,
)
from tricycle.apps.runs import load_model
from tricycle.apps.training import Hook
from tricycle.backend import cupy_available, to_host_array
from tricycle.loss import cross_entropy_forward
from tricycle.models import GPT
from tricycle.tensor import no_grad
from tricycle_datasets.download import DownloadError
from tricycle_datasets.hellaswag import URL, Example, load_val, read_examples, render, render_all


# ------------------------------------------------------------------ multiple choice
def ending_losses(
    model: GPT, rows: list[np.ndarray], n_context: list[int], precision=None
) -> tuple[np.ndarray, np.ndarray]:
    """(summed, mean) cross-entropy of each row's ending tokens: (R,) each, float64.

    Rows longer than the context window keep their last `context_window` tokens.
    """
    window = model.config.context_window
    starts = [max(0, len(row) - window) for row in rows]
    rows = [row[s:] for row, s in zip(rows, starts)]
    # the first ending token is predicted at position n_context - 1 (at least position 0)
    first = [max(n - s, 1) - 1 for n, s in zip(n_context, starts)]
    length = max(len(row) for row in rows)
    ids = np.zeros((len(rows), length), dtype=np.int64)  # (R, L), right-padded with id 0
    mask = np.zeros((len(rows), length - 1), dtype=bool)  # (R, L - 1): ending targets
    for i, (row, f) in enumerate(zip(rows, first)):
        ids[i, : len(row)] = row
        mask[i, f : len(row) - 1] = True

    xp = model.token_embedding.weights.xp
    logits = model(ids) if precision is None else precision.forward(model, ids)
    logits = logits.array.astype(xp.float32, copy=False)  # (R, L, V)
    # each position's next token (the last position's is a placeholder, masked out below);
    # the fused cross-entropy keeps each row's log-sum-exp as peak + log_sum, so a token's
    # loss needs no (R, L, V) log-probabilities of its own
    targets = xp.asarray(np.concatenate([ids[:, 1:], ids[:, :1]], axis=1))  # (R, L)
    _, (peak, log_sum, _) = cross_entropy_forward(xp, logits, targets)
    picked = xp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]  # (R, L)
    losses = (peak + log_sum).reshape(targets.shape) - picked  # (R, L)
    losses = to_host_array(losses[:, :-1]).astype(np.float64) * mask  # (R, L - 1)
    summed = losses.sum(axis=1)
    return summed, summed / np.maximum(mask.sum(axis=1), 1)


def evaluate_hellaswag(
    model: GPT,
    tokeniser,
    examples: Iterable[Example],
    rank: int = 0,
    world_size: int = 1,
    batch_rows: int = 16,
    precision=None,
) -> dict:
    """Score multiple-choice examples; returns {"n", "correct", "correct_norm", "acc",
    "acc_norm"}. With several ranks, this rank takes examples rank, rank + world_size, ...
    (sum "n" and the "correct" counts over ranks for the whole set). `batch_rows`: endings
    per forward pass."""
    if not 0 <= rank < world_size:
        raise ValueError(f"evaluate_hellaswag: rank {rank} must be in [0, {world_size})")
    mine = (e for i, e in enumerate(examples) if i % world_size == rank)
    items = ((*render(tokeniser, example), example.label) for example in mine)
    return score(model, items, batch_rows, precision)


def score(
    model: GPT, items: Iterable[tuple[list[np.ndarray], int, int]], batch_rows: int = 16,
    precision=None,
) -> dict:  # fmt: skip
    """`evaluate_hellaswag` on rendered examples: (rows, n_context, label) each."""
    counts = {"n": 0, "correct": 0, "correct_norm": 0}
    pending: list[tuple[list[np.ndarray], int, int]] = []  # (rows, n_context, label)

    def score_pending() -> None:
        rows = [row for item in pending for row in item[0]]
        n_context = [item[1] for item in pending for _ in item[0]]
        summed, mean = ending_losses(model, rows, n_context, precision)
        start = 0
        for item_rows, _, label in pending:
            stop = start + len(item_rows)
            counts["n"] += 1
            counts["correct"] += int(np.argmin(summed[start:stop]) == label)
            counts["correct_norm"] += int(np.argmin(mean[start:stop]) == label)
            start = stop
        pending.clear()

    was_training = model.training
    model.eval()
    try:
        with no_grad():
            for item in items:
                pending.append(item)
                if sum(len(rows) for rows, _, _ in pending) >= batch_rows:
                    score_pending()
            if pending:
                score_pending()
    finally:
        if was_training:
            model.train()
    n = max(counts["n"], 1)
    return {**counts, "acc": counts["correct"] / n, "acc_norm": counts["correct_norm"] / n}


# ------------------------------------------------------------------ samples
def sample_text(
    model: GPT,
    tokeniser,
    prompt: str = "",
    n_tokens: int = 100,
    temperature: float = 0.8,
    top_k: int | None = 50,
    seed: int | None = 0,
) -> str:
    """`prompt` and a sampled continuation of `n_tokens` tokens, as text. An empty prompt
    starts from the end-of-text token (a new document) when the tokeniser has one, else from
    a newline. Reproducible with `seed`; leaves the model's train/eval mode as it was."""
    eot = getattr(tokeniser, "eot_id", None)
    if prompt:
        ids = tokeniser.encode(prompt)
    elif eot is not None:
        ids = np.array([eot])
    else:
        ids = tokeniser.encode("\n")
    ids = ids[-model.config.context_window :]
    out = model.generate(
        ids,
        n_tokens,
        temperature=temperature,
        top_k=top_k,
        rng=np.random.default_rng(seed),
        vocab_limit=getattr(tokeniser, "n_tokens", None),  # ids the tokeniser can decode
    )
    text = tokeniser.decode(out[len(ids) :])
    return prompt + text


# ------------------------------------------------------------------ during training
def hellaswag_hook(tokeniser, examples: Iterable[Example], batch_rows: int = 16) -> Hook:
    """A ``Trainer`` hook: at each evaluation, HellaSwag ``acc`` and ``acc_norm`` of the
    model on ``examples`` (rendered once, here: a tokeniser that cannot encode them fails at
    once), split over the trainer's ranks and summed across them, recorded as
    ``hellaswag_acc`` and ``hellaswag_acc_norm``."""
    return Hook(HellaSwag(render_all(tokeniser, examples), batch_rows))


def sample_hook(tokeniser, interval: int, prompt: str = "", n_tokens: int = 100) -> Hook:
    """A ``Trainer`` hook: every ``interval`` steps, rank 0 samples ``n_tokens`` tokens
    after ``prompt`` (``sample_text``, seeded by the step), recorded as ``sample``."""
    return Hook(Sample(tokeniser, prompt, n_tokens), interval)


def training_hooks(tokeniser, items, sample_interval, prompt, n_tokens) -> list[Hook]:
    """The hooks of a ``tricycle-train`` run: HellaSwag on ``items`` (rendered examples,
    ``render_all``; None: none) at each evaluation, a sample of ``n_tokens`` after ``prompt``
    every ``sample_interval`` steps (None: none)."""
    hooks = [] if items is None else [Hook(HellaSwag(items))]
    if sample_interval is not None:
        hooks.append(sample_hook(tokeniser, sample_interval, prompt, n_tokens))
    return hooks


@dataclass(frozen=True)
class HellaSwag:
    """A hook's work: HellaSwag on ``items`` (rendered examples), this rank's share of them
    scored, the counts summed over the ranks."""

    items: list
    batch_rows: int = 16

    def __call__(self, trainer) -> dict:
        world = trainer.world
        mine = self.items[world.rank :: world.world_size]
        part = score(trainer.model, mine, self.batch_rows, precision=trainer.policy)
        counts = np.array([part["n"], part["correct"], part["correct_norm"]], dtype=np.float64)
        n, correct, correct_norm = world.all_reduce(counts, mean=False)
        return {"hellaswag_acc": correct / n, "hellaswag_acc_norm": correct_norm / n}


@dataclass(frozen=True)
class Sample:
    """A hook's work: rank 0 samples ``n_tokens`` tokens after ``prompt``, seeded by the
    step."""

    tokeniser: object
    prompt: str
    n_tokens: int

    def __call__(self, trainer) -> dict:
        if not trainer.world.is_main:
            return {}
        text = sample_text(trainer.model, self.tokeniser, self.prompt, self.n_tokens,
                           seed=trainer.step)  # fmt: skip
        return {"sample": text}


# ------------------------------------------------------------------ command line
def parse_args(argv=None) -> argparse.Namespace:
    parser = Parser(
        prog="python -m tricycle.apps.evaluate",
        description="Score a trained GPT on HellaSwag-style multiple choice (acc, acc_norm). "
        "A pickled model.pkl runs code from the file when loaded: only use trusted ones.",
        formatter_class=DefaultsHelp,
    )
    add = parser.add_argument
    add("model", type=Path, help="run directory, model.safetensors, Hugging Face model directory "
        "or model.pkl")  # fmt: skip
    add("--hellaswag", type=Path, help="a HellaSwag JSONL file (default: download the val set)")
    add("--tokeniser", type=Path, help="tokeniser file (default: the run's own)")
    add("--limit", type=positive_int, help="score only the first N examples")
    add("--batch-rows", type=positive_int, default=16, help="endings per forward pass")
    add("--device", choices=["cpu", "gpu"], default="cpu", help="where the model runs")
    add_weights_flag(parser)
    return parser.parse_args(argv)


@warnings_in_one_line("evaluate")
@ends_in_one_line("evaluate", "--batch-rows")
def main(argv=None) -> dict:
    args = parse_args(argv)
    try:
        notes = []  # said once the examples are there too: an error is the only line
        model, tokeniser = load_model(args.model, args.tokeniser, weights=args.weights,
                                      say=notes.append)  # fmt: skip
        if args.hellaswag is not None:
            examples = read_examples(args.hellaswag, args.limit)
        else:
            examples = load_val(args.limit)
    except DownloadError as error:  # offline: say which flag gives the file instead
        raise SystemExit(f"evaluate: {error}; pass --hellaswag FILE (a copy of {URL})") from None
    except (CheckpointError, OSError, ValueError) as error:
        raise SystemExit(f"evaluate: {error}") from None
    for note in notes:
        print(note, file=sys.stderr)
    if args.device == "gpu":
        if not cupy_available():
            raise SystemExit("evaluate: --device gpu, but no CUDA GPU is available")
        model.to_gpu()
    try:  # an example the tokeniser cannot encode (a character-level run's alphabet)
        result = evaluate_hellaswag(model, tokeniser, examples, batch_rows=args.batch_rows)
    except ValueError as error:
        source = args.hellaswag or "the HellaSwag val set"
        raise SystemExit(f"evaluate: {source}: {error}") from None
    print(json.dumps({"hellaswag": result}))
    return result


if __name__ == "__main__":
    main()
