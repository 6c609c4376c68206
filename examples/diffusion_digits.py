"""A denoising diffusion model (DDPM) that draws 8x8 handwritten digits.

    python examples/diffusion_digits.py                 # a few minutes on a 2-core CPU
    python examples/diffusion_digits.py --device gpu    # on a CUDA GPU

A small U-Net (``tricycle.nn.unet``) learns to predict the noise added to scikit-learn's 1,797
digits (scaled to [-1, 1]) at a random step of a cosine noise schedule (``tricycle.nn.diffusion``),
by the epsilon-prediction loss. An exponential moving average (EMA) of its weights then turns
pure noise into digits by DDIM sampling (or DDPM's ancestral sampling, ``--sampler
ancestral``), written as a grid of images to a PNG.

To score the samples, the digits CNN of ``examples/digits_cnn.py`` is trained on the real
images (75% of them; its accuracy on the rest is printed) and labels each sample: the script
prints the share of samples it labels with probability >= 0.9, and the share of each digit
among the samples (all ten present in similar shares: the model draws every digit).
"""

import argparse
import importlib.util
import inspect
import sys
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
    seed,
    unit_interval,
    unwritable_image,
)
from tricycle.apps.precompile import precompile  # noqa: E402
from tricycle.nn.diffusion import NoiseSchedule, ancestral_sample, ddim_sample, ddpm_loss  # noqa: E402
from tricycle.nn.unet import UNet  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.scheduler import CosineSchedule  # noqa: E402
from tricycle.tensor import Tensor, no_grad  # noqa: E402

CONFIDENT = 0.9  # a sample is "recognised" when the CNN's top probability is at least this
GROUPS = inspect.signature(UNet).parameters["num_groups"].default  # of every GroupNorm: 8
LEVELS = 4  # at most: below the first, each level halves the 8x8 digits (8, 4, 2, 1)
# what matplotlib's imsave writes (raster formats through Pillow)
FORMATS = ("png", "jpg", "jpeg", "gif", "tiff", "webp", "pdf", "svg", "eps", "ps")


def channel_list(text: str) -> tuple[int, ...]:
    """Comma-separated channels per level: "32,64" -> (32, 64); each a multiple of GROUPS
    (GroupNorm's groups), at most LEVELS levels."""
    if not all(part.strip().isdigit() and int(part) > 0 for part in text.split(",")):
        raise argparse.ArgumentTypeError(f"must be integers >= 1 such as 32,64, got {text!r}")
    channels = tuple(int(part) for part in text.split(","))
    if any(c % GROUPS for c in channels):
        raise argparse.ArgumentTypeError(
            f"each must be a multiple of {GROUPS} (the U-Net's GroupNorm normalises in "
            f"{GROUPS} groups of channels), such as 32,64, got {text!r}"
        )
    if len(channels) > LEVELS:
        raise argparse.ArgumentTypeError(
            f"at most {LEVELS} levels (each below the first halves the 8x8 digits), got "
            f"{len(channels)} in {text!r}"
        )
    return channels


def parse_args(argv=None):
    parser = Parser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--steps", type=positive_int, default=1500, help="optimiser steps")
    add("--batch-size", type=positive_int, default=128)
    add("--lr", type=positive_float, default=2e-3, help="peak learning rate (cosine decay)")
    add("--channels", type=channel_list, default=(32, 64), help="U-Net channels per level")
    add("--timesteps", type=positive_int, default=1000, help="T, the steps of the noise schedule")
    add("--schedule", choices=["cosine", "linear"], default="cosine")
    add("--ema", type=unit_interval, default=0.995, help="decay of the weights' moving average")
    add("--sampler", choices=["ddim", "ancestral"], default="ddim")
    add("--sample-steps", type=positive_int, default=50, help="DDIM's network calls per sample")
    add("--samples", type=positive_int, default=256, help="images to draw and score")
    add("--out", default="diffusion_digits.png", help="the PNG grid of samples")
    add("--classifier-epochs", type=positive_int, default=10, help="training of the judging CNN")
    add("--device", choices=["cpu", "gpu"], default="cpu")
    add("--seed", type=seed, default=0)
    args = parser.parse_args(argv)
    if args.sample_steps > args.timesteps:
        parser.error(f"--sample-steps {args.sample_steps} exceeds --timesteps {args.timesteps}")
    if args.device == "gpu" and not tricycle.backend.cupy_available():
        parser.error("--device gpu: no CUDA GPU (CuPy is not installed or sees no device)")
    problem = unwritable_image(args.out, FORMATS)  # checked now: it is written after the run
    if problem:
        parser.error(f"--out {problem}")
    return args


def load_examples():
    """The digits CNN example's data split, model and training (it needs scikit-learn)."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("diffusion_digits.py needs scikit-learn for the digits: pip install scikit-learn")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import digits_cnn

    return digits_cnn


def train_diffusion(args, images):
    """Train the U-Net on ``images`` (N, 1, 8, 8) in [-1, 1]; returns (model, schedule),
    the model holding the EMA of its weights."""
    model, schedule, optimiser = build(args, args.timesteps)
    if args.device == "gpu":
        model.to_gpu()
    xp = model.parameters()[0].xp
    data = xp.asarray(images)
    warmup = min(100, args.steps // 10)
    lr = CosineSchedule(args.lr, args.lr / 20, args.steps, warmup_steps=warmup)
    parameters = model.parameters()
    ema = [p.array.copy() for p in parameters]
    generator = tricycle.random.generator()
    start, losses = time.perf_counter(), []
    for step in range(args.steps):
        batch = generator.integers(0, len(images), size=args.batch_size)
        optimiser.learning_rate = lr(step)
        loss = train_step(model, schedule, optimiser, data[xp.asarray(batch)])
        for average, p in zip(ema, parameters):  # average <- d average + (1 - d) weights
            average *= args.ema
            average += (1 - args.ema) * p.array
        losses.append(float(loss))
        if (step + 1) % 250 == 0 or step + 1 == args.steps:
            elapsed = time.perf_counter() - start
            print(f"step {step + 1}: loss {np.mean(losses):.4f} ({elapsed:.0f} s)", flush=True)
            losses = []
    for p, average in zip(parameters, ema):
        p.array = average
    return model, schedule


def build(args, timesteps: int):
    """The U-Net, its noise schedule of ``timesteps`` steps and its optimiser."""
    make = NoiseSchedule.cosine if args.schedule == "cosine" else NoiseSchedule.linear
    model = UNet(in_channels=1, channels=args.channels)
    return model, make(timesteps), AdamW(learning_rate=args.lr, weight_decay=0.0)


def train_step(model, schedule, optimiser, x0) -> Tensor:
    """One step of the epsilon-prediction loss on the images x0 (N, 1, 8, 8); the loss."""
    loss = ddpm_loss(model, schedule, Tensor(x0, requires_grad=False))
    loss.backward()
    optimiser.step()
    model.update(optimiser)
    return loss


def small_steps(args, digits_cnn) -> None:
    """A training step of the U-Net on two images, two images sampled, and the judging CNN's
    small steps: what ``precompile`` runs to learn the CPU kernels the run calls and their
    argument types (a schedule of 4 steps: ancestral sampling calls the network at each)."""
    model, schedule, optimiser = build(args, 4)
    train_step(model, schedule, optimiser, np.zeros((2, 1, 8, 8), np.float32))
    sample(argparse.Namespace(**{**vars(args), "samples": 2, "sample_steps": 2}), model, schedule)
    digits_cnn.small_steps()


def sample(args, model, schedule) -> np.ndarray:
    """``args.samples`` images (N, 8, 8) in [0, 1], on the host."""
    shape = (args.samples, 1, 8, 8)
    if args.sampler == "ddim":
        x = ddim_sample(model, schedule, shape, steps=args.sample_steps)
    else:
        x = ancestral_sample(model, schedule, shape)
    x = tricycle.backend.to_host_array(x)[:, 0]
    return np.clip((x + 1) / 2, 0, 1)


def write_grid(images: np.ndarray, path: str, scale: int = 4) -> None:
    """The images (N, 8, 8) in [0, 1] as a square grid with 1-pixel gaps, ink dark on white,
    each pixel ``scale`` x ``scale``; matplotlib writes it (no pyplot state)."""
    from matplotlib.image import imsave

    n, size = len(images), images.shape[-1]
    columns = int(np.ceil(np.sqrt(n)))
    rows = -(-n // columns)
    cell = size + 1
    grid = np.zeros((rows * cell + 1, columns * cell + 1))
    for k, image in enumerate(images):
        r, c = divmod(k, columns)
        grid[1 + r * cell : 1 + r * cell + size, 1 + c * cell : 1 + c * cell + size] = image
    grid = np.kron(grid, np.ones((scale, scale)))
    imsave(path, grid, cmap="gray_r", vmin=0, vmax=1)


def probabilities(classifier, images: np.ndarray) -> np.ndarray:
    """The classifier's softmax over the ten digits for images (N, 8, 8) in [0, 1]."""
    classifier.eval()
    with no_grad():
        logits = classifier(Tensor(images[:, None].astype(np.float32))).array
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def main(argv=None) -> dict:
    args = parse_args(argv)
    digits_cnn = load_examples()
    if importlib.util.find_spec("matplotlib") is None:  # it writes --out, after the run
        sys.exit("diffusion_digits.py needs matplotlib to write --out: pip install matplotlib")
    with ends_in_one_line("diffusion_digits.py", "--batch-size, --samples or --channels"):
        return run(args, digits_cnn)


def run(args, digits_cnn) -> dict:
    """The run of ``args``: the judging CNN, the diffusion model, its samples and their
    scores."""
    start = time.perf_counter()
    tricycle.manual_seed(args.seed)
    split = digits_cnn.load_digits_split(args.seed)
    # the CPU kernels, in the background from here (a U-Net on the GPU needs only the CNN's)
    if args.device == "cpu":
        precompile(small_steps, args, digits_cnn)
    else:
        precompile(digits_cnn.small_steps)

    # the judge: the digits CNN trained on real images (on the CPU: it takes seconds)
    classifier, accuracy = digits_cnn.train(args.classifier_epochs, seed=args.seed, split=split)
    print(f"digits CNN: test accuracy {accuracy:.3f} on real images", flush=True)

    x_train, x_test, _, _ = split
    images = np.concatenate([x_train, x_test]) * 2 - 1  # (1797, 1, 8, 8) in [-1, 1]
    model, schedule = train_diffusion(args, images)
    samples = sample(args, model, schedule)
    write_grid(samples, args.out)

    p = probabilities(classifier, samples)
    confident = float(np.mean(p.max(axis=1) >= CONFIDENT))
    shares = np.bincount(p.argmax(axis=1), minlength=10) / len(p)
    print(f"wrote {args.out}: {len(samples)} samples by {args.sampler}")
    print(f"labelled with probability >= {CONFIDENT}: {confident:.1%}")
    print("share of each digit: " + ", ".join(f"{d}: {s:.1%}" for d, s in enumerate(shares)))
    print(f"total time {time.perf_counter() - start:.0f} s")
    return {"confident": confident, "shares": shares, "accuracy": accuracy, "samples": samples}


if __name__ == "__main__":
    main()
