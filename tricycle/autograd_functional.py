"""torch.autograd.functional on tricycle's engine: ``jacobian``, ``vjp``, ``jvp``, ``hessian``,
``vhp`` and ``hvp`` of a function of tensors.

Each input is differentiated through ``tricycle.autograd.grad``: one backward per output
element for the Jacobian (torch's reverse mode without ``vectorize``). The second-order ones
differentiate a gradient taken with ``create_graph=True`` (``tricycle.second_order``): the
Hessian is the Jacobian of the gradient, ``vhp`` the gradient of ``<grad f, v>``; ``hvp``
gives ``H v``, which is ``v^T H`` for a twice differentiable function (H is symmetric).
With ``create_graph=True`` the results are Tensors in the graph, to differentiate again.
"""

import importlib

from tricycle.grad_modes import enable_grad
from tricycle.graph import Node, no_grad


def jacobian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """torch.autograd.functional.jacobian: the derivative of each output of ``func(*inputs)``
    with respect to each input, of shape ``output.shape + input.shape``; a Tensor for one
    input and one output, else tuples as torch nests them (outputs, then inputs). An output
    that does not depend on an input gives zeros (``strict=True`` refuses it)."""
    from tricycle import checks, ops

    checks.boolean("jacobian", "create_graph", create_graph)
    if strategy not in ("reverse-mode", "forward-mode"):
        checks.fail("jacobian", "strategy", "'reverse-mode' or 'forward-mode'", strategy)
    several_in, xs = _inputs("jacobian", inputs, create_graph)
    with enable_grad():
        out = func(*xs)
    several_out, ys = _outputs("jacobian", out)
    rows = []
    for i, y in enumerate(ys):
        flat = []  # one gradient per element of y: the rows of its Jacobian
        for k in range(y.array.size):
            seed = y.xp.zeros(y.array.size, y.dtype)
            seed[k] = 1
            seed = seed.reshape(y.shape)
            flat.append(_input_grads("jacobian", i, y, xs, seed, strict, create_graph))
        row = []
        for j, x in enumerate(xs):
            shape = y.shape + x.shape  # (*output, *input)
            if not flat:
                row.append(x.new(y.xp.zeros(shape, x.dtype), requires_grad=False))
            elif create_graph:
                row.append(ops.stack([g[j] for g in flat]).reshape(shape))
            else:
                block = y.xp.stack([g[j].array for g in flat])
                row.append(x.new(block.reshape(shape), requires_grad=False))
        rows.append(tuple(row))
    rows = [row if several_in else row[0] for row in rows]
    return tuple(rows) if several_out else rows[0]


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """torch.autograd.functional.vjp: ``(func(*inputs), v^T J)``, the outputs detached and the
    vector-Jacobian product shaped as the inputs (``v`` may be left out for one element)."""
    several_in, xs = _inputs("vjp", inputs, create_graph)
    with enable_grad():
        out = func(*xs)
    several_out, ys = _outputs("vjp", out)
    vs = (v,) if isinstance(v, Node) or v is None else tuple(v)
    if len(vs) != len(ys):
        raise RuntimeError(f"vjp: v has {len(vs)} tensor(s) for {len(ys)} output(s)")
    total = [x.new(x.xp.zeros_like(x.array), requires_grad=False) for x in xs]
    for i, (y, u) in enumerate(zip(ys, vs)):
        if u is None and y.array.size != 1:
            raise RuntimeError(
                f"vjp: v can be left out only for an output of one element; output {i} has "
                f"shape {y.shape}"
            )
        if u is None:
            seed = y.xp.ones(y.shape, y.dtype)
        elif not y.requires_grad:  # an output of no input sends none
            seed = None
        else:  # checked as a backward's gradient; a Tensor may itself need gradients
            seed = _autograd()._seed("vjp", i, y, u)
            seed = u if isinstance(u, Node) and u.array is seed else seed
        for j, g in enumerate(_input_grads("vjp", i, y, xs, seed, strict, create_graph)):
            total[j] = total[j] + g
    grads = tuple(total) if create_graph else tuple(g.detach() for g in total)
    detached = tuple(y.detach() for y in ys)
    return (detached if several_out else detached[0]), (grads if several_in else grads[0])


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """torch.autograd.functional.jvp: ``(func(*inputs), J v)``, through the Jacobian (``v``
    shaped as the inputs; left out for one input of one element)."""
    several_in, xs = _inputs("jvp", inputs, create_graph)
    vs = (v,) if isinstance(v, Node) or v is None else tuple(v)
    if vs == (None,) and (len(xs) != 1 or xs[0].array.size != 1):
        raise RuntimeError("jvp: v can be left out only for one input of one element")
    jac = jacobian(func, tuple(xs), create_graph, strict)
    with no_grad():
        several_out, ys = _outputs("jvp", func(*xs))
    jac = jac if several_out else (jac,)
    products = []
    for y, row in zip(ys, jac):
        total = y.new(y.xp.zeros(y.shape, y.dtype), requires_grad=False)
        for x, j, u in zip(xs, row, vs):
            if u is None:
                u = x.new(x.xp.ones(x.shape, x.dtype), requires_grad=False)
            elif not isinstance(u, Node):
                u = x.new(x.xp.asarray(u), requires_grad=False)
            total = total + (j.reshape(y.array.size, -1) @ u.reshape(-1)).reshape(y.shape)
        products.append(total if create_graph else total.detach())
    detached = tuple(y.detach() for y in ys)
    if several_out:
        return detached, tuple(products)
    return detached[0], products[0]


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):  # fmt: skip
    """torch.autograd.functional.hessian: the second derivatives of ``func(*inputs)`` (one
    Tensor of one element), of shape ``input.shape + input.shape``; for several inputs, a
    tuple of tuples (block ``[i][j]`` of shape ``inputs[i].shape + inputs[j].shape``)."""
    several_in, xs = _inputs("hessian", inputs, create_graph)

    def gradient(*ys):
        out = _scalar("hessian", func(*ys))
        found = _autograd().grad(out, ys, create_graph=True, allow_unused=True)
        grads = tuple(_zero(y) if g is None else g for y, g in zip(ys, found))
        return grads if several_in else grads[0]

    return jacobian(gradient, xs if several_in else xs[0], create_graph, strict, vectorize,
                    outer_jacobian_strategy)  # fmt: skip


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """torch.autograd.functional.vhp: ``(func(*inputs), v^T H)``, the output detached and
    the product shaped as the inputs: the gradient of ``<grad func, v>``."""
    return _second("vhp", func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """torch.autograd.functional.hvp: ``(func(*inputs), H v)``; H is symmetric for a twice
    differentiable ``func``, so this is ``vhp``'s product."""
    return _second("hvp", func, inputs, v, create_graph, strict)


def _second(op: str, func, inputs, v, create_graph: bool, strict: bool):
    several_in, xs = _inputs(op, inputs, create_graph)
    vs = (v,) if isinstance(v, Node) or v is None else tuple(v)
    if vs == (None,) and (len(xs) != 1 or xs[0].array.size != 1):
        raise RuntimeError(f"{op}: v can be left out only for one input of one element")
    if len(vs) != len(xs):
        raise RuntimeError(f"{op}: v has {len(vs)} tensor(s) for {len(xs)} input(s)")
    with enable_grad():
        out = _scalar(op, func(*xs))
        found = _autograd().grad(out, xs, create_graph=True, allow_unused=True)
        inner = None
        for x, g, u in zip(xs, found, vs):
            if u is not None and getattr(u, "shape", None) != x.shape:
                raise RuntimeError(f"{op}: v of shape {getattr(u, 'shape', None)} for an input "
                                   f"of shape {x.shape}")  # fmt: skip
            if g is None:
                if strict:
                    raise RuntimeError(f"{op}: the output is independent of an input, and "
                                       "strict=True")  # fmt: skip
                continue
            term = g.sum() if u is None else (g * u).sum()
            inner = term if inner is None else inner + term
    products = [_zero(x) for x in xs]
    if inner is not None and inner.requires_grad:
        second = _autograd().grad(inner, xs, create_graph=create_graph, allow_unused=True)
        if strict and any(g is None for g in second):
            raise RuntimeError(f"{op}: the gradient is independent of an input, and strict=True")
        products = [_zero(x) if g is None else g for x, g in zip(xs, second)]
    products = tuple(products) if create_graph else tuple(g.detach() for g in products)
    return out.detach(), (products if several_in else products[0])


def _autograd():
    """tricycle.autograd, by name when called: it imports this module (its ``functional``),
    so an import of it here would be a cycle."""
    return importlib.import_module("tricycle.autograd")


def _scalar(op: str, out):
    if not isinstance(out, Node):
        raise RuntimeError(f"{op}: the function given should return a single Tensor, got "
                           f"{type(out).__name__}")  # fmt: skip
    if out.array.size != 1:
        raise RuntimeError(f"{op}: the function given should return a Tensor containing a "
                           f"single element, got shape {out.shape}")  # fmt: skip
    return out


def _zero(x):
    return x.new(x.xp.zeros_like(x.array), requires_grad=False)


def _inputs(op: str, inputs, create_graph: bool = False) -> tuple:
    """Whether ``inputs`` is a sequence, and its Tensors to differentiate: detached copies
    that require grad, or (``create_graph``) views of them, so that the results stay
    functions of the caller's tensors."""
    several = not isinstance(inputs, Node)
    xs = _autograd()._tensors(op, "inputs", inputs)
    if create_graph:
        fresh = (x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True) for x in xs)
        return several, tuple(fresh)
    return several, tuple(x.detach().requires_grad_(True) for x in xs)


def _outputs(op: str, out) -> tuple:
    several = not isinstance(out, Node)
    return several, _autograd()._tensors(op, "the function's outputs", out)


def _input_grads(op: str, i: int, y, xs: tuple, seed, strict: bool, create_graph: bool) -> list:
    """The gradients (Tensors) of ``xs`` from output ``i``, ``y``, seeded with ``seed``: zeros
    for an input it does not depend on (refused when ``strict``)."""
    found = (None,) * len(xs)  # an output made of no input: no gradient reaches them
    if y.requires_grad and seed is not None:
        found = _autograd().grad(y, xs, seed, retain_graph=True, create_graph=create_graph,
                               allow_unused=True)  # fmt: skip
    if strict and any(g is None for g in found):
        raise RuntimeError(f"{op}: output {i} is independent of an input, and strict=True")
    return [_zero(x) if g is None else g for x, g in zip(xs, found)]
