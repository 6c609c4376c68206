"""``Optimizer``: torch.optim's protocol (parameter groups, ``step``, ``zero_grad``,
``state_dict``) over tricycle's optimisers.

Parameters live in ``param_groups``, a list of dicts with torch's keys ("params", "lr",
"betas", "weight_decay", ...) that a loop may edit between steps, as nanoGPT sets its
learning rate. Their state (Adam's moments and step counts, SGD's momentum buffers) lives in
``state``, one dict per parameter keyed by the parameter, as torch keeps it.

Each ``step()`` makes, for every group, the tricycle optimiser of the group's settings as
they are now (the group's *rule*: a ``tricycle.optimisers.AdamW``, ``Adam`` or
``StochasticGradientDescent``), lends it the states of the group's parameters that have a
gradient, and calls its ``update``. So the formulas of those three are
``tricycle.optimisers``' and nowhere else, and on a GPU Adam and AdamW take their fused
update there. An optimizer that the seed lacks (RMSprop, Adagrad, NAdam, ...) writes its
formula as its own ``update_parameter(xp, w, g, state, group)``, in plain ``xp`` on one
parameter, and its rule is a ``GroupRule`` that calls it. A rule is made afresh each step:
it holds settings only, never state, so editing a group can never leave a stale copy.
"""

import copy
import itertools
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from tricycle import backend, checks
from tricycle.module import clear_grad
from tricycle.optimisers import Optimiser
from tricycle.parameter import keeps_state
from tricycle.tensor import Tensor


def unsupported(reason: str) -> checks.Check:
    """The check of a flag that tricycle accepts only as False, saying why."""

    def check(owner: str, name: str, value):
        if checks.boolean(owner, name, value):
            raise ValueError(f"{owner}: {name}=True is not supported: {reason}")
        return value

    return check


def ignored(owner: str, name: str, value):
    """A performance flag of torch (foreach, fused, capturable): None, True or False,
    accepted and ignored (tricycle picks its own fused kernels where they apply)."""
    return checks.boolean(owner, name, value, optional=True)


FLAGS: dict[str, checks.Check] = {
    "maximize": checks.boolean,
    "foreach": ignored,
    "capturable": ignored,
    "fused": ignored,
    "differentiable": unsupported("tricycle's updates are not recorded for backward"),
}


def torch_flags(*names: str) -> dict[str, checks.Check]:
    """The checks of torch's flags ``names`` (each optimizer takes its own few of them)."""
    return {name: FLAGS[name] for name in names}


def state_array(state: dict, name: str, xp, w, fill: float = 0.0):
    """The state array ``name`` of parameter array ``w``, made at its first use: ``fill``
    like ``w`` (on its device, in its dtype), as torch makes its state at the first step."""
    if name not in state:
        state[name] = xp.full_like(w, fill)
    return state[name]


def advance(state: dict) -> int:
    """Count one more step in a parameter's ``state`` (torch's "step") and return it."""
    state["step"] = state.get("step", 0) + 1
    return state["step"]


def decayed(w, g, lr: float, weight_decay: float, decoupled: bool = False):
    """The gradient after weight decay: an L2 term, g + weight_decay * w (a new array: the
    gradient itself is never written); or decoupled (AdamW's), the weights shrunk in place,
    w *= 1 - lr * weight_decay, and g as it was."""
    if weight_decay and decoupled:
        w *= 1.0 - lr * weight_decay
    elif weight_decay:
        g = g + weight_decay * w
    return g


class GroupRule(Optimiser):
    """The rule of an optimizer whose formula is its own ``update_parameter``: the group's
    settings, and each parameter's update through that formula."""

    def __init__(self, formula: Callable, group: dict, shapes: Callable | None = None):
        super().__init__(float(group["lr"]))
        self.formula, self.group, self.shapes = formula, group, shapes

    def state_shape(self, key: str, shape: tuple) -> tuple:
        return tuple(shape) if self.shapes is None else self.shapes(key, shape)

    def update_parameter(self, name: str, param: Tensor, grad, state: dict) -> None:
        self.formula(param.xp, param.array, grad, state, self.group)


class Optimizer:
    """Base class of ``tricycle.optim``'s optimizers, with torch.optim.Optimizer's methods.

    ``params``: an iterable (a generator too: read once) of Tensors, of (name, Tensor) pairs,
    or of dicts, each a parameter group with "params" and any settings that differ from
    ``defaults``. Subclasses give ``CHECKS`` (setting -> check, for every key of their
    defaults) and ``rule(group)``, the tricycle optimiser of a group's settings.
    """

    CHECKS: dict[str, checks.Check] = {}
    # whether the update is right for complex parameters (one linear in the gradient is)
    complex_parameters = False
    # whether a complex parameter is stepped as pairs of reals, as torch's view_as_real
    complex_as_real = False
    _holds_complex = False  # set when a complex parameter joins a group

    def __init__(self, params, defaults: dict):
        owner = type(self).__name__
        self.check_group(defaults, "")
        if isinstance(params, Tensor | dict) or hasattr(params, "named_parameters"):
            raise TypeError(
                f"{owner}: params must be an iterable of Tensors or of dicts (parameter "
                f"groups), e.g. model.parameters() or [group], got a {type(params).__name__}"
            )
        try:
            groups = list(params)
        except TypeError:
            raise TypeError(
                f"{owner}: params must be an iterable of Tensors or of dicts (parameter "
                f"groups), got a {type(params).__name__}"
            ) from None
        if not groups:
            raise ValueError(f"{owner}: got an empty parameter list")
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        keeps_state(self)  # its state follows a parameter laid out anew (prune)
        self.param_groups: list[dict] = []
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ settings
    def check_group(self, group: dict, where: str) -> None:
        """Check every setting of ``group``; ``where`` ("param_groups[1]", or "" for the
        constructor's arguments) names it in the messages."""
        owner = type(self).__name__
        for key, check in self.CHECKS.items():
            name = f"{where}[{key!r}]" if where else key
            if key not in group:
                raise ValueError(f"{owner}: {where or 'the defaults'} has no {key!r} setting")
            check(owner, name, group[key])

    def rule(self, group: dict) -> Optimiser:
        """The tricycle optimiser that applies ``group``'s settings as they are now: by
        default a ``GroupRule`` over ``update_parameter``."""
        return GroupRule(self.update_parameter, group, self.state_shape)

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        """One step of parameter array ``w`` (in place) with its gradient ``g`` (negated
        with "maximize"; never written to) and its ``state`` dict, under ``group``'s
        settings: the optimizer's formula, in ``xp`` (numpy or cupy)."""
        raise NotImplementedError(f"{type(self).__name__} gives neither rule nor update_parameter")

    def state_shape(self, slot: str, shape: tuple) -> tuple:
        """The shape of state array ``slot`` of a parameter of ``shape``, which
        ``load_state_dict`` checks: the parameter's own (Adafactor's factored moments
        differ)."""
        return shape

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (a dict with "params" and optional settings; the
        optimizer's defaults fill the rest). As torch, the dict itself joins
        ``param_groups``. A parameter already in a group is an error."""
        owner = f"{type(self).__name__}.add_param_group"
        if not isinstance(param_group, dict):
            raise TypeError(f"{owner}: a parameter group must be a dict, got {param_group!r}")
        if "params" not in param_group:
            raise ValueError(f"{owner}: a parameter group needs 'params', got {param_group}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set | frozenset):
            raise TypeError(
                f"{owner}: params must be an ordered collection (a list), not a set: a set's "
                "order changes between runs, and with it which state is whose"
            )
        try:
            params = list(params)
        except TypeError:
            raise TypeError(
                f"{owner}: params must be a Tensor or an iterable of Tensors, got a "
                f"{type(params).__name__}"
            ) from None
        pairs = [isinstance(p, tuple) for p in params]
        if any(pairs):
            if not all(pairs):
                raise ValueError(f"{owner}: either every parameter has a name or none does")
            param_group["param_names"] = [name for name, _ in params]
            params = [p for _, p in params]
        param_group["params"] = params
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"{owner}: an optimizer updates Tensors, but params[{i}] is a "
                    f"{type(p).__name__}"
                )
            if p.args is not None:
                raise ValueError(
                    f"{owner}: params[{i}] (shape {p.shape}) is computed from other tensors: "
                    "only leaf tensors can be optimized"
                )
            self._holds_complex |= p.dtype.kind == "c"
            if p.dtype.kind == "c" and not (self.complex_parameters or self.complex_as_real):
                raise NotImplementedError(
                    f"{owner}: params[{i}] is complex ({p.dtype}, shape {p.shape}): this "
                    "optimizer's update is not written for complex parameters (SGD's is); "
                    "optimize its real and imaginary parts (torch.view_as_real) instead"
                )
        if len({id(p) for p in params}) != len(params):
            raise ValueError(f"{owner}: a parameter appears twice in one group")
        held = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in held for p in params):
            raise ValueError(f"{owner}: some parameters appear in more than one group")
        if self.param_groups and ("param_names" in param_group) != (
            "param_names" in self.param_groups[0]
        ):
            raise ValueError(f"{owner}: either every group names its parameters or none does")
        for key, default in self.defaults.items():
            param_group.setdefault(key, default)
        self.check_group(param_group, f"param_groups[{len(self.param_groups)}]")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ the step
    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient with its group's settings as they are
        now; returns ``closure()`` (which re-evaluates the loss), called first, if given."""
        loss = None if closure is None else closure()
        position = itertools.count()  # each parameter's index, as state_dict numbers them
        for i, group in enumerate(self.param_groups):
            self.check_group(group, f"param_groups[{i}]")
            named = [(str(next(position)), p) for p in group["params"]]
            named = [(name, p) for name, p in named if p.grad is not None]
            if not named:
                continue
            rule = self.rule(group)
            rule.state = {name: self.state[p] for name, p in named}  # lent, updated in place
            maximize = group.get("maximize", False)  # Muon has no such setting
            if not (self.complex_as_real and self._holds_complex):
                rule.update(named, grad_multiplier=-1.0 if maximize else None)
                continue
            stepped = [(n, _as_real(p, rule.state[n]) if p.dtype.kind == "c" else p)
                       for n, p in named]  # fmt: skip
            rule.update(stepped, grad_multiplier=-1.0 if maximize else None)
            for (n, p), (_, real) in zip(named, stepped):
                if real is not p:
                    _state_as_complex(rule.state[n], real, p)
        return loss

    @checks.arguments(set_to_none=checks.boolean)
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (``set_to_none=False``: make it zeros, so the
        next step still updates the parameter, as torch)."""
        for group in self.param_groups:
            for p in group["params"]:
                clear_grad(p, set_to_none)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        """torch's layout: {"state": {index: {slot: value}}, "param_groups": [settings with
        "params" as indices]}, parameters numbered in group order, with torch's slot names.
        The values are tricycle's: arrays are numpy host copies (not torch tensors), "step"
        an int and NAdam's "mu_product" a float (torch's are 0-d tensors); it pickles."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: copy.deepcopy(v) for key, v in group.items() if key != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {
            index[id(p)]: {slot: _snapshot(value) for slot, value in slots.items()}
            for p, slots in self.state.items()
            if slots and id(p) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from ``state_dict()`` (of an optimizer over the same parameters): the
        settings of every group and every parameter's state, checked before anything is
        changed, each array moved to its parameter's device in its dtype; a step after it
        is the step the saved optimizer would have taken. A torch optimizer's state_dict is
        refused: its arrays are torch tensors, in torch's layout of the weights."""
        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ValueError(f"{owner}: expected a dict with 'state' and 'param_groups'")
        saved = copy.deepcopy(list(state_dict["param_groups"]))
        sizes = [len(g["params"]) for g in self.param_groups]
        saved_sizes = [len(g["params"]) for g in saved]
        if sizes != saved_sizes:
            raise ValueError(
                f"{owner}: the state holds groups of {saved_sizes} parameters, this optimizer "
                f"groups of {sizes}"
            )
        params = dict(
            zip(
                itertools.chain.from_iterable(g["params"] for g in saved),
                itertools.chain.from_iterable(g["params"] for g in self.param_groups),
            )
        )
        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for key, slots in state_dict["state"].items():
            if key not in params:
                raise ValueError(f"{owner}: state for parameter {key!r}, which no group holds")
            p = params[key]
            state[p] = {
                slot: _restored(owner, key, slot, v, p, self.state_shape(slot, p.shape))
                for slot, v in slots.items()
            }
        for i, (group, new) in enumerate(zip(self.param_groups, saved)):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
            self.check_group(new, f"param_groups[{i}]")
        self.state, self.param_groups = state, saved

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _as_real(param: Tensor, state: dict) -> Tensor:
    """A complex parameter as torch's ``view_as_real`` (flat: these rules are elementwise,
    and a 1-D float array takes the kernels the real parameters compiled): a real tensor
    sharing its memory, so that the rule's in-place update writes the parameter; its gradient
    and its complex state arrays are viewed so too (``_state_as_complex`` turns them back)."""
    xp = param.xp
    if not param.array.flags.c_contiguous:
        param.array = xp.ascontiguousarray(param.array)
    for slot, value in state.items():
        if getattr(value, "dtype", None) == param.dtype and value.shape == param.shape:
            state[slot] = _real_view(xp.ascontiguousarray(value))
    pairs = Tensor(_real_view(param.array), requires_grad=True)
    pairs.grad = Tensor(_real_view(xp.ascontiguousarray(param.grad.array)))
    return pairs


def _real_view(array):
    return array.reshape(-1).view(array.real.dtype)


def _state_as_complex(state: dict, pairs: Tensor, param: Tensor) -> None:
    """The state arrays of ``param``, stepped as ``pairs``, back in its complex form."""
    for slot, value in state.items():
        if getattr(value, "shape", None) == pairs.shape and value.dtype == pairs.dtype:
            value = pairs.xp.ascontiguousarray(value)
            state[slot] = value.view(param.dtype).reshape(param.shape)


def _snapshot(value):
    """A state value for a state_dict: an array as a host copy, a number as it is."""
    return backend.host_snapshot(value) if hasattr(value, "shape") else value


def _restored(owner: str, key, slot: str, value, param: Tensor, shape: tuple):
    """A saved state value for ``param``: a number as it is (the step count an int), an
    array checked against ``shape`` (the slot's, mostly the parameter's), in the
    parameter's dtype, on its device."""
    if slot == "step":
        return int(value)
    if isinstance(value, np.generic):  # a number kept as a numpy scalar: the number
        return value.item()
    if not hasattr(value, "shape"):
        return value
    if not (isinstance(value, np.ndarray) or backend.is_cupy_array(value)):
        raise TypeError(
            f"{owner}: the state {slot!r} of parameter {key} is a {type(value).__module__}."
            f"{type(value).__name__}, not a numpy or cupy array: a state_dict of tricycle.optim "
            "is expected (torch's optimizer states do not load: torch's Linear weights, and "
            "their states, are the transpose of tricycle's)"
        )
    array = np.array(backend.to_host_array(value), copy=True)
    if array.shape != tuple(shape):
        raise ValueError(
            f"{owner}: the state {slot!r} of parameter {key} has shape {array.shape}, "
            f"expected {tuple(shape)} for the parameter of shape {param.shape} (a state_dict "
            "of another model?)"
        )
    array = array.astype(param.dtype, copy=False)
    return backend.to_device_array(array, param.array.device.id) if param.on_gpu else array
