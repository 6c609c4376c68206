"""torch.autograd on tricycle's engine: ``grad``, ``backward``, ``Function`` and the grad modes.

``grad(outputs, inputs)`` returns the gradients of the outputs with respect to the inputs and
sets no tensor's ``.grad``: the engine's walk (``tricycle.backprop``) is asked for the
gradients of those tensors, which it returns instead of accumulating, walking only the edges
that lead to them. ``backward(tensors)`` is ``Tensor.backward`` for several tensors at once.

Both start from one root, as the walk does: for several outputs, a node whose inputs are the
outputs and whose back_fns give each output its seed (``grad_outputs``, ones by default). One
walk then sums what every output sends down the paths they share, as torch's one pass does
(several ``Tensor.backward`` calls would free the shared graph at the first).

``create_graph=True`` takes a separate walk (``tricycle.second_order``) whose gradients are
Tensors recorded in the graph, for double backward; the ordinary one stays as it is.
``Function`` (``tricycle.autograd_function``) is
the custom op; the grad modes are the engine's (``tricycle.graph``, ``tricycle.grad_modes``);
``detect_anomaly`` and ``set_detect_anomaly`` are ``tricycle.torch_flags``' (a NaN gradient
named with its op).
``Variable`` is torch's name from before tensors carried gradients, as torch 2 keeps it.

``graph`` is torch.autograd.graph's hooks (``tricycle.autograd_graph``); ``functional`` is
torch.autograd.functional (``tricycle.autograd_functional``: jacobian, vjp, jvp, hessian,
vhp, hvp).
"""

import importlib
import sys
import types

from tricycle import autograd_functional, backend, backprop, checks, second_order
from tricycle import autograd_graph as graph
from tricycle.autograd_function import Function, FunctionCtx
from tricycle.autograd_functional import jacobian, jvp, vjp  # noqa: F401 (tricycle.func's)
from tricycle.backend import is_float
from tricycle.grad_modes import enable_grad, inference_mode, is_grad_enabled, set_grad_enabled
from tricycle.gradcheck import gradgradcheck
from tricycle.graph import Node, no_grad
from tricycle.tensor import Tensor
from tricycle.torch_flags import detect_anomaly, set_detect_anomaly

__all__ = ["Function", "FunctionCtx", "Variable", "backward", "detect_anomaly", "enable_grad",
           "functional", "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode",
           "is_grad_enabled", "no_grad", "set_detect_anomaly", "set_grad_enabled"]  # fmt: skip


class _AnyTensor(type):
    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, Tensor)


class Variable(metaclass=_AnyTensor):
    """``Variable(x, requires_grad=False)``: as torch 2's, a new leaf Tensor sharing ``x``'s
    array (``x.detach()``) that requires gradients or not as told; every Tensor is an
    instance of ``Variable``. Old scripts (``from torch.autograd import Variable``) run."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable: data must be a Tensor, got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple:
    """torch.autograd.grad: the gradients of ``outputs`` with respect to ``inputs``, as a
    tuple of Tensors (one per input), leaving every tensor's ``.grad`` as it was.

    Args:
        outputs: a Tensor or a sequence of them (their gradients are summed).
        inputs: a Tensor or a sequence of Tensors that require grad (leaves or not).
        grad_outputs: the gradient of each output (a Tensor, an array or None for ones), or
            one for a single output. Non-scalar outputs are seeded with ones, as
            ``Tensor.backward`` does.
        retain_graph: keep the graph for another backward (None: as ``create_graph``).
        create_graph: record the backward itself: the gradients are Tensors in the graph,
            to differentiate again (``tricycle.second_order``).
        allow_unused: an input the outputs do not depend on gives None (True) or an error
            (False, the default unless ``materialize_grads``).
        materialize_grads: an unused input gives zeros instead of None.

    Tensor hooks (``register_hook``) run as in a backward; post-accumulate hooks do not, nor
    does ``retain_grad()`` keep anything.
    """
    create_graph = checks.boolean("grad", "create_graph", create_graph)
    checks.boolean("grad", "retain_graph", retain_graph, optional=True)
    checks.boolean("grad", "allow_unused", allow_unused, optional=True)
    checks.boolean("grad", "materialize_grads", materialize_grads)
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "grad: allow_unused=False with materialize_grads=True: materialized gradients "
            "of unused inputs are zeros; pass allow_unused=True or leave it out"
        )
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    outputs = _tensors("grad", "outputs", outputs)
    inputs = _tensors("grad", "inputs", inputs)
    for i, x in enumerate(inputs):
        if not x.requires_grad:
            raise RuntimeError(
                f"grad: inputs[{i}] (shape {x.shape}, dtype {x.dtype}) does not require grad; "
                "one of the differentiated Tensors does not require grad"
            )
    root, seed = _root("grad", outputs, grad_outputs, create_graph)
    wanted = {id(x) for x in inputs}
    if create_graph:  # the walk that records the graph: the gradients are Tensors in it
        retain = retain_graph is not False
        captured = second_order.backward(root, seed, retain, wanted)
    else:
        captured = backprop.backward(root, seed, bool(retain_graph), wanted)
    grads = []
    for i, x in enumerate(inputs):
        g = captured.get(id(x))
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad: the differentiated Tensor at index {i} (shape {x.shape}) appears "
                    "to not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior."
                )
            g = x.xp.zeros_like(x.array) if materialize_grads else None
        if g is not None and not isinstance(g, Node):
            g = x.new(g, requires_grad=False)
        grads.append(g)
    return tuple(grads)


def backward(
    tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False
) -> None:
    """torch.autograd.backward: ``Tensor.backward`` of each of ``tensors`` (a Tensor or a
    sequence), seeded with ``grad_tensors`` (one per tensor, None for ones), in one walk:
    the leaves' ``.grad`` accumulate the sum. ``retain_graph`` as ``Tensor.backward``'s
    (None: ``create_graph``); ``create_graph=True`` records the backward (double backward)."""
    create_graph = checks.boolean("backward", "create_graph", create_graph)
    checks.boolean("backward", "retain_graph", retain_graph, optional=True)
    tensors = _tensors("backward", "tensors", tensors)
    root, seed = _root("backward", tensors, grad_tensors, create_graph)
    if create_graph:
        second_order.backward(root, seed, retain_graph is not False)
    else:
        backprop.backward(root, seed, bool(retain_graph))


def _tensors(op: str, name: str, value) -> tuple:
    """``value`` (a Tensor or a non-empty sequence of Tensors) as a tuple of Tensors."""
    values = (value,) if isinstance(value, Node) else value
    if not isinstance(values, tuple | list) or not values:
        checks.fail(op, name, "a Tensor or a non-empty sequence of Tensors", value, TypeError)
    for i, tensor in enumerate(values):
        if not isinstance(tensor, Node):
            expected = "a Tensor"
            checks.fail(op, f"{name}[{i}]", expected, type(tensor).__name__, TypeError)
    return tuple(values)


def _root(op: str, outputs: tuple, grad_outputs, create_graph: bool = False) -> tuple:
    """The node to walk from and its gradient: the one output and its seed, or a node whose
    gradient 1 sends each output its seed. With ``create_graph`` the seeds are Tensors (a
    given one as it is: it may need gradients itself)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Node) or hasattr(grad_outputs, "shape"):
        grad_outputs = (grad_outputs,)
    elif not isinstance(grad_outputs, tuple | list):
        expected = "a Tensor, an array or a sequence of them (None for ones)"
        checks.fail(op, "grad_outputs", expected, type(grad_outputs).__name__, TypeError)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"{op}: {len(grad_outputs)} gradient(s) for {len(outputs)} output(s); give one per "
            "output (None for ones)"
        )
    seeds = tuple(_seed(op, i, y, g) for i, (y, g) in enumerate(zip(outputs, grad_outputs)))
    if create_graph:
        return second_order.root(outputs, seeds, grad_outputs)
    if len(outputs) == 1:
        return outputs[0], seeds[0]
    first = outputs[0]
    xp = first.xp
    with enable_grad():  # the root joins the outputs whatever the grad mode around the call
        root = first.new(
            xp.zeros((), first.dtype),
            args=outputs,
            back_fns=tuple((lambda _, seed=seed: seed) for seed in seeds),
            name="outputs",
        )
    return root, xp.ones((), first.dtype)


def _seed(op: str, i: int, y: Node, g):
    """The gradient that output ``i``, ``y``, starts with: ``g`` checked as
    ``Tensor.backward`` checks its own, ones if None."""
    if not is_float(y.dtype) and (y.dtype.kind != "c" or g is None):  # complex: given g only
        raise TypeError(
            f"{op}: cannot differentiate output {i} of dtype {y.dtype} (shape {y.shape}); "
            "only floating tensors have gradients, or a complex one given its gradient"
        )
    if not y.requires_grad:
        raise RuntimeError(
            f"{op}: output {i} (shape {y.shape}) does not require grad: none of "
            "its inputs require grad, or it was made under no_grad()"
        )
    xp = y.xp
    if g is None:
        return xp.ones_like(y.array)
    if isinstance(g, Node) or backend.is_cupy_array(g):  # a Tensor stays where it is, as torch's
        g = getattr(g, "array", g)
        if backend.device_of(g) != y.device:
            raise ValueError(
                f"{op}: the gradient of output {i} is on {backend.device_of(g)}; expected the "
                f"output's device, {y.device} (shape {y.shape})"
            )
    else:  # host data (an array, numbers) goes to the output's device
        g = xp.asarray(g)
    if g.shape != y.shape:
        raise ValueError(
            f"{op}: the gradient of output {i} has shape {g.shape}; expected the output's "
            f"shape {y.shape}"
        )
    return g if g.dtype == y.dtype else g.astype(y.dtype)


_GRADCHECK_FLAGS = ("nondet_tol", "check_undefined_grad", "check_grad_dtypes", "fast_mode",
                    "check_batched_forward_grad", "check_backward_ad", "masked")  # fmt: skip


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, check_forward_ad: bool = False,
              check_batched_grad: bool = False, **ignored) -> bool:  # fmt: skip
    """torch.autograd.gradcheck: the gradients of every floating output of ``func(*inputs)``
    against central finite differences, for the inputs that require grad, through
    ``tricycle.gradcheck`` (in float64). ``inputs``: a Tensor or a tuple (non-Tensors passed
    as they are). True, or on a mismatch ``GradcheckError`` (False without ``raise_exception``).
    torch's other flags (``nondet_tol``, ``fast_mode``...) change nothing; forward AD and
    batched gradients are refused (the engine has neither)."""
    from tricycle.gradcheck import GradcheckError
    from tricycle.gradcheck import gradcheck as check

    unknown = sorted(set(ignored) - set(_GRADCHECK_FLAGS))
    if unknown:
        raise TypeError(f"gradcheck: unexpected keyword arguments {unknown}")
    if check_forward_ad or check_batched_grad or ignored.get("check_batched_forward_grad"):
        raise NotImplementedError(
            "gradcheck: tricycle has no forward-mode AD or batched gradients: leave "
            "check_forward_ad, check_batched_grad and check_batched_forward_grad off"
        )
    args = (inputs,) if isinstance(inputs, Node) else tuple(inputs)
    where = [i for i, x in enumerate(args) if isinstance(x, Node)]
    if not any(args[i].requires_grad for i in where):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True")  # fmt: skip
    wrt = [k for k, i in enumerate(where) if args[i].requires_grad]

    def output(k: int):
        def call(*tensors):
            full = list(args)
            for i, t in zip(where, tensors):
                full[i] = t
            return autograd_functional._outputs("gradcheck", func(*full))[1][k]

        return call

    with no_grad():
        outs = autograd_functional._outputs("gradcheck", func(*args))[1]
    try:
        for k, out in enumerate(outs):
            if is_float(out.dtype):
                check(output(k), *(args[i] for i in where), eps=eps, atol=atol, rtol=rtol,
                      wrt=wrt)  # fmt: skip
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


functional = types.ModuleType(
    "tricycle.autograd.functional",
    "torch.autograd.functional: jacobian, vjp, jvp, hessian, vhp and hvp "
    "(tricycle.autograd_functional; the second derivatives through create_graph=True).",
)
for _name in ("jacobian", "vjp", "jvp", "hessian", "vhp", "hvp"):
    setattr(functional, _name, getattr(autograd_functional, _name))
sys.modules.update({f"{__name__}.functional": functional, f"{__name__}.graph": graph})  # imports


def __getattr__(name: str):  # torch.autograd.profiler, loaded when asked for
    if name == "profiler":
        return importlib.import_module("tricycle.profiler.autograd_profiler")
    raise AttributeError(f"module 'tricycle.autograd' has no attribute {name!r}")
