"""torch.utils.model_zoo: ``load_url`` is ``tricycle.hub.load_state_dict_from_url`` (a state
dict downloaded once into the hub's cache and loaded), under the name older scripts use."""

from tricycle.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
