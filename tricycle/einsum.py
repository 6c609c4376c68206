"""Einsum: the one linear primitive.

Dense layers, projections, sums and transposes are all einsums. The derivative with respect to
input i is itself an einsum: swap input i's indices with the output's and put the incoming
gradient where the output was, e.g. for ``ij,jk->ik``::

    d/da = Einsum("ik,jk->ij")(dout, b)        d/db = Einsum("ij,ik->jk")(a, dout)

Indices that input i had but that appear nowhere else were summed away, so their gradient
comes back by broadcasting. Two-operand contractions run as a single (batched) matmul, which
numpy and cupy send to BLAS / cuBLAS.

An empty operand (``"ij,->ij"``) is a scalar. An index repeated within one operand takes a
diagonal (``"ii->i"``; ``"ii->"`` is the trace): that operand's diagonal is taken first, as an
op of its own whose derivative puts the gradient back on the diagonal, and the einsum runs on
the diagonal with every index once.
"""

import functools
import string
from dataclasses import dataclass

from tricycle import binary
from tricycle.backend import check_same_device
from tricycle.contraction import _broadcast, _contract_plan, contract, run_plan  # noqa: F401
from tricycle.tensor import Tensor, as_tensor

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
        """Parse ``"ij,jk->ik"`` (or implicit ``"ij,jk"``); an empty operand is a scalar."""
        if not isinstance(subscript, str):
            raise TypeError(
                f"Einsum: the subscript must be a string such as 'ij,jk->ik', got {subscript!r}"
            )
        text = subscript.replace(" ", "")
        if text.count("->") > 1:
            raise ValueError(f"Einsum: {subscript!r} has more than one '->'")
        lhs, arrow, rhs = text.partition("->")
        inputs = tuple(_compact(part, subscript) for part in lhs.split(","))
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
                    f"Einsum {self}: operand {part.replace('.', '...')!r}"
                    f"{' (a scalar)' if not part else ''} has "
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
    if "." in part.replace("...", ""):
        raise ValueError(
            f"Einsum: {subscript!r} has a '.' in {part!r} that is not part of '...' (exactly "
            "three dots stand for any leading axes)"
        )
    return compact


def _sizes(sub: Subscript, shapes, original: str) -> dict[str, int]:
    """Size of each index; an index may be 1 in some operands (broadcasting) but not clash."""
    sizes: dict[str, int] = {}
    for part, shape in zip(sub.inputs, shapes):
        for c, n in zip(part, shape):
            if sizes.get(c, n) not in (1, n) and n != 1:
                name = f"index {c!r}" if c in original else "an axis under '...'"
                raise ValueError(
                    f"Einsum {original}: {name} has size {sizes[c]} in one operand and {n} "
                    f"in another (shapes {[tuple(s) for s in shapes]})"
                )
            sizes[c] = _broadcast(sizes.get(c, 1), n)
    return sizes


# ------------------------------------------------------------------ the op
class Einsum:
    """An einsum over Tensors, e.g. ``Einsum("ij,jk->ik")(a, b)``.

    Supports implicit output (``"ij,jk"``), ``...`` for leading axes, one or many operands
    and size-1 broadcasting. Stateless: one instance may be called any number of times. The
    subscript is parsed once; its expansion for each tuple of input shapes is cached, with
    how to contract it and each of its derivatives (``_contract_plan``), so that a call does
    no planning at all.
    """

    _MAX_PLANS = 256  # distinct input shapes remembered per instance

    def __init__(self, subscript: str):
        self.subscript = subscript
        self.parsed = Subscript.parse(subscript)
        self._name = f"einsum {subscript}"
        self._op = f"Einsum {subscript}"  # how errors name it
        self._plans: dict[tuple, tuple] = {}

    def __repr__(self) -> str:
        return f"Einsum({self.subscript!r})"

    def __call__(self, *tensors: Tensor) -> Tensor:
        tensors = tuple(as_tensor(t) for t in tensors)
        arrays = [t.array for t in tensors]
        xp = check_same_device(self._op, *arrays)
        shapes = tuple(a.shape for a in arrays)
        plan = self._plans.get(shapes)
        if plan is None:
            plan = self._plan(shapes)
        contraction, derivatives, diagonals = plan
        if diagonals is not None:  # operands with a repeated index: their diagonals first
            tensors = tuple(
                t if d is None else _diagonal(xp, t, *d) for t, d in zip(tensors, diagonals)
            )
            arrays = [t.array for t in tensors]
        out = run_plan(xp, contraction, arrays)
        return Tensor(
            out,
            args=tensors,
            back_fns=tuple(_derivative(xp, tensors, i, d) for i, d in enumerate(derivatives)),
            name=self._name,
        )

    def __getstate__(self):
        return {"subscript": self.subscript}

    def __setstate__(self, state):
        self.__init__(state["subscript"])

    def _plan(self, shapes):
        """Expand ``...`` and check sizes for these shapes; precompute each derivative.

        Returns (contraction, derivatives, diagonals): the ``_contract_plan`` of the einsum,
        one (plan, kept, target) per input for its derivative (``_derivative``), and
        diagonals, None when no operand repeats an index, else one entry per operand (None,
        or how to take its diagonal); the contraction and derivatives are then those of the
        einsum on the diagonals.
        """
        original_shapes = shapes
        sub = self.parsed.expand(list(shapes))
        sub, shapes, diagonals = _diagonals(sub, shapes, self.subscript)
        sizes = _sizes(sub, shapes, self.subscript)
        out_shape = tuple(sizes[c] for c in sub.output)
        derivatives = []
        for i, target in enumerate(sub.inputs):
            others = sub.inputs[:i] + sub.inputs[i + 1 :]
            visible = "".join(others) + sub.output
            kept = "".join(c for c in target if c in visible)  # the rest were summed away
            # d/d(input i): the other inputs and the output's gradient contract to its indices
            operand_shapes = tuple(tuple(s) for s in shapes[:i] + shapes[i + 1 :]) + (out_shape,)
            derivative = _contract_plan(others + (sub.output,), kept, operand_shapes)
            derivatives.append((derivative, kept, target))
        contraction = _contract_plan(sub.inputs, sub.output, tuple(tuple(s) for s in shapes))
        if len(self._plans) >= self._MAX_PLANS:
            self._plans.clear()
        plan = self._plans[tuple(original_shapes)] = (contraction, tuple(derivatives), diagonals)
        return plan


# ------------------------------------------------------------------ diagonals
def _diagonals(sub: Subscript, shapes, original: str):
    """Replace each operand that repeats an index by its diagonal.

    Returns (the subscript on the diagonals, their shapes, per-operand diagonal specs or None
    if no operand repeats an index). A spec is (operand subscript, diagonal subscript, the
    subscript that puts a gradient back on the diagonal, the sizes of its identity
    matrices): for ``iij`` (3, 3, 2), ``ij``, ``"ij,iA->iAj"`` and ``(3,)``, the second
    operand being an identity matrix per extra repeat (spare letters, uppercase first).
    """
    if all(len(set(part)) == len(part) for part in sub.inputs):
        return sub, shapes, None
    spare = iter(sorted(_LETTERS - set("".join(sub.inputs) + sub.output)))
    inputs, new_shapes, diagonals = [], [], []
    for part, shape in zip(sub.inputs, shapes):
        if len(set(part)) == len(part):
            inputs.append(part)
            new_shapes.append(tuple(shape))
            diagonals.append(None)
            continue
        sizes: dict[str, int] = {}
        for c, n in zip(part, shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(
                    f"Einsum {original}: index {c!r} is repeated in operand {part!r} (shape "
                    f"{tuple(shape)}) with sizes {sizes[c]} and {n}; a repeated index takes a "
                    "diagonal, which needs equal sizes"
                )
        diagonal = "".join(dict.fromkeys(part))  # each index once, in order of first use
        fresh, identities = [], []
        for k, c in enumerate(part):
            if c in part[:k]:  # a repeat: its own letter, tied to c by an identity matrix
                letter = next(spare)
                fresh.append(letter)
                identities.append(c + letter)
            else:
                fresh.append(c)
        embed = f"{','.join([diagonal, *identities])}->{''.join(fresh)}"
        inputs.append(diagonal)
        new_shapes.append(tuple(sizes[c] for c in diagonal))
        diagonals.append((part, diagonal, embed, tuple(sizes[c[0]] for c in identities)))
    return Subscript(tuple(inputs), sub.output), tuple(new_shapes), tuple(diagonals)


def _diagonal(xp, x: Tensor, part: str, diagonal: str, embed: str, eye_sizes) -> Tensor:
    """The diagonal of x over its repeated indices (``part`` -> ``diagonal``), as an op.

    Its derivative puts the gradient back on the diagonal, zeros elsewhere: an einsum of the
    gradient with one identity matrix per repeat (``embed``).
    """

    def back_fn(dout):
        eyes = [xp.eye(n, dtype=dout.dtype) for n in eye_sizes]
        return xp.einsum(embed, dout, *eyes)

    out = xp.einsum(f"{part}->{diagonal}", x.array)
    return Tensor(
        out,
        args=(x,),
        back_fns=(back_fn,),
        name=f"einsum diagonal {part}->{diagonal}",
    )


def _derivative(xp, tensors, i: int, spec):
    """d(out)/d(input i): swap input i with the output, then broadcast back lost axes.
    ``spec``: (the contraction's plan, the indices it keeps, input i's indices)."""
    plan, kept, target = spec

    def back_fn(dout):
        arrays = [t.array for j, t in enumerate(tensors) if j != i]
        arrays.append(dout)
        grad = run_plan(xp, plan, arrays)
        shape = tensors[i].array.shape
        if kept != target:  # put back the summed-away axes as size 1
            sizes = iter(grad.shape)
            grad = grad.reshape([next(sizes) if c in kept else 1 for c in target])
        if grad.shape != shape:
            # sum over axes where this input was broadcast (size 1 here, n elsewhere), then
            # broadcast along axes that were summed away or were size 1 in every other operand
            grad = binary.unbroadcast(
                grad, tuple(1 if n == 1 else g for g, n in zip(grad.shape, shape))
            )
            if grad.shape != shape:
                grad = xp.broadcast_to(grad, shape)
        return grad

    return back_fn


def einsum(subscript: str, *tensors) -> Tensor:
    """``Einsum(subscript)(*tensors)``, as ``torch.einsum``: one Einsum per subscript is kept,
    so its parsing and plans are reused across calls. The operands may also come as one list
    or tuple, torch's other form: ``einsum("ij,jk->ik", [a, b])``."""
    if not isinstance(subscript, str):
        raise TypeError(
            f"einsum: the subscript must be a string such as 'ij,jk->ik', got {subscript!r}"
        )
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        if all(hasattr(t, "shape") for t in tensors[0]):  # not one operand's nested numbers
            tensors = tuple(tensors[0])
    return _einsum_for(subscript)(*tensors)


@functools.lru_cache(maxsize=256)
def _einsum_for(subscript: str) -> Einsum:
    return Einsum(subscript)
