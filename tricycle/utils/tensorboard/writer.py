"""``SummaryWriter``: torch.utils.tensorboard's writer, with no tensorboard or protobuf package.

It writes the event files TensorBoard reads (``records``), with summaries encoded by hand
(``summaries``, ``hparams``): scalars, groups of scalars, histograms, text, images, matplotlib
figures and hyperparameters; audio, video, boxes, embeddings, PR curves, meshes and custom
scalar layouts come from ``writer_more.WriterExtras``. ``add_graph`` is refused: tricycle has
no TorchScript trace to draw. Events are written out when ``max_queue`` are pending or
``flush_secs`` have passed, as each arrives, and at ``flush``/``close`` (torch's writer
flushes from a background thread)."""

import os
import socket
import time
from datetime import datetime

from tricycle.utils.tensorboard import records, summaries
from tricycle.utils.tensorboard.hparams import hparams
from tricycle.utils.tensorboard.images import figure_to_image
from tricycle.utils.tensorboard.writer_more import WriterExtras


class SummaryWriter(WriterExtras):
    """Writes summaries to event files in ``log_dir`` for TensorBoard (``tensorboard --logdir``).

    Args:
        log_dir: the directory; default ``runs/<Mon DD_HH-MM-SS>_<host><comment>``.
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: a step from which earlier events of a crashed run, at or after it, are
            hidden by TensorBoard (a ``SessionLog.START`` event at that step).
        max_queue: events held before they are written out.
        flush_secs: seconds after which pending events are written out (as events arrive).
        filename_suffix: appended to each event file's name.
    """

    def __init__(
        self,
        log_dir=None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
    ):
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.default_bins = summaries.default_bins()
        self.file_writer = self.all_writers = None
        self._get_file_writer()

    def _get_file_writer(self) -> records.EventFileWriter:
        """The event file of ``log_dir``, opened again after ``close``."""
        if self.file_writer is None:
            self.file_writer = self._open(self.log_dir)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step, now = self.purge_step, time.time()
                self.file_writer.add_event(records.event(now, step, file_version="brain.Event:2"))
                self.file_writer.add_event(records.event(now, step, session_status=1))
                self.purge_step = None
        return self.file_writer

    def _open(self, log_dir) -> records.EventFileWriter:
        return records.EventFileWriter(
            log_dir, self.max_queue, self.flush_secs, self.filename_suffix
        )

    def get_logdir(self):
        """The directory the event files are written in."""
        return self.log_dir

    def _add(self, summary: bytes, global_step=None, walltime=None, writer=None) -> None:
        walltime = time.time() if walltime is None else walltime
        step = None if global_step is None else int(global_step)
        (writer or self._get_file_writer()).add_event(
            records.event(walltime, step, summary=summary)
        )

    def add_scalar(
        self,
        tag,
        scalar_value,
        global_step=None,
        walltime=None,
        new_style=False,
        double_precision=False,
    ) -> None:
        """Record one number (a Python number, numpy scalar or one-element tensor)."""
        self._add(
            summaries.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime
        )

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Record several numbers in one chart: each under tag ``main_tag`` in its own run,
        the sub-directory ``<log_dir>/<main_tag with / as _>_<key>``, as torch's writer does."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = self._open(run_dir)
            self._add(
                summaries.scalar(main_tag, value), global_step, walltime, self.all_writers[run_dir]
            )

    def add_histogram(
        self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ) -> None:
        """Record the histogram of ``values``: ``bins`` as numpy.histogram's, or "tensorflow"
        (the default: TensorFlow's exponential edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(summaries.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(
        self,
        tag,
        min,  # noqa: A002 - torch's name
        max,  # noqa: A002 - torch's name
        num,
        sum,  # noqa: A002 - torch's name
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step=None,
        walltime=None,
    ) -> None:
        """Record a histogram from its parts (each bucket's upper limit and count)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError(
                f"add_histogram_raw: {len(bucket_limits)} bucket limits for "
                f"{len(bucket_counts)} bucket counts"
            )
        summary = summaries.histogram_raw(
            tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._add(summary, global_step, walltime)

    def add_image(
        self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"
    ) -> None:
        """Record an image (float in [0, 1] or uint8), laid out as ``dataformats``."""
        self._add(summaries.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(
        self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"
    ) -> None:
        """Record a batch of images as one grid image (eight to a row)."""
        self._add(summaries.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Record a matplotlib figure (or a list of them, as a grid) as an image."""
        layout = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(
            tag, figure_to_image(figure, close), global_step, walltime, dataformats=layout
        )

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Record a string (shown as markdown by TensorBoard's text tab)."""
        self._add(summaries.text(tag, text_string), global_step, walltime)

    def add_hparams(
        self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None
    ) -> None:
        """Record a run's hyperparameters and final metrics for TensorBoard's HPARAMS tab, in
        the sub-directory ``run_name`` (default: the time) of ``log_dir``, as torch's writer."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries")
        experiment, start, end = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        log_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=log_dir) as run:
            for summary in (experiment, start, end):
                run._add(summary, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """Refused: torch draws the graph of a TorchScript trace, which tricycle has not."""
        raise NotImplementedError(
            "SummaryWriter.add_graph: tricycle has no TorchScript trace to draw a model's graph "
            "from; log scalars, histograms or text (print(model)) instead"
        )

    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Write pending events and close the files (a later ``add_*`` opens a new file)."""
        for writer in (self.all_writers or {}).values():
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()


__all__ = ["SummaryWriter"]
