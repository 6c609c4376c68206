"""``torch.nn.modules.container``'s names: the containers, which are ``tricycle.nn``'s."""

from tricycle.layers import Sequential
from tricycle.nn.containers import ModuleDict, ModuleList
from tricycle.nn.parameter_containers import ParameterDict, ParameterList

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
