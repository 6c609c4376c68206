"""torch.autograd.Function on tricycle's engine: a custom op as a forward and a backward.

A tricycle op returns ``Tensor(out, args, back_fns)``, one array function per input; a torch
Function gives ``forward(ctx, *inputs)`` and one ``backward(ctx, *grads)`` that returns every
input's gradient at once. ``Function.apply`` joins the two: it runs ``forward`` under
``no_grad`` (its ops record nothing) and makes its output a graph node whose inputs are the
Tensors among the forward's inputs. The node's back_fns share one call of the user's
``backward`` per backward pass: the walk calls them one after the other with the same output
gradient, the first runs ``backward`` and checks what it returned, each takes its input's
share.

Several differentiable outputs are several nodes, and the engine sends each its own gradient,
while ``backward`` needs them all at once. So they are pieces of one flat node (their
concatenation), as ``split`` makes pieces of a tensor: each piece's back_fn puts its gradient
at its place in a flat gradient (zeros elsewhere), the walk sums these before it reaches the
flat node, and the flat node's back_fns unpack the sum for ``backward``.
"""

import inspect

import numpy as np

from tricycle import backend, checks
from tricycle.backend import is_float
from tricycle.binary import unbroadcast
from tricycle.graph import Node, grad_enabled, no_grad


class FunctionCtx:
    """The ``ctx`` that a Function's ``forward`` (or ``setup_context``) and ``backward``
    share, as torch's: ``save_for_backward(*tensors)`` and ``saved_tensors``,
    ``needs_input_grad`` (one bool per forward input: a Tensor that requires grad), and any
    attribute set on it (``ctx.axis = axis``) for the values that are not Tensors."""

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._non_differentiable = ()
        self._materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for backward, which reads ``saved_tensors``."""
        self._saved = _tensors_or_none("save_for_backward", tensors)

    @property
    def saved_tensors(self) -> tuple:
        """What ``save_for_backward`` kept, in its order."""
        return self._saved

    def mark_non_differentiable(self, *outputs) -> None:
        """Outputs of forward that get no gradient (indices, masks): ``apply`` returns them as
        constants, and backward receives zeros for them (None if not ``materialize_grads``).
        An output that is not floating is never differentiable."""
        self._non_differentiable = _tensors_or_none("mark_non_differentiable", outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward receives zeros (True, the default) or None for an output that no
        gradient reached (unused, or marked non-differentiable)."""
        self._materialize_grads = checks.boolean("set_materialize_grads", "value", value)


def _tensors_or_none(method: str, values: tuple) -> tuple:
    for i, value in enumerate(values):
        if value is not None and not isinstance(value, Node):
            raise TypeError(
                f"ctx.{method}: argument {i} is {type(value).__name__}; expected a Tensor or "
                "None (keep other values as attributes: ctx.name = value)"
            )
    return values


class Function:
    """torch.autograd.Function: subclass it with ``forward`` and ``backward`` as static
    methods, and call ``YourOp.apply(*inputs)``::

        class Exp(Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, dy):
                (y,) = ctx.saved_tensors
                return dy * y

    ``forward(ctx, *inputs)`` takes Tensors and other values, records no graph, and returns a
    Tensor or a tuple (its Tensors become the op's outputs; other values pass through). As
    torch's, it may instead be ``forward(*inputs)`` with ``setup_context(ctx, inputs,
    output)`` filling the ctx. ``backward(ctx, *grads)`` receives one gradient Tensor per
    output (None for an output that is not a Tensor) and returns one gradient per forward
    input, also recording no graph: a Tensor or array of the input's shape (or one the input
    broadcasts to: it is summed back, as torch's), or None (zeros; always None for an input
    that is not a Tensor). Backward builds no graph; under ``create_graph=True`` it runs with
    the graph recorded (``tricycle.second_order_function``), so a backward written with
    tricycle's ops is differentiable again, as torch's; one that returns raw arrays gives a
    gradient whose own backward raises, as torch's ``@once_differentiable``.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "Function.forward: define forward(ctx, *inputs) as a @staticmethod of your subclass"
        )

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(
            "Function.backward: define backward(ctx, *grads) as a @staticmethod of your "
            "subclass, returning one gradient (or None) per input of forward"
        )

    @staticmethod
    def setup_context(ctx, inputs: tuple, output):
        """Optional: fill ``ctx`` from the inputs and the output of a ``forward(*inputs)``
        that takes no ctx (torch's other style)."""
        raise NotImplementedError  # (never called: apply calls only an overridden one)

    def __call__(self, *args, **kwargs):
        name = type(self).__name__
        raise TypeError(f"{name}()(...): a Function is applied as {name}.apply(...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on the inputs and return its output(s) as graph nodes whose
        gradient runs ``backward`` (constants under ``no_grad`` or when no input requires
        grad). Keywords are bound to forward's parameters, as torch does."""
        name = cls.__name__
        with_ctx = cls.setup_context is Function.setup_context
        if kwargs:
            args, kwargs = _bound(cls, with_ctx, args, kwargs)
        ctx = FunctionCtx(tuple(isinstance(a, Node) and a.requires_grad for a in args))
        with no_grad():
            if with_ctx:
                output = cls.forward(ctx, *args, **kwargs)
            else:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
        outputs = output if isinstance(output, tuple) else (output,)
        if not any(isinstance(o, Node) for o in outputs):
            raise TypeError(
                f"{name}.forward returned {type(output).__name__}; expected a Tensor or a "
                "tuple of Tensors (an array becomes one as Tensor(array))"
            )
        inputs = tuple(a for a in args if isinstance(a, Node))
        recording = grad_enabled() and any(a.requires_grad for a in inputs)
        marked = ctx._non_differentiable
        differentiable = [
            k
            for k, o in enumerate(outputs)
            if recording
            and isinstance(o, Node)
            and is_float(o.dtype)
            and not any(o is m for m in marked)
        ]
        nodes = [  # the Tensors that get no gradient: constants (sharing the array)
            o.new(o.array, requires_grad=False, name=name)
            if isinstance(o, Node) and k not in differentiable
            else o
            for k, o in enumerate(outputs)
        ]
        if differentiable:
            graph = _Backward(cls, ctx, args, outputs, differentiable)
            back_fns = tuple(graph.back_fn(i) for i, a in enumerate(args) if isinstance(a, Node))
            graph.make_nodes(inputs, back_fns, nodes)
        return tuple(nodes) if isinstance(output, tuple) else nodes[0]


def _bound(cls, with_ctx: bool, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` bound to forward's parameters, defaults applied: the keywords
    that can be positional become inputs (one gradient each in backward), as torch's."""
    try:
        bound = inspect.signature(cls.forward).bind(*((None,) if with_ctx else ()), *args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{cls.__name__}.apply: {error} (forward's parameters)") from None
    bound.apply_defaults()
    return bound.args[1:] if with_ctx else bound.args, bound.kwargs


class _Backward:
    """The graph side of one ``apply``: the nodes of its outputs and their back_fns, which run
    the user's ``backward`` once per backward pass."""

    def __init__(self, cls, ctx: FunctionCtx, args: tuple, outputs: tuple, differentiable):
        self.cls, self.ctx, self.args, self.outputs = cls, ctx, args, list(outputs)
        self.differentiable = differentiable  # indices of the outputs that are nodes
        self.output_ids = tuple(map(id, outputs))  # forward's own (a saved one: double backward)
        self.places = {}  # output index -> (start, stop) in the flat node (several outputs)
        self.reached = set()  # the outputs whose gradient came in this pass (several)
        self.memo = (None, None)  # (the output gradient of this pass, the input gradients)
        self.last = max(i for i, a in enumerate(args) if isinstance(a, Node) and a.requires_grad)

    def make_nodes(self, inputs: tuple, back_fns: tuple, nodes: list) -> None:
        """Put the differentiable outputs' nodes into ``nodes``: the one output itself, or the
        pieces of one flat node."""
        first, name = inputs[0], self.cls.__name__
        if len(self.differentiable) == 1:
            (k,) = self.differentiable
            nodes[k] = first.new(self.outputs[k].array, args=inputs, back_fns=back_fns, name=name)
            return
        arrays = [self.outputs[k].array for k in self.differentiable]
        xp, dtype = backend.array_module(arrays[0]), np.result_type(*(a.dtype for a in arrays))
        flat = xp.concatenate([a.reshape(-1).astype(dtype, copy=False) for a in arrays])  # (S,)
        joint = first.new(flat, args=inputs, back_fns=back_fns, name=name)
        start = 0
        for k, array in zip(self.differentiable, arrays):
            self.places[k] = start, start + array.size
            piece = flat[start : start + array.size].reshape(array.shape)
            piece = piece.astype(array.dtype, copy=False)  # a view unless dtypes differ
            nodes[k] = joint.new(piece, args=(joint,), back_fns=(self.piece_fn(k, flat),),
                                 name=f"{name}[{k}]")  # fmt: skip
            self.outputs[k] = nodes[k].detach()  # (forward's own array need not stay alive)
            start += array.size

    def piece_fn(self, k: int, flat):
        """The back_fn of output ``k``'s piece: its gradient at its place in the flat one."""
        xp, shape, dtype = backend.array_module(flat), flat.shape, flat.dtype
        start, stop = self.places[k]

        def back_fn(dout):
            dflat = xp.zeros(shape, dtype)  # (S,)
            dflat[start:stop] = dout.reshape(-1)
            self.reached.add(k)
            return dflat

        return back_fn

    def back_fn(self, i: int):
        """The back_fn of forward input ``i``: its share of this pass's ``backward``."""

        def back_fn(dout):
            seen, grads = self.memo
            if seen is not dout:  # the first input of this pass: run backward
                grads = self.checked(self.run(dout))
                self.memo = dout, grads
            if i == self.last:  # the walk is done with this node: keep no arrays
                self.memo = None, None
            arg = self.args[i]
            return arg.xp.zeros_like(arg.array) if grads[i] is None else grads[i]

        return back_fn

    def run(self, dout):
        """The user's backward, given each output's gradient (as Tensors, or None)."""
        grads = []
        for k, output in enumerate(self.outputs):
            if not isinstance(output, Node):
                grads.append(None)
            elif k in self.places and k not in self.reached and not self.ctx._materialize_grads:
                grads.append(None)
            elif k in self.places:  # a piece: its part of the flat gradient
                start, stop = self.places[k]
                piece = dout[start:stop].reshape(output.shape).astype(output.dtype, copy=False)
                grads.append(output.new(piece, requires_grad=False))
            elif k in self.differentiable:  # the one differentiable output
                grads.append(output.new(dout, requires_grad=False))
            elif self.ctx._materialize_grads:
                grads.append(output.new(output.xp.zeros_like(output.array), requires_grad=False))
            else:
                grads.append(None)
        self.reached.clear()
        with no_grad():
            return self.cls.backward(self.ctx, *grads)

    def checked(self, returned) -> list:
        """What backward returned as one array (or None) per forward input, in its shape;
        a ValueError or TypeError naming the Function for anything else."""
        name, n = self.cls.__name__, len(self.args)
        grads = returned if isinstance(returned, tuple) else (returned,)
        if len(grads) < n or any(g is not None for g in grads[n:]):
            raise ValueError(
                f"{name}.backward returned {len(grads)} gradient(s); expected {n}, one per "
                "input of forward (None for an input that gets no gradient)"
            )
        arrays = []
        for i, (arg, grad) in enumerate(zip(self.args, grads)):
            if grad is None:
                arrays.append(None)
                continue
            if not isinstance(arg, Node):
                raise ValueError(
                    f"{name}.backward returned a gradient at position {i}, whose forward input "
                    f"is {type(arg).__name__}, not a Tensor; return None there"
                )
            array = grad.array if isinstance(grad, Node) else grad
            if not (isinstance(array, np.ndarray) or backend.is_cupy_array(array)):
                raise TypeError(
                    f"{name}.backward returned {type(grad).__name__} at position {i}; expected "
                    f"a Tensor (or an array) of shape {arg.shape}, or None"
                )
            if backend.device_of(array) != arg.device:  # else a GPU input gets a host .grad
                raise ValueError(
                    f"{name}.backward returned a gradient on {backend.device_of(array)} at "
                    f"position {i}, whose input is on {arg.device}; return it on that device"
                )
            if array.shape != arg.shape:
                if not _broadcasts(arg.shape, array.shape):
                    raise ValueError(
                        f"{name}.backward returned a gradient of shape {array.shape} at "
                        f"position {i}, whose input has shape {arg.shape}; expected that shape "
                        "(or one it broadcasts to)"
                    )
                array = unbroadcast(array, arg.shape)
            arrays.append(array)
        return arrays


def _broadcasts(shape: tuple, target: tuple) -> bool:
    """Whether an array of ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))
