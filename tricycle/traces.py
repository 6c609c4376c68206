"""What ``backward`` leaves of the graph it frees: a small record per tensor, enough to draw.

Backward drops every op output's ``args`` and ``back_fns`` (the closures hold the arrays the
derivatives need: the memory of a whole forward pass). Before it does, it gives each tensor a
``Trace``: the op's name, the output's shape and dtype, the traces of its inputs and, for
small arrays, a summary of the value and of the gradient that flowed through it (for a
one-element array the number itself, else its Euclidean norm). No array is kept: the
picture micrograd's ``draw_dot`` shows (data and grad on every node) without the memory of
``retain_graph=True``. A tensor still alive (one the caller holds, a parameter) is read
through a weak reference when drawn, so its value and gradient are summarised whatever its
size.

``tricycle.draw`` reads a ``Trace`` as it reads a tensor: ``args``, ``name``, ``shape``,
``dtype``, ``requires_grad``, and the ``value``/``grad`` summaries.
"""

import weakref

import numpy as np

__all__ = ["SUMMARY_LIMIT", "Trace", "summarise"]

# arrays up to this many elements are summarised during backward (a learner's scalars and
# small vectors); a norm over every activation and parameter of a model would cost its
# backward a few numpy calls per op (larger tensors are summarised when drawn, if alive)
SUMMARY_LIMIT = 64


def summarise(array, limit: int | None = SUMMARY_LIMIT) -> float | None:
    """The number a drawing shows for ``array``: its one element, or its Euclidean norm in
    float64. With a ``limit`` (during backward), None for an array of more elements or one
    on a GPU (summarising it there would make backward wait for the device); without one
    (when drawing: the caller asked), any array."""
    if limit is not None:
        if not isinstance(array, np.ndarray | np.generic) or array.size > limit:
            return None
    if array.dtype.kind == "c":  # a complex tensor's summary: of its magnitudes
        array = abs(array)
    if array.size == 1:
        return float(array.reshape(()))  # a numpy scalar reshapes too
    wide = array.astype("float64")  # numpy or cupy alike
    return float((wide * wide).sum() ** 0.5)


class Trace:
    """One tensor of a freed graph: ``name``, ``shape``, ``dtype``, ``requires_grad``;
    ``args``, its inputs' traces (None for a leaf or a constant); ``grad``, the summary of
    the gradient backward passed through it; and the summary of its value."""

    __slots__ = ("name", "shape", "dtype", "requires_grad", "args", "_grad", "_value", "_tensor")

    def __init__(self, tensor):
        self.name, self.shape, self.dtype = tensor.name, tensor.shape, tensor.dtype
        self.requires_grad = tensor.requires_grad
        self.args: tuple[Trace, ...] | None = None
        self._grad: float | None = None
        self._value = summarise(tensor.array)
        self._tensor = weakref.ref(tensor)

    @property
    def tensor(self):
        """The tensor itself while something else keeps it alive, else None."""
        return self._tensor()

    @property
    def value(self) -> float | None:
        """The summary of the tensor's value: read from the tensor while it lives."""
        tensor = self.tensor
        return self._value if tensor is None else summarise(tensor.array, None)

    @property
    def grad(self) -> float | None:
        """The summary of the gradient backward passed through the tensor; for a large one
        (a parameter) still alive, of its ``.grad``."""
        tensor = self.tensor
        if self._grad is None and tensor is not None and tensor.grad is not None:
            return summarise(tensor.grad.array, None)
        return self._grad

    @grad.setter
    def grad(self, array) -> None:
        self._grad = summarise(array)
