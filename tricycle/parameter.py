"""torch's ``nn.Parameter`` and what a layer's walk counts a parameter.

``Parameter`` is the leaf Tensor a layer trains; ``parameter`` makes a layer's from an
initialiser's values; ``is_parameter`` is the walk's rule (``tricycle.module.Layer``): a
Tensor that requires grad, or a Parameter, frozen or not, as torch lists it. ``laid_out_anew``
tells the optimizers (``keeps_state``) that a parameter was transposed in place.
"""

import weakref

import numpy as np

from tricycle import backend, checks
from tricycle.tensor import Tensor


class Parameter(Tensor):
    """torch's ``nn.Parameter``: a leaf Tensor that a layer trains (``requires_grad=True``).

    ``Parameter(tensor)`` shares the tensor's array, so its dtype and device stay (as torch's
    shares the storage), and cuts the graph: the parameter is a leaf even if ``tensor`` was an
    op's output (nanoGPT's ``nn.Parameter(wpe.weight[:block_size])``). An array is kept as
    ``Tensor`` keeps it; ``data=None`` is an empty float32 parameter. Every layer's parameter
    is one (``tricycle.module.parameter`` makes them), so ``isinstance(p, nn.Parameter)``
    holds. A Parameter is a parameter to the walk even when it needs no gradient (made with
    ``requires_grad=False``, or frozen by hand), as torch's: ``parameters()`` lists it, so
    torch's ``for p in block.parameters(): p.requires_grad = True`` thaws it again.
    An op on a Parameter gives a plain Tensor (``new``), as torch's does.
    """

    __slots__ = ()
    is_buffer = False  # ``nn.UninitializedBuffer``, a Parameter by its class, is a buffer

    def __init__(self, data=None, requires_grad: bool = True):
        checks.boolean("Parameter", "requires_grad", requires_grad)
        if data is None:
            data = np.zeros((0,), dtype=backend.DEFAULT_FLOAT)
        super().__init__(data, requires_grad=requires_grad)

    def new(self, array, args=None, back_fns=None, requires_grad=None, is_batched=False,
            name=None, dtype=None) -> Tensor:  # fmt: skip
        """An op's output or a constant: a plain Tensor, never a Parameter."""
        return Tensor(array, args, back_fns, requires_grad, is_batched, name, dtype)


def parameter(values, name: str | None = None) -> Parameter:
    """A layer's trainable ``Parameter``: an initialiser's output (a numpy or cupy array, or
    numbers) as float32, the default float; a Tensor keeps its dtype and device."""
    if not isinstance(values, Tensor):
        values = values if backend.is_cupy_array(values) else np.asarray(values)
        values = Tensor(values, requires_grad=False, dtype=backend.DEFAULT_FLOAT)
    param = Parameter(values)
    param.name = name
    return param


def is_parameter(tensor) -> bool:
    """Whether the walk counts ``tensor`` (a layer's Tensor) a parameter: it requires grad, or
    it is a ``Parameter`` (torch's rule: a frozen one stays a parameter)."""
    return tensor.requires_grad or (isinstance(tensor, Parameter) and not tensor.is_buffer)


_STATE_HOLDERS: weakref.WeakSet = weakref.WeakSet()  # optimizers, for ``laid_out_anew``


def keeps_state(holder) -> None:
    """Register ``holder``, whose ``state`` maps a parameter to a dict of arrays of its shape
    (an optimizer's momentum, Adam's moments), for ``laid_out_anew``."""
    _STATE_HOLDERS.add(holder)


def laid_out_anew(param) -> None:
    """``param`` was transposed in place (``nn.utils.prune`` and ``parametrize`` lay a Linear's
    (in, out) weights out as torch's (out, in), the same Parameter): every registered holder's
    state of it is transposed too, so an optimizer's next step goes on as before."""
    for holder in list(_STATE_HOLDERS):
        state = holder.state.get(param)
        for key, value in (state or {}).items():
            if getattr(value, "ndim", 0) == 2:  # an array of the parameter's shape
                state[key] = value.T.copy()
