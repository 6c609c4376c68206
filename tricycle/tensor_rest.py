"""The rest of torch's ``Tensor`` methods: ``TorchRestMethods``, a base class of
``tricycle.tensor_math.TorchMoreMethods`` (so of ``Tensor``).

- views by strides: ``as_strided``, ``as_strided_`` (this tensor takes the view, as
  ``t_``), ``as_strided_scatter``, ``slice_inverse`` and ``dim_order`` (``tricycle.torch_strided``);
- the bit shifts ``bitwise_left_shift``/``bitwise_right_shift`` (``<<``, ``>>``, also with a
  number on the left), ``nonzero_static`` and ``hash_tensor`` (``tricycle.torch_bitwise``);
  the in-place bitwise ops and ``addmm_`` under ``add_``'s rule (``tensor_inplace``);
- the random fills ``cauchy_``, ``geometric_`` and ``log_normal_``, drawn on the host from
  tricycle's generator (``tricycle.manual_seed`` repeats them) or a numpy ``generator``, as
  ``normal_``; ``map2_``, ``module_load`` (what ``load_state_dict`` calls: ``other`` copied in,
  or itself with ``assign``), ``as_subclass``, ``resize``/``resize_as`` (torch's deprecated
  out-of-place forms: the same count of elements, with its warning), ``is_set_to``;
- torch's CPU answers for what tricycle has one of: a dense, strided, real tensor on the host or
  a GPU (``layout``, ``is_sparse``, ``is_quantized``, ``is_meta`` ... False, ``dense_dim``,
  ``output_nr`` 0, ``dequantize`` and ``conj_physical`` itself); and torch's errors (its kind,
  naming what to do) for the rest: sparse and quantized accessors, complex casts, other
  devices, removed methods (``reinforce``) and first-class dims (``index``);
- ``to_sparse``/``to_sparse_coo``/``to_sparse_csr``: the COO or CSR tensor of
  ``tricycle.sparse`` (the other sparse layouts are refused).
"""

import importlib
import sys
import warnings

from tricycle import backend, checks
from tricycle.tensor_extra import _reshaped, _written, imported, memory_formats


def _false(name: str):
    def query(self) -> bool:
        return False

    query.__name__ = query.__qualname__ = name
    query.__doc__ = f"torch.Tensor.{name}: False (tricycle's tensors are dense and strided)."
    return property(query)


def _refused(name: str, why: str, error: type = RuntimeError):
    def refused(self, *args, **kwargs):
        raise error(f"Tensor.{name}: {why}")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"torch.Tensor.{name}: refused: {why}"
    return refused


_SPARSE = ("expected a sparse tensor, got a dense (strided) one, as torch's refuses it: "
           "tricycle's tensors are dense")  # fmt: skip
_OTHER_LAYOUTS = "tricycle has the sparse COO and CSR layouts alone: use to_sparse(_csr)()"
_QUANTIZED = ("tricycle has no quantized tensors (torch's raises NotImplementedError for a "
              "dense one too); keep float tensors")  # fmt: skip
_COMPLEX = "tricycle has no complex dtypes; keep real and imaginary parts as two real tensors"
_DEVICE = "tricycle runs on the host and CUDA GPUs alone; use .cpu() or .cuda()"


class TorchRestMethods:
    """The methods of this module's doc."""

    __slots__ = ()

    as_strided, as_strided_scatter, slice_inverse, dim_order = imported(
        "torch_strided", "as_strided as_strided_scatter slice_inverse dim_order"
    )
    as_strided_ = _reshaped("as_strided_", "as_strided")
    bitwise_left_shift, bitwise_right_shift, nonzero_static, hash_tensor = imported(
        "torch_bitwise", "bitwise_left_shift bitwise_right_shift nonzero_static hash_tensor"
    )
    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift
    __rlshift__, __rrshift__ = imported("torch_bitwise", "rbitwise_left_shift rbitwise_right_shift")
    bitwise_and_, bitwise_or_, bitwise_xor_, bitwise_not_ = map(
        _written, "bitwise_and bitwise_or bitwise_xor bitwise_not".split()
    )
    bitwise_left_shift_, bitwise_right_shift_, addmm_ = map(
        _written, "bitwise_left_shift bitwise_right_shift addmm".split()
    )

    # ------------------------------------------------------------------ random fills
    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """torch.Tensor.cauchy_: values drawn from the Cauchy distribution of ``median`` and
        scale ``sigma`` (median + sigma tan(pi (u - 1/2)), u uniform)."""
        median = checks.real("Tensor.cauchy_", "median", median)
        sigma = checks.positive("Tensor.cauchy_", "sigma", sigma)
        draw = self._draw("cauchy_", generator).standard_cauchy(self.shape)
        return self._write("cauchy_", (median + sigma * draw).astype(self.dtype))

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        """torch.Tensor.log_normal_: values exp(N(mean, std^2)): ``mean`` and ``std`` are the
        underlying normal's, as torch's."""
        mean = checks.real("Tensor.log_normal_", "mean", mean)
        std = checks.positive("Tensor.log_normal_", "std", std)
        draw = self._draw("log_normal_", generator).lognormal(mean, std, self.shape)
        return self._write("log_normal_", draw.astype(self.dtype))

    def geometric_(self, p, *, generator=None):
        """torch.Tensor.geometric_: the trial of the first success, 1, 2, ..., of trials that
        succeed with probability ``p`` (torch's counts the success; the distribution
        ``Geometric`` counts the failures before it)."""
        p = checks.real("Tensor.geometric_", "p", p, 0, 1, "(]")
        draws = self._draw("geometric_", generator, numbers=True).geometric(p, self.shape)
        return self._write("geometric_", draws.astype(self.dtype), casting=True)

    def _draw(self, name: str, generator, numbers: bool = False):
        """The generator of a fill of ``name``, once this tensor is checked writable."""
        self._writable(name, f"a new tensor (tricycle.empty(...).{name}(...))")
        if not (self.is_floating_point() or numbers and self.dtype.kind in "iu"):
            expected = "a float or integer dtype" if numbers else "a float dtype"
            checks.fail(f"Tensor.{name}", "dtype", expected, self.dtype, TypeError)
        inplace = importlib.import_module("tricycle.tensor_inplace")
        return inplace._generator(f"Tensor.{name}", generator)

    # ------------------------------------------------------------------ writes and views
    def map2_(self, x1, x2, callable):  # noqa: A002 - torch's names
        """torch.Tensor.map2_: ``callable(a, b, c)`` of each element and ``x1``'s and ``x2``'s
        (broadcast to this tensor's shape) written into this tensor, on the host, as ``map_``."""
        importlib.import_module("tricycle.tensor_math")._host_writable(self, "map2_")
        xp, flat = self.xp, (lambda t: t.array.reshape(-1).tolist())
        b, c = (xp.broadcast_to(t.array, self.shape).reshape(-1).tolist() for t in (x1, x2))
        values = [callable(*abc) for abc in zip(flat(self), b, c)]
        return self.copy_(self.new_tensor(values).reshape(self.shape))

    def module_load(self, other, assign: bool = False):
        """torch.Tensor.module_load: what ``Module.load_state_dict`` makes of a parameter and
        its saved value: ``other`` detached with ``assign``, else ``other`` copied into this
        tensor, detached."""
        return other.detach() if assign else self.copy_(other).detach()

    def as_subclass(self, cls):
        """torch.Tensor.as_subclass: this tensor as an instance of ``cls`` (a subclass of
        Tensor), sharing its memory and its place in the graph (the gradient passes through)."""
        if not (isinstance(cls, type) and isinstance(self, cls) or issubclass(cls, type(self))):
            checks.fail("Tensor.as_subclass", "cls", f"a subclass of {type(self).__name__}", cls,
                        TypeError)  # fmt: skip
        out = self.new(self.array, args=(self,), back_fns=(lambda grad: grad,), name="as_subclass")
        out.__class__ = cls
        return out

    def resize(self, *sizes):
        """torch.Tensor.resize (deprecated, with its warning): ``reshape`` to ``sizes`` of the
        same count of elements (torch's refuses another count too)."""
        warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
        shape = tuple(sizes[0]) if len(sizes) == 1 and hasattr(sizes[0], "__len__") else sizes
        if _count(shape) != self.numel():
            raise RuntimeError(f"Tensor.resize: requested resize to {tuple(shape)} "
                               f"({_count(shape)} elements), but the tensor has shape "
                               f"{self.shape} ({self.numel()} elements): resize can only change "
                               "the shape; use resize_ for another count")  # fmt: skip
        return self.reshape(tuple(shape))

    def resize_as(self, other):
        """torch.Tensor.resize_as (deprecated, with its warning): ``resize(other.shape)``."""
        warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.resize(tuple(other.shape))

    def is_set_to(self, tensor) -> bool:
        """torch.Tensor.is_set_to: whether ``tensor`` views the very same memory with the
        same shape and strides."""
        return (self.data_ptr() == tensor.data_ptr() and self.shape == tensor.shape
                and self.stride() == tensor.stride() and self.dtype == tensor.dtype)  # fmt: skip

    def set_(self, source=None, storage_offset: int = 0, size=None, stride=None):
        """torch.Tensor.set_: this tensor made a view of ``source``'s memory: another tensor's
        (its shape too), a ``Storage``'s (``x.storage()``) viewed with ``size``, ``stride``
        and ``storage_offset`` as ``as_strided``, or none (an empty tensor); under
        ``add_``'s rule (a leaf needing no gradient, or under no_grad())."""
        self._writable("set_", "the source tensor itself")
        if source is None:
            self.array = self.xp.zeros((0,), dtype=self.dtype)
        elif hasattr(source, "shape") and hasattr(source, "array"):  # a tensor
            self.array = source.array
        elif hasattr(source, "array"):  # a Storage: its flat memory
            view = self.new(source.array, requires_grad=False)
            size = (len(source),) if size is None else tuple(size)
            stride = tuple(stride) if stride is not None else _contiguous(size)
            self.array = view.as_strided(size, stride, storage_offset).array
        else:
            checks.fail("Tensor.set_", "source", "a Tensor, a Storage or None", source, TypeError)
        return self

    def __contains__(self, element) -> bool:
        """``element in x``: whether any element equals it, as torch's (a number or tensor)."""
        if not (checks.is_real(element) or hasattr(element, "array")):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")  # fmt: skip
        return bool((self == element).any().item())

    def __pos__(self):
        """``+x``: ``x.positive()`` (a bool tensor refused), as torch's."""
        return self.positive()

    def __complex__(self) -> complex:
        """``complex(x)`` of a one-element tensor: its number as a complex."""
        return complex(self.item())

    def const_data_ptr(self) -> int:
        """torch.Tensor.const_data_ptr: ``data_ptr()``."""
        return self.data_ptr()

    def is_contiguous(self, memory_format=None) -> bool:
        """torch.Tensor.is_contiguous: whether the values lie unbroken in ``memory_format``'s
        order, row-major by default (``tricycle.memory_formats``)."""
        return memory_formats().is_contiguous(self.array, memory_format)

    def record_stream(self, stream) -> None:
        """torch.Tensor.record_stream: nothing: tricycle's GPU memory pool (cupy's) does not
        hand a tensor's memory to another stream's work while it is referenced."""

    # ------------------------------------------------------------------ torch's answers
    @property
    def layout(self):
        """torch.Tensor.layout: ``tricycle.strided`` (its one layout) where tricycle has it."""
        return getattr(importlib.import_module("tricycle"), "strided", "strided")

    @property
    def output_nr(self) -> int:
        """torch.Tensor.output_nr: 0 (which output of its op this tensor is; tricycle's
        multi-output ops make one op per output)."""
        return 0

    @property
    def grad_dtype(self):
        """torch.Tensor.grad_dtype: the dtype of this tensor's gradient: its own."""
        return self.dtype

    @property
    def volatile(self) -> bool:
        """torch.Tensor.volatile: False, with torch's warning (removed: use no_grad())."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)  # fmt: skip
        return False

    is_sparse, is_sparse_csr, is_quantized, is_meta, is_nested, is_mkldnn = map(
        _false, "is_sparse is_sparse_csr is_quantized is_meta is_nested is_mkldnn".split()
    )
    is_vulkan, is_xla, is_ipu, is_maia, is_mtia = map(
        _false, "is_vulkan is_xla is_ipu is_maia is_mtia".split()
    )

    def share_memory_(self):
        """torch.Tensor.share_memory_: this host tensor's array moved into memory shared
        between processes (a copy there, once; ``tricycle.shared_memory`` says how and when it
        is freed); a GPU tensor is left as is, as torch's. Returns self."""
        if not backend.is_cupy_array(self.array):  # the module loads on the first share
            self.array = importlib.import_module("tricycle.shared_memory").share(self.array)
        return self

    def is_shared(self) -> bool:
        """torch.Tensor.is_shared: whether the array lies in shared memory (after
        ``share_memory_``, or received through ``tricycle.multiprocessing``); True on a GPU,
        as torch's."""
        shared = sys.modules.get("tricycle.shared_memory")  # nothing is shared before it loads
        if backend.is_cupy_array(self.array):
            return True
        return shared is not None and shared.segment_of(self.array) is not None

    def is_distributed(self) -> bool:
        """torch.Tensor.is_distributed: False, as torch's."""
        return False

    def dense_dim(self) -> int:
        """torch.Tensor.dense_dim: every axis of a dense tensor."""
        return self.ndim

    def sparse_dim(self) -> int:
        """torch.Tensor.sparse_dim: 0 for a dense tensor."""
        return 0

    def dequantize(self):
        """torch.Tensor.dequantize of a float tensor: the tensor itself."""
        return self

    def conj_physical(self):
        """torch.Tensor.conj_physical of a real tensor: the tensor itself."""
        return self

    conj_physical_ = conj_physical

    indices, values, coalesce, is_coalesced = (
        _refused(n, _SPARSE) for n in ("indices", "values", "coalesce", "is_coalesced")
    )
    crow_indices, col_indices, ccol_indices, row_indices = (
        _refused(n, _SPARSE) for n in ("crow_indices", "col_indices", "ccol_indices", "row_indices")
    )
    smm, sspaddmm = _refused("smm", _SPARSE), _refused("sspaddmm", _SPARSE)
    sparse_mask, sparse_resize_, sparse_resize_and_clear_, resize_as_sparse_ = (
        _refused(n, _SPARSE, NotImplementedError)
        for n in ("sparse_mask", "sparse_resize_", "sparse_resize_and_clear_", "resize_as_sparse_")
    )
    to_sparse, to_sparse_coo = imported("sparse.coo", "to_sparse to_sparse_coo")
    (to_sparse_csr,) = imported("sparse.csr", "to_sparse_csr")
    to_sparse_csc, to_sparse_bsr, to_sparse_bsc = (
        _refused(n, _OTHER_LAYOUTS, NotImplementedError)
        for n in ("to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc")
    )
    int_repr, q_scale, q_zero_point, qscheme = (
        _refused(n, _QUANTIZED, NotImplementedError)
        for n in ("int_repr", "q_scale", "q_zero_point", "qscheme")
    )
    q_per_channel_scales, q_per_channel_zero_points, q_per_channel_axis = (
        _refused(n, _QUANTIZED, NotImplementedError)
        for n in ("q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis")
    )
    to_mkldnn = _refused("to_mkldnn", "tricycle has no MKL-DNN layout", NotImplementedError)
    to_padded_tensor = _refused("to_padded_tensor", "tricycle has no nested tensors (torch's "
                                "refuses a dense one too)", NotImplementedError)  # fmt: skip
    cdouble, cfloat, chalf = (_refused(n, _COMPLEX, TypeError) for n in ("cdouble", "cfloat",
                                                                          "chalf"))  # fmt: skip
    ipu, xpu, mtia = (_refused(n, _DEVICE) for n in ("ipu", "xpu", "mtia"))
    reinforce = _refused("reinforce", "reinforce() was removed, as in torch; sample with "
                         "tricycle.distributions, weight log_prob by the reward")  # fmt: skip
    index = _refused("index", "torch's first-class dimensions (functorch.dim) are not in "
                     "tricycle; index with x[...] or permute", NotImplementedError)  # fmt: skip
    storage_type = untyped_storage = _refused(
        "storage_type", "tricycle has one storage type: use x.storage()", NotImplementedError
    )


def _contiguous(size: tuple) -> tuple:
    """C-order strides of ``size``, in elements."""
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def _count(shape) -> int:
    count = 1
    for n in shape:
        count *= int(n)
    return count
