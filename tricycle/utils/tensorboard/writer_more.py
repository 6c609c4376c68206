"""``SummaryWriter``'s media, projector and plugin methods (a base class of it): audio,
video, images with boxes, embeddings, PR curves, meshes and custom-scalar layouts, each
writing what torch's writer writes (see ``media``, ``boxes``, ``embedding``, ``plugins``)."""

import os

from tricycle.utils.tensorboard import media, plugins
from tricycle.utils.tensorboard.boxes import image_boxes
from tricycle.utils.tensorboard.embedding import write_embedding


class WriterExtras:
    """The methods; ``SummaryWriter`` gives ``_add`` and ``_get_file_writer``."""

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """Record a mono sound (values in [-1, 1], shape (1, L) or (L,)) as a WAV file."""
        self._add(media.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Record (N, T, C, H, W) clips (uint8, or floats in [0, 1]) as one animated GIF of
        the clips in a grid (torch needs moviepy for it; tricycle writes the GIF itself)."""
        self._add(media.video(tag, vid_tensor, fps), global_step, walltime)

    def add_image_with_boxes(
        self,
        tag,
        img_tensor,
        box_tensor,
        global_step=None,
        walltime=None,
        rescale=1,
        dataformats="CHW",
        labels=None,
    ) -> None:
        """Record an image with (N, 4) boxes (xmin, ymin, xmax, ymax) drawn in red, each
        with its label when ``labels`` has one per box (otherwise none, as torch's)."""
        if labels is not None:
            labels = [labels] if isinstance(labels, str) else labels
            if len(labels) != box_tensor.shape[0]:
                labels = None
        summary = image_boxes(tag, img_tensor, box_tensor, rescale, dataformats, labels)
        self._add(summary, global_step, walltime)

    def add_embedding(
        self, mat, metadata=None, label_img=None, global_step=None, tag="default",
        metadata_header=None,
    ) -> None:  # fmt: skip
        """Write (N, D) points for TensorBoard's projector, with per-point ``metadata``
        labels (columns under ``metadata_header``) and (N, C, H, W) ``label_img`` pictures."""
        log_dir = self._get_file_writer().get_logdir()
        entry = write_embedding(
            log_dir, mat, metadata, label_img, global_step, tag, metadata_header
        )
        self._projector_entries = [*getattr(self, "_projector_entries", []), entry]
        with open(os.path.join(log_dir, "projector_config.pbtxt"), "w", encoding="utf-8") as f:
            f.write("".join(self._projector_entries))

    def add_pr_curve(
        self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Record a precision-recall curve of binary ``labels`` and ``predictions`` in [0, 1]."""
        summary = plugins.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._add(summary, global_step, walltime)

    def add_pr_curve_raw(
        self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
        false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
        weights=None, walltime=None,
    ) -> None:  # fmt: skip
        """Record a precision-recall curve from its counts, precision and recall per
        threshold (``weights`` is unused, as in torch's)."""
        summary = plugins.pr_curve_raw(
            tag, true_positive_counts, false_positive_counts, true_negative_counts,
            false_negative_counts, precision, recall, num_thresholds,
        )  # fmt: skip
        self._add(summary, global_step, walltime)

    def add_mesh(
        self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Record a (B, N, 3) mesh or point cloud: vertices, per-vertex colors and faces
        (vertex indices), with a three.js ``config_dict``."""
        self._add(plugins.mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def add_custom_scalars(self, layout) -> None:
        """Lay out charts of scalars: ``{category: {title: ["Multiline" or "Margin", tags]}}``."""
        self._add(plugins.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """One custom chart of several scalar tags' lines."""
        self._add(plugins.custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """One custom chart of a value and its lower and upper margins (three tags)."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._add(plugins.custom_scalars({category: {title: ["Margin", tags]}}))


__all__ = ["WriterExtras"]
