"""Layers: the ``Layer`` base class and the basic layers built on it.

A layer holds parameters (Tensors that require grad) and sublayers as plain attributes; the
base class finds them by walking ``vars(self)``, so no layer re-implements ``update``,
``zero_grad``, ``to_gpu``, ``state_dict``... Forward passes call stateless ops: what backward
needs lives in the op's closures, so a layer may be called several times before one backward
(weight tying, recurrent use).

Dense is an einsum plus a bias. The fused ops come as llm.c-style pairs of array functions
written once against ``xp`` (numpy or cupy), the reference formulas:
``layer_norm_forward``/``_backward``, ``rms_norm_forward``/``_backward``,
``embedding_forward``/``_backward`` and ``dropout_forward``/``_backward``. Each Tensor op asks
``tricycle.dispatch`` once for a backend's kernels with the same signatures.
"""

from collections.abc import Callable, Iterator

import numpy as np

from tricycle import backend, checks, deferred, dispatch, random
from tricycle.backend import check_same_device
from tricycle.einsum import einsum
from tricycle.initialisers import init_normal, init_ones, init_xavier, init_zeros
from tricycle.tensor import Tensor, as_tensor, check_float
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


def dense(x: Tensor, weights: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weights + bias`` over the last axis: the einsum ``...i,ij->...j`` plus a bias.

    (..., I), (I, J), (J,) -> (..., J). The einsum's runner makes the contraction one matrix
    product, and its derivatives are einsums too; the bias add's gradient sums over rows.
    """
    check_same_device("Dense", x.array, weights.array, *(() if bias is None else (bias.array,)))
    out = einsum("...i,ij->...j", x, weights)  # (..., J)
    return out if bias is None else out + bias


class Dense(Layer):
    """A fully connected layer: ``x @ weights + bias`` over the last axis.

    In einsum terms ``...i,ij->...j`` plus a bias (``dense``: one einsum, then the add).

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


def embedding_forward(xp, weights, ids):
    """Rows of ``weights`` (V, E) picked by integer ``ids`` (...): (..., E)."""
    return xp.take(weights, ids, axis=0)


def embedding_backward(xp, dout, ids, vocab_size: int, dtype):
    """dW (V, E) of ``embedding_forward``: each row of dout (..., E) added to its id's row."""
    dweights = xp.zeros((vocab_size, dout.shape[-1]), dtype=dtype)
    xp.add.at(dweights, ids.reshape(-1), dout.reshape(-1, dout.shape[-1]))
    return dweights


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
    forward, backward = dispatch.choose(
        "embedding", (embedding_forward, embedding_backward), weights.array
    )
    out = forward(xp, weights.array, ids)  # (..., E)
    dtype = weights.dtype
    return Tensor(
        out,
        args=(weights,),
        back_fns=(lambda dout: backward(xp, dout, ids, vocab_size, dtype),),
        name="embedding",
    )


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


def layer_norm_forward(xp, x, gamma, beta, eps: float):
    """y = (x - mean) * rstd * gamma + beta over the last axis, rstd = 1 / sqrt(var + eps).

    Returns (y, mean, rstd), mean and rstd (..., 1): all backward needs besides x and gamma.
    ``beta`` may be None (no bias).
    """
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean  # (..., C)
    rstd = 1 / xp.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    y = centred * rstd * gamma
    if beta is not None:
        y += beta
    return y.astype(x.dtype, copy=False), mean, rstd


def layer_norm_backward(xp, dy, x, gamma, mean, rstd):
    """Gradients (dx, dgamma, dbeta) of ``layer_norm_forward``.

    With xhat = (x - mean) * rstd and g = dy * gamma:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma = sum(dy * xhat); dbeta = sum(dy),
    the means over the last axis, the sums over every other.
    """
    xhat = (x - mean) * rstd  # (..., C)
    g = dy * gamma
    dx = g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True)
    dx *= rstd
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(axis=rows), dy.sum(axis=rows)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise the last axis of x to zero mean and unit variance, then scale and shift."""
    args = (x, gamma) if beta is None else (x, gamma, beta)
    check_float("LayerNorm", x)
    checks.positive("layer_norm", "eps", eps)
    xp = check_same_device("LayerNorm", *(arg.array for arg in args))
    arrays = x.array, gamma.array, None if beta is None else beta.array
    forward, backward = dispatch.choose(
        "layer_norm", (layer_norm_forward, layer_norm_backward), *arrays
    )
    y, mean, rstd = forward(xp, *arrays, eps)

    def grads(dy):  # (dx, dgamma[, dbeta])
        return backward(xp, dy, x.array, gamma.array, mean, rstd)[: len(args)]

    return Tensor(y, args=args, back_fns=shared_back_fns(grads, len(args)), name="layer_norm")


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
    rstd = 1 / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    return (x * rstd * gamma).astype(x.dtype, copy=False), rstd


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """Gradients (dx, dgamma) of ``rms_norm_forward``, with g = dy * gamma and xhat = x * rstd:
    dx = rstd * (g - xhat * mean(g * xhat)); dgamma = sum(dy * xhat)."""
    xhat = x * rstd  # (..., C)
    g = dy * gamma
    dx = (g - xhat * (g * xhat).mean(axis=-1, keepdims=True)) * rstd
    return dx, (dy * xhat).sum(axis=tuple(range(x.ndim - 1)))


def rms_norm(x: Tensor, gamma: Tensor, eps: float = 1e-6) -> Tensor:
    """Scale the last axis of x to unit root-mean-square, then by gamma."""
    check_float("RMSNorm", x)
    checks.positive("rms_norm", "eps", eps)
    xp = check_same_device("RMSNorm", x.array, gamma.array)
    forward, backward = dispatch.choose(
        "rms_norm", (rms_norm_forward, rms_norm_backward), x.array, gamma.array
    )
    y, rstd = forward(xp, x.array, gamma.array, eps)
    back_fns = shared_back_fns(lambda dy: backward(xp, dy, x.array, gamma.array, rstd), 2)
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


def dropout_forward(xp, x, probability: float, rng):
    """x * mask, each mask element 0 with ``probability`` and 1 / (1 - probability) otherwise
    (inverted dropout: E[output] = x), drawn from ``rng`` (a numpy Generator; None: a fresh
    one). Returns (y, mask): the mask is what backward needs."""
    # random generators make only float32/64 numbers: draw in float32 for 16-bit arrays
    draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    mask = (rng or np.random.default_rng()).random(x.shape, dtype=draw)  # uniform in [0, 1)
    np.greater_equal(mask, probability, out=mask)  # keep with probability 1 - p
    mask *= 1.0 / (1.0 - probability)
    mask = xp.asarray(mask.astype(x.dtype, copy=False))
    return x * mask, mask


def dropout_backward(xp, dy, probability: float, mask):
    """dx = dy * mask, the forward's mask."""
    return dy * mask


def dropout(x: Tensor, probability: float, rng: np.random.Generator | None = None) -> Tensor:
    """Zero each element with ``probability`` and scale the rest by 1 / (1 - probability).

    The mask comes from ``rng`` (a numpy Generator; a fresh one if None). A backend may draw
    it its own way from ``rng``: on a GPU from a seed, never stored (``tricycle.dropout_mask``).
    """
    checks.probability("dropout", "probability", probability)
    xp = x.xp
    forward, backward = dispatch.choose("dropout", (dropout_forward, dropout_backward), x.array)
    out, saved = forward(xp, x.array, probability, rng)
    return unary_op(x, out, lambda dout: backward(xp, dout, probability, saved), "dropout")


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

    def step_seed(self, like=None):
        """``draw_seed`` for one step's fused op on the device of the array ``like``: an int,
        or what that device's backend makes of it ("step_seed": on a GPU, while a CUDA graph
        is captured, a device array that each replay refills with a fresh draw)."""
        return dispatch.choose("step_seed", lambda draw: draw(), like)(self.draw_seed)

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
