"""Multi-tensor parameter kernels on the GPU: the fused AdamW step (one parameter, a
multi-tensor launch over all of them, or a flat buffer), the global gradient norm for
clipping, and the optimiser hook.

Adam's per-parameter state is made and counted here by ``adam_state`` and its bias
corrections computed by ``adam_corrections``, for every kernel of this module; they mirror
``tricycle.optimisers.adam_state`` and the corrections of its ``adam_step`` (the reference,
which a backend may not import), and the tests hold the two to the same numbers."""

import math

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda import capture
from tricycle.backends.cuda.launch import adam_enabled, compiled, contiguous, elementwise_grid
from tricycle.backends.cuda.multi_tensor import block_table, pointer_table


# ====================================================================== Adam's state
def adam_state(xp, w, state: dict) -> int:
    """Advance one parameter's Adam state by a step and return that step t (1 at first).

    The state holds ``exp_avg`` and ``exp_avg_sq`` (the moments, zeros like ``w`` on its
    device, made on the first step: ``adam_moments``) and ``step``, the parameter's own count
    for the bias corrections, as torch.optim keeps it.
    """
    adam_moments(xp, w, state)
    state["step"] += 1
    return state["step"]


def adam_moments(xp, w, state: dict) -> dict:
    """Make the state's moments (zeros like ``w``) and count (0) if it has none yet."""
    if "exp_avg" not in state:
        state["exp_avg"], state["exp_avg_sq"], state["step"] = xp.zeros_like(w), xp.zeros_like(w), 0
    return state


def adam_corrections(lr: float, beta1: float, beta2: float, step: int) -> tuple[float, float]:
    """The bias corrections of step t in float64 on the host, as torch:
    (lr / (1 - b1^t), 1 / sqrt(1 - b2^t))."""
    return lr / (1.0 - beta1**step), 1.0 / math.sqrt(1.0 - beta2**step)


# ====================================================================== AdamW
def _adam_constants(lr: float, beta1: float, beta2: float, step: int) -> tuple:
    """``adam_corrections`` as the kernels take them, float32."""
    return tuple(np.float32(c) for c in adam_corrections(lr, beta1, beta2, step))


def _grad_mult_args(cp, grad_multiplier):
    if grad_multiplier is None:
        return _dummy_float(cp), np.int32(0)
    return contiguous(cp, cp.asarray(grad_multiplier), np.float32), np.int32(1)


_dummies: dict[int, object] = {}


def _dummy_float(cp):
    """A one-element float32 device array passed where a kernel's pointer is unused."""
    device = cp.cuda.runtime.getDevice()
    if device not in _dummies:
        _dummies[device] = cp.ones(1, dtype=np.float32)
    return _dummies[device]


def adamw_step(
    xp, w, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, step,
    weight_decay=0.0, grad_multiplier=None,
):  # fmt: skip
    """One fused AdamW step on one float32 tensor, in place on w, exp_avg and exp_avg_sq.

    ``step`` is the 1-based step count t for the bias corrections. ``grad_multiplier``
    (optional 0-d device array) scales the gradient first; non-finite means skip the step.
    """
    # its learning rate and step count are kernel arguments, which a replay would repeat
    capture.refuse("adamw_step", "the learning rate and step count would stay those captured")
    cp = backend.cupy()
    grad = contiguous(cp, grad, np.float32)
    n = w.size
    if n == 0:
        return
    step_size, inv_sqrt_bc2 = _adam_constants(lr, beta1, beta2, step)
    mult, has_mult = _grad_mult_args(cp, grad_multiplier)
    kernel = compiled("adamw.cu", "adamw_kernel")
    kernel(
        (elementwise_grid(n),),
        (256,),
        (w, grad, exp_avg, exp_avg_sq, np.int64(n), np.float32(1.0 - lr * weight_decay),
         np.float32(beta1), np.float32(beta2), np.float32(1.0 - beta1), np.float32(1.0 - beta2),
         np.float32(eps), step_size, inv_sqrt_bc2,
         mult, has_mult),
    )  # fmt: skip


def adam_update(xp, w, grad, state, lr, beta1, beta2, eps, decay=0.0) -> None:
    """One Adam step of a parameter with its state (same keys as ``tricycle.optimisers``),
    including the decoupled decay ``w *= 1 - lr * decay``, as one kernel.

    Dispatch with ``adam_enabled(w, grad)`` (float32, contiguous w).
    """
    t = adam_state(backend.cupy(), w, state)
    adamw_step(xp, w, grad, state["exp_avg"], state["exp_avg_sq"], lr, beta1, beta2, eps, t, decay)


@dispatch.register("adam_step", "cuda", applies=lambda w, grad, *moments: adam_enabled(w, grad))
def adam_step(xp, w, grad, m, v, beta1, beta2, eps, decay, lr, step, grad_multiplier=1.0):
    """``tricycle.optimisers.adam_step`` as one kernel (float32, contiguous w)."""
    if grad_multiplier != 1.0:
        grad = grad * grad_multiplier
    adamw_step(xp, w, grad, m, v, lr, beta1, beta2, eps, step, decay)


def _check_multi(name: str, *lists) -> None:
    n = len(lists[0])
    for arrays in lists:
        if len(arrays) != n:
            raise ValueError(f"{name}: lists of different lengths {[len(a) for a in lists]}")
        for a in arrays:
            if a.dtype != np.float32 or not a.flags.c_contiguous:
                raise TypeError(
                    f"{name}: every array must be float32 and C-contiguous, got {a.dtype} "
                    f"{a.shape} (contiguous: {a.flags.c_contiguous})"
                )


def adam_hyper(lr: float, beta1: float, beta2: float, eps: float, step: int) -> tuple:
    """The numbers ``adamw_multi_kernel`` reads for step t: (lr, beta1, beta2, eps,
    lr / (1 - b1^t), 1 / sqrt(1 - b2^t), 1 - beta1, 1 - beta2), the corrections and the rests
    in float64 (``adam_corrections``), as torch takes them."""
    return (lr, beta1, beta2, eps, *adam_corrections(lr, beta1, beta2, step), 1 - beta1, 1 - beta2)


def adamw_multi_step(weights, grads, exp_avgs, exp_avg_sqs, hyper, weight_decays=0.0,
                     grad_multiplier=None):  # fmt: skip
    """One AdamW step over many float32 tensors in a single launch (in place).

    ``hyper``: a float32 device array of ``adam_hyper``'s eight numbers (from
    ``capture.step_scalars``, so that a captured step reads each replay's own).
    ``weight_decays``: one float for all tensors or one per tensor (0 for biases and gains).
    ``grad_multiplier``: as in ``adamw_step`` (see ``clip_multiplier``).
    """
    cp = backend.cupy()
    grads = [contiguous(cp, g, np.float32) for g in grads]
    _check_multi("adamw_multi_step", weights, grads, exp_avgs, exp_avg_sqs)
    if not weights:
        return
    if np.ndim(weight_decays) == 0:
        weight_decays = [float(weight_decays)] * len(weights)
    table = block_table([w.size for w in weights], [float(wd) for wd in weight_decays])
    pointers = pointer_table(weights, grads, exp_avgs, exp_avg_sqs)
    mult, has_mult = _grad_mult_args(cp, grad_multiplier)
    kernel = compiled("adamw.cu", "adamw_multi_kernel")
    kernel(
        (table.n_blocks,),
        (256,),
        (pointers, table.sizes, table.decays, table.block_tensor, table.block_start,
         np.int32(len(weights)), np.int32(table.chunk), hyper, mult, has_mult),
    )  # fmt: skip


def clip_multiplier(xp, grads, max_norm: float = 0.0, loss_scale=None):
    """Global gradient norm and the gradient multiplier for the AdamW kernels, on the device.

    ``loss_scale``: None, or a 0-d float32 device array holding the loss scale s (the
    gradients are s times too large). Returns (norm, multiplier), 0-d float32 device arrays:
    norm = ||grads|| / s, multiplier = min(1, max_norm / (norm + 1e-6)) / s (no clipping when
    max_norm <= 0), or NaN when the norm is inf/NaN, which makes the AdamW kernels skip the
    step. Two launches and no host synchronisation.
    """
    cp = backend.cupy()
    grads = [contiguous(cp, g, np.float32) for g in grads]
    norm = cp.zeros((), dtype=np.float32)
    multiplier = cp.ones((), dtype=np.float32)
    if not grads:
        return norm, multiplier
    scale, has_scale = _grad_mult_args(cp, loss_scale)
    table = block_table([g.size for g in grads], None)
    pointers = pointer_table(grads)
    partial = cp.empty(table.n_blocks, dtype=np.float32)
    sumsq = compiled("adamw.cu", "sumsq_multi_kernel")
    sumsq(
        (table.n_blocks,),
        (256,),
        (pointers, table.sizes, table.block_tensor, table.block_start, np.int32(table.chunk),
         partial),
    )  # fmt: skip
    finalize = compiled("adamw.cu", "clip_multiplier_kernel")
    finalize(
        (1,),
        (1024,),
        (partial, np.int32(table.n_blocks), np.float32(max_norm), scale, has_scale, norm,
         multiplier),
    )  # fmt: skip
    return norm, multiplier


def optimiser_update(named, states, hyper, weight_decays, grad_multiplier=None) -> bool:
    """One Adam/AdamW update of the parameters ``named`` [(name, Tensor)] as multi-tensor
    kernel launches; ``Adam.fused_update`` is the caller.

    Same state (``exp_avg``, ``exp_avg_sq``, ``step``: ``states`` has one dict per parameter,
    already on its device) and the same math as ``tricycle.optimisers``. ``hyper()`` returns
    (lr, beta1, beta2, eps), read when the step runs: now, and before each replay of a
    captured step, which also advances the counts then (``capture.step_scalars``).
    ``weight_decays`` has one decoupled decay per parameter; one launch per distinct step
    count (normally one). Returns False, having done nothing, where a parameter or gradient
    is not a float32 C-contiguous cupy array. ``grad_multiplier``: see ``clip_multiplier``.
    Gradients are left in place (zero them as usual). A step skipped on the device
    (non-finite multiplier) still counts in ``step``.
    """
    if not named:
        return True
    for _, p in named:
        g = p.grad.array
        if not (adam_enabled(p.array, g) and g.dtype == np.float32):
            return False
    cp = backend.cupy()
    groups: dict[int, list] = {}
    for (_, p), state, decay in zip(named, states, weight_decays):
        adam_moments(cp, p.array, state)
        groups.setdefault(state["step"], []).append((p.array, p.grad.array, state, decay))
    for members in groups.values():
        w, g, group, wd = (list(column) for column in zip(*members))

        def advance(group=group) -> tuple:  # the host half of the step: count it
            for state in group:
                state["step"] += 1
            return adam_hyper(*hyper(), group[0]["step"])

        m, v = [s["exp_avg"] for s in group], [s["exp_avg_sq"] for s in group]
        adamw_multi_step(w, g, m, v, capture.step_scalars(advance), wd, grad_multiplier)
    return True


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    names = ("adamw_kernel", "adamw_multi_kernel", "sumsq_multi_kernel", "clip_multiplier_kernel")
    return [("adamw.cu", name, ()) for name in names]


def _all_float32(*arrays) -> bool:
    return all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)


dispatch.add("adam_update_all", "cuda", optimiser_update, dtypes=("float32",))


@dispatch.register("global_norm", "cuda", dtypes=("float32",), applies=_all_float32)
def global_norm(xp, arrays):
    """``tricycle.optimisers.global_norm`` from the kernel's own float32 block sums."""
    return clip_multiplier(xp, arrays)[0]


dispatch.add("clip_multiplier", "cuda", clip_multiplier, dtypes=("float32",), applies=_all_float32)
