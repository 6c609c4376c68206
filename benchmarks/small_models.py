"""The small models a learner trains first on a laptop CPU, tricycle against PyTorch eager,
side by side in one process: ms per training step and the ratio tricycle / torch.

    python benchmarks/small_models.py                      # every model, 1 and 2 threads
    python benchmarks/small_models.py --models gpt --threads 1 --rounds 9
    python benchmarks/small_models.py --profile dcgan_g    # cProfile of tricycle's step

- ``gpt``: the lecture GPT of Karpathy's ng-video-lecture (``gpt.py`` shrunk: n_embd 64, 4 heads,
  4 layers, block_size 32, batch 16, dropout 0.2, 65 characters): its ``Head`` of separate
  ``nn.Linear`` keys, queries and values with ``masked_fill`` and ``F.softmax``,
  ``MultiHeadAttention`` concatenating them, ``FeedFoward``, ``LayerNorm``, ``Embedding``, AdamW.
- ``dcgan_d``, ``dcgan_g``: pytorch/examples dcgan's discriminator step (real and fake batches,
  the generator's forward included) and generator step at 64x64, ``BCELoss`` and Adam; nz 100,
  ngf = ndf = ``--dcgan-width`` (main.py's default is 64; 16 keeps a 2-core run short).
- ``makemore``: makemore's ``Transformer`` at its defaults (4 layers, n_embd 64, 4 heads,
  batch 32) on names (block_size 16, 27 characters), AdamW.

Each model is written once, in PyTorch's words (the source strings below), and run as written
by ``torch`` and by ``tricycle`` in its place, as the tests run the scripts
(tests/test_karpathy_lectures.py, tests/test_torch_examples_e.py). PyTorch is the eager
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

# ng-video-lecture's gpt.py, its modules and training step (the sizes as the brief's lecture run)
LECTURE_GPT = r"""
batch_size, block_size, n_embd, n_head, n_layer, dropout = 16, 32, 64, 4, 4, 0.2
vocab_size, learning_rate, device = 65, 3e-4, 'cpu'

class Head(nn.Module):
    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B,T,C = x.shape
        k = self.key(x)   # (B,T,hs)
        q = self.query(x) # (B,T,hs)
        wei = q @ k.transpose(-2,-1) * k.shape[-1]**-0.5 # (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1) # (B, T, T)
        wei = self.dropout(wei)
        v = self.value(x) # (B,T,hs)
        out = wei @ v # (B, T, hs)
        return out

class MultiHeadAttention(nn.Module):
    def __init__(self, num_heads, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        out = self.dropout(self.proj(out))
        return out

class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.ReLU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)

class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        head_size = n_embd // n_head
        self.sa = MultiHeadAttention(n_head, head_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x

class GPTLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head=n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx) # (B,T,C)
        pos_emb = self.position_embedding_table(torch.arange(T, device=device)) # (T,C)
        x = tok_emb + pos_emb # (B,T,C)
        x = self.blocks(x) # (B,T,C)
        x = self.ln_f(x) # (B,T,C)
        logits = self.lm_head(x) # (B,T,vocab_size)
        B, T, C = logits.shape
        loss = F.cross_entropy(logits.view(B*T, C), targets.view(B*T))
        return logits, loss

model = GPTLanguageModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
xb = torch.from_numpy(rng.integers(0, vocab_size, (batch_size, block_size)))
yb = torch.from_numpy(rng.integers(0, vocab_size, (batch_size, block_size)))

def step():
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""

# pytorch/examples dcgan/main.py's models and its two steps (weights_init by position: tricycle
# names a convolution's tensor weights and a norm's gamma, beta)
DCGAN = r"""
nz, nc = 100, 3

def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(next(m.parameters()), 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        weight, bias = m.parameters()
        torch.nn.init.normal_(weight, 1.0, 0.02)
        torch.nn.init.zeros_(bias)

class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(     nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2,     ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(    ngf,      nc, 4, 2, 1, bias=False),
            nn.Tanh()
        )

    def forward(self, input):
        return self.main(input)

class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)

netG, netD = Generator(), Discriminator()
netG.apply(weights_init)
netD.apply(weights_init)
criterion = nn.BCELoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
real_cpu = torch.from_numpy(rng.uniform(-1, 1, (batch_size, nc, 64, 64)).astype(np.float32))
noise = torch.from_numpy(rng.standard_normal((batch_size, nz, 1, 1)).astype(np.float32))
label = torch.full((batch_size,), 1, dtype=real_cpu.dtype)
fake = None

def d_step():
    global fake
    netD.zero_grad()
    label.fill_(1)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    fake = netG(noise)
    label.fill_(0)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    optimizerD.step()

def g_step():
    netG.zero_grad()
    label.fill_(1)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    optimizerG.step()
"""

# makemore.py's Transformer at its defaults, and its training step
MAKEMORE = r"""
block_size, vocab_size, n_layer, n_embd, n_head, batch_size = 16, 27, 4, 64, 4, 32

class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                     .view(1, 1, block_size, block_size))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.c_proj(y)
        return y

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(
            c_fc    = nn.Linear(n_embd, 4 * n_embd),
            c_proj  = nn.Linear(4 * n_embd, n_embd),
            act     = NewGELU(),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x

class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(vocab_size, n_embd),
            wpe = nn.Embedding(block_size, n_embd),
            h = nn.ModuleList([Block() for _ in range(n_layer)]),
            ln_f = nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0) # shape (1, t)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = tok_emb + pos_emb
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

model = Transformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99), eps=1e-8)
# names: a start token, up to 15 characters, then -1 (ignored) after each name's end
X = rng.integers(1, vocab_size, (batch_size, block_size))
Y = np.roll(X, -1, axis=1)
lengths = rng.integers(3, block_size, batch_size)
for row, length in enumerate(lengths):
    X[row, 0], X[row, length + 1:], Y[row, length] = 0, 0, 0
    Y[row, length + 1:] = -1
X, Y = torch.from_numpy(X), torch.from_numpy(Y)

def step():
    logits, loss = model(X, Y)
    model.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""  # noqa: E501 - makemore's own lines

# model name -> (source, the step function's name)
MODELS = {
    "gpt": (LECTURE_GPT, "step"),
    "dcgan_d": (DCGAN, "d_step"),
    "dcgan_g": (DCGAN, "g_step"),
    "makemore": (MAKEMORE, "step"),
}
DESCRIPTIONS = {
    "gpt": "lecture GPT (ng-video-lecture), B=16 T=32",
    "dcgan_d": "DCGAN D step, 64x64",
    "dcgan_g": "DCGAN G step, 64x64",
    "makemore": "makemore Transformer, B=32 T=16",
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
    parser.add_argument("--dcgan-width", type=int, default=16, help="the DCGAN's ngf = ndf")
    parser.add_argument("--profile", choices=list(MODELS), help="profile tricycle's step only")
    parser.add_argument("--profile-lines", type=int, default=30)
    args = parser.parse_args(argv)
    tune_cpu_allocator()
    sizes = {"batch_size": args.batch_size, "ngf": args.dcgan_width, "ndf": args.dcgan_width}
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
