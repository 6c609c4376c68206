"""The small models a learner trains first on a laptop CPU, tricycle against PyTorch eager,
side by side in one process: ms per training step and the ratio tricycle / torch.

    python benchmarks/small_models.py                      # every model, 1 and 2 threads
    python benchmarks/small_models.py --models gpt --threads 1 --rounds 9
    python benchmarks/small_models.py --profile dcgan_g    # cProfile of tricycle's step

- ``gpt``: a character GPT as a lecture builds one (embedding 64, 4 heads, 4 layers, context
  32, batch 16, dropout 0.2, 65 characters): one ``nn.Linear`` each for every head's keys,
  queries and values with ``masked_fill`` and ``F.softmax``, the heads concatenated, ReLU
  MLPs, ``LayerNorm``, ``Embedding``, AdamW.
- ``dcgan_d``, ``dcgan_g``: a DCGAN's discriminator step (real and fake batches, the
  generator's forward included) and generator step at 64x64, ``BCELoss`` and Adam; a 100-long
  noise vector, the narrowest width ``--dcgan-width`` (64 is usual; 16 keeps a 2-core run
  short).
- ``makemore``: a Transformer over names (4 layers, embedding 64, 4 heads, batch 32, context
  16, 27 characters; the padding after a name ignored), a fused query/key/value projection,
  tanh-GELU MLPs, AdamW.

Each model is written once, in PyTorch's words (the source strings below), and run by
``torch`` and by ``tricycle`` in its place. PyTorch is the eager
library a learner uses, with ``torch.set_num_threads``; tricycle gets the same threads for its
kernels and numpy's BLAS (``tricycle.apps.cpu.cpu_threads``). A round runs ``--steps`` steps
of each framework, in alternating order, with a pause after PyTorch's (its OpenMP workers
spin and would steal the next runner's cores); the table shows each framework's median ms per
step over the rounds, their ratio (the median of the per-round ratios) and the spread of that
ratio over the rounds (lowest-highest), which says how noisy the machine was.
"""

import argparse
import cProfile
import math
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import numpy as np  # noqa: E402
from harness import paired_ratio, race, settled, torch_or_none  # noqa: E402

import tricycle  # noqa: E402
from tricycle.apps.cpu import cpu_threads, tune_cpu_allocator  # noqa: E402

# a character GPT as a lecture builds it: one Linear each for every head's keys, queries and
# values, a lower-triangular mask, ReLU MLPs, pre-norm blocks, AdamW (sizes of a laptop run)
CHAR_GPT = r"""
B, T, E, n_heads, n_blocks, p_drop, V = 16, 32, 64, 4, 4, 0.2, 65

class OneHead(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.to_k = nn.Linear(E, size, bias=False)
        self.to_q = nn.Linear(E, size, bias=False)
        self.to_v = nn.Linear(E, size, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(T, T)))
        self.drop = nn.Dropout(p_drop)

    def forward(self, x):                                   # (B, T, E)
        t = x.shape[1]
        k, q, v = self.to_k(x), self.to_q(x), self.to_v(x)  # (B, T, size) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])        # (B, T, T)
        scores = scores.masked_fill(self.causal[:t, :t] == 0, float("-inf"))
        return self.drop(F.softmax(scores, dim=-1)) @ v     # (B, T, size)

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(OneHead(E // n_heads) for _ in range(n_heads))
        self.out = nn.Linear(E, E)
        self.drop = nn.Dropout(p_drop)

    def forward(self, x):
        return self.drop(self.out(torch.cat([head(x) for head in self.heads], dim=-1)))

class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_a, self.norm_b = nn.LayerNorm(E), nn.LayerNorm(E)
        self.attention = Attention()
        self.mlp = nn.Sequential(nn.Linear(E, 4 * E), nn.ReLU(), nn.Linear(4 * E, E),
                                 nn.Dropout(p_drop))

    def forward(self, x):
        x = x + self.attention(self.norm_a(x))
        return x + self.mlp(self.norm_b(x))

class CharGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(V, E), nn.Embedding(T, E)
        self.layers = nn.Sequential(*[Layer() for _ in range(n_blocks)])
        self.norm = nn.LayerNorm(E)
        self.head = nn.Linear(E, V)

    def forward(self, ids, targets):                        # (B, T) each
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))  # (B, T, E)
        logits = self.head(self.norm(self.layers(x)))       # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

model = CharGPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
ids = torch.from_numpy(rng.integers(0, V, (B, T)))
targets = torch.from_numpy(rng.integers(0, V, (B, T)))

def step():
    loss = model(ids, targets)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""

# a DCGAN at 64x64: a generator of transposed convolutions (4x4, stride 2) with batch norm and
# ReLU, a discriminator of strided convolutions with LeakyReLU, BCE and Adam(0.5, 0.999); its
# discriminator step (real and fake batches) and generator step. ngf = ndf = width
DCGAN = r"""
z_size, channels = 100, 3

def init_weights(m):  # N(0, 0.02) convolutions; N(1, 0.02) norm scales, zero shifts
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        torch.nn.init.normal_(next(m.parameters()), 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        scale, shift = m.parameters()
        torch.nn.init.normal_(scale, 1.0, 0.02)
        torch.nn.init.zeros_(shift)

def up(c_in, c_out, first=False):  # 1x1 -> 4x4 first, then doubling the side
    conv = nn.ConvTranspose2d(c_in, c_out, 4, 1 if first else 2, 0 if first else 1, bias=False)
    return [conv, nn.BatchNorm2d(c_out), nn.ReLU(True)]

def down(c_in, c_out, norm=True):  # halving the side
    layers = [nn.Conv2d(c_in, c_out, 4, 2, 1, bias=False)]
    return layers + ([nn.BatchNorm2d(c_out)] if norm else []) + [nn.LeakyReLU(0.2, inplace=True)]

widths = [8 * width, 4 * width, 2 * width, width]
generator = nn.Sequential(
    *up(z_size, widths[0], first=True), *up(widths[0], widths[1]), *up(widths[1], widths[2]),
    *up(widths[2], widths[3]), nn.ConvTranspose2d(width, channels, 4, 2, 1, bias=False),
    nn.Tanh())                                              # (B, 3, 64, 64)
discriminator = nn.Sequential(
    *down(channels, width, norm=False), *down(width, 2 * width), *down(2 * width, 4 * width),
    *down(4 * width, 8 * width), nn.Conv2d(8 * width, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
    nn.Flatten(0))                                          # (B,)
generator.apply(init_weights)
discriminator.apply(init_weights)
bce = nn.BCELoss()
opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
real = torch.from_numpy(rng.uniform(-1, 1, (batch_size, channels, 64, 64)).astype(np.float32))
z = torch.from_numpy(rng.standard_normal((batch_size, z_size, 1, 1)).astype(np.float32))
ones, zeros = torch.ones(batch_size), torch.zeros(batch_size)
fake = None

def d_step():
    global fake
    discriminator.zero_grad()
    bce(discriminator(real), ones).backward()
    fake = generator(z)
    bce(discriminator(fake.detach()), zeros).backward()
    opt_d.step()

def g_step():
    generator.zero_grad()
    bce(discriminator(fake), ones).backward()
    opt_g.step()
"""

# a names model as a character-level Transformer: fused query/key/value projection, heads by
# reshaping, tanh-GELU MLPs, no bias in the head, padding after each name ignored (-1), AdamW
NAMES_TRANSFORMER = r"""
T, V, n_blocks, E, n_heads, B = 16, 27, 4, 64, 4, 32

class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.register_buffer("causal", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):                                   # (B, T, E)
        b, t, e = x.shape
        heads = lambda y: y.view(b, t, n_heads, e // n_heads).transpose(1, 2)  # (B, H, T, D)
        q, k, v = (heads(y) for y in self.qkv(x).split(E, dim=2))
        scores = q @ k.transpose(-2, -1) / math.sqrt(e // n_heads)          # (B, H, T, T)
        scores = scores.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v                   # (B, H, T, D)
        return self.out(y.transpose(1, 2).contiguous().view(b, t, e))

class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_a, self.norm_b = nn.LayerNorm(E), nn.LayerNorm(E)
        self.attention = SelfAttention()
        self.up, self.down = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)

    def forward(self, x):
        x = x + self.attention(self.norm_a(x))
        return x + self.down(F.gelu(self.up(self.norm_b(x)), approximate="tanh"))

class NamesTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(V, E), nn.Embedding(T, E)
        self.layers = nn.ModuleList(Layer() for _ in range(n_blocks))
        self.norm = nn.LayerNorm(E)
        self.head = nn.Linear(E, V, bias=False)

    def forward(self, ids, targets):                        # (B, T) each
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1])[None])
        for layer in self.layers:
            x = layer(x)
        logits = self.head(self.norm(x))                    # (B, T, V)
        return F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-1)

model = NamesTransformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99))
# names: a start token, up to 15 characters, then -1 (ignored) after each name's end
X = rng.integers(1, V, (B, T))
Y = np.roll(X, -1, axis=1)
for row, length in enumerate(rng.integers(3, T, B)):
    X[row, 0], X[row, length + 1:], Y[row, length] = 0, 0, 0
    Y[row, length + 1:] = -1
X, Y = torch.from_numpy(X), torch.from_numpy(Y)

def step():
    loss = model(X, Y)
    model.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""

# model name -> (source, the step function's name)
MODELS = {
    "gpt": (CHAR_GPT, "step"),
    "dcgan_d": (DCGAN, "d_step"),
    "dcgan_g": (DCGAN, "g_step"),
    "makemore": (NAMES_TRANSFORMER, "step"),
}
DESCRIPTIONS = {
    "gpt": "character GPT, a Linear per head, B=16 T=32",
    "dcgan_d": "DCGAN D step, 64x64",
    "dcgan_g": "DCGAN G step, 64x64",
    "makemore": "names Transformer, B=32 T=16",
}


def build(library, source: str, **sizes) -> dict:
    """The namespace of ``source`` run with ``library`` as ``torch`` (seeded, the same data)."""
    library.manual_seed(0)
    space = {"torch": library, "nn": library.nn, "F": library.nn.functional, "math": math,
             "np": np, "rng": np.random.default_rng(0), **sizes}  # fmt: skip
    exec(compile(source, "<model>", "exec"), space)
    return space


def stepper(space: dict, name: str):
    """The model's step; for the DCGAN's G step, each G step follows a D step (untimed), as in
    main.py, since the G step backpropagates through the D step's fake batch."""
    if name == "g_step":
        d_step, g_step = space["d_step"], space["g_step"]

        def run():
            d_step()
            start = time.perf_counter()
            g_step()
            return time.perf_counter() - start

        return run
    step = space[name]

    def run():
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    return run


def timed(run, steps: int, threads: int, torch_threads=None):
    """A runner for ``race``: ``steps`` calls of ``run`` on ``threads`` threads; ms per step."""

    def runner() -> float:
        if torch_threads is not None:
            torch_threads(threads)
            return 1e3 * sum(run() for _ in range(steps)) / steps
        with cpu_threads(threads):
            return 1e3 * sum(run() for _ in range(steps)) / steps

    return runner


def profile(model: str, steps: int, threads: int, sizes: dict, limit: int) -> None:
    """cProfile of tricycle's ``model`` steps, the top functions by their own time and by
    cumulative time."""
    source, name = MODELS[model]
    run = stepper(build(tricycle, source, **sizes), name)
    with cpu_threads(threads):
        for _ in range(3):
            run()  # warm up: compile the kernels
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(steps):
            run()
        profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=10, help="steps per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per framework")
    parser.add_argument("--batch-size", type=int, default=8, help="the DCGAN's batch")
    parser.add_argument(
        "--dcgan-width",
        type=int,
        default=16,
        help="the DCGAN's narrowest width (the usual 64; 16 keeps a run short)",
    )
    parser.add_argument("--profile", choices=list(MODELS), help="profile tricycle's step only")
    parser.add_argument("--profile-lines", type=int, default=30)
    args = parser.parse_args(argv)
    tune_cpu_allocator()
    sizes = {"batch_size": args.batch_size, "width": args.dcgan_width}
    if args.profile:
        profile(args.profile, args.steps, args.threads[0], sizes, args.profile_lines)
        return
    torch = torch_or_none()
    if torch is None:
        print("PyTorch is not installed: tricycle only")
    rows = []
    for model in args.models:
        source, name = MODELS[model]
        dcgan = {} if source is not DCGAN else sizes
        libraries = {"tricycle": tricycle} | ({"torch": torch} if torch is not None else {})
        steps = {lib: stepper(build(module, source, **dcgan), name)
                 for lib, module in libraries.items()}  # fmt: skip
        for threads in args.threads:
            runners = {"tricycle": timed(steps["tricycle"], args.steps, threads)}
            if torch is not None:
                runners["torch"] = settled(timed(steps["torch"], args.steps, threads,
                                                 torch.set_num_threads))  # fmt: skip
            times = race(runners, args.rounds)
            row = {"model": model, "threads": threads,
                   **{lib: statistics.median(ms) for lib, ms in times.items()}}  # fmt: skip
            if torch is not None:
                ratios = np.array(times["tricycle"]) / np.array(times["torch"])
                row |= {"ratio": paired_ratio(times["tricycle"], times["torch"]),
                        "low": ratios.min(), "high": ratios.max()}  # fmt: skip
            rows.append(row)
            print(f"  {model} x{threads}: " + ", ".join(
                f"{lib} {' '.join(f'{ms:.1f}' for ms in t)}" for lib, t in times.items()),
                flush=True)  # fmt: skip
    print(f"\n{'model':42s}{'threads':>8s}{'tricycle ms':>13s}{'torch ms':>10s}"
          f"{'tricycle/torch':>16s}{'spread':>13s}")  # fmt: skip
    for row in rows:
        line = f"{DESCRIPTIONS[row['model']]:42s}{row['threads']:8d}{row['tricycle']:13.2f}"
        if "torch" in row:
            spread = f"{row['low']:.2f}-{row['high']:.2f}"
            line += f"{row['torch']:10.2f}{row['ratio']:16.2f}{spread:>13s}"
        print(line)


if __name__ == "__main__":
    main()
