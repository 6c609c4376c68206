"""torch's ``nn.Buffer``: a Tensor that, set as a layer's attribute, is one of its buffers
(moved and cast with the layer, saved in ``state_dict``, never trained), as
``register_buffer`` makes one::

    self.mask = nn.Buffer(tricycle.ones(4, 4).tril())               # saved
    self.cache = nn.Buffer(tricycle.zeros(8), persistent=False)     # moved, not saved

Any Tensor attribute that needs no gradient is a buffer to the layer walk
(``tricycle.module.Layer``); ``Buffer`` makes one from a Tensor or an array (sharing its array,
as torch's shares the storage) and carries ``persistent``, which ``named_persistent`` (what
``state_dict`` saves) reads. An op on a Buffer gives a plain Tensor, as torch's does.
"""

import numpy as np

from tricycle import backend, checks
from tricycle.tensor import Tensor

__all__ = ["Buffer"]


class Buffer(Tensor):
    """torch's ``nn.Buffer(data=None, *, persistent=True)``: ``data`` (a Tensor or an array;
    None an empty float tensor) as a tensor without gradient that a layer holding it counts
    as a buffer; ``persistent=False`` keeps it out of ``state_dict``."""

    __slots__ = ("persistent",)

    def __init__(self, data=None, *, persistent: bool = True):
        checks.boolean("Buffer", "persistent", persistent)
        if data is None:
            data = np.zeros((0,), dtype=backend.DEFAULT_FLOAT)
        super().__init__(data.array if isinstance(data, Tensor) else data, requires_grad=False)
        self.persistent = persistent

    def new(self, array, args=None, back_fns=None, requires_grad=None, is_batched=False,
            name=None, dtype=None) -> Tensor:  # fmt: skip
        """An op's output or a constant: a plain Tensor, never a Buffer."""
        return Tensor(array, args, back_fns, requires_grad, is_batched, name, dtype)

    def _state(self, array) -> dict:  # pickles and deep copies keep ``persistent``
        return {**super()._state(array), "persistent": self.persistent}

    def __setstate__(self, state):
        super().__setstate__(state)
        self.persistent = state.get("persistent", True)
