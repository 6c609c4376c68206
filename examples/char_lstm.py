"""A character-level LSTM language model on tiny-shakespeare, trained with truncated
backpropagation through time (char-rnn).

    python examples/char_lstm.py --data-dir DIR     # DIR holds tinyshakespeare.txt
    python examples/char_lstm.py                    # $TRICYCLE_DATA_DIR, else downloads it (cached)

The training text is cut into ``batch_size`` streams of consecutive characters. Each step
reads the next ``bptt`` characters of every stream and starts from the LSTM state that the
previous step ended with, so the model can carry context across steps; the gradient flows
back through these ``bptt`` characters only (the carried state is detached). That is
truncated backpropagation through time: memory and time per step stay fixed however long
the text is.

    ids (N, T) -> Embedding -> LSTM (num_layers, batch_first) -> Dense -> logits (N, T, 65)

The validation loss is the mean over every character of the held-out last 10% of the text,
read the same way (streams, carried state).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.apps.cli import (  # noqa: E402
    Parser,
    ends_in_one_line,
    positive_float,
    positive_int,
    probability,
    seed,
    shakespeare_in_one_line,
)
from tricycle.apps.precompile import precompile  # noqa: E402
from tricycle.layers import Dense, Embedding, Layer  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.nn.recurrent import LSTM  # noqa: E402
from tricycle.optimisers import AdamW, clip_factor, grad_norm  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402
from tricycle.scheduler import CosineSchedule  # noqa: E402
from tricycle.tensor import no_grad, to_tensor  # noqa: E402
from tricycle_datasets.shakespeare import ShakespeareChar  # noqa: E402


class CharLSTM(Layer):
    """Embedding, a stack of LSTM layers, and a Dense head over the characters."""

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int, num_layers: int,
                 dropout: float = 0.0):  # fmt: skip
        self.embedding = Embedding(vocab_size, embedding_dim)
        self.lstm = LSTM(embedding_dim, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.head = Dense(hidden_size, vocab_size)

    def forward(self, ids, state=None):
        """ids (N, T) -> (logits (N, T, V), (h, c))."""
        outputs, state = self.lstm(self.embedding(ids), state)  # (N, T, H)
        return self.head(outputs), state


def streams(tokens: np.ndarray, batch_size: int) -> np.ndarray:
    """The tokens cut into ``batch_size`` rows of consecutive text: (batch_size, length)."""
    length = len(tokens) // batch_size
    return tokens[: length * batch_size].reshape(batch_size, length)


def detach(state):
    """The carried state without its graph: truncation of the backpropagation."""
    h, c = state
    return h.detach(), c.detach()


def evaluate(model: CharLSTM, tokens: np.ndarray, batch_size: int, bptt: int) -> float:
    """Mean cross-entropy (nats per character) over ``tokens``, read as in training."""
    loss_fn, rows = CrossEntropy(), streams(tokens, batch_size)
    total, count, state = 0.0, 0, None
    model.eval()
    with no_grad():
        for start in range(0, rows.shape[1] - 1, bptt):
            inputs = rows[:, start : start + bptt]
            targets = rows[:, start + 1 : start + bptt + 1]
            inputs = inputs[:, : targets.shape[1]]
            logits, state = model(to_tensor(inputs, dtype=int), state)
            total += loss_fn(to_tensor(targets, dtype=int), logits).item() * targets.size
            count += targets.size
    model.train()
    return total / count


def sample(model: CharLSTM, tokeniser, prompt: str, length: int, temperature: float, rng):
    """Continue ``prompt`` by ``length`` characters, one LSTM step per character."""
    ids, out = tokeniser.encode(prompt), []
    model.eval()
    with no_grad():
        logits, state = model(to_tensor(ids[None], dtype=int))
        for _ in range(length):
            z = logits.array[0, -1].astype(np.float64) / temperature
            p = np.exp(z - z.max())
            next_id = int(rng.choice(len(p), p=p / p.sum()))
            out.append(next_id)
            logits, state = model(to_tensor([[next_id]], dtype=int), state)
    model.train()
    return tokeniser.decode(np.array(out))


def build(args, vocab_size: int):
    """The run's model and its optimiser."""
    model = CharLSTM(vocab_size, args.embedding_dim, args.hidden_size, args.num_layers,
                     args.dropout)  # fmt: skip
    return model, AdamW(learning_rate=args.lr, betas=(0.9, 0.99), weight_decay=0.01)


def train_step(model: CharLSTM, optimiser: AdamW, inputs, targets, state):
    """One step on inputs and targets (N, T), from the carried ``state``: returns the loss
    and the state to carry on, without its graph (truncated backpropagation)."""
    logits, state = model(to_tensor(inputs, dtype=int), state)
    loss = CrossEntropy()(to_tensor(targets, dtype=int), logits)
    loss.backward()
    optimiser.step()
    optimiser.update(model.named_parameters(), clip_factor(grad_norm(model), 1.0))
    model.zero_grad()
    return loss, detach(state)


def small_steps(args, vocab_size: int) -> None:
    """A training step, an evaluation and the first sampled characters of the run's model on
    2 streams of 2 characters: what ``precompile`` runs to learn the CPU kernels the run calls
    and their argument types (the model's sizes are the run's: the LSTM's kernels depend on
    its hidden size)."""
    model, optimiser = build(args, vocab_size)
    rows = streams(np.arange(6) % vocab_size, 2)  # (2, 3)
    train_step(model, optimiser, rows[:, :2], rows[:, 1:], None)
    evaluate(model, rows.ravel(), 2, 2)
    with no_grad():  # sampling: the prompt, then one character at a time
        _, state = model(to_tensor(rows[:1, :2], dtype=int))
        model(to_tensor(rows[:1, :1], dtype=int), state)


def parse_args(argv=None):
    parser = Parser(description="A char-rnn LSTM on tiny-shakespeare.")
    add = parser.add_argument
    add("--data-dir", help="directory with tinyshakespeare.txt (default: $TRICYCLE_DATA_DIR, "
        "else download, cached)")  # fmt: skip
    add("--steps", type=positive_int, default=600, help="optimiser steps")
    add("--batch-size", type=positive_int, default=64, help="parallel streams of text")
    add("--bptt", type=positive_int, default=64, help="characters backpropagated through per step")
    add("--hidden-size", type=positive_int, default=256)
    add("--embedding-dim", type=positive_int, default=64)
    add("--num-layers", type=positive_int, default=1)
    add("--dropout", type=probability, default=0.0, help="between LSTM layers")
    add("--lr", type=positive_float, default=5e-3, help="peak learning rate (cosine decay to 1/10)")
    add("--eval-interval", type=positive_int, default=200)
    add("--seed", type=seed, default=0, help="the same seed, the same losses")
    return parser.parse_args(argv)


def main(argv=None) -> float:
    args = parse_args(argv)
    sizes = "--hidden-size, --embedding-dim, --num-layers, --batch-size or --bptt"
    with ends_in_one_line("char_lstm.py", sizes):  # out of memory: one line
        return run(args)


def load_corpus(args) -> ShakespeareChar:
    """The corpus, or SystemExit with one line naming --data-dir."""
    with shakespeare_in_one_line("char_lstm.py", args.data_dir):
        return ShakespeareChar(data_dir=args.data_dir)


def run(args) -> float:
    """The run of ``args``: training, validation and a sample; the last validation loss."""
    corpus = load_corpus(args)
    train_length = len(corpus.train_tokens) // args.batch_size  # each stream's characters
    if train_length <= args.bptt or len(corpus.valid_tokens) // args.batch_size < 2:
        raise SystemExit(
            f"char_lstm.py: {args.batch_size} streams (--batch-size) of --bptt {args.bptt} + 1 "
            f"characters need more text than {len(corpus.train_tokens):,} characters to train "
            f"on and {len(corpus.valid_tokens):,} to validate on"
        )
    precompile(small_steps, args, corpus.vocab_size)  # the CPU kernels, in the background
    manual_seed(args.seed)  # tricycle's generator: the weights and dropout
    model, optimiser = build(args, corpus.vocab_size)
    schedule = CosineSchedule(args.lr, args.lr / 10, args.steps, warmup_steps=min(20, args.steps))
    rows = streams(corpus.train_tokens, args.batch_size)  # (N, length)
    print(f"{model.num_parameters():,} parameters; {rows.shape[1] // args.bptt} steps per epoch")

    state, start, begin = None, 0, time.perf_counter()
    for step in range(1, args.steps + 1):
        if start + args.bptt + 1 > rows.shape[1]:  # end of an epoch: back to the start
            state, start = None, 0
        inputs = rows[:, start : start + args.bptt]  # (N, T)
        targets = rows[:, start + 1 : start + args.bptt + 1]
        start += args.bptt
        optimiser.learning_rate = schedule(step - 1)
        loss, state = train_step(model, optimiser, inputs, targets, state)
        if step % args.eval_interval == 0 or step == args.steps:
            valid = evaluate(model, corpus.valid_tokens, args.batch_size, args.bptt)
            elapsed = time.perf_counter() - begin
            print(f"step {step}: train loss {loss.item():.3f}, validation loss {valid:.3f} "
                  f"({elapsed:.0f} s)", flush=True)  # fmt: skip

    rng = np.random.default_rng(args.seed)
    print(sample(model, corpus.tokeniser, "ROMEO:\n", 300, 0.8, rng))
    return valid


if __name__ == "__main__":
    main()
