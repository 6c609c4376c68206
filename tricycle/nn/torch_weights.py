"""A PyTorch model's ``state_dict`` into the same model built with ``tricycle.nn``, and back.

A model ported from torch to ``tricycle.nn`` with the same structure and attribute names has
the same tree of layers, but some of its layers name and lay out their tensors their own way:

    tricycle                              torch
    Linear     weights (in, out), bias    weight (out, in) (the transpose), bias
    Embedding, Conv1d/2d,
    ConvTranspose1d/2d   weights, bias    weight, bias (the same layouts)
    LayerNorm, RMSNorm, GroupNorm,
    BatchNorm, InstanceNorm  gamma, beta  weight, bias (running_mean and running_var as they
                                          are; num_batches_tracked the layer's count, an int)
    MultiheadAttention   four Linears     in_proj_weight (3E, E) packing q, k, v (or
                                          q/k/v_proj_weight), in_proj_bias, out_proj.*
    Sequential   sequence.0.weights       0.weight

Everything else already has torch's names: the recurrent layers and cells
(``weight_ih_l0`` ...), ModuleList and ModuleDict (``blocks.0``, ``heads.key``), and the
tensors a model's own layer class holds as attributes (torch names an ``nn.Parameter`` or
buffer by its attribute too). A tricycle layer with tensors named ``weights``, ``gamma`` or
``beta`` and no entry in the table above has no known torch layout: an error, never a guess.

``to_torch(model)`` walks the model and writes each tensor under its torch name in torch's
layout; ``from_torch(model, state)`` walks it the same way to know the torch names and shapes
it expects, checks the state against them as torch's ``load_state_dict`` does, then loads
(through ``Layer.load_state_dict``, which casts to each tensor's dtype, and
``MultiheadAttention.load_torch_state_dict``). A layer reachable by several paths (tied
weights) is written under each, as torch's ``state_dict`` does, and a torch name that only
aliases a tensor the model loads is not unexpected (a head tied by reading the embedding's
table has no weights of its own to load). Torch itself is never imported: a value is
anything with ``.detach().cpu().numpy()`` or anything ``np.asarray`` reads.
"""

from collections.abc import Iterator, Mapping
from typing import NamedTuple

import numpy as np

from tricycle import backend, checks
from tricycle.layers import Dense, Embedding, LayerNorm, RMSNorm, Sequential
from tricycle.module import Layer
from tricycle.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from tricycle.nn.conv import Conv1d, Conv2d, Conv3d
from tricycle.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from tricycle.nn.group_norm import GroupNorm
from tricycle.nn.instance_norm import InstanceNorm1d, InstanceNorm2d
from tricycle.nn.multihead import MultiheadAttention
from tricycle.nn.sync_batch_norm import SyncBatchNorm
from tricycle.tensor import Tensor

__all__ = ["from_torch", "to_torch"]

# a layer's tensor name -> (torch's name, whether torch's layout is the transpose)
_LINEAR = {"weights": ("weight", True), "bias": ("bias", False)}
_SAME_LAYOUT = {"weights": ("weight", False), "bias": ("bias", False)}
_AFFINE = {"gamma": ("weight", False), "beta": ("bias", False)}
RENAMES: dict[type, dict[str, tuple[str, bool]]] = {
    Dense: _LINEAR,
    Embedding: _SAME_LAYOUT,
    Conv1d: _SAME_LAYOUT,
    Conv2d: _SAME_LAYOUT,
    Conv3d: _SAME_LAYOUT,
    ConvTranspose1d: _SAME_LAYOUT,
    ConvTranspose2d: _SAME_LAYOUT,
    LayerNorm: _AFFINE,
    RMSNorm: _AFFINE,
    GroupNorm: _AFFINE,
    BatchNorm1d: _AFFINE,  # running_mean and running_var keep their names
    BatchNorm2d: _AFFINE,
    BatchNorm3d: _AFFINE,
    SyncBatchNorm: _AFFINE,
    InstanceNorm1d: _AFFINE,
    InstanceNorm2d: _AFFINE,
}
TRICYCLE_NAMES = ("weights", "gamma", "beta")  # the names that differ from torch's
_RUNNING_STATISTICS = (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    InstanceNorm1d,
    InstanceNorm2d,
)
BATCHES_TRACKED = "num_batches_tracked"  # torch's count of batches, for its momentum=None


class _Entry(NamedTuple):
    """One tensor of the model under its torch name."""

    torch_name: str
    tensor: Tensor
    transposed: bool  # torch's layout is the transpose of the tensor's

    @property
    def torch_shape(self) -> tuple[int, ...]:
        return self.tensor.shape[::-1] if self.transposed else self.tensor.shape


# ====================================================================== the walk


def _walk(model: Layer) -> Iterator[tuple[str, str, Layer]]:
    """(tricycle path, torch path, layer) for ``model`` and each sublayer, depth first in
    attribute order; a layer reachable by several paths comes once per path (as in torch's
    state_dict), except along a cycle. MultiheadAttention's sublayers are its own business
    (torch packs their weights), so the walk does not enter it."""
    stack = [("", "", model, ())]
    while stack:
        path, torch_path, layer, ancestors = stack.pop()
        yield path, torch_path, layer
        if isinstance(layer, MultiheadAttention):
            continue
        ancestors = (*ancestors, id(layer))
        children = []
        for attr, value in layer._members():  # the Layer walk's own discovery
            if isinstance(value, Layer) and id(value) not in ancestors:
                torch_attr = attr
                if isinstance(layer, Sequential) and attr.startswith("sequence."):
                    torch_attr = attr.removeprefix("sequence.")  # torch's Sequential: "0"
                children.append((_join(path, attr), _join(torch_path, torch_attr), value))
        stack.extend((*child, ancestors) for child in reversed(children))  # attribute order


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _entries(owner: str, path: str, torch_path: str, layer: Layer) -> list[_Entry]:
    """The layer's own tensors (not its sublayers') under their torch names; a buffer
    registered with ``persistent=False`` is none (torch's ``state_dict`` leaves it out)."""
    renames = next((RENAMES[kind] for kind in type(layer).__mro__ if kind in RENAMES), None)
    entries = []
    for attr, value in layer._members():
        if not isinstance(value, Tensor) or attr in layer._non_persistent:
            continue
        if renames is not None and attr in renames:
            torch_name, transposed = renames[attr]
        elif attr.split(".")[0] in TRICYCLE_NAMES and _is_tricycles(type(layer)):
            tensors = [name for name, v in layer._members() if isinstance(v, Tensor)]
            where = repr(path) if path else "(the model)"
            raise ValueError(
                f"{owner}: no known torch layout for layer {where} "
                f"({type(layer).__name__}) with tensors {tensors}: expected one of "
                f"{sorted(kind.__name__ for kind in RENAMES)}, MultiheadAttention, or a layer "
                "whose tensors have torch's names"
            )
        else:  # torch's name already (recurrent layers, a model's own tensor attributes)
            torch_name, transposed = attr, False
        entries.append(_Entry(_join(torch_path, torch_name), value, transposed))
    return entries


def _is_tricycles(kind: type) -> bool:
    """Whether a layer class is one of tricycle's own (whose ``weights`` may be laid out
    unlike torch's), not a user's (whose tensors are named as the torch twin's)."""
    return kind.__module__.split(".")[0] == "tricycle"


def _counts_batches(layer: Layer) -> bool:
    """Whether torch's twin of ``layer`` has a ``num_batches_tracked`` buffer."""
    return isinstance(layer, _RUNNING_STATISTICS) and layer.track_running_stats


# ====================================================================== tricycle -> torch


@checks.arguments(model=checks.instance(Layer))
def to_torch(model: Layer) -> dict[str, np.ndarray]:
    """{torch's name: a numpy copy in torch's layout} for every parameter and buffer of
    ``model``, a ``tricycle.nn`` model built as a torch model is, so that
    ``torch_model.load_state_dict({k: torch.from_numpy(v) for k, v in to_torch(model).items()})``
    loads it. BatchNorm's and InstanceNorm's ``num_batches_tracked`` is the layer's count of
    training batches (an int attribute here, outside ``state_dict``), which torch's
    ``momentum=None`` reads."""
    state = {}
    for path, torch_path, layer in _walk(model):
        if isinstance(layer, MultiheadAttention):
            for name, value in attention_to_torch(layer).items():
                state[_join(torch_path, name)] = value
            continue
        for entry in _entries("to_torch", path, torch_path, layer):
            state[entry.torch_name] = _torch_layout(entry.tensor, entry.transposed)
        if _counts_batches(layer):
            count = getattr(layer, BATCHES_TRACKED, 0)
            state[_join(torch_path, BATCHES_TRACKED)] = np.array(count, dtype=np.int64)
    return state


def _torch_layout(tensor: Tensor, transposed: bool = False) -> np.ndarray:
    """A host copy of ``tensor``'s values, transposed if asked, in C order (as torch's)."""
    value = backend.host_snapshot(tensor.numpy())
    return np.ascontiguousarray(value.T) if transposed else value


def attention_to_torch(layer: MultiheadAttention) -> dict[str, np.ndarray]:
    """The ``state_dict`` of a ``torch.nn.MultiheadAttention`` with ``layer``'s arguments
    and values: the inverse of ``MultiheadAttention.load_torch_state_dict``. The q, k and v
    weights (out, in) stack into ``in_proj_weight`` (3E, E) when the keys and values are
    E wide (torch's ``_qkv_same_embed_dim``), else stay apart; their biases always stack."""
    E = layer.embed_dim
    projections = {"q": layer.q_projection, "k": layer.k_projection, "v": layer.v_projection}
    weights = {name: _torch_layout(d.weights, transposed=True) for name, d in projections.items()}
    state = {}
    if layer.kdim == layer.vdim == E:
        state["in_proj_weight"] = np.concatenate(list(weights.values()))  # (3E, E)
    else:
        state.update({f"{name}_proj_weight": w for name, w in weights.items()})
    if layer.q_projection.bias is not None:
        biases = [_torch_layout(d.bias) for d in projections.values()]
        state["in_proj_bias"] = np.concatenate(biases)  # (3E,)
    for name in ("bias_k", "bias_v"):
        if getattr(layer, name) is not None:
            state[name] = _torch_layout(getattr(layer, name)).reshape(1, 1, E)
    state["out_proj.weight"] = _torch_layout(layer.out_projection.weights, transposed=True)
    if layer.out_projection.bias is not None:
        state["out_proj.bias"] = _torch_layout(layer.out_projection.bias)
    return state


# ====================================================================== torch -> tricycle


@checks.arguments(
    model=checks.instance(Layer), torch_state_dict=checks.instance(Mapping), strict=checks.boolean
)
def from_torch(model: Layer, torch_state_dict: Mapping, strict: bool = True):
    """Load a torch ``state_dict`` (values: torch tensors, numpy or cupy arrays, tricycle
    Tensors) into ``model``, the same model built with ``tricycle.nn``, in place: each value
    goes to the tensor of the same torch name, in tricycle's layout, cast to its dtype.

    As torch's ``load_state_dict``: with ``strict`` every torch name the model has must be
    given and no other (else a ValueError listing the missing and unexpected names);
    without it only the names both share load. A shape that does not match is always an
    error, and so is a value that is not a finite number in the tensor's dtype; a failed
    load changes nothing. ``num_batches_tracked`` may be given or not; given, it becomes the
    norm's count of batches (a non-negative integer, else an error). A name the model
    lacks whose value is the very tensor of a name it loads is no unexpected name: torch's
    ``state_dict`` lists a tied tensor under each owner (nanoGPT's ``lm_head.weight`` is its
    ``transformer.wte.weight``), and a port whose head reads the embedding's table
    (``F.linear(x, wte.weights)``) has nothing more to load. Likewise a name of the model's
    whose tensor loads under another is not missing: tricycle also walks the layers a model
    keeps in a plain list (``self.blocks = [...]``), which torch's ``state_dict`` does not.
    Returns the (missing, unexpected) lists of torch names.
    """
    owner = f"from_torch into {type(model).__name__}"
    entries: list[_Entry] = []
    attentions: list[tuple[str, MultiheadAttention, dict[str, np.ndarray]]] = []
    optional, tracked = set(), []  # tracked: (norm layer, torch name of its count)
    for path, torch_path, layer in _walk(model):
        if isinstance(layer, MultiheadAttention):
            attentions.append((torch_path, layer, attention_to_torch(layer)))
            continue
        entries.extend(_entries(owner, path, torch_path, layer))
        if _counts_batches(layer):
            optional.add(_join(torch_path, BATCHES_TRACKED))
            tracked.append((layer, _join(torch_path, BATCHES_TRACKED)))

    expected = {entry.torch_name: entry.torch_shape for entry in entries}
    tensors = {entry.torch_name: entry.tensor for entry in entries}
    for torch_path, _, current in attentions:
        expected.update({_join(torch_path, k): v.shape for k, v in current.items()})
    missing = [name for name in expected if name not in torch_state_dict]
    if missing:  # but a tensor that loads under another of its names (see the doc)
        loaded = {id(e.tensor) for e in entries if e.torch_name in torch_state_dict}
        missing = [n for n in missing if id(tensors.get(n)) not in loaded]
    unexpected = [k for k in torch_state_dict if k not in expected and k not in optional]
    if unexpected:  # but a tied tensor's other names (see the doc)
        aliases = _aliases(torch_state_dict, expected)
        unexpected = [k for k in unexpected if k not in aliases]
    _check(owner, torch_state_dict, expected, missing, unexpected, strict)
    counts = _batch_counts(owner, tracked, torch_state_dict)

    # tricycle's names (the first of a tied tensor's) -> values in tricycle's layout
    first_names = {id(tensor): name for name, tensor in model.named_tensors()}
    state = {}
    for entry in entries:
        name = first_names[id(entry.tensor)]
        if entry.torch_name in torch_state_dict and name not in state:
            value = _host_value(torch_state_dict[entry.torch_name])
            state[name] = value.T if entry.transposed else value
    loads = []  # (layer, its complete torch state): what is not given stays as it is
    for torch_path, layer, current in attentions:
        given = {k: _join(torch_path, k) for k in current}
        given = {k: name for k, name in given.items() if name in torch_state_dict}
        if given:
            values = {k: _host_value(torch_state_dict[name]) for k, name in given.items()}
            loads.append((layer, {**current, **values}))
    _load(owner, model, state, loads)
    for layer, count in counts:
        layer.num_batches_tracked = count
    return missing, unexpected


def _batch_counts(owner: str, tracked: list[tuple], given: Mapping) -> list[tuple]:
    """(norm layer, count) for each (layer, ``num_batches_tracked`` name) of ``tracked`` that
    ``given`` has, checked before anything loads: a count is a non-negative whole number (of
    any dtype: a state dict cast whole to bfloat16 casts the count too)."""
    counts = []
    for layer, name in tracked:
        if name in given:
            value = _host_value(given[name])
            whole = value.shape == () and value.dtype.kind in "iuf" and np.isfinite(value)
            if not whole or value < 0 or value != np.floor(value):
                raise ValueError(
                    f"{owner}: {name} must be a non-negative integer (a count of batches), "
                    f"got {value!r}"
                )
            counts.append((layer, int(value)))
    return counts


def _aliases(given: Mapping, expected: dict) -> set[str]:
    """The names of ``given`` whose value is the very memory of the value of a name the
    model expects: torch's ``state_dict`` lists a tied tensor under each of its owners."""
    loaded = {_memory(given[name]) for name in expected if name in given} - {None}
    return {name for name, value in given.items() if _memory(value) in loaded}


def _memory(value) -> tuple | None:
    """Where a torch tensor's or numpy array's values lie (address, shape, strides, dtype),
    or None (an empty one, another kind of value): equal for two views of one tensor."""
    if isinstance(value, Tensor):
        value = value.array
    if hasattr(value, "data_ptr") and hasattr(value, "stride"):  # torch's, without torch
        where = (value.data_ptr(), str(value.device), tuple(value.stride()))
    elif isinstance(value, np.ndarray):
        where = (value.__array_interface__["data"][0], "cpu", value.strides)
    else:
        return None
    return (*where, tuple(value.shape), str(value.dtype)) if where[0] else None


def _check(owner: str, given: Mapping, expected: dict, missing, unexpected, strict: bool) -> None:
    """A ValueError listing what is wrong, as torch's ``load_state_dict``: the missing and
    unexpected names under ``strict``, and the shapes that differ in any case."""
    problems = []
    if strict and missing:
        problems.append(f"missing keys {missing}")
    if strict and unexpected:
        problems.append(f"unexpected keys {unexpected}")
    mismatched = [
        f"{name}: given {tuple(np.shape(given[name]))}, expected {tuple(shape)} (torch's layout)"
        for name, shape in expected.items()
        if name in given and tuple(np.shape(given[name])) != tuple(shape)
    ]
    if mismatched:
        problems.append("shape mismatch for " + "; ".join(mismatched))
    if problems:
        raise ValueError(f"{owner}: " + "; ".join(problems))


def _host_value(value) -> np.ndarray:
    """A state-dict value as a numpy array: a torch tensor (bfloat16 widened: numpy has no
    such dtype), a tricycle Tensor, a numpy or cupy array, or nested lists."""
    if isinstance(value, Tensor):
        return value.numpy()
    if hasattr(value, "detach"):  # a torch tensor, read without importing torch
        value = value.detach().cpu()
        try:
            return value.numpy()
        except TypeError:  # bfloat16
            return value.float().numpy()
    return np.asarray(backend.to_host_array(value))


def _load(owner: str, model: Layer, state: dict, attentions: list) -> None:
    """Write ``state`` (tricycle's names) into ``model`` and each attention layer's torch
    state into it, all or nothing: each load checks its values before writing any, and the
    attention layers loaded before a failure get their old values back."""
    loaded = []
    try:
        for layer, values in attentions:
            loaded.append((layer, layer.state_dict()))
            layer.load_torch_state_dict(values)
        model.load_state_dict(state, strict=False)
    except (TypeError, ValueError) as error:
        for layer, old in reversed(loaded):
            layer.load_state_dict(old)
        raise type(error)(f"{owner}: {error}") from None
