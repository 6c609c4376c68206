"""Einsum: the one linear primitive.

Dense layers, projections, sums and transposes are all einsums. The derivative with respect to
input i is itself an einsum: swap input i's indices with the output's and put the incoming
gradient where the output was, e.g. for ``ij,jk->ik``::

    d/da = Einsum("ik,jk->ij")(dout, b)        d/db = Einsum("ij,ik->jk")(a, dout)

Indices that input i had but that appear nowhere else were summed away, so their gradient
comes back by broadcasting. Two-operand contractions run as a single (batched) matmul, which
numpy and cupy send to BLAS / cuBLAS.
"""

import string
from dataclasses import dataclass

from tricycle.backend import check_same_device
from tricycle.binary import unbroadcast
from tricycle.tensor import Tensor

_LETTERS = frozenset(string.ascii_letters)


@dataclass(frozen=True)
class Subscript:
    """A parsed einsum subscript: one index string per input and one for the output.

    ``...`` is kept as the single character ``.`` until shapes are known (see ``expand``).
    """

    inputs: tuple[str, ...]
    output: str

    @classmethod
    def parse(cls, subscript: str) -> "Subscript":
        text = subscript.replace(" ", "")
        if text.count("->") > 1:
            raise ValueError(f"Einsum: {subscript!r} has more than one '->'")
        lhs, arrow, rhs = text.partition("->")
        inputs = tuple(_compact(part, subscript) for part in lhs.split(","))
        if any(part == "" and lhs != "" for part in inputs) and len(inputs) > 1:
            raise ValueError(f"Einsum: {subscript!r} has an empty input between commas")
        if arrow:
            output = _compact(rhs, subscript)
        else:  # implicit mode: indices that appear once, in alphabetical order
            counts = {}
            for part in inputs:
                for c in part.replace(".", ""):
                    counts[c] = counts.get(c, 0) + 1
            dots = "." if any("." in part for part in inputs) else ""
            output = dots + "".join(sorted(c for c, k in counts.items() if k == 1))
        used = set("".join(inputs))
        for c in output:
            if c != "." and c not in used:
                raise ValueError(f"Einsum: output index {c!r} of {subscript!r} is in no input")
        if len(set(output)) != len(output):
            raise ValueError(f"Einsum: output of {subscript!r} repeats an index")
        if "." in output and not any("." in part for part in inputs):
            raise ValueError(f"Einsum: output of {subscript!r} has '...' but no input does")
        for part in inputs:
            if len(set(part)) != len(part):
                raise ValueError(
                    f"Einsum: input {part.replace('.', '...')!r} of {subscript!r} repeats an "
                    "index (diagonals and traces are not supported)"
                )
        return cls(inputs, output)

    def __str__(self) -> str:
        return f"{','.join(self.inputs)}->{self.output}".replace(".", "...")

    def expand(self, shapes: list[tuple[int, ...]]) -> "Subscript":
        """Replace ``...`` by concrete letters, right-aligned across inputs as numpy does."""
        if len(shapes) != len(self.inputs):
            raise ValueError(
                f"Einsum {self}: expected {len(self.inputs)} operand(s), got {len(shapes)}"
            )
        free = sorted(_LETTERS - set("".join(self.inputs)))
        n_dots = 0
        for part, shape in zip(self.inputs, shapes):
            named = len(part) - ("." in part)
            if len(shape) < named or ("." not in part and len(shape) != named):
                raise ValueError(
                    f"Einsum {self}: operand {part.replace('.', '...')!r} has "
                    f"{len(shape)} dimension(s) (shape {shape}), expected "
                    f"{'at least ' if '.' in part else ''}{named}"
                )
            if "." in part:
                n_dots = max(n_dots, len(shape) - named)
        if n_dots > len(free):
            raise ValueError(f"Einsum {self}: too many dimensions under '...'")
        dots = "".join(free[:n_dots])
        inputs = tuple(
            part.replace(".", dots[n_dots - (len(shape) - len(part) + 1) :])
            for part, shape in zip(self.inputs, shapes)
        )
        return Subscript(inputs, self.output.replace(".", dots))


def _compact(part: str, subscript: str) -> str:
    """Turn '...' into '.', and check that only letters remain."""
    if part.count("...") > 1:
        raise ValueError(f"Einsum: {subscript!r} has more than one '...' in {part!r}")
    compact = part.replace("...", ".")
    for c in compact:
        if c != "." and c not in _LETTERS:
            raise ValueError(f"Einsum: {subscript!r} contains {c!r}; indices must be letters")
    return compact


def _sizes(sub: Subscript, shapes) -> dict[str, int]:
    """Size of each index; an index may be 1 in some operands (broadcasting) but not clash."""
    sizes: dict[str, int] = {}
    for part, shape in zip(sub.inputs, shapes):
        for c, n in zip(part, shape):
            if sizes.get(c, n) not in (1, n) and n != 1:
                raise ValueError(
                    f"Einsum {sub}: index {c!r} has size {sizes[c]} in one operand and {n} "
                    f"in another (shapes {[tuple(s) for s in shapes]})"
                )
            sizes[c] = max(sizes.get(c, 1), n)
    return sizes


# ------------------------------------------------------------------ contraction
def contract(xp, inputs: tuple[str, ...], output: str, arrays: list):
    """Evaluate the (expanded) einsum ``inputs -> output`` on arrays.

    Indices in only one operand and not in the output are summed first; a two-operand
    contraction then runs as one batched matmul. Other cases fall back to ``xp.einsum``.
    """
    arrays = list(arrays)
    inputs = list(inputs)
    for k, (part, array) in enumerate(zip(inputs, arrays)):
        others = "".join(inputs[:k] + inputs[k + 1 :]) + output
        lonely = [i for i, c in enumerate(part) if c not in others]
        if lonely and len(arrays) > 1:
            arrays[k] = array.sum(axis=tuple(lonely))
            inputs[k] = "".join(c for c in part if c in others)
    if len(arrays) == 2:
        return _matmul_contract(xp, inputs[0], inputs[1], output, arrays[0], arrays[1])
    return xp.einsum(f"{','.join(inputs)}->{output}", *arrays, optimize=len(arrays) > 2)


def _matmul_contract(xp, sa: str, sb: str, out: str, a, b):
    """a (sa) x b (sb) -> out as one matmul of shape (batch..., L, K) @ (batch..., K, R)."""
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in sa if c in out and c not in sb]
    right = [c for c in sb if c in out and c not in sa]
    summed = [c for c in sa if c in sb and c not in out]
    size = {c: n for c, n in zip(sa, a.shape)}
    size.update({c: max(n, size.get(c, 1)) for c, n in zip(sb, b.shape)})
    for c in summed:  # a summed index broadcast from size 1 cannot go through matmul
        if a.shape[sa.index(c)] != b.shape[sb.index(c)]:
            return xp.einsum(f"{sa},{sb}->{out}", a, b)

    a2 = _as_matrix(xp, a, sa, batch, left, summed, size, rows_first=True)
    b2 = _as_matrix(xp, b, sb, batch, summed, right, size, rows_first=False)
    product = xp.matmul(a2, b2)  # (batch..., L, R)
    shape = product.shape[:-2] + tuple(size[c] for c in left + right)
    order = batch + left + right
    result = product.reshape(shape)
    perm = [order.index(c) for c in out]
    return result if perm == sorted(perm) else result.transpose(perm)


def _as_matrix(xp, array, sub, batch, rows, cols, size, rows_first):
    """Arrange ``array`` as (batch..., prod(rows), prod(cols)), copying only when unavoidable.

    If the operand is stored as (cols, rows) we reshape that way and swap the last two axes,
    which is free: BLAS reads a transposed matrix as well as a plain one.
    """
    n_rows = _prod(size[c] for c in rows)
    n_cols = _prod(size[c] for c in cols)
    batch_shape = tuple(array.shape[sub.index(c)] for c in batch)
    direct = [sub.index(c) for c in batch + rows + cols]
    swapped = [sub.index(c) for c in batch + cols + rows]
    if swapped == sorted(swapped) and direct != sorted(direct):
        m = array.reshape(batch_shape + (n_cols, n_rows))
        return xp.swapaxes(m, -1, -2)
    m = array if direct == sorted(direct) else array.transpose(direct)
    return m.reshape(batch_shape + (n_rows, n_cols))


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


# ------------------------------------------------------------------ the op
class Einsum:
    """An einsum over Tensors, e.g. ``Einsum("ij,jk->ik")(a, b)``.

    Supports implicit output (``"ij,jk"``), ``...`` for leading axes, one or many operands
    and size-1 broadcasting. Stateless: one instance may be called any number of times.
    """

    def __init__(self, subscript: str):
        self.subscript = subscript
        self.parsed = Subscript.parse(subscript)

    def __repr__(self) -> str:
        return f"Einsum({self.subscript!r})"

    def __call__(self, *tensors: Tensor) -> Tensor:
        tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)
        xp = check_same_device(f"Einsum {self.subscript}", *(t.array for t in tensors))
        shapes = [t.shape for t in tensors]
        sub = self.parsed.expand(shapes)
        _sizes(sub, shapes)
        out = contract(xp, sub.inputs, sub.output, [t.array for t in tensors])
        back_fns = [self._derivative(xp, sub, tensors, i) for i in range(len(tensors))]
        return Tensor(
            out,
            args=tensors,
            back_fns=back_fns,
            name=f"einsum {self.subscript}",
            is_batched=any(t.is_batched for t in tensors),
        )

    @staticmethod
    def _derivative(xp, sub: Subscript, tensors, i: int):
        """d(out)/d(input i): swap input i with the output, then broadcast back lost axes."""
        target = sub.inputs[i]
        others = sub.inputs[:i] + sub.inputs[i + 1 :]
        visible = "".join(others) + sub.output
        kept = "".join(c for c in target if c in visible)  # the rest were summed away

        def back_fn(dout):
            arrays = [t.array for j, t in enumerate(tensors) if j != i]
            grad = contract(xp, (*others, sub.output), kept, [*arrays, dout])
            shape = tensors[i].shape
            if kept != target:  # put back the summed-away axes as size 1, then broadcast
                sizes = iter(grad.shape)
                grad = grad.reshape([next(sizes) if c in kept else 1 for c in target])
                grad = unbroadcast(
                    grad, tuple(n if c in kept else 1 for c, n in zip(target, shape))
                )
                return xp.broadcast_to(grad, shape)
            return unbroadcast(grad, shape)

        return back_fn
