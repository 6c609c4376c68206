"""torch's ``Tensor`` methods of the pointwise math, special functions, statistics and products
of ``tricycle.torch_pointwise``, ``torch_special``, ``torch_statistics`` and
``torch_products``, and of torch's older linear algebra (``x.cholesky()``, ``b.lu_solve(LU,
pivots)``: ``tricycle.linalg.legacy``, through ``linalg.tensor_methods``):
``TorchMathMethods``, a base class of ``tricycle.tensor_torch.TorchTensorMethods``.

Each method calls the function of its name (the tensor first), importing its module on the
first call (``tensor_extra.imported``), so that importing the tensor still loads the engine's
core alone. ``x.polygamma(n)`` takes the order after the tensor, as torch's; ``real`` and
``imag`` are attributes, as torch's: a real tensor's ``real`` is itself and its ``imag`` is
refused, as torch's. The in-place forms torch has (``exp_avg_sq.addcmul_(g, g, value=1 -
beta2)``, ``x.lgamma_()``) follow ``add_``'s rule (``tricycle.tensor_inplace``, as
``tensor_extra``'s ``sin_``). Its base ``TorchMoreMethods`` holds the methods of
``tricycle.torch_arith`` and ``torch_put`` (``x.acosh()``, ``x.take(i)``, ``x.unfold(0, 3,
1)``, ``x.index_put_(...)``), the comparisons' and in-place forms torch has (``x.eq_(y)``,
``x.clip_(0, 1)``, ``x.transpose_(0, 1)``), ``mH``/``H``/``adjoint``, ``nbytes``, ``itemsize``
and torch's queries (``get_device``, ``is_signed``, ``retains_grad`` ...); and its base
``TorchRestMethods`` (``tricycle.tensor_rest``) the rest of torch's methods (``as_strided``,
``<<``, ``cauchy_``, torch's answers for sparse tensors ...).
"""

import importlib

from tricycle import backend, checks
from tricycle.graph import grad_enabled
from tricycle.tensor_extra import _reshaped, _written, imported
from tricycle.tensor_rest import TorchRestMethods


def _host_writable(tensor, name: str) -> None:
    """Refuse ``apply_``/``map_`` on a GPU tensor (torch's are CPU-only) or on one that
    requires grad while the graph is recorded (``add_``'s rule)."""
    if backend.is_cupy_array(tensor.array):
        raise RuntimeError(f"Tensor.{name}: only host tensors, as torch's is CPU-only; got one "
                           f"on {tensor.device} (move it with .cpu())")  # fmt: skip
    if tensor.requires_grad and grad_enabled():
        raise RuntimeError(f"Tensor.{name}: cannot write in place into a tensor that "
                           f"requires grad (shape {tensor.shape}); call it under "
                           "tricycle.no_grad()")  # fmt: skip


class TorchMoreMethods(TorchRestMethods):
    """torch's methods of ``tricycle.torch_arith`` and ``torch_put``, their in-place forms, the
    comparisons' and arithmetic's long names, the transposes ``mH``/``H``/``adjoint``, and
    the queries and writes of torch's ``Tensor`` (a base class of ``TorchMathMethods``)."""

    __slots__ = ()

    acosh, asinh, atanh, arccosh, arcsinh, arctanh, gcd, lcm = imported(
        "torch_arith", "acosh asinh atanh arccosh arcsinh arctanh gcd lcm"
    )
    floor_divide, positive, negative, addr, ger = imported(
        "torch_arith", "floor_divide positive negative addr ger"
    )
    greater, greater_equal, less, less_equal, not_equal = imported(
        "torch_arith", "greater greater_equal less less_equal not_equal"
    )
    take, put, index_put, index_reduce, unfold, sum_to_size = imported(
        "torch_put", "take put index_put index_reduce unfold sum_to_size"
    )
    true_divide, histogram = imported("torch_math", "true_divide histogram")
    (isclose,), (bincount,) = (
        imported("torch_functions", "isclose"),
        imported("torch_indexing", "bincount"),
    )
    cross, svd = imported("torch_functions_more", "cross svd")
    (prelu,) = imported("nn.functional", "prelu")  # F.prelu(x, weight), loaded on the call

    acosh_, asinh_, atanh_, gcd_, lcm_, floor_divide_, true_divide_, negative_ = map(
        _written, "acosh asinh atanh gcd lcm floor_divide true_divide negative".split()
    )
    arccosh_, arcsinh_, arctanh_ = acosh_, asinh_, atanh_
    put_, index_put_, index_reduce_, addr_ = map(
        _written, "put index_put index_reduce addr".split()
    )
    floor_, ceil_, round_, trunc_, sign_, reciprocal_, rsqrt_, square_ = map(
        _written, "floor ceil round trunc sign reciprocal rsqrt square".split()
    )
    pow_, clip_, tril_, triu_, cumsum_, cumprod_ = map(
        _written, "pow clip tril triu cumsum cumprod".split()
    )
    eq_, ne_, lt_, le_, gt_, ge_ = map(_written, "eq ne lt le gt ge".split())
    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_
    transpose_, swapdims_ = _reshaped("transpose_", "transpose"), _reshaped("swapdims_", "swapdims")
    swapaxes_ = swapdims_

    def multiply_(self, other):
        """torch.Tensor.multiply_: ``mul_``."""
        return self.mul_(other)

    def divide_(self, other, *, rounding_mode=None):
        """torch.Tensor.divide_: ``div_``."""
        return (
            self.div_(other)
            if rounding_mode is None
            else self.copy_(self.div(other, rounding_mode=rounding_mode))
        )

    def subtract_(self, other, *, alpha=1):
        """torch.Tensor.subtract_: ``sub_``."""
        return self.sub_(other if alpha == 1 else alpha * other)

    # ------------------------------------------------------------------ sizes and memory
    @property
    def nbytes(self) -> int:
        """torch.Tensor.nbytes: the bytes of this tensor's elements."""
        return int(self.array.nbytes)

    @property
    def itemsize(self) -> int:
        """torch.Tensor.itemsize: the bytes of one element."""
        return int(self.array.itemsize)

    def split_with_sizes(self, split_sizes, dim: int = 0):
        """torch.Tensor.split_with_sizes: ``split`` into pieces of ``split_sizes``, which must
        sum to the size of ``dim``."""
        sizes = [int(n) for n in split_sizes]
        dim_ = checks.axis("Tensor.split_with_sizes", "dim", dim, self.ndim, self.shape)
        if sum(sizes) != self.shape[dim_] or min(sizes, default=0) < 0:
            expected = f"non-negative sizes summing to {self.shape[dim_]} (dim {dim_})"
            checks.fail("Tensor.split_with_sizes", "split_sizes", expected, sizes, RuntimeError)
        starts = [sum(sizes[:k]) for k in range(len(sizes))]
        return tuple(self.narrow(dim_, start, n) for start, n in zip(starts, sizes))

    def is_same_size(self, other) -> bool:
        """torch.Tensor.is_same_size: whether ``other`` has this tensor's shape."""
        return tuple(self.shape) == tuple(other.shape)

    def is_signed(self) -> bool:
        """torch.Tensor.is_signed: whether the dtype holds negative numbers (not bool, uint8)."""
        return self.dtype.kind in "if" or self.dtype.name == "bfloat16"

    def is_inference(self) -> bool:
        """torch.Tensor.is_inference: False: ``inference_mode`` is ``no_grad`` in tricycle and
        makes ordinary tensors (torch's inference tensors cannot join a later graph)."""
        return False

    @property
    def retains_grad(self) -> bool:
        """torch.Tensor.retains_grad: whether ``retain_grad()`` was called on this op output."""
        return self.args is not None and bool(self._retain_grad)

    def get_device(self) -> int:
        """torch.Tensor.get_device: the GPU's index, or -1 on the host."""
        return -1 if self.device.type == "cpu" else int(self.device.index or 0)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
        """torch.Tensor.new_empty_strided: ``new_empty(size)``; tricycle's arrays are laid out
        contiguously, so ``stride`` is read for its length alone."""
        if len(tuple(stride)) != len(tuple(size)):
            checks.fail("Tensor.new_empty_strided", "stride", f"{len(size)} strides", stride)
        return self.new_empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)

    def resize_as_(self, other, *, memory_format=None):
        """torch.Tensor.resize_as_: ``resize_(other.shape)``."""
        return self.resize_(tuple(other.shape))

    def pin_memory(self, device=None):
        """torch.Tensor.pin_memory: a host tensor itself (numpy's memory is not page-locked:
        copies to a GPU are as fast as from any host array); a GPU tensor is refused, as
        torch's."""
        if backend.is_cupy_array(self.array):
            raise RuntimeError(f"Tensor.pin_memory: cannot pin a tensor on {self.device}: only "
                               "host tensors can be pinned")  # fmt: skip
        return self

    def is_pinned(self, device=None) -> bool:
        """torch.Tensor.is_pinned: False (``pin_memory`` pins nothing: see it)."""
        return False

    def apply_(self, callable):  # noqa: A002 - torch's names
        """torch.Tensor.apply_: ``callable`` of each element written into this tensor, on the
        host, under ``add_``'s rule (a leaf needing no gradient, or under no_grad())."""
        _host_writable(self, "apply_")
        values = [callable(v) for v in self.array.reshape(-1).tolist()]
        return self.copy_(self.new_tensor(values).reshape(self.shape))

    def map_(self, tensor, callable):  # noqa: A002 - torch's names
        """torch.Tensor.map_: ``callable(x, y)`` of each element and ``tensor``'s (broadcast
        to this tensor's shape) written into this tensor, as ``apply_``."""
        _host_writable(self, "map_")
        others = self.xp.broadcast_to(tensor.array, self.shape).reshape(-1).tolist()
        values = [callable(a, b) for a, b in zip(self.array.reshape(-1).tolist(), others)]
        return self.copy_(self.new_tensor(values).reshape(self.shape))

    # ------------------------------------------------------------------ transposes
    @property
    def mH(self):
        """torch.Tensor.mH: the last two axes swapped (a real tensor's conjugate is itself)."""
        if self.ndim < 2:
            checks.fail("Tensor.mH", "tensor", "at least 2 axes", self.shape, RuntimeError)
        return self.transpose(-2, -1)

    @property
    def H(self):
        """torch.Tensor.H: a matrix's conjugate transpose (a 0-d tensor itself), as torch's."""
        if self.ndim not in (0, 2):
            checks.fail("Tensor.H", "tensor", "a matrix (2-d) or a 0-d tensor", self.shape,
                        RuntimeError)  # fmt: skip
        return self if self.ndim == 0 else self.transpose(0, 1)

    def adjoint(self):
        """torch.Tensor.adjoint: ``mH``."""
        return self.mH


class TorchMathMethods(TorchMoreMethods):
    """The methods of this module's doc."""

    __slots__ = ()

    exp2, expm1, deg2rad, rad2deg, sinc, frac, fix, signbit, logit, frexp = imported(
        "torch_pointwise", "exp2 expm1 deg2rad rad2deg sinc frac fix signbit logit frexp"
    )
    (sgn,) = imported("complex_functions", "sgn")  # z / |z| of a complex tensor
    stft, istft = imported("spectral", "stft istft")
    angle, conj, xlogy, atan2, arctan2, hypot, logaddexp, logaddexp2, copysign = imported(
        "torch_pointwise", "angle conj xlogy atan2 arctan2 hypot logaddexp logaddexp2 copysign"
    )
    ldexp, float_power, fmax, fmin, heaviside, addcmul, addcdiv = imported(
        "torch_pointwise", "ldexp float_power fmax fmin heaviside addcmul addcdiv"
    )
    erf, erfc, erfinv, lgamma, digamma, i0, mvlgamma = imported(
        "torch_special", "erf erfc erfinv lgamma digamma i0 mvlgamma"
    )
    aminmax, cummax, cummin, logcumsumexp, diff, cov, corrcoef, renorm, dist = imported(
        "torch_statistics", "aminmax cummax cummin logcumsumexp diff cov corrcoef renorm dist"
    )
    inner, vdot, addmv, addbmm, baddbmm, trace = imported(
        "torch_products", "inner vdot addmv addbmm baddbmm trace"
    )
    cholesky, cholesky_inverse, cholesky_solve, lu, lu_solve, qr = imported(
        "linalg.tensor_methods", "cholesky cholesky_inverse cholesky_solve lu lu_solve qr"
    )
    matrix_exp, triangular_solve = imported("linalg.tensor_methods", "matrix_exp triangular_solve")
    geqrf, orgqr, ormqr = imported("linalg.householder", "geqrf orgqr ormqr")
    lstsq, solve, symeig, eig = imported("linalg.legacy", "lstsq solve symeig eig")  # removed
    narrow_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes = imported(
        "torch_copies", "narrow_copy unsafe_chunk unsafe_split unsafe_split_with_sizes"
    )
    is_conj, is_neg, resolve_conj, resolve_neg = imported(
        "torch_misc", "is_conj is_neg resolve_conj resolve_neg"
    )

    addcmul_, addcdiv_, exp2_, expm1_, frac_, fix_, sgn_, logit_, sinc_ = map(
        _written, "addcmul addcdiv exp2 expm1 frac fix sgn logit sinc".split()
    )
    deg2rad_, rad2deg_, xlogy_, atan2_, arctan2_, hypot_, copysign_, ldexp_ = map(
        _written, "deg2rad rad2deg xlogy atan2 arctan2 hypot copysign ldexp".split()
    )
    float_power_, heaviside_, erf_, erfc_, erfinv_, lgamma_, digamma_, i0_ = map(
        _written, "float_power heaviside erf erfc erfinv lgamma digamma i0".split()
    )
    polygamma_, mvlgamma_, renorm_, addmv_, addbmm_, baddbmm_ = map(
        _written, "polygamma mvlgamma renorm addmv addbmm baddbmm".split()
    )
    igamma, igammac = imported("special_more", "igamma igammac")
    (nextafter,), (hardshrink,) = (
        imported("torch_numeric", "nextafter"),
        imported("nn.functional", "hardshrink"),
    )
    igamma_, igammac_, nextafter_ = map(_written, "igamma igammac nextafter".split())

    def polygamma(self, n: int):
        """torch.Tensor.polygamma: ``tricycle.torch_special.polygamma(n, self)``."""
        return importlib.import_module("tricycle.torch_special").polygamma(n, self)

    @property
    def real(self):
        """torch.Tensor.real of a real tensor: the tensor itself."""
        return self

    @property
    def imag(self):
        """torch.Tensor.imag: refused for a real tensor, as torch's (``torch_pointwise.imag``)."""
        return importlib.import_module("tricycle.torch_pointwise").imag(self)
