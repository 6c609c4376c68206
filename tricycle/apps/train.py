"""Train a GPT language model, with validation, checkpoints and exact resumption.

    tricycle-train                               # CPUConfig on Python's stdlib: minutes on a CPU
    tricycle-train --config shakespeare-char --dataset shakespeare-char --device gpu
    tricycle-train --dataset notes.txt --steps 2000 --out-dir runs/notes
    tricycle-train --out-dir runs/notes --resume # continue exactly where it stopped

(``python -m tricycle.apps.train`` and ``python train_smol_gpt.py`` are the same program; the loop
itself is ``tricycle.apps.training``.) Everything lands in --out-dir (default runs/<config>): the
model.safetensors (the last weights) and checkpoint.npz (the training state beside them:
what --resume reads), best.safetensors (the weights of the lowest validation loss, with its
step: what the sample at the end, ``tricycle-sample`` and
``tricycle.evaluate`` read unless given --weights last), model.pkl, tokeniser.json,
config.json, metrics.jsonl and loss.png (the loss curves; --plot-log for a log scale). A
directory holding another run is never overwritten without --overwrite (which sets the old
run's files aside in .replaced/ until the new run writes its first checkpoint, and puts them
back if it stops before one), and one run at a time may use it.

Data: a built-in corpus, a UTF-8 text file, or a directory of token shards made by
``python -m tricycle_datasets.prepare`` (memory-mapped: corpora larger than memory; its
tokeniser is the run's, and --vocab-size must be at least its size). --data-order sequential
reads shards in order instead of at random offsets.

Evaluation and samples on the way: --eval-hellaswag FILE scores HellaSwag-style multiple
choice at each evaluation (hellaswag_acc, hellaswag_acc_norm in metrics.jsonl and the log);
--sample-interval N writes a sample of --sample-tokens tokens after --sample-prompt (default:
the first line of the validation text) every N steps. They are ``tricycle.apps.training.Hook``s
of the ``Trainer``.

--init-from gpt2|DIR fine-tunes a pretrained model (nanoGPT's flag): a Hugging Face model
directory (config.json, model.safetensors and its tokeniser's files) or a hub name, fetched
with huggingface_hub when online. The model's architecture, weights and tokeniser are
its own (--context-window may shorten its window); the text of --dataset (a corpus or a
text file) is encoded with its tokeniser; the training settings are --config's and the flags'.

--resume continues with the run's own settings and data: a setting given again with another
value is refused (listing the differences), except those that say how long, how often and
where (--steps, --device, --precision, evaluation, sampling and stopping flags), which are
applied and reported (name --eval-hellaswag and --sample-interval again to keep them). A new
--steps also stretches or shortens the cosine decay from there on, unless the run set
--lr-decay-iters. The data must
be the run's own: a built-in dataset is rebuilt and compared with the recorded hash; a text
file or shard directory must be named again with --dataset (a checkpoint never decides which
file is read) and is compared too (a shard directory by its index: the tokeniser's SHA-256,
the inputs' fingerprint and the split sizes).

nanoGPT's settings (its train.py globals, as ``--name=value``) map onto these flags, which may
also be written with ``_`` for ``-``:

    n_layer, n_head, n_embd     --n-layer, --n-head, --n-embd
    block_size, vocab_size      --context-window, --vocab-size
    bias, dropout               --bias=true/false, --dropout
    max_iters, learning_rate    --steps, --lr
    warmup_iters, min_lr        --warmup, --min-lr
    lr_decay_iters              --lr-decay-iters (the learning rate stays at --min-lr after)
    beta1, beta2, weight_decay  --beta1, --beta2, --weight-decay
    grad_clip                   --grad-clip (0: off)
    batch_size                  --batch-size
    gradient_accumulation_steps --gradient-accumulation-steps
    eval_interval, eval_iters   --eval-interval, --eval-steps
    out_dir, init_from          --out-dir, --init-from ('resume' is --resume, 'scratch' a
                                new run)
    dtype                       --precision fp32/tf32/fp16/bf16 (or float32/float16/bfloat16)
    config file                 --config-file settings.json: a JSON object of these names (no
                                code runs); flags on the command line override it

Every GPTConfig field has a flag (--arch llama, --n-kv-heads, --rope-theta and
--ffn-multiple-of for the Llama-style model); an unknown name is a usage error.

A resumed run replays exactly on the CPU. Ctrl-C (or SIGTERM: ``kill``, a scheduler's
preemption) stops after the current step with a checkpoint (under Open MPI's mpiexec, which
passes Ctrl-C on as SIGTERM and kills a second later, every rank ends at once, keeping the last
checkpoint), as --max-seconds and --stop-after do; each prints the command that resumes it
(the exit status is 130 after Ctrl-C or SIGTERM, 0 otherwise). A NaN or infinite loss, or a
weight or optimiser moment no longer finite at a checkpoint, stops with an error naming the
step, keeping the last checkpoint: no checkpoint holding a non-finite value is ever written.

Data parallelism: ``mpiexec -n N tricycle-train ...`` (or ``python train_smol_gpt.py``) trains
on N processes (one GPU each with --device gpu, through NCCL), each on batch_size / N of every
global batch: the same global batch, and so the same run, as one process. Rank 0 alone holds
--out-dir and writes files and logs; checkpoints resume at any N that divides the batch.
--zero shards AdamW's state over the ranks (ZeRO-1).
"""

import json
import shlex
import sys

from tqdm import tqdm

from tricycle import backend
from tricycle.apps.checkpoint import CheckpointError, atomic_write_text
from tricycle.apps.cli import ends_in_one_line, warnings_in_one_line
from tricycle.apps.cpu import cpu_threads, threads_per_process, tune_cpu_allocator
from tricycle.apps.evaluate import sample_text, training_hooks
from tricycle.apps.files import DirectoryLocked
from tricycle.apps.gpt_trainer import gpt_trainer
from tricycle.apps.precompile import precompile_gpt
from tricycle.apps.run_settings import settle
from tricycle.apps.runs import RunDirectory, read_weights, tokeniser_sha256
from tricycle.apps.train_flags import (  # noqa: F401 - the CLI's names, here as before
    CHOICES,
    CONFIG_FLAGS,
    DEFAULTS,
    NANOGPT_NAMES,
    RESUME_MAY_CHANGE,
    SAMPLE_TOKENS,
    build_config,
    build_parser,
    parse_args,
    resume_settings,
)
from tricycle.apps.training import TrainingDiverged
from tricycle.backends.cuda.capture import CaptureError
from tricycle.parallel import distributed
from tricycle.parallel.distributed import SameOnEveryRank
from tricycle.random import manual_seed
from tricycle_datasets import run_data
from tricycle_datasets.run_data import DATASETS, RunDataError


def use_cuda_graph(choice: str, device: str) -> bool:
    """--cuda-graph: "on", "off", or "auto": on a GPU, whatever the world and optimiser (the
    captured step holds data parallelism's all-reduces and ZeRO-1's all-gathers)."""
    if choice == "on" and device != "gpu":
        raise ValueError("--cuda-graph on: a CUDA graph needs a GPU (--device gpu); on the CPU "
                         "leave it at auto")  # fmt: skip
    if choice != "auto":
        return choice == "on"
    return device == "gpu"


def train(args) -> dict:
    """Run (or resume) training as ``args`` say, holding --out-dir's lock; returns a summary."""
    run_dir = RunDirectory(args.out_dir)
    if args.resume and not run_dir.has_checkpoint():  # before the lock makes the folder
        raise SystemExit(f"--resume: no checkpoint in {run_dir.path} (" + (
            "its run stopped before its first checkpoint: start it again with --overwrite)"
            if run_dir.existing_files() else "no run yet: start one without --resume)"
        ))  # fmt: skip
    world = distributed.init()  # the processes mpiexec started, or a world of one
    main = world.is_main  # rank 0 alone holds the directory and writes to it
    try:
        for note in run_dir.open() if main else ():
            print(note, file=sys.stderr)
    except DirectoryLocked as error:
        raise SystemExit(f"--out-dir: {error}") from None
    except OSError as error:  # a folder that cannot be made or written to
        raise SystemExit(f"--out-dir {run_dir.path}: {error.strerror or error}") from None
    failed = True
    try:
        summary = _train(args, run_dir, world)
        failed = False
    finally:
        if main:
            run_dir.close(failed)  # a run that failed before writing leaves no directory
    world.finalize()  # every rank is done: the others waited for rank 0's sample
    return summary


def _train(args, run_dir: RunDirectory, world: distributed.World) -> dict:
    """The run, top down: its settings (rank 0 of ``world`` writes files and logs), the
    data, the model and its optimiser (a ``Trainer``), the loop (``Trainer.fit``), the end."""
    # the settings: a new run's from the flags, a resumed one's from its checkpoint
    main = world.is_main
    plan = settle(args, run_dir, main)
    config, settings, resumed = plan.config, plan.settings, plan.checkpoint is not None
    for change in plan.applied if main else ():
        print(f"--resume: applying {change}", file=sys.stderr)
    if config.device == "cpu":  # a GPU run loads no CPU kernels (nor numba)
        tune_cpu_allocator()
    precompile_gpt(config, settings["precision"])  # the CPU kernels, while the data load
    if config.device == "gpu":
        world.start_gpu()  # one GPU per process

    # the data, and what the run is evaluated and sampled on, in its tokens
    vocab_size = config.vocab_size
    data = load_data(args, plan, resumed)
    if config.vocab_size != vocab_size and main:
        print(f"vocabulary: {config.vocab_size:,} ids, the data's {data.tokeniser.n_tokens:,} "
              "rounded up to a multiple of 64 (--vocab-size sets it)", file=sys.stderr)  # fmt: skip

    # the model, its optimiser and schedule, and the hooks, on each rank's share of the data
    hooks = training_hooks(data.tokeniser, data.hellaswag, args.sample_interval, data.prompt,
                           args.sample_tokens)  # fmt: skip
    manual_seed(settings["seed"])  # model initialisation and dropout seeds
    try:
        trainer = gpt_trainer(
            config, data.train, data.valid, policy=plan.policy, seed=settings["seed"],
            weights=plan.weights, decay_steps=settings["lr_decay_iters"], world=world,
            zero=args.zero, hooks=hooks,
            cuda_graph=use_cuda_graph(args.cuda_graph, config.device),
        )  # fmt: skip
    except ValueError as error:  # the config against the world
        raise SameOnEveryRank(f"tricycle-train: {error}") from None
    except CaptureError as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    if trainer.valid_data is None and main:
        print("warning: the validation text is too short: no validation loss", file=sys.stderr)
    if resumed:  # --resume: the run's state, exactly as it was saved
        try:
            trainer.load_state_dict(plan.checkpoint)
        except (KeyError, ValueError, TypeError) as error:
            raise SameOnEveryRank(f"--resume: {run_dir.checkpoint} does not fit: {error}") from None

    # the loop
    tokeniser = data.tokeniser_file  # its text, as recorded and hashed
    run = {"settings": settings, "config": config.to_dict(), "data": data.identity,
           "tokeniser_sha256": tokeniser_sha256(tokeniser),
           "world_size": world.world_size, "zero": args.zero}  # fmt: skip
    log_interval = args.log_interval or (10 if config.device == "gpu" else 1)
    if main:
        _start(run_dir, run, tokeniser, trainer, resumed, data, log_interval, plan.replaces)
    bar = tqdm(initial=trainer.step, total=config.steps, disable=args.no_progress or not main)
    try:
        summary = trainer.fit(
            config.steps, run_dir=run_dir, metadata={**run, "tokeniser": tokeniser},
            log_interval=log_interval, max_seconds=args.max_seconds, stop_after=args.stop_after,
            on_record=lambda record: _progress(bar, record, trainer.policy),
            on_message=lambda text: tqdm.write(text, file=sys.stderr),
            loss_plot="log" if args.plot_log else "linear",
        )  # fmt: skip
    except (TrainingDiverged, CheckpointError) as error:
        kind = "training diverged" if isinstance(error, TrainingDiverged) else "error"
        raise SystemExit(f"{kind}: {error}") from None
    finally:
        bar.close()
    summary["out_dir"] = str(run_dir.path)
    if config.device == "gpu":  # cupy's pool keeps what it was given: its high-water mark
        pool_bytes = backend.cupy().get_default_memory_pool().total_bytes()
        summary["gpu_pool_mib"] = round(pool_bytes / 2**20)
    if not main:
        return summary

    # the end: how to resume (an early stop), or a sample from the best weights
    if summary["ended"] != "completed":
        print(resume_hint(summary, config.steps, run_dir, settings, args), file=sys.stderr)
    elif args.sample_tokens and summary["steps"] == config.steps:
        model, weights = best_model(trainer, run_dir)
        summary["sample"] = sample_text(model, data.tokeniser, data.prompt, args.sample_tokens,
                                        seed=settings["seed"])  # fmt: skip
        whence = ("the validation text's first line" if args.sample_prompt is None
                  else "--sample-prompt")  # fmt: skip
        print(f"sample: {args.sample_tokens} tokens after {whence}, from {weights}",
              file=sys.stderr)  # fmt: skip
        print(f"\n----- sample -----\n{summary['sample']}\n------------------")
    print(json.dumps({k: v for k, v in summary.items() if k != "sample"}), file=sys.stderr)
    return summary


def load_data(args, plan, resumed: bool) -> run_data.TrainingData:
    """The run's data (``run_data.load``, one call), enough for one window of training; a
    mistake is one line naming its flag (--dataset where the error names none)."""
    settings, config = plan.settings, plan.config
    try:
        data = run_data.load(
            settings, config, args.data_dir, tokeniser=plan.tokeniser,
            vocab_size_given=resumed or args.vocab_size is not None,  # else the data decide
            recorded=plan.recorded_data, hellaswag=args.eval_hellaswag,
            hellaswag_limit=args.hellaswag_limit, prompt=args.sample_prompt,
            sampling=args.sample_interval is not None or args.sample_tokens > 0,
        )  # fmt: skip
    except RunDataError as error:
        raise SameOnEveryRank(str(error)) from None
    except (ValueError, OSError) as error:  # the file's own words (empty, not UTF-8, ...)
        said, dataset = str(error), settings["dataset"]
        said = said if said.startswith("--") else f"--dataset {dataset}: {said}"
        raise SameOnEveryRank(f"tricycle-train: {said}") from None
    if data.n_train_tokens <= config.context_window:  # a window and its target: one more
        raise SameOnEveryRank(
            f"tricycle-train: --context-window {config.context_window}: the training text of "
            f"--dataset {settings['dataset']} has only {data.n_train_tokens:,} tokens, too few "
            f"for a context window of {config.context_window} (need at least "
            f"{config.context_window + 1}): pass a smaller --context-window or a longer text"
        )
    return data


def _start(run_dir: RunDirectory, run: dict, tokeniser: str, trainer, resumed: bool, data,
           log_interval: int, replaces: list[str]) -> None:  # fmt: skip
    """Rank 0, before the first step: the old run's files that --overwrite ``replaces`` set
    aside (only now: every check has passed; they go once the new run has a checkpoint, and
    come back if it stops before one), the run's files (its tokeniser's text, config.json,
    its metrics cut back to the trainer's step), and what is about to run, in words."""
    run_dir.set_aside(replaces)  # --overwrite: nothing of the old run may outlive it
    settings, config, step = run["settings"], run["config"], trainer.step
    if resumed and step == config["steps"]:
        print(f"the run in {run_dir.path} is complete ({config['steps']} steps)",
              file=sys.stderr)  # fmt: skip
    atomic_write_text(run_dir / RunDirectory.TOKENISER, tokeniser)
    atomic_write_text(run_dir / RunDirectory.CONFIG, json.dumps(run, indent=2) + "\n")
    if run_dir.restart_metrics(step):
        print(f"{run_dir / RunDirectory.METRICS}: dropped a torn line", file=sys.stderr)
    print(
        f"--config {settings['config']}, --arch {config['arch']}: "
        f"{trainer.model.num_parameters():,} parameters, "
        f"{data.n_train_tokens:,} training tokens from {settings['dataset']!r}, "
        f"{trainer.tokens_per_step:,} tokens per step, steps {step}..{config['steps']}, "
        f"world size {run['world_size']}",
        file=sys.stderr,
    )
    print(f"precision: {trainer.policy!r}, loss read back every {log_interval} steps",
          file=sys.stderr)  # fmt: skip
    if run["zero"]:
        state_mib = trainer.optimiser.state_bytes() / 2**20
        print(f"ZeRO-1: AdamW state {state_mib:.1f} MiB on this rank", file=sys.stderr)


def _progress(bar, record: dict, policy) -> None:
    """The progress bar after a step's record."""
    bar.update(record["step"] - bar.n)
    postfix = {"loss": f"{record['loss']:.3f}", "tok_s": f"{record['tokens_per_s']:,.0f}"}
    if policy.scaler is not None:
        postfix["skipped"] = record["skipped_steps"]
    bar.set_postfix(postfix)


def resume_hint(summary: dict, steps: int, run_dir: RunDirectory, settings: dict, args) -> str:
    """How a run that stopped early (Ctrl-C, --max-seconds, --stop-after) ended, and the
    command that continues it as it ran: naming again the file or folders it read, and the
    evaluation and sampling flags a resumed run keeps only if named again."""
    flags = {"stopped": " (--stop-after)", "out of time": " (--max-seconds)"}
    why = summary["ended"] + flags.get(summary["ended"], "")
    named = {"--out-dir": run_dir.path,
             "--dataset": None if settings["dataset"] in DATASETS else settings["dataset"],
             "--data-dir": args.data_dir, "--eval-hellaswag": args.eval_hellaswag,
             "--hellaswag-limit": args.hellaswag_limit,
             "--sample-interval": args.sample_interval, "--sample-prompt": args.sample_prompt,
             "--sample-tokens": None if args.sample_tokens == SAMPLE_TOKENS else args.sample_tokens,
             }  # fmt: skip
    words = [f"{flag} {shlex.quote(str(value))}" for flag, value in named.items()
             if value is not None]  # fmt: skip
    words.insert(1, "--resume")
    return (f"{why}: saved {run_dir.checkpoint} at step {summary['steps']} of {steps}; resume "
            f"with\n    tricycle-train {' '.join(words)}")  # fmt: skip


def best_model(trainer, run_dir: RunDirectory):
    """The trained model with the run's best weights (best.safetensors, or a resumed
    layout-1 run's best.npz: its lowest validation loss) put back, for the sample at the
    end, and which weights they are, in words."""
    best, path = trainer.best, run_dir.weights("best")
    if best is None or best["step"] == trainer.step or path.stem != "best":
        return trainer.model, f"the last weights (step {trainer.step})"
    try:
        trainer.model.load_state_dict(read_weights(path)["model"])
    except (CheckpointError, KeyError, ValueError) as error:
        raise SystemExit(f"tricycle-train: {error}") from None
    return trainer.model, (
        f"the best weights (step {best['step']}, val loss {best['val_loss']:.4f})"
    )


def run(argv=None) -> dict:
    """Parse ``argv``, set the CPU threads for the run and train; returns the summary (for
    tests and programs that call the CLI)."""
    args = parse_args(argv)
    # importing the library changes no setting: the program asks, for the run only
    with cpu_threads(threads_per_process(args.threads, distributed.init().local_size)):
        return train(args)


def main(argv=None) -> int:
    """The console entry point: train; the exit status is 130 after Ctrl-C."""
    try:  # an error on one rank ends every rank at once
        with (
            distributed.fail_together(),
            warnings_in_one_line("tricycle-train"),
            ends_in_one_line("tricycle-train", "--batch-size, --context-window or the model"),
        ):
            summary = run(argv)
    except KeyboardInterrupt:  # outside the loop (loading data), or a second Ctrl-C
        print("\ninterrupted: stopped without a new checkpoint", file=sys.stderr)
        return 130
    return 130 if summary["ended"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(main())
