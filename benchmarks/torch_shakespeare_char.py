"""nanoGPT's shakespeare-char recipe in PyTorch, on tricycle's data pipeline: a control run.

    python benchmarks/torch_shakespeare_char.py --data-dir data --max-seconds 60

The model is nanoGPT's (``model.py``, written out here): bias-free Linear and LayerNorm,
``scaled_dot_product_attention`` with dropout 0.2, embedding/residual/MLP dropout 0.2, tied
head, GPT-2 init, AdamW (betas 0.9/0.99, decay 0.1 on every matrix), lr 1e-3 with 100 warm-up
steps and cosine decay to 1e-4 over 5,000 steps, clipping at 1.0, batch 64 x 256, bf16
autocast. The batches and the validation loss come from tricycle (``CausalLMDataset`` and
``train_smol_gpt.evaluate``'s protocols: nanoGPT's 200 fresh random batches, or every
non-overlapping window of the validation split in order),
so that its validation curve can be set beside ``train_smol_gpt.py --config shakespeare-char``:
a gap between the two is the implementation's, not the protocol's.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from tricycle.configs import ShakespeareCharConfig  # noqa: E402
from tricycle.dataset import CausalLMDataset  # noqa: E402
from tricycle_datasets.shakespeare import ShakespeareChar  # noqa: E402


class Block(nn.Module):
    def __init__(self, E: int, H: int, p: float):
        super().__init__()
        self.H, self.p = H, p
        self.ln_1, self.ln_2 = nn.LayerNorm(E, bias=False), nn.LayerNorm(E, bias=False)
        self.c_attn, self.c_proj = nn.Linear(E, 3 * E, bias=False), nn.Linear(E, E, bias=False)
        self.c_fc, self.mlp_proj = nn.Linear(E, 4 * E, bias=False), nn.Linear(4 * E, E, bias=False)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        B, T, E = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(E, dim=2)
        q, k, v = (t.view(B, T, self.H, E // self.H).transpose(1, 2) for t in (q, k, v))
        p = self.p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, E)))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class NanoGPT(nn.Module):
    def __init__(self, V: int, T: int, E: int, H: int, L: int, p: float):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, E), nn.Embedding(T, E)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(Block(E, H, p) for _ in range(L))
        self.ln_f = nn.LayerNorm(E, bias=False)
        self.lm_head = nn.Linear(E, V, bias=False)
        self.wte.weight = self.lm_head.weight
        for name, w in self.named_parameters():
            if w.ndim >= 2:
                std = (
                    0.02 / math.sqrt(2 * L)
                    if name.endswith(("c_proj.weight", "mlp_proj.weight"))
                    else 0.02
                )
                nn.init.normal_(w, 0.0, std)

    def forward(self, ids):
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--max-seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--eval-protocol", choices=["sequential", "random"], default="random")
    args = parser.parse_args()
    c = ShakespeareCharConfig()
    corpus = ShakespeareChar(data_dir=args.data_dir)
    torch.manual_seed(args.seed)
    model = NanoGPT(corpus.vocab_size, c.context_window, c.embedding_dim, c.n_heads,
                    c.n_layers, c.dropout).cuda()  # fmt: skip
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    optimiser = torch.optim.AdamW(
        [{"params": decay, "weight_decay": c.weight_decay}, {"params": rest, "weight_decay": 0}],
        lr=c.max_learning_rate, betas=(c.beta1, c.beta2), fused=True,
    )  # fmt: skip
    train = CausalLMDataset(corpus.train_tokens, corpus.vocab_size, c.batch_size,
                            c.context_window, args.seed).batch()  # fmt: skip
    valid = CausalLMDataset(corpus.valid_tokens, corpus.vocab_size, c.batch_size,
                            c.context_window, 0).batch()  # fmt: skip

    def to_gpu(batch):  # a batch of int ids (numpy) -> cuda int64
        return torch.from_numpy(np.asarray(batch)).long().cuda()

    def lr_at(step):
        if step < c.warmup_steps:
            return c.max_learning_rate * (step + 1) / (c.warmup_steps + 1)
        ratio = (step - c.warmup_steps) / (c.steps - c.warmup_steps)
        return c.min_learning_rate + 0.5 * (1 + math.cos(math.pi * ratio)) * (
            c.max_learning_rate - c.min_learning_rate
        )

    def evaluate():
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            if args.eval_protocol == "random":  # as train_smol_gpt.evaluate
                batches = (next(valid) for _ in range(c.eval_steps))
            else:
                batches = valid.iterate_sequential(max_batches=c.eval_steps)
            for inputs, targets in batches:
                logits = model(to_gpu(inputs)).float()
                total += F.cross_entropy(logits.flatten(0, 1), to_gpu(targets).flatten()).item()
                n += 1
        model.train()
        return total / n

    wall, step = 0.0, 0
    for step, (inputs, targets) in enumerate(train, start=1):
        start = time.perf_counter()
        for group in optimiser.param_groups:
            group["lr"] = lr_at(step - 1)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(to_gpu(inputs))
        loss = F.cross_entropy(logits.float().flatten(0, 1), to_gpu(targets).flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
        optimiser.step()
        torch.cuda.synchronize()
        wall += time.perf_counter() - start
        if step % c.eval_interval == 0:
            print(f"step {step}: train loss {loss.item():.4f}, val loss {evaluate():.4f}, "
                  f"{wall:.1f} s", flush=True)  # fmt: skip
        if wall > args.max_seconds or step >= c.steps:
            break


if __name__ == "__main__":
    main()
