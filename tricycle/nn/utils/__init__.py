"""torch.nn.utils' names: gradient clipping (``clip_grad``: ``clip_grad_norm_``,
``clip_grad_value_``) and ``rnn`` (``pad_sequence``, ``PackedSequence`` and the functions that
pack and unpack one), where a PyTorch script imports them from (``from tricycle.nn.utils
import clip_grad_norm_``, ``from tricycle.nn.utils.rnn import pack_padded_sequence``)."""

from tricycle.nn.utils import rnn
from tricycle.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]
