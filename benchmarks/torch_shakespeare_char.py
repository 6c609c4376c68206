"""nanoGPT's shakespeare-char recipe in PyTorch, on tricycle's data pipeline: a control run.

    python benchmarks/torch_shakespeare_char.py --data-dir data --max-seconds 60

The model is nanoGPT's (``torch_gpt.py``, from ``ShakespeareCharConfig``): bias-free Linear
and LayerNorm, ``scaled_dot_product_attention`` with dropout 0.2, embedding/residual/MLP
dropout 0.2, tied head, GPT-2 init, fused AdamW (betas 0.9/0.99, decay 0.1 on every matrix),
lr 1e-3 with 100 warm-up steps and cosine decay to 1e-4 over 5,000 steps, clipping at 1.0,
batch 64 x 256, bf16 autocast. The batches and the validation loss come from tricycle
(``CausalLMDataset`` and the protocols of ``tricycle.apps.training.evaluate``: nanoGPT's 200 fresh
random batches, or every non-overlapping window of the validation split in order), so that
its validation curve can be set beside ``tricycle-train --config shakespeare-char``: a gap
between the two is the implementation's, not the protocol's.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from torch_gpt import adamw, nano_gpt  # noqa: E402

from tricycle.configs import ShakespeareCharConfig  # noqa: E402
from tricycle.dataset import CausalLMDataset  # noqa: E402
from tricycle_datasets.shakespeare import ShakespeareChar  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--max-seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--eval-protocol", choices=["sequential", "random"], default="random")
    args = parser.parse_args()
    corpus = ShakespeareChar(data_dir=args.data_dir)
    c = ShakespeareCharConfig(vocab_size=corpus.vocab_size)
    torch.manual_seed(args.seed)
    model = nano_gpt(c, attention="sdpa").cuda()
    optimiser = adamw(model, c, c.max_learning_rate, fused=True)
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
            if args.eval_protocol == "random":  # as tricycle.apps.training.evaluate
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
