"""A small convolutional network on scikit-learn's handwritten digits.

    pip install scikit-learn                 # the digits ship with it (or ".[test]")
    python examples/digits_cnn.py            # test accuracy ~0.99 in seconds on a CPU

1,797 greyscale 8x8 images of the digits 0-9 (scikit-learn ships them: no download); a
quarter of them, stratified, is held out for testing. ``--seed`` seeds tricycle's generator
(weights, dropout), the split and the order of the batches: the same seed, the same number.
The network:

    (N, 1, 8, 8) -> Conv2d 3x3, 32 channels -> BatchNorm2d -> ReLU         # (N, 32, 8, 8)
                 -> Conv2d 3x3, 64 channels -> BatchNorm2d -> ReLU         # (N, 64, 8, 8)
                 -> MaxPool2d 2                                            # (N, 64, 4, 4)
                 -> Flatten -> Dropout -> Dense                            # (N, 10)

trained with AdamW (cosine learning-rate decay) and cross-entropy for a few epochs.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.activation import ReLU  # noqa: E402
from tricycle.apps.cli import Parser, positive_int, seed  # noqa: E402
from tricycle.apps.precompile import precompile  # noqa: E402
from tricycle.layers import Dense, Dropout, Sequential  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.nn.conv import BatchNorm2d, Conv2d, Flatten, MaxPool2d  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402
from tricycle.scheduler import CosineSchedule  # noqa: E402
from tricycle.tensor import no_grad, to_tensor  # noqa: E402


def load_digits_split(seed: int = 0):
    """(x_train, x_test, y_train, y_test): images (N, 1, 8, 8) scaled to [0, 1], int labels.
    Needs scikit-learn (imported here, so that --help works without it)."""
    try:
        from sklearn.datasets import load_digits  # noqa: PLC0415
        from sklearn.model_selection import train_test_split  # noqa: PLC0415
    except ImportError:
        raise SystemExit(
            "digits_cnn.py needs scikit-learn for the digits: pip install scikit-learn "
            '(or pip install -e ".[test]")'
        ) from None
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8)
    return train_test_split(
        images, digits.target, test_size=0.25, stratify=digits.target, random_state=seed
    )


def build_model() -> Sequential:
    """The network of the module docstring."""
    return Sequential(
        Conv2d(1, 32, kernel_size=3, padding=1),
        BatchNorm2d(32),
        ReLU(),
        Conv2d(32, 64, kernel_size=3, padding=1),
        BatchNorm2d(64),
        ReLU(),
        MaxPool2d(2),
        Flatten(),
        Dropout(0.25),
        Dense(64 * 4 * 4, 10),
    )


def accuracy(model: Sequential, images, labels, batch_size: int = 512) -> float:
    """The fraction of ``images`` classified as ``labels``, in evaluation mode."""
    model.eval()
    with no_grad():
        predictions = np.concatenate(
            [
                model(to_tensor(images[i : i + batch_size])).array.argmax(axis=-1)
                for i in range(0, len(images), batch_size)
            ]
        )
    model.train()
    return float(np.mean(predictions == labels))


def train(epochs: int = 10, batch_size: int = 32, learning_rate: float = 2e-3, seed: int = 0,
          split=None):  # fmt: skip
    """Train on the training split (``split``: ``load_digits_split(seed)``'s, loaded if not
    given); returns (model, test accuracy)."""
    x_train, x_test, y_train, y_test = load_digits_split(seed) if split is None else split
    manual_seed(seed)  # tricycle's generator: the weights and dropout (np.random is not it)
    model = build_model()
    optimiser = AdamW(learning_rate=learning_rate, weight_decay=1e-4)
    steps_per_epoch = -(-len(x_train) // batch_size)
    schedule = CosineSchedule(learning_rate, learning_rate / 100, epochs * steps_per_epoch)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        for step, i in enumerate(range(0, len(order), batch_size)):
            batch = order[i : i + batch_size]
            optimiser.learning_rate = schedule(epoch * steps_per_epoch + step)
            train_step(model, optimiser, x_train[batch], y_train[batch])
    return model, accuracy(model, x_test, y_test)


def train_step(model: Sequential, optimiser: AdamW, images, labels) -> None:
    """One step on images (B, 1, 8, 8) and their labels (B,)."""
    logits = model(to_tensor(images))  # (B, 10)
    CrossEntropy()(to_tensor(labels, dtype=int), logits).backward()
    optimiser.step()
    model.update(optimiser)


def small_steps() -> None:
    """A training step and an evaluation of the network on two images: what ``precompile``
    runs to learn the CPU kernels a run calls and their argument types."""
    model, images, labels = build_model(), np.zeros((2, 1, 8, 8), np.float32), np.arange(2)
    train_step(model, AdamW(learning_rate=1e-3, weight_decay=1e-4), images, labels)
    accuracy(model, images, labels)


def main(argv=None) -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=positive_int, default=10)
    parser.add_argument("--seed", type=seed, default=0, help="the same seed, the same accuracy")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    split = load_digits_split(args.seed)  # says what to install without scikit-learn
    precompile(small_steps)  # the CPU kernels, in the background
    _, test_accuracy = train(epochs=args.epochs, seed=args.seed, split=split)
    print(f"test accuracy {test_accuracy:.4f} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
