"""The autodiff graph: a node is an array plus how it was computed.

Every op returns ``Tensor(out, args=inputs, back_fns=derivatives)``: one callable per input
mapping the output's gradient to that input's gradient. ``Node.backward`` checks its
arguments and hands the walk over the graph to ``tricycle.backprop``.

``Node`` is everything a Tensor is except Python's operators; ``tricycle.tensor.Tensor`` adds
those. The ops (``unary``, ``binary``, ``reduce``, ``ops``) import this module, not ``tensor``,
and make their outputs with ``x.new(...)`` (the class of their input), so that ``Tensor`` can
define its operators from the ops without an import cycle.
"""

import importlib
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np

from tricycle import backend, backprop, checks
from tricycle.backend import is_float, move, numeric_array, numeric_dtype, parse_device
from tricycle.backprop import add_arrays  # noqa: F401 (the ops import it from here)
from tricycle.traces import Trace

BackFn = Callable[[object], object]  # output gradient array -> input gradient array


class _GradMode(threading.local):
    """Whether ops record the graph, per thread (as PyTorch's grad mode): ``no_grad`` in one
    thread never changes what another records."""

    enabled = True  # the class attribute is every thread's starting value


_grad_mode = _GradMode()


@contextmanager
def no_grad():
    """Build no graph inside this block (evaluation, sampling): outputs keep no args. It
    applies to the calling thread only."""
    previous, _grad_mode.enabled = _grad_mode.enabled, False
    try:
        yield
    finally:
        _grad_mode.enabled = previous


def grad_enabled() -> bool:
    """Whether ops in the calling thread currently record the graph."""
    return _grad_mode.enabled


def check_float(op: str, x: "Node") -> None:
    """Raise a TypeError naming ``op`` unless ``x`` is floating (NotImplementedError, torch's
    kind, for a complex x). A fused op computes in its input's dtype, which an integer array
    cannot hold (numpy would fail deep inside, naming a ufunc instead of the op)."""
    if not is_float(x.dtype):
        if x.dtype.kind == "c":
            raise NotImplementedError(f"{op}: does not take complex tensors ({x.dtype}, {x.shape})")
        raise TypeError(f"{op}: needs a floating tensor, got dtype {x.dtype} with shape {x.shape}; "
                        "convert it first, e.g. to_tensor(values, dtype=np.float32)")  # fmt: skip


# Reading a value back is where the host waits for the device anyway: range checks deferred
# on a GPU (``tricycle.backends.cuda.deferred``) add theirs here the first time they record one.
read_back_hooks: list[Callable[[], None]] = []


def before_read_back() -> None:
    """Run the read-back hooks: where a value is read back to the host (a Tensor's ``item``,
    ``numpy``, ``float``, ``int``; a training step's ``settle``). Nothing without hooks."""
    for hook in read_back_hooks:
        hook()


class Node:
    """An n-dimensional array that remembers how it was computed (a Tensor without its
    operators: see ``tricycle.tensor.Tensor``).

    Args:
        array: a numpy/cupy ndarray (kept as is, no copy, when ``dtype`` is None or matches)
            or anything ``numpy.asarray`` accepts (numbers and lists become float32, booleans
            stay boolean and a numpy scalar keeps its dtype, unless ``dtype``).
        args: the input tensors of the op that made this tensor.
        back_fns: one callable per arg, mapping this tensor's gradient to that arg's gradient.
        requires_grad: True by default for floating tensors; integer tensors cannot.
        is_batched: whether the first axis is a batch axis (informational: ops broadcast).
        name: a label shown in the repr, usually the op that made the tensor.
        dtype: convert to this dtype.
    """

    __slots__ = ("array", "args", "back_fns", "requires_grad", "grad", "name", "is_batched",
                 "_retain_grad", "_grad_hooks", "grad_buffer", "backward_trace", "_uses",
                 "__weakref__", "__dict__")  # fmt: skip  # __dict__: a user's attributes
    __array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

    def __init__(
        self,
        array,
        args: Sequence["Node"] | None = None,
        back_fns: Sequence[BackFn] | None = None,
        requires_grad: bool | None = None,
        is_batched: bool = False,
        name: str | None = None,
        dtype=None,
    ):
        if type(array) is not np.ndarray:  # the common case, an ndarray, skips all of this
            if isinstance(array, Node):
                array = array.array
            if not (isinstance(array, np.ndarray) or backend.is_cupy_array(array)):
                array = numeric_array(array, dtype)
        if dtype is not None and array.dtype != dtype:
            array = backend.cast(array, numeric_dtype(dtype))
        self.array = array

        floating = is_float(array.dtype) or (  # a complex array: complex_tensor's rules
            array.dtype.kind == "c" and backend.complex_node(self, args, back_fns, name)
        )
        if requires_grad and not floating:
            raise TypeError(f"Tensor: only floating tensors can require gradients, got dtype "
                            f"{array.dtype} with shape {array.shape}. Pass requires_grad=False "
                            "or a float dtype.")  # fmt: skip
        if args is not None:
            if isinstance(args, int | float):  # torch's Tensor(3, 4): sizes, not inputs
                raise TypeError(f"Tensor: args must be an op's input Tensors, got {args!r}; for "
                                "torch's Tensor(*sizes) write tricycle.empty(*sizes)")  # fmt: skip
            # an op's output needs the graph only if some input does and grad mode is on
            self.args = self.back_fns = None
            self.requires_grad = False
            if floating and _grad_mode.enabled:
                for arg in args:
                    if arg.requires_grad:
                        self.args = args if type(args) is tuple else tuple(args)
                        self.back_fns = back_fns if type(back_fns) is tuple else tuple(back_fns)
                        if len(self.back_fns) != len(self.args):
                            raise ValueError(
                                f"Tensor {name or ''}: {len(self.args)} args but "
                                f"{len(self.back_fns)} back_fns; give one back_fn per arg"
                            )
                        self.requires_grad = True
                        for used in self.args:  # ops recorded on it (``tricycle.rebase``)
                            used._uses += 1
                        break
        else:
            self.args = self.back_fns = None
            self.requires_grad = floating if requires_grad is None else bool(requires_grad)
        self.grad: Node | None = None
        self.name = name
        self.is_batched = is_batched
        self._retain_grad, self._uses = False, 0
        self._grad_hooks = None
        self.grad_buffer = None  # where backward puts this leaf's gradient (a bucket's view)
        self.backward_trace: Trace | None = None  # what backward freed, to draw

    def new(
        self,
        array,
        args=None,
        back_fns=None,
        requires_grad=None,
        is_batched=False,
        name=None,
        dtype=None,
    ) -> "Node":
        """A tensor of this one's class: how an op makes its output (``x.new(out, args=(x,),
        back_fns=(back_fn,), name="exp")``) and how a constant joins an op. The arguments are
        ``Node``'s, passed on by position (no keyword dict to build: this runs once per op)."""
        return type(self)(array, args, back_fns, requires_grad, is_batched, name, dtype)

    # ----------------------------------------------------------------- properties
    @property
    def xp(self):
        """The array module of this tensor: numpy on the CPU, cupy on a GPU."""
        return backend.array_module(self.array)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def size(self) -> int:
        return self.array.size

    @property
    def device(self) -> backend.device:
        """torch's device (a str too: 'cpu' or 'cuda:N', with ``type`` and ``index``)."""
        return backend.device_of_array(self.array)

    @property
    def on_gpu(self) -> bool:
        return backend.is_cupy_array(self.array)

    def __len__(self) -> int:
        return len(self.array)

    # ----------------------------------------------------------------- backward
    def backward(self, gradient=None, retain_graph=None, create_graph=False) -> None:
        """Differentiate this tensor with respect to every tensor it was computed from:
        set ``.grad`` on leaves that require it (accumulating if already set) and on tensors
        that called ``retain_grad()``, and run their post-accumulate hooks as soon as that
        gradient is final (``register_post_accumulate_grad_hook``). ``gradient`` (torch's
        name) seeds it: ones when None (a complex tensor needs one). The graph is freed unless
        ``retain_graph`` (None: ``create_graph``), leaving each tensor's ``trace`` (names,
        shapes, summaries, no arrays: ``tricycle.traces``) for drawing it.
        ``create_graph=True`` records the backward pass itself (``tricycle.second_order``):
        ``.grad`` is then a Tensor in the graph, to differentiate again."""
        create_graph = checks.boolean("backward", "create_graph", create_graph)
        checks.boolean("backward", "retain_graph", retain_graph, optional=True)
        if not is_float(self.dtype) and (self.dtype.kind != "c" or gradient is None):
            raise TypeError(f"backward: cannot differentiate a tensor of dtype {self.dtype} (shape "
                            f"{self.shape}); floats only (complex: give the gradient)")  # fmt: skip
        if not self.requires_grad:
            raise RuntimeError(f"backward: tensor {self.name or ''} (shape {self.shape}) does not "
                               "require grad: none of its inputs require grad, or it was made "
                               "under no_grad().")  # fmt: skip
        xp, given = self.xp, gradient
        if gradient is None:
            gradient = xp.ones_like(self.array)
        else:
            if isinstance(gradient, Node):  # a Tensor stays where it is: on this one's device
                backend.check_same_device("backward", self.array, gradient.array)
            gradient = gradient.array if isinstance(gradient, Node) else xp.asarray(gradient)
            if gradient.shape != self.shape:
                raise ValueError(f"backward: gradient shape {gradient.shape} does not match "
                                 f"tensor shape {self.shape}")  # fmt: skip
            if gradient.dtype != self.dtype:
                gradient = gradient.astype(self.dtype)
        if create_graph:  # a separate walk, loaded by name (it reads the grad mode here)
            second_order = importlib.import_module("tricycle.second_order")
            return second_order.tensor_backward(self, given, gradient, retain_graph is not False)
        backprop.backward(self, gradient, bool(retain_graph))

    def register_post_accumulate_grad_hook(self, hook: Callable[["Node"], None]):
        """Call ``hook(self)`` whenever backward has accumulated this tensor's gradient into
        ``.grad`` (a leaf, or a tensor that retains its gradient), which is then final for
        that backward pass, while backward goes on with the rest of the graph.

        Data parallelism starts averaging a parameter's gradient over processes here, as
        torch's hook of the same name lets DDP do. A hook must not change the graph; it may
        read ``.grad``. Returns a handle whose ``remove()`` unregisters the hook. Hooks are
        not pickled or copied with the tensor.
        """
        if self._grad_hooks is None:
            self._grad_hooks = []
        self._grad_hooks.append(hook)
        return backprop.HookHandle(self, hook)

    def retain_grad(self) -> "Node":
        """Keep this (non-leaf) tensor's gradient in ``.grad`` after backward."""
        self._retain_grad = True
        return self

    def zero_grad(self) -> "Node":
        """Forget the gradient (and any graph hanging off this tensor)."""
        self.grad = None
        self.args = self.back_fns = self.backward_trace = None
        return self

    def detach(self) -> "Node":
        """The same data with no graph and no gradient (shares memory)."""
        return self.new(self.array, requires_grad=False, is_batched=self.is_batched, name=self.name)

    # ----------------------------------------------------------------- devices
    def to_gpu(self, device: int = 0) -> "Node":
        """Move this tensor's data (and gradient) to GPU ``device`` in place; returns self."""
        checks.non_negative_int("Tensor.to_gpu", "device", device)
        self.array = backend.to_device_array(self.array, device)
        if self.grad is not None:
            self.grad.to_gpu(device)
        return self

    def from_gpu(self) -> "Node":
        """Move this tensor's data (and gradient) to host memory in place; returns self."""
        self.array = backend.to_host_array(self.array)
        if self.grad is not None:
            self.grad.from_gpu()
        return self

    def to(self, device) -> "Node":
        """This tensor on ``device`` ("cpu", "gpu", "cuda", "cuda:N" or a GPU index N).

        As ``torch.Tensor.to``: returns ``self`` when it is already there, else a new tensor
        holding a copy, whose backward moves the gradient back to this tensor's device. Unlike
        ``to_gpu()``/``from_gpu()``, which move this tensor's own data in place (and are how
        a model's parameters move), the original is left where it is.
        """
        index = parse_device(device, "Tensor.to")
        here = self.array.device.id if self.on_gpu else None
        if index == here:
            return self
        return self.new(
            move(self.array, index),
            args=(self,),
            back_fns=backend.ComplexSafe((lambda grad: move(grad, here),)),
            name=self.name,
            is_batched=self.is_batched,
        )

    def cpu(self) -> "Node":
        """This tensor in host memory (``self`` if it is there already); see ``to``."""
        return self.to("cpu")

    def cuda(self, device=None) -> "Node":
        """This tensor on GPU ``device`` (None: the current one, "cuda"); see ``to``."""
        return self.to("cuda" if device is None else device)

    # reading a value back runs the read-back hooks (deferred range checks raise there)
    def numpy(self) -> np.ndarray:
        """The data as a numpy array (copied from the GPU if needed)."""
        before_read_back()
        return backend.to_host_array(self.array)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        return self._element("item()").item()

    def _element(self, what: str):
        """The one element, read back as a 0-d host array (several: a ValueError)."""
        if self.size != 1:
            raise ValueError(f"{what}: a tensor of {self.size} elements (shape {self.shape}) is "
                             "not a number: reduce it first (.sum(), .mean(), [i])")  # fmt: skip
        before_read_back()
        return backend.to_host_array(self.array).reshape(())

    # ----------------------------------------------------------------- batching
    def to_batched(self) -> "Node":
        """Mark the first axis as a batch axis (in place); returns self."""
        self.is_batched = True
        return self

    def from_batched(self) -> "Node":
        """Unmark the batch axis (in place); returns self."""
        self.is_batched = False
        return self

    # ----------------------------------------------------------------- comparisons
    def close_to(self, other, rtol: float = 1e-4, atol: float = 1e-5, equal_nan=False) -> bool:
        """Whether every element is close to ``other`` (a Tensor, array or number)."""
        other = other.array if isinstance(other, Node) else other
        return bool(self.xp.allclose(self.array, other, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"bool(Tensor) of shape {self.shape} is ambiguous; use .close_to(), "
                ".array.all() or .array.any()"
            )
        return bool(backend.to_host_array(self.array))

    def __float__(self) -> float:
        return float(self._element("float()"))

    def __int__(self) -> int:
        return int(self._element("int()"))

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if spec and self.size == 1 else str(self)

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def __repr__(self) -> str:
        body = str(self.array)
        return f"Tensor({body}, name={self.name})" if self.name else f"Tensor({body})"

    __str__ = __repr__
    __hash__ = object.__hash__  # == is elementwise, identity hashing keeps dicts working

    def __getstate__(self):
        # the graph and gradients are transient: pickles hold data only (on the host)
        return self._state(backend.to_host_array(self.array))

    def __deepcopy__(self, memo):  # a deep copy stays on its device, as torch's
        twin = type(self).__new__(type(self))
        twin.__setstate__(self._state(self.array.copy()))
        return twin

    def _state(self, array) -> dict:
        return {"array": array, "requires_grad": self.requires_grad, "name": self.name,
                "is_batched": self.is_batched}  # fmt: skip

    def __setstate__(self, state):
        self.array = state["array"]
        self.requires_grad = state["requires_grad"]
        self.name = state["name"]
        self.is_batched = state["is_batched"]
        self.args = self.back_fns = self.grad = self.backward_trace = None
        self._retain_grad, self._uses = False, 0
        self._grad_hooks = None
        self.grad_buffer = None
