"""``tricycle.utils.flop_counter``: torch.utils.flop_counter's ``FlopCounterMode`` and
``register_flop_formula``, what a user counts a model's FLOPs (and so its MFU) with.

    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    counter.get_total_flops()  # forward and backward, torch's formulas

What is counted, with torch's formulas (a multiply-add is 2 FLOPs; biases, norms,
activations and softmax are not counted, as torch's): matrix products (``matmul``/``@``,
``mm``, ``bmm``, ``addmm``, ``baddbmm``, ``F.linear``, ``nn.Linear``, ``einsum`` with a
contracted index), convolutions and transposed convolutions, and attention (``F.scaled_dot_
product_attention`` and tricycle's fused causal attention), forward and backward. The keys of
``get_flop_counts()`` are torch's op names as strings (``"aten.mm"``): a product without a
batch axis is ``aten.mm``, a linear layer's with its bias ``aten.addmm``, a batched one
``aten.bmm``; torch counts every ``torch.einsum`` as ``aten.bmm``. Attention is counted as
torch counts its fused GPU kernels (``aten._scaled_dot_product_flash_attention`` and its
backward, which recomputes the scores: five products), also on the CPU, where torch's CPU
kernel is not counted at all. A matrix-vector product (``mv``, ``dot``) is not counted, as
torch's.

How ops are seen, at no cost without a counter: every op makes its output through
``Node.__init__`` and every backward step is a back_fn called by ``backprop._walk``. A
counter is an observer of those two (``tricycle.op_observers``, which the profiler uses too,
so that a profile and a count nest either way): ``__enter__`` adds it, ``__exit__`` removes
it, and with no observer the op path holds no check of its own.

Modules: as torch's ``ModuleTracker``, global forward hooks keep the set of modules whose
forward runs, named by their path from the outermost one (``"GPT.blocks.0.attention"``,
tricycle's ``named_children`` names: a ``Sequential``'s layers are ``sequence.N``), plus
``"Global"``. An op's backward counts under the modules its forward ran in (torch's tracker
follows the gradients through module boundaries instead: the same sets for an ordinary
model).
"""

import importlib
import weakref
from collections import defaultdict

from tricycle import op_observers
from tricycle.graph import Node
from tricycle.utils.flop_formulas import ADDMM, MM, classify

__all__ = ["FlopCounterMode", "register_flop_formula"]

_LINEAR_SUBSCRIPTS = ("...i,ij->...j", "...i,ji->...j")  # nn.Linear's and F.linear's einsums
_BIAS_ADDS = ("badd", "add", "bias_gelu")  # what adds a linear layer's bias to its product

flop_registry: dict = {}  # op name -> formula, from register_flop_formula


# ---------------------------------------------------------------------- registering formulas
def _shape_of(value):
    """A tensor's (or array's) shape as a tuple; anything else as it is."""
    shape = getattr(value, "shape", None)
    return value if shape is None else tuple(shape)


def _shapes(formula):
    """``formula`` called with shapes in place of tensors, its output's as ``out_shape``
    (torch's ``shape_wrapper``)."""

    def counted(*args, out_val=None, **kwargs):
        shapes = [_shape_of(a) for a in args]
        kwargs = {k: _shape_of(v) for k, v in kwargs.items()}
        return formula(*shapes, out_shape=_shape_of(out_val), **kwargs)

    counted.__name__ = getattr(formula, "__name__", "formula")
    counted.__doc__ = formula.__doc__
    return counted


def _targets(targets, op: str) -> list[str]:
    names = [targets] if isinstance(targets, str) else targets
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise ValueError(
            f"{op}(targets): expected each target to be an op name (a str: the name of the "
            f"op's output tensor, e.g. 'my_op'; 'my_op_backward' counts its backward step), got "
            f"{targets!r} of type {type(targets).__name__}"
        )
    return list(names)


def register_flop_formula(targets, get_raw: bool = False):
    """A decorator registering ``formula`` as the FLOPs of the ops named ``targets`` (a name,
    or a list of names), as torch's: ``formula(*input_shapes, out_shape=...)`` returns an
    int (with ``get_raw=True`` it gets the tensors themselves and ``out_val=``). An op is
    named by its output tensor's ``name`` (``Tensor(out, args=..., back_fns=...,
    name="my_op")``); ``"my_op_backward"`` counts its backward step, called with the output's
    gradient first, then the op's inputs. A name registered twice is a RuntimeError."""
    names = _targets(targets, "register_flop_formula")

    def register(formula):
        counted = formula if get_raw else _shapes(formula)
        for name in names:
            if name in flop_registry:
                raise RuntimeError(f"register_flop_formula: duplicate registrations for {name}")
            flop_registry[name] = counted
        return counted

    return register


# ---------------------------------------------------------------------- the counter
_active = None  # the FlopCounterMode counting now, or None


class FlopCounterMode:
    """Counts the FLOPs of the ops run inside it (``with FlopCounterMode() as counter:``),
    per module and op: ``get_total_flops()``, ``get_flop_counts()`` ({module: {op: FLOPs}},
    with ``"Global"`` for everything), ``get_table(depth)``, which it prints on exit when
    ``display``. ``mods`` is not needed (it warns, as torch's); ``custom_mapping`` maps op
    names to formulas for this counter only (``register_flop_formula``'s form). Not
    reentrant, and one counts at a time."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None):
        import warnings

        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self.depth, self.display = depth, display
        if mods is not None:
            warnings.warn(
                "mods argument is not needed anymore, you can stop passing it", stacklevel=2
            )
        custom = dict(custom_mapping or {})
        for name in custom:
            _targets(name, "FlopCounterMode(custom_mapping)")
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else _shapes(v) for k, v in custom.items()},
        }
        self.parents = {"Global"}
        self._names: dict = {}  # id(module) -> its name, while counting
        self._made: dict = {}  # id(node) -> (weak reference, backward, module names)
        self._linear = None  # (node, parents, FLOPs) of a linear layer's product, until its bias
        self._undo = None

    # ------------------------------------------------------------------ results
    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """{module name: {op: FLOPs}}, with "Global" for everything counted."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """torch's table (tabulate's "simple" format): each module down to ``depth`` (the
        counter's by default) and its ops, with their share of the total."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = _suffix(total)
        subsumed = False

        def rows_of(module: str, indent: int) -> list:
            nonlocal subsumed
            counts = self.flop_counts[module]
            flops = sum(counts.values())
            subsumed |= flops >= total
            pad = " " * indent
            rows = [[pad + module, _with_suffix(flops, suffix), _percent(flops, total)]]
            for op, n in counts.items():
                rows.append([f"{pad} - {op}", _with_suffix(n, suffix), _percent(n, total)])
            return rows

        rows = []
        for module in sorted(self.flop_counts):
            if module != "Global" and module.count(".") + 1 <= depth:
                rows += rows_of(module, module.count("."))
        if "Global" in self.flop_counts and not subsumed:
            rows = rows_of("Global", 0) + [[" " + r[0], *r[1:]] for r in rows]
        return _tabulate(rows or [["Global", "0", "0%"]], ["Module", "FLOP", "% Total"])

    # ------------------------------------------------------------------ the context
    def __enter__(self) -> "FlopCounterMode":
        global _active
        if _active is not None:
            raise RuntimeError(
                "FlopCounterMode: a counter is already counting; tricycle counts with one at "
                "a time (torch's is not reentrant either): exit it before entering another"
            )
        self.flop_counts.clear()
        self.parents, self._names, self._made, self._linear = {"Global"}, {}, {}, None
        hooks = importlib.import_module("tricycle.module_hooks")
        # the second-order rules are found by running small ops once, on first use: before
        # counting, so that a create_graph=True backward inside counts its own ops alone
        importlib.import_module("tricycle.second_order_rules").rule_for(None)
        handles = (
            hooks.register_module_forward_pre_hook(self._enter_module),
            hooks.register_module_forward_hook(self._exit_module),
        )
        observer = _Counting(self)
        op_observers.add(observer)
        self._undo = (handles, observer)
        _active = self
        return self

    def __exit__(self, *exc) -> bool:
        global _active
        handles, observer = self._undo
        _active, self._undo = None, None
        op_observers.remove(observer)
        for handle in handles:
            handle.remove()
        self._made, self._names, self._linear = {}, {}, None
        if self.display:
            print(self.get_table(self.depth))
        return False

    # ------------------------------------------------------------------ modules
    def _name(self, module) -> str:
        """A module's name, as torch's tracker names it: its class's when first met outside
        a known module, else its parent's name, a dot and its attribute path."""
        names = self._names
        known = names.get(id(module))
        if known is None:
            known = names[id(module)] = [type(module).__name__, module, False]
        if not known[2]:  # its children named once, from its own name
            known[2] = True
            for child_name, child in module.named_children():
                if id(child) not in names:
                    names[id(child)] = [f"{known[0]}.{child_name}", child, False]
        return known[0]

    def _enter_module(self, module, args) -> None:
        self.parents.add(self._name(module))

    def _exit_module(self, module, args, output) -> None:
        self.parents.discard(self._name(module))

    # ------------------------------------------------------------------ counting
    def _add(self, parents, key, flops: int) -> None:
        for parent in parents:
            self.flop_counts[parent][key] += flops

    def _op(self, node: Node, args) -> None:
        """Count the op that just made ``node`` from ``args`` (its inputs, which ``node``
        keeps only when it needs a gradient)."""
        linear, self._linear = self._linear, None
        name = node.name
        args = args if type(args) is tuple else tuple(args)
        if linear is not None and name in _BIAS_ADDS and args and args[0] is linear[0]:
            _, parents, flops = linear  # nn.Linear's product with its bias: torch's addmm
            for parent in parents:
                counts = self.flop_counts[parent]
                counts[MM] -= flops
                if not counts[MM]:
                    del counts[MM]
                counts[ADDMM] += flops
        if name is None:
            return
        counted = classify(node, name, args, self.flop_registry)
        if counted is None:
            return
        key, flops, backward = counted
        parents = frozenset(self.parents)
        self._add(parents, key, flops)
        if key == MM and name[7:] in _LINEAR_SUBSCRIPTS:
            self._linear = (node, parents, flops)
        self._made[id(node)] = (weakref.ref(node, _forget(self._made, id(node))), backward, parents)

    def _backward(self, node: Node, back_fns: tuple):
        """``back_fns`` (``node``'s, maybe wrapped) counting its backward, or None when it has
        none."""
        made = self._made.get(id(node))
        if made is not None and made[0]() is node:
            _, backward, parents = made
        else:  # made before the counter: counted under "Global"
            counted = node.name and classify(node, node.name, node.args, self.flop_registry)
            if not counted:
                return None
            _, _, backward = counted
            parents = frozenset({"Global"})
        if backward is None:
            return None
        done = []

        def counting(i, back_fn):
            def counted_back_fn(g):
                if isinstance(backward, list):  # each input's gradient its own product
                    self._add(parents, *backward[i])
                elif not done:  # one step for every input's gradient
                    done.append(True)
                    if callable(backward):  # a user's formula, given the gradient first
                        flops = backward(g, *node.args, out_val=None)
                        self._add(parents, f"{node.name}_backward", flops)
                    else:
                        self._add(parents, *backward)
                return back_fn(g)

            return counted_back_fn

        return tuple(counting(i, f) for i, f in enumerate(back_fns))


def _forget(made: dict, key: int):
    """A weak reference's callback: drop ``made[key]`` when its node is gone."""
    return lambda _: made.pop(key, None)


class _Counting(op_observers.Observer):
    """A counter's view of the op path: it counts every op, and the back_fns of counted ops
    count their backward for the walk's length."""

    def __init__(self, counter: FlopCounterMode):
        self.counter = counter

    def op(self, node: Node, args, name, caller) -> None:
        self.counter._op(node, args)

    def back_fns(self, node: Node, back_fns: tuple):
        return self.counter._backward(node, back_fns)


# ---------------------------------------------------------------------- the table
_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    """The suffix the whole table uses: 1001M rather than 1.001B, as torch's."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}{suffix}"


def _percent(part: int, total: int) -> str:
    return "0%" if total == 0 else f"{part / total:.2%}"


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def _tabulate(rows: list, header: list) -> str:
    """tabulate's "simple" table of string cells, the first column left-aligned and the
    others right: a column of numbers only is written as numbers (``format(x, "g")``), and
    the cells' leading and trailing spaces are dropped, as torch's table shows."""
    columns = [[str(row[j]).strip() for row in rows] for j in range(len(header))]
    for j, column in enumerate(columns):
        numbers = [_number(cell) for cell in column]
        if all(n is not None for n in numbers):
            columns[j] = [format(n, "g") for n in numbers]
    widths = [max(len(h) + 2, *map(len, column)) for h, column in zip(header, columns)]

    def line(cells) -> str:
        first, *rest = cells
        return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:]))])

    body = [line(cells) for cells in zip(*columns)]
    return "\n".join([line(header), line(["-" * w for w in widths]), *body])
