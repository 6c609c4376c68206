"""Selective activation checkpointing: torch's ``create_selective_checkpoint_contexts``.

``checkpoint(fn, x, context_fn=functools.partial(create_selective_checkpoint_contexts,
policy))`` recomputes ``fn`` in backward as ever, except that the ops the policy saves are
not computed again: their outputs are kept from the forward and handed back, in order, when
the recomputation reaches them. Saving the expensive ops (the matrix products, attention)
and recomputing the cheap ones (pointwise ops, norms) buys most of checkpointing's memory
for a fraction of its compute.

The two contexts share one store. The first wraps the forward: each op it sees runs, the
policy is asked about it, and the store keeps, per op name, the output (a save) or a mark
(a recompute) in the order the ops ran. The second wraps the recomputation: the n-th run of
an op name takes the n-th entry, its output (handed over once, then dropped) or the mark
(the op runs again). A second backward through a region that consumed a saved output fails,
as torch's does.

Where the ops are seen. tricycle's ops compute in Python before they make their node, so an
op is seen where its computation is called, at two places that already stand between an op
and its arrays:

- ``dispatch.choose``, where every fused op (and every einsum run as one matrix product)
  asks for its kernel: the forward it is given (the first of a (forward, backward) pair) is
  the computation, named by the op's dispatch name;
- ``binary._apply``, the one call of a binary op's array function: ``@``, ``+``, ``*``,
  ``maximum``, comparisons, named as the op names itself.

While a region is open in some thread those two names hold hooks, which look up the calling
thread's region (none: the plain function); when the last region closes the plain functions
are back. Outside checkpointed regions the op path is exactly the plain code. An op that
runs inside another op's computation (a kernel that calls another) is the outer op's.

The names a policy sees (``op``, a str):

========================================  ==============================================
``matmul``                                every matrix product: ``@``, ``tricycle.matmul``,
                                          ``mm``, ``bmm``, and the einsums that run as one
                                          product (``einsum``, ``Dense``/``nn.Linear``,
                                          ``F.linear``)
``softmax``, ``log_softmax``              the fused last-axis ops
``layer_norm``, ``rms_norm``,             the norms
``batch_norm``, ``group_norm``
``attention``                             the GPT's fused causal attention (from qkv)
``scaled_dot_product_attention``          ``F.scaled_dot_product_attention`` (without a
                                          learnt mask, which runs the reference unseen)
``gelu``, ``bias_gelu``, ``swiglu``       the fused activations
``dropout``, ``step_seed``                dropout (its mask), a fused op's dropout seed
``cross_entropy``, ``embedding``,         the other fused ops
``conv``, ``max_pool``, ``avg_pool``,
``grid_sample``, ``{rnn,rnn_relu,gru,
lstm}_recurrence``, ``cast_arrays``,
``cast_output``
``add``, ``sub``, ``mul``, ``div``,       the binary ops (``<``, ``==``, ... for the
``pow``, ``maximum``, ``minimum``, ...    comparisons)
========================================  ==============================================

Unary ops (``exp``, ``tanh``, ``relu``), reductions, shape ops and the einsums that do not
run as one product pass through no hook: they are always recomputed. A policy function that
records its ``op`` shows what a function's ops are called. An op whose output holds Tensors
(a precision policy's ``cast_output`` on the CPU) is recomputed whatever the policy says: a
kept Tensor would tie the recomputation to the forward's graph.

torch's names for ops: ``torch.ops.aten.mm.default`` is torch's object, not tricycle's, so
a policy sees tricycle's names. In a list, an entry is an op name as above, a function whose
name is one (``tricycle.einsum``, ``F.softmax``, ``F.linear``), or torch's spelling of an op,
as a string (``"aten.mm.default"``) or torch's op itself (its name is read, torch is not
imported): ``SPELLINGS`` says which tricycle names each stands for (``mm``, ``addmm``,
``bmm`` are ``matmul``; ``_scaled_dot_product_flash_attention`` both attentions).

As torch's: the policy is asked in the forward only (``ctx.is_recompute`` is False, and
``ctx.op_output`` is the op's output), with the arguments the computation was called with
(arrays, and for a fused op's formula ``xp`` first); it returns a ``CheckpointPolicy`` or a
bool (True: ``MUST_SAVE``); ``*_CPU_OFFLOAD`` recomputes, as torch's eager mode does.
tricycle's in-place methods never write into an op's output while recording
(``tricycle.rebase``), so a kept output cannot change before it is used:
``allow_cache_entry_mutation`` is checked and changes nothing.
"""

import functools
import threading

from tricycle import binary, checks, dispatch
from tricycle.graph import Node
from tricycle.utils.checkpoint_tools import CheckpointError, CheckpointPolicy

__all__ = ["SPELLINGS", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "op_names"]  # fmt: skip

_SAVE = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)
_RECOMPUTE, _CONSUMED = object(), object()  # the store's marks: run again; handed over
# tricycle's names a policy sees -> torch's names of those ops (aten's without the overload,
# torch.nn.functional's), which a list may hold
_TORCH_SPELLINGS = {
    ("matmul",): "mm bmm addmm baddbmm addbmm mv addmv dot einsum linear bilinear __matmul__",
    ("scaled_dot_product_attention", "attention"): (
        "scaled_dot_product_attention _scaled_dot_product_flash_attention "
        "_scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_efficient_attention "
        "_scaled_dot_product_cudnn_attention _scaled_dot_product_attention_math "
        "_flash_attention_forward _efficient_attention_forward"
    ),
    ("softmax",): "_softmax",
    ("log_softmax",): "_log_softmax",
    ("layer_norm",): "native_layer_norm",
    ("rms_norm",): "_fused_rms_norm",
    ("batch_norm",): (
        "native_batch_norm _native_batch_norm_legit cudnn_batch_norm "
        "_native_batch_norm_legit_no_training"
    ),
    ("group_norm",): "native_group_norm",
    ("dropout",): "native_dropout",
    ("conv",): "convolution _convolution conv1d conv2d conv3d cudnn_convolution mkldnn_convolution",
    ("max_pool",): (
        "max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices"
    ),
    ("avg_pool",): "avg_pool1d avg_pool2d avg_pool3d",
    ("grid_sample",): "grid_sampler grid_sampler_2d grid_sampler_3d",
    ("div",): "true_divide divide",
    ("mul",): "multiply",
    ("sub",): "subtract",
}
# a spelling -> the names it stands for; any other name stands for itself
SPELLINGS: dict[str, tuple[str, ...]] = {
    spelling: names
    for names, spellings in _TORCH_SPELLINGS.items()
    for spelling in spellings.split()
}


class SelectiveCheckpointContext:
    """torch.utils.checkpoint.SelectiveCheckpointContext: what a policy function is given
    first: ``is_recompute`` (False: the policy is asked in the forward only) and
    ``op_output``, the output of the op it is asked about."""

    def __init__(self, *, is_recompute: bool, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """torch.utils.checkpoint.create_selective_checkpoint_contexts: the pair of contexts
    that ``checkpoint``'s ``context_fn`` returns for selective checkpointing (see the
    module's doc for the names the policy sees).

    Args:
        policy_fn_or_list: a function ``policy(ctx, op, *args, **kwargs)`` returning a
            ``CheckpointPolicy`` (or a bool), or a list of ops (names, functions or torch's
            ops: ``op_names``), which saves those and recomputes the rest.
        allow_cache_entry_mutation: torch's switch; checked (nothing can mutate a kept
            output here).
    """
    owner = "create_selective_checkpoint_contexts"
    checks.boolean(owner, "allow_cache_entry_mutation", allow_cache_entry_mutation)
    if isinstance(policy_fn_or_list, list):
        saved = frozenset(name for entry in policy_fn_or_list for name in op_names(entry))
        policy = functools.partial(_listed, saved)
    elif callable(policy_fn_or_list):
        policy = policy_fn_or_list
    else:
        raise TypeError(f"{owner}: policy_fn_or_list must be either a function or a list of "
                        f"ops, got {type(policy_fn_or_list).__name__}")  # fmt: skip
    store: dict[str, list] = {}
    return _Forward(store, policy), _Recomputation(store)


def op_names(entry) -> tuple[str, ...]:
    """The names a policy sees that a list's ``entry`` stands for: an op name as it is; a
    function by its name; torch's spelling ("aten.mm.default", torch's op object) by the op's
    base name; each through ``SPELLINGS``."""
    if isinstance(entry, str):
        name = entry
    elif callable(entry) and isinstance(getattr(entry, "__name__", None), str):
        name = entry.__name__  # a function; torch's op object: "mm.default"
    else:
        raise ValueError(
            f"create_selective_checkpoint_contexts: expected an op in the list (an op name such "
            f"as 'matmul', a function such as tricycle.einsum, or torch's op), got {entry!r} "
            f"of type {type(entry).__name__}"
        )
    for prefix in ("torch.ops.", "aten."):
        name = name.removeprefix(prefix)
    if "." in name.strip("."):  # torch's overload: "mm.default", "add.Tensor"
        name = name.split(".")[0]
    return SPELLINGS.get(name, (name,))


def _listed(saved: frozenset, ctx, op: str, *args, **kwargs) -> CheckpointPolicy:
    """A list's policy: save the listed ops, recompute the rest (as torch's)."""
    return CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE


# ====================================================================== the regions
class _Region:
    """A run of the checkpointed function in which ops are seen (a context manager): the
    forward's or the recomputation's, sharing ``store`` (op name -> entries, in order)."""

    def __init__(self, store: dict):
        self.store = store
        self.runs: dict[str, int] = {}  # op name -> how many times it ran in this region
        self.busy = False  # inside an op's computation: an op it runs is its own
        self.outer = None

    def __enter__(self):
        self.runs, self.outer = {}, _thread.region
        _thread.region = self
        _open()
        return self

    def __exit__(self, *error) -> None:
        _thread.region = self.outer
        _close()

    def run(self, op: str, compute, args: tuple, kwargs: dict):
        """The output of ``op``'s computation ``compute()``, called with ``args`` and
        ``kwargs`` (what the policy is shown), or what the store says for this run of it."""
        if self.busy:
            return compute()
        index = self.runs.get(op, 0)
        self.runs[op] = index + 1
        self.busy = True
        try:
            return self.op(op, index, compute, args, kwargs)
        finally:
            self.busy = False


class _Forward(_Region):
    """The forward: every op runs; the policy decides what the store keeps."""

    def __init__(self, store: dict, policy):
        super().__init__(store)
        self.policy = policy

    def op(self, op: str, index: int, compute, args: tuple, kwargs: dict):
        out = compute()
        ctx = SelectiveCheckpointContext(is_recompute=False, op_output=out)
        policy = self.policy(ctx, op, *args, **kwargs)
        if isinstance(policy, bool):  # torch's older form: True saves
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        if not isinstance(policy, CheckpointPolicy):
            raise TypeError(
                f"create_selective_checkpoint_contexts: the policy returned {policy!r} for op "
                f"{op!r}; expected a CheckpointPolicy or a bool"
            )
        kept = out if policy in _SAVE and not _holds_tensor(out) else _RECOMPUTE
        self.store.setdefault(op, []).append(kept)
        return out


class _Recomputation(_Region):
    """The recomputation: a saved op hands over its output from the store, once."""

    def op(self, op: str, index: int, compute, args: tuple, kwargs: dict):
        entries = self.store.get(op, ())
        if index >= len(entries):
            raise CheckpointError(
                f"selective checkpoint: the recomputation ran op {op!r} {index + 1} time(s), "
                f"the forward {len(entries)}: the checkpointed function must run the same ops "
                "both times (the same control flow, no state that changed between them)"
            )
        entry = entries[index]
        if entry is _CONSUMED:
            raise CheckpointError(
                "Trying to backward an extra time. You are only allowed to backward once on "
                f"any region computed under selective activation checkpoint (op {op!r} handed "
                "over its saved output in the first backward)"
            )
        if entry is _RECOMPUTE:
            return compute()
        entries[index] = _CONSUMED  # its graph holds it now; the store lets it go
        return entry


def _holds_tensor(value) -> bool:
    """Whether an op's output is or holds (in tuples and lists) a Tensor."""
    if isinstance(value, Node):
        return True
    return isinstance(value, tuple | list) and any(_holds_tensor(v) for v in value)


# ====================================================================== the hooks
class _Thread(threading.local):
    region = None  # the region open in this thread (every thread starts with none)


_thread = _Thread()
_lock = threading.Lock()
_opened = 0  # regions open, in all threads
_plain = {"choose": dispatch.choose, "apply": binary._apply}  # set again when hooks go in


def _open() -> None:
    """A region opens: the hooks go in with the first."""
    global _opened
    with _lock:
        if _opened == 0:
            _plain.update(choose=dispatch.choose, apply=binary._apply)
            dispatch.choose, binary._apply = _choose, _apply
        _opened += 1


def _close() -> None:
    """A region closes: the plain functions are back with the last."""
    global _opened
    with _lock:
        _opened -= 1
        if _opened == 0:
            dispatch.choose, binary._apply = _plain["choose"], _plain["apply"]


def _choose(op: str, reference, *arrays):
    """``dispatch.choose`` while regions are open: in a region, the chosen forward (alone,
    or first of a pair) is seen when called."""
    chosen = _plain["choose"](op, reference, *arrays)
    region = _thread.region
    if region is None or region.busy or chosen is None:
        return chosen
    if isinstance(chosen, tuple) and chosen and callable(chosen[0]):
        return (_seen(region, op, chosen[0]), *chosen[1:])
    return _seen(region, op, chosen) if callable(chosen) else chosen


def _seen(region: _Region, op: str, forward):
    """``forward``, seen by ``region`` when called while it is open in this thread."""

    def seen(*args, **kwargs):
        if _thread.region is not region:  # called after its region (or in another thread)
            return forward(*args, **kwargs)
        return region.run(op, functools.partial(forward, *args, **kwargs), args, kwargs)

    return seen


def _apply(op: str, fn, a, b):
    """``binary._apply`` while regions are open: in a region, the binary op is seen."""
    plain, region = _plain["apply"], _thread.region
    if region is None or region.busy:
        return plain(op, fn, a, b)
    return region.run(op, functools.partial(plain, op, fn, a, b), (a.array, b.array), {})
