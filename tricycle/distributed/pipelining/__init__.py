"""``torch.distributed.pipelining``: pipeline stages and their schedules
(``tricycle.parallel.pipelining``'s)."""

from tricycle.parallel.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    SplitPoint,
    pipe_split,
    pipeline,
)

__all__ = ["PipelineStage", "Schedule1F1B", "ScheduleGPipe", "SplitPoint", "pipe_split", "pipeline"]
