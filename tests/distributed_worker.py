"""The ranks of the data-parallel tests: ``mpiexec -n 2 python tests/distributed_worker.py
SCENARIO OUT.npz``. ``tests/test_distributed.py`` launches it and compares what rank 0
writes with ``train`` run in one process on the same global batch.

Scenarios:
    train   one step's gradients, then the losses of a 20-step run with DataParallel (plain
            and with gradient accumulation), and the parameters after steps with ZeRO-1
    hang    rank 1 stops answering (sleeps) before an all-reduce: rank 0 must abort the job
    kill    rank 1 kills itself (SIGKILL) after a step: rank 0 must not wait for it forever
    raise   rank 1 raises an error after a step, while rank 0 goes on to the next
            collective: every rank must end at once, with rank 1's message
    hosts   4 ranks on two simulated machines (round robin: $TRICYCLE_HOST from the rank);
            rank 0 writes every rank's (rank, local_rank, local_size, host) as JSON
    threads the ranks' host threads (the variables, BLAS's pool) as JSON, from rank 0
    end     a few collectives, then each rank prints its last line (with the time) and
            finalizes: the job must end promptly after it
    interrupt  each rank says it is ready, then waits in a collective loop until Ctrl-C
"""

import json
import os
import signal
import sys
import time
from contextlib import nullcontext

import numpy as np

from tricycle.configs import DebugConfig
from tricycle.dataset import CausalLMDataset
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW, clip_factor, grad_norm
from tricycle.parallel import distributed
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.random import manual_seed

CONFIG = dict(embedding_dim=16, context_window=8, vocab_size=32, n_heads=2, n_layers=2, dropout=0.0)
BUCKET_BYTES = 4096  # several buckets even for this tiny model


def say(line: str) -> None:
    """Write ``line`` to stderr in one write: print's parts (the text, then the newline) can
    interleave with the other rank's in the launcher's forwarded output."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def tokens() -> np.ndarray:
    return np.random.default_rng(0).integers(0, CONFIG["vocab_size"], size=2000)


def train(world, batch_size: int, steps: int, accumulation: int = 1, zero: bool = False,
          reduce_dtype=None):  # fmt: skip
    """Train the tiny GPT for ``steps`` steps of ``accumulation`` micro-batches of
    ``batch_size`` windows per rank; return (first step's averaged gradients {name: array},
    losses averaged over ranks, final parameters {name: array}, the optimiser)."""
    manual_seed(0)
    model = GPT(DebugConfig(**CONFIG))
    world.broadcast_parameters(model)
    reducer = distributed.DataParallel(
        model, world, bucket_bytes=BUCKET_BYTES, reduce_dtype=reduce_dtype
    )
    data = CausalLMDataset(
        tokens(), CONFIG["vocab_size"], batch_size, CONFIG["context_window"], seed=1,
        rank=world.rank, world_size=world.world_size,
    ).batch()  # fmt: skip
    optimiser = AdamW(learning_rate=1e-2, weight_decay=0.1)
    if zero:
        optimiser = ZeroRedundancyOptimiser(optimiser, model, world)
    loss_fn = CrossEntropy()
    first_grads, losses = None, []
    for _ in range(steps):
        optimiser.step()
        total = 0.0
        for micro in range(accumulation):
            inputs, targets = next(data)
            last = micro == accumulation - 1
            with nullcontext() if last else reducer.no_sync():
                loss = loss_fn(targets, model(inputs))
                (loss / accumulation).backward()
            total += float(loss)
        reducer.finish()
        losses.append(world.all_reduce(total / accumulation))
        if first_grads is None:
            first_grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
        named = model.named_parameters()
        optimiser.update(named, grad_multiplier=clip_factor(grad_norm(named), 1.0))
        model.zero_grad()
    params = {n: p.numpy().copy() for n, p in model.named_parameters()}
    return first_grads, np.array(losses), params, optimiser


def main(scenario: str, out: str) -> None:
    if scenario == "hosts":  # before init: the launcher's rank, as a machine name
        rank = os.environ.get("PMI_RANK") or os.environ["OMPI_COMM_WORLD_RANK"]  # MPICH, Open MPI
        os.environ["TRICYCLE_HOST"] = f"node{int(rank) % 2}"
    world = distributed.init()
    if scenario == "train":
        grads, losses, _, _ = train(world, batch_size=4, steps=20)
        grads16, _, _, _ = train(world, batch_size=4, steps=1, reduce_dtype=np.float16)
        _, accumulated, _, _ = train(world, batch_size=2, steps=5, accumulation=2)
        _, _, plain, plain_optimiser = train(world, batch_size=4, steps=3)
        _, _, zero, zero_optimiser = train(world, batch_size=4, steps=3, zero=True)
        zero_state = zero_optimiser.state_dict()  # gathered on rank 0
        # the whole state back into the shards: each rank keeps its rows, and gathers the same
        zero_optimiser.load_state_dict(world.broadcast_object(zero_state))
        reloaded = zero_optimiser.state_dict()
        if world.is_main:
            arrays = {"losses": losses, "accumulated": accumulated}
            named = [
                ("grad", grads),
                ("grad16", grads16),
                ("plain", plain),
                ("zero", zero),
                ("zero_state", zero_state),
                ("plain_state", plain_optimiser.state_dict()),
                ("reloaded", reloaded),
            ]
            for prefix, values in named:
                arrays.update({f"{prefix}/{k}": v for k, v in values.items()})
            np.savez(out, world_size=world.world_size, **arrays)
    elif scenario == "hang":
        if world.rank == 1:
            time.sleep(60)  # alive, but never joins the collective
        world.all_reduce(1.0)
    elif scenario == "kill":
        world.all_reduce(1.0)
        if world.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        world.all_reduce(1.0)
    elif scenario == "raise":
        world.all_reduce(1.0)
        if world.rank == 1:
            raise ValueError("a bad file on rank 1")
        world.all_reduce(1.0)
    elif scenario in ("same", "same_on_1"):  # a usage error every rank meets, or one alone
        world.all_reduce(1.0)
        if scenario == "same_on_1":  # rank 0 never says it: rank 1 waits for it, then speaks;
            distributed.AFTER_RANK_0_SECONDS = 1.0  # the wait's length is not under test
        with distributed.fail_together():  # as the CLIs' main
            if scenario == "same" or world.rank == 1:
                raise distributed.SameOnEveryRank(f"--flag: refused on rank {world.rank}")
        world.all_reduce(1.0)
    elif scenario == "hosts":
        mine = dict(
            rank=world.rank,
            local_rank=world.local_rank,
            local_size=world.local_size,
            host=os.environ["TRICYCLE_HOST"],
            total=world.all_reduce(1.0, mean=False),
        )
        ranks = world.gather_object(mine)
        if world.is_main:
            with open(out, "w") as file:
                json.dump(ranks, file)
    elif scenario == "threads":
        from threadpoolctl import threadpool_info

        from tricycle.parallel.threads import VARIABLES, affinity

        blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        mine = {name: os.environ.get(name) for name in VARIABLES}
        cores = affinity()  # the launcher may have bound this rank to cores of its own
        cores = None if cores is None else sorted(cores)
        ranks = world.gather_object(dict(mine, blas=blas, local_size=world.local_size, cores=cores))
        if world.is_main:
            with open(out, "w") as file:
                json.dump(ranks, file)
    elif scenario == "interrupt":
        say(f"rank {world.rank} ready")
        for _ in range(600):  # a minute of steps, unless interrupted
            world.all_reduce(1.0)
            time.sleep(0.1)
    elif scenario == "end":
        for _ in range(3):
            world.all_reduce(np.ones(1000))
        say(f"last line at {time.time():.3f}")
    world.finalize()


if __name__ == "__main__":
    main(*sys.argv[1:])
