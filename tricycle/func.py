"""torch.func's transforms for tricycle: ``functional_call``, ``grad``, ``grad_and_value``,
``vjp``, ``jacrev``, ``jacfwd``, ``vmap`` and ``stack_module_state``, with torch's arguments
(``jvp``, ``linearize``, ``functionalize``, ``stack_module_state`` and the rest:
``tricycle.func_more``).
PyTorch's per-sample gradients and model ensembling read as written::

    from tricycle.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}
    def loss_of(params, x, y):                       # one sample
        return F.cross_entropy(functional_call(model, params, (x[None],)), y[None])
    per_sample = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, xs, ys)  # {name: (B, ...)}

How each is made, on the one engine (reverse mode, ``tricycle.autograd``):

- ``functional_call`` runs a module with some of its parameters and buffers replaced for the
  length of the call (by name, tied ones together), then puts the module's own back.
- ``grad`` differentiates ``func`` from fresh leaves sharing the inputs' arrays
  (``autograd.grad``); an input the output does not depend on gets zeros, as torch's.
- ``jacrev`` and ``jacfwd`` are ``autograd.functional.jacobian`` over the arguments' leaves:
  one backward per output element, through the same graph; jacfwd's numbers come from
  reverse mode too.
- ``vmap`` calls ``func`` once per index of the mapped dimension and stacks the results
  (differentiably): torch's semantics, a loop's speed. ``randomness="error"`` refuses a
  ``func`` that draws from tricycle's generator, "same" gives every call the same draws.

A transform inside ``grad``, ``vjp``, ``jacrev`` or ``jacfwd`` (``hessian``, ``jacfwd(
jacrev(f))``, ``grad(grad(f))``), or given arguments that require grad, differentiates with
``create_graph=True`` (``tricycle.second_order``): what it gives is recorded in the graph,
for the outer one. ``vmap`` nests with anything.
"""

import threading
from collections.abc import Callable

from tricycle import autograd, checks, random
from tricycle.backend import is_float
from tricycle.factories import zeros_like
from tricycle.func_more import (
    functionalize,
    jvp,
    linearize,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from tricycle.grad_modes import enable_grad
from tricycle.ops import stack
from tricycle.tensor import Tensor

_active = threading.local()  # .depth: the differentiating transforms running on this thread


# ---------------------------------------------------------------------- pytrees
def _flatten(tree) -> tuple[list, Callable]:
    """The leaves of ``tree`` (nested dicts, lists and tuples) in order, and a function that
    builds the same structure from new leaves."""
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
    elif isinstance(tree, (list, tuple)):
        keys, parts = None, [_flatten(item) for item in tree]
    else:
        return [tree], lambda leaves: leaves[0]
    sizes = [len(leaves) for leaves, _ in parts]

    def build(leaves):
        items, start = [], 0
        for size, (_, rebuild) in zip(sizes, parts):
            items.append(rebuild(leaves[start : start + size]))
            start += size
        if keys is not None:
            return dict(zip(keys, items))
        return type(tree)(items) if isinstance(tree, list) else tuple(items)

    return [leaf for leaves, _ in parts for leaf in leaves], build


# ---------------------------------------------------------------------- functional_call
def functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):  # fmt: skip
    """``module(*args, **kwargs)`` with the tensors named in ``parameter_and_buffer_dicts``
    (a dict {name: Tensor} or a tuple of them; names as ``named_parameters`` gives them) in
    place of its own for this call alone. With ``tie_weights`` a tensor the module holds
    under two names is replaced under both; with ``strict`` every parameter and buffer must
    be given. Gradients flow to the given tensors."""
    owner = "functional_call"
    dicts = parameter_and_buffer_dicts
    dicts = (dicts,) if isinstance(dicts, dict) else tuple(dicts)
    given: dict = {}
    for d in dicts:
        if not isinstance(d, dict):
            checks.fail(owner, "parameter_and_buffer_dicts", "a dict or a tuple of dicts", d,
                        TypeError)  # fmt: skip
        twice = sorted(set(d) & set(given))
        if twice:
            raise ValueError(f"{owner}: {twice} appear in more than one of the dicts")
        given.update(d)
    own = dict(module.named_tensors())
    unknown = sorted(n for n in given if n not in own)
    if unknown:
        raise ValueError(
            f"{owner}: {type(module).__name__} has no parameter or buffer named {unknown}; "
            f"its names are {sorted(own)}"
        )
    if strict and sorted(given) != sorted(own):
        raise RuntimeError(
            f"{owner}: strict=True, but the dicts miss {sorted(set(own) - set(given))}"
        )
    for name, t in given.items():
        if not isinstance(t, Tensor):
            checks.fail(owner, f"the value of {name!r}", "a Tensor", t, TypeError)
        if t.shape != own[name].shape:
            raise ValueError(f"{owner}: {name!r} has shape {own[name].shape}, got {t.shape}")
    new = {id(own[name]): t for name, t in given.items()}
    swapped = _swap(module, new, {id(own[n]): n for n in given} if not tie_weights else None)
    try:
        if kwargs is None:
            kwargs = {}
        return module(*args, **kwargs) if isinstance(args, tuple) else module(args, **kwargs)
    finally:
        for holder, key, old in reversed(swapped):
            holder[key] = old


def _swap(module, new: dict, only: dict | None) -> list:
    """Put ``new[id(old)]`` wherever the module's layers hold ``old`` (or only under the name
    ``only[id(old)]``); returns (holder, key, old) to undo it."""
    swapped = []
    for path, layer in module.named_layers():
        for attr, value in list(vars(layer).items()):
            if isinstance(value, Tensor):
                slots = [(vars(layer), attr, attr)]
            elif isinstance(value, (list, dict)):
                items = value.items() if isinstance(value, dict) else enumerate(value)
                slots = [(value, key, f"{attr}.{key}") for key, item in items
                         if isinstance(item, Tensor)]  # fmt: skip
            else:
                continue
            for holder, key, name in slots:
                old = holder[key]
                full = f"{path}.{name}" if path else name
                if id(old) in new and (only is None or only[id(old)] == full):
                    holder[key] = new[id(old)]
                    swapped.append((holder, key, old))
    return swapped


# ---------------------------------------------------------------------- derivatives
class _Differentiating:
    """Counts the differentiating transforms running on this thread: one inside another
    (``hessian``, ``jacfwd(jacrev(f))``) differentiates with ``create_graph=True``, so the
    outer one can differentiate what it gives."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> bool:
        depth = getattr(_active, "depth", 0)
        _active.depth = depth + 1
        return depth > 0

    def __exit__(self, *exc):
        _active.depth -= 1


def _leaves_of(owner: str, args: tuple, argnums, nested: bool = False) -> tuple:
    """(args with fresh leaves at ``argnums``, those leaves flat, a builder of the
    argnums' structure from new leaves, whether argnums was a single int, a builder of the
    args from new leaves, whether to record the graph: ``nested`` in another transform, or
    an argument requires grad). Recording, an argument that requires grad gets a view of
    itself (its gradient then stays a function of it), not a detached copy."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums or any(not isinstance(i, int) or not -len(args) <= i < len(args) for i in nums):
        checks.fail(owner, "argnums", f"ints (or one) within the {len(args)} arguments", argnums)
    nums = tuple(i % len(args) for i in nums)
    picked, build = _flatten(tuple(args[i] for i in nums))
    for leaf in picked:
        if not isinstance(leaf, Tensor) or not is_float(leaf.dtype):
            checks.fail(owner, "the differentiated arguments", "floating Tensors", leaf,
                        TypeError)  # fmt: skip

    def args_of(leaves) -> tuple:
        new = list(args)
        for i, value in zip(nums, build(list(leaves))):
            new[i] = value
        return tuple(new)

    record = nested or any(leaf.requires_grad for leaf in picked)
    fresh = [leaf.view_as(leaf) if record and leaf.requires_grad else
             leaf.detach().requires_grad_(True) for leaf in picked]  # fmt: skip
    return args_of(fresh), fresh, build, single, args_of, record


def _grads(outputs, leaves: list, seeds=None, retain: bool = False, record=False) -> list:
    """The gradients of ``outputs`` at ``leaves`` (zeros for an unused one), detached unless
    ``record`` (then recorded in the graph: ``create_graph=True``)."""
    found = autograd.grad(outputs, leaves, grad_outputs=seeds, retain_graph=retain or record,
                          create_graph=record, allow_unused=True)  # fmt: skip
    return [zeros_like(x).detach() if g is None else g for g, x in zip(found, leaves)]


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: a function returning (the gradient of ``func``'s scalar
    output with respect to the arguments ``argnums``, in their structure; the output),
    with ``has_aux`` (gradient, (output, aux))."""
    checks.boolean("grad_and_value", "has_aux", has_aux)

    def wrapper(*args, **kwargs):
        with _Differentiating("grad") as nested:
            args, leaves, build, single, _, record = _leaves_of("grad", args, argnums, nested)
            with enable_grad():
                out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    checks.fail("grad", "func's output", "a tuple (output, aux) with has_aux", out)
                out, aux = out
            if not isinstance(out, Tensor) or out.size != 1:
                raise RuntimeError(
                    "grad: expected func to return a Tensor of one element, got "
                    f"{getattr(out, 'shape', type(out).__name__)}"
                )
            grads = build(_grads(out, leaves, record=record))
        grads = grads[0] if single else grads
        value = out if record else out.detach()
        return (grads, (value, aux)) if has_aux else (grads, value)

    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """torch.func.grad: a function returning the gradient of ``func``'s scalar output with
    respect to its arguments ``argnums`` (an int, or a tuple: a tuple of gradients), each in
    its argument's structure (a dict of tensors gives a dict); with ``has_aux``, (gradient,
    aux)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """torch.func.vjp: (``func(*primals)``, vjp_fn), where ``vjp_fn(cotangents)`` (one per
    output, in its structure) returns the vector-Jacobian products, one per primal;
    with ``has_aux``, (output, vjp_fn, aux). vjp_fn can be called more than once."""
    with _Differentiating("vjp") as nested:
        every = tuple(range(len(primals)))
        args, leaves, build, _, _, record = _leaves_of("vjp", primals, every, nested)
        with enable_grad():
            out = func(*args)
    aux = None
    if has_aux:
        out, aux = out
    outputs, _ = _flatten(out)

    def vjp_fn(cotangents):
        seeds, _ = _flatten(cotangents)
        if len(seeds) != len(outputs):
            checks.fail("vjp_fn", "cotangents", f"{len(outputs)} tensors, as func's outputs",
                        cotangents)  # fmt: skip
        return build(_grads(outputs, leaves, seeds, retain=True, record=record))

    value = out if record else _detached(out)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _detached(tree):
    leaves, build = _flatten(tree)
    return build([x.detach() if isinstance(x, Tensor) else x for x in leaves])


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None) -> Callable:
    """torch.func.jacrev: a function returning the Jacobian of ``func``'s output with
    respect to the arguments ``argnums``, of shape output.shape + argument.shape, one
    backward per output element; an output that is a tuple, list or dict of Tensors gives
    the same structure of Jacobians (so ``hessian`` takes several ``argnums``); with
    ``has_aux``, (Jacobian, aux)."""
    return _jacobian("jacrev", func, argnums, has_aux)


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness="error") -> Callable:
    """torch.func.jacfwd: the Jacobian as ``jacrev`` gives it (computed in reverse mode:
    tricycle has no forward mode; the numbers are the same Jacobian)."""
    return _jacobian("jacfwd", func, argnums, has_aux)


def _jacobian(owner: str, func: Callable, argnums, has_aux: bool) -> Callable:
    """jacrev's and jacfwd's wrapper: ``autograd.functional.jacobian`` over the leaves of
    the arguments ``argnums``, given back in their structure."""

    def wrapper(*args, **kwargs):
        with _Differentiating(owner) as nested:
            _, leaves, build, single, args_of, record = _leaves_of(owner, args, argnums, nested)
            aux, output_of = [], []

            def of_leaves(*xs):
                out = func(*args_of(xs), **kwargs)
                if has_aux:
                    out, aux[:] = out[0], [out[1]]
                outs, rebuild = _flatten(out)
                output_of[:] = [rebuild, isinstance(out, Tensor)]
                if not outs or not all(isinstance(y, Tensor) for y in outs):
                    checks.fail(owner, "func's output", "a Tensor, or a tuple, list or dict "
                                "of Tensors", out, TypeError)  # fmt: skip
                return out if isinstance(out, Tensor) else tuple(outs)

            jacobian = autograd.jacobian(of_leaves, tuple(leaves), record)
        rebuild, one_output = output_of  # one output: a bare Tensor, not a tuple of them
        rows = [build(list(row)) for row in ((jacobian,) if one_output else jacobian)]
        result = rebuild([row[0] if single else row for row in rows])
        return (result, aux[0]) if has_aux else result

    return wrapper


def hessian(func: Callable, argnums=0) -> Callable:
    """torch.func.hessian: ``jacfwd(jacrev(func, argnums), argnums)``, the Jacobian of the
    gradient (the inner one recorded with ``create_graph=True``)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------- vmap
def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size=None) -> Callable:  # fmt: skip
    """torch.vmap: a function that maps ``func`` over dimension ``in_dims`` of its arguments
    (an int or None for all, or one per argument: None leaves one whole) and stacks the
    results along ``out_dims``. ``randomness``: "error" refuses a ``func`` that draws random
    numbers, "different" lets each call draw its own, "same" gives each call the same."""
    checks.one_of(("error", "different", "same"))("vmap", "randomness", randomness)
    if chunk_size is not None:
        checks.positive_int("vmap", "chunk_size", chunk_size)

    def wrapper(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(dims)} entries for {len(args)} arguments")
        mapped, sizes = [], set()
        for arg, dim in zip(args, dims):
            leaves, build = _flatten(arg)
            dim_leaves = _flatten(dim)[0] if isinstance(dim, (dict, list)) else [dim] * len(leaves)
            for leaf, d in zip(leaves, dim_leaves):
                if d is None:
                    continue
                if not isinstance(leaf, Tensor):
                    checks.fail("vmap", "in_dims", "None for an argument that is not a Tensor",
                                d)  # fmt: skip
                sizes.add(leaf.shape[checks.axis("vmap", "in_dims", d, leaf.ndim, leaf.shape)])
            mapped.append((leaves, build, dim_leaves))
        if len(sizes) != 1:
            raise ValueError(
                "vmap: the mapped dimensions must have one size, got "
                f"{sorted(sizes) if sizes else 'no mapped Tensor'}"
            )
        (n,) = sizes
        state = random.generator().bit_generator.state
        results = []
        for i in range(n):
            if randomness == "same":
                random.generator().bit_generator.state = state
            call = [build([leaf if d is None else _select(leaf, d, i)
                           for leaf, d in zip(leaves, dim_leaves)])
                    for leaves, build, dim_leaves in mapped]  # fmt: skip
            results.append(func(*call, **kwargs))
            if randomness == "error" and random.generator().bit_generator.state != state:
                raise RuntimeError(
                    "vmap: func drew random numbers under randomness='error'; pass "
                    "randomness='different' (each call its own) or 'same'"
                )
        flat = [_flatten(r)[0] for r in results]
        _, build = _flatten(results[0])
        outs = _flatten(out_dims)[0] if isinstance(out_dims, tuple) else [out_dims] * len(flat[0])
        stacked = []
        for k, d in enumerate(outs):
            column = [leaves[k] for leaves in flat]
            if not all(isinstance(x, Tensor) for x in column):
                checks.fail("vmap", "func's outputs", "Tensors", column[0], TypeError)
            stacked.append(stack(column, dim=d))
        return build(stacked)

    return wrapper


def _select(x: Tensor, dim: int, i: int) -> Tensor:
    dim = dim % x.ndim
    return x[(slice(None),) * dim + (i,)]


__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "replace_all_batch_norm_modules_", "stack_module_state",
           "vjp", "vmap"]  # fmt: skip
