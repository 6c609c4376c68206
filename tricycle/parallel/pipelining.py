"""Pipeline parallelism: torch.distributed.pipelining's manual API, on the World's
point-to-point messages (``tricycle.parallel.p2p``).

The model is cut into stages; stage ``s`` lives on rank ``s % world_size``. Every rank runs
the same schedule; the batch is cut into microbatches, activations go forward from stage to
stage and their gradients back. One stage per rank::

    from tricycle.distributed.pipelining import PipelineStage, ScheduleGPipe
    stage = PipelineStage(part, rank, world_size, device)    # this rank's layers
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)   # or Schedule1F1B
    if rank == 0:
        schedule.step(x)                                      # the whole batch
    elif rank == world_size - 1:
        losses = []
        output = schedule.step(target=y, losses=losses)       # one loss per microbatch
    else:
        schedule.step()
    optimizer.step()

Several stages per rank (virtual stages ``rank``, ``rank + world_size``, ...: the first on
rank 0, the last on the last rank), with torch's interleaved schedules::

    stages = [PipelineStage(parts[s], s, 2 * world_size, device)
              for s in (rank, rank + world_size)]
    schedule = ScheduleInterleaved1F1B(stages, n_microbatches=4, loss_fn=loss_fn)
    # or ScheduleLoopedBFS, ScheduleInterleavedZeroBubble; step() as above

The zero-bubble schedules split each backward in two: the gradients of the stage's inputs,
sent upstream at once, and the parameters', computed later where the rank would wait
(``tricycle.parallel.pipeline_backward``). ZB-V and DualPipeV place the stages in a V: rank
``r`` holds stages ``r`` and ``2 world_size - 1 - r``::

    stages = [PipelineStage(parts[s], s, 2 * world_size, device)
              for s in (rank, 2 * world_size - 1 - rank)]
    schedule = ScheduleZBVZeroBubble(stages, n_microbatches=4, loss_fn=loss_fn)
    # or ScheduleDualPipeV (n_microbatches >= 2 * world_size)

The stage is ``tricycle.parallel.pipeline_stage``'s, the schedules (what they share, how
the several stages of a rank are timed) ``tricycle.parallel.pipeline_schedules``', their
orders ``tricycle.parallel.pipeline_orders``'. Not here: torch's tracer (``pipeline``,
``SplitPoint``, ``pipe_split``: tricycle traces no programs, build each stage's module by
hand), chunk specs other than dim 0, ``dw_builder``, schedules loaded from a file
(``_PipelineScheduleRuntime``'s CSV).
"""

from tricycle.parallel.pipeline_schedules import (
    PipelineScheduleMulti,
    PipelineScheduleSingle,
    Schedule1F1B,
    ScheduleDualPipeV,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleLoopedBFS,
    ScheduleZBVZeroBubble,
)
from tricycle.parallel.pipeline_stage import PipelineStage

__all__ = [
    "PipelineScheduleMulti",
    "PipelineScheduleSingle",
    "PipelineStage",
    "Schedule1F1B",
    "ScheduleDualPipeV",
    "ScheduleGPipe",
    "ScheduleInterleaved1F1B",
    "ScheduleInterleavedZeroBubble",
    "ScheduleLoopedBFS",
    "ScheduleZBVZeroBubble",
    "SplitPoint",
    "pipe_split",
    "pipeline",
]


# ====================================================================== the tracer
def pipeline(*args, **kwargs):
    """torch's tracing front end: not in tricycle (it traces no programs)."""
    raise NotImplementedError(
        "pipeline: tricycle has no program tracer to split a model at SplitPoints; build "
        "each stage's module by hand (e.g. nn.Sequential(*layers[a:b])) and give it to "
        "PipelineStage"
    )


def pipe_split() -> None:
    """torch's split marker for the tracer: not in tricycle."""
    pipeline()


class SplitPoint:
    """torch's split points for ``pipeline``'s ``split_spec``: not in tricycle."""

    BEGINNING = "beginning"
    END = "end"

    def __init__(self, *args, **kwargs):
        pipeline()
