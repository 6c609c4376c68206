"""Pre-train a small character-level BERT on Shakespeare and Python, then fine-tune it to tell
a line of one from a line of the other.

    python examples/bert_mlm.py --data-dir DIR    # DIR holds tinyshakespeare.txt
    python examples/bert_mlm.py --plot docs/bert_mlm.png
    python examples/bert_mlm.py --data-dir DIR --device gpu    # on a CUDA GPU

The text: the lines of tiny-shakespeare and of the running Python's standard-library sources
(as ``tricycle_datasets.python_code``), stripped of their indentation, of 16 to 62
characters (longer ones cut). Shakespeare's last tenth and every tenth Python file are held
out. Each line is one sequence, ``[CLS] characters [SEP]`` padded to 64 (padding is hidden
from attention):

    ids (B, 64) -> Encoder (post-norm, n_layers x (attention, GeLU MLP))     # (B, 64, E)
        pre-training:  the masked-language-model head at the chosen 15%     # (N, V)
        fine-tuning:   the mean of the real tokens -> Dense                 # (B, 2)

1. Pre-training (masked language model): 15% of the characters are chosen, 80% of those
   masked, 10% replaced by a random character, 10% kept; the loss is read at the chosen ones
   only. Reported: masked-character accuracy on held-out lines (the same masks each time),
   and the unigram baseline (always the most frequent training character).
2. Fine-tuning: the same number of steps on the same labelled lines, once from the
   pre-trained weights and once from scratch (the same seed for everything else). Reported:
   accuracy on held-out lines of both.

Everything is seeded (``--seed``): two runs print the same numbers. ``--device gpu`` trains
the same model (the same initial weights, batches and masks, drawn on the host) with its
weights and batches on the GPU, where attention runs as the fused CUDA kernel.
"""

import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import tricycle  # noqa: E402
from tricycle.apps.cli import (  # noqa: E402
    Parser,
    ends_in_one_line,
    positive_float,
    positive_int,
    probability,
    seed,
    shakespeare_in_one_line,
    unwritable_image,
)
from tricycle.apps.precompile import precompile  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.nn.encoder import Encoder, EncoderConfig  # noqa: E402
from tricycle.nn.mlm import IGNORE, mask_tokens, masked_accuracy, mlm_loss  # noqa: E402
from tricycle.optimisers import AdamW, clip_factor, grad_norm  # noqa: E402
from tricycle.scheduler import CosineSchedule  # noqa: E402
from tricycle.tensor import no_grad  # noqa: E402
from tricycle_datasets.python_code import select_sources  # noqa: E402
from tricycle_datasets.shakespeare import load_text  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(len(SPECIALS))
SHAKESPEARE, PYTHON = 0, 1
MIN_CHARS = 16


# ------------------------------------------------------------------ data


def lines_of(text: str, max_chars: int) -> list[str]:
    """The stripped lines of ``text`` with at least MIN_CHARS characters, cut to max_chars."""
    lines = (line.strip() for line in text.splitlines())
    return [line[:max_chars] for line in lines if len(line) >= MIN_CHARS]


def load_lines(data_dir, python_bytes: int, max_chars: int):
    """{"train"|"valid": (lines, labels)}: Shakespeare's last tenth and every tenth Python
    file are held out."""
    shakespeare = lines_of(load_text(data_dir), max_chars)
    cut = len(shakespeare) * 9 // 10
    files = list(select_sources(Path(sysconfig.get_paths()["stdlib"]), python_bytes).values())
    python = {
        split: [line for i, f in enumerate(files) if (i % 10 == 9) == held
                for line in lines_of(f, max_chars)]
        for split, held in (("train", False), ("valid", True))
    }  # fmt: skip
    out = {}
    for split, shakes in (("train", shakespeare[:cut]), ("valid", shakespeare[cut:])):
        lines = shakes + python[split]
        labels = np.array([SHAKESPEARE] * len(shakes) + [PYTHON] * len(python[split]))
        out[split] = (lines, labels)
    return out


def check_lines(args, data) -> None:
    """SystemExit with one line naming the flag when the lines loaded cannot give what the
    flags ask for: checked before any training."""
    train = np.bincount(data["train"][1], minlength=2)  # (Shakespeare, Python) lines
    valid = np.bincount(data["valid"][1], minlength=2)
    if not (train[SHAKESPEARE] and valid[SHAKESPEARE]):
        where = f"--data-dir {args.data_dir}" if args.data_dir is not None else "the text"
        raise SystemExit(
            f"bert_mlm.py: {where}: tiny-shakespeare has {train[SHAKESPEARE]:,} lines of "
            f"{MIN_CHARS} characters or more to train on and {valid[SHAKESPEARE]:,} to hold out; "
            "expected the full tinyshakespeare.txt"
        )
    if not (train[PYTHON] and valid[PYTHON]):
        raise SystemExit(
            f"bert_mlm.py: --python-bytes {args.python_bytes}: the Python files that fit hold "
            f"{train[PYTHON]:,} lines to train on and {valid[PYTHON]:,} to hold out (every tenth "
            "file); expected some of each: raise --python-bytes"
        )
    for flag, value, split, counts in (
        ("--test-lines", args.test_lines, "held-out", valid),
        ("--finetune-examples", args.finetune_examples, "training", train),
    ):
        if value > counts.min():
            more = " or raise --python-bytes" if counts[PYTHON] < counts[SHAKESPEARE] else ""
            raise SystemExit(
                f"bert_mlm.py: {flag} {value} lines of each class: at most {counts.min():,} "
                f"are available ({counts[SHAKESPEARE]:,} Shakespeare and {counts[PYTHON]:,} "
                f"Python {split} lines): lower {flag}{more}"
            )


class CharVocabulary:
    """The special tokens, then every character seen at least ``min_count`` times in
    training; others read as [UNK]."""

    def __init__(self, lines: list[str], min_count: int = 5):
        chars, counts = np.unique(list("".join(lines)), return_counts=True)
        self.chars = [c for c, n in zip(chars, counts) if n >= min_count]
        self.ids = {c: i + len(SPECIALS) for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.chars)

    def encode(self, lines: list[str], length: int) -> np.ndarray:
        """(N, length) ids: [CLS] characters [SEP] [PAD]..."""
        ids = np.full((len(lines), length), PAD, dtype=np.int64)
        for row, line in enumerate(lines):
            codes = [CLS] + [self.ids.get(c, UNK) for c in line] + [SEP]
            ids[row, : len(codes)] = codes
        return ids


def balanced(labels: np.ndarray, per_class: int, rng) -> np.ndarray:
    """Indices of ``per_class`` random examples of each class."""
    return np.concatenate(
        [rng.choice(np.flatnonzero(labels == c), per_class, replace=False) for c in (0, 1)]
    )


# ------------------------------------------------------------------ training


def on_device(model, arrays) -> tuple:
    """``arrays`` (host arrays) on the device of ``model``'s weights."""
    xp = model.parameters()[0].xp
    return tuple(xp.asarray(a) for a in arrays)


def place(model, device: str):
    """``model`` with its weights moved to the GPU for ``device`` "gpu"."""
    if device == "gpu":
        model.to_gpu()
    return model


def train_steps(model, optimiser, schedule, steps: int, batch, loss_of, log=None):
    """``steps`` AdamW updates of ``loss_of(model, *batch(step))`` with clipping to norm 1,
    the batch moved to the model's device; ``log(step)`` after each."""
    model.train()
    for step in range(steps):
        loss = loss_of(model, *on_device(model, batch(step)))
        loss.backward()
        optimiser.learning_rate = schedule(step)
        optimiser.step()
        optimiser.update(model.named_parameters(), clip_factor(grad_norm(model), 1.0))
        model.zero_grad()
        if log is not None:
            log(step + 1, loss.item())


def trimmed(ids, *others):
    """ids (B, T) and what goes with them cut after the last column holding a token: a batch
    of short lines costs what its longest line does."""
    length = int((ids != PAD).sum(axis=1).max())
    return (ids[:, :length], *(other[:, :length] for other in others))


def mlm_step_loss(model, inputs, labels):
    inputs, labels = trimmed(inputs, labels)
    chosen = labels != IGNORE
    return mlm_loss(model.mlm_logits(model(inputs), chosen), labels[chosen])


def classifier_loss(model, ids, labels):
    return CrossEntropy()(labels, model.classify(trimmed(ids)[0]))


def mlm_accuracy(model, inputs, labels, batch_size: int = 256) -> float:
    """Masked-character accuracy over every chosen position of ``inputs``."""
    model.eval()
    hits = total = 0
    with no_grad():
        for a in range(0, len(inputs), batch_size):
            x, y = trimmed(inputs[a : a + batch_size], labels[a : a + batch_size])
            chosen = y != IGNORE
            logits = model.mlm_logits(model(x), chosen)
            hits += masked_accuracy(logits, y[chosen]) * chosen.sum()
            total += chosen.sum()
    model.train()
    return hits / total


def accuracy(model, ids, labels, batch_size: int = 256) -> float:
    """Classification accuracy of ``model`` on (ids, labels)."""
    model.eval()
    with no_grad():
        predictions = np.concatenate(
            [model.classify(trimmed(ids[a : a + batch_size])[0]).numpy().argmax(-1)
             for a in range(0, len(ids), batch_size)]
        )  # fmt: skip
    model.train()
    return float((predictions == labels).mean())


def fine_tune(config, pretrained, args, train_ids, train_labels, test_ids, test_labels,
              curve_ids, curve_labels):  # fmt: skip
    """Fine-tune (from ``pretrained`` weights, or from scratch if None) with the same seed,
    batches and schedule; returns (held-out accuracy, [(step, accuracy on the curve set)])."""
    tricycle.manual_seed(args.seed + 1)  # the same classifier and dropout either way
    model = Encoder(config)
    if pretrained is not None:
        heads = ("classifier.", "pooler.")
        model.load_state_dict(
            {k: v for k, v in pretrained.items() if not k.startswith(heads)}, strict=False
        )
    place(model, args.device)
    rng = np.random.default_rng(args.seed + 2)
    order = rng.integers(0, len(train_ids), size=(args.finetune_steps, args.finetune_batch))
    optimiser = AdamW(learning_rate=args.finetune_lr, weight_decay=0.01)
    schedule = CosineSchedule(args.finetune_lr, args.finetune_lr / 10, args.finetune_steps,
                              warmup_steps=args.finetune_steps // 10)  # fmt: skip
    curve = [(0, accuracy(model, curve_ids, curve_labels))]

    def log(step, loss):
        if step % args.curve_interval == 0 or step == args.finetune_steps:
            curve.append((step, accuracy(model, curve_ids, curve_labels)))

    train_steps(model, optimiser, schedule, args.finetune_steps,
                lambda s: (train_ids[order[s]], train_labels[order[s]]), classifier_loss,
                log)  # fmt: skip
    return accuracy(model, test_ids, test_labels), curve


def small_steps(args):
    """A pre-training and a fine-tuning step and their evaluations on a one-layer model of the
    run's kind (padded lines of 8): what ``precompile`` runs to learn the CPU kernels the run
    calls, and their argument types."""
    config = EncoderConfig(
        vocab_size=len(SPECIALS) + 4, context_window=8, embedding_dim=4 * args.n_heads,
        n_heads=args.n_heads, n_layers=1, dropout=args.dropout, norm=args.norm,
        pooling="mean", n_classes=2,
    )  # fmt: skip
    model = Encoder(config)
    ids = np.full((4, 8), PAD)
    ids[:, :6] = len(SPECIALS)
    ids[:, 0], ids[:, 5] = CLS, SEP
    labels, classes = np.full((4, 8), IGNORE), np.array([0, 1, 0, 1])
    labels[:, 2] = ids[:, 2]
    train_steps(model, AdamW(), lambda step: 1e-3, 1, lambda step: (ids, labels), mlm_step_loss)
    train_steps(model, AdamW(), lambda step: 1e-3, 1, lambda step: (ids, classes),
                classifier_loss)  # fmt: skip
    mlm_accuracy(model, ids, labels)
    accuracy(model, ids, classes)


def plot(path, mlm_curve, baseline, curves, finetune_steps):
    """Two panels: masked-character accuracy during pre-training, and held-out accuracy
    during fine-tuning with and without it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    left.plot(*zip(*mlm_curve), label="encoder")
    left.axhline(baseline, color="grey", linestyle="--", label="unigram baseline")
    left.set(xlabel="pre-training step", ylabel="masked-character accuracy", ylim=(0, None))
    left.legend()
    for name, curve in curves.items():
        right.plot(*zip(*curve), label=name)
    right.set(xlabel="fine-tuning step", ylabel="held-out accuracy",
              xlim=(0, finetune_steps))  # fmt: skip
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def parse_args(argv=None):
    parser = Parser(
        description="Pre-train a character-level BERT on Shakespeare and Python (masked "
        "language model), then fine-tune it to tell their lines apart."
    )
    add = parser.add_argument
    add("--data-dir", help="directory with tinyshakespeare.txt (default: $TRICYCLE_DATA_DIR, "
        "else download, cached)")  # fmt: skip
    add("--python-bytes", type=positive_int, default=2_000_000,
        help="bytes of Python sources to read")  # fmt: skip
    add("--context", type=positive_int, default=64,
        help="tokens per line: [CLS] + characters + [SEP]")  # fmt: skip
    add("--embedding-dim", type=positive_int, default=128)
    add("--n-heads", type=positive_int, default=4)
    add("--n-layers", type=positive_int, default=3)
    add("--dropout", type=probability, default=0.0)
    add("--norm", choices=["post", "pre"], default="post", help="LayerNorm after or before")
    add("--pretrain-steps", type=positive_int, default=800)
    add("--pretrain-batch", type=positive_int, default=64)
    add("--pretrain-lr", type=positive_float, default=2e-3)
    add("--finetune-steps", type=positive_int, default=60)
    add("--finetune-batch", type=positive_int, default=32)
    add("--finetune-lr", type=positive_float, default=3e-4)
    add("--finetune-examples", type=positive_int, default=256, help="labelled lines of each class")
    add("--test-lines", type=positive_int, default=800, help="held-out lines of each class")
    add("--curve-interval", type=positive_int, default=10, help="fine-tuning steps between points")
    add("--plot", help="write the accuracy curves to this PNG (needs matplotlib)")
    add("--device", choices=["cpu", "gpu"], default="cpu")
    add("--seed", type=seed, default=0)
    args = parser.parse_args(argv)
    if args.context < 3:
        parser.error(f"--context {args.context}: a line is [CLS], a character at least, [SEP]")
    if args.embedding_dim % args.n_heads:
        parser.error(f"--embedding-dim {args.embedding_dim} is not a multiple of --n-heads "
                     f"{args.n_heads}")  # fmt: skip
    if args.pretrain_batch < 2 or args.test_lines < 2:
        parser.error("--pretrain-batch and --test-lines: at least 2 (half of each source)")
    if args.device == "gpu" and not tricycle.backend.cupy_available():
        parser.error("--device gpu: no CUDA GPU (CuPy is not installed or sees no device)")
    if args.plot is not None:  # checked now: it is written after the whole run
        try:
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError:
            parser.error("--plot needs matplotlib: pip install matplotlib")
        formats = sorted(FigureCanvasBase.get_supported_filetypes())
        problem = unwritable_image(args.plot, formats)
        if problem:
            parser.error(f"--plot {problem}")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    sizes = "--context, --embedding-dim, --n-layers, --pretrain-batch or --finetune-batch"
    with ends_in_one_line("bert_mlm.py", sizes):  # out of memory: one line
        return run(args)


def run(args) -> dict:
    """The run of ``args``: pre-training, fine-tuning and the report."""
    begin = time.perf_counter()
    if args.device == "cpu":
        precompile(small_steps, args)  # the CPU kernels, in the background from here
    with shakespeare_in_one_line("bert_mlm.py", args.data_dir):
        data = load_lines(args.data_dir, args.python_bytes, args.context - 2)
    check_lines(args, data)  # before any training
    vocabulary = CharVocabulary(data["train"][0])
    train_ids = vocabulary.encode(data["train"][0], args.context)
    valid_ids = vocabulary.encode(data["valid"][0], args.context)
    train_labels, valid_labels = data["train"][1], data["valid"][1]
    rng = np.random.default_rng(args.seed)
    counts = np.bincount(train_labels)
    print(f"{counts[0]:,} Shakespeare and {counts[1]:,} Python lines for training, "
          f"{len(valid_ids):,} held out; {len(vocabulary)} tokens")  # fmt: skip

    # held-out sets: masked lines for the MLM, balanced lines for classification
    mlm_rows = balanced(valid_labels, args.test_lines // 2, rng)
    mlm_inputs, mlm_labels = mask_tokens(
        valid_ids[mlm_rows], MASK, len(vocabulary), special_ids=(PAD, CLS, SEP), rng=rng
    )
    test_rows = balanced(valid_labels, args.test_lines, rng)
    test_ids, test_labels = valid_ids[test_rows], valid_labels[test_rows]
    curve_ids, curve_labels = test_ids[::4], test_labels[::4]
    chars = train_ids[train_ids >= len(SPECIALS)]
    most_frequent = np.bincount(chars).argmax()  # the unigram baseline's one guess
    chosen = mlm_labels != IGNORE
    baseline = float((mlm_labels[chosen] == most_frequent).mean())

    # 1. pre-training: both sources in equal shares
    tricycle.manual_seed(args.seed)
    config = EncoderConfig(
        vocab_size=len(vocabulary), context_window=args.context,
        embedding_dim=args.embedding_dim, n_heads=args.n_heads, n_layers=args.n_layers,
        dropout=args.dropout, norm=args.norm, pooling="mean", n_classes=2,
    )  # fmt: skip
    model = place(Encoder(config), args.device)
    print(f"{model.num_parameters():,} parameters")
    by_class = [np.flatnonzero(train_labels == c) for c in (0, 1)]
    half = args.pretrain_batch // 2

    def pretrain_batch(step):
        rows = np.concatenate([rng.choice(rows, half) for rows in by_class])
        return mask_tokens(train_ids[rows], MASK, len(vocabulary),
                           special_ids=(PAD, CLS, SEP), rng=rng)  # fmt: skip

    mlm_curve = [(0, mlm_accuracy(model, mlm_inputs, mlm_labels))]

    def log(step, loss):
        if step % 100 == 0 or step == args.pretrain_steps:
            mlm_curve.append((step, mlm_accuracy(model, mlm_inputs, mlm_labels)))
            print(f"pre-training step {step}: loss {loss:.3f}, masked-character accuracy "
                  f"{mlm_curve[-1][1]:.3f} ({time.perf_counter() - begin:.0f} s)",
                  flush=True)  # fmt: skip

    optimiser = AdamW(learning_rate=args.pretrain_lr, weight_decay=0.01)
    schedule = CosineSchedule(args.pretrain_lr, args.pretrain_lr / 10, args.pretrain_steps,
                              warmup_steps=args.pretrain_steps // 10)  # fmt: skip
    train_steps(model, optimiser, schedule, args.pretrain_steps, pretrain_batch,
                mlm_step_loss, log)  # fmt: skip
    masked = mlm_curve[-1][1]
    print(f"masked-character accuracy {masked:.3f} (unigram baseline {baseline:.3f})")

    # 2. fine-tuning, with and without the pre-trained weights
    rows = balanced(train_labels, args.finetune_examples, np.random.default_rng(args.seed))
    labelled = (train_ids[rows], train_labels[rows], test_ids, test_labels, curve_ids,
                curve_labels)  # fmt: skip
    results, curves = {}, {}
    for name, weights in (("pre-trained", model.state_dict()), ("from scratch", None)):
        results[name], curves[name] = fine_tune(config, weights, args, *labelled)
        print(f"fine-tuned {name}: held-out accuracy {results[name]:.3f} after "
              f"{args.finetune_steps} steps ({time.perf_counter() - begin:.0f} s)",
              flush=True)  # fmt: skip
    if args.plot:
        plot(args.plot, mlm_curve, baseline, curves, args.finetune_steps)
    print(f"total {time.perf_counter() - begin:.0f} s")
    return {"masked_accuracy": masked, "unigram_baseline": baseline, **results}


if __name__ == "__main__":
    main()
