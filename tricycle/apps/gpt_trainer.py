"""A ``Trainer`` for a GPT (or a Llama) from its config: model, AdamW, cosine schedule,
data split between the ranks of a data-parallel world, validation and hooks."""

from collections.abc import Sequence
from functools import partial

from tricycle.apps.training import Hook, Trainer
from tricycle.configs import GPTConfig
from tricycle.dataset import CausalLMDataset
from tricycle.models import build_model
from tricycle.optimisers import AdamW, decay_all_matrices, decay_matrices
from tricycle.parallel import distributed
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.scheduler import CosineSchedule


def gpt_trainer(
    config: GPTConfig,
    train_data,
    valid_data=None,
    *,
    policy=None,
    seed: int = 0,
    decay_steps: int | None = None,
    world: distributed.World | None = None,
    zero: bool = False,
    hooks: Sequence[Hook] = (),
    cuda_graph: bool = False,
    weights: dict | None = None,
) -> Trainer:
    """A ``Trainer`` for the model ``config`` describes (``build_model``: a GPT or a Llama),
    initialised from tricycle's generator (``tricycle.random.manual_seed`` it first), with
    AdamW (the config's betas, decay and decay filter), the cosine schedule (decaying over
    ``decay_steps``, default ``config.steps``), clipping, accumulation, validation and
    ``hooks``, all on ``config.device``.

    The data, ``train_data`` and ``valid_data``, is either token ids (an array, or a corpus:
    ``CausalLMDataset``'s random windows over them, the training windows seeded by ``seed``;
    validation tokens fewer than one window give no validation), or a loader: a function
    ``loader(batch_size=, context_window=, rank=, world_size=)`` returning such a dataset,
    such as ``functools.partial(TokenShards, "data/corpus", "train", seed=0)``.

    With a ``world`` of several processes, each takes its rows of every global batch of
    ``config.batch_size`` (the same windows as one process), starts from rank 0's parameters,
    and averages its gradients with the others' during backward (``distributed.DataParallel``);
    ``zero`` shards AdamW's state over the ranks (ZeRO-1). ``cuda_graph``: as for ``Trainer``.
    ``weights``: a state dict to start from instead (a pretrained model's, to fine-tune)."""
    world = distributed.init() if world is None else world
    if config.batch_size % world.world_size:
        raise ValueError(
            f"batch_size {config.batch_size} does not split evenly over {world.world_size} "
            "processes: pick a multiple of the number of processes"
        )
    # the data: this rank's rows of every global batch
    train_data = rank_loader(train_data, config, world, seed)
    if valid_data is not None and (callable(valid_data) or len(valid_data) > config.context_window):
        valid_data = rank_loader(valid_data, config, world, 0)
    else:
        valid_data = None
    # the model, on this process's device, starting from rank 0's parameters
    model = build_model(config)
    if weights is not None:
        model.load_state_dict(weights)
    if config.device == "gpu":
        device = world.device or 0  # this process's GPU, where NCCL started
        model.to_gpu(device)
        train_data = train_data.to_gpu(device)  # batches arrive as GPU tensors
        valid_data = None if valid_data is None else valid_data.to_gpu(device)
    world.broadcast_parameters(model)
    data_parallel = distributed.DataParallel(model, world)
    # the optimiser and its learning-rate schedule
    optimiser = AdamW(
        learning_rate=config.max_learning_rate,
        betas=(config.beta1, config.beta2),
        eps=config.eps,
        weight_decay=config.weight_decay,
        decay_filter=decay_all_matrices if config.decay_embeddings else decay_matrices,
    )
    if zero:
        optimiser = ZeroRedundancyOptimiser(optimiser, model, world)
    schedule = CosineSchedule(
        config.max_learning_rate,
        config.min_learning_rate,
        config.steps if decay_steps is None else decay_steps,
        config.warmup_steps,
    )
    return Trainer(
        model,
        optimiser,
        train_data,
        policy=policy,
        schedule=schedule,
        accumulation_steps=config.gradient_accumulation_steps,
        max_norm=config.grad_clip,
        data_parallel=data_parallel,
        valid_data=valid_data,
        eval_interval=config.eval_interval,
        eval_steps=config.eval_steps,
        eval_protocol=config.eval_protocol,
        hooks=hooks,
        tokens_per_step=config.tokens_per_step,
        cuda_graph=cuda_graph,
    )


def rank_loader(data, config: GPTConfig, world: distributed.World, seed: int):
    """This rank's batches of ``data`` (token ids, or a loader: see ``gpt_trainer``): its
    ``config.batch_size / world_size`` rows of every global batch of windows of
    ``config.context_window`` tokens."""
    if not callable(data):  # token ids
        data = partial(CausalLMDataset, data, config.vocab_size, seed=seed)
    return data(
        batch_size=config.batch_size // world.world_size,
        context_window=config.context_window,
        rank=world.rank,
        world_size=world.world_size,
    ).batch()
