"""Optimisers: StochasticGradientDescent, Adam, AdamW (clipping by global gradient norm is
``tricycle.clipping``'s, re-exported here).

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

import math
from collections.abc import Callable

import numpy as np

from tricycle import backend, checks, dispatch
from tricycle.clipping import (  # noqa: F401 (re-exported: first defined here)
    clip_factor,
    clip_grad_norm,
    global_norm,
    grad_norm,
)
from tricycle.module import named_parameters
from tricycle.tensor import Tensor


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
            if not hasattr(value, "shape"):
                continue
            expected = self.state_shape(key, param.shape)
            if value.shape != expected:  # a loaded state of another model: the kernels
                raise ValueError(  # would read and write past the parameter's arrays
                    f"{type(self).__name__}: the state {key!r} of {name!r} has shape "
                    f"{value.shape}, the parameter {param.shape} (a state_dict of another model?)"
                )
            if backend.is_cupy_array(value) != param.on_gpu:
                state[key] = _like(value, param.array)
        return state

    def state_shape(self, key: str, shape: tuple) -> tuple:
        """The shape of state ``key`` of a parameter of ``shape`` (Adafactor's differ)."""
        return shape

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
                out[f"state/{name}/{slot}"] = backend.host_snapshot(value)
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
    """SGD with optional momentum (Nesterov too), dampening and L2 weight decay, as
    torch.optim.SGD.

    g = grad + weight_decay * w;  b = momentum * b + (1 - dampening) g (b = g at the first
    step);  w -= lr * (g + momentum * b if nesterov else b). Without momentum: w -= lr * g.
    """

    weight_decay = Setting(checks.non_negative)
    momentum = Setting(checks.non_negative)

    @checks.arguments(nesterov=checks.boolean, dampening=checks.real)
    def __init__(
        self,
        learning_rate: float,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        nesterov: bool = False,
        dampening: float = 0.0,
    ):
        super().__init__(learning_rate)
        self.weight_decay, self.momentum, self.nesterov = weight_decay, momentum, nesterov
        self.dampening = dampening
        if nesterov and (momentum == 0 or dampening != 0):
            raise ValueError(
                "StochasticGradientDescent: nesterov needs momentum > 0 and dampening 0, got "
                f"momentum={momentum}, dampening={dampening}"
            )

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
                buffer += grad if not self.dampening else (1.0 - self.dampening) * grad
            grad = grad + momentum * buffer if self.nesterov else buffer
        param.array -= lr * grad


SGD = StochasticGradientDescent


def adam_state(xp, w, state: dict) -> int:
    """Advance one parameter's Adam state by a step and return that step t (1 at first).

    The state holds ``exp_avg`` and ``exp_avg_sq`` (the moments m and v, zeros like ``w`` on
    its device, made on the first step) and ``step``, the parameter's own count for the bias
    corrections, as torch.optim keeps it.
    """
    if "exp_avg" not in state:
        state["exp_avg"], state["exp_avg_sq"], state["step"] = xp.zeros_like(w), xp.zeros_like(w), 0
    state["step"] += 1
    return state["step"]


def adam_step(xp, w, grad, m, v, beta1, beta2, eps, decay, lr, step, grad_multiplier=1.0):
    """One AdamW step on w, m and v in place, with c = ``grad_multiplier`` and t = ``step``:

        w *= 1 - lr * decay                        (decoupled weight decay; 0 for Adam)
        m  = b1 m + (1 - b1) c g                    v = b2 v + (1 - b2) c^2 g^2
        w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

    The bias corrections are computed in float64 on the host, as torch does.
    """
    step_size = lr / (1.0 - beta1**step)
    inv_correction2 = 1.0 / math.sqrt(1.0 - beta2**step)
    g = grad if grad_multiplier == 1.0 else grad * grad_multiplier
    if decay:
        w *= 1.0 - lr * decay
    m *= beta1
    m += (1.0 - beta1) * g
    v *= beta2
    v += (1.0 - beta2) * (g * g)
    w -= step_size * m / (xp.sqrt(v) * inv_correction2 + eps)


def _adam_update(xp, w, grad, state, lr, beta1, beta2, eps, decay=0.0, grad_multiplier=1.0):
    """One Adam step on parameter ``w`` with its ``state``: the state advanced, then
    ``adam_step`` (or the kernel registered as "adam_step": one loop over the elements)."""
    t = adam_state(xp, w, state)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    step = dispatch.choose("adam_step", adam_step, w, grad, m, v)
    step(xp, w, grad, m, v, beta1, beta2, eps, decay, lr, t, grad_multiplier)


def adam_update_all(named, states, hyperparameters, decays, grad_multiplier=None) -> bool:
    """One Adam/AdamW update of every parameter in ``named`` [(name, Tensor)], with one state
    dict and one decoupled decay each and ``hyperparameters()`` -> (lr, beta1, beta2, eps);
    ``grad_multiplier`` scales every gradient inside the step (clipping, loss scaling).

    The reference: ``_adam_update`` per parameter. A kernel registered as "adam_update_all"
    (the CUDA backend's multi-tensor launch) may do all at once. Returns False, having done
    nothing, where it does not apply (a multiplier left on a device, for this reference).
    """
    if grad_multiplier is not None and not isinstance(grad_multiplier, (int, float)):
        return False
    lr, beta1, beta2, eps = hyperparameters()
    multiplier = 1.0 if grad_multiplier is None else float(grad_multiplier)
    for (_, p), state, decay in zip(named, states, decays):
        _adam_update(p.xp, p.array, p.grad.array, state, lr, beta1, beta2, eps, decay, multiplier)
    return True


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
        ``update_parameter`` (``adam_update_all``, or the kernel registered for it: on float32
        cupy parameters one multi-tensor launch). Subclasses, whose update may differ, and
        Adam's L2 decay keep the plain path."""
        if not self.fuses():
            return False
        if not named:
            return True
        decays = [self.decoupled_decay(name, p) for name, p in named]
        states = [self.state_of(name, p) for name, p in named]
        arrays = [a for _, p in named for a in (p.array, p.grad.array)]
        update = dispatch.choose("adam_update_all", adam_update_all, *arrays)
        return update(named, states, self.hyperparameters, decays, grad_multiplier)


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
