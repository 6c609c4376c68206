"""torch.nn.utils' names, where a PyTorch script imports them from (``from tricycle.nn.utils
import clip_grad_norm_``, ``import tricycle.nn.utils.parametrize as P``):

- gradient clipping (``clip_grad``: ``clip_grad_norm_``, ``clip_grad_value_``,
  ``get_total_norm``, ``clip_grads_with_norm_``, the deprecated ``clip_grad_norm``);
- a BatchNorm folded into the layer before it (``fusion``: ``fuse_conv_bn_eval``,
  ``fuse_conv_bn_weights``, ``fuse_linear_bn_eval``, ``fuse_linear_bn_weights``);
- ``skip_init`` (a module built for values loaded next) and ``stateless.functional_call``
  (torch's older name of ``tricycle.func.functional_call``);
- ``rnn`` (``pad_sequence``, ``PackedSequence`` and the functions that pack and unpack one);
- a model's parameters as one vector and back (``convert_parameters``:
  ``parameters_to_vector``, ``vector_to_parameters``);
- ``parametrize`` (``register_parametrization``, ``remove_parametrizations``,
  ``is_parametrized``, ``cached``) and ``parametrizations`` (``weight_norm``,
  ``spectral_norm``); torch's older ``weight_norm``, ``spectral_norm`` and their removers
  (``legacy_norms``: ``weight_g``/``weight_v``, ``weight_orig``/``weight_u``/``weight_v``);
- ``prune`` (``l1_unstructured``, ``ln_structured``, ``global_unstructured``, ``remove``...:
  masks kept as torch keeps them, ``weight_orig`` and ``weight_mask``);
- ``convert_conv2d_weight_memory_format`` and ``convert_conv3d_weight_memory_format``
  (``memory_format``: the module as it is, tricycle having no memory formats).
"""

from tricycle.nn.utils import parametrizations, parametrize, prune, rnn, stateless
from tricycle.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from tricycle.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tricycle.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from tricycle.nn.utils.legacy_norms import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)
from tricycle.nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from tricycle.nn.utils.skipped_init import skip_init

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]
