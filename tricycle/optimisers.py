"""Optimisers: StochasticGradientDescent, Adam, AdamW; and clipping by global gradient norm.

Usage, as in the README::

    optimiser = AdamW(learning_rate=3e-4, weight_decay=0.1)
    for step in range(n_steps):
        optimiser.step()              # start of an iteration: advances step_count
        loss = loss_fn(y, model(x))
        loss.backward()
        model.update(optimiser)       # = optimiser.update(model.named_parameters()); zero grads

``optimiser.update(parameters)`` takes a Layer, (name, Tensor) pairs or bare Tensors (named by
position) and updates every parameter that has a gradient, in place on ``param.array``: the
Tensor objects (and any weight tying) survive. State (momentum, Adam moments, per-parameter
step count for bias correction, as in torch.optim) is keyed by the parameter's dotted name, so
``state_dict()`` is stable across runs and devices. ``learning_rate`` is an attribute that
schedules may set before each update; ``step_count`` counts ``step()`` calls for them. Every
setting (learning rate, weight decay, betas, ...) is checked whenever it is set, in the
constructor or later: a NaN learning rate raises at once instead of ruining the weights.
"""

from collections.abc import Callable, Iterable

import numpy as np

from tricycle import backend, checks
from tricycle.backends import cuda as kernels
from tricycle.backends.cuda.optimiser import adam_corrections, adam_state
from tricycle.blocking import for_each_block, row_blocks
from tricycle.tensor import Tensor
from tricycle.threads import run_blocks


def named_parameters(parameters) -> list[tuple[str, Tensor]]:
    """(name, Tensor) pairs from a Layer, pairs, or bare Tensors (named by position)."""
    if hasattr(parameters, "named_parameters"):
        return list(parameters.named_parameters())
    named = []
    for i, item in enumerate(parameters):
        if isinstance(item, Tensor):
            named.append((str(i), item))
        else:
            name, tensor = item
            named.append((name, tensor))
    return named


def _like(array, param_array):
    """``array`` moved to the device of ``param_array`` (state loaded on another device)."""
    if backend.is_cupy_array(param_array):
        return backend.to_device_array(array, param_array.device.id)
    return backend.to_host_array(array)


def check_betas(owner: str, name: str, value):
    """Adam's (beta1, beta2): two numbers in [0, 1)."""
    if not isinstance(value, tuple | list):
        checks.fail(owner, name, "two numbers in [0, 1)", value, TypeError)
    if len(value) != 2:
        checks.fail(owner, name, "two numbers in [0, 1)", value)
    for beta in value:
        if not checks.is_real(beta):
            checks.fail(owner, name, "two numbers in [0, 1)", value, TypeError)
        if not 0 <= beta < 1:
            checks.fail(owner, name, "two numbers in [0, 1)", value)
    return tuple(value)


class Setting:
    """An optimiser setting checked whenever it is set, in the constructor or later, with an
    error naming the optimiser, the setting and the value: ``check(owner, name, value)`` (see
    ``tricycle.checks``) returns the value to keep."""

    def __init__(self, check: Callable[[str, str, object], object]):
        self.check = check

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, optimiser, owner=None):
        return self if optimiser is None else optimiser.__dict__[self.name]

    def __set__(self, optimiser, value) -> None:
        optimiser.__dict__[self.name] = self.check(type(optimiser).__name__, self.name, value)


class Optimiser:
    """Base class: a learning rate, a step counter and per-parameter state keyed by name.

    Subclasses implement ``update_parameter(name, param, grad, state)``, which changes
    ``param.array`` in place given the gradient array and the parameter's state dict.
    """

    learning_rate = Setting(checks.non_negative)

    def __init__(self, learning_rate: float):
        self.learning_rate = learning_rate
        self.step_count = 0
        self.state: dict[str, dict] = {}
        self._owners: dict[str, Tensor] = {}  # name -> the parameter whose state it is

    def step(self) -> "Optimiser":
        """Mark the start of a training iteration (advances ``step_count``); returns self."""
        self.step_count += 1
        return self

    def update(self, parameters, grad_multiplier: float | None = None) -> None:
        """Update, in place, every parameter that has a gradient (others are skipped).

        ``grad_multiplier`` scales every gradient first, without writing to it: gradient
        clipping folded into the update (``clip_factor``), which Adam and AdamW apply inside
        their step at no extra pass over the gradients.
        """
        named = named_parameters(parameters)
        if self.fused_update([(n, p) for n, p in named if p.grad is not None], grad_multiplier):
            return
        for name, param in named:
            if param.grad is None:
                continue
            grad = param.grad.array
            if grad_multiplier is not None:
                grad = grad * param.xp.asarray(grad_multiplier, dtype=grad.dtype)
            if grad.shape != param.shape:
                raise ValueError(
                    f"{type(self).__name__}: gradient of {name} has shape {grad.shape}, "
                    f"parameter has shape {param.shape}"
                )
            self.update_parameter(name, param, grad, self.state_of(name, param))

    def state_of(self, name: str, param: Tensor) -> dict:
        """The state of parameter ``name``, on its device (state loaded from a checkpoint or
        from another device is moved there).

        State is kept by name (so checkpoints can name it), and a name belongs to the first
        parameter updated under it: another parameter of the same name is refused, since
        its updates would silently use the first one's moments (e.g. two layers, each
        updated alone with one optimiser, that both call their weights "weights")."""
        owner = self._owners.setdefault(name, param)
        if owner is not param:
            raise ValueError(
                f"{type(self).__name__}: two different parameters are named {name!r} (shapes "
                f"{owner.shape} and {param.shape}), and they would share one optimiser state. "
                "Update them in one call under distinct names (a Layer that holds both: "
                "model.update(optimiser)), or give each its own optimiser."
            )
        state = self.state.setdefault(name, {})
        for key, value in state.items():
            if hasattr(value, "shape") and backend.is_cupy_array(value) != param.on_gpu:
                state[key] = _like(value, param.array)
        return state

    def fused_update(self, named: list, grad_multiplier=None) -> bool:
        """Update ``named`` [(name, Tensor with a grad)] with a fused form of the update, if
        this optimiser has one and it applies; return whether it did. ``grad_multiplier`` (a
        number, or a device scalar) scales every gradient first. Here: never (no fused form)."""
        return False

    def update_parameter(self, name: str, param: Tensor, grad, state: dict) -> None:
        raise NotImplementedError

    def __call__(self, parameters) -> None:
        self.update(parameters)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, np.ndarray]:
        """A flat {key: numpy array} dict: step_count, learning_rate and state/<name>/<slot>."""
        out = {
            "step_count": np.asarray(self.step_count),
            "learning_rate": np.asarray(self.learning_rate, dtype=np.float64),
        }
        for name, slots in self.state.items():
            for slot, value in slots.items():
                out[f"state/{name}/{slot}"] = np.array(backend.to_host_array(value), copy=True)
        return out

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict()``; arrays move to each parameter's device on use."""
        if "step_count" not in state:
            raise ValueError(f"{type(self).__name__}.load_state_dict: no 'step_count' key")
        self.step_count = int(state["step_count"])
        if "learning_rate" in state:
            self.learning_rate = float(state["learning_rate"])
        self.state, self._owners = {}, {}
        for key, value in state.items():
            if not key.startswith("state/"):
                continue
            name, _, slot = key[len("state/") :].rpartition("/")
            value = np.asarray(value)
            self.state.setdefault(name, {})[slot] = int(value) if slot == "step" else value.copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.learning_rate})"


class StochasticGradientDescent(Optimiser):
    """SGD with optional momentum (Nesterov too) and L2 weight decay, as torch.optim.SGD.

    g = grad + weight_decay * w;  b = momentum * b + g;  w -= lr * (g + momentum * b if
    nesterov else b). Without momentum: w -= lr * g.
    """

    weight_decay = Setting(checks.non_negative)
    momentum = Setting(checks.non_negative)

    @checks.arguments(nesterov=checks.boolean)
    def __init__(
        self,
        learning_rate: float,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        nesterov: bool = False,
    ):
        super().__init__(learning_rate)
        self.weight_decay, self.momentum, self.nesterov = weight_decay, momentum, nesterov
        if nesterov and momentum == 0:
            raise ValueError("StochasticGradientDescent: nesterov needs momentum > 0")

    def update_parameter(self, name, param, grad, state) -> None:
        lr, momentum = float(self.learning_rate), self.momentum
        if self.weight_decay:
            grad = grad + self.weight_decay * param.array
        if momentum:
            buffer = state.get("momentum_buffer")
            if buffer is None:  # torch starts the buffer at the first gradient
                buffer = state["momentum_buffer"] = param.xp.array(grad, copy=True)
            else:
                buffer *= momentum
                buffer += grad
            grad = grad + momentum * buffer if self.nesterov else buffer
        param.array -= lr * grad


SGD = StochasticGradientDescent


def _adam_update(xp, w, grad, state, lr, beta1, beta2, eps, decay=0.0) -> None:
    """One Adam step on w in place; state holds exp_avg, exp_avg_sq and step (``adam_state``).

    w *= 1 - lr * decay (decoupled weight decay, AdamW);  m = b1 m + (1 - b1) g;
    v = b2 v + (1 - b2) g^2;  w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
    On numpy the parameter is walked in cache-sized blocks spread over the cores.
    """
    if kernels.adam_enabled(w, grad):  # one fused CUDA kernel (tricycle/backends/cuda/adamw.cu)
        return kernels.adam_update(xp, w, grad, state, lr, beta1, beta2, eps, decay)
    constants = _adam_step_constants(xp, w, state, lr, beta1, beta2, eps, decay)
    arrays = (w, grad, state["exp_avg"], state["exp_avg_sq"])
    if not w.flags.c_contiguous:  # reshape(-1) would copy: update the whole arrays at once
        _adam_block(xp, *arrays, *constants)
        return
    flats = [a.reshape(-1) for a in arrays]  # views we may write through (grad: read only)
    for_each_block(xp, w.size, 1, lambda rows: _adam_block(xp, *(a[rows] for a in flats),
                                                            *constants))  # fmt: skip


def _adam_update_many(items, lr, beta1, beta2, eps, grad_multiplier: float = 1.0) -> None:
    """``_adam_update`` of many numpy parameters, ``items`` [(w, grad, state, decay)], with
    all their blocks handed to the thread pool at once: one dispatch per step instead of one
    per parameter, and small parameters (biases, gains) share the cores with large ones.
    ``grad_multiplier`` c scales the gradients inside the step: m takes (1 - b1) c g and v
    takes (1 - b2) c^2 g^2."""
    tasks = []
    for w, grad, state, decay in items:
        constants = _adam_step_constants(np, w, state, lr, beta1, beta2, eps, decay,
                                         grad_multiplier)  # fmt: skip
        flats = [a.reshape(-1) for a in (w, grad, state["exp_avg"], state["exp_avg_sq"])]
        tasks += [(flats, rows, constants) for rows in row_blocks(np, w.size, 1)]
    run_blocks(lambda task: _adam_block(np, *(a[task[1]] for a in task[0]), *task[2]), tasks)


def _adam_step_constants(xp, w, state, lr, beta1, beta2, eps, decay, grad_multiplier=1.0):
    """Advance the state by a step (``adam_state``) and return the step's constants for
    ``_adam_block``."""
    step_size, inv_correction2 = adam_corrections(lr, beta1, beta2, adam_state(xp, w, state))
    gains = (1.0 - beta1) * grad_multiplier, (1.0 - beta2) * grad_multiplier**2
    return beta1, beta2, *gains, eps, 1.0 - lr * decay, step_size, inv_correction2


def _adam_block(xp, wb, gb, mb, vb, beta1, beta2, gain1, gain2, eps, shrink, step_size,
                inv_correction2):  # fmt: skip
    """The Adam step on one block of a parameter (w, grad, m, v), in place; ``gain1`` and
    ``gain2`` are (1 - b1) and (1 - b2) times the gradient's multiplier and its square."""
    if shrink != 1.0:
        wb *= shrink
    tmp = xp.multiply(gb, gain1, dtype=wb.dtype)  # the one temporary
    mb *= beta1
    mb += tmp
    xp.multiply(gb, gb, out=tmp)
    tmp *= gain2
    vb *= beta2
    vb += tmp
    xp.sqrt(vb, out=tmp)
    tmp *= inv_correction2
    tmp += eps
    xp.divide(mb, tmp, out=tmp)
    tmp *= step_size
    wb -= tmp


def _numpy_contiguous(param: Tensor) -> bool:
    """A C-contiguous numpy parameter with a numpy gradient of its shape."""
    grad = param.grad.array
    return (
        isinstance(param.array, np.ndarray)
        and isinstance(grad, np.ndarray)
        and param.array.flags.c_contiguous
        and grad.shape == param.shape
    )


class Adam(Optimiser):
    """Adam (Kingma & Ba) with bias correction; ``weight_decay`` is an L2 term added to the
    gradient, as torch.optim.Adam."""

    betas = Setting(check_betas)
    eps = Setting(checks.non_negative)
    weight_decay = Setting(checks.non_negative)
    decoupled = False  # AdamW: the decay shrinks the weights instead of adding to the gradient

    def __init__(
        self,
        learning_rate: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        super().__init__(learning_rate)
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay

    def decoupled_decay(self, name: str, param: Tensor) -> float:
        """The decoupled weight decay of one parameter (AdamW's; plain Adam has none)."""
        return 0.0

    def update_parameter(self, name, param, grad, state) -> None:
        if self.weight_decay and not self.decoupled:
            grad = grad + self.weight_decay * param.array
        beta1, beta2 = self.betas
        lr, decay = float(self.learning_rate), self.decoupled_decay(name, param)
        _adam_update(param.xp, param.array, grad, state, lr, beta1, beta2, self.eps, decay)

    def fuses(self) -> bool:
        """Whether ``fused_update`` applies to this optimiser: Adam and AdamW, but not
        subclasses (whose update may differ) nor Adam's L2 decay."""
        return type(self) in (Adam, AdamW) and not (self.weight_decay and not self.decoupled)

    def hyperparameters(self) -> tuple[float, float, float, float]:
        """(learning rate, beta1, beta2, eps) as they are now."""
        beta1, beta2 = self.betas
        return float(self.learning_rate), float(beta1), float(beta2), float(self.eps)

    def fused_update(self, named: list, grad_multiplier=None) -> bool:
        """Adam and AdamW over all parameters at once, with the same state and math as
        ``update_parameter``: on float32 cupy parameters one multi-tensor kernel launch
        (``kernels.optimiser_update``); on C-contiguous numpy parameters one batch of blocks
        for the thread pool (``_adam_update_many``). Subclasses, whose update may differ, and
        Adam's L2 decay keep the plain path."""
        if not self.fuses():
            return False
        decays = [self.decoupled_decay(name, p) for name, p in named]
        states = [self.state_of(name, p) for name, p in named]
        if kernels.optimiser_update(named, states, self.hyperparameters, decays, grad_multiplier):
            return True
        lr, (beta1, beta2) = float(self.learning_rate), self.betas
        host_multiplier = grad_multiplier is None or isinstance(grad_multiplier, (int, float))
        if not host_multiplier or not all(_numpy_contiguous(p) for _, p in named):
            return False
        items = [(p.array, p.grad.array, state, decay)
                 for (_, p), state, decay in zip(named, states, decays)]  # fmt: skip
        multiplier = 1.0 if grad_multiplier is None else float(grad_multiplier)
        _adam_update_many(items, lr, beta1, beta2, self.eps, multiplier)
        return True


def decay_matrices(name: str, param: Tensor) -> bool:
    """AdamW's default decay filter: decay weights of 2+ dimensions except embeddings.

    Biases and norm gains (1-D) and embedding tables (named "...embedding...") are not
    decayed, as in GPT-2 training.
    """
    return param.ndim >= 2 and "embedding" not in name.lower()


def decay_all_matrices(name: str, param: Tensor) -> bool:
    """nanoGPT's decay filter: every weight of 2+ dimensions, embedding tables included."""
    return param.ndim >= 2


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW:
    w *= 1 - lr * weight_decay, then the Adam step on the plain gradient.

    ``decay_filter(name, param) -> bool`` picks the decayed parameters; by default 2-D+
    weights that are not embeddings (``decay_matrices``).
    """

    decoupled = True

    @checks.arguments(decay_filter=checks.function)
    def __init__(
        self,
        learning_rate: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        decay_filter: Callable[[str, Tensor], bool] = decay_matrices,
    ):
        super().__init__(learning_rate, betas, eps, weight_decay)
        self.decay_filter = decay_filter

    def decoupled_decay(self, name: str, param: Tensor) -> float:
        return self.weight_decay if self.decay_filter(name, param) else 0.0


def grad_norm(parameters: Iterable, sync: bool = True):
    """The global L2 norm of the gradients of ``parameters`` (a Layer, Tensors, or (name,
    Tensor) pairs; those without a grad are skipped): ``global_norm`` of their arrays.

    Returns a Python float, or with ``sync=False`` a 0-d array on the gradients' device,
    without waiting for the device.
    """
    grads = [p.grad.array for _, p in named_parameters(parameters) if p.grad is not None]
    norm = global_norm(grads)
    return float(norm) if sync else norm


def global_norm(arrays):
    """sqrt of the sum of every element squared, over arrays on one device, as a 0-d array
    there (0.0 for no arrays).

    One accumulation rule everywhere: each array's sum of squares is accumulated in float32
    (float64 when any array is float64) and the sums are added in the same precision; BLAS
    does it on the CPU, and on a GPU the kernel's block sums do it for float32 arrays
    (``kernels.clip_multiplier``).
    """
    if not arrays:
        return np.zeros((), dtype=np.float32)
    xp = backend.array_module(arrays[0])
    if kernels.enabled(*arrays) and all(
        a.dtype == np.float32 and a.flags.c_contiguous for a in arrays
    ):  # the kernel's own float32 block sums
        return kernels.clip_multiplier(xp, arrays)[0]
    dtype = np.float64 if any(a.dtype == np.float64 for a in arrays) else np.float32
    squares = xp.zeros((), dtype=dtype)
    for a in arrays:
        flat = a.reshape(-1).astype(dtype, copy=False)
        squares = squares + xp.vdot(flat, flat)
    return xp.sqrt(squares)


def clip_factor(norm: float, max_norm: float) -> float | None:
    """What clipping to ``max_norm`` multiplies gradients of global norm ``norm`` by, or None
    when they need no clipping: ``max_norm / (norm + 1e-6)`` when ``norm > max_norm``, as
    torch's clip_grad_norm_."""
    return max_norm / (norm + 1e-6) if norm > max_norm else None


@checks.arguments(max_norm=checks.non_negative)
def clip_grad_norm(parameters: Iterable, max_norm: float) -> float:
    """Scale all gradients so their global L2 norm is at most ``max_norm``; return the norm
    before clipping.

    ``parameters``: a Layer, Tensors, or (name, Tensor) pairs; those without a grad are
    skipped. Gradient arrays are never written to (another tensor may share them): a clipped
    parameter gets a new ``.grad`` Tensor. To clip inside the update instead, pass
    ``clip_factor(grad_norm(params), max_norm)`` to ``optimiser.update``.
    """
    named = named_parameters(parameters)
    norm = grad_norm(named)
    scale = clip_factor(norm, max_norm)
    if scale is not None:
        for _, p in named:
            if p.grad is not None:
                grad = p.grad.array * scale
                p.grad = Tensor(grad, requires_grad=False)
    return norm
