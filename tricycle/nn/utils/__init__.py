"""torch.nn.utils' names, where a PyTorch script imports them from (``from tricycle.nn.utils
import clip_grad_norm_``, ``import tricycle.nn.utils.parametrize as P``):

- gradient clipping (``clip_grad``: ``clip_grad_norm_``, ``clip_grad_value_``);
- ``rnn`` (``pad_sequence``, ``PackedSequence`` and the functions that pack and unpack one);
- a model's parameters as one vector and back (``convert_parameters``:
  ``parameters_to_vector``, ``vector_to_parameters``);
- ``parametrize`` (``register_parametrization``, ``remove_parametrizations``,
  ``is_parametrized``, ``cached``) and ``parametrizations`` (``weight_norm``,
  ``spectral_norm``); torch's older ``weight_norm``, ``spectral_norm`` and their removers
  (``legacy_norms``: ``weight_g``/``weight_v``, ``weight_orig``/``weight_u``/``weight_v``);
- ``prune`` (``l1_unstructured``, ``ln_structured``, ``global_unstructured``, ``remove``...:
  masks kept as torch keeps them, ``weight_orig`` and ``weight_mask``).
"""

from tricycle.nn.utils import parametrizations, parametrize, prune, rnn
from tricycle.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from tricycle.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tricycle.nn.utils.legacy_norms import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]
