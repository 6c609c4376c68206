"""Evaluating one einsum on arrays: planned once per shapes, run as one (batched) matmul.

``tricycle.einsum`` parses a subscript, handles diagonals and derives the gradients; here the
expanded einsum (every index once per operand) meets arrays. Indices that only one operand
has are summed first; a two-operand contraction then becomes a single matmul, with the
operands viewed as (batch..., rows, cols) matrices (a transpose BLAS reads for free where it
can) and the product reshaped into the output's order. Other cases are ``xp.einsum``'s. The
matmul goes through ``tricycle.dispatch`` ("matmul": cuBLAS on a GPU).
"""

import functools
from typing import NamedTuple

from tricycle import dispatch


def _broadcast(m: int, n: int) -> int:
    """The size of an index that is m in one operand and n in another (one of them 1, or both
    equal): numpy's rule, so that 1 and 0 make 0."""
    return m if n == 1 else n


def contract(xp, inputs: tuple[str, ...], output: str, arrays: list):
    """Evaluate the (expanded) einsum ``inputs -> output`` on arrays.

    Indices in only one operand and not in the output are summed first; a two-operand
    contraction then runs as one batched matmul. Other cases fall back to ``xp.einsum``.
    """
    plan = _contract_plan(tuple(inputs), output, tuple(a.shape for a in arrays))
    return run_plan(xp, plan, arrays)


def run_plan(xp, plan, arrays: list):
    """Evaluate the einsum that ``_contract_plan`` planned for the shapes of ``arrays``."""
    kind, sums, detail = plan
    if kind == "einsum":
        return xp.einsum(detail, *arrays, optimize=len(arrays) > 2)
    a, b = arrays
    if sums[0]:
        a = a.sum(axis=sums[0])
    if sums[1]:
        b = b.sum(axis=sums[1])
    if kind == "einsum2":
        return xp.einsum(detail, a, b)
    return _run_matmul(xp, detail, a, b)


@functools.lru_cache(maxsize=4096)
def _contract_plan(inputs: tuple[str, ...], output: str, shapes: tuple[tuple[int, ...], ...]):
    """How to evaluate one einsum on operands of these shapes, worked out once and cached.

    Returns ``(kind, axes to pre-sum per operand, detail)``: kind "einsum" (one or more than
    two operands: ``xp.einsum``), "einsum2" (two operands that matmul cannot take) or "matmul"
    (detail is a _MatmulPlan).
    """
    if len(inputs) != 2:
        return "einsum", (), f"{','.join(inputs)}->{output}"
    inputs, shapes, sums = list(inputs), list(shapes), []
    for k, part in enumerate(inputs):
        others = inputs[1 - k] + output
        lonely = tuple(i for i, c in enumerate(part) if c not in others)
        sums.append(lonely)
        if lonely:  # an index only this operand has is summed before the product
            inputs[k] = "".join(c for i, c in enumerate(part) if i not in lonely)
            shapes[k] = tuple(n for i, n in enumerate(shapes[k]) if i not in lonely)
    plan = _matmul_plan(inputs[0], inputs[1], output, shapes[0], shapes[1])
    if plan is None:
        return "einsum2", tuple(sums), f"{inputs[0]},{inputs[1]}->{output}"
    return "matmul", tuple(sums), plan


class _MatmulPlan(NamedTuple):
    first: tuple  # (transpose, matrix shape, swap last two axes) for the left matmul operand
    second: tuple  # the same for the right matmul operand
    swap: bool  # True: compute b' @ a' (the output lists b's indices before a's)
    shape: tuple[int, ...]  # the product reshaped to (batch..., first's free, second's free)
    perm: tuple[int, ...] | None  # final transpose into the output's order, if any


def _matmul_plan(sa: str, sb: str, out: str, shape_a, shape_b) -> _MatmulPlan | None:
    """a (sa) x b (sb) -> out as one matmul (batch..., L, K) @ (batch..., K, R), or None.

    Every index of a is a batch index (in a, b and out), a free index (in a and out) or a
    summed one (in a and b only); likewise for b. If the output lists b's free indices before
    a's, the product is computed as b @ a instead, so it comes out in the output's order (a
    contiguous result, no transpose): e.g. the input gradient of a Dense layer,
    ``ij,...j->...i``, is ``dout @ W.T`` rather than a transpose of ``W @ dout.T``.
    """
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in sa if c in out and c not in sb]
    right = [c for c in sb if c in out and c not in sa]
    summed = [c for c in sa if c in sb and c not in out]
    size = dict(zip(sa, shape_a))
    for c, n in zip(sb, shape_b):
        if c in summed and size[c] != n:
            return None  # a summed index broadcast from size 1: matmul cannot do that
        size[c] = _broadcast(size.get(c, 1), n)

    free = [c for c in out if c not in batch]
    swap = bool(left and right) and free == right + left
    if swap:
        sa, sb, shape_a, shape_b, left, right = sb, sa, shape_b, shape_a, right, left
    first = _arrangement(sa, shape_a, batch, left, summed, size)
    second = _arrangement(sb, shape_b, batch, summed, right, size)
    order = batch + left + right
    shape = tuple(size[c] for c in order)
    perm = tuple(order.index(c) for c in out)
    return _MatmulPlan(first, second, swap, shape, None if perm == tuple(sorted(perm)) else perm)


def _arrangement(sub, shape, batch, rows, cols, size):
    """How to view an operand as (batch..., prod(rows), prod(cols)), copying only if needed.

    If the operand is stored as (cols, rows) we reshape that way and swap the last two axes,
    which is free: BLAS reads a transposed matrix as well as a plain one.
    Returns (transpose or None, shape to reshape to, whether to swap the last two axes).
    """
    n_rows = _prod(size[c] for c in rows)
    n_cols = _prod(size[c] for c in cols)
    batch_shape = tuple(shape[sub.index(c)] for c in batch)
    direct = [sub.index(c) for c in batch + rows + cols]
    swapped = [sub.index(c) for c in batch + cols + rows]
    if direct == sorted(direct):
        return None, batch_shape + (n_rows, n_cols), False
    if swapped == sorted(swapped):
        return None, batch_shape + (n_cols, n_rows), True
    return tuple(direct), batch_shape + (n_rows, n_cols), False


def _as_matrix(array, arrangement):
    transpose, shape, swap = arrangement
    if transpose is not None:
        array = array.transpose(transpose)  # the one case that copies (in the reshape)
    matrix = array if array.shape == shape else array.reshape(shape)  # a view costs host time
    return matrix.swapaxes(-1, -2) if swap else matrix


def _run_matmul(xp, plan: _MatmulPlan, a, b):
    if plan.swap:
        a, b = b, a
    a, b = _as_matrix(a, plan.first), _as_matrix(b, plan.second)
    # BLAS through xp.matmul, or a kernel registered as "matmul" (cuBLAS on a GPU)
    product = dispatch.choose("matmul", xp.matmul, a, b)(a, b)
    # (batch..., L, R) -> (batch..., *left, *right)
    result = product if product.shape == plan.shape else product.reshape(plan.shape)
    return result if plan.perm is None else result.transpose(plan.perm)


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n
