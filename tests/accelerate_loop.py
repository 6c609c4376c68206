"""The issue's loop with tricycle's names, for the Accelerator's tests: run in this process
(``run``) or on N processes (``mpiexec -n N python tests/accelerate_loop.py OUT.json
[PRECISION BATCH_SIZE]``: rank 0 writes the step losses and the final weights' sum)."""

import json
import sys

import numpy as np

from tricycle import Accelerator
from tricycle.configs import DebugConfig
from tricycle.data import DataLoader
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.random import manual_seed

CONFIG = dict(embedding_dim=16, context_window=8, vocab_size=32, n_heads=2, n_layers=2, dropout=0.0)


def windows(n: int = 64) -> list:
    """A map-style dataset of (inputs, targets) windows of a fixed token stream."""
    tokens = np.random.default_rng(0).integers(0, CONFIG["vocab_size"], size=n * 9 + 1)
    return [(tokens[9 * i : 9 * i + 8], tokens[9 * i + 1 : 9 * i + 9]) for i in range(n)]


def run(precision: str = "fp32", batch_size: int = 4, epochs: int = 2, loader=None,
        accelerator=None, stop_at_step=None, save_to=None, load_from=None,
        dropout=0.0, device="cpu"):  # fmt: skip
    """The loop; returns (the mean loss of each step over its micro-batches and the
    processes, the model's final weights, the accelerator)."""
    manual_seed(0)
    model = GPT(DebugConfig(**{**CONFIG, "dropout": dropout}))
    optimizer = AdamW(learning_rate=1e-2, weight_decay=0.1)
    if loader is None:
        loader = DataLoader(windows(), batch_size=batch_size, shuffle=True, seed=1)
    if accelerator is None:
        accelerator = Accelerator(
            gradient_accumulation_steps=4, mixed_precision=precision, device=device
        )
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    if load_from is not None:
        accelerator.load_state(load_from)
    loss_fn = CrossEntropy()
    losses, micro = [], []
    for _ in range(epochs):
        for inputs, targets in loader:
            loss = loss_fn(targets, model(inputs))
            accelerator.backward(loss)  # accumulates; reduces on the last micro-batch
            grad_norm = accelerator.clip_grad_norm_(1.0)
            optimizer.step()
            optimizer.zero_grad()  # no-ops until accumulation is complete
            micro.append(accelerator.gather_for_metrics(loss))
            if accelerator.sync_grad:
                loss = accelerator.gather_for_metrics(loss)  # mean over all processes
                norm = float(grad_norm)  # (a device scalar on a GPU)
                accelerator.print(f"step {accelerator.step}: loss {loss:.4f}, norm {norm:.3f}")
                accelerator.log({"loss": loss, "grad_norm": grad_norm}, step=accelerator.step)
                losses.append(float(np.mean(micro)))
                micro = []
                if accelerator.step == stop_at_step:
                    break
        if accelerator.step == stop_at_step:
            break
    if save_to is not None:
        accelerator.save_state(save_to)
    weights = accelerator.unwrap_model(model).state_dict()
    return losses, weights, accelerator


if __name__ == "__main__":
    out, precision, batch_size = sys.argv[1], *sys.argv[2:4]
    losses, weights, accelerator = run(precision, int(batch_size))
    if accelerator.is_main_process:
        total = {name: float(np.sum(w.astype(np.float64))) for name, w in weights.items()}
        with open(out, "w") as f:
            json.dump({"losses": losses, "weights": total,
                       "world_size": accelerator.num_processes}, f)  # fmt: skip
    accelerator.end_training()
