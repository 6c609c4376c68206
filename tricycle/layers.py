"""Layers: the ``Layer`` base class and the basic layers built on it.

A layer holds parameters (Tensors that require grad) and sublayers as plain attributes; the
base class finds them by walking ``vars(self)``, so no layer re-implements ``update``,
``zero_grad``, ``to_gpu``, ``state_dict``... Forward passes call stateless ops: what backward
needs lives in the op's closures, so a layer may be called several times before one backward
(weight tying, recurrent use).

The fused ops here come as llm.c-style pairs of pure array functions written once against
``xp`` (numpy or cupy): ``layer_norm_forward``/``layer_norm_backward`` and
``rms_norm_forward``/``rms_norm_backward``, wrapped as Tensor ops by ``layer_norm`` and
``rms_norm``. CUDA kernels with the same signatures may replace the array functions on cupy.
"""

from collections.abc import Callable, Iterator

import numpy as np

from tricycle import backend, checks, deferred, random, threads
from tricycle.backend import check_same_device
from tricycle.backends import cuda as kernels
from tricycle.backends.cuda import capture
from tricycle.blocking import (
    as_rows,
    block_index,
    blocked_ufunc,
    for_each_block,
    row_blocks,
    row_sum,
)
from tricycle.dropout_mask import keep_mask
from tricycle.initialisers import init_normal, init_ones, init_xavier, init_zeros
from tricycle.tensor import Tensor, as_tensor, check_float, grad_enabled
from tricycle.unary import unary_op

# ====================================================================== the Layer base


class Layer:
    """Base class of every layer: subclasses implement ``forward``; calling a layer runs it.

    Discovery: each attribute of a layer that is a Tensor with ``requires_grad`` is a
    parameter; a Tensor without it is a buffer (moved between devices and saved in
    ``state_dict``, never trained: batch norm's running statistics);
    a Layer, or a list/tuple/dict holding Layers (or Tensors), is a sublayer. Names are
    dotted attribute paths (``blocks.0.attention.weights``) in attribute order. A Tensor or
    Layer reachable twice (weight tying) counts once, under the first name it is reached by.
    """

    training = True  # a class default, so subclasses need not call Layer.__init__

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ discovery
    def _members(self) -> Iterator[tuple[str, object]]:
        """(attribute path, value) for the Tensors and Layers held directly by this layer."""
        for attr, value in vars(self).items():
            if isinstance(value, (Tensor, Layer)):
                yield attr, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, (Tensor, Layer)):
                        yield f"{attr}.{i}", item
            elif isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, (Tensor, Layer)):
                        yield f"{attr}.{key}", item

    def _walk(self) -> tuple[list[tuple[str, "Layer"]], list[tuple[str, Tensor]]]:
        """(named layers, named tensors) in one depth-first pass: this layer (named "") and
        every sublayer, each once; then each layer's Tensors, each once, in that order."""
        layers, tensors, seen = [], [], set()
        stack = [("", self)]
        while stack:
            name, layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            layers.append((name, layer))
            children = []
            for attr, value in layer._members():
                path = f"{name}.{attr}" if name else attr
                if isinstance(value, Layer):
                    children.append((path, value))
                elif id(value) not in seen:
                    seen.add(id(value))
                    tensors.append((path, value))
            stack.extend(reversed(children))  # pop in attribute order
        return layers, tensors

    def named_layers(self) -> list[tuple[str, "Layer"]]:
        """This layer (named "") and every sublayer, depth first, each once."""
        return self._walk()[0]

    def layers(self) -> list["Layer"]:
        """This layer and every sublayer, depth first, each once."""
        return [layer for _, layer in self.named_layers()]

    def named_tensors(self) -> list[tuple[str, Tensor]]:
        """Every Tensor attribute (parameters and buffers), each once, in a stable order."""
        return self._walk()[1]

    def named_parameters(self) -> list[tuple[str, Tensor]]:
        """(dotted name, Tensor) for every parameter (a Tensor that requires grad), each once."""
        return [(name, t) for name, t in self.named_tensors() if t.requires_grad]

    def parameters(self) -> list[Tensor]:
        """Every parameter, each once, in the order of ``named_parameters``."""
        return [t for _, t in self.named_parameters()]

    def num_parameters(self) -> int:
        """The number of trainable scalars."""
        return sum(t.size for t in self.parameters())

    # ------------------------------------------------------------------ training
    def update(self, optimiser) -> "Layer":
        """Apply ``optimiser`` to every parameter that has a gradient, then zero the grads."""
        optimiser.update(self.named_parameters())
        self.zero_grad()
        return self

    def zero_grad(self) -> "Layer":
        """Forget every parameter's gradient."""
        for t in self.parameters():
            t.grad = None
        return self

    def train(self) -> "Layer":
        """Training mode for this layer and its sublayers (dropout active)."""
        for layer in self.layers():
            layer.training = True
        return self

    def eval(self) -> "Layer":
        """Evaluation mode for this layer and its sublayers (dropout off)."""
        for layer in self.layers():
            layer.training = False
        return self

    # ------------------------------------------------------------------ devices
    @checks.arguments(device=checks.non_negative_int)
    def to_gpu(self, device: int = 0) -> "Layer":
        """Move every parameter and buffer to GPU ``device`` in place; returns self."""
        for _, t in self.named_tensors():
            t.to_gpu(device)
        return self

    def from_gpu(self) -> "Layer":
        """Move every parameter and buffer to host memory in place; returns self."""
        for _, t in self.named_tensors():
            t.from_gpu()
        return self

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, np.ndarray]:
        """{dotted name: host (numpy) copy of the parameter or buffer}."""
        return {name: np.array(t.numpy(), copy=True) for name, t in self.named_tensors()}

    @checks.arguments(strict=checks.boolean)
    def load_state_dict(self, state: dict, strict: bool = True) -> tuple[list[str], list[str]]:
        """Copy ``state`` into the parameters and buffers in place (on their current device).

        With ``strict`` every parameter and buffer must be present and no other key may be;
        otherwise only the keys both sides share are loaded. Shapes must always match, values
        must be numeric and finite in the tensor's dtype (a float64 value too large for
        float32 is an error). Every value is checked (and converted) before any is written: a
        bad state changes nothing. Returns the (missing, unexpected) key lists.
        """
        owner = f"load_state_dict of {type(self).__name__}"
        params = dict(self.named_tensors())
        missing = [name for name in params if name not in state]
        unexpected = [name for name in state if name not in params]
        if strict and (missing or unexpected):
            raise ValueError(f"{owner}: missing keys {missing}, unexpected keys {unexpected}")
        values = {name: _host_value(state[name]) for name in params if name in state}
        for name, value in values.items():
            if value.dtype.kind not in "biuf" and value.dtype != params[name].dtype:
                raise TypeError(f"{owner}: {name} holds dtype {value.dtype}, not numbers")
        mismatched = [
            f"{name}: checkpoint {value.shape} vs model {params[name].shape}"
            for name, value in values.items()
            if value.shape != params[name].shape
        ]
        if mismatched:
            raise ValueError(f"{owner}: shape mismatch for " + "; ".join(mismatched))
        converted = {}
        for name, value in values.items():
            t = params[name]
            with np.errstate(over="ignore", invalid="ignore"):
                cast = value.astype(t.dtype)
            if not np.isfinite(cast).all():
                if not np.isfinite(value).all():
                    raise ValueError(f"{owner}: {name} has non-finite values (NaN or inf)")
                raise ValueError(
                    f"{owner}: {name} has values too large for {t.dtype} (largest magnitude "
                    f"{np.abs(value).max():.4g})"
                )
            if t.on_gpu:
                cast = backend.to_device_array(cast, t.array.device.id)
            converted[name] = cast
        for name, value in converted.items():  # nothing below can fail: all or nothing
            params[name].array[...] = value
        return missing, unexpected

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """Arguments shown between the parentheses in the repr; override in subclasses."""
        return ""

    def __repr__(self) -> str:
        n_params = self.num_parameters()
        count = f"  # {n_params:,} parameters" if n_params else ""
        head = f"{type(self).__name__}({self.extra_repr()}"
        children = [(name, v) for name, v in self._members() if isinstance(v, Layer)]
        if not children:
            return f"{head}){count}"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + f"\n){count}"


def _host_value(value) -> np.ndarray:
    """A state-dict value (numpy or cupy array, Tensor, nested list) as a numpy array."""
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(backend.to_host_array(value))


def shared_back_fns(backward: Callable, n: int) -> tuple[Callable, ...]:
    """``n`` back_fns that share one call of ``backward(dout) -> (d_0, ..., d_{n-1})``.

    A fused op computes all its input gradients together; the engine asks for them one input
    at a time with the same ``dout``, so the result is kept for the current ``dout`` only.
    """
    memo: dict = {}

    def grad_of(i: int):
        def back_fn(dout):
            if memo.get("dout") is not dout:
                memo["dout"], memo["grads"] = dout, backward(dout)
            return memo["grads"][i]

        return back_fn

    return tuple(grad_of(i) for i in range(n))


def parameter(values, name: str | None = None) -> Tensor:
    """A trainable float32 Tensor from an initialiser's output (numpy or cupy)."""
    values = values if backend.is_cupy_array(values) else np.asarray(values)
    return Tensor(values, requires_grad=True, name=name, dtype=backend.DEFAULT_FLOAT)


# ====================================================================== Dense


def dense_forward(xp, x, weights, bias=None):
    """The einsum ``...i,ij->...j`` plus a bias: (..., I), (I, J), (J,) -> (..., J).

    The leading axes are flattened into rows, so the contraction is one matmul
    ``(N, I) @ (I, J)`` (what ``Einsum("...i,ij->...j")`` plans too), and the bias is added in
    place to the product, which is a fresh array: no second (N, J) array.
    """
    x2 = as_rows(x)  # (N, I); a 1-D x is one row
    if kernels.gemm_enabled(x2, weights):
        out = kernels.gemm(x2, weights)
    else:
        out = threads.matmul(xp, x2, weights)  # one thread for a small product
    if bias is not None:
        if kernels.add_enabled(out, bias):
            kernels.add_kernel(out, bias, out=out)  # in place, one vectorised kernel
        elif xp.result_type(out, bias) == out.dtype:
            blocked_ufunc(xp, xp.add, out, bias, out=out)  # over the threads
        else:  # a wider bias (float64 with float32 inputs) promotes the output, as x @ W + b
            out = out + bias
    return out.reshape(x.shape[:-1] + (weights.shape[1],))


def dense_backward_input(xp, dout, weights, x_shape):
    """d(x) of ``...i,ij->...j``: the einsum ``...j,ij->...i``, i.e. ``dout @ W.T``."""
    dout2 = as_rows(dout)  # (N, J)
    if kernels.gemm_enabled(dout2, weights):  # cuBLAS directly (tricycle/backends/cuda/gemm.py)
        return kernels.gemm(dout2, weights, transpose_b=True).reshape(x_shape)
    return (dout2 @ weights.T).reshape(x_shape)


def dense_backward_weights(xp, dout, x):
    """d(W) of ``...i,ij->...j``: the einsum ``...i,...j->ij``, i.e. ``x.T @ dout`` over rows."""
    x2, dout2 = as_rows(x), as_rows(dout)  # (N, I), (N, J)
    if kernels.gemm_enabled(x2, dout2):
        return kernels.gemm(x2, dout2, transpose_a=True)
    return x2.T @ dout2


def dense_backward_bias(xp, dout):
    """d(bias): dout summed over every leading axis, as a ones-vector matmul (BLAS runs it
    about twice as fast as numpy's column reduction)."""
    dout2 = as_rows(dout)  # (N, J)
    if kernels.gemm_enabled(dout2, dout2):
        return kernels.column_sums(dout2)
    return xp.ones(dout2.shape[0], dtype=dout2.dtype) @ dout2


def dense_backward(xp, dout, x, weights, x_shape, needs=(True, True, True)):
    """Gradients (dx, dW, db) of dense_forward; each is None where ``needs`` (for x, the
    weights, the bias) says nobody wants it.

    dx = dout @ W.T and dW = x.T @ dout are independent products of the same size (N * I * J
    multiply-adds each), handed to ``threads.run_concurrently``, which decides whether they run
    at once (each on a core of its own with single-threaded BLAS: on 2 threads a training step
    measured 2-4% faster, benchmarks/README.md) or one after the other on every thread.
    """
    want_x, want_weights, want_bias = needs

    def input_grad():
        return dense_backward_input(xp, dout, weights, x_shape) if want_x else None

    def parameter_grads():
        dweights = dense_backward_weights(xp, dout, x) if want_weights else None
        return dweights, dense_backward_bias(xp, dout) if want_bias else None

    if xp is np and want_x and want_weights:
        dx, (dweights, dbias) = threads.run_concurrently(input_grad, parameter_grads)
    else:
        dx, (dweights, dbias) = input_grad(), parameter_grads()
    return dx, dweights, dbias


def dense(x: Tensor, weights: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weights + bias`` over the last axis, as one node of the graph.

    Mathematically ``Einsum("...i,ij->...j")(x, weights) + bias`` (with the einsum's
    derivatives by index swap, written out as matmuls), fused so that the bias costs neither
    a second output array nor a broadcast-and-reduce in backward.
    """
    arrays = (x.array, weights.array) + (() if bias is None else (bias.array,))
    xp = check_same_device("Dense", *arrays)
    out = dense_forward(xp, x.array, weights.array, None if bias is None else bias.array)
    x_shape = x.shape
    args = (x, weights) if bias is None else (x, weights, bias)

    def backward(dout):
        needs = (x.requires_grad, weights.requires_grad, bias is not None and bias.requires_grad)
        dx, dweights, dbias = dense_backward(xp, dout, x.array, weights.array, x_shape, needs)
        return (dx, dweights) if bias is None else (dx, dweights, dbias)

    return Tensor(
        out,
        args=args,
        back_fns=shared_back_fns(backward, len(args)),
        name="dense",
    )


class Dense(Layer):
    """A fully connected layer: ``x @ weights + bias`` over the last axis.

    In einsum terms ``...i,ij->...j`` plus a bias, run as one fused op (``dense``).

    Args:
        from_size, to_size: input and output widths; ``weights`` has shape (from_size, to_size).
        bias: add a learnt bias (zeros at first) of shape (to_size,).
        initialiser: shape -> array for the weights (default Glorot uniform, drawn from
            tricycle's generator: see ``tricycle.manual_seed``).
        name: the name of the output tensors (default "dense").
    """

    @checks.arguments(
        from_size=checks.positive_int,
        to_size=checks.positive_int,
        bias=checks.boolean,
        initialiser=checks.optional(checks.function),
        name=checks.optional(checks.text),
    )
    def __init__(
        self,
        from_size: int,
        to_size: int,
        bias: bool = True,
        initialiser: Callable | None = None,
        name: str | None = None,
    ):
        self.from_size, self.to_size = from_size, to_size
        self.name = name
        self.weights = parameter((initialiser or init_xavier)((from_size, to_size)), "weights")
        self.bias = parameter(init_zeros((to_size,)), "bias") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        x = self.checked_input(x)
        out = dense(x, self.weights, self.bias)  # (..., to_size)
        out.name = self.name or "dense"
        return out

    def checked_input(self, x) -> Tensor:
        """``x`` as a Tensor whose last axis has ``from_size`` elements, or a ValueError."""
        x = as_tensor(x)
        if x.ndim == 0 or x.shape[-1] != self.from_size:
            raise ValueError(
                f"Dense({self.from_size} -> {self.to_size}): expected an input whose last axis "
                f"has size {self.from_size}, got shape {x.shape}"
            )
        return x

    def extra_repr(self) -> str:
        return f"from_size={self.from_size}, to_size={self.to_size}, bias={self.bias is not None}"


# ====================================================================== Embedding


def embedding(ids, weights: Tensor, check_range: bool = True) -> Tensor:
    """Rows of ``weights`` (V, E) picked by integer ``ids`` of any shape: (...) -> (..., E).

    Ids outside [0, V) raise IndexError (never wrap): at once on the CPU; on a GPU at the
    next read-back, without stopping the host here (``tricycle.deferred``).
    ``check_range=False`` skips the check for ids valid by construction (positions from
    arange). The gradient scatters-adds into the used rows.
    """
    xp = weights.xp
    ids = ids.array if isinstance(ids, Tensor) else ids
    if not (isinstance(ids, np.ndarray) or backend.is_cupy_array(ids)):
        ids = xp.asarray(ids)
    check_same_device("Embedding", ids, weights.array)
    if ids.dtype.kind not in "iu":  # integer dtypes (np.issubdtype is ~10x slower)
        raise TypeError(
            f"Embedding: ids must be integers, got dtype {ids.dtype} with shape {ids.shape}"
        )
    vocab_size = weights.shape[0]
    if check_range:
        deferred.check_range(
            ids, vocab_size, op="Embedding", context=f"for a vocabulary of size {vocab_size}"
        )
    out = xp.take(weights.array, ids, axis=0)  # (..., E)

    def back_fn(dout):  # (..., E) -> (V, E): scatter-add each row of dout to its id's row
        if kernels.enabled(dout):  # float32 atomics scatter-add (kernels/embedding.cu)
            return kernels.embedding_backward(xp, dout, ids, vocab_size, weights.dtype)
        dweights = xp.zeros_like(weights.array, dtype=dout.dtype)
        width = weights.shape[1]
        index_type = xp.int32 if dweights.size < 2**31 else xp.int64
        # flat positions id * E + j: numpy's add.at is much faster on 1-D indices than on rows
        positions = ids.reshape(-1, 1).astype(index_type) * width  # (N, 1)
        positions = positions + xp.arange(width, dtype=index_type)  # (N, E)
        xp.add.at(dweights.reshape(-1), positions.reshape(-1), dout.reshape(-1))
        return dweights

    return Tensor(out, args=(weights,), back_fns=(back_fn,), name="embedding")


class Embedding(Layer):
    """A lookup table of ``from_size`` vectors of size ``to_size``: ids (...) -> (..., to_size).

    ``weights`` (from_size, to_size) starts as N(0, 0.02^2) unless ``initialiser`` is given.
    """

    @checks.arguments(
        from_size=checks.positive_int,
        to_size=checks.positive_int,
        initialiser=checks.optional(checks.function),
    )
    def __init__(self, from_size: int, to_size: int, initialiser: Callable | None = None):
        self.from_size, self.to_size = from_size, to_size
        self.weights = parameter((initialiser or init_normal)((from_size, to_size)), "weights")

    def forward(self, ids) -> Tensor:
        return embedding(ids, self.weights)

    def extra_repr(self) -> str:
        return f"from_size={self.from_size}, to_size={self.to_size}"


# ====================================================================== LayerNorm / RMSNorm


def layer_norm_forward(xp, x, gamma, beta, eps: float, keep_xhat: bool = False):
    """y = (x - mean) * rstd * gamma + beta over the last axis.

    Returns (y, mean, rstd) with mean and rstd of shape (..., 1): all backward needs besides
    x and gamma. ``beta`` may be None (no bias). With ``keep_xhat`` also returns xhat =
    (x - mean) * rstd, which the forward computes anyway: given to the backward, it saves two
    passes there for one more array kept. The CUDA kernel returns None for it (its backward
    recomputes xhat for free).
    """
    if kernels.enabled(x, gamma):  # one CUDA kernel on cupy (tricycle/backends/cuda/norm.cu)
        y, mean, rstd = kernels.layer_norm_forward(xp, x, gamma, beta, eps)
        return (y, mean, rstd, None) if keep_xhat else (y, mean, rstd)
    x2 = as_rows(x)  # (N, E)
    y = xp.empty_like(x2)
    xhat = xp.empty_like(x2) if keep_xhat else y  # without it, y holds xhat until scaled
    mean = xp.empty((x2.shape[0], 1), dtype=x.dtype)  # (N, 1)
    rstd = xp.empty_like(mean)

    def block(rows):
        xb, hb = x2[rows], xhat[rows]
        mean[rows] = row_sum(xp, xb, 1.0 / x2.shape[1])
        xp.subtract(xb, mean[rows], out=hb)
        var = _row_dot(xp, hb, hb)  # (b, 1) without a (b, E) temporary
        var *= 1.0 / x2.shape[1]
        var += eps
        xp.sqrt(var, out=var)
        xp.reciprocal(var, out=rstd[rows])
        hb *= rstd[rows]
        yb = xp.multiply(hb, gamma, out=y[rows])
        if beta is not None:
            yb += beta

    for_each_block(xp, *x2.shape, block)
    lead = x.shape[:-1] + (1,)
    out = y.reshape(x.shape), mean.reshape(lead), rstd.reshape(lead)
    return (*out, xhat.reshape(x.shape)) if keep_xhat else out


def layer_norm_backward(xp, dy, x, gamma, mean, rstd, xhat=None):
    """Gradients (dx, dgamma, dbeta) of layer_norm_forward, with xhat = (x - mean) * rstd
    recomputed from x unless the forward kept it (``keep_xhat``).

    With g = dy * gamma:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma = sum(dy * xhat); dbeta = sum(dy).
    """
    if kernels.enabled(dy, x, gamma):
        return kernels.layer_norm_backward(xp, dy, x, gamma, mean, rstd)
    x2, dy2 = as_rows(x), as_rows(dy)  # (N, E)
    xhat2 = None if xhat is None else as_rows(xhat)
    mean2, rstd2 = mean.reshape(-1, 1), rstd.reshape(-1, 1)  # (N, 1)
    n_rows, n = x2.shape
    dx = xp.empty_like(x2)
    n_blocks = len(row_blocks(xp, n_rows, n))
    dgamma = xp.empty((n_blocks, n), dtype=dx.dtype)  # per-block partial sums
    dbeta = xp.empty_like(dgamma)

    def block(rows):
        k = block_index(rows)
        dyb, dxb = dy2[rows], dx[rows]
        if xhat2 is None:
            hb = x2[rows] - mean2[rows]  # (b, E)
            hb *= rstd2[rows]
        else:
            hb = xhat2[rows]
        dbeta[k] = xp.ones(dyb.shape[0], dtype=dyb.dtype) @ dyb  # column sums by BLAS
        dgamma[k] = _column_dot(xp, dyb, hb)
        xp.multiply(dyb, gamma, out=dxb)  # g
        mean_g = row_sum(xp, dxb, 1.0 / n)  # (b, 1)
        mean_gx = _row_dot(xp, dxb, hb)  # (b, 1)
        mean_gx *= 1.0 / n
        dxb -= mean_g
        if xhat2 is None:  # this block's own temporary: scale it in place
            hb *= mean_gx
        else:  # the kept xhat: a backward with retain_graph may need it again
            hb = hb * mean_gx
        dxb -= hb
        dxb *= rstd2[rows]

    for_each_block(xp, n_rows, n, block)
    return dx.reshape(x.shape), dgamma.sum(axis=0), dbeta.sum(axis=0)


def _row_dot(xp, a, b):
    """Row-wise dot products: (N, E), (N, E) -> (N, 1)."""
    return xp.einsum("ni,ni->n", a, b)[:, None]


def _column_dot(xp, a, b):
    """Column-wise dot products: (N, E), (N, E) -> (E,)."""
    return xp.einsum("ni,ni->i", a, b)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise the last axis of x to zero mean and unit variance, then scale and shift."""
    args = (x, gamma) if beta is None else (x, gamma, beta)
    check_float("LayerNorm", x)
    checks.positive("layer_norm", "eps", eps)
    xp = check_same_device("LayerNorm", *(arg.array for arg in args))
    arrays = x.array, gamma.array, None if beta is None else beta.array
    if grad_enabled() and any(arg.requires_grad for arg in args):  # xhat only for a backward
        y, mean, rstd, xhat = layer_norm_forward(xp, *arrays, eps, keep_xhat=True)
    else:
        (y, mean, rstd), xhat = layer_norm_forward(xp, *arrays, eps), None
    back_fns = shared_back_fns(
        lambda dy: layer_norm_backward(xp, dy, x.array, gamma.array, mean, rstd, xhat), len(args)
    )
    return Tensor(y, args=args, back_fns=back_fns, name="layer_norm")


class LayerNorm(Layer):
    """Layer normalisation over the last axis: ``gamma`` ones, ``beta`` zeros, eps in the sqrt."""

    @checks.arguments(embedding_dim=checks.positive_int, eps=checks.positive, bias=checks.boolean)
    def __init__(self, embedding_dim: int, eps: float = 1e-5, bias: bool = True):
        self.embedding_dim, self.eps = embedding_dim, eps
        self.gamma = parameter(init_ones((embedding_dim,)), "gamma")
        self.beta = parameter(init_zeros((embedding_dim,)), "beta") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        _check_width("LayerNorm", x, self.embedding_dim)
        return layer_norm(x, self.gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        return f"{self.embedding_dim}, eps={self.eps}, bias={self.beta is not None}"


def rms_norm_forward(xp, x, gamma, eps: float):
    """y = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) + eps); returns (y, rstd (..., 1))."""
    if kernels.enabled(x, gamma):
        return kernels.rms_norm_forward(xp, x, gamma, eps)
    x2 = as_rows(x)  # (N, E)
    y = xp.empty_like(x2)
    rstd = xp.empty((x2.shape[0], 1), dtype=x.dtype)  # (N, 1)

    def block(rows):
        xb, yb = x2[rows], y[rows]
        ms = _row_dot(xp, xb, xb)  # (b, 1)
        ms *= 1.0 / x2.shape[1]
        ms += eps
        xp.sqrt(ms, out=ms)
        xp.reciprocal(ms, out=rstd[rows])
        xp.multiply(xb, rstd[rows], out=yb)
        yb *= gamma

    for_each_block(xp, *x2.shape, block)
    return y.reshape(x.shape), rstd.reshape(x.shape[:-1] + (1,))


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """Gradients (dx, dgamma) of rms_norm_forward, with g = dy * gamma and xhat = x * rstd:
    dx = rstd * (g - xhat * mean(g * xhat)); dgamma = sum(dy * xhat)."""
    if kernels.enabled(dy, x, gamma):
        return kernels.rms_norm_backward(xp, dy, x, gamma, rstd)
    x2, dy2, rstd2 = as_rows(x), as_rows(dy), rstd.reshape(-1, 1)
    n_rows, n = x2.shape
    dx = xp.empty_like(x2)
    dgamma = xp.empty((len(row_blocks(xp, n_rows, n)), n), dtype=dx.dtype)

    def block(rows):
        dyb, dxb = dy2[rows], dx[rows]
        xhat = x2[rows] * rstd2[rows]  # (b, E)
        dgamma[block_index(rows)] = _column_dot(xp, dyb, xhat)
        xp.multiply(dyb, gamma, out=dxb)  # g
        mean_gx = _row_dot(xp, dxb, xhat)  # (b, 1)
        mean_gx *= 1.0 / n
        xhat *= mean_gx
        dxb -= xhat
        dxb *= rstd2[rows]

    for_each_block(xp, n_rows, n, block)
    return dx.reshape(x.shape), dgamma.sum(axis=0)


def rms_norm(x: Tensor, gamma: Tensor, eps: float = 1e-6) -> Tensor:
    """Scale the last axis of x to unit root-mean-square, then by gamma."""
    check_float("RMSNorm", x)
    checks.positive("rms_norm", "eps", eps)
    xp = check_same_device("RMSNorm", x.array, gamma.array)
    y, rstd = rms_norm_forward(xp, x.array, gamma.array, eps)
    back_fns = shared_back_fns(lambda dy: rms_norm_backward(xp, dy, x.array, gamma.array, rstd), 2)
    return Tensor(y, args=(x, gamma), back_fns=back_fns, name="rms_norm")


class RMSNorm(Layer):
    """Root-mean-square normalisation over the last axis with a learnt gain ``gamma``."""

    @checks.arguments(embedding_dim=checks.positive_int, eps=checks.positive)
    def __init__(self, embedding_dim: int, eps: float = 1e-6):
        self.embedding_dim, self.eps = embedding_dim, eps
        self.gamma = parameter(init_ones((embedding_dim,)), "gamma")

    def forward(self, x: Tensor) -> Tensor:
        _check_width("RMSNorm", x, self.embedding_dim)
        return rms_norm(x, self.gamma, self.eps)

    def extra_repr(self) -> str:
        return f"{self.embedding_dim}, eps={self.eps}"


def _check_width(op: str, x: Tensor, width: int) -> None:
    if x.ndim == 0 or x.shape[-1] != width:
        raise ValueError(f"{op}({width}): expected last axis of size {width}, got shape {x.shape}")


# ====================================================================== Dropout


def dropout(x: Tensor, probability: float, rng: np.random.Generator | None = None) -> Tensor:
    """Zero each element with ``probability`` and scale the rest by 1 / (1 - probability).

    On numpy the mask comes from ``rng`` (a numpy Generator; a fresh one if None). On cupy it
    is the counter-based mask of ``tricycle.dropout_mask`` (rows: the leading axes, keys: the
    last), from a seed drawn from ``rng`` (tricycle's generator if None): one kernel, never
    stored, and while a CUDA graph is captured the seed lives in device memory and each
    replay draws a new one (``capture.step_seed``).
    """
    checks.probability("dropout", "probability", probability)
    xp = x.xp
    if x.on_gpu:
        draw = random.draw_seed if rng is None else lambda: int(rng.integers(2**32))
        seed = capture.step_seed(draw)
        if kernels.dropout_enabled(x.array):
            out = kernels.dropout_kernel(x.array, probability, seed)
            return unary_op(x, out, lambda dout: _dropout_again(dout, probability, seed),
                            "dropout")  # fmt: skip
        cols = x.shape[-1] if x.ndim else 1
        rows, keys = xp.arange(x.size // max(cols, 1))[:, None], xp.arange(cols)[None, :]
        mask = keep_mask(xp, seed, probability, rows, keys, x.dtype).reshape(x.shape)
    else:
        # random generators make only float32/64 numbers: draw in float32 for 16-bit arrays
        draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
        mask = (rng or np.random.default_rng()).random(x.shape, dtype=draw)
        xp.greater_equal(mask, probability, out=mask)  # keep with probability 1 - p
        mask *= 1.0 / (1.0 - probability)  # inverted dropout: E[output] = x
        mask = mask.astype(x.dtype, copy=False)
    return unary_op(x, x.array * mask, lambda dout: dout * mask, "dropout")


def _dropout_again(dout, probability: float, seed):
    """The backward of the dropout kernel: the same mask (the same seed) on the gradient."""
    dout = dout if dout.flags.c_contiguous else backend.cupy().ascontiguousarray(dout)
    return kernels.dropout_kernel(dout, probability, seed)


class Dropout(Layer):
    """Inverted dropout; the identity in eval mode or when ``probability`` is 0.

    Args:
        probability: the chance of zeroing each element, in [0, 1).
        seed: seeds this layer's numpy generator; by default it is drawn from tricycle's
            generator, so ``tricycle.manual_seed`` makes training reproducible.
    """

    @checks.arguments(probability=checks.probability, seed=checks.seed)
    def __init__(self, probability: float, seed: int | None = None):
        self.probability = probability
        self.rng = np.random.default_rng(random.draw_seed() if seed is None else seed)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.probability == 0:
            return x
        return dropout(x, self.probability, self.rng)

    def draw_seed(self) -> int:
        """A 32-bit seed from this layer's generator, for a fused op that draws its own mask
        (attention dropout): it then resumes and reproduces like this layer's own masks."""
        return int(self.rng.integers(2**32))

    def step_seed(self):
        """``draw_seed`` for one step's fused op: an int, or while a CUDA graph is captured
        a device array that each replay refills with a fresh draw (``capture.step_seed``)."""
        return capture.step_seed(self.draw_seed)

    def extra_repr(self) -> str:
        return f"probability={self.probability}"


# ====================================================================== Sequential


class Sequential(Layer):
    """Apply layers (or any callables) one after another: ``Sequential(a, b)(x) == b(a(x))``."""

    def __init__(self, *layers):
        for i, layer in enumerate(layers):
            checks.function("Sequential", f"layers[{i}]", layer)
        self.sequence = list(layers)

    def forward(self, x):
        for layer in self.sequence:
            x = layer(x)
        return x

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)

    def __iter__(self):
        return iter(self.sequence)
