"""The random states of a run, saved in its checkpoints so that a resumed run replays
exactly: where the data stands, and each layer's dropout generator."""

import numpy as np


def data_state(data) -> dict:
    """Where a data source stands: its ``state_dict()``, or its ``rng`` generator's state."""
    if hasattr(data, "state_dict"):
        return {"state": data.state_dict()}
    return {"rng": data.rng.bit_generator.state}


def load_data_state(data, state: dict) -> None:
    """Put a data source back where ``data_state`` found it."""
    if "state" in state:
        data.load_state_dict(state["state"])
    else:
        data.rng.bit_generator.state = state["rng"]


def layer_rng_states(model) -> dict:
    """{layer name: state} of every layer's ``rng`` generator (dropout, attention dropout)."""
    return {
        name: layer.rng.bit_generator.state
        for name, layer in model.named_layers()
        if isinstance(getattr(layer, "rng", None), np.random.Generator)
    }


def load_layer_rng_states(model, states: dict) -> None:
    layers = dict(model.named_layers())
    unknown = sorted(set(states) - set(layers))
    if unknown:
        raise ValueError(f"random states for layers the model does not have: {unknown}")
    for name, state in states.items():
        layers[name].rng.bit_generator.state = state


def jump_layer_generators(model, rank: int) -> None:
    """Rank r's layer generators: rank 0's jumped r times (``bit_generator.jumped``), so the
    ranks draw independent dropout masks whose states follow from rank 0's."""
    for _, layer in model.named_layers():
        rng = getattr(layer, "rng", None)
        if isinstance(rng, np.random.Generator) and rank:
            layer.rng = np.random.Generator(rng.bit_generator.jumped(rank))
