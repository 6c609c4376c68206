"""The FLOP formulas of ``tricycle.utils.flop_counter``: torch's (``torch.utils.flop_counter``'s
counts: a multiply-add is 2 FLOPs) for matrix products, convolutions and attention, and which
of tricycle's ops each counts (``classify``: an op is known by its output's name and its
inputs' shapes)."""

import math
import re

from tricycle.einsum import Subscript
from tricycle.graph import Node

MM, ADDMM, BMM = "aten.mm", "aten.addmm", "aten.bmm"
CONV, CONV_BACKWARD = "aten.convolution", "aten.convolution_backward"
SDPA = "aten._scaled_dot_product_flash_attention"
SDPA_BACKWARD = "aten._scaled_dot_product_flash_attention_backward"
_CONVOLUTION = re.compile(r"conv(_transpose)?[123]d")  # the names of tricycle's convolutions


# ---------------------------------------------------------------------- torch's formulas
def mm_flop(a_shape, b_shape) -> int:
    """(M, K) @ (K, N): 2 M N K."""
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2:
        raise ValueError(f"flop_counter: mm of {tuple(a_shape)} and {tuple(b_shape)}")
    return 2 * m * n * k


def bmm_flop(a_shape, b_shape) -> int:
    """(B, M, K) @ (B, K, N): 2 B M N K."""
    return a_shape[0] * mm_flop(a_shape[1:], b_shape[1:])


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """2 x batch x out channels x in channels (per group) x kernel size x the positions the
    kernel visits: the output's, or the input's for a transposed convolution."""
    positions = math.prod((x_shape if transposed else out_shape)[2:])
    return 2 * x_shape[0] * w_shape[0] * w_shape[1] * math.prod(w_shape[2:]) * positions


def conv_backward_flop(grad_out_shape, x_shape, w_shape, transposed: bool, mask) -> int:
    """The input's gradient (a convolution of the other kind) where ``mask[0]``, and the
    weights' (a convolution with batch and channels swapped) where ``mask[1]``."""
    swap = lambda shape: [shape[1], shape[0], *shape[2:]]  # noqa: E731
    flops = 0
    if mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, x_shape, not transposed)
    if mask[1]:
        first, second = (grad_out_shape, x_shape) if transposed else (x_shape, grad_out_shape)
        flops += conv_flop_count(swap(first), swap(second), swap(w_shape))
    return flops


def sdpa_flop_count(q_shape, k_shape, v_shape) -> int:
    """Scores q k^T and their product with v: two batched products over the query heads."""
    b, h, s_q, d_q = q_shape
    s_k, d_v = k_shape[-2], v_shape[-1]
    return bmm_flop((b * h, s_q, d_q), (b * h, d_q, s_k)) + bmm_flop(
        (b * h, s_q, s_k), (b * h, s_k, d_v)
    )


def sdpa_backward_flop_count(grad_out_shape, q_shape, k_shape, v_shape) -> int:
    """The scores recomputed, then the gradients of the scores, v, q and k: five products."""
    b, h, s_q, d_q = q_shape
    s_k, d_v = k_shape[-2], v_shape[-1]
    bh = b * h
    return (
        bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))
        + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
        + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))
        + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
        + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k))
    )


# ---------------------------------------------------------------------- tricycle's ops
def _einsum_flops(inputs: list[str], output: str, sizes: dict) -> tuple[int, bool]:
    """FLOPs of an einsum contracted pairwise from the left (as torch's, without
    opt_einsum), and whether a step had a batch index. An index of one operand alone that
    the rest do not need is summed out first; a step without a contracted index is a
    product of elements (torch's ``mul``): neither is counted."""
    flops, batched, left = 0, False, inputs[0]
    for i, right in enumerate(inputs[1:], 1):
        needed = set(output).union(*inputs[i + 1 :])
        left = "".join(c for c in left if c in needed or c in right)
        right = "".join(c for c in right if c in needed or c in left)
        shared = set(left) & set(right)
        if shared - needed:  # a contracted index: a (batched) matrix product
            flops += 2 * math.prod(sizes[c] for c in set(left) | set(right))
            batched |= bool(shared & needed)
        left = "".join(dict.fromkeys(c for c in left + right if c in needed))
    return flops, batched


def _einsum(node: Node, args: tuple, subscript: str):
    """(forward key, FLOPs, backward FLOPs per input as (key, FLOPs)) of an einsum node."""
    shapes = [list(arg.shape) for arg in args]
    sub = Subscript.parse(subscript).expand(shapes)
    sizes: dict = {}
    for part, shape in zip(sub.inputs, shapes):
        for c, n in zip(part, shape):
            sizes[c] = max(sizes.get(c, 1), n)
    flops, batched = _einsum_flops(list(sub.inputs), sub.output, sizes)
    if not flops:
        return None
    backward = []
    for i, part in enumerate(sub.inputs):
        others = [sub.output, *sub.inputs[:i], *sub.inputs[i + 1 :]]
        back_flops, back_batched = _einsum_flops(others, part, sizes)
        backward.append((BMM if back_batched else MM, back_flops))
    return (BMM if batched else MM), flops, backward


def _matmul(node: Node, args: tuple):
    """matmul's: a product of matrices (a vector on the left a row); with a vector on the
    right torch's ``mv``/``dot``, not counted. Batched when both operands are."""
    a, b = (arg.shape for arg in args)
    if len(b) == 1:
        return None
    a = (1, *a) if len(a) == 1 else a
    batch = math.prod(node.shape[:-2]) if len(node.shape) > 2 else 1
    flops = batch * mm_flop(a[-2:], b[-2:])
    key = BMM if len(a) > 2 and len(b) > 2 else MM
    return key, flops, [(key, flops), (key, flops)]


def _conv(node: Node, args: tuple, transposed: bool):
    x, w = args[0].shape, args[1].shape
    flops = conv_flop_count(x, w, node.shape, transposed)
    mask = [arg.requires_grad for arg in args[:2]]
    return CONV, flops, (CONV_BACKWARD, conv_backward_flop(node.shape, x, w, transposed, mask))


def _heads(shape) -> tuple:
    """An attention operand's shape (..., tokens, features) as (batch, heads, tokens,
    features): the leading axes all batch but the last, the heads."""
    shape = (1, 1, *shape)[-max(4, len(shape)) :]
    return (math.prod(shape[:-3]), *shape[-3:])


def _sdpa(args: tuple):
    q, k, v = (_heads(arg.shape) for arg in args)
    forward = sdpa_flop_count(q, k, v)
    return SDPA, forward, (SDPA_BACKWARD, sdpa_backward_flop_count(q, q, k, v))


def _fused_attention(args: tuple):
    """tricycle's causal attention of q|k|v packed (B, T, 3E): as sdpa's, whose FLOPs do not
    depend on how E splits into heads."""
    batch, tokens, width = args[0].shape
    q = (batch, 1, tokens, width // 3)
    return SDPA, sdpa_flop_count(q, q, q), (SDPA_BACKWARD, sdpa_backward_flop_count(q, q, q, q))


def classify(node: Node, name: str, args: tuple, registry: dict):
    """(key, FLOPs, backward) of the op that made ``node`` (named ``name``) from ``args``, or
    None when it
    is not counted. ``backward``: a list of (key, FLOPs) per input (each input's gradient its
    own product), or one (key, FLOPs) for the whole backward step, or a user's formula."""
    if name in registry:
        formula = registry[name]
        backward = registry.get(f"{name}_backward")
        return name, formula(*args, out_val=node), backward
    if name.startswith("einsum ") and not name.startswith("einsum diagonal"):
        return _einsum(node, args, name[7:])
    if name == "matmul":
        return _matmul(node, args)
    if _CONVOLUTION.fullmatch(name):
        return _conv(node, args, name.startswith("conv_transpose"))
    if name == "sdpa":
        return _sdpa(args)
    if name == "attention" and len(args) == 1 and args[0].ndim == 3:
        return _fused_attention(args)
    return None
