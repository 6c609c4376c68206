"""torch.distributed.checkpoint.state_dict on tricycle's World (``get_state_dict``,
``set_state_dict`` and their kin, ``StateDictOptions``): state dicts keyed by the unwrapped
model's names; under FSDP each parameter or optimizer state is this rank's ``FlatShard`` of
it, or the whole array with ``StateDictOptions(full_state_dict=True)`` (an all-gather).
``tricycle.parallel.checkpoint_sharded`` saves and loads them."""

from dataclasses import dataclass

import numpy as np

from tricycle.parallel.checkpoint_sharded import shaped_like, to_host
from tricycle.parallel.fsdp_unit import units_of
from tricycle.parallel.fsdp_units import FlatShard, clean, full_or_piece
from tricycle.tensor import Tensor


@dataclass
class StateDictOptions:
    """torch's options: ``full_state_dict`` whole arrays (an all-gather) instead of this
    rank's pieces; ``strict`` for the set calls; the others are accepted and change nothing
    here (``broadcast_from_rank0`` refused: every rank loads)."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def _options(owner: str, options):
    options = options or StateDictOptions()
    if not isinstance(options, StateDictOptions):
        raise TypeError(f"{owner}: options must be a StateDictOptions, got {options!r}")
    if options.broadcast_from_rank0:
        raise NotImplementedError(f"{owner}: broadcast_from_rank0=True is not supported")
    return options


def _layout(model):
    """{id(shard Tensor): (prefix, Shard)} and {id(other parameter or buffer): name}."""
    shards = {id(s.tensor): (prefix, s) for prefix, u in units_of(model) for s in u.shards}
    others = {id(t): clean(n) for n, t in model.named_persistent() if id(t) not in shards}
    return shards, others


def _world_of(model):
    units = units_of(model)
    return units[0][1].world if units else None


def _by_entry(shard, prefix: str, values, full: bool, world) -> dict:
    """{name: FlatShard or whole array} of a shard-shaped ``values`` for each entry."""
    if not full:
        return {prefix + n: v for n, v in shard.pieces(values).items()}
    flat = to_host(shard.gather_array(world, values))
    return {prefix + e.name: flat[e.a : e.b].reshape(e.shape).copy() for e in shard.entries}


def get_model_state_dict(model, *, submodules=None, options=None) -> dict:
    """The model's parameters and buffers by the unwrapped model's names: this rank's
    ``FlatShard`` of each sharded parameter (whole arrays with ``full_state_dict``)."""
    options = _options("get_model_state_dict", options)
    return model_state(model, options.full_state_dict)


def model_state(model, full: bool) -> dict:
    """``get_model_state_dict``'s (and FSDP1's ``state_dict``'s) values: each sharded
    parameter whole (``full``: an all-gather) or as this rank's ``FlatShard``, the rest whole."""
    shards, others = _layout(model)
    world, out = _world_of(model), {}
    for prefix, shard in shards.values():
        out.update(_by_entry(shard, prefix, None, full, world))
    for _, t in model.named_persistent():
        if id(t) in others:
            out[others[id(t)]] = t.numpy().copy()
    return out


def _optimizers(optimizers) -> list:
    return list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None) -> dict:
    """The optimizers' state keyed by the parameters' names: {"state": {name: {slot:
    value}}, "param_groups": [settings with "params" as names]}, a sharded parameter's
    states as its pieces (whole with ``full_state_dict``)."""
    options = _options("get_optimizer_state_dict", options)
    shards, others = _layout(model)
    world = _world_of(model)
    state, groups = {}, []
    for optimizer in _optimizers(optimizers):
        _init_state(optimizer)
        saved = optimizer.state_dict()
        params = [p for g in optimizer.param_groups for p in g["params"]]
        names = {}
        for i, p in enumerate(params):
            slots = saved["state"].get(i, {})
            if id(p) in shards:
                prefix, shard = shards[id(p)]
                names[i] = [prefix + e.name for e in shard.entries]
                for n in names[i]:
                    state[n] = {}
                for slot, value in slots.items():
                    if isinstance(value, np.ndarray) and value.shape == tuple(p.shape):
                        split = _by_entry(shard, prefix, value, options.full_state_dict, world)
                        for n, v in split.items():
                            state[n][slot] = v
                    else:
                        for n in names[i]:
                            state[n][slot] = value
            else:
                names[i] = [others[id(p)]]
                if slots:
                    state[names[i][0]] = dict(slots)
        for group in saved["param_groups"]:
            groups.append({**group, "params": [n for i in group["params"] for n in names[i]]})
    return {"state": state, "param_groups": groups}


def _init_state(optimizer) -> None:
    """Give an optimizer without state its slots, as torch's call does (a step of zero
    gradients at learning rate 0, changing no parameter), so that its state dict has the
    layout ``load`` fills."""
    if optimizer.state:
        return
    params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
    rates = [g["lr"] for g in optimizer.param_groups]
    for p in params:
        p.grad = Tensor(p.xp.zeros_like(p.array), requires_grad=False)
    for g in optimizer.param_groups:
        g["lr"] = 0.0
    try:
        optimizer.step()
    finally:
        for g, lr in zip(optimizer.param_groups, rates):
            g["lr"] = lr
        for p in params:
            p.grad = None


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    """(``get_model_state_dict``, ``get_optimizer_state_dict``)."""
    return (
        get_model_state_dict(model, options=options),
        get_optimizer_state_dict(model, optimizers, options=options),
    )


def set_model_state_dict(model, model_state_dict: dict, *, options=None):
    """Load ``model_state_dict`` (whole arrays or this rank's pieces, by name) into the
    model; returns the (missing, unexpected) names."""
    owner = "set_model_state_dict"
    options = _options(owner, options)
    return load_model_state(owner, model, model_state_dict, options.strict)


def load_model_state(owner: str, model, model_state_dict: dict, strict: bool):
    """``set_model_state_dict``'s (and FSDP1's ``load_state_dict``'s) work: each value (whole,
    or this rank's ``FlatShard``) into its shard or tensor; the (missing, unexpected) names,
    a ValueError naming them under ``strict``."""
    shards, others = _layout(model)
    names = [p + e.name for p, s in shards.values() for e in s.entries] + list(others.values())
    missing = [n for n in names if n not in model_state_dict]
    unexpected = [n for n in model_state_dict if n not in set(names)]
    if strict and (missing or unexpected):
        raise ValueError(f"{owner}: missing keys {missing}, unexpected keys {unexpected}")
    for prefix, shard in shards.values():
        values = {e.name: full_or_piece(model_state_dict[prefix + e.name], e, shard)
                  for e in shard.entries if prefix + e.name in model_state_dict}  # fmt: skip
        shard.fill(shard.tensor.array, values)
    for _, t in model.named_persistent():
        if id(t) in others and others[id(t)] in model_state_dict:
            value = model_state_dict[others[id(t)]]
            value = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            t.array[...] = shaped_like(t.array, value.astype(t.dtype))
    return missing, unexpected


def set_optimizer_state_dict(model, optimizers, optim_state_dict: dict, *, options=None) -> None:
    """Load ``get_optimizer_state_dict``'s layout (saved at any world size and filled by
    ``load``) into the optimizers."""
    _options("set_optimizer_state_dict", options)
    shards, others = _layout(model)
    saved_groups = iter(optim_state_dict["param_groups"])
    for optimizer in _optimizers(optimizers):
        params = [p for g in optimizer.param_groups for p in g["params"]]
        state = {}
        for i, p in enumerate(params):
            if id(p) in shards:
                prefix, shard = shards[id(p)]
                entries = {e.name: optim_state_dict["state"].get(prefix + e.name, {})
                           for e in shard.entries}  # fmt: skip
                slots = {}
                for slot in next(iter(entries.values()), {}):
                    first = next(iter(entries.values()))[slot]
                    if isinstance(first, (FlatShard, np.ndarray, Tensor)):
                        target = np.zeros(tuple(p.shape), dtype=np.asarray(_array(first)).dtype)
                        values = {e.name: full_or_piece(entries[e.name][slot], e, shard)
                                  for e in shard.entries}  # fmt: skip
                        shard.fill(target, values)
                        slots[slot] = target
                    else:
                        slots[slot] = first
                if slots:
                    state[i] = slots
            elif others[id(p)] in optim_state_dict["state"]:
                state[i] = dict(optim_state_dict["state"][others[id(p)]])
        groups, position = [], 0
        for group in optimizer.param_groups:
            settings = {k: v for k, v in next(saved_groups).items() if k != "params"}
            groups.append(
                {**settings, "params": list(range(position, position + len(group["params"])))}
            )
            position += len(group["params"])
        optimizer.load_state_dict({"state": state, "param_groups": groups})


def _array(value):
    return value.local if isinstance(value, FlatShard) else value


def set_state_dict(model, optimizers, *, model_state_dict: dict, optim_state_dict: dict,
                   options=None):  # fmt: skip
    """``set_model_state_dict`` and ``set_optimizer_state_dict``; returns the former's."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
