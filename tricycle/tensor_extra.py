"""More of torch's ``Tensor`` methods: ``TorchTensorExtras``, the base class of
``tricycle.tensor_torch.TorchTensorMethods`` (which had filled its module), and ``imported``,
which makes a module's functions methods that import it on their first call.

- ``grad_fn``: torch's record of the op that made a tensor (None for a leaf or a tensor that
  needs no gradient), a ``GradFn`` named after tricycle's op (``AddBackward`` for ``x + 2``,
  ``MeanBackward`` ...) whose ``next_functions`` lead to the inputs' records, a leaf's being an
  ``AccumulateGrad`` holding it as ``variable``, as torch's.
- the trigonometric and hyperbolic methods of ``tricycle.trigonometry`` (``x.asin()`` ...);
- in-place forms of functions of x (``sin_``, ``exp_``, ``sqrt_`` ...), under ``add_``'s rule
  (``tricycle.tensor_inplace``, imported on the call: it imports this module's user);
- Python's ``//`` and ``%`` (``tricycle.pointwise``'s ``floor_divide`` and ``remainder``) and
  torch's ``sort``, whose ``(values, indices)`` is ``tricycle.sort``'s;
- ``data_ptr``, the address of the first element (tied weights share it), and torch's view of
  memory: ``stride()`` (elements, not numpy's bytes), ``storage_offset()`` and ``storage()``,
  a ``Storage``: the flat memory that a tensor and its views (``x[1]``, ``x.t()``) share,
  which reads and writes elements by their index there (``x.storage()[0] = 2.0`` writes x);
- the in-place shape changes ``unsqueeze_``, ``squeeze_`` and ``t_``: a leaf (a constant, a
  parameter) takes the new shape over the same memory (a numpy array it shares stays shared);
  an op's output in a graph becomes the reshaping op's output (``tricycle.rebase``), as
  torch's, unless an op already uses it (then refused, naming the out-of-place form);
- ``resize_``: a tensor that needs no gradient takes a new shape, as torch's: over the same
  memory when the count of elements stays, else its first elements kept and zeros after
  (torch's are uninitialised); one that requires grad is refused, as torch refuses it;
- ``clamp_min``/``clamp_max`` (``clamp`` with one bound; fast.ai's ``relu`` is
  ``x.clamp_min(0.)``), their in-place forms and ``lerp_`` (a from-scratch batch norm's
  ``self.means.lerp_(m, self.mom)``), under ``add_``'s rule; ``histc``, torch's histogram of
  equal bins (``histc``, below: the counts, no gradient);
- ``broadcast_to``: torch's name for ``expand`` to a sequence of sizes;
- the methods of torch's functions in ``tricycle.torch_shapes`` (``ravel``, ``movedim``,
  ``rot90``, ``tensor_split`` ...), ``torch_scatter`` (``take_along_dim``, ``scatter_reduce``,
  ``slice_scatter`` ...) and ``torch_construction`` (``diagflat``, ``diag_embed``, ``kron``),
  each importing its module on its first call, and ``scatter_reduce_``, under ``add_``'s rule;
- ``__index__``: a one-element integer tensor is an index of a Python sequence
  (``classes[label]``), as torch's; ``__reversed__``: ``reversed(x)`` is ``x.flip(0)``.
"""

import importlib
import math
import re

from tricycle import backend, checks

_SYMBOLS = {
    "+": "Add",
    "-": "Sub",
    "*": "Mul",
    "/": "Div",
    "**": "Pow",
    "@": "Mm",
    "badd": "Add",
    "bsub": "Sub",
    "bmul": "Mul",
    "bdiv": "Div",
}  # tricycle.binary's broadcast forms


def memory_formats():
    """``tricycle.memory_formats``, loaded on the first layout a tensor is asked for, so that
    importing the tensor still loads the engine's core alone."""
    return importlib.import_module("tricycle.memory_formats")


def imported(module: str, names: str) -> tuple:
    """The functions ``names`` of ``tricycle.<module>`` (each taking the tensor first) as
    methods that import the module on their first call, so that importing the tensor still
    loads the engine's core alone."""

    def method(name: str):
        def call(self, *args, **kwargs):
            function = getattr(importlib.import_module(f"tricycle.{module}"), name)
            return function(self, *args, **kwargs)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = f"torch.Tensor.{name}: ``tricycle.{module}.{name}``."
        return call

    return tuple(map(method, names.split()))


def _reshaped(name: str, instead: str):
    def in_place(self, *args):
        if self.args is not None:  # an op's output: it becomes the reshaping op's, as torch's
            rebase = importlib.import_module("tricycle.rebase")
            selections = rebase.rebased(self, name, f"x.{instead}(...)", writes=False)
            if selections is None:
                why = f"a graph's tensor {self.shape} under no_grad()"
                raise RuntimeError(f"Tensor.{name}: cannot reshape {why}; write x.{instead}(...)")
            reshape = getattr(type(self), instead)
            return rebase.rebase(self, selections, reshape, *args, reshaped=True)
        self.array = getattr(self, instead)(*args).array  # a view: the same memory, new shape
        return self

    in_place.__name__ = in_place.__qualname__ = name
    in_place.__doc__ = f"torch.Tensor.{name}: this leaf takes ``{instead}``'s shape, in place."
    return in_place


def _written(name: str):
    def in_place(self, *args, **kwargs):
        inplace = importlib.import_module("tricycle.tensor_inplace")  # see the module's doc
        out_of_place = getattr(type(self), name)

        def named(*args, **kwargs):  # under its torch name (x.floor is made as "stepwise")
            return out_of_place(*args, **kwargs)

        named.__name__ = name  # an error names x.floor_ and its out-of-place form x.floor
        (method,) = inplace.written(named)
        return method(self, *args, **kwargs)

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = f"torch.Tensor.{name}_: ``{name}`` written into this tensor."
    return in_place


def histc(input, bins: int = 100, min=0, max=0, *, out=None):  # noqa: A002 - torch's names
    """torch.histc: the counts of ``input``'s values in ``bins`` equal bins over [min, max]
    (the values' own min and max when both are 0, as torch's), in its float dtype, with no
    gradient; values outside are not counted, and the last bin holds its right edge."""
    if out is not None:
        raise TypeError("histc: out= is not supported; use the returned tensor")
    if not hasattr(input, "array"):
        checks.fail("histc", "input", "a Tensor", type(input).__name__, TypeError)
    if not backend.is_float(input.dtype):
        checks.fail("histc", "input", "a float tensor (torch's too)", input.dtype, TypeError)
    bins = checks.positive_int("histc", "bins", bins)
    low, high = float(min), float(max)
    if low == high == 0 and input.array.size:
        low, high = float(input.array.min()), float(input.array.max())
    if low > high:
        raise ValueError(f"histc: max must be at least min, got min={min}, max={max}")
    if low == high:  # torch's: one value widens to [v - 1, v + 1]
        low, high = low - 1, high + 1
    counts, _ = input.xp.histogram(input.array, bins, range=(low, high))
    return input.new(counts.astype(input.dtype), requires_grad=False)


def clamp_bound(bound):
    """A bound of ``clamp``: a one-element tensor that needs no gradient as its number (torch
    broadcasts it so); anything else as given, for ``clip``'s checks."""
    return bound if getattr(bound, "requires_grad", False) else checks.number_of(bound)


def clamp_min(input, min):  # noqa: A002 - torch's names
    """torch.clamp_min: ``input.clamp(min=min)``."""
    return input.clamp(min=min)


def clamp_max(input, max):  # noqa: A002 - torch's names
    """torch.clamp_max: ``input.clamp(max=max)``."""
    return input.clamp(max=max)


class AccumulateGrad:
    """torch's record of a leaf that requires a gradient: where its gradient lands."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class GradFn:
    """torch's ``grad_fn`` of a tensor made by an op: the op's name as torch spells its
    records (``AddBackward``), and ``next_functions``, one ``(record, 0)`` per input (None for
    an input that needs no gradient)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def name(self) -> str:
        label = (self._tensor.name or "op").split()
        word = next((w for w in label if w in _SYMBOLS or re.search("[A-Za-z]", w)), "op")
        op = _SYMBOLS.get(word) or "".join(p.capitalize() for p in re.findall("[A-Za-z0-9]+", word))
        return f"{op}Backward"

    @property
    def next_functions(self) -> tuple:
        return tuple((record(arg), 0) for arg in self._tensor.args)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


def record(tensor):
    """``tensor``'s place in the graph as torch names it: a GradFn, an AccumulateGrad or None."""
    if not tensor.requires_grad:
        return None
    return AccumulateGrad(tensor) if tensor.args is None else GradFn(tensor)


def _address(array) -> int:
    return array.data.ptr if hasattr(array.data, "ptr") else array.ctypes.data


def _memory(array):
    """The 1-d array over all the memory ``array`` views: its root's (the array owning the
    memory, found through ``base``), in the order of that memory."""
    return backend.memory_owner(array).ravel(order="K")  # the owner is contiguous: a view


class Storage:
    """torch's ``TypedStorage`` of a tensor: its memory as a flat sequence of elements, shared
    with every view of it; an element read is a Python number, a write changes the tensors."""

    def __init__(self, array):
        self.array = _memory(array)  # (n,)

    def __len__(self) -> int:
        return self.array.shape[0]

    def size(self) -> int:
        return len(self)

    @property
    def dtype(self):
        return self.array.dtype

    def __getitem__(self, index):
        value = self.array[index]
        return value.tolist() if value.ndim == 0 else Storage(value)

    def __setitem__(self, index, value) -> None:
        self.array[index] = value

    def __iter__(self):
        return iter(self.array.tolist())

    def tolist(self) -> list:
        return self.array.tolist()

    def data_ptr(self) -> int:
        return _address(self.array)

    def __repr__(self) -> str:
        values = "".join(f" {v}\n" for v in self.array.tolist())
        return f"{values}[tricycle.Storage(dtype={self.dtype}) of size {len(self)}]"


class TorchTensorExtras:
    """torch's ``Tensor`` methods and attributes of this module (see its doc)."""

    __slots__ = ()

    @property
    def grad_fn(self):
        """torch.Tensor.grad_fn: the record of the op that made this tensor (a ``GradFn``),
        None for a leaf or a tensor that needs no gradient."""
        return None if self.args is None or not self.requires_grad else GradFn(self)

    tan, asin, acos, atan, sinh, cosh, arcsin, arccos, arctan = imported(
        "trigonometry", "tan asin acos atan sinh cosh arcsin arccos arctan"
    )
    sin_, cos_, tan_, asin_, acos_, atan_, sinh_, cosh_ = map(
        _written, "sin cos tan asin acos atan sinh cosh".split()
    )
    exp_, log_, sqrt_, tanh_, sigmoid_, neg_, relu_ = map(
        _written, "exp log sqrt tanh sigmoid neg relu".split()
    )
    arcsin_, arccos_, arctan_ = asin_, acos_, atan_
    __floordiv__, __rfloordiv__, __mod__, __rmod__ = imported(
        "pointwise", "floor_divide rfloor_divide remainder rremainder"
    )
    (sort,) = imported("torch_functions_more", "sort")  # torch's (values, indices)
    clamp_min_, clamp_max_, lerp_ = map(_written, "clamp_min clamp_max lerp".split())

    clamp_min, clamp_max, histc = clamp_min, clamp_max, histc
    ravel, moveaxis, movedim, swapdims, msort, fliplr, flipud, rot90 = imported(
        "torch_shapes", "ravel moveaxis movedim swapdims msort fliplr flipud rot90"
    )
    tensor_split, hsplit, vsplit, dsplit = imported(
        "torch_shapes", "tensor_split hsplit vsplit dsplit"
    )
    take_along_dim, scatter_reduce, argwhere, unique_consecutive = imported(
        "torch_scatter", "take_along_dim scatter_reduce argwhere unique_consecutive"
    )
    select_scatter, slice_scatter, diagonal_scatter = imported(
        "torch_scatter", "select_scatter slice_scatter diagonal_scatter"
    )
    isposinf, isneginf, isreal, is_complex, is_nonzero = imported(
        "torch_scatter", "isposinf isneginf isreal is_complex is_nonzero"
    )
    diagflat, diag_embed, kron = imported("torch_construction", "diagflat diag_embed kron")
    scatter_reduce_ = _written("scatter_reduce")
    unsqueeze_, squeeze_, t_ = (_reshaped(f"{n}_", n) for n in ("unsqueeze", "squeeze", "t"))

    def resize_(self, *sizes):
        """torch.Tensor.resize_: this tensor takes the shape ``sizes`` (C order), its elements
        kept as far as they go, zeros after; refused on one that requires grad, as torch's."""
        shape = tuple(sizes[0]) if len(sizes) == 1 and hasattr(sizes[0], "__len__") else sizes
        if not all(checks.is_integer(n) and n >= 0 for n in shape):
            raise TypeError(f"Tensor.resize_: sizes must be integers >= 0, got {sizes!r}")
        shape = tuple(map(int, shape))
        if self.requires_grad:
            raise RuntimeError(f"Tensor.resize_: cannot resize a tensor that requires grad "
                               f"(shape {self.shape}), as torch; write x.reshape(...)")  # fmt: skip
        count = math.prod(shape)
        if count == self.array.size:
            self.array = self.array.reshape(shape)  # a view where it can be: the same memory
            return self
        flat = self.xp.zeros(count, dtype=self.dtype)
        kept = min(count, self.array.size)
        flat[:kept] = self.array.reshape(-1)[:kept]
        self.array = flat.reshape(shape)
        return self

    def broadcast_to(self, size):
        """torch.Tensor.broadcast_to: ``expand`` to ``size``, a sequence of sizes (-1 keeps an
        axis; a plain number is refused, as torch's); the gradient sums back."""
        if not isinstance(size, tuple | list):
            checks.fail("Tensor.broadcast_to", "size", "a tuple or list of sizes", size, TypeError)
        return self.expand(*size)

    def data_ptr(self) -> int:
        """torch.Tensor.data_ptr: the address of this tensor's first element (host or GPU
        memory): two tensors that share it share their storage, as tied weights do."""
        return _address(self.array)

    def stride(self, dim: int | None = None):
        """torch.Tensor.stride: how many elements of the storage lie between neighbours along
        each axis (``dim``'s alone when given); a transposed view swaps them."""
        strides = tuple(step // self.array.itemsize for step in self.array.strides)
        return strides if dim is None else strides[dim]

    def storage_offset(self) -> int:
        """torch.Tensor.storage_offset: where the first element lies in ``storage()``."""
        return (_address(self.array) - _address(_memory(self.array))) // self.array.itemsize

    def storage(self) -> Storage:
        """torch.Tensor.storage: the memory this tensor views, shared with its other views."""
        return Storage(self.array)

    def __index__(self):
        """``sequence[x]`` for a one-element integer (or bool) tensor, as torch's:
        ``classes[label]``, ``classes[pred[0].argmax(0)]``."""
        if self.dtype.kind not in "biu" or self.size != 1:
            raise TypeError(f"Tensor.__index__: only a one-element integer tensor can be an "
                            f"index, got shape {self.shape} of {self.dtype}")  # fmt: skip
        return int(self._element("__index__").item())

    def __iter__(self):
        """``for row in x``: x's sub-tensors along its first axis, as torch's. A 0-d tensor is
        refused at once (TypeError, as torch's), so ``np.iterable(x)`` is False and matplotlib
        takes it as the number it is: ``plt.hlines(0.5, a - 4 * torch.sqrt(2 * p), ...)``."""
        if self.ndim == 0:
            raise TypeError(f"iteration over a 0-d tensor ({self!r}), as torch's: x.item() "
                            "is its number")  # fmt: skip
        return (self[i] for i in range(len(self)))

    def __reversed__(self):
        """``reversed(x)`` as torch's: x flipped along its first axis, a tensor (Python's own
        would be an iterator over its rows): d2l's bidirectional RNN reads its steps
        backwards through ``self.b_rnn(reversed(inputs))``. A 0-d tensor is itself."""
        return self if self.ndim == 0 else self.flip(0)
