"""The ``torch.Tensor`` methods that write into a tensor or make one: ``TorchInPlaceMethods``, a
base class of ``Tensor`` (``tricycle.tensor``) beside ``tricycle.tensor_torch``'s shapes and math.

The in-place methods (``add_``, ``normal_``, ``x[i] = v``, ``w -= g``...) write into ``.array``
only off the graph (a leaf needing no gradient, a parameter under ``no_grad()``), else raise:
tensors are functional, and a recorded graph keeps the arrays it saved, so writing into its
inputs would change its gradients. ``x -= y`` on a leaf is ``x.sub_(y)``, as torch's (a
constant's memory is written: ``w.detach() -= g`` steps w), or rebinds x to ``x - y`` where
torch refuses (a new dtype or shape). ``.data`` is torch's detached view (the same array, no
gradient); assigning it rebinds a leaf's array, between steps as in torch (an op recorded
from the leaf and not yet backpropagated may read the new array in its backward). The casts
(``float()``, ``to(dtype)``, ``bfloat16()``) send the gradient back in the source's dtype, and
``new_*`` make leaves of this tensor's dtype and device. ``type()`` names the type as torch
does ("tricycle.FloatTensor") and ``type(dtype)`` casts. The random fills, ``bernoulli`` and
``multinomial`` draw from tricycle's generator (``tricycle.random``, so ``tricycle.manual_seed``
repeats them), on the host, as it always does.
"""

import importlib
import operator

import numpy as np

from tricycle import backend, checks, ops, rebase, unary
from tricycle.graph import Node, grad_enabled
from tricycle.tensor_extra import memory_formats
from tricycle.tensor_torch import _sizes


def _cast_to(name: str, dtype):
    def cast(self):
        return self._cast(f"Tensor.{name}", dtype)

    cast.__doc__ = f"torch.Tensor.{name}: cast to {np.dtype(dtype)} (see ``type_as``)."
    return cast


# torch's legacy type names (``x.type()``: "torch.FloatTensor"), here under "tricycle."
_TYPE_NAMES = {
    "BoolTensor": np.bool_,
    "ByteTensor": np.uint8,
    "CharTensor": np.int8,
    "ShortTensor": np.int16,
    "IntTensor": np.int32,
    "LongTensor": np.int64,
    "HalfTensor": np.float16,
    "FloatTensor": np.float32,
    "DoubleTensor": np.float64,
}


def _type_name(dtype: np.dtype, on_gpu: bool) -> str:
    """torch's name of a tensor type: "tricycle.FloatTensor", "tricycle.cuda.LongTensor"."""
    names = {np.dtype(value): name for name, value in _TYPE_NAMES.items()}
    name = "BFloat16Tensor" if dtype.name == "bfloat16" else names.get(dtype)
    if name is None:  # numpy's other dtypes (uint16, ...) have no torch name: say the dtype
        return f"tricycle.Tensor[{dtype}]"
    return f"tricycle.{'cuda.' if on_gpu else ''}{name}"


def _named_type(name: str):
    """The dtype and device ("cpu" or "cuda") of a type name as ``_type_name`` writes it."""
    package, _, rest = name.partition(".")
    device, _, type_name = rest.rpartition(".")
    if package != "tricycle" or device not in ("", "cuda") or type_name not in _TYPE_NAMES:
        expected = "a dtype or a name such as 'tricycle.FloatTensor' or 'tricycle.cuda.LongTensor'"
        checks.fail("Tensor.type", "dtype", expected, name, TypeError)
    return _TYPE_NAMES[type_name], device or "cpu"


def _new_shape(op: str, size: tuple) -> tuple[int, ...]:
    """The sizes of a new tensor (as ``_sizes``), none negative."""
    shape = _sizes(op, size)
    if any(n < 0 for n in shape):
        checks.fail(op, "size", "non-negative sizes", shape)
    return shape


def _new_filled(name: str, value):
    def new_filled(self, *size, dtype=None, device=None, requires_grad: bool = False):
        shape = _new_shape(f"Tensor.{name}", size)  # an error names this method
        return self.new_full(shape, value, dtype, device, requires_grad)

    new_filled.__doc__ = f"torch.Tensor.{name}: {value}s of this tensor's dtype and device."
    return new_filled


def _generator(op: str, generator) -> np.random.Generator:
    """``generator``, a numpy Generator, or tricycle's for None (``random.given_or_ours``)."""
    from tricycle import random  # noqa: PLC0415 - import tricycle.tensor stays small

    return random.given_or_ours(op, generator)


def _in_place(name: str, out_of_place, instead: str):
    def in_place(self, *args, **kwargs):
        return rebase.in_place(self, name, out_of_place, instead, *args, **kwargs)

    in_place.__doc__ = f"torch.Tensor.{name}: ``{instead}`` written into this tensor."
    return in_place


def _augmented(in_place: str):
    def augmented(self, other):  # torch's ``x.op_(y)`` on a leaf (a parameter: under no_grad())
        if self.args is None and (self.requires_grad or _as_is(self, other, in_place)):
            return getattr(self, in_place)(other)  # a constant too: ``w.detach() -= g``
        return NotImplemented  # Python's ``x = x - y``: a new tensor, any graph kept

    augmented.__doc__ = f"``x op= y``: ``x.{in_place}(y)`` on a leaf, as torch's (``_as_is``)."
    return augmented


def _as_is(x: Node, y, in_place: str) -> bool:
    """Whether ``x op= y`` may write x (else x is rebound): no recorded op reads it (torch's
    backward would refuse), and it keeps x's dtype and shape, as torch's in-place ops must: x
    floats, or integers not divided; y numbers that broadcast to x's shape."""
    y, shape = getattr(y, "array", y), np.shape(getattr(y, "array", y))
    integers = "" if x.dtype.kind == "b" or in_place == "div_" else "iub"
    kinds = "" if x._uses else "fiub" if backend.is_float(x.dtype) else integers
    fits = len(shape) <= x.ndim and all(n in (1, m) for n, m in zip(shape[::-1], x.shape[::-1]))
    return (y.dtype if hasattr(y, "dtype") else np.asarray(y).dtype).kind in kinds and fits


def written(*methods) -> tuple:
    """The in-place forms of ``methods`` (``x.fmod_(y)`` of ``x.fmod``), as ``_in_place``'s."""
    return tuple(_in_place(f"{m.__name__}_", m, m.__name__) for m in methods)


class TorchInPlaceMethods:
    """torch's ``Tensor`` methods that write or make tensors (see the module's doc)."""

    __slots__ = ()

    # ------------------------------------------------------------------ data
    @property
    def data(self):
        """torch.Tensor.data: this tensor's values off the graph (the same array, no gradient).

        Assigning it, ``p.data = values`` (a Tensor or an array, kept as it is: no copy, its own
        shape, dtype and device), rebinds this leaf's array without writing into the old one,
        as torch's; an op's output in a graph refuses it (its backward reads the values it
        was made from)."""
        return self.detach()

    @data.setter
    def data(self, values):
        if self.args is not None:
            raise RuntimeError(f"Tensor.data: cannot assign the data of a tensor made by an op "
                               f"in a graph (shape {self.shape}), whose backward reads its "
                               f"values; assign to a leaf (a parameter or a constant)")  # fmt: skip
        array = values.array if isinstance(values, Node) else values
        if not (isinstance(array, np.ndarray) or backend.is_cupy_array(array)):
            checks.fail("Tensor.data", "value", "a Tensor or an array", values, TypeError)
        backend.numeric_dtype(array.dtype, "Tensor.data")
        if self.requires_grad and not backend.is_float(array.dtype):
            expected = "a float dtype (this tensor requires grad)"
            checks.fail("Tensor.data", "value's dtype", expected, array.dtype, TypeError)
        self.array = array

    # ------------------------------------------------------------------ dtypes and devices
    def _cast(self, op: str, dtype):
        """This tensor in ``dtype``, its gradient cast back (none to an integer dtype)."""
        dtype, source = backend.numeric_dtype(dtype, op), self.dtype
        if dtype == source:
            return self
        array = backend.cast(self.array, dtype, op)  # refuses NaN or too large for an int
        if not backend.is_float(dtype):
            if dtype.kind == "c":  # a complex-aware copy: its gradient's real part comes back
                back = (lambda dout: dout.real.astype(source),)
                # complex_tensor subclasses this tensor: reached by name, on this path only
                aware = importlib.import_module("tricycle.complex_tensor")
                return aware.result(array, (self,), back, op)
            return self.new(array, requires_grad=False)
        return unary.unary_op(self, array, lambda dout: dout.astype(source), "cast")

    def type_as(self, other):
        """torch.Tensor.type_as: cast to ``other``'s dtype."""
        return self._cast("Tensor.type_as", other.dtype)

    def to(self, device=None, dtype=None, non_blocking: bool = False, copy: bool = False, *,
           memory_format=None):  # fmt: skip
        """torch.Tensor.to: this tensor cast to ``dtype``, on ``device``, in ``memory_format``.

        ``to(device)`` ("cpu", "gpu", "cuda", "cuda:N" or a GPU index N: ``Node.to``, a copy
        whose gradient moves back), ``to(dtype)`` (a numpy dtype or type: ``numpy.float64``,
        ``float``), ``to(device, dtype)`` or ``to(other)`` (a Tensor's device and dtype). Returns
        ``self`` when nothing changes, unless ``copy``; copies are synchronous and keep this
        tensor's layout unless ``memory_format`` says another (``tricycle.memory_formats``)."""
        return memory_formats().to(self, device, dtype, non_blocking, copy, memory_format)

    double, half = _cast_to("double", np.float64), _cast_to("half", np.float16)
    long, byte = _cast_to("long", np.int64), _cast_to("byte", np.uint8)
    char, short = _cast_to("char", np.int8), _cast_to("short", np.int16)

    def bfloat16(self):
        """torch.Tensor.bfloat16: cast to bfloat16 (ml_dtypes' dtype, ``backend.bfloat16``)."""
        return self._cast("Tensor.bfloat16", backend.bfloat16("Tensor.bfloat16"))

    # ------------------------------------------------------------------ new tensors
    new_zeros, new_ones = _new_filled("new_zeros", 0), _new_filled("new_ones", 1)
    new_empty = _new_filled("new_empty", 0)  # zeros, as tricycle.empty: see torch_functions

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad: bool = False):
        """torch.Tensor.new_full: ``fill_value`` everywhere, of this tensor's dtype and device."""
        values = np.full(_new_shape("Tensor.new_full", (size,)), fill_value)  # cast by new_tensor
        return self.new_tensor(values, dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False):
        """torch.Tensor.new_tensor: a leaf copy of ``data``, of this tensor's dtype and device."""
        checks.boolean("Tensor.new_tensor", "requires_grad", requires_grad)
        data = backend.to_host_array(getattr(data, "array", data))
        array = backend.numeric_array(data, self.dtype if dtype is None else dtype).copy()
        on = backend.parse_device(self.device if device is None else device, "Tensor.new_tensor")
        return self.new(backend.move(array, on), requires_grad=requires_grad)

    # ------------------------------------------------------------------ in place
    def requires_grad_(self, requires_grad: bool = True):
        """torch.Tensor.requires_grad_: make this leaf a parameter (True) or a constant."""
        checks.boolean("Tensor.requires_grad_", "requires_grad", requires_grad)
        if self.args is not None and not requires_grad:  # an op's output: its graph stays
            checks.fail("Tensor.requires_grad_", "requires_grad", "True on an op's output "
                        "(detach() makes a constant of it)", requires_grad)  # fmt: skip
        if requires_grad and not (backend.is_float(self.dtype) or self.dtype.kind == "c"):
            checks.fail("Tensor.requires_grad_", "dtype", "a float or complex dtype", self.dtype,
                        TypeError)  # fmt: skip
        self.requires_grad = requires_grad
        return self

    def _writable(self, method: str, instead: str) -> None:
        """Raise unless writing into this tensor's array leaves every graph as it was."""
        if self.args is not None:
            why = "it was made by an op in a graph whose backward needs its values"
        elif self.requires_grad and grad_enabled():
            why = "it requires grad: write into a parameter under tricycle.no_grad()"
        else:
            return
        raise RuntimeError(f"Tensor.{method}: cannot write in place into this tensor (shape "
                           f"{self.shape}): {why}; tricycle's tensors are functional: use "
                           f"{instead} and keep the result")  # fmt: skip

    def _write(self, method: str, value, casting: bool = False, index=Ellipsis):
        """``value`` written at ``index`` (a float into integers only when ``casting``)."""
        array = getattr(value, "array", value)
        if hasattr(array, "dtype"):
            if not casting and backend.is_float(array.dtype) and not backend.is_float(self.dtype):
                checks.fail(f"Tensor.{method}", "value", f"{self.dtype}", array.dtype, TypeError)
            if backend.device_of(array) != self.device:  # onto this tensor's device
                array = backend.move(array, self.array.device.id if self.on_gpu else None)
        try:
            self.array[index] = array
        except ValueError as error:  # a shape that does not broadcast
            raise ValueError(f"Tensor.{method}: into shape {self.shape}: {error}") from None
        return self

    add_ = _in_place("add_", lambda x, y, alpha=1: x + y * alpha, "x + alpha * y")
    sub_ = _in_place("sub_", lambda x, y, alpha=1: x - y * alpha, "x - alpha * y")
    mul_ = _in_place("mul_", operator.mul, "x * y")
    # torch's hand-written step ``w -= lr * w.grad`` under no_grad() keeps w the parameter
    __iadd__, __isub__ = _augmented("add_"), _augmented("sub_")
    __imul__, __itruediv__ = _augmented("mul_"), _augmented("div_")
    div_ = _in_place("div_", lambda x, y, **rounding: x.div(y, **rounding), "x.div(y)")
    clamp_ = _in_place("clamp_", lambda x, *bounds, **named: x.clamp(*bounds, **named), "clamp")
    masked_fill_ = _in_place("masked_fill_", ops.masked_fill, "masked_fill")

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """torch.Tensor.normal_: values drawn from N(mean, std^2)."""
        checks.real("Tensor.normal_", "mean", mean)
        checks.non_negative("Tensor.normal_", "std", std)
        return self._fill_random("normal_", "tricycle.randn", generator, "normal", mean, std)

    def uniform_(self, from_=0.0, to=1.0, *, generator=None):
        """torch.Tensor.uniform_: values drawn from U(from, to), ``from`` named ``from_`` here."""
        checks.real("Tensor.uniform_", "to", to, checks.real("Tensor.uniform_", "from", from_))
        return self._fill_random("uniform_", "tricycle.rand", generator, "uniform", from_, to)

    def exponential_(self, lambd=1.0, *, generator=None):
        """torch.Tensor.exponential_: values drawn from the exponential distribution of rate
        ``lambd`` (of mean 1 / lambd)."""
        checks.positive("Tensor.exponential_", "lambd", lambd)
        scale = 1 / lambd
        return self._fill_random("exponential_", "tricycle.rand", generator, "exponential", scale)

    def _fill_random(self, name: str, instead: str, generator, distribution: str, *params):
        """Values drawn (on the host) from ``generator.distribution(*params)``, written in."""
        self._writable(name, instead)
        if not backend.is_float(self.dtype):
            checks.fail(f"Tensor.{name}", "dtype", "a float dtype", self.dtype, TypeError)
        generator = _generator(f"Tensor.{name}", generator)
        values = getattr(generator, distribution)(*params, self.shape)
        return self._write(name, np.asarray(values).astype(self.dtype))

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator=None):
        """torch.Tensor.multinomial: int64 ids (..., num_samples) drawn from each row of this
        tensor's weights (K,) or (N, K) (non-negative, any positive sum), from tricycle's
        generator (or a numpy ``generator``) on the host, as ``normal_``. Without
        ``replacement`` no id repeats in a row (Gumbel top-k: the same distribution as drawing
        one by one); an id of weight 0 is never drawn."""
        op = "Tensor.multinomial"
        checks.positive_int(op, "num_samples", num_samples)
        checks.boolean(op, "replacement", replacement)
        weights = backend.to_host_array(self.array).astype(np.float64)  # (N, K) or (K,)
        if self.ndim not in (1, 2) or not self.shape[-1]:
            checks.fail(op, "shape", "(K,) or (N, K) with K >= 1", self.shape)
        bad = weights[~(np.isfinite(weights) & (weights >= 0))]
        if bad.size:
            raise ValueError(f"{op}: weights must be finite and non-negative, got {bad[0]} "
                             f"among weights of shape {self.shape}")  # fmt: skip
        rows = weights.reshape(-1, self.shape[-1])  # (N, K)
        nonzero = (rows > 0).sum(axis=-1)  # (N,)
        if (nonzero == 0).any() or (not replacement and (nonzero < num_samples).any()):
            least = 1 if replacement else num_samples
            raise ValueError(f"{op}: expected a row with {least} or more weights > 0, got a "
                             f"row with {nonzero.min()} (weights of shape {self.shape}, "
                             f"num_samples={num_samples})")  # fmt: skip
        generator = _generator(op, generator)
        if replacement:  # inverse CDF: id j where cdf[j - 1] <= u < cdf[j]
            cdf = np.cumsum(rows, axis=-1)  # (N, K)
            cdf /= cdf[:, -1:]
            u = generator.random((rows.shape[0], num_samples))  # (N, S), each < cdf[-1] = 1
            ids = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        else:  # the num_samples largest of log w + Gumbel noise
            with np.errstate(divide="ignore"):
                keys = np.log(rows) - np.log(-np.log(generator.random(rows.shape)))
            ids = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
        ids = ids.reshape(*self.shape[:-1], num_samples).astype(np.int64)
        on = self.array.device.id if self.on_gpu else None
        return self.new(backend.move(ids, on), requires_grad=False)

    def bernoulli(self, p=None, *, generator=None):
        """torch.Tensor.bernoulli: 1 with probability p, else 0, of this tensor's shape and
        dtype, p this tensor's values or ``p`` (a number or probabilities that broadcast), in
        [0, 1]; drawn on the host, as ``normal_``. No gradient (torch's is 0)."""
        op = "Tensor.bernoulli"
        if p is None and not backend.is_float(self.dtype):
            expected = "a float dtype (its values are the probabilities)"
            checks.fail(op, "dtype", expected, self.dtype, TypeError)
        probs = backend.to_host_array(self.array if p is None else getattr(p, "array", p))
        probs = np.asarray(probs).astype(np.float64)
        if (outside := probs[~((probs >= 0) & (probs <= 1))]).size:
            raise ValueError(f"{op}: probabilities must lie in [0, 1], got {outside[0]}")
        try:
            probs = np.broadcast_to(probs, self.shape)
        except ValueError:
            checks.fail(op, "p's shape", f"one that broadcasts to {self.shape}", probs.shape)
        ones = _generator(op, generator).random(self.shape) < probs
        on = self.array.device.id if self.on_gpu else None
        return self.new(backend.move(ones.astype(self.dtype), on), requires_grad=False)

    bernoulli_ = _in_place(
        "bernoulli_", lambda x, p=0.5, *, generator=None: x.bernoulli(p, generator=generator),
        "tricycle.bernoulli",
    )  # fmt: skip
    scatter_ = _in_place("scatter_", lambda x, *args, **kw: x.scatter(*args, **kw), "scatter")
    scatter_add_ = _in_place("scatter_add_", lambda x, *args, **kw: x.scatter_add(*args, **kw),
                             "scatter_add")  # fmt: skip

    def fill_(self, value):
        """torch.Tensor.fill_: ``value`` (a number or a one-element tensor) everywhere."""
        self._writable("fill_", "new_full")
        value = value.item() if isinstance(value, Node) else value  # a one-element tensor
        return self._write("fill_", value, True)

    def zero_(self):
        """torch.Tensor.zero_: zeros everywhere, off the graph."""
        self._writable("zero_", "new_zeros")
        return self._write("zero_", 0)

    def copy_(self, src, non_blocking: bool = False):
        """torch.Tensor.copy_: the values of ``src`` (broadcast, cast, moved to this device)."""
        self._writable("copy_", "clone or a new tensor")
        checks.boolean("Tensor.copy_", "non_blocking", non_blocking)
        src = src if hasattr(getattr(src, "array", src), "dtype") else np.asarray(src)
        return self._write("copy_", src, casting=True)

    def __setitem__(self, index, value):
        """``x[index] = value``, as torch's and numpy's (into an op's output: ``index_put``)."""
        if (selections := rebase.rebased(self, "__setitem__", "index_put", value)) is not None:
            return rebase.rebase(self, selections, rebase.index_put, index, value)
        self._writable("__setitem__", "tricycle.where or masked_fill")
        self._write("__setitem__", value, True, ops._unwrap_index(index, self.xp))

    # named as Python's builtins: last, so that no annotation above reads them
    def type(self, dtype=None, non_blocking: bool = False):
        """torch.Tensor.type: without ``dtype``, this tensor's type name as torch writes it,
        under "tricycle." ("tricycle.FloatTensor", "tricycle.cuda.LongTensor"); with a
        ``dtype`` (``tricycle.float``, a numpy dtype) this tensor cast to it, as ``to(dtype)``;
        with such a name, cast to its dtype and moved to its device, as torch does."""
        checks.boolean("Tensor.type", "non_blocking", non_blocking)
        if dtype is None:
            return _type_name(self.dtype, self.on_gpu)
        if not isinstance(dtype, str):
            return self._cast("Tensor.type", dtype)
        dtype, device = _named_type(dtype)
        out = self._cast("Tensor.type", dtype)
        return out if out.on_gpu == (device == "cuda") else Node.to(out, device)

    float, int = _cast_to("float", np.float32), _cast_to("int", np.int32)
    bool = _cast_to("bool", np.bool_)
