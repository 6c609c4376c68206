"""The CPU kernels of a program compiled ahead of their first call, several at once.

A first run compiles every CPU kernel it calls (numba, cached on disk for later runs), one at
a time as it meets them. ``precompile(step)``, called before a program prepares its data, has
a forked child run ``step`` (small inputs of the run's kinds: dtypes, layers, activation)
with no kernel running, note which kernels it called with which argument types, and compile
those the cache lacks in one process per thread, while the program goes on
(``tricycle.backends.cpu.compile.precompile``); the program then loads them as later runs do.
``precompile_gpt`` does it for a training run of a GPT config.
"""

import dataclasses

import numpy as np

from tricycle import dispatch
from tricycle.configs import GPTConfig

SMALL = {"n_layers": 1, "context_window": 4, "batch_size": 2, "vocab_size": 64,
         "gradient_accumulation_steps": 1, "eval_steps": 1}  # fmt: skip


def precompile(step, *args) -> None:
    """Start compiling the CPU kernels that ``step(*args)`` calls and the cache lacks, in the
    background (a no-op without numba, or where the kernels compile in the process: in a
    thread other than the main one, under MPI, without fork)."""
    if dispatch.available("cpu"):
        from tricycle.backends.cpu.compile import precompile as start  # noqa: PLC0415

        start(step, *args)


def precompile_gpt(config: GPTConfig, precision: str = "fp32") -> None:
    """``precompile`` what training ``config``'s model at ``precision`` on the CPU calls: one
    training step, one evaluation and a sample of a one-block model of its kind (a no-op on a
    GPU)."""
    if config.device == "cpu":
        small = dataclasses.replace(config, **SMALL, embedding_dim=4 * config.n_heads)
        precompile(_gpt_step, small, precision)


def _gpt_step(config: GPTConfig, precision: str) -> None:
    """One training step, one evaluation and two sampled tokens of ``config``'s model on token
    ids 0, 1, ..."""
    from tricycle.apps.gpt_trainer import gpt_trainer  # noqa: PLC0415 - training imports this
    from tricycle.apps.training import precision_for  # noqa: PLC0415

    tokens = np.arange(16 * config.context_window) % config.vocab_size
    trainer = gpt_trainer(config, tokens, tokens, policy=precision_for(precision, config.device))
    trainer.train_step()
    trainer.evaluate()
    trainer.model.generate(tokens[:3], 2, rng=np.random.default_rng(0))
