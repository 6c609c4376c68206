"""The connectionist temporal classification (CTC) loss, as ``torch.nn.CTCLoss`` and
``F.ctc_loss``: the negative log-probability of a label sequence (a transcript) under
per-frame class log-probabilities, summed over every alignment of the labels to the frames
(Graves et al., 2006). An alignment emits one class a frame, the ``blank`` among them; it
reads as the labels once repeats are merged and blanks dropped ("aa-b" and "a-bb" read "ab").

The sum runs over the extended label l' = (blank, l_1, blank, l_2, ..., l_L, blank) of
S' = 2L + 1 positions, in log space, by the forward-backward algorithm:

- alpha_t(s), the log-probability of the alignments of frames 0..t that stand at s at t:
  alpha_t(s) = y_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2)),
  the last only where l'_s is a label unlike l'_{s-2} (a skip over a blank); y = log_probs;
- log p = logsumexp(alpha_{T-1}(S'-1), alpha_{T-1}(S'-2)): ending on the last label or
  the blank after it; the loss is -log p;
- beta_t(s), the same from the end (frames t..T-1, from s), and the occupation
  gamma_t(s) = exp(alpha_t(s) + beta_t(s) - y_t(l'_s) - log p), the probability that an
  alignment stands at s at t (y_t(l'_s) is in both alpha and beta);
- d loss / d y_t(c) = -sum of gamma_t(s) over the positions s with l'_s = c.

That is the derivative with respect to the log-probabilities themselves, the one finite
differences see. PyTorch's backward returns it plus exp(y), which its ``log_softmax``'s
backward cancels: through a log-softmax of logits the two agree. The recursions loop over
time, each step vectorised over the batch and the positions; the forward keeps alpha, the
backward computes beta. An alignment that cannot exist (too few frames for the labels and
the blanks between repeats) has loss inf and NaN gradients, as PyTorch's; ``zero_infinity``
makes both 0.
"""

import math

import numpy as np

from tricycle import backend, checks, dispatch, ranges
from tricycle.backend import check_same_device
from tricycle.loss_reduction import REDUCTIONS, reduced
from tricycle.module import Layer
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["CTCLoss", "ctc_loss"]

NEG_INF = -math.inf


def _from_below(a, k: int, xp):
    """a[..., s - k] at s (-inf where s < k): what position s receives from k below."""
    out = xp.full_like(a, NEG_INF)
    out[..., k:] = a[..., :-k]
    return out


def _from_above(a, k: int, xp):
    """a[..., s + k] at s (-inf past the end): what position s receives from k above."""
    out = xp.full_like(a, NEG_INF)
    out[..., :-k] = a[..., k:]
    return out


def _logsumexp3(a, b, c, xp):
    """log(e^a + e^b + e^c), elementwise (-inf where all three are)."""
    return xp.logaddexp(xp.logaddexp(a, b), c)


def ctc_alpha(xp, lp_ext, skip):
    """The forward variables alpha (T, N, S') of log-probabilities ``lp_ext`` (T, N, S')
    at each extended position (-inf past a label's end) and ``skip`` (N, S'): where a
    position may be reached from two below."""
    alpha = xp.full_like(lp_ext, NEG_INF)
    alpha[0, :, :2] = lp_ext[0, :, :2]  # start on the first blank or the first label
    for t in range(1, lp_ext.shape[0]):
        prev = alpha[t - 1]  # (N, S')
        skipped = xp.where(skip, _from_below(prev, 2, xp), NEG_INF)
        alpha[t] = lp_ext[t] + _logsumexp3(prev, _from_below(prev, 1, xp), skipped, xp)
    return alpha


def ctc_beta(xp, lp_ext, skip, last_frame, ends):
    """The backward variables beta (T, N, S'): the log-probability of the alignments of
    frames t..T_n - 1 that stand at s at t, each ending at one of ``ends`` (N, S') (the
    last label or the final blank) on frame ``last_frame`` (N,) = T_n - 1; -inf after it."""
    beta = xp.full_like(lp_ext, NEG_INF)
    skip_above = xp.zeros_like(skip)  # (N, S'): s + 2 may be reached from s
    skip_above[:, :-2] = skip[:, 2:]
    frames = lp_ext.shape[0]
    for t in range(frames - 1, -1, -1):
        if t < frames - 1:
            after = beta[t + 1]  # (N, S')
            skipped = xp.where(skip_above, _from_above(after, 2, xp), NEG_INF)
            beta[t] = lp_ext[t] + _logsumexp3(after, _from_above(after, 1, xp), skipped, xp)
        end_here = (last_frame == t)[:, None]  # (N, 1): the sequence's last frame
        beta[t] = xp.where(end_here, xp.where(ends, lp_ext[t], NEG_INF), beta[t])
    return beta  # frames after T_n - 1 stay -inf: nothing flows down into them


class CTCLoss(Layer):
    """The CTC loss, as ``torch.nn.CTCLoss(blank, reduction, zero_infinity)``, called
    ``loss(log_probs, targets, input_lengths, target_lengths)``:

    - ``log_probs`` (T, N, C): per-frame log-probabilities (a log-softmax over C), or an
      unbatched (T, C);
    - ``targets``: class ids, padded (N, S) (each row's first target_length ids count) or
      concatenated (sum(target_lengths),); unbatched (S,). Ids lie in [0, C) and are not
      ``blank``; a target may be empty (length 0) and may repeat a label;
    - ``input_lengths`` (N,): frames per sequence, each <= T; ``target_lengths`` (N,):
      labels per sequence; integer sequences, arrays or Tensors (unbatched: a number).

    "none" gives one loss a sequence (N,); "sum" their sum; "mean" (PyTorch's) divides each
    by its target length (at least 1), then averages over the batch. The gradient reaches
    ``log_probs`` alone (see the module's docstring for the algorithm and its derivative).
    """

    @checks.arguments(
        blank=checks.non_negative_int,
        reduction=checks.one_of(REDUCTIONS),
        zero_infinity=checks.boolean,
    )
    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs: Tensor, targets, input_lengths, target_lengths) -> Tensor:
        op = type(self).__name__
        x = as_tensor(log_probs)
        check_float(f"{op} (log_probs)", x)
        if x.ndim not in (2, 3) or x.size == 0:
            raise ValueError(
                f"{op}: expected non-empty log_probs (T, N, C) or (T, C), got {x.shape}"
            )
        unbatched = x.ndim == 2
        lp = x.array[:, None] if unbatched else x.array  # (T, N, C)
        frames, batch, n_classes = lp.shape
        if self.blank >= n_classes:
            raise ValueError(
                f"{op}: blank must be a class of log_probs {x.shape}, in "
                f"[0, {n_classes}), got {self.blank}"
            )
        xp = x.xp
        t_n = _lengths(op, "input_lengths", input_lengths, batch, unbatched, frames)
        l_n = _lengths(op, "target_lengths", target_lengths, batch, unbatched)
        labels = _padded(op, targets, l_n, batch, unbatched, lp)  # (N, S)
        self._check_labels(op, xp, labels, l_n, n_classes)

        # the extended labels (N, S'): blanks at the even positions, the labels between
        width = 2 * labels.shape[1] + 1
        ext = xp.full((batch, width), self.blank, dtype=np.int64)
        ext[:, 1::2] = labels
        skip = xp.zeros((batch, width), dtype=bool)  # l'_s a label unlike l'_{s-2}
        skip[:, 3::2] = labels[:, 1:] != labels[:, :-1]
        positions = xp.arange(width)
        s_end = xp.asarray(2 * l_n)[:, None]  # (N, 1): the last position, S'_n - 1
        lp_ext = lp[:, xp.arange(batch)[:, None], ext]  # (T, N, S')
        lp_ext = xp.where(positions <= s_end, lp_ext, NEG_INF)  # no path past a label's end

        alpha = ctc_alpha(xp, lp_ext, skip)
        last = xp.asarray(np.maximum(t_n - 1, 0))  # (N,): each sequence's last frame
        ends = (positions == s_end) | ((positions == s_end - 1) & (s_end > 0))  # (N, S')
        at_end = alpha[last, xp.arange(batch)]  # (N, S')
        on_label = xp.take_along_axis(at_end, s_end, 1)[:, 0]  # (N,)
        before = xp.take_along_axis(at_end, xp.maximum(s_end - 1, 0), 1)[:, 0]
        log_p = xp.logaddexp(on_label, xp.where(s_end[:, 0] > 0, before, NEG_INF))
        if (t_n == 0).any():  # no frames: the empty target has probability 1, others 0
            no_frames = xp.asarray(t_n == 0)
            log_p = xp.where(no_frames, xp.where(xp.asarray(l_n == 0), 0.0, NEG_INF), log_p)
        nll = (-log_p).astype(lp.dtype, copy=False)  # (N,)
        impossible = xp.isinf(nll)
        if self.zero_infinity:
            nll = xp.where(impossible, 0, nll)
        scale = None  # "mean" (PyTorch's): each loss by its target length, then the batch mean
        if self.reduction == "mean":
            scale = xp.asarray((1 / np.maximum(l_n, 1)).astype(lp.dtype))
        losses = nll if scale is None else nll * scale

        def d_log_probs(dl):  # dl: the gradient of each (scaled) loss, broadcast to (N,)
            beta = ctc_beta(xp, lp_ext, skip, xp.asarray(t_n - 1), ends)
            log_ab = alpha + beta  # (T, N, S')
            on_path = log_ab > NEG_INF  # (elsewhere the subtraction is never NaN)
            log_gamma = xp.where(
                on_path, xp.where(on_path, log_ab, 0) - lp_ext - log_p[:, None], NEG_INF
            )
            gamma = xp.exp(log_gamma).astype(lp.dtype, copy=False)
            # add each position's occupation into its class: rows n C + l'_s of (N C, T)
            grad = xp.zeros((batch * n_classes, frames), dtype=lp.dtype)
            rows = (xp.arange(batch)[:, None] * n_classes + ext).reshape(-1)  # (N S',)
            xp.add.at(grad, rows, gamma.transpose(1, 2, 0).reshape(-1, frames))
            grad = grad.reshape(batch, n_classes, frames).transpose(2, 0, 1)  # (T, N, C)
            weight = xp.broadcast_to(dl, (batch,)) * (1 if scale is None else scale)
            weight = xp.where(impossible, 0 if self.zero_infinity else math.nan, weight)
            in_sequence = xp.arange(frames)[:, None] < xp.asarray(t_n)  # (T, N)
            weight = xp.where(in_sequence, weight, 0)[..., None]  # (T, N, 1)
            return (-grad * weight).reshape(x.shape)

        if unbatched:
            losses = losses.reshape(())
        return reduced("ctc_loss", losses, self.reduction, (x,), (d_log_probs,))

    def _check_labels(self, op: str, xp, labels, l_n, n_classes: int) -> None:
        """Each sequence's labels (the first target_length of its row) lie in [0, C) and are
        not blank (on the host; a GPU checks the range at the next read-back)."""
        if not l_n.any():
            return
        counted = xp.asarray(np.arange(labels.shape[1]) < l_n[:, None])  # (N, S)
        ids = xp.where(counted, labels, labels[int(np.argmax(l_n > 0)), 0])  # padding: a label
        check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
        check(
            ids, n_classes, op=op, what="targets", context=f"for log_probs of {n_classes} classes"
        )
        if xp is np and (counted & (labels == self.blank)).any():
            raise ValueError(
                f"{op}: targets must not contain the blank label {self.blank} "
                "(an alignment's 'no label'); give blank= another class"
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(blank={self.blank}, reduction={self.reduction!r}, "
            f"zero_infinity={self.zero_infinity})"
        )


def _lengths(op: str, name: str, value, batch: int, unbatched: bool, most=None) -> np.ndarray:
    """``value`` (a number, sequence, array or Tensor of integers) as a host int64 array
    (N,), each >= 0 and at most ``most``."""
    array = value.array if isinstance(value, Tensor) else value
    array = backend.to_host_array(array) if backend.is_cupy_array(array) else np.asarray(array)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be integers, got dtype {array.dtype}")
    if array.shape != (batch,) and not (unbatched and array.shape == ()):
        raise ValueError(
            f"{op}: {name} must have one length per sequence, ({batch},), got shape {array.shape}"
        )
    array = array.reshape(batch).astype(np.int64)
    if (array < 0).any() or (most is not None and (array > most).any()):
        bound = "" if most is None else f" and <= {most} (the frames of log_probs)"
        raise ValueError(f"{op}: {name} must be >= 0{bound}, got {array.tolist()}")
    return array


def _padded(op: str, targets, l_n: np.ndarray, batch: int, unbatched: bool, lp):
    """The targets as padded rows (N, S) of class ids, S the longest target length, from
    padded (N, S_given) or concatenated (sum(target_lengths),) targets (unbatched: (S,)),
    on the device of the log-probabilities ``lp``."""
    xp = backend.array_module(lp)
    ids = targets.array if isinstance(targets, Tensor) else xp.asarray(targets)
    check_same_device(op, lp, ids)
    if ids.dtype.kind not in "iu" and ids.size:
        raise TypeError(f"{op}: targets must be integer class ids, got dtype {ids.dtype}")
    longest = int(l_n.max())
    if unbatched or ids.ndim == 2:
        rows = ids.reshape(1, -1) if unbatched and ids.ndim == 1 else ids
        if rows.ndim != 2 or rows.shape[0] != batch or rows.shape[1] < longest:
            expected = "(S,)" if unbatched else f"({batch}, S)"
            raise ValueError(
                f"{op}: padded targets must be {expected} with S >= the longest "
                f"target length {longest}, got {ids.shape}"
            )
        return rows[:, :longest]
    total = int(l_n.sum())
    if ids.shape != (total,):
        raise ValueError(
            f"{op}: targets must be padded ({batch}, S) or concatenated "
            f"(sum(target_lengths),) = ({total},), got {ids.shape}"
        )
    starts = np.cumsum(l_n) - l_n  # (N,)
    index = np.minimum(starts[:, None] + np.arange(longest), max(total - 1, 0))  # (N, S)
    return ids[xp.asarray(index)] if total else xp.zeros((batch, 0), dtype=ids.dtype)


def ctc_loss(
    log_probs: Tensor,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss of log-probabilities (T, N, C) and targets, reduced (``CTCLoss``)."""
    return CTCLoss(blank, reduction, zero_infinity)(
        log_probs, targets, input_lengths, target_lengths
    )
